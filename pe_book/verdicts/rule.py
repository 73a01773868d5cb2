r"""The verdict rule: a claim as comparisons and a quantifier, Holm's correction, each comparison's
outcome and the claim's verdict from its outcomes.

Comparisons, multiplicity and verdicts
--------------------------------------
A claim is a set of ``K`` comparisons "``better`` scores higher than ``worse`` on ``column``" and a
quantifier. Each comparison reports its effect ``d`` (difference of variant means, percentage
points), a two-sided p-value, **Holm's adjusted p-value** within the claim's family of ``K``
comparisons, and a **Bonferroni interval** at level ``1 - alpha / K`` (simultaneous over the
claim). A comparison counts *as claimed* (+1) when its Holm-adjusted p is below ``alpha`` and
``d > 0``, *against* (-1) when below ``alpha`` with ``d < 0``, *not decided* (0) otherwise. The
Bonferroni interval is never narrower than what Holm's step-down uses, so an interval that
excludes 0 always goes with a decided comparison (rarely a decided one has an interval touching 0).

The verdict of a claim from its outcomes (``n`` comparisons):

* ``all`` ("X is best", "every Y beats X"): *supported* if all ``n`` are +1, *contradicted* if
  any is -1;
* ``most`` ("almost every", "relatively better"): *supported* if more than ``n/2`` are +1,
  *contradicted* if at least ``n/2`` are -1 (then at most half can beat the other side);
* ``any`` ("does not always help"): *supported* if at least one is +1, *contradicted* if all
  are -1;
* otherwise *not decidable*.

Every wrong verdict needs at least one wrong decided comparison (a decided sign opposite to the
truth, or a decision where the true difference is 0): "all ... supported" is wrong only if some
comparison does not truly hold, yet it was decided +1; "any ... contradicted" is wrong only if some
comparison truly holds, yet all were decided -1; "most" likewise in either direction. Holm keeps the
probability of any wrong decision in the family at most ``alpha``, so each quantifier's
false-verdict rate is at most ``alpha``. ``tests/book/verdicts/test_power.py`` measures it on simulated
runs (:func:`~pe_book.verdicts.power.simulated_verdicts`), and
:func:`~pe_book.verdicts.power.operating_characteristics` gives, per claim of a
run, its false-verdict rate and its power to find planted effects at that run's design and
estimated variances (the findings chapter shows them). Holm is conservative for "all ...
supported" and "any ... contradicted", which as intersection-union tests would need no
correction; one rule for every quantifier keeps each verdict readable off the comparison table.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_book.verdicts.mixed_model import ALPHA

QUANTIFIERS = ("all", "most", "any")
SUPPORTED, CONTRADICTED = "supported at this scale", "contradicted at this scale"
UNDECIDED = "not decidable at this scale"
NOT_TESTABLE = "not testable at this scale"
VARIANCE_UNKNOWN = "not decidable: pretraining variance unknown (no variant has two pretraining seeds)"
NOT_TESTED = "not tested (variants absent)"


@dataclass(frozen=True)
class Comparison:
    """One pairwise comparison: ``better`` is expected to score higher than ``worse`` on ``column``."""

    better: str
    worse: str
    column: str


@dataclass(frozen=True)
class Claim:
    """A claim of the paper as comparisons and a quantifier (``all``, ``most`` or ``any``)."""

    key: str
    text: str
    comparisons: tuple[Comparison, ...]
    quantifier: str = "all"

    def __post_init__(self):
        check_quantifier(self.quantifier)


def check_quantifier(quantifier: str) -> None:
    if quantifier not in QUANTIFIERS:
        raise ValueError(f"quantifier must be one of {', '.join(QUANTIFIERS)}, got {quantifier!r}")


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values along the last axis (a NaN p, an untestable comparison, counts in
    the family and is never rejected: it is adjusted to NaN)."""
    p = np.asarray(p, dtype=float)
    k = p.shape[-1]
    filled = np.where(np.isnan(p), 1.0, p)
    order = np.argsort(filled, axis=-1, kind="stable")
    ranked = np.take_along_axis(filled, order, -1) * (k - np.arange(k))
    adjusted_sorted = np.minimum(np.maximum.accumulate(ranked, axis=-1), 1.0)
    adjusted = np.empty_like(filled)
    np.put_along_axis(adjusted, order, adjusted_sorted, -1)
    return np.where(np.isnan(p), np.nan, adjusted)


def outcomes(difference: np.ndarray, p_adjusted: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """+1 (as claimed), -1 (against) where the adjusted p is below ``alpha``, else 0."""
    decided = np.nan_to_num(p_adjusted, nan=1.0) < alpha
    return np.where(decided, np.sign(difference), 0).astype(int)


def claim_codes(outcome: np.ndarray, quantifier: str) -> np.ndarray:
    """+1 supported, -1 contradicted, 0 not decided, from outcomes (last axis: comparisons) under
    the quantifier rule of the module docstring."""
    check_quantifier(quantifier)
    outcome = np.asarray(outcome)
    n = outcome.shape[-1]
    plus, minus = (outcome == 1).sum(-1), (outcome == -1).sum(-1)
    if quantifier == "all":
        supported, contradicted = plus == n, minus >= 1
    elif quantifier == "most":
        supported, contradicted = plus > n / 2, minus >= n / 2
    else:
        supported, contradicted = plus >= 1, minus == n
    return np.where(supported & (n > 0), 1, np.where(contradicted & (n > 0), -1, 0))


def not_testable(reasons: Iterable[str]) -> str:
    """The verdict on what no model has learned: "not testable at this scale: <reasons>"."""
    return f"{NOT_TESTABLE}: {'; '.join(dict.fromkeys(reasons))}"


def claim_verdict(claim: Claim, details: pd.DataFrame) -> str:
    """The verdict of a claim from :func:`~pe_book.verdicts.comparisons.compare_family`'s rows (its testable ones)."""
    if details.empty:
        return NOT_TESTED
    testable = details[details["gate"] == ""]
    if testable.empty:
        return not_testable(details["gate"])
    code = int(claim_codes(testable["outcome"].to_numpy(), claim.quantifier))
    if code:
        return SUPPORTED if code > 0 else CONTRADICTED
    if testable["variance"].eq("pretraining variance unknown").any():
        return VARIANCE_UNKNOWN
    return UNDECIDED
