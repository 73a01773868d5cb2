"""Every chapter's compute function on the tiny fixture store (``conftest.store``), and every
``{glue}`` reference of its notebook resolved against what the notebook glues itself and the
result's ``cited`` numbers, without executing a notebook or building the book."""
import dataclasses
import importlib
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from book.test_glue_references import NOTEBOOKS, glued_patterns, references
from pe_book import plateau
from pe_book.chapters import (classification, cls_untying, dot_products, findings, length_extrapolation, performance,
                              probing, properties, real_models, scale, sinusoid, span_prediction)
from pe_book.chapters import pretraining as pretraining_chapter
from pe_book.experiments import baselines
from pe_book.experiments.profiles import GPU
from pe_book.verdicts import gate, intervals, rule
from pe_lib.errors import InputError
from pe_lib.sinusoid import integer_monotonic_range

ROOT = Path(__file__).resolve().parents[3]
PAPER_VARIANTS_01 = ["none", "ape-learned", "ape-sin", "rpe-learned", "rpe-sin", "alibi", "rope", "rpe-learned+untie-cls"]


def chapter_module(notebook: Path):
    """``notebooks/NN_topic.py`` -> ``pe_book.chapters.topic`` (each chapter's computation has that home)."""
    return importlib.import_module(f"pe_book.chapters.{notebook.stem.split('_', 1)[1]}")


def compute(notebook: Path, runner):
    """The chapter's result with the notebook's defaults, on the fixture store."""
    module = chapter_module(notebook)
    if module is performance:
        return module.compute(ROOT / "results" / "bench.json")
    if module is properties:
        return module.compute(runner, PAPER_VARIANTS_01, hidden_size=16, num_heads=2, length=8, n_words=3, window=3)
    if module is real_models:
        return module.compute(runner, ["gpt2"], length=8, window=3)  # offline: gpt2 is skipped, with its reason
    if module is scale:
        return module.compute(runner, cpu=runner)
    return module.compute(runner)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glue_reference_resolves(notebook, store):
    source = notebook.read_text()
    cited = set(compute(notebook, store).cited)
    patterns = glued_patterns(source)
    missing = sorted(name for name in references(source) if name not in cited and not any(p.match(name) for p in patterns))
    assert not missing, f"{notebook.name} refers to values neither it nor its chapter's result provides: {missing}"


def test_properties_at_initialisation_and_after_pretraining(store):
    result = properties.compute(store, PAPER_VARIANTS_01, hidden_size=16, num_heads=2, length=8, n_words=3, window=3)
    assert list(result.probe_table.index) == PAPER_VARIANTS_01 and result.probes["alibi"].shape == (8, 8)
    assert set(result.ape_grams) == {"ape-learned", "ape-sin"} and set(result.rpe_grams) == {"rpe-learned", "rpe-sin",
                                                                                              "rpe-learned+untie-cls"}
    assert result.cited["alibi_mono"] == pytest.approx(1.0)  # ALiBi's bias falls with distance by construction
    assert set(result.trained_probe.index) == {"none", "ape-learned", "rpe-learned", "rpe-learned+untie-cls"}
    assert result.cited["n_trained"] == 4 and result.cited["trained_steps"] == 4
    with pytest.raises(ValueError, match="valid"):
        properties.compute(store, ["ape-typo"])


def test_sinusoid_ranges_sweep_and_learned_frequencies(store):
    result = sinusoid.compute(store, n_bases=5)
    assert len(result.ranges) == 4 and result.sweep["APE", "base"].shape == (5, 2)
    assert result.cited["ape_range_int"] == integer_monotonic_range(768, 10000.0)
    assert list(result.learned) == ["ape-sin-learned (APE)"] and result.cited["n_learned"] == 1
    assert sinusoid.compute(None, n_bases=5).learned == {}


