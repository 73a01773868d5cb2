"""pe_book.verdicts.comparisons: a claim's family of comparisons: borrowed variances, MDEs, the seeds needed, untestable columns, levels."""
from __future__ import annotations

import math

import numpy as np
import pytest

from book.verdicts.scores import seed_table
from pe_book.verdicts import comparisons, intervals, rule
from pe_book.verdicts.rule import Claim, Comparison


def test_a_variant_with_one_pretraining_seed_borrows_the_pooled_variance_and_says_so():
    frame = seed_table({"a": [[10.0, 11.0], [14.0, 15.0], [12.0, 13.0]], "b": [[5.0, 6.0]]})
    row = comparisons.compare_family([Comparison("a", "b", "classification")], frame).iloc[0]
    assert row["variance"].endswith("(borrowed): b") and row["df"] == 2
    assert row["se"] == pytest.approx(math.sqrt(4.0 * (1 / 3 + 1)))  # tau2 = var(11.5, 14.5, 12.5) = 4 / 3 * 3


def test_an_undecided_claim_reports_its_mde():
    rng = np.random.default_rng(4)
    scores = {v: (rng.normal(0, 1, (3, 1)) + rng.normal(0, 1, (3, 3))).tolist() for v in "ab"}
    result = comparisons.assess(Claim("k", "a beats b", (Comparison("a", "b", "classification"),)), seed_table(scores))
    assert result["verdict"] == rule.UNDECIDED
    assert result["MDE"] == pytest.approx(result["details"]["MDE"].max()) and result["MDE"] > 0


def test_an_undecided_claim_says_how_many_pretraining_seeds_would_decide_it():
    rng = np.random.default_rng(4)
    scores = {v: (rng.normal(0, 1, (3, 1)) + rng.normal(0, 1, (3, 3)) + (2.0 if v == "a" else 0.0)).tolist()
              for v in "ab"}  # observed difference 2.5 with a standard error of 1.3: p 0.13
    result = comparisons.assess(Claim("k", "a beats b", (Comparison("a", "b", "classification"),)), seed_table(scores))
    assert result["verdict"] == rule.UNDECIDED and result["seeds needed"] == 8
    assert result["seeds needed"] == result["details"]["seeds needed"].iloc[0]


def test_a_claim_on_columns_no_model_learned_is_not_testable_never_contradicted():
    frame = seed_table({"a": [[50.0, 50.2], [50.1, 50.3], [49.9, 50.0]], "b": [[55.0, 55.1], [55.2, 55.0], [54.9, 55.1]]})
    frame["other"] = frame["classification"]
    claim = Claim("k", "a beats b", (Comparison("a", "b", "classification"),))
    assert comparisons.assess(claim, frame)["verdict"] == rule.CONTRADICTED == "contradicted at this scale"
    reason = "no model beats bag of words on classification"
    result = comparisons.assess(claim, frame, {"classification": reason})
    assert result["verdict"] == f"not testable at this scale: {reason}" and result["not testable on"] == reason
    row = result["details"].iloc[0]
    assert row["gate"] == reason and row["outcome"] == 0 and row["difference"] < 0 and np.isnan(row["p (Holm)"])
    # an untestable comparison leaves the family: the testable one keeps its unadjusted p (K = 1)
    both = Claim("k2", "a beats b twice", (Comparison("a", "b", "classification"), Comparison("a", "b", "other")))
    details = comparisons.assess(both, frame, {"classification": reason})["details"]
    assert details["p (Holm)"].iloc[1] == pytest.approx(details["p"].iloc[1]) and np.isnan(details["p (Holm)"].iloc[0])
    assert comparisons.assess(both, frame, {"classification": reason})["verdict"] == rule.CONTRADICTED
    table = comparisons.comparison_table([both], frame, {"classification": reason})
    assert list(table["outcome"]) == ["not testable", "against"]


def test_comparison_table_reads_the_rule():
    frame = seed_table({"x": [[10.0, 11.0], [12.0, 12.5], [11.0, 11.0]], "y": [[1.0, 2.0], [1.5, 1.0], [2.0, 3.0]]})
    claims = [Claim("k", "x beats y, y beats x", (Comparison("x", "y", "classification"),
                                                  Comparison("y", "x", "classification")), "any")]
    table = comparisons.comparison_table(claims, frame)
    assert list(table["outcome"]) == ["as claimed", "against"]
    assert (table["p (Holm)"] >= table["p"]).all() and table.loc[0, "low"] > 0 > table.loc[1, "high"]
    assert comparisons.assess_claims(claims, frame).loc["k", "verdict"] == rule.SUPPORTED


def test_a_family_records_the_level_of_its_intervals():
    frame = seed_table({"x": [[10.0, 11.0], [12.0, 12.5], [11.0, 11.0]], "y": [[1.0, 2.0], [1.5, 1.0], [2.0, 3.0]]})
    frame["other"] = frame["classification"]
    family = (Comparison("x", "y", "classification"), Comparison("y", "x", "classification"), Comparison("x", "y", "other"))
    details = comparisons.compare_family(family, frame, {"other": "no model beats constant on other"})
    assert (details["level"] == 1 - 0.05 / 2).all() and (details["over"] == 2).all()  # the two testable comparisons
    half = intervals.interval_halfwidth(details["se"].iloc[0], details["df"].iloc[0], 0.05 / 2)
    assert details["high"].iloc[0] - details["difference"].iloc[0] == pytest.approx(float(half))
