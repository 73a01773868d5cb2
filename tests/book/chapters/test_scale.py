import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
from book.experiments.test_runner import profile, runner, tokenizer  # noqa: F401 (fixtures)

from pe_book.chapters import common, scale
from pe_book.experiments.runner import Runner

ROOT = Path(__file__).resolve().parents[3]


def rows(losses: dict, mono=(0.5, 0.5), scores: dict | None = None) -> pd.DataFrame:
    """Models of one budget: ``losses`` variant -> loss per seed; ``scores`` variant -> (validation, test)."""
    scores = scores or {}
    out = []
    for variant, values in losses.items():
        for p, loss in enumerate(values):
            ape = variant == "ape-learned"
            out.append({"variant": variant, "pretrain_seed": p, "steps": 10, "tokens": 1000, "validation_loss": loss,
                        "monotonicity": mono[0] if ape else math.nan, "monotonicity_local": mono[1] if ape else math.nan,
                        "classification_validation": scores.get(variant, (math.nan,) * 2)[0],
                        "classification_test": scores.get(variant, (math.nan,) * 2)[1], "finetune_seeds": 1})
    return pd.DataFrame(out)


def test_criterion_a_needs_two_seeds_and_separated_ranges():
    separated = scale.criteria_at(rows({"none": [5.0, 5.1], "ape-learned": [4.8, 4.9]}), 50.0)
    assert separated["a"] is True and separated["a_null_rate"] == pytest.approx(1 / 6)
    assert scale.separation_chance(3, 3) == pytest.approx(1 / 20)
    assert scale.criteria_at(rows({"none": [5.0, 5.1], "ape-learned": [4.8, 5.05]}), 50.0)["a"] is False
    one_seed = scale.criteria_at(rows({"none": [5.0], "ape-learned": [4.0]}), 50.0)
    assert one_seed["a"] is None and one_seed["loss_gap"] == pytest.approx(-1.0)


def test_criterion_b_needs_both_indicators_above_the_threshold():
    losses = {"none": [5.0], "ape-learned": [5.0]}
    assert scale.criteria_at(rows(losses, mono=(0.3, 0.25)), 50.0)["b"] is True
    assert scale.criteria_at(rows(losses, mono=(0.9, 0.1)), 50.0)["b"] is False
    assert scale.criteria_at(rows({"none": [5.0]}), 50.0)["b"] is None, "no learned APE: not decidable"


def test_criterion_c_picks_the_best_variant_on_validation_and_judges_it_on_test():
    losses = {"none": [5.0], "ape-learned": [5.0], "rpe-learned": [5.0]}
    # rpe-learned is best on test, ape-learned on validation: the choice is ape-learned's
    scores = {"none": (55.0, 56.0), "ape-learned": (70.0, 59.0), "rpe-learned": (65.0, 75.0)}
    result = scale.criteria_at(rows(losses, scores=scores), constant=50.0)
    assert result["best_variant"] == "ape-learned" and result["best_classification"] == 59.0 and result["c"] is False
    assert scale.criteria_at(rows(losses, scores=scores), constant=48.0)["c"] is True
    assert scale.criteria_at(rows(losses, scores=scores), 48.0, bag_of_words=61.0)["minus_bag_of_words"] == -2.0
    assert math.isnan(result["minus_bag_of_words"]), "no bag of words given: no difference"
    assert scale.criteria_at(rows(losses), constant=50.0)["c"] is None, "nothing fine-tuned: not decidable"


def test_compute_reads_every_kept_budget_of_a_finished_study(runner, profile):  # noqa: F811
    pretrain = dataclasses.replace(profile.pretrain, schedule="constant", snapshot_steps=(2,))
    studied = Runner(dataclasses.replace(profile, variants=("none", "ape-learned"), pretrain=pretrain),
                     runner.store.root.parent / "scale", runner.work, progress=False, tokenizer=runner.tokenizer,
                     data=runner.mlm_data())
    empty = scale.compute(studied, ["none", "ape-learned"], ["sst2"])
    assert empty.models.empty and empty.criteria.empty and empty.stored == 0 and empty.smallest_budget is None
    studied.run()
    study = scale.compute(studied, ["none", "ape-learned"], ["sst2"])
    assert study.stored == study.planned > 0
    assert sorted(study.models["steps"]) == [2, 2, 4, 4] and list(study.criteria["steps"]) == [2, 4]
    assert study.models["finetune_seeds"].eq(2).all() and study.models["classification_test"].notna().all()
    ape = study.models[study.models.variant == "ape-learned"]
    assert ape["monotonicity"].notna().all() and study.models.loc[study.models.variant == "none", "monotonicity"].isna().all()
    assert study.criteria["a"].isna().all(), "one pretraining seed each: (a) is not decidable"
    assert 0 <= study.constant <= 100 and 0 <= study.bag_of_words <= 100 and study.unigram_loss > 0
    assert (study.criteria["minus_bag_of_words"] == study.criteria["best_classification"] - study.bag_of_words).all()


def test_the_recipe_screen_is_read_from_its_committed_files():
    screen = scale.recipe_screen(ROOT / "studies" / "recipe_screen")
    assert screen["run"].nunique() == len(list((ROOT / "studies" / "recipe_screen").glob("*.json")))
    assert set(screen["variant"]) >= {"none", "ape-learned", "rope"}
    assert (screen["validation loss"] > 0).all() and screen["position init std"].notna().all()