def test_pretraining_table_has_every_variant_and_the_unigram_baseline(store):
    result = pretraining_chapter.compute(store)
    assert set(result.final.index) == set(store.profile.variants) | {pretraining_chapter.UNIGRAM}
    assert result.setup["steps"] == 4 and result.cited["setup_tokens"] == 4 * 4 * 16
    assert result.final["validation loss"].is_monotonic_increasing
    assert len(result.setup_table()) == len(pretraining_chapter.SETUP_LABELS)
    escapes = result.escapes  # one seed of none: the margin is the floor, and none never leaves its own plateau
    assert list(escapes.table.index) == [(v, 0) for v in store.profile.variants]
    assert escapes.table.loc[("none", 0), "escape"] is None and result.cited["plateau_margin"] == plateau.FLOOR
    assert escapes.none_plateau.steps == (2, 4) and result.cited["escape_budget"] == 4 and result.trend is None
    assert result.cited["plateau_margin_text"].startswith("the floor")
    trended = pretraining_chapter.compute(store, trend=store).trend  # the stored runs of a trend profile, read
    assert trended is not None and trended.table.equals(escapes.table)


def test_dot_products_panels_say_what_was_not_run(store):
    result = dot_products.compute(store)
    panels = {title.split("\n")[0]: matrix for title, matrix, _ in result.panels("trained")}
    assert panels["(a) ape-learned"] is not None and panels["(b) ape-learned+rpe-learned"] is None
    assert result.cited["panels_missing"] == "ape-learned+rpe-learned, ape-sin-learned+rpe-learned"
    assert {title for title, _, _ in result.others()} == {"rpe-learned+untie-cls\nRPE"}
    assert set(result.ape_table.index) == {"ape-learned", "ape-sin-learned"}
    assert result.cited["max_offset"] > 0


def test_probing_maps_and_changes(store):
    result = probing.compute(store, layer=1)
    assert set(result.maps) == {"trained", "init"} and result.maps["init"]["none"].shape == (8, 8)
    assert np.allclose(result.delta.loc["none"].dropna(), 0.0, atol=1e-6) or result.delta.loc["none"].isna().all()
    assert result.cited["layer_number"] == 2
    with pytest.raises(ValueError, match=r"layer must be in 0\.\.1"):
        probing.compute(store, layer=2)


def test_classification_scores_beside_both_baselines(store):
    result = classification.compute(store)
    assert result.tasks == ["sst2"] and set(result.summary.index) == set(store.profile.variants)
    assert set(result.baseline_summary.index) == {classification.CONSTANT, classification.BOW}
    assert len(result.per_seed) == len(store.profile.variants) * 2  # one pretraining seed, two fine-tuning seeds
    assert result.cited["n_seeds"] == 2 and "fine-tuned with 2 seeds" in result.cited["spread_note"]
    assert result.origin.loc["sst2", "origin"] == "fixture"  # the origin recorded in the artifacts
    with pytest.raises(ValueError, match="not squad; valid: cola, sst2, mrpc, stsb"):
        classification.compute(store, tasks=["squad"])
    with pytest.raises(ValueError, match="split must be one of test, validation"):
        classification.compute(store, split="train")


def test_span_prediction_scores_beside_the_rules(store):
    result = span_prediction.compute(store, seeds=[0])
    assert list(result.per_seed.columns) == ["squad EM", "squad F1", "average"]
    # every fixed rule of a squad-style task (neighbour match reads a cloze blank: cloze tasks only)
    assert set(result.baseline_summary.index) == set(span_prediction.RULES) - {baselines.LABELS["neighbour match"]}
    assert result.cited["n_seeds"] == 1 and result.cited["rpe_above_ape"].endswith("of 2")


