"""Chapter 12's prose and tables: a column that no model learned is named once, with its verdict."""
import pandas as pd

from pe_book.chapters import cls_untying
from pe_book.verdicts import rule
from pe_book.verdicts.groups import ORDER_SENSITIVE_CLASSIFICATION, SPAN


def _gaps(verdict: str, conclusion: str) -> pd.DataFrame:
    """Two untied variants' rows of ``claims.cls_gap`` with the same verdicts."""
    return pd.DataFrame({"tied": ["rpe-learned", "rpe-sin-learned"], "tied score": [70.0, 60.0],
                         "untied score": [72.0, 59.0], "gap before": [5.0, 15.0], "gap after": [3.0, 16.0],
                         "untying helps": [verdict] * 2, "reference still ahead": [verdict] * 2,
                         "conclusion": [conclusion] * 2}, index=["rpe-learned+untie-cls", "rpe-sin-learned+untie-cls"])


def test_a_column_no_model_learned_is_named_once_in_the_prose():
    untested = rule.not_testable(["no model beats bag of words on sst2"])
    gaps = {ORDER_SENSITIVE_CLASSIFICATION: _gaps(rule.UNDECIDED, rule.UNDECIDED),
            "order-free classification": _gaps(untested, untested),
            SPAN: _gaps(rule.not_testable(["no model beats neighbour match on cloze"]), "")}
    text = cls_untying._gap_text(gaps)
    assert text["cls_conclusions"] == (f"on order-sensitive classification, rpe-learned+untie-cls: {rule.UNDECIDED}, "
                                       f"rpe-sin-learned+untie-cls: {rule.UNDECIDED}; on order-free classification, "
                                       f"{untested}")
    assert text["cls_gap_before"].endswith("on order-free classification, +5.0 points for rpe-learned, "
                                           "+15.0 points for rpe-sin-learned")
    assert text["span_change"] == ("+2.0 points for rpe-learned+untie-cls, -1.0 points for rpe-sin-learned+untie-cls "
                                   "(not testable at this scale: no model beats neighbour match on cloze)")
    shown = cls_untying.verdicts_shown(gaps["order-free classification"])
    assert set(shown["conclusion"]) == {rule.NOT_TESTABLE} and list(shown["gap before"]) == [5.0, 15.0]