def test_the_cpu_profile_departs_from_the_study_in_cola_epochs_only():
    from pe_book.experiments.profiles import CPU_GLUE, SCALE
    assert scale.recipe_departures(SCALE, CPU_GLUE) == scale.Departures(finetuning={"cola": [scale.Change("epochs", 10, 2)]})
    assert scale.recipe_departures(SCALE, SCALE) == scale.Departures(), "the study's own recipe departs in nothing"


def test_recipe_departures_name_whole_settings_and_where_the_study_let_the_machine_choose_its_precision():
    from pe_book.experiments.profiles import SCALE
    study = dataclasses.replace(SCALE, pretrain=dataclasses.replace(SCALE.pretrain, precision="auto"))
    cpu = dataclasses.replace(SCALE, seq_len=2 * SCALE.seq_len, corpus_tokens=1_000_000)
    departures = scale.recipe_departures(study, cpu, ran_in="bf16")
    assert departures.settings == ["sequence length", "corpus"] and departures.finetuning == {}
    assert departures.precision == scale.Precision("fp32", "fp32", "auto", "bf16") and departures.caps is None
    assert scale.recipe_departures(cpu, study, ran_in="bf16").precision.study_ran_in == "", "the study chose fp32 itself"


def test_the_criteria_unmet_at_each_smaller_budget():
    criteria = pd.DataFrame({"tokens": [8_192_000, 4_096_000, 16_384_000], "a": [None, False, True],
                             "b": [True, False, True], "c": [True, True, True]})
    assert scale.unmet_below(criteria, 16_384_000) == {4_096_000: ["a", "b"], 8_192_000: ["a"]}
    assert list(scale.unmet_below(criteria, 16_384_000)) == [4_096_000, 8_192_000], "smallest budget first"
    assert scale.unmet_below(criteria, 20_000_000)[16_384_000] == [], "all three hold"
    assert scale.unmet_below(criteria, 4_096_000) == {}
    assert scale.verdicts(criteria[criteria.tokens == 8_192_000]) == {"a": None, "b": True, "c": True}
    assert scale.verdicts(criteria[criteria.tokens == 1]) is None, "not a budget of the table"


def test_the_cpu_finetune_screen_is_read_from_its_committed_file():
    path = ROOT / "studies" / "finetune_screen" / "results-cpu.jsonl"
    screen = scale.finetune_screen(path)
    assert set(screen["task"]) == {"sst2", "mrpc", "stsb"} and "1 epoch, 10,000 examples" in set(screen["recipe"])


def test_a_span_task_score_is_a_percentage_already():
    assert scale.task_percent("squad_v2", {"exact_match": 49.0, "f1": 51.0}) == 50.0
    assert scale.task_percent("sst2", {"accuracy": 0.5}) == 50.0


def test_the_finetune_screen_is_read_from_its_committed_file():
    screen = scale.finetune_screen(ROOT / "studies" / "finetune_screen" / "results.jsonl")
    assert set(screen["task"]) == {"sst2", "mrpc"} and set(screen["variant"]) == {"none", "ape-learned"}
    assert screen["test"].between(0, 100).all() and screen["training examples"].max() > 1500
    table = scale.finetune_screen_table(screen)
    assert list(table.index) == list(dict.fromkeys(screen["recipe"])) and ("sst2", "training examples") in table.columns
    assert table[("mrpc", "none")].max() == screen.loc[(screen.task == "mrpc") & (screen.variant == "none"), "test"].max()


def test_the_best_run_of_a_screen_per_task():
    screen = pd.DataFrame({"recipe": ["x", "y", "x", "y"], "variant": "none", "task": ["sst2", "sst2", "mrpc", "mrpc"],
                           "training examples": [1500, 10000, 1500, 3668], "validation": 0.0,
                           "test": [60.0, 70.0, 68.0, 66.0]})
    best = scale.best_per_task(screen)
    assert list(best.task) == ["mrpc", "sst2"] and list(best.recipe) == ["x", "y"]
    assert list(best["training examples"]) == [1500, 10000]


def test_largest_affordable_is_the_last_budget_whose_known_cost_fits():
    table = pd.DataFrame([{"steps": 2000, "tokens": 4_096_000, "total (h)": 0.0, "without a measured rate": 132},
                          {"steps": 8000, "tokens": 16_384_000, "total (h)": 9.5, "without a measured rate": 1}])
    assert scale.largest_affordable(table, hours=5.0)["steps"] == 2000
    assert scale.largest_affordable(table, hours=10.0)["steps"] == 8000
    assert scale.largest_affordable(table.iloc[1:], hours=5.0) is None


def test_screen_recipes_read_without_e_notation_and_the_recipe_table_says_yes_or_no():
    assert scale.recipe_label("profile (2 epochs, lr 3e-4, 1,500 examples)") == "profile (2 epochs, lr 3·10⁻⁴, 1,500 examples)"
    assert scale.recipe_label("lr 1e-3") == "lr 10⁻³" and scale.recipe_label("5 epochs") == "5 epochs"
    screen = scale.finetune_screen(ROOT / "studies" / "finetune_screen" / "results.jsonl")
    assert "lr 10⁻⁴, 5 epochs" in set(screen["recipe"]) and not screen["recipe"].str.contains(r"\de-\d").any()
    shown = common.yes_no_columns(scale.recipe_screen(ROOT / "studies" / "recipe_screen"))
    assert set(shown["pre-LN"]) == {"yes", "no"}
