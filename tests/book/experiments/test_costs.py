"""pe_book.experiments.costs: rates measured on a store, and the hours of a plan at those rates."""
import dataclasses
import json
import math
import shutil

import pytest

from book.experiments.test_runner import profile, runner, tokenizer  # noqa: F401 (fixtures)
from pe_book.experiments import costs
from pe_book.experiments.runner import Runner
from pe_book.experiments.store import Store


def test_rates_come_from_the_stored_artifacts(runner):  # noqa: F811
    runner.run()
    rates = costs.measured_rates(runner.store)
    assert rates.tokens_per_s > 0 and set(rates.finetune_s_per_example) == {"sst2"}
    assert {"analysis", "extrapolation", "baselines", "unigram"} <= set(rates.stage_s)
    empty = costs.measured_rates(Store(runner.store.root.parent / "elsewhere", "none"))
    assert math.isnan(empty.tokens_per_s) and empty.finetune_s_per_example == {} and empty.stage_s == {}


def test_a_budget_costs_the_steps_since_the_previous_one(runner, profile):  # noqa: F811
    rates = costs.Rates(tokens_per_s=16.0, finetune_s_per_example={"sst2": 0.5}, stage_s={"analysis": 2.0})
    pretrain = dataclasses.replace(profile.pretrain, schedule="constant", steps=8, snapshot_steps=(2, 4))
    longer = Runner(dataclasses.replace(profile, pretrain=pretrain), runner.store.root.parent / "longer", runner.work,
                    progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    planned = longer.plan()
    pretrains = [a for a in planned if a.stage.startswith("pretrain") and a.variant == "ape-learned"]
    tokens_per_step = profile.pretrain.batch_size * profile.seq_len  # 4 x 16 = 64 tokens: 4 s a step at 16 tok/s
    assert [costs.artifact_seconds(longer, a, rates) for a in pretrains] == [2 * tokens_per_step / 16, 2 * tokens_per_step / 16,
                                                                            4 * tokens_per_step / 16]
    finetune = next(a for a in planned if a.stage.startswith("finetune"))
    train = len(longer.task("sst2").splits["train"])
    assert costs.artifact_seconds(longer, finetune, rates) == train * profile.finetune.epochs * 0.5
    table = costs.estimate(longer, planned, rates)
    assert table.loc["total", "to compute"] == len(planned) and table.loc["analysis", "hours"] == pytest.approx(6 * 2.0 / 3600)
    assert table.loc["extrapolation", "unknown"] == 2 and table.loc["total", "unknown"] == table["unknown"].iloc[:-1].sum()


def test_a_run_whose_work_folder_is_gone_costs_its_steps_from_step_0(runner, profile):  # noqa: F811
    rates = costs.Rates(tokens_per_s=1.0, finetune_s_per_example={}, stage_s={})
    pretrain = dataclasses.replace(profile.pretrain, schedule="constant", steps=8, snapshot_steps=(2, 4))
    longer = Runner(dataclasses.replace(profile, pretrain=pretrain), runner.store.root.parent / "longer", runner.work,
                    progress=False, tokenizer=runner.tokenizer, data=runner.mlm_data())
    longer.ensure_pretrained("ape-learned", 0, 2)
    longer.ensure_pretrained("ape-learned", 0, 4)  # 2x and 4x stored, the run folder's checkpoint at step 4
    last = longer.planned_pretraining("ape-learned", 0, 8)
    tokens_per_step = profile.pretrain.batch_size * profile.seq_len
    assert costs.resume_step(longer, last) == 4 and costs.artifact_seconds(longer, last, rates) == 4 * tokens_per_step
    assert costs.resume_step(longer, last, checkpoints=False) == 0, "priced from the store alone (the book's estimates)"
    shutil.rmtree(longer.run_dir("ape-learned", 0))  # the session's work folder is gone; the artifacts stay
    assert costs.resume_step(longer, last) == 0 and costs.artifact_seconds(longer, last, rates) == 8 * tokens_per_step
    shutil.rmtree(longer.planned_pretraining("ape-learned", 0, 2).folder)
    assert costs.resume_step(longer, last) == 2, "an earlier budget still to compute is trained first, on the way"


def test_stored_artifacts_cost_nothing(runner):  # noqa: F811
    runner.run()
    table = costs.estimate(runner, runner.plan(), costs.measured_rates(runner.store))
    assert list(table.index) == ["total"] and table.loc["total", "hours"] == 0


def test_a_run_with_a_time_limit_stops_before_a_pretraining_that_would_not_finish(runner, monkeypatch):  # noqa: F811
    runner.run(variants=["ape-learned"])  # measures the store's tokens/s
    clock = iter([0.0, 10.0 ** 6])  # the deadline's start, then the check of the first model to train
    stop = costs.stop_when_out_of_time(runner, seconds=3600, clock=lambda: next(clock))
    steps = runner.profile.pretrain.steps
    assert stop(runner.model_plan("ape-learned", 0, steps, ["sst2"])) is None, "stored: nothing to train"
    pretrains = []
    monkeypatch.setattr("pe_book.experiments.runner.pretrain", lambda *a, **k: pretrains.append(a))
    runner.run(stop=stop)
    assert pretrains == [] and runner.stopped.startswith("stopped before rpe-sin-learned pretrain-p0")
    assert not (runner.store.root / "rpe-sin-learned").exists()
    unlimited = costs.stop_when_out_of_time(runner, seconds=3600, clock=lambda: 0.0)
    assert unlimited(runner.model_plan("rpe-sin-learned", 0, steps, ["sst2"])) is None


def test_a_stored_model_whose_weights_are_gone_is_priced_with_its_pretraining(runner):  # noqa: F811
    runner = runner.with_profile(dataclasses.replace(runner.profile, weights_in_store=False))  # weights: work folder only
    runner.run(variants=["ape-learned"])
    rates = costs.Rates(tokens_per_s=1.0, finetune_s_per_example={"sst2": 1.0}, stage_s={})
    model = lambda: runner.model_plan("ape-learned", 0, runner.profile.pretrain.steps, ["sst2"])  # noqa: E731
    assert costs.model_seconds(runner, model(), rates) == 0, "everything stored"
    finetune = next(a for a in model() if a.stage == "finetune-sst2-p0-seed1")
    shutil.rmtree(finetune.folder)
    one_finetune = costs.artifact_seconds(runner, finetune, rates)
    assert costs.model_seconds(runner, model(), rates) == one_finetune > 0, "the weights are in the work folder"
    shutil.rmtree(runner.run_dir("ape-learned", 0))  # the session's work folder is gone: the fine-tuning trains the model again
    pretraining = costs.artifact_seconds(runner, model()[0], rates)
    assert pretraining > 0 and costs.model_seconds(runner, model(), rates) == pretraining + one_finetune
    measured = costs.measured_rates(runner.store)  # the stop rule's rates: the fine-tuning alone fits, the model does not
    alone, whole = costs.artifact_seconds(runner, finetune, measured), costs.model_seconds(runner, model(), measured)
    stop = costs.stop_when_out_of_time(runner, seconds=(alone + whole) / 2, clock=lambda: 0.0)
    assert alone < whole and stop(model()).startswith("stopped before ape-learned pretrain-p0: its missing artifacts take")


def test_spent_hours_and_rates_with_a_fallback(runner):  # noqa: F811
    runner.run(variants=["ape-learned"])
    walls = [json.loads((f / "artifact.json").read_text())["provenance"]["wall_s"] for f in runner.store.artifact_folders()]
    assert costs.spent_hours(runner.store) == pytest.approx(sum(walls) / 3600) and sum(walls) > 0
    measured = costs.measured_rates(runner.store)
    calibration = costs.Rates(tokens_per_s=1.0, finetune_s_per_example={"sst2": 9.0, "squad": 2.0}, stage_s={"analysis": 7.0, "other": 3.0})
    nothing = costs.measured_rates(Store(runner.store.root.parent / "elsewhere", "none"))
    assert costs.with_fallback(nothing, calibration) == calibration, "nothing measured: the calibration's rates"
    merged = costs.with_fallback(measured, calibration)
    assert merged.tokens_per_s == measured.tokens_per_s and merged.finetune_s_per_example["squad"] == 2.0
    assert merged.finetune_s_per_example["sst2"] == measured.finetune_s_per_example["sst2"] and merged.stage_s["other"] == 3.0


def test_rates_of_one_machine_type_leave_out_the_others(runner):  # noqa: F811
    runner.run(variants=["ape-learned"])
    here = json.loads((runner.store.artifact_folders()[0] / "artifact.json").read_text())["provenance"]["hardware"]
    assert costs.measured_rates(runner.store, here) == costs.measured_rates(runner.store), "all computed here"
    elsewhere = costs.measured_rates(runner.store, {**here, "isa": [*here["isa"], "another-extension"]})
    assert math.isnan(elsewhere.tokens_per_s) and elsewhere.finetune_s_per_example == {} and elsewhere.stage_s == {}
