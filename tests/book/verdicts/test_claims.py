"""pe_book.verdicts.claims (and the verdict rule of pe_book.verdicts it applies): the paper's claims, correlations with indicators and the [CLS] gap, on small hand-made data."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from book.test_tables import _per_seed
from pe_book.experiments import profiles
from pe_book.verdicts import claims, comparisons, rule
from pe_book.verdicts.groups import ORDER_SENSITIVE_CLASSIFICATION, SPAN
from pe_book.verdicts.rule import Claim, Comparison


def test_assess_claims_end_to_end():
    per_seed = _per_seed({"x": [[10.0, 11.0, 12.0], [13.0, 12.0, 13.5], [11.0, 11.5, 12.0]],
                          "y": [[1.0, 2.0, 3.0], [2.0, 2.5, 1.5], [3.0, 2.0, 2.5]],
                          "z": [[10.5, 11.5, 12.5], [12.0, 11.0, 12.0], [13.0, 12.5, 12.0]]})
    stated = [Claim("x-best", "x beats y and z", (Comparison("x", "y", "classification"),
                                                  Comparison("x", "z", "classification"))),
              Claim("y-best", "y beats x", (Comparison("y", "x", "classification"),)),
              Claim("absent", "w beats x", (Comparison("w", "x", "classification"),))]
    table = comparisons.assess_claims(stated, per_seed)
    assert table.loc["x-best", "verdict"] == rule.UNDECIDED and table.loc["x-best", "MDE"] > 0
    assert table.loc["x-best", "decided as claimed"] == 1 and table.loc["x-best", "in claimed direction"] == 1
    assert table.loc["y-best", "verdict"] == rule.CONTRADICTED and math.isnan(table.loc["y-best", "MDE"])
    assert table.loc["absent", "verdict"] == rule.NOT_TESTED and table.loc["absent", "comparisons"] == 0
    one_seed = _per_seed({"x": [10.0], "y": [1.0]})
    assert comparisons.assess_claims(stated[:1], one_seed).loc["x-best", "verdict"] == rule.VARIANCE_UNKNOWN
    reason = "no model beats bag of words on classification"
    not_learned = comparisons.assess_claims(stated[1:2], per_seed, {"classification": reason})
    assert not_learned.loc["y-best", "verdict"] == f"{rule.NOT_TESTABLE}: {reason}"  # never "contradicted"
    assert not_learned.loc["y-best", "not testable on"] == reason


def test_paper_claims_name_paper_variants_and_pick_the_best_learned_rpe_on_validation():
    validation = _per_seed({"rpe-learned": [1.0], "ape-learned+rpe-learned": [9.0]}, column="squad")
    stated = {c.key: c for c in claims.paper_claims(selection=validation, span_tasks=("squad",))}
    assert {c.worse for c in stated["cls-ape-best"].comparisons} == set(profiles.SINGLE_PES) - {"ape-learned"}
    # the GLUE-average claims stand on the order-sensitive classification tasks, the SQuAD-average ones on the span tasks
    assert {c.column for c in stated["cls-ape-best"].comparisons} == {ORDER_SENSITIVE_CLASSIFICATION}
    assert {c.column for c in stated["span-rpe-beats-ape"].comparisons} == {SPAN}
    best = stated["span-best-learned-rpe"].comparisons
    assert {c.better for c in best} == {"ape-learned+rpe-learned"}
    assert "rpe-learned" not in {c.worse for c in best}
    assert len(stated["span-rpe-beats-ape"].comparisons) == 7
    for claim in stated.values():
        for c in claim.comparisons:
            assert c.better in profiles.PAPER_VARIANTS and c.worse in profiles.PAPER_VARIANTS
    unselected = {c.key: c for c in claims.paper_claims(span_tasks=("squad",))}
    assert {c.better for c in unselected["span-best-learned-rpe"].comparisons} == {"rpe-learned"}


def test_correlations_and_indicator_verdicts():
    variants = [f"v{i}" for i in range(8)] + ["none"]
    indicators = pd.DataFrame({"translation_invariance": np.r_[np.arange(8.0), 100.0],
                               "symmetry": np.r_[np.arange(8.0), 0.0],
                               "monotonicity_local": [1, 0, 1, 0, 1, 0, 1, 0, 0.5]}, index=variants)
    scores = pd.DataFrame({"classification": np.r_[np.arange(8.0), -50.0]}, index=variants)
    table = claims.correlations(indicators, scores)
    assert table.loc[("translation_invariance", "classification"), "rho"] == pytest.approx(1.0)
    assert table.loc[("translation_invariance", "classification"), "n"] == 8  # "none" left out
    verdicts = claims.assess_indicator_claims(table, ["classification"])
    assert verdicts.loc["ti-helps-classification", "verdict"] == rule.SUPPORTED
    assert verdicts.loc["symmetry-hurts-classification", "verdict"] == rule.CONTRADICTED
    assert verdicts.loc["local-mono-helps-classification", "verdict"] == claims.NOT_SIGNIFICANT
    assert claims.correlation_verdict(0.9, 0.001, 3, +1) == claims.TOO_FEW


def test_indicator_claims_are_one_family_under_holm_on_the_learned_columns():
    variants = [f"v{i}" for i in range(6)]
    indicators = pd.DataFrame({"translation_invariance": np.arange(6.0), "symmetry": [0, 2, 1, 3, 5, 4.0],
                               "monotonicity_local": [1, 0, 1, 0, 1, 0.0]}, index=variants)
    scores = pd.DataFrame({"a": np.arange(6.0), "b": np.arange(6.0)[::-1]}, index=variants)
    table = claims.correlations(indicators, scores)
    verdicts = claims.assess_indicator_claims(table, ["a", "b"])
    assert len(verdicts) == 6 and (verdicts["p (Holm)"] >= verdicts["p"]).all()
    assert verdicts["p (Holm)"].to_numpy() == pytest.approx(rule.holm(verdicts["p"].to_numpy()))
    # rho 1 over 6 variants: p 0, corrected or not; symmetry's rho +0.89 has p 0.019, alone enough
    # against the claim, but 4 x 0.019 = 0.075 under Holm (third smallest of six)
    assert verdicts.loc["ti-helps-a", "verdict"] == rule.SUPPORTED
    assert verdicts.loc["symmetry-hurts-a", "p (Holm)"] == pytest.approx(4 * verdicts.loc["symmetry-hurts-a", "p"])
    assert verdicts.loc["symmetry-hurts-a", "p"] < 0.05 and verdicts.loc["symmetry-hurts-a", "verdict"] == claims.NOT_SIGNIFICANT
    reason = "no model beats bag of words on b"
    gated = claims.assess_indicator_claims(table, ["a", "b"], untestable={"b": reason})
    assert gated.loc["ti-helps-b", "verdict"] == f"{rule.NOT_TESTABLE}: {reason}" and np.isnan(gated.loc["ti-helps-b", "p (Holm)"])
    testable = gated[gated["score"] == "a"]  # the family is the three claims on a
    assert testable["p (Holm)"].to_numpy() == pytest.approx(rule.holm(testable["p"].to_numpy()))


def test_comparison_table():
    per_seed = _per_seed({"x": [[10.0, 11.0, 12.0], [12.0, 12.0, 13.0]], "y": [[1.0, 2.0, 3.0], [2.0, 1.0, 2.0]]})
    stated = [Claim("k", "x beats y", (Comparison("x", "y", "classification"), Comparison("y", "x", "classification")))]
    table = comparisons.comparison_table(stated, per_seed)
    assert list(table["outcome"]) == ["as claimed", "against"]
    assert table.loc[0, "difference"] == pytest.approx(35 / 3 - 11 / 6) and table.loc[0, "low"] > 0
    assert (table["level"] == 1 - 0.05 / 2).all() and (table["over"] == 2).all()  # each interval's level, Bonferroni over 2
    assert "pooled over 2 variants," in table.loc[0, "variance"]


def test_untying_pairs_need_both_sides():
    names = ["ape-learned", "rpe-learned", "rpe-learned+untie-cls", "alibi+untie-cls"]
    assert claims.untying_pairs(names) == {"rpe-learned+untie-cls": "rpe-learned"}


def _nested(centre: float) -> list[list[float]]:
    """3 pretraining x 3 fine-tuning seeds around ``centre`` (pretrained-model means centre - 1, centre, centre + 1)."""
    return [[centre + p - 0.5, centre + p, centre + p + 0.5] for p in (-1, 0, 1)]


@pytest.mark.parametrize("untied, share, conclusion", [
    (79.0, 0.9, "closes the gap (no remaining gap detected)"),  # beats tied by 9; 1 behind APE, not decided
    (75.0, 0.5, "narrows the gap"),  # beats tied by 5; still 5 behind APE
    (71.0, 0.1, rule.UNDECIDED),
    (62.0, -0.8, "widens the gap"),
    (90.0, 2.0, "reverses the gap"),
])
def test_cls_gap_verdicts(untied, share, conclusion):
    per_seed = _per_seed({"ape-learned": _nested(80.0), "rpe-learned": _nested(70.0),
                          "rpe-learned+untie-cls": _nested(untied)})
    row = claims.cls_gap(per_seed, "ape-learned", {"rpe-learned+untie-cls": "rpe-learned"}, "classification").iloc[0]
    assert row["gap before"] == pytest.approx(10.0)
    assert row["share closed"] == pytest.approx(share)
    assert row["gain low"] < row["gain"] < row["gain high"]
    assert row["gain level"] == "97.5% interval (Bonferroni over 2 comparisons)"  # the pair is one family
    assert row["conclusion"] == conclusion


def test_cls_gap_on_a_column_no_model_learned_gives_no_verdict():
    per_seed = _per_seed({"ape-learned": _nested(80.0), "rpe-learned": _nested(70.0),
                          "rpe-learned+untie-cls": _nested(79.0)})
    why = {"classification": "no model beats bag of words on sst2"}
    row = claims.cls_gap(per_seed, "ape-learned", {"rpe-learned+untie-cls": "rpe-learned"}, "classification", why).iloc[0]
    expected = rule.not_testable([why["classification"]])
    assert row["untying helps"] == row["reference still ahead"] == row["conclusion"] == expected
    assert row["gain"] == pytest.approx(9.0) and row["gain low"] < 9.0  # the effect is still shown


def test_cls_gap_without_a_gap_or_a_spread():
    pairs = {"rpe-learned+untie-cls": "rpe-learned"}
    ahead = _per_seed({"ape-learned": [70.0, 71.0], "rpe-learned": [80.0, 81.0], "rpe-learned+untie-cls": [90.0, 91.0]})
    row = claims.cls_gap(ahead, "ape-learned", pairs, "classification").iloc[0]
    assert row["conclusion"].startswith("no gap") and math.isnan(row["share closed"])
    one_seed = _per_seed({"ape-learned": [80.0], "rpe-learned": [70.0], "rpe-learned+untie-cls": [79.0]})
    row = claims.cls_gap(one_seed, "ape-learned", pairs, "classification").iloc[0]
    assert row["conclusion"] == rule.VARIANCE_UNKNOWN and row["share closed"] == pytest.approx(0.9)
    assert row["gain level"] == "no interval"
