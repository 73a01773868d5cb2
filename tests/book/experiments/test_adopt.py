"""pe_book.experiments.adopt: a profile takes what another computed under the same keys, and the
numbers it then computes on the adopted models equal those of computing everything itself."""
import contextlib
import dataclasses
import json

import numpy as np
import pytest

import pe_lib.training.finetune
import pe_lib.training.pretrain
from pe_book.experiments import runner as runner_module
from book.experiments.test_runner import profile, runner, tokenizer  # noqa: F401 (fixtures)
from pe_book.experiments.adopt import adopt, rekey_auto_precision
from pe_book.experiments.runner import Runner
from pe_lib.errors import InputError

#: Not numbers of the model: timings, the pretraining result's run identity (an adopted
#: snapshot's names the long run that kept it) and the shorter run an extended run began from.
SKIPPED = {"wall_s", "tokens_per_s", "elapsed_s", "config", "extended_from"}


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


def test_a_shorter_profiles_finished_run_begins_the_studys_run(runner, profile):  # noqa: F811
    short = dataclasses.replace(profile, name="short", seeds=(0,), pretrain=dataclasses.replace(
        profile.pretrain, schedule="constant", steps=2))
    study = dataclasses.replace(short, name="study", pretrain=dataclasses.replace(short.pretrain, steps=4, snapshot_steps=(2,)))
    source, target, alone = runner_of(runner, short, "a"), runner_of(runner, study, "b"), runner_of(runner, study, "c")
    source.run()
    done = adopt(target, source)
    assert [p.name for p in done.extended] == [target.run_dir(v).name for v in study.variants]
    assert adopt(target, source).extended == [], "a begun run is left alone"
    target.run()
    alone.run()
    for variant in study.variants:
        result = json.loads((target.run_dir(variant) / "result.json").read_text())
        assert result["extended_from"] == str(source.run_dir(variant)), "trained from step 2, and says so"
    ours, theirs = target.store.artifact_folders(), alone.store.artifact_folders()
    assert [f.relative_to(target.store.root) for f in ours] == [f.relative_to(alone.store.root) for f in theirs]
    for mine, other in zip(ours, theirs):
        left, right = (json.loads((f / "artifact.json").read_text())["payload"] for f in (mine, other))
        assert numbers(left) == numbers(right), mine.name


@contextlib.contextmanager
def auto_means(precision: str):
    """Precision "auto" resolved as on a machine where it means ``precision``."""
    with pytest.MonkeyPatch.context() as patch:
        for module in (runner_module, pe_lib.training.pretrain, pe_lib.training.finetune):
            patch.setattr(module, "use_bf16", lambda asked, device: asked == "bf16" or asked == "auto" and precision == "bf16")
        yield


def test_artifacts_stored_under_precision_auto_take_the_keys_of_the_precision_they_ran_in(runner, profile):  # noqa: F811
    auto = dataclasses.replace(profile, pretrain=dataclasses.replace(profile.pretrain, precision="auto"),
                               finetune=dataclasses.replace(profile.finetune, precision="auto"))
    explicit = dataclasses.replace(profile, finetune=dataclasses.replace(profile.finetune, precision="fp32"))
    before, after, alone = runner_of(runner, auto, "a"), runner_of(runner, explicit, "a"), runner_of(runner, explicit, "c")
    with auto_means("fp32"):  # on the machine that ran it
        before.run()
    old = {f.relative_to(before.store.root) for f in before.store.artifact_folders()}
    rekeyed = rekey_auto_precision(after)
    assert len(rekeyed) == len(old) - 2, "all but the unigram and task baselines, whose keys name no precision"
    assert sum(a.stored for a in after.plan()) == len(after.plan()) and after.orphans(after.plan()) == []
    document = json.loads((rekeyed[0] / "artifact.json").read_text())
    assert document["provenance"]["rekeyed_from"] in {p.name for p in old}
    assert rekey_auto_precision(after) == [], "nothing left to rekey"
    alone.run()
    for mine, other in zip(after.store.artifact_folders(), alone.store.artifact_folders()):
        assert mine.relative_to(after.store.root) == other.relative_to(alone.store.root)
        left, right = (json.loads((f / "artifact.json").read_text())["payload"] for f in (mine, other))
        assert numbers(left) == numbers(right), mine.name


def test_rekeying_refuses_models_that_ran_in_another_precision(runner, profile):  # noqa: F811
    auto = dataclasses.replace(profile, pretrain=dataclasses.replace(profile.pretrain, precision="auto"))
    with auto_means("bf16"):
        runner_of(runner, auto, "a").run(variants=["ape-learned"])
    explicit = dataclasses.replace(profile, finetune=dataclasses.replace(profile.finetune, precision="fp32"))
    with pytest.raises(InputError, match="its stored models ran in bf16, not fp32"):
        rekey_auto_precision(runner_of(runner, explicit, "a"))
    with pytest.raises(InputError, match="needs one explicit precision"):
        rekey_auto_precision(runner_of(runner, auto, "a"))
