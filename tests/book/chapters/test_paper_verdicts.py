"""pe_book.chapters.paper_verdicts: the verdicts of a run on the paper's claims, as the intro and the
findings chapter show them."""
from __future__ import annotations

import math

import pandas as pd

from pe_book.chapters import findings, intro, paper_verdicts


def test_the_narrow_verdicts_name_the_columns_they_could_not_test():
    assert paper_verdicts.verdict_text("contradicted", "span") == "contradicted (not testable on span)"
    assert paper_verdicts.verdict_text("not testable at this scale: no model beats bag of words", "classification") == (
        "not testable at this scale: no model beats bag of words")
    assert paper_verdicts.verdict_text("supported") == "supported"
    verdicts = pd.DataFrame({"claim": ["c"], "verdict": ["contradicted"], "not testable on": ["span"],
                             "effects": ["-1.0 [-2.0, +0.0]"], "n": [2]}, index=["claim-id"])
    narrow = paper_verdicts.narrow_verdicts(verdicts)
    assert list(narrow.columns) == list(paper_verdicts.NARROW_COLUMNS.values()) and list(narrow.index) == [0]
    assert narrow.iloc[0, 1] == "contradicted (not testable on span)"


def test_effects_give_the_smallest_and_largest_effect_of_each_claim_with_its_interval():
    details = pd.DataFrame({"claim id": ["a", "a", "a", "b", "c"], "difference": [1.0, -2.5, 0.5, 3.0, 0.2],
                            "low": [0.0, -4.0, -1.0, 1.0, math.nan], "high": [2.0, -1.0, 2.0, 5.0, math.nan],
                            "level": [1 - 0.05 / 3] * 3 + [0.95, 0.95], "over": [3, 3, 3, 1, 1]})
    assert paper_verdicts.effects_text(details).to_dict() == {  # each claim's intervals say their level
        "a": "-2.5 [-4.0, -1.0] to +1.0 [+0.0, +2.0]; 98.3% intervals (Bonferroni over 3 comparisons)",
        "b": "+3.0 [+1.0, +5.0]; 95% interval", "c": "+0.2 (no interval)"}


def test_the_intro_and_the_findings_show_the_same_verdicts(store):
    run = paper_verdicts.paper_verdicts(store)
    result = findings.compute(store, runs=20)
    pd.testing.assert_frame_equal(run.verdicts, result.verdicts)
    pd.testing.assert_frame_equal(run.testable, result.testable)
    assert run.span_tasks == ["squad"] and set(run.groups) == set(result.groups)
    opening = intro.compute(store)
    pd.testing.assert_frame_equal(opening.verdicts, paper_verdicts.narrow_verdicts(result.verdicts))
    assert opening.cited["scale_text"] == result.cited["scale_text"]