def test_findings_decide_every_claim(store):
    result = findings.compute(store, runs=200)
    assert {"cls-ape-best", "span-none-drops"} <= set(result.verdicts.index)
    assert result.cited["n_claims"] == len(result.verdicts) + len(result.indicator_verdicts)
    assert result.verdicts["effects"].str.len().min() > 0
    assert sum(result.cited[f"n_{label.replace(' ', '_')}"] for label in findings.VERDICT_LABELS) == result.cited["n_claims"]
    assert "none" not in result.points().index and set(result.points()["kind"]) <= {"absolute", "relative", "APE + relative"}
    with pytest.raises(ValueError, match="alpha must be between 0 and 1"):
        findings.compute(store, alpha=1.5)
    open_claims = result.verdicts[result.verdicts["verdict"].str.startswith(("not decidable", rule.NOT_TESTABLE))]
    assert list(result.needs.index) == list(open_claims.index)  # one row per claim not decided, with its reason
    assert result.needs["needs"].str.len().min() > 0 and result.cited["needs_text"].startswith(f"{len(open_claims)} claim")
    # the fixture's sst2 is order-free and squad order-sensitive: separate columns, one gate each
    assert result.groups == {"order-free classification": ["sst2"], "span": ["squad"]}
    assert list(result.testable.index) == ["sst2", "squad", "order-free classification", "span"]
    for column, row in result.testable.iterrows():
        assert row["testable"] == (row["reason"] == "") and (row["testable"] or "no model" in row["reason"])
    against = result.against_baselines.set_index(["column", "baseline"])
    bow = against.loc[("order-free classification", "baseline: bag of words")]
    assert bow["best variant"] in result.names and bow["difference"] == pytest.approx(bow["mean"] - bow["baseline score"])
    assert ("squad", "baseline: first sentence") in against.index and ("squad", "baseline: bag of words") not in against.index
    assert f"bag of words {bow['baseline score']:.1f}" in result.cited["baselines_text"]
    # each column's intervals are Bonferroni over its distinct baselines, each counted once (no summary row)
    for column, rows in result.against_baselines.groupby("column"):
        tasks = result.groups.get(column, [column])
        distinct = set.intersection(*({baselines.LABELS[n] for n in store.ensure_baselines(t).payload["baselines"]}
                                      for t in tasks))
        assert set(rows["baseline"]) == distinct and (rows["over"] == len(distinct)).all(), column
        assert rows["level"].to_numpy() == pytest.approx(1 - 0.05 / len(distinct))
    assert result.cited["gate_interval"] == "95% interval" and result.cited["gate_seeds"] == gate.GATE_SEEDS
    assert list(result.operating.index) == list(result.verdicts.index)  # one pretraining seed: rates unknown (NaN)
    assert result.cited["scale_text"].startswith("2-layer, 16-wide models of ") and "0.0M tokens each" in result.cited["scale_text"]
    assert "2 tasks (sst2, squad)" in result.cited["scale_text"]


def test_findings_set_the_ape_escape_steps_beside_their_scores(store):
    relation = findings.compute(store, runs=20).plateau
    ape = [(v, 0) for v in store.profile.variants if plateau.family(v) == plateau.APE]
    assert list(relation.per_model.index) == ape and list(relation.per_model.columns) == ["escape", "sst2", "squad"]
    assert list(relation.correlation.index) == ["sst2", "squad"]  # a group of one task would repeat its task
    assert (relation.correlation["n"] == len(ape)).all() and relation.correlation["rho"].isna().all()  # two: too few
    assert relation.cited["escape_rho_n"] == len(ape) and relation.cited["escape_rho_decided"] == 0
    assert relation.cited["ape_n"] == len(ape)


def test_baselines_text_reads_each_outcome():
    table = pd.DataFrame({"column": ["average"] * 3, "best variant": ["x"] * 3, "mean": [60.0] * 3, "low": [58.0] * 3,
                          "high": [62.0] * 3, "level": [1 - 0.05 / 3] * 3, "over": [3] * 3,
                          "baseline": ["baseline: best constant", "baseline: bag of words", "baseline: neighbour match"],
                          "role": [gate.ORDER_FREE, gate.ORDER_FREE, gate.REFERENCE],
                          "baseline score": [30.0, 63.0, 61.0], "difference": [30.0, -3.0, -1.0],
                          "outcome": [intervals.ABOVE, intervals.BELOW, intervals.WITHIN]})
    text = findings.baselines_text(table, "average")
    assert text == ("x (chosen on the validation split) scores 60.0, 98.3% interval (Bonferroni over 3 baselines) 58.0 "
                    "to 62.0; best constant 30.0 (the variant is above it); bag of words 63.0 (the variant is below it); "
                    "neighbour match 61.0 (reads word order: a reference, not a bar; within the variant's interval)")
    assert findings.baselines_text(table, "span") == "no baseline scores the span column"


