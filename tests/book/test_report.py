"""pe_book.report: tables, summaries over seeds and the verdict rules, on small hand-made data."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pe_book import report
from pe_book.report import Claim, Comparison


def test_resolve_variants_validates_canonicalises_and_defaults():
    assert report.resolve_variants([], ["none", "ape-sin"]) == ["none", "ape-sin"]
    assert report.resolve_variants(["rpe-learned+ape-sin", "ape-sin+rpe-learned"], []) == ["ape-sin+rpe-learned"]
    with pytest.raises(ValueError, match="valid basic names"):
        report.resolve_variants(["ape-typo"], [])


def test_has_offset_table():
    assert report.has_offset_table("rpe-sin") and report.has_offset_table("ape-learned+rpe-learned")
    assert not any(map(report.has_offset_table, ["none", "ape-sin", "alibi", "rope", "t5-bias"]))


def test_curve_frame_and_final_losses():
    curves = {"a": [{"step": 5, "split": "train", "loss": 3.0, "lr": 1e-3}, {"step": 10, "split": "validation", "loss": 2.5}],
              "b": [{"step": 10, "split": "validation", "loss": 2.0}]}
    frame = report.curve_frame(curves)
    assert list(frame.columns) == ["variant", "step", "split", "loss"] and len(frame) == 3
    table = report.final_losses({"a": {"validation_loss": 2.5, "tokens_per_s": 10.0, "wall_s": 1.0},
                                 "b": {"validation_loss": 2.0, "tokens_per_s": 20.0, "wall_s": 2.0}},
                                parameters={"a": 7, "b": 8})
    assert list(table.index) == ["b", "a"]
    assert table.loc["a", "perplexity"] == pytest.approx(math.exp(2.5))
    assert table.loc["b", "parameters"] == 8


def test_pretraining_setup_counts_tokens_and_sums_wall_time():
    config = {"model": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                        "intermediate_size": 256, "vocab_size": 100},
              "pretrain": {"steps": 40, "batch_size": 16, "lr": 1e-3, "warmup_steps": 4},
              "data": {"seq_len": 64}}
    setup = report.pretraining_setup(config, {"a": {"tokens_per_s": 10.0, "wall_s": 1.5},
                                              "b": {"tokens_per_s": 30.0, "wall_s": 2.5}})
    assert setup["tokens"] == 40 * 16 * 64
    assert setup["tokens_per_s"] == 20.0 and setup["wall_s"] == 4.0 and setup["variants"] == 2


def test_count_parameters_matches_a_real_model():
    from pe_lib import PEBertConfig, PEBertForMaskedLM

    config = {"vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 32, "max_position_embeddings": 16, "position_embedding": "ape-learned+rpe-learned"}
    real = PEBertForMaskedLM(PEBertConfig(**config))
    assert report.count_parameters(config) == sum(p.numel() for p in real.parameters())


def _analysis(mono, ti, ape=True):
    probe = {"monotonicity": mono, "monotonicity_local": mono, "translation_invariance": ti, "symmetry": 0.5,
             "chen_locality": 0.1, "chen_symmetry": None}
    state = {"probe": [probe, {**probe, "monotonicity": -1.0}], "variant": "x"}
    if ape:
        state["ape"] = {"monotonicity": mono, "monotonicity_local": mono, "translation_invariance": ti, "symmetry": 1.0}
    return state


def test_indicator_table_and_change():
    analyses = {"a": {"init": _analysis(0.0, 0.1), "trained": _analysis(0.5, 0.4)},
                "b": {"init": _analysis(0.2, 0.2, ape=False), "trained": _analysis(0.1, 0.9, ape=False)}}
    probe = report.indicator_table(analyses, "trained", "probe")
    assert probe.loc["a", "monotonicity"] == 0.5 and math.isnan(probe.loc["a", "chen_symmetry"])
    assert report.indicator_table(analyses, "trained", "probe", layer=1).loc["b", "monotonicity"] == -1.0
    assert list(report.indicator_table(analyses, "init", "ape").index) == ["a"]
    change = report.indicator_change(analyses)
    assert change.loc["b", ("translation_invariance", "change")] == pytest.approx(0.7)
    assert change.columns[0] == ("monotonicity", "init")


def _per_seed(values: dict[str, list], column="classification"):
    """Per-seed table: ``variant -> [scores]`` (one pretraining seed) or ``[[scores] per pretraining seed]``."""
    rows = [(v, p, s, x) for v, xs in values.items()
            for p, runs in enumerate(xs if isinstance(xs[0], list) else [xs]) for s, x in enumerate(runs)]
    return pd.DataFrame(rows, columns=["variant", "pretrain_seed", "seed", column]).set_index(
        ["variant", "pretrain_seed", "seed"])


def test_score_records_scale_and_per_seed_groups():
    finetuned = {("a", "cola", 0, 0): {"test": {"matthews_correlation": 0.5}, "origin": "packaged:word-order"},
                 ("a", "mrpc", 0, 0): {"test": {"accuracy": 0.8, "f1": 0.6}, "origin": "hub:glue"},
                 ("a", "squad", 0, 0): {"test": {"exact_match": 40.0, "f1": 50.0}, "origin": "packaged:spans"},
                 ("a", "cola", 0, 1): {"test": {"matthews_correlation": 0.3}, "origin": "packaged:word-order"},
                 ("a", "cola", 1, 0): {"test": {"matthews_correlation": 0.1}, "origin": "packaged:word-order"}}
    kinds = {"cola": "classification", "mrpc": "classification", "squad": "span"}
    records = report.score_records(finetuned, kinds)
    assert records.loc[records.metric == "matthews_correlation", "value"].tolist() == [50.0, 30.0, 10.0]
    assert records.loc[records.task == "cola", "pretrain_seed"].tolist() == [0, 0, 1]
    table = report.per_seed_scores(records, {"classification": ["cola", "mrpc"], "span": ["squad"]})
    assert list(table.index.names) == ["variant", "pretrain_seed", "seed"]
    assert table.loc[("a", 0, 0), "mrpc"] == pytest.approx(70.0)
    assert table.loc[("a", 0, 0), "classification"] == pytest.approx(60.0)
    assert math.isnan(table.loc[("a", 0, 1), "classification"])  # mrpc missing for seed 1
    assert table.loc[("a", 1, 0), "cola"] == 10.0
    assert table.loc[("a", 0, 0), "span"] == 45.0
    f1_only = report.per_seed_scores(records, metrics={"squad": ["f1"]})
    assert f1_only.loc[("a", 0, 0), "squad"] == 50.0
    assert report.origins(finetuned) == {"cola": {"packaged:word-order"}, "mrpc": {"hub:glue"}, "squad": {"packaged:spans"}}


def test_summarise_format_and_best():
    per_seed = _per_seed({"a": [1.0, 3.0], "b": [5.0, 5.0], "c": [float("nan"), float("nan")]})
    summary = report.summarise(per_seed)
    assert summary.loc["a", ("classification", "mean")] == 2.0
    assert summary.loc["a", ("classification", "std")] == pytest.approx(math.sqrt(2))
    assert summary.loc["b", ("classification", "n")] == 2
    assert report.best_per_column(summary) == {"classification": ["b"]}
    text, flags = report.format_summary(summary)
    assert text.loc["a", "classification"] == "2.0 ± 1.4"
    assert text.loc["b", "classification"].endswith("▲") and flags.loc["b", "classification"]
    assert text.loc["c", "classification"] == "—"
    one = report.summarise(_per_seed({"a": [1.0], "b": [2.0]}))
    assert report.format_summary(one)[0].loc["a", "classification"] == "1.0"
    nested = report.summarise(_per_seed({"a": [[1.0, 3.0, 5.0], [10.0]]}))  # pretrained models weigh the same
    assert nested.loc["a", ("classification", "mean")] == 6.5 and nested.loc["a", ("classification", "n")] == 4
    assert "font-weight: bold" in report.style_summary(summary).to_html()


def test_assess_claims_end_to_end():
    per_seed = _per_seed({"x": [[10.0, 11.0, 12.0], [13.0, 12.0, 13.5], [11.0, 11.5, 12.0]],
                          "y": [[1.0, 2.0, 3.0], [2.0, 2.5, 1.5], [3.0, 2.0, 2.5]],
                          "z": [[10.5, 11.5, 12.5], [12.0, 11.0, 12.0], [13.0, 12.5, 12.0]]})
    claims = [Claim("x-best", "x beats y and z", (Comparison("x", "y", "classification"),
                                                  Comparison("x", "z", "classification"))),
              Claim("y-best", "y beats x", (Comparison("y", "x", "classification"),)),
              Claim("absent", "w beats x", (Comparison("w", "x", "classification"),))]
    table = report.assess_claims(claims, per_seed)
    assert table.loc["x-best", "verdict"] == report.UNDECIDED and table.loc["x-best", "MDE"] > 0
    assert table.loc["x-best", "decided as claimed"] == 1 and table.loc["x-best", "in claimed direction"] == 1
    assert table.loc["y-best", "verdict"] == report.CONTRADICTED and math.isnan(table.loc["y-best", "MDE"])
    assert table.loc["absent", "verdict"] == report.NOT_TESTED and table.loc["absent", "comparisons"] == 0
    one_seed = _per_seed({"x": [10.0], "y": [1.0]})
    assert report.assess_claims(claims[:1], one_seed).loc["x-best", "verdict"] == report.VARIANCE_UNKNOWN
    at_chance = report.assess_claims(claims[1:2], per_seed, baselines={"classification": 20.0})
    assert at_chance.loc["y-best", "verdict"] == report.AT_CHANCE


def test_paper_claims_name_paper_variants_and_pick_the_best_learned_rpe_on_validation():
    validation = _per_seed({"rpe-learned": [1.0], "ape-learned+rpe-learned": [9.0]}, column="squad")
    claims = {c.key: c for c in report.paper_claims(selection=validation, span_tasks=("squad",))}
    assert {c.worse for c in claims["cls-ape-best"].comparisons} == set(report.SINGLE_PES) - {"ape-learned"}
    best = claims["span-best-learned-rpe"].comparisons
    assert {c.better for c in best} == {"ape-learned+rpe-learned"}
    assert "rpe-learned" not in {c.worse for c in best}
    assert len(claims["span-rpe-beats-ape"].comparisons) == 7
    for claim in claims.values():
        for c in claim.comparisons:
            assert c.better in report.PAPER_VARIANTS and c.worse in report.PAPER_VARIANTS
    unselected = {c.key: c for c in report.paper_claims(span_tasks=("squad",))}
    assert {c.better for c in unselected["span-best-learned-rpe"].comparisons} == {"rpe-learned"}


def test_correlations_and_indicator_verdicts():
    variants = [f"v{i}" for i in range(8)] + ["none"]
    indicators = pd.DataFrame({"translation_invariance": np.r_[np.arange(8.0), 100.0],
                               "symmetry": np.r_[np.arange(8.0), 0.0],
                               "monotonicity_local": [1, 0, 1, 0, 1, 0, 1, 0, 0.5]}, index=variants)
    scores = pd.DataFrame({"classification": np.r_[np.arange(8.0), -50.0]}, index=variants)
    table = report.correlations(indicators, scores)
    assert table.loc[("translation_invariance", "classification"), "rho"] == pytest.approx(1.0)
    assert table.loc[("translation_invariance", "classification"), "n"] == 8  # "none" left out
    verdicts = report.assess_indicator_claims(table, ["classification"])
    assert verdicts.loc["ti-helps-classification", "verdict"] == report.SUPPORTED
    assert verdicts.loc["symmetry-hurts-classification", "verdict"] == report.CONTRADICTED
    assert verdicts.loc["local-mono-helps-classification", "verdict"] == report.NOT_SIGNIFICANT
    assert report.correlation_verdict(0.9, 0.001, 3, +1) == report.TOO_FEW


def test_metric_means_and_baselines():
    records = pd.DataFrame({"variant": ["b", "b", "a"], "task": ["mrpc"] * 3, "seed": [0, 1, 0],
                            "metric": ["f1"] * 3, "value": [10.0, 20.0, 5.0]})
    means = report.metric_means(records)
    assert list(means.index) == ["b", "a"] and means.loc["b", ("mrpc", "f1")] == 15.0


def test_best_excludes_a_baseline_and_origin_table():
    per_seed = _per_seed({"baseline": [9.0], "a": [2.0], "b": [3.0]})
    summary = report.summarise(per_seed)
    assert report.best_per_column(summary, exclude=["baseline"]) == {"classification": ["b"]}
    finetuned = {("a", "cola", 0, 0): {"origin": "packaged:word-order", "train_examples": 10, "test": {}},
                 ("a", "sst2", 0, 0): {"origin": "hub:glue-sst2", "train_examples": 20, "test": {}}}
    table = report.origin_table(finetuned, {"cola": "word order", "sst2": "reviews"},
                                {"cola": ("matthews_correlation",)}, {"cola": 5})
    assert table.loc["cola", "data in this run"] == "word order"
    assert table.loc["sst2", "data in this run"] == "the original data set"
    assert table.loc["cola", "examples (train / test)"] == "10 / 5"
    assert table.loc["sst2", "examples (train / test)"] == "20 / ?"


def test_best_text():
    assert report.best_text(["a"], 5) == "a"
    assert report.best_text(["a", "b", "c", "d"], 5) == "4 variants tie"
    assert report.best_text(list("abcde"), 5) == "all 5 variants tie"
    assert report.best_text([], 5) == "none"


def test_per_seed_by_metric():
    records = pd.DataFrame({"variant": ["a"] * 4, "task": ["squad", "squad", "squad_v2", "squad_v2"],
                            "pretrain_seed": [0] * 4, "seed": [0] * 4, "metric": ["exact_match", "f1"] * 2,
                            "value": [1.0, 2.0, 3.0, 4.0]})
    table = report.per_seed_by_metric(records, {"exact_match": "EM", "f1": "F1"})
    assert list(table.columns) == ["squad EM", "squad F1", "squad_v2 EM", "squad_v2 F1"]
    assert table.loc[("a", 0, 0), "squad_v2 F1"] == 4.0


def test_comparison_table():
    per_seed = _per_seed({"x": [[10.0, 11.0, 12.0], [12.0, 12.0, 13.0]], "y": [[1.0, 2.0, 3.0], [2.0, 1.0, 2.0]]})
    claims = [Claim("k", "x beats y", (Comparison("x", "y", "classification"), Comparison("y", "x", "classification")))]
    table = report.comparison_table(claims, per_seed)
    assert list(table["outcome"]) == ["as claimed", "against"]
    assert table.loc[0, "difference"] == pytest.approx(35 / 3 - 11 / 6) and table.loc[0, "low"] > 0
    assert "pooled over 2 variant(s)" in table.loc[0, "variance"]


def test_format_summary_marks_nothing_when_every_variant_ties():
    summary = report.summarise(_per_seed({"a": [1.0], "b": [1.0], "baseline": [0.0]}))
    text, flags = report.format_summary(summary, exclude=["baseline"])
    assert not flags.any().any() and text.loc["a", "classification"] == "1.0"


def test_chapter_tasks_keeps_the_chapters_kind_and_refuses_the_other():
    assert list(report.chapter_tasks([], ["cola", "squad", "sst2", "squad_v2"], span=False)) == ["cola", "sst2"]
    assert list(report.chapter_tasks([], ["cola", "squad", "sst2", "squad_v2"], span=True)) == ["squad", "squad_v2"]
    assert list(report.chapter_tasks(["stsb"], ["cola"], span=False)) == ["stsb"]
    with pytest.raises(ValueError, match=r"span tasks \(squad, squad_v2\) are the subject of chapter 07_span_prediction"):
        report.chapter_tasks(["sst2", "squad"], [], span=False)
    with pytest.raises(ValueError, match="sentence-level tasks are the subject of chapter 06_classification"):
        report.chapter_tasks(["cola"], [], span=True)
    with pytest.raises(ValueError, match="unknown task"):
        report.chapter_tasks(["glue"], [], span=False)


def test_untying_pairs_need_both_sides():
    names = ["ape-learned", "rpe-learned", "rpe-learned+untie-cls", "alibi+untie-cls"]
    assert report.untying_pairs(names) == {"rpe-learned+untie-cls": "rpe-learned"}


def _nested(centre: float) -> list[list[float]]:
    """3 pretraining x 3 fine-tuning seeds around ``centre`` (pretrained-model means centre - 1, centre, centre + 1)."""
    return [[centre + p - 0.5, centre + p, centre + p + 0.5] for p in (-1, 0, 1)]


@pytest.mark.parametrize("untied, share, conclusion", [
    (79.0, 0.9, "closes the gap (no remaining gap detected)"),  # beats tied by 9; 1 behind APE, not decided
    (75.0, 0.5, "narrows the gap"),  # beats tied by 5; still 5 behind APE
    (71.0, 0.1, report.UNDECIDED),
    (62.0, -0.8, "widens the gap"),
    (90.0, 2.0, "reverses the gap"),
])
def test_cls_gap_verdicts(untied, share, conclusion):
    per_seed = _per_seed({"ape-learned": _nested(80.0), "rpe-learned": _nested(70.0),
                          "rpe-learned+untie-cls": _nested(untied)})
    row = report.cls_gap(per_seed, "ape-learned", {"rpe-learned+untie-cls": "rpe-learned"}, "classification").iloc[0]
    assert row["gap before"] == pytest.approx(10.0)
    assert row["share closed"] == pytest.approx(share)
    assert row["gain low"] < row["gain"] < row["gain high"]
    assert row["conclusion"] == conclusion

def test_cls_gap_without_a_gap_or_a_spread():
    pairs = {"rpe-learned+untie-cls": "rpe-learned"}
    ahead = _per_seed({"ape-learned": [70.0, 71.0], "rpe-learned": [80.0, 81.0], "rpe-learned+untie-cls": [90.0, 91.0]})
    row = report.cls_gap(ahead, "ape-learned", pairs, "classification").iloc[0]
    assert row["conclusion"].startswith("no gap") and math.isnan(row["share closed"])
    one_seed = _per_seed({"ape-learned": [80.0], "rpe-learned": [70.0], "rpe-learned+untie-cls": [79.0]})
    row = report.cls_gap(one_seed, "ape-learned", pairs, "classification").iloc[0]
    assert row["conclusion"] == report.VARIANCE_UNKNOWN and row["share closed"] == pytest.approx(0.9)


def test_seed_design_in_words():
    from pe_book.experiments.profiles import get_profile

    profile = get_profile("smoke").with_overrides(seeds=(0, 1, 2), pretrain_seeds_by_variant={"none": 3, "rpe-sin": 3})
    assert report.seed_design(profile, ["none", "rpe-sin", "ape-sin", "alibi", "rope"]) == (
        "3 pretraining seed(s) for none, rpe-sin; 1 for the other 3 variant(s); "
        "3 fine-tuning seed(s) on each pretrained model")
    assert report.seed_design(profile, ["ape-sin"]).startswith("1 pretraining seed(s) for every variant")


def test_data_used_says_where_the_corpus_and_each_task_came_from():
    from types import SimpleNamespace

    runner = SimpleNamespace(corpus=SimpleNamespace(origin="packaged", card={"sources": {"austen": {}, "kjv": {}}}),
                             task=lambda t: SimpleNamespace(origin={"sst2": "packaged:sentiment", "cola": "hub:nyu-mll/glue"}[t]))
    table = report.data_used({"profile": "cpu", "seeds": [0, 1]}, runner, ["sst2", "cola"])
    assert table.loc["profile", "value"] == "'cpu'" and table.loc["seeds", "value"] == "[0, 1]"
    assert table.loc["data: pretraining text", "value"] == "packaged (austen, kjv)"
    assert table.loc["data: task cola", "value"] == "hub:nyu-mll/glue"


def test_indicator_table_recomputes_local_monotonicity_for_another_window():
    from pe_lib.properties import indicators

    n = 16
    gram = -np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float) + 0.3 * np.random.default_rng(0).normal(size=(n, n))
    stored = indicators(gram, window=8)
    analyses = {"ape-learned": {"trained": {"ape": stored}}}
    maps = {"ape-learned": {"trained.ape": gram}}
    same = report.indicator_table(analyses, "trained", "ape", window=8, maps=maps)
    assert same.loc["ape-learned", "monotonicity_local"] == stored["monotonicity_local"]
    other = report.indicator_table(analyses, "trained", "ape", window=3, maps=maps)
    assert other.loc["ape-learned", "monotonicity_local"] == pytest.approx(indicators(gram, window=3)["monotonicity_local"])
    assert other.loc["ape-learned", "monotonicity_local"] != stored["monotonicity_local"]
    assert other.loc["ape-learned", "monotonicity"] == stored["monotonicity"], "the other indicators have no window"
