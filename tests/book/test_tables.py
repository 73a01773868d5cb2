"""pe_book.tables: indicator tables, score records, summaries over seeds and their formatting, on small hand-made data."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pe_book import tables


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
    probe = tables.indicator_table(analyses, "trained", "probe")
    assert probe.loc["a", "monotonicity"] == 0.5 and math.isnan(probe.loc["a", "chen_symmetry"])
    assert tables.indicator_table(analyses, "trained", "probe", layer=1).loc["b", "monotonicity"] == -1.0
    assert list(tables.indicator_table(analyses, "init", "ape").index) == ["a"]
    change = tables.indicator_change(analyses)
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
    records = tables.score_records(finetuned, kinds)
    assert records.loc[records.metric == "matthews_correlation", "value"].tolist() == [50.0, 30.0, 10.0]
    assert records.loc[records.task == "cola", "pretrain_seed"].tolist() == [0, 0, 1]
    table = tables.per_seed_scores(records, {"classification": ["cola", "mrpc"], "span": ["squad"]})
    assert list(table.index.names) == ["variant", "pretrain_seed", "seed"]
    assert table.loc[("a", 0, 0), "mrpc"] == pytest.approx(70.0)
    assert table.loc[("a", 0, 0), "classification"] == pytest.approx(60.0)
    assert math.isnan(table.loc[("a", 0, 1), "classification"])  # mrpc missing for seed 1
    assert table.loc[("a", 1, 0), "cola"] == 10.0
    assert table.loc[("a", 0, 0), "span"] == 45.0
    f1_only = tables.per_seed_scores(records, metrics={"squad": ["f1"]})
    assert f1_only.loc[("a", 0, 0), "squad"] == 50.0
    assert tables.origins(finetuned) == {"cola": {"packaged:word-order"}, "mrpc": {"hub:glue"}, "squad": {"packaged:spans"}}


def test_a_run_without_a_score_is_named_and_its_mean_says_over_how_many_runs():
    # rope's sst2 run of fine-tuning seed 2 gave NaN; cloze was fine-tuned with seed 0 only (the design)
    finetuned = {(v, t, 0, s): {"test": {"accuracy": x}} for v, xs in {"ape": [0.70, 0.72, 0.74], "rope": [0.68, 0.70, math.nan]}.items()
                 for t in ("sst2",) for s, x in enumerate(xs)}
    finetuned |= {(v, "cloze", 0, 0): {"test": {"exact_match": 40.0, "f1": 50.0}} for v in ("ape", "rope")}
    records = tables.score_records(finetuned, {"sst2": "classification", "cloze": "span"})
    per_seed = tables.per_seed_scores(records)
    summary = tables.summarise(per_seed)
    assert summary.loc["rope", ("sst2", "mean")] == pytest.approx(69.0)  # over the two runs with a score
    assert (summary.loc["rope", ("sst2", "n")], summary.loc["rope", ("sst2", "runs")]) == (2, 3)
    assert summary.loc["rope", ("cloze", "runs")] == 1  # seeds 1 and 2 were never run on cloze
    text = tables.format_summary(summary)[0]
    assert text.loc["rope", "sst2"] == "69.0 ± 1.4 (2 of 3 runs)" and text.loc["ape", "sst2"].startswith("72.0 ± 2.0")
    assert text.loc["rope", "cloze"] == "45.0" and "runs" not in text.loc["ape", "cloze"]
    assert tables.unscored(per_seed) == ["rope sst2 (pretraining seed 0, fine-tuning seed 2)"]
    assert tables.unscored_text(per_seed).startswith("1 run gave no score (NaN) and is left out of the means")
    assert tables.unscored_text(per_seed.drop(index=("rope", 0, 2))) == ""
    # a run whose every score is NaN keeps its row: it is named, not dropped
    failed = tables.per_seed_scores(records[(records.variant != "rope") | (records.seed != 2) | (records.task != "cloze")]
                                    .assign(value=lambda r: r.value.where(~((r.variant == "rope") & (r.seed == 2)))))
    assert ("rope", 0, 2) in failed.index and tables.unscored(failed) == ["rope sst2 (pretraining seed 0, fine-tuning seed 2)"]


def test_summarise_format_and_best():
    per_seed = _per_seed({"a": [1.0, 3.0], "b": [5.0, 5.0], "c": [float("nan"), float("nan")]})
    summary = tables.summarise(per_seed)
    assert summary.loc["a", ("classification", "mean")] == 2.0
    assert summary.loc["a", ("classification", "std")] == pytest.approx(math.sqrt(2))
    assert summary.loc["b", ("classification", "n")] == 2
    assert tables.best_per_column(summary) == {"classification": ["b"]}
    text, flags = tables.format_summary(summary)
    assert text.loc["a", "classification"] == "2.0 ± 1.4"
    assert text.loc["b", "classification"].endswith("▲") and flags.loc["b", "classification"]
    assert text.loc["c", "classification"] == "— (0 of 2 runs)"  # ran, but no score
    one = tables.summarise(_per_seed({"a": [1.0], "b": [2.0]}))
    assert tables.format_summary(one)[0].loc["a", "classification"] == "1.0"
    nested = tables.summarise(_per_seed({"a": [[1.0, 3.0, 5.0], [10.0]]}))  # pretrained models weigh the same
    assert nested.loc["a", ("classification", "mean")] == 6.5 and nested.loc["a", ("classification", "n")] == 4
    assert "font-weight: bold" in tables.style_summary(summary).to_html()


def test_metric_means_and_baselines():
    records = pd.DataFrame({"variant": ["b", "b", "a"], "task": ["mrpc"] * 3, "seed": [0, 1, 0],
                            "metric": ["f1"] * 3, "value": [10.0, 20.0, 5.0]})
    means = tables.metric_means(records)
    assert list(means.index) == ["b", "a"] and means.loc["b", ("mrpc", "f1")] == 15.0


def test_best_excludes_a_baseline_and_origin_table():
    per_seed = _per_seed({"baseline": [9.0], "a": [2.0], "b": [3.0]})
    summary = tables.summarise(per_seed)
    assert tables.best_per_column(summary, exclude=["baseline"]) == {"classification": ["b"]}
    finetuned = {("a", "cola", 0, 0): {"origin": "packaged:word-order", "train_examples": 10, "test": {}},
                 ("a", "sst2", 0, 0): {"origin": "hub:glue-sst2", "train_examples": 20, "test": {}}}
    table = tables.origin_table(finetuned, {"cola": "word order", "sst2": "reviews"},
                                {"cola": ("matthews_correlation",)}, {"cola": 5})
    assert table.loc["cola", "data in this run"] == "word order"
    assert table.loc["sst2", "data in this run"] == "the original data set"
    assert table.loc["cola", "examples (train / test)"] == "10 / 5"
    assert table.loc["sst2", "examples (train / test)"] == "20 / ?"


def test_best_text():
    assert tables.best_text(["a"], 5) == "a"
    assert tables.best_text(["a", "b", "c", "d"], 5) == "4 variants tie"
    assert tables.best_text(list("abcde"), 5) == "all 5 variants tie"
    assert tables.best_text([], 5) == "none"


def test_per_seed_by_metric():
    records = pd.DataFrame({"variant": ["a"] * 4, "task": ["squad", "squad", "squad_v2", "squad_v2"],
                            "pretrain_seed": [0] * 4, "seed": [0] * 4, "metric": ["exact_match", "f1"] * 2,
                            "value": [1.0, 2.0, 3.0, 4.0]})
    table = tables.per_seed_by_metric(records, {"exact_match": "EM", "f1": "F1"})
    assert list(table.columns) == ["squad EM", "squad F1", "squad_v2 EM", "squad_v2 F1"]
    assert table.loc[("a", 0, 0), "squad_v2 F1"] == 4.0


def test_format_summary_marks_nothing_when_every_variant_ties():
    summary = tables.summarise(_per_seed({"a": [1.0], "b": [1.0], "baseline": [0.0]}))
    text, flags = tables.format_summary(summary, exclude=["baseline"])
    assert not flags.any().any() and text.loc["a", "classification"] == "1.0"


def test_indicator_table_recomputes_local_monotonicity_for_another_window():
    from pe_lib.properties import indicators

    n = 16
    gram = -np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float) + 0.3 * np.random.default_rng(0).normal(size=(n, n))
    stored = indicators(gram, window=8)
    analyses = {"ape-learned": {"trained": {"ape": stored}}}
    maps = {"ape-learned": {"trained.ape": gram}}
    same = tables.indicator_table(analyses, "trained", "ape", window=8, maps=maps)
    assert same.loc["ape-learned", "monotonicity_local"] == stored["monotonicity_local"]
    other = tables.indicator_table(analyses, "trained", "ape", window=3, maps=maps)
    assert other.loc["ape-learned", "monotonicity_local"] == pytest.approx(indicators(gram, window=3)["monotonicity_local"])
    assert other.loc["ape-learned", "monotonicity_local"] != stored["monotonicity_local"]
    assert other.loc["ape-learned", "monotonicity"] == stored["monotonicity"], "the other indicators have no window"