def test_needs_tells_a_column_within_reach_of_more_seeds_from_one_no_model_learned():
    verdicts = pd.DataFrame({"claim": ["c1", "c2"], "mean difference": [1.0, 2.0], "MDE": [math.nan] * 2,
                             "seeds needed": [math.nan] * 2,
                             "verdict": [rule.not_testable(["no model beats neighbour match on cloze"]),
                                         rule.not_testable(["no model beats bag of words on sst2"])]}, index=["a", "b"])
    details = pd.DataFrame({"claim id": ["a", "b"], "column": ["cloze", "sst2"], "outcome": ["not testable"] * 2})
    testable = pd.DataFrame({"tasks": ["cloze", "sst2"], "mean": [90.0, 70.0], "baseline score": [85.0, 75.0],
                             "gap": [30.0, math.nan]}, index=["cloze", "sst2"])
    table = findings.needs(verdicts, details, testable)
    assert table.loc["a", "within reach"] == "cloze" and "more pretraining seeds" in table.loc["a", "needs"]
    assert table.loc["b", "within reach"] == "none" and table.loc["b", "needs"].startswith("models that learn sst2")
    text = findings.needs_text(table, GPU)
    assert "1 because no model beats the order-free baselines of their columns" in text
    assert "1 because on cloze the best variant is above every order-free baseline in the mean" in text


def test_needs_separates_what_no_model_learned_from_seeds():
    untestable = rule.not_testable(["no model beats bag of words on mrpc"])
    verdicts = pd.DataFrame({"claim": ["c1", "c2", "c3", "c4"], "mean difference": [1.0, 2.0, 0.5, 3.0],
                             "MDE": [5.0, 6.0, 7.0, 1.0], "seeds needed": [math.nan, 12.0, math.nan, math.nan],
                             "verdict": [untestable, rule.UNDECIDED, rule.UNDECIDED, rule.SUPPORTED]},
                            index=["a", "b", "c", "d"])
    details = pd.DataFrame({"claim id": ["a", "a", "b", "c", "d"], "column": ["cola", "mrpc", "sst2", "sst2", "sst2"],
                            "outcome": ["not testable", "not testable", "not decided", "not decided", "as claimed"]})
    table = findings.needs(verdicts, details)
    assert list(table.index) == ["a", "b", "c"]  # the supported claim needs nothing
    assert table.loc["a", "not testable on"] == "cola, mrpc" and "models that learn cola, mrpc" in table.loc["a", "needs"]
    assert table.loc["b", "needs"].startswith("12 pretraining seeds") and "more than 64" in table.loc["c", "needs"]
    text = findings.needs_text(table, GPU)
    assert text.startswith("3 claims about scores are not decided") and "1 because no model beats the order-free baselines of their columns" in text
    assert "the gpu profile's (hidden size 768, 12 layers, 13.1 billion tokens a model)" in text
    assert "would be enough for 0 of them" in text  # 12 seeds against the gpu profile's 3
    assert "1 would be decided with 12 pretraining seeds a variant" in text  # one number, not "12 to 12"


def test_operating_text_reads_the_largest_false_rate_and_the_power_range():
    table = pd.DataFrame({"false verdicts (no true difference)": [0.01, 0.032, math.nan],
                          "power at +5 points": [0.2, 0.9, math.nan]}, index=["a", "b", "c"])
    assert findings.operating_text(table, 0.05) == ("with no true difference, 3.2% of simulated runs at most gave a claim "
                                                    "a verdict (level 5%); the power to support a claim whose every "
                                                    "comparison truly holds, at +5 points: 20% to 90%")
    assert findings.operating_text(table.iloc[2:], 0.05).startswith("not simulated")


