r"""Intervals of the verdicts: the half-width of a t interval, how an interval says its level, and
where an interval stands against a fixed score.

*Every interval says its level* where it is shown (:func:`interval_label`): "95% interval" at
``1 - alpha``, "98.8% interval (Bonferroni over 4)" for one of 4 simultaneous intervals; the tables
carry the ``level`` they were computed at and the number of comparisons it is corrected ``over``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

#: Where the best variant's interval stands against a fixed score (:func:`standing`).
ABOVE, BELOW, WITHIN, UNKNOWN = "above", "below", "within the interval", "variance unknown"


def interval_halfwidth(se, df, level_alpha) -> np.ndarray:
    """Half-width of a two-sided ``1 - level_alpha`` t interval (NaN where df is 0)."""
    df = np.asarray(df, dtype=float)
    return np.where(df > 0, stats.t.isf(np.asarray(level_alpha) / 2, np.maximum(df, 1)) * se, np.nan)


def level_percent(level: float) -> str:
    """A confidence level in percent as the book shows it: ``"95%"``, ``"98.8%"`` (one decimal
    unless whole, more where one would round it up to 100%)."""
    percent = 100 * float(level)
    digits = 0 if abs(percent - round(percent)) < 1e-9 else 1
    while digits < 6 and f"{percent:.{digits}f}" == f"{100:.{digits}f}" and percent < 100:
        digits += 1
    return f"{percent:.{digits}f}%"


def interval_label(level: float, over: int = 1, plural: bool = False, what: str = "") -> str:
    """How an interval says its level where it is shown: ``"95% interval"`` for a two-sided
    interval at ``level``; ``"98.8% interval (Bonferroni over 4)"`` for one of ``over`` simultaneous
    intervals (each at ``1 - alpha / over``), ``what`` naming them (``"... over 4 baselines)"``)."""
    text = f"{level_percent(level)} interval{'s' if plural else ''}"
    return text + (f" (Bonferroni over {int(over)}{' ' + what if what else ''})" if over > 1 else "")


def standing(low: float, high: float, score: float) -> str:
    """Where an interval ``[low, high]`` stands against a fixed ``score``: :data:`ABOVE`,
    :data:`BELOW`, :data:`WITHIN` (the interval contains it), :data:`UNKNOWN` without an interval."""
    if math.isnan(low) or math.isnan(high):
        return UNKNOWN
    return ABOVE if low > score else BELOW if high < score else WITHIN
