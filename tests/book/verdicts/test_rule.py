"""pe_book.verdicts.rule: Holm's correction and the quantifier rule."""
from __future__ import annotations

import numpy as np
import pytest

from pe_book.verdicts import rule
from pe_book.verdicts.rule import Claim


def test_holm_adjusts_step_down_and_keeps_nan_untested():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    assert rule.holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    adjusted = rule.holm(np.array([0.01, np.nan, 0.5]))
    assert adjusted[0] == pytest.approx(0.03) and np.isnan(adjusted[1]) and adjusted[2] == pytest.approx(1.0)
    assert rule.holm(np.array([[0.01, 0.02], [0.5, 0.01]])) == pytest.approx(np.array([[0.02, 0.02], [0.5, 0.02]]))


@pytest.mark.parametrize("outcome, quantifier, code", [
    ([1, 1, 1], "all", 1), ([1, 0, 1], "all", 0), ([1, -1, 1], "all", -1),
    ([1, 1, 0], "most", 1), ([1, 1, 0, 0], "most", 0), ([-1, -1, 0, 1], "most", -1), ([-1, 0, 0], "most", 0),
    ([0, 0, 1], "any", 1), ([-1, -1], "any", -1), ([-1, 0], "any", 0),
])
def test_quantifier_rules(outcome, quantifier, code):
    assert int(rule.claim_codes(np.array(outcome), quantifier)) == code


def test_unknown_quantifier_is_refused_naming_the_valid_ones():
    with pytest.raises(ValueError, match="all, most, any"):
        Claim("k", "t", (), "some")