def test_performance_reads_the_committed_benchmark(tmp_path):
    result = performance.compute(ROOT / "results" / "bench.json")
    assert {"speedup_128_fp32", "mfu_bf16", "relative_seq"} <= set(result.cited) and len(result.targets)
    with pytest.raises(InputError, match="run `make bench`"):
        performance.compute(tmp_path / "none.json")
    configs = [{"layers": 4, "hidden": 256, "heads": 4, "vocab": 8000, "batch": 32, "seq": 128, "rounds": 5},
               {"layers": 4, "hidden": 256, "heads": 4, "vocab": 8000, "batch": 8, "seq": 512, "rounds": 5}]
    assert performance.config_text(configs) == ("4 layers, hidden size 256, 4 heads, a vocabulary of 8,000, batches of "
                                                "32 sequences at 128 tokens and 8 sequences at 512 tokens, "
                                                "5 timed steps per contender")


def test_real_models_offline_skip_the_hub_and_keep_the_project(store):
    result = real_models.compute(store, ["gpt2"], length=8, window=3)
    assert result.real == [] and "gpt2" in result.cited["skipped_text"]
    assert set(result.project) == {"ape-learned", "ape-sin-learned"} and list(result.maps()) == [
        "this project: ape-learned", "this project: ape-sin-learned"]


def test_length_extrapolation_ranks_by_change(store):
    result = length_extrapolation.compute(store)
    assert set(result.table.index) == set(store.profile.variants) and result.multipliers[0] == "1x"
    assert result.change.is_monotonic_increasing
    assert result.change_text("ape-sin") == "not run"
    assert length_extrapolation.family("rope") == "RoPE, ALiBi, T5 bias"


def test_cls_untying_pairs_and_thetas(store):
    result = cls_untying.compute(store)
    assert result.pairs == {"rpe-learned+untie-cls": "rpe-learned"} and result.compared[0] == "ape-learned"
    assert len(result.thetas) == 2 * 2  # layers x heads
    assert set(result.gaps.index.get_level_values("average")) == set(result.groups) <= set(result.testable.index)
    for group, row in result.testable.loc[list(result.groups)].iterrows():  # a column no model learned gives no verdict
        verdicts = result.gaps.xs(group, level="average")[["untying helps", "reference still ahead", "conclusion"]]
        assert (verdicts.stack().str.startswith(rule.NOT_TESTABLE)).all() == (not row["testable"])
    with pytest.raises(ValueError, match="no '\\+untie-cls' variant"):
        cls_untying.compute(store, variants=["none", "rpe-learned"])


def test_scale_defaults_to_the_study_variants_the_profile_has(store):
    study = scale.compute(store)
    assert study.variants == ["none", "ape-learned", "rpe-learned", "ape-sin-learned"] and study.tasks == ["sst2"]
    assert study.stored == study.planned and study.budget_tokens == [4 * 4 * 16]
    assert study.smallest_budget in (None, 256) and study.cpu_choice is None and study.cpu_spending is None


def test_dot_products_window_reaches_local_monotonicity(store):
    default, narrow = dot_products.compute(store), dot_products.compute(store, window=3)
    stored = store.ensure_analysis("ape-sin-learned").payload["trained"]["ape"]["monotonicity_local"]
    assert default.ape_table.loc["ape-sin-learned", "monotonicity_local"] == pytest.approx(stored)
    assert narrow.ape_table["monotonicity_local"].ne(default.ape_table["monotonicity_local"]).any()
    assert narrow.cited["window"] == 3


def test_scale_prices_the_cpu_profile_at_each_budget(store):
    cpu = dataclasses.replace(store.profile, name="cpu-like", variants=("none", "ape-learned", "alibi"), seeds=(0, 1, 2))
    study = scale.compute(store, cpu=store.with_profile(cpu))
    row = study.cpu_costs.iloc[0]
    assert list(study.cpu_costs["steps"]) == [4] and row["held by the study"] > 0
    assert row["to compute"] > 0 and row["total (h)"] > 0 and row["without a measured rate"] == 0
    affordable = scale.largest_affordable(study.cpu_costs)  # as fast as this machine
    assert (affordable["tokens"], affordable["steps"]) == (256, 4) and affordable["without a measured rate"] == 0
    assert scale.largest_affordable(study.cpu_costs, hours=0.0) is None
    spending = study.cpu_spending
    assert spending.stored < spending.planned == len(store.with_profile(cpu).plan()) and spending.unpriced == 0
    assert spending.rest_hours > 0 and spending.total_hours == pytest.approx(spending.spent_hours + spending.rest_hours)
    assert spending.total_hours <= scale.CPU_HOURS


