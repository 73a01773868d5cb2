"""pe_book.verdicts.gate: the gate on learned columns: best variant chosen on the validation split, the control, the baselines."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from book.verdicts.scores import seed_table
from pe_book.verdicts import gate, intervals, mixed_model


def test_a_column_is_testable_only_beyond_its_order_free_baseline():
    frame = seed_table({"a": [[50.0, 50.2], [50.1, 50.3], [49.9, 50.0]], "b": [[55.0, 55.1], [55.2, 55.0], [54.9, 55.1]]})
    assert gate.learned(frame, "classification", ("bag of words", 52.0))["testable"]
    # b is above 54.9 on average but not beyond its interval
    row = gate.learned(frame, "classification", ("bag of words", 55.0))
    assert not row["testable"] and row["best variant"] == "b" and row["low"] < 55.0 < row["mean"]
    assert row["reason"] == "no model beats bag of words on classification"
    # the best variant is chosen on the selection split, not on the tested one
    chosen = gate.learned(frame, "classification", ("bag of words", 52.0), selection=seed_table({"a": [[9.0]], "b": [[1.0]]}))
    assert chosen["best variant"] == "a" and not chosen["testable"]
    unknown = seed_table({"a": [[50.0, 51.0]], "b": [[60.0, 61.0]]})  # variance unknown: the mean decides
    assert gate.learned(unknown, "classification", ("constant", 55.0))["testable"]
    assert not gate.learned(unknown, "classification", ("constant", 70.0))["testable"]


def test_a_variant_with_one_pretraining_seed_is_never_the_gates_best_variant():
    frame = seed_table({"a": [[50.0, 50.2], [50.1, 50.3], [49.9, 50.0]], "b": [[55.0, 55.1], [55.2, 55.0], [54.9, 55.1]],
                    "solo": [[90.0, 90.0]]})  # one pretraining seed: its interval would borrow a's and b's variance
    assert gate.gate_candidates(frame, "classification") == ["a", "b"]
    assert gate.best_variant(frame, "classification", frame) == "b"
    row = gate.learned(frame, "classification", ("bag of words", 60.0))
    assert row["best variant"] == "b" and not row["testable"], "solo's 90 must not let the column in"
    assert row["level"] == 0.95 and row["high"] - row["mean"] == pytest.approx(row["mean"] - row["low"])
    table = gate.against_baselines(frame, frame, {"bag of words": {"classification": 60.0}})
    assert table["best variant"].tolist() == ["b"] and table["outcome"].tolist() == [intervals.BELOW]
    # where no variant has two pretraining seeds, every variant is a candidate (the mean decides, nothing is borrowed)
    assert gate.gate_candidates(seed_table({"a": [[1.0]], "b": [[2.0, 3.0]]}), "classification") == ["a", "b"]


def test_an_order_sensitive_column_is_testable_only_beyond_the_variant_that_cannot_see_order():
    near = {"a": [[60.0, 61.0], [62.0, 61.5], [59.0, 60.0]], "none": [[59.5, 60.5], [61.0, 60.0], [58.5, 59.5]]}
    frame = seed_table({**near, "b": [[40.0, 41.0], [40.5, 40.0]]}, column="span")
    assert gate.learned(frame, "span", ("absent word", 38.0))["testable"]  # the rule alone: learned
    behind = gate.learned(frame, "span", ("absent word", 38.0), control="none")
    assert not behind["testable"] and behind["best variant"] == "a" and behind["gap low"] < 0 < behind["gap"]
    assert behind["reason"] == "no model beats none (no word order) on span beyond its interval"
    ahead = seed_table({**near, "a": [[70.0, 71.0], [72.0, 71.5], [69.0, 70.0]]}, column="span")
    row = gate.learned(ahead, "span", ("absent word", 38.0), control="none")
    assert row["testable"] and row["gap low"] > 0 and row["control"] == "none"
    best = gate.learned(seed_table({"none": [[70.0, 71.0]], "a": [[60.0, 61.0]]}, column="span"), "span",
                         ("absent word", 38.0), control="none")
    assert not best["testable"] and best["reason"] == "no model beats none (no word order) on span"
    # a control that has no score on the column is no bar
    assert gate.learned(ahead, "span", ("absent word", 38.0), control="rope")["testable"]
    # the gap to the control is shown also where a baseline is not beaten, whose reason comes first
    reads = gate.learned(ahead, "span", ("neighbour match", 80.0), control="none")
    assert not reads["testable"] and reads["gap low"] > 0 and reads["reason"] == "no model beats neighbour match on span"


def test_best_is_chosen_on_the_selection_split():
    validation = seed_table({"x": [[60.0, 61.0]], "y": [[70.0, 71.0]], "z": [[99.0, 99.0]]}, column="squad")
    assert gate.best_on(validation, "squad", ["x", "y"]) == "y"
    assert gate.best_on(validation, "squad_v2", ["x", "y"]) is None
    assert gate.best_on(validation, "squad", ["w"]) is None


def test_the_best_variant_is_set_against_each_baseline_with_its_interval():
    test = seed_table({"x": [[60.0, 61.0], [62.0, 63.0], [61.0, 61.0]], "y": [[70.0, 70.0], [72.0, 72.0], [71.0, 71.0]]})
    validation = seed_table({"x": [[80.0, 80.0]], "y": [[50.0, 50.0]]})  # x is chosen, although y scores higher on test
    table = gate.against_baselines(test, validation, {"constant": {"classification": 50.0},
                                                       "bag of words": {"classification": 61.5},
                                                       "rule": {"span": 10.0}}, alpha=0.05)
    assert list(table["baseline"]) == ["constant", "bag of words"] and set(table["best variant"]) == {"x"}
    model_means = np.array([60.5, 62.5, 61.0])
    # y's runs are all equal, x's are not: Bartlett rejects, x keeps its own fine-tuning variance
    # (1/3, over 2 seeds); the pretraining part is the between mean square less the mean fine-tuning part
    between = (((model_means - model_means.mean()) ** 2).sum() + 2.0) / 4
    tau2 = between - (2 * (1 / 3) / 2) / 4 + (1 / 3) / 2
    half = sps.t.isf(0.05 / 2 / 2, 4) * math.sqrt(tau2 / 3)
    row = table.set_index("baseline").loc["bag of words"]
    assert row["mean"] == pytest.approx(model_means.mean()) and row["high"] - row["mean"] == pytest.approx(half)
    assert list(table["outcome"]) == [intervals.ABOVE, intervals.WITHIN] == ["above", "within the interval"]
    # Bonferroni over the column's two distinct baselines, and the interval says so
    assert (table["level"] == 1 - 0.05 / 2).all() and (table["over"] == 2).all()
    assert set(table["role"]) == {gate.ORDER_FREE}
    assert table.set_index("baseline").loc["constant", "difference"] == pytest.approx(model_means.mean() - 50.0)
    below = gate.against_baselines(test, validation, {"bag of words": {"classification": 70.0}})
    assert below["outcome"].tolist() == ["below"]
    unknown = gate.against_baselines(seed_table({"x": [[60.0, 61.0]]}), seed_table({"x": [[60.0, 61.0]]}),
                                      {"constant": {"classification": 50.0}})
    assert unknown["outcome"].tolist() == ["variance unknown"] and math.isnan(unknown.loc[0, "low"])


def test_an_interval_is_bounded_by_the_scores_a_column_can_take_and_no_outcome_changes():
    near_top = seed_table({"x": [[99.0, 99.0], [80.0, 80.0], [99.0, 99.0]]})
    baselines = {"rule": {"classification": 85.0}, "constant": {"classification": 0.5}}
    free = gate.against_baselines(near_top, near_top, baselines)
    bounded = gate.against_baselines(near_top, near_top, baselines, ranges={"classification": (0.0, 100.0)})
    assert free["high"].iloc[0] > 100 and free["low"].iloc[0] < 85  # a t interval past what a score can be
    assert (bounded["high"] == 100.0).all() and (bounded["low"] == free["low"]).all()
    assert bounded["outcome"].tolist() == free["outcome"].tolist() == [intervals.WITHIN, intervals.ABOVE]


def test_a_rule_that_reads_word_order_is_a_reference_counted_once_in_the_correction():
    frame = seed_table({"x": [[60.0, 61.0], [62.0, 63.0], [61.0, 61.0]], "y": [[50.0, 51.0], [52.0, 50.0], [51.0, 51.0]]})
    baselines = {"constant": {"classification": 30.0}, "absent word": {"classification": 40.0},
                 "neighbour match": {"classification": 70.0}}
    table = gate.against_baselines(frame, frame, baselines, references=["neighbour match"]).set_index("baseline")
    assert table.loc["neighbour match", "role"] == gate.REFERENCE and table.loc["absent word", "role"] == gate.ORDER_FREE
    assert table.loc["neighbour match", "outcome"] == intervals.BELOW
    # three distinct baselines, three comparisons: the level is 1 - alpha / 3 whatever summary a caller has in mind
    assert (table["over"] == 3).all() and table["level"].iloc[0] == pytest.approx(1 - 0.05 / 3)
    col = mixed_model.column_stats(frame, "classification")
    half = intervals.interval_halfwidth(math.sqrt(float(col.components.tau2[0]) / 3), col.components.df_tau, 0.05 / 3)
    assert table["high"].iloc[0] - table["mean"].iloc[0] == pytest.approx(float(half))
