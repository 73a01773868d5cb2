"""pe_book.experiments.adopt: a profile takes what another computed under the same keys, and the
numbers it then computes on the adopted models equal those of computing everything itself."""
import dataclasses
import json

import numpy as np

from book.experiments.test_runner import profile, runner, tokenizer  # noqa: F401 (fixtures)
from pe_book.experiments.adopt import adopt
from pe_book.experiments.runner import Runner

#: Not numbers of the model: timings, and the pretraining result's run identity (an adopted
#: snapshot's names the long run that kept it).
SKIPPED = {"wall_s", "tokens_per_s", "elapsed_s", "config"}


def numbers(value):
    if isinstance(value, dict):
        return {k: numbers(v) for k, v in value.items() if k not in SKIPPED}
    if isinstance(value, list):
        return [numbers(v) for v in value]
    return value


def runner_of(base, profile, name):  # noqa: F811
    return Runner(profile, base.store.root.parent.parent / name / "results", base.store.root.parent.parent / name / "work",
                  progress=False, tokenizer=base.tokenizer, data=base.mlm_data())


def test_a_study_snapshot_becomes_a_shorter_profiles_model(runner, profile):  # noqa: F811
    study = dataclasses.replace(profile, name="study", seeds=(0,), pretrain=dataclasses.replace(
        profile.pretrain, schedule="constant", steps=4, snapshot_steps=(2,)))
    short = dataclasses.replace(profile, name="short", seeds=(0, 1), pretrain=dataclasses.replace(
        profile.pretrain, schedule="constant", steps=2))
    source, target, alone = runner_of(runner, study, "a"), runner_of(runner, short, "b"), runner_of(runner, short, "c")
    source.run()
    done = adopt(target, source)
    kinds = sorted(folder.name.split("-")[0] for folder in done.artifacts)
    assert kinds == ["analysis"] * 2 + ["baselines", "finetune", "finetune", "pretrain", "pretrain", "unigram"]
    assert sorted(p.name for p in done.models) == ["model", "model"]
    assert adopt(target, source).artifacts == [], "a second adoption finds everything"
    target.run()
    for variant in short.variants:
        assert not (target.run_dir(variant) / "checkpoints").exists(), "the adopted model was not trained again"
    alone.run()
    ours, theirs = target.store.artifact_folders(), alone.store.artifact_folders()
    assert [f.relative_to(target.store.root) for f in ours] == [f.relative_to(alone.store.root) for f in theirs]
    for mine, other in zip(ours, theirs):
        left, right = (json.loads((f / "artifact.json").read_text())["payload"] for f in (mine, other))
        assert numbers(left) == numbers(right), mine.name
        if (mine / "arrays.npz").exists():
            with np.load(mine / "arrays.npz") as a, np.load(other / "arrays.npz") as b:
                assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files), mine.name