def test_scale_compares_the_cpu_profile_budget_recipe_and_own_models_with_the_study(store):
    itself = scale.compute(store, cpu=store)  # a profile checked against itself: its recipe, its budget, its verdicts
    choice = itself.cpu_choice
    assert choice.departures == scale.Departures() and (choice.tokens, choice.steps) == (256, 4)
    assert choice.own_verdicts == choice.study_verdicts and set(choice.study_verdicts) == {"a", "b", "c"}
    assert choice.study_verdicts["a"] is None, "one pretraining seed each: (a) is not decidable"
    assert itself.cpu_criteria.drop(columns="a_null_rate").equals(itself.criteria.drop(columns="a_null_rate"))
    assert choice.a_chance == itself.cited["cpu_a_chance"] == scale.separation_chance(1, 1)
    planned = len(store.plan())
    assert itself.cpu_spending.stored == itself.cpu_spending.planned == planned and itself.cpu_spending.rest_hours == 0
    assert 0 < itself.cpu_spending.spent_hours == itself.cpu_spending.total_hours <= scale.CPU_HOURS
    assert choice.unmet_below == {}, "the study stores no smaller budget"
    own = scale.stored_finetunings(store, ["none", "ape-learned"], ["sst2"], 4, "the profile's")
    assert list(own.variant) == ["none", "ape-learned"] and own["training examples"].eq(16).all()
    assert scale.stored_finetunings(store, ["none"], ["sst2"], 3, "x").empty  # no model kept at step 3
    screens = [ROOT / "studies" / "finetune_screen" / f"results-cpu-{t}.jsonl" for t in ("cola", "squad_v2")]
    epochs = scale.epochs_screen(screens, store)  # the store fine-tunes neither task: the screens alone
    assert set(epochs.task) == {"cola", "squad_v2"} and epochs.test.between(0, 100).all()
    n = len(itself.models)  # the same artifacts: taken, not trained twice
    assert (choice.shared.taken, choice.shared.trained_twice) == (n, 0) and math.isnan(choice.shared.largest_gap)
    again = itself.cpu_models.assign(created="another run")
    assert scale.shared_models(itself.models, again, 256) == scale.SharedModels(
        trained_twice=n, same_loss=n, largest_gap=0.0, taken=0)
    shifted = scale.shared_models(itself.models, again.assign(validation_loss=again.validation_loss + 0.5), 256)
    assert (shifted.same_loss, shifted.largest_gap) == (0, pytest.approx(0.5))
    elsewhere = scale.shared_models(itself.models, again, 512)  # the study keeps no model there
    assert (elsewhere.trained_twice, elsewhere.taken) == (0, 0)
    longer = dataclasses.replace(store.profile, name="cpu-like", task_max_train_by_task={"sst2": 8},
                                 pretrain=dataclasses.replace(store.profile.pretrain, steps=8, precision="auto"))
    other = scale.compute(store, cpu=store.with_profile(longer))
    assert other.cpu_choice.tokens == 512 > max(other.budget_tokens)
    assert other.cpu_choice.study_verdicts is None and other.cpu_choice.own_verdicts is None, "not a stored budget; none stored"
    assert other.cpu_choice.shared is None, "no model of the cpu profile is stored yet"
    assert other.cpu_choice.departures == scale.Departures(precision=scale.Precision("auto", "fp32", "fp32", ""),
                                                           caps=({8: ["sst2"], 256: ["squad"]}, {256: ["sst2", "squad"]}))
