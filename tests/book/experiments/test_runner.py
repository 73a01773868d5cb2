import dataclasses
import math
import shutil
import warnings

import numpy as np
import pytest
from datasets import Dataset, DatasetDict
from support import StoreLockHolder
from transformers import BertTokenizer

import pe_lib.data
import pe_lib.io
import pe_lib.training.pretrain
from pe_lib.data.tasks import TASKS, Task
from pe_lib.errors import InputError
from pe_lib.io import LockedError, write_manifest
from pe_lib.probing import ANALYSIS_WINDOW
from pe_book.experiments import results as results_module
from pe_book.experiments import runner as runner_module
from pe_book.experiments.profiles import SMOKE, get_profile
from pe_book.chapters.pretraining import machine_name
from pe_book.commands.verify import ROUNDING_ULPS, ulps_apart
from pe_book.experiments.results import MissingResult, Results
from pe_book.experiments.runner import Runner
from pe_book.experiments.store import hardware
from pe_book.experiments.stored_data import record_data
from pe_lib.training.mlm import MLMData
from pe_lib.training.pretrain_config import PretrainConfig

WORDS = "good bad film plot the was a cat dog sat".split()


@pytest.fixture
def tokenizer(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return BertTokenizer(vocab=str(vocab))


@pytest.fixture
def profile():
    return dataclasses.replace(
        SMOKE, name="test", variants=("ape-learned", "rpe-sin-learned"), tasks=("sst2",), seeds=(0, 1),
        model=dict(SMOKE.model, hidden_size=16, intermediate_size=32),
        pretrain=PretrainConfig(steps=4, batch_size=4, log_every=1, eval_every=2, eval_batches=1, checkpoint_every=2,
                                precision="fp32"),
        seq_len=16, probe={"length": 8, "n_words": 3},
    )


@pytest.fixture
def runner(profile, tokenizer, tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    blocks = rng.integers(5, len(tokenizer), size=(16, 16))  # 8 validation rows: 112 tokens, enough for 4 x 16
    blocks[:, 0], blocks[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    data = MLMData.for_tokenizer(tokenizer, blocks[:8], blocks[8:])

    def fake_task(name, source, cache_dir, max_train):
        rows = [{"sentence1": f"the film was {'good' if i % 2 else 'bad'}", "label": i % 2} for i in range(24)]
        return Task(TASKS[name].meta, DatasetDict({"train": Dataset.from_list(rows[:16]), "validation": Dataset.from_list(rows[16:20]),
                                                   "test": Dataset.from_list(rows[20:])}), "fixture")

    monkeypatch.setattr(pe_lib.data, "load_task", fake_task)
    # its own cache, for the runners a test builds beside it too: the task fingerprints kept in a
    # shared cache are those of the real tasks, not of these
    monkeypatch.setenv("PE_LIB_CACHE", str(tmp_path / "cache"))
    return Runner(profile, tmp_path / "results", tmp_path / "work", tmp_path / "cache", progress=False, tokenizer=tokenizer,
                  data=data)


def reader_of(runner: Runner, profile) -> Results:
    """The stored results of ``profile`` in ``runner``'s store and work folder, its data from the
    data record that ``runner`` writes there (its data was given directly)."""
    record_data(runner, list(profile.tasks))
    return Results(profile, runner.store.root.parent, runner.work, progress=False)


def count_calls(monkeypatch, name, module=runner_module):
    calls = []
    original = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


def test_run_computes_everything_once(runner, monkeypatch):
    runner.run()
    store = runner.store.root
    assert sorted(p.name for p in store.iterdir() if not p.name.startswith(".")) == ["ape-learned", "baselines", "rpe-sin-learned"]
    stages = sorted(p.name.rsplit("-", 1)[0] for p in (store / "ape-learned").iterdir())
    assert stages == ["analysis-p0", "extrapolation-p0", "finetune-sst2-p0-seed0", "finetune-sst2-p0-seed1", "pretrain-p0"]
    pretrains, finetunes = count_calls(monkeypatch, "pretrain"), count_calls(monkeypatch, "finetune")
    runner.run()
    assert pretrains == [] and finetunes == [], "a complete store computes nothing"


def test_artifacts_carry_provenance_and_analysis(runner):
    pre = runner.ensure_pretrained("ape-learned")
    assert {"config", "git_commit", "versions", "hardware", "wall_s", "created"} <= set(pre.provenance)
    assert {"cpu", "isa", "torch_cpu_capability", "torch_threads"} <= set(pre.provenance["hardware"])
    assert [r["step"] for r in pre.payload["curve"] if r["split"] == "train"] == [1, 2, 3, 4]
    analysis = runner.ensure_analysis("rpe-sin-learned")
    assert analysis.arrays["trained.probe"].shape == (2, 8, 8) and analysis.arrays["trained.probe"].dtype == np.float16
    assert analysis.arrays["init.rpe_freqs"].shape == (2, 4)  # per layer, head_dim / 2
    assert not np.array_equal(analysis.arrays["init.rpe_freqs"], analysis.arrays["trained.rpe_freqs"])
    assert set(analysis.payload["trained"]["probe"][0]) >= {"monotonicity", "chen_locality", "chen_symmetry"}


def test_extrapolation_is_an_artifact_reused_and_keyed_apart_from_the_other_stages(runner, profile, monkeypatch):
    first = runner.ensure_extrapolation("ape-learned")
    records = first.payload["records"]
    assert [(r["length"], r["multiplier"], r["status"]) for r in records] == [(16, 1, "ok"), (32, 2, "ok"), (64, 4, "ok")]
    assert all(math.isfinite(r["loss"]) for r in records) and first.payload["stream_tokens"] == 112
    assert first.provenance["config"]["pretrain"] == runner.pretrain_key("ape-learned")
    calls = count_calls(monkeypatch, "length_extrapolation")
    assert runner.ensure_extrapolation("ape-learned").payload == first.payload and calls == [], "reused, not recomputed"

    runner.ensure_analysis("ape-learned")
    runner.ensure_finetuned("ape-learned", "sst2", 0)
    other = Runner(dataclasses.replace(profile, extrapolation_multipliers=(1, 2), extrapolation_tokens=64),
                   runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    computed = [count_calls(monkeypatch, name) for name in ("pretrain", "analyse_positions", "finetune")]
    other.ensure_pretrained("ape-learned")
    other.ensure_analysis("ape-learned")
    other.ensure_finetuned("ape-learned", "sst2", 0)
    assert computed == [[], [], []], "other stages keep their keys when only the extrapolation settings change"
    changed = other.ensure_extrapolation("ape-learned")
    assert changed.folder != first.folder and [r["length"] for r in changed.payload["records"]] == [16, 32]


def test_extrapolation_reports_lengths_a_learned_ape_cannot_encode(runner, profile):
    short = dataclasses.replace(profile, model=dict(profile.model, max_position_embeddings=32))
    other = Runner(short, runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer,
                   data=runner.mlm_data())
    records = other.ensure_extrapolation("ape-learned").payload["records"]
    assert [r["status"] for r in records] == ["ok", "ok", "cannot run"]
    assert "position 63 is beyond the maximum of 32 positions" in records[2]["reason"]
    assert [r["status"] for r in other.ensure_extrapolation("rpe-sin-learned").payload["records"]] == ["ok"] * 3


def test_changed_config_means_a_new_key(runner, profile):
    runner.ensure_pretrained("ape-learned")
    other = Runner(dataclasses.replace(profile, pretrain=dataclasses.replace(profile.pretrain, lr=1e-3)),
                   runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    assert other.pretrain_key("ape-learned") != runner.pretrain_key("ape-learned")
    assert other.store.load("ape-learned", "pretrain-p0", other.pretrain_config("ape-learned")) is None


def test_the_stored_results_refuse_what_is_missing_and_find_what_is_stored(runner, profile):
    reader = reader_of(runner, profile)
    with pytest.raises(MissingResult, match=r"unigram-.* is not stored: .*`pe-book run --profile test`"):
        reader.unigram()
    with pytest.raises(MissingResult, match=r"ape-learned/finetune-sst2-p0-seed1-\w+ is not stored"):
        reader.finetuned("ape-learned", "sst2", 1)
    assert not (runner.store.root / "ape-learned").exists() and not list(runner.work.glob("*")), "nothing computed"
    with pytest.raises(MissingResult):
        reader.with_profile(profile).analysis("ape-learned")
    with pytest.raises(MissingResult, match=r"ape-learned/pretrain-p0-\w+ is not stored"):
        reader.trained_model("ape-learned")
    assert not list(runner.work.glob("*")), "a reader trains no model"
    computed = runner.ensure_finetuned("ape-learned", "sst2", 1)
    assert reader.finetuned("ape-learned", "sst2", 1).payload == computed.payload
    computed_pretraining = runner.ensure_pretrained("ape-learned")
    assert reader.pretrained("ape-learned").payload == computed_pretraining.payload
    assert reader.has_weights("ape-learned") and reader.trained_model("ape-learned") is not None
    with StoreLockHolder(runner.store.root.parent, profile.name):  # a chunk adding to the store
        assert reader.pretrained("ape-learned").payload == computed_pretraining.payload, "a reader takes no lock"
        with pytest.raises(LockedError, match="is in use by another run"):
            runner.ensure_pretrained("ape-learned")


def test_corrupt_artifact_is_reported_and_recomputed(runner):
    artifact = runner.ensure_finetuned("ape-learned", "sst2", 0)
    (artifact.folder / "artifact.json").write_text("{}")
    with pytest.warns(UserWarning, match="ignoring corrupt artifact .*artifact.json fails its sha256 check"):
        again = runner.ensure_finetuned("ape-learned", "sst2", 0)
    assert again.payload["test"] == artifact.payload["test"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runner.ensure_finetuned("ape-learned", "sst2", 0)


def test_unknown_profile_names_the_valid_ones():
    with pytest.raises(ValueError, match="valid profiles: smoke, cpu, cpu-glue, scale, trend, cpu-65m, pilot, gpu"):
        get_profile("laptop")


def test_keys_do_not_depend_on_whether_the_data_was_loaded(profile, tmp_path, monkeypatch):
    from types import SimpleNamespace

    fresh = Runner(profile, tmp_path / "results", tmp_path / "work", progress=False, tokenizer=None)
    monkeypatch.setattr(Runner, "corpus", SimpleNamespace(folder=tmp_path / "corpus-packaged-abc"))
    monkeypatch.setattr(Runner, "tokenizer", property(lambda self: BertTokenizer(vocab=str(_vocab(tmp_path)))))
    loaded = Runner(profile, tmp_path / "results", tmp_path / "work", progress=False, tokenizer=None)
    rng = np.random.default_rng(0)
    loaded._data = MLMData(rng.integers(5, 10, size=(8, 16)), rng.integers(5, 10, size=(2, 16)), 15, 4, (0, 1, 2, 3, 4))
    assert loaded.data_fingerprint() == fresh.data_fingerprint()


def test_a_plan_computes_the_data_fingerprint_once_and_each_model_once_per_variant(runner, monkeypatch):
    fingerprints = count_calls(monkeypatch, "content_key", results_module)
    models = count_calls(monkeypatch, "PEBertConfig", results_module)
    planned = runner.plan()
    assert runner.plan() == planned
    assert len(fingerprints) == 1 and len(models) == len(runner.profile.variants)


def _vocab(folder):
    path = folder / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return path


def test_pretraining_seeds_are_separate_models_each_fine_tuned_with_every_seed(runner, profile, monkeypatch):
    seeded = Runner(dataclasses.replace(profile, tasks=("sst2",), seeds=(0,), pretrain_seeds_by_variant={"ape-learned": 2}),
                    runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    assert seeded.profile.pretrain_seeds_for("ape-learned") == (0, 1)
    assert seeded.profile.pretrain_seeds_for("rpe-sin-learned") == (0,)
    seeded.run(["ape-learned"])
    stages = sorted(p.name.rsplit("-", 1)[0] for p in (seeded.store.root / "ape-learned").iterdir())
    assert stages == ["analysis-p0", "analysis-p1", "extrapolation-p0", "extrapolation-p1", "finetune-sst2-p0-seed0",
                      "finetune-sst2-p1-seed0", "pretrain-p0", "pretrain-p1"]
    curves = [seeded.ensure_pretrained("ape-learned", p).payload["curve"] for p in (0, 1)]
    train = [[r["loss"] for r in c if r["split"] == "train"] for c in curves]
    assert train[0] != train[1], "another pretraining seed is another model"
    assert seeded.run_dir("ape-learned", 0) != seeded.run_dir("ape-learned", 1)


def test_plan_lists_stored_and_missing_and_orphans(runner, profile):
    plan = runner.plan()
    assert len(plan) == 2 + 2 * (3 + 2) and not any(a.stored for a in plan), "unigram, one task's baselines, 2 variants"
    runner.run(["ape-learned"])
    plan = runner.plan()
    assert {a.variant for a in plan if a.stored} == {"ape-learned", Runner.BASELINES} and sum(a.stored for a in plan) == 7
    assert runner.orphans(plan) == []
    other = Runner(dataclasses.replace(profile, pretrain=dataclasses.replace(profile.pretrain, lr=3e-3)),
                   runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    assert len(other.orphans(other.plan())) == 5, "artifacts of another configuration are named as orphans"


def test_stage_code_version_is_in_every_key(runner, monkeypatch):
    before = {stage: runner.store.folder("v", stage, config) for stage, config in (
        ("pretrain", runner.pretrain_config("ape-learned")), ("analysis", runner.analysis_config("ape-learned")),
        ("extrapolation", runner.extrapolation_config("ape-learned")),
        ("finetune", runner.finetune_config("ape-learned", "sst2", 0)))}
    for stage in ("analysis", "extrapolation", "finetune"):
        monkeypatch.setitem(results_module.CODE_VERSIONS, stage, results_module.CODE_VERSIONS[stage] + 1)
    assert runner.store.folder("v", "pretrain", runner.pretrain_config("ape-learned")) == before["pretrain"]
    assert runner.store.folder("v", "analysis", runner.analysis_config("ape-learned")) != before["analysis"]
    assert runner.store.folder("v", "finetune", runner.finetune_config("ape-learned", "sst2", 0)) != before["finetune"]
    monkeypatch.setitem(results_module.CODE_VERSIONS, "pretrain", results_module.CODE_VERSIONS["pretrain"] + 1)
    assert runner.store.folder("v", "pretrain", runner.pretrain_config("ape-learned")) != before["pretrain"]


def test_a_profile_pinned_to_an_older_code_version_reads_its_results_and_adds_none(runner, profile, monkeypatch):
    runner.run(["ape-learned"])
    stored = runner.ensure_finetuned("ape-learned", "sst2", 0)
    monkeypatch.setitem(results_module.CODE_VERSIONS, "finetune", results_module.CODE_VERSIONS["finetune"] + 1)
    pinned = Runner(dataclasses.replace(profile, code_versions={"finetune": results_module.CODE_VERSIONS["finetune"] - 1}),
                    runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    assert pinned.ensure_finetuned("ape-learned", "sst2", 0).folder == stored.folder, "read under its old key"
    assert runner.finetune_config("ape-learned", "sst2", 0)["code_version"] == results_module.CODE_VERSIONS["finetune"]
    with pytest.raises(InputError, match=r"pins finetune code version \d+, which this code no longer runs"):
        pinned.ensure_finetuned("rpe-sin-learned", "sst2", 0)


def test_a_model_kept_in_the_store_serves_later_stages_without_its_work_folder(runner, monkeypatch):
    assert runner.profile.weights_in_store
    runner.run(["ape-learned"])
    pretrained = runner.ensure_pretrained("ape-learned")
    assert (pretrained.folder / "model" / "model.safetensors").exists()
    assert "model/model.safetensors" in pe_lib.io.read_json(pretrained.folder / "manifest.json")
    first = runner.ensure_finetuned("ape-learned", "sst2", 1).payload
    shutil.rmtree(runner.work / runner.profile.name)  # the machine that trained it is gone
    shutil.rmtree(runner.ensure_finetuned("ape-learned", "sst2", 1).folder)
    monkeypatch.setattr(runner_module, "pretrain", lambda *a, **k: pytest.fail("pretrained again"))
    assert runner.has_weights("ape-learned")
    again = runner.ensure_finetuned("ape-learned", "sst2", 1).payload
    assert {k: v for k, v in again.items() if k != "wall_s"} == {k: v for k, v in first.items() if k != "wall_s"}


def test_a_reader_without_the_weights_of_a_stored_pretraining_trains_no_model(runner, profile):
    plain = dataclasses.replace(profile, weights_in_store=False)
    writer = Runner(plain, runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer,
                    data=runner.mlm_data())
    assert not (writer.ensure_pretrained("ape-learned").folder / "model").exists()
    shutil.rmtree(runner.work / profile.name)
    reader = reader_of(writer, plain)
    assert not reader.has_weights("ape-learned")
    with pytest.raises(MissingResult, match=r"holds no finished model: train it with `pe-book run --profile test`"):
        reader.trained_model("ape-learned")


def test_task_key_follows_the_examples_not_the_card(runner, monkeypatch):
    key = runner.task_fingerprint("sst2")
    task = runner.task("sst2")
    flipped = task.splits["test"].map(lambda row: {"label": 1 - row["label"]})
    runner._tasks["sst2"] = Task(task.meta, DatasetDict({**task.splits, "test": flipped}), task.origin, task.card)
    runner._task_keys.clear()
    assert runner.task_fingerprint("sst2") != key


def test_a_task_fingerprint_is_kept_for_its_prepared_files_and_read_without_loading_them(runner, profile, tmp_path,
                                                                                        monkeypatch):
    folder = tmp_path / "prepared" / "task-sst2-abc"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text("first\n")
    write_manifest(folder)
    runner._tasks["sst2"] = dataclasses.replace(runner.task("sst2"), folder=folder)
    value = runner.task_fingerprint("sst2")  # computed from the examples, kept for these files
    monkeypatch.setattr(results_module, "prepared_folder", lambda name, source, cache_dir: folder)
    fresh = runner.with_profile(profile)
    assert fresh.task_fingerprint("sst2") == value and "sst2" not in fresh._tasks  # read, nothing loaded
    capped = runner.with_profile(dataclasses.replace(profile, task_max_eval=2))
    capped.task_fingerprint("sst2")
    assert "sst2" in capped._tasks  # other caps: computed again
    (folder / "train.jsonl").write_text("second\n")
    write_manifest(folder)
    changed = runner.with_profile(profile)
    changed.task_fingerprint("sst2")
    assert "sst2" in changed._tasks  # other files: computed again


def test_a_task_made_in_memory_keeps_no_fingerprint(runner):
    runner.task_fingerprint("sst2")
    assert runner.task("sst2").folder is None
    assert not (runner.cache_dir / results_module.KEPT_FINGERPRINTS).exists()


def test_verify_recomputes_a_variant_identically_and_prints_each_difference(runner, profile, tmp_path):
    from pe_book.commands.verify import verify_variant

    runner.run(["ape-learned"])

    def fresh(name):
        return Runner(profile, tmp_path / name / "results", tmp_path / name / "work", progress=False,
                      tokenizer=runner.tokenizer, data=runner.mlm_data())

    lines = []
    assert verify_variant(runner, fresh("a"), "ape-learned", out=lines.append) == 0
    assert lines[-1] == "7 artifacts compared, 0 differences"  # the variant's 5 and the baselines' 2
    here = machine_name(hardware())
    assert lines[:2] == [f"committed: computed on {here}", f"this machine: {here}"]
    assert len(lines) == 10 and all(line.endswith(" identical") for line in lines[2:-1]), lines
    artifact = runner.ensure_finetuned("ape-learned", "sst2", 1)
    changed = {**artifact.payload, "test": {k: v + 0.5 for k, v in artifact.payload["test"].items()}}
    runner.store.save("ape-learned", "finetune-sst2-p0-seed1", runner.finetune_config("ape-learned", "sst2", 1), changed, 0.0)
    lines.clear()
    assert verify_variant(runner, fresh("b"), "ape-learned", out=lines.append) == len(changed["test"])
    assert any(line.strip().startswith("payload.test.accuracy: committed") for line in lines), lines
    assert lines[-1] == f"7 artifacts compared, {len(changed['test'])} differences"  # none of them rounding
    rounded = {**artifact.payload, "test": {k: math.nextafter(v, 2.0) for k, v in artifact.payload["test"].items()}}
    runner.store.save("ape-learned", "finetune-sst2-p0-seed1", runner.finetune_config("ape-learned", "sst2", 1), rounded, 0.0)
    lines.clear()
    assert verify_variant(runner, fresh("c"), "ape-learned", out=lines.append) == len(rounded["test"])
    assert any(line.strip().startswith("payload.test.accuracy: committed") and line.endswith(" (1 ulp)") for line in lines)
    assert lines[-1] == (f"7 artifacts compared, {len(rounded['test'])} differences, {len(rounded['test'])} of them "
                         f"rounding (floats at most {ROUNDING_ULPS} ulp apart)")


@pytest.mark.parametrize(("a", "b", "steps"), [(1.0, 1.0, 0), (1.0, math.nextafter(1.0, 2.0), 1),
                                               (0.0, -0.0, 0), (-5e-324, 5e-324, 2), (-1.0, math.nextafter(-1.0, 0.0), 1),
                                               (0.4800111410578715, 0.48001114105787146, 1)])
def test_ulps_apart_counts_float64_steps_across_zero(a, b, steps):
    assert ulps_apart(a, b) == ulps_apart(b, a) == steps


def test_verify_warns_when_the_results_come_from_another_machine_type(runner, profile, tmp_path):
    from pe_book.commands.verify import variants_computed_on, verify_variant

    runner.run(["ape-learned"])
    other = {**hardware(), "cpu": "Another CPU", "isa": ["avx2"]}
    assert variants_computed_on(runner.store, hardware()) == ["ape-learned"]
    assert variants_computed_on(runner.store, other) == []
    lines = []
    fresh = Runner(profile, tmp_path / "results", tmp_path / "work", progress=False, tokenizer=runner.tokenizer,
                   data=runner.mlm_data())
    assert verify_variant(runner, fresh, "ape-learned", out=lines.append, machine=other) == 0
    assert lines[1] == "this machine: Another CPU, {} cores".format(other["cores"])
    assert lines[2].startswith("warning: ape-learned was computed on another machine type") and lines[2].endswith(
        "of this store, no variant was computed on this one."), lines


def test_verify_can_recompute_only_the_first_pretraining_seeds(runner, profile, tmp_path):
    from pe_book.commands.verify import first_seeds, verify_variant

    two = dataclasses.replace(profile, pretrain_seeds_by_variant={"ape-learned": 2})
    Runner(two, runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data()).run(["ape-learned"])
    one = first_seeds(two, "ape-learned", 1)
    assert one.pretrain_seeds_for("ape-learned") == (0,) and one.pretrain_seeds_for("rpe-sin-learned") == (0,)
    committed = Runner(one, runner.store.root.parent, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    fresh = Runner(one, tmp_path / "f" / "results", tmp_path / "f" / "work", progress=False, tokenizer=runner.tokenizer,
                   data=runner.mlm_data())
    lines = []
    assert verify_variant(committed, fresh, "ape-learned", out=lines.append) == 0
    assert lines[-1] == "7 artifacts compared, 0 differences" and not list((fresh.store.root / "ape-learned").glob("*-p1-*"))
    with pytest.raises(ValueError, match="ape-learned has 2 pretraining seed"):
        first_seeds(two, "ape-learned", 3)


def test_a_run_restricted_to_seeds_variants_or_tasks_calls_nothing_of_the_whole_profile_an_orphan(runner, profile, capsys):
    """``pe-book run --dry-run --check`` with ``--pretrain-seeds``, ``--variants`` or ``--tasks``: the
    artifacts left out are the whole profile's, not orphans; an artifact of no key still is one."""
    from pe_book.commands.run import dry_run

    two = dataclasses.replace(profile, pretrain_seeds_by_variant={"ape-learned": 2})
    whole = runner.with_profile(two)
    whole.run(["ape-learned"])
    one = runner.with_profile(two.with_first_pretrain_seeds(1))
    assert one.profile.pretrain_seeds_for("ape-learned") == (0,)
    assert all(two.with_first_pretrain_seeds(5).pretrain_seeds_for(v) == two.pretrain_seeds_for(v) for v in two.variants)
    for restricted, variants, tasks in [(one, None, None), (whole, ["ape-learned"], None), (whole, ["ape-learned"], ["sst2"])]:
        assert dry_run(restricted, variants, tasks, check=True, whole=whole) == 0
        assert "orphan" not in capsys.readouterr().out
    assert dry_run(one, None, None, check=True) == 1  # against its own plan, seed 1's artifacts are orphans
    assert "orphan (no key of this code names it)" in capsys.readouterr().out
    stray = runner.store.root / "ape-learned" / "finetune-sst2-p0-seed9-000000000000"
    stray.mkdir()
    (stray / "manifest.json").write_text("{}")
    assert dry_run(one, None, None, check=True, whole=whole) == 1 and str(stray) in capsys.readouterr().out


def test_keys_ignore_library_versions(runner, monkeypatch):
    import transformers.configuration_utils

    key = runner.pretrain_key("ape-learned")
    monkeypatch.setattr(transformers.configuration_utils, "__version__", "99.0.0")
    assert runner.model_config("ape-learned").to_diff_dict()["transformers_version"] == "99.0.0"
    assert runner.with_profile(runner.profile).pretrain_key("ape-learned") == key, "a runner that computes its key anew"


def test_snapshots_are_budgets_with_their_own_artifacts(runner, profile):
    anytime = dataclasses.replace(profile.pretrain, schedule="constant")
    scaled = Runner(dataclasses.replace(profile, pretrain=dataclasses.replace(anytime, snapshot_steps=(2,))),
                    runner.store.root.parent / "scaled", runner.work, progress=False, tokenizer=runner.tokenizer,
                    data=runner.mlm_data())
    scaled.run(["ape-learned"])
    stages = sorted(p.name.rsplit("-", 1)[0] for p in (scaled.store.root / "ape-learned").iterdir())
    assert stages == ["analysis-p0", "analysis-p0-step2", "extrapolation-p0", "finetune-sst2-p0-seed0",
                      "finetune-sst2-p0-seed1", "finetune-sst2-p0-step2-seed0", "finetune-sst2-p0-step2-seed1",
                      "pretrain-p0", "pretrain-p0-step2"]
    early = scaled.ensure_pretrained("ape-learned", 0, 2).payload
    assert early["result"]["steps"] == 2 and max(r["step"] for r in early["curve"]) == 2
    assert all(a.stored for a in scaled.plan(["ape-learned"]) if a.variant == "ape-learned")
    # the snapshot at 2 steps is keyed as the model of a 2-step run: what a short profile would find
    short = Runner(dataclasses.replace(profile, pretrain=dataclasses.replace(anytime, steps=2)), runner.store.root.parent / "short",
                   runner.work, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    assert scaled.pretrain_key("ape-learned", 0, 2) == short.pretrain_key("ape-learned")
    assert scaled.ensure_analysis("ape-learned", 0, 2).payload == short.ensure_analysis("ape-learned").payload
    with pytest.raises(Exception, match="no model is kept at step 3; kept: 2, 4"):
        scaled.ensure_analysis("ape-learned", 0, 3)


def test_a_pretrained_folder_holds_its_tokenizer_and_a_card_of_its_training(runner):
    from transformers import AutoTokenizer

    model = runner.trained_model("ape-learned")
    folder = runner.model_dir("ape-learned")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.get_vocab() == runner.tokenizer.get_vocab()
    card = (folder / "README.md").read_text()
    assert "## Training" in card and "| profile | `test`" in card and "| steps | 4 |" in card
    assert "| pretraining seed | 0 |" in card and "text given directly" in card
    ids = tokenizer("the film was [MASK]", return_tensors="pt")
    assert model(**ids).logits.shape[-1] == len(tokenizer)
    from transformers import pipeline

    filled = pipeline("fill-mask", model=str(folder))("the film was [MASK]")
    assert len(filled) == 5 and all(f["token_str"] in tokenizer.get_vocab() for f in filled)


def test_the_analysis_window_goes_with_the_analysis_code_version():
    """The stored local monotonicity is computed over 1..ANALYSIS_WINDOW, which is not in the key:
    changing the window without bumping the analysis version would reuse stale artifacts."""
    pinned = {1: 8}  # analysis code version -> its window; add a pair when bumping the version
    assert pinned.get(results_module.CODE_VERSIONS["analysis"]) == ANALYSIS_WINDOW


def test_a_task_named_in_the_profile_gets_its_own_cap_on_training_examples(runner, profile, monkeypatch):
    asked = {}
    load = pe_lib.data.load_task  # the fixture's tasks
    monkeypatch.setattr(pe_lib.data, "load_task", lambda name, source, cache_dir, max_train:
                        asked.setdefault(name, max_train) and load(name, source, cache_dir, max_train))
    runner.profile = dataclasses.replace(profile, task_max_train=40, task_max_train_by_task={"squad": 20})
    runner.task("sst2"), runner.task("squad")
    assert asked == {"sst2": 40, "squad": 20}


def test_a_task_named_in_the_profile_gets_its_own_fine_tuning_and_only_its_key_changes(runner, profile, monkeypatch):
    tuned = runner.with_profile(dataclasses.replace(profile, tasks=("sst2", "cola"), finetune_by_task={"cola": {"epochs": 3}}))
    plain = runner.with_profile(dataclasses.replace(profile, tasks=("sst2", "cola")))
    assert tuned.finetune_config("ape-learned", "sst2", 0) == plain.finetune_config("ape-learned", "sst2", 0)
    cola = tuned.finetune_config("ape-learned", "cola", 1)["finetune"]
    assert cola["epochs"] == 3 and cola["seed"] == 1 and cola != plain.finetune_config("ape-learned", "cola", 1)["finetune"]
    used = {}
    monkeypatch.setattr(runner_module, "finetune", lambda model, tok, task, cfg, progress, features: used.update({task.meta.name: cfg})
                        or {"validation": {}, "test": {}, "train_examples": 16})
    tuned.ensure_finetuned("ape-learned", "cola", 1)
    tuned.ensure_finetuned("ape-learned", "sst2", 1)
    assert used["cola"] == dataclasses.replace(profile.finetune, epochs=3, seed=1)
    assert used["sst2"] == dataclasses.replace(profile.finetune, seed=1)


def test_a_task_s_features_are_built_once_for_every_seed_and_model(runner, monkeypatch):
    built = count_calls(monkeypatch, "task_features")
    given, real = [], runner_module.finetune
    monkeypatch.setattr(runner_module, "finetune", lambda *a, features, **k: given.append(features) or real(*a, features=features, **k))
    for variant in ("ape-learned", "rpe-sin-learned"):
        for seed in (0, 1):
            runner.ensure_finetuned(variant, "sst2", seed)
    assert len(built) == 1 and len(given) == 4 and all(f is given[0] for f in given)
    assert given[0].task == "sst2" and given[0].examples["train"] == 16


def test_per_task_fine_tuning_names_a_task_and_config_fields():
    cpu = get_profile("cpu")
    assert cpu.finetune_for("cola").epochs == 10 and cpu.finetune_for("sst2") == cpu.finetune
    with pytest.raises(InputError, match="not a task; valid tasks: cola, sst2"):
        dataclasses.replace(cpu, finetune_by_task={"colaa": {"epochs": 3}})
    with pytest.raises(InputError, match="sets epoch; valid fields: batch_size"):
        dataclasses.replace(cpu, finetune_by_task={"cola": {"epoch": 3}})


def test_a_task_named_in_the_profile_gets_its_own_fine_tuning_seeds(runner, profile):
    seeded = runner.with_profile(dataclasses.replace(profile, tasks=("sst2", "cola"), seeds=(0, 1, 2),
                                                     seeds_by_task={"cola": (0,)}))
    planned = [a.stage for a in seeded.model_plan("ape-learned", 0, profile.pretrain.steps, ["sst2", "cola"])]
    assert [s for s in planned if s.startswith("finetune")] == [
        "finetune-sst2-p0-seed0", "finetune-sst2-p0-seed1", "finetune-sst2-p0-seed2", "finetune-cola-p0-seed0"]
    assert seeded.profile.seeds_for("cola") == (0,) and seeded.profile.seeds_for("sst2") == (0, 1, 2)
    assert seeded.profile.with_seeds([1]).seeds_for("cola") == (1,) and seeded.profile.with_seeds([]) is seeded.profile


def test_per_task_seeds_name_a_task_and_at_least_one_seed():
    cpu = get_profile("cpu")
    with pytest.raises(InputError, match="seeds_by_task names 'colaa', not a task; valid tasks: cola"):
        dataclasses.replace(cpu, seeds_by_task={"colaa": (0,)})
    with pytest.raises(InputError, match=r"seeds_by_task\['cola'\] is empty"):
        dataclasses.replace(cpu, seeds_by_task={"cola": ()})
    assert dataclasses.replace(cpu, seeds_by_task={"cola": 2}).seeds_for("cola") == (2,)  # as --set gives one seed


@pytest.mark.parametrize("name", ["cpu", "scale"])
def test_the_chunked_profiles_train_in_one_precision_on_every_machine(name):
    """The cpu run and the scale study are computed in chunks on whatever CPU a session gets: "auto"
    would train some models in bf16 and others in fp32 (and fine-tune them so), confounding the comparison."""
    chunked = get_profile(name)
    assert chunked.pretrain.precision == "fp32" and chunked.finetune.precision == "fp32"


def test_precision_auto_does_not_mix_bf16_and_fp32_models_in_one_store(runner, profile, monkeypatch):
    auto = Runner(dataclasses.replace(profile, pretrain=dataclasses.replace(profile.pretrain, precision="auto")),
                  runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    def machine(fast_bf16: bool):
        for module in (runner_module, pe_lib.training.pretrain):
            monkeypatch.setattr(module, "use_bf16", lambda precision, device: precision == "bf16" or precision == "auto" and fast_bf16)

    machine(fast_bf16=False)
    auto.ensure_pretrained("ape-learned")  # trained in fp32
    assert auto.store.load("ape-learned", "pretrain-p0", auto.pretrain_config("ape-learned")).payload["result"]["precision"] == "fp32"
    machine(fast_bf16=True)  # the next chunk lands on a CPU with AMX
    fresh = Runner(auto.profile, auto.store.root.parent, auto.work, progress=False, tokenizer=auto.tokenizer, data=auto.mlm_data())
    assert fresh.ensure_pretrained("ape-learned") is not None, "what is stored is read on any machine"
    with pytest.raises(ValueError, match="trained in fp32, and precision 'auto' means bf16 on this machine"):
        fresh.ensure_pretrained("rpe-sin-learned")
    with pytest.raises(ValueError, match="mix precisions"):
        fresh.ensure_finetuned("ape-learned", "sst2", 0)
    runner.ensure_pretrained("rpe-sin-learned")  # an explicit precision is the same on every machine
