r"""The gate's statistics: the best variant of a column (chosen on the validation split), whether it
beats a bar beyond its interval, and where it stands against each fixed baseline.

*Verdicts only where the models learned.* A comparison between position embeddings says
something only on a column that the models have learned beyond what needs no word order. A column
is *testable* (:func:`learned`, :mod:`pe_book.verdicts.testability`) when the best variant, chosen on the
validation split among the variants with at least :data:`GATE_SEEDS` pretraining seeds
(:func:`best_variant`: one with fewer would borrow the others' pretraining variance), beats
**every order-free** baseline of the column (best constant, bag of words, a random candidate
answer, the absent-word rule) beyond its ``1 - alpha`` interval on the tested split, and, on a
column whose tasks need word order, the ``none`` variant (a model that cannot see order, fine-tuned
like the others: on a span task it can beat every cheap rule) beyond the interval of their
difference. A rule that reads word order (neighbour match,
``pe_book.experiments.baselines.reads_order``) is a cheap position-using model, not an order-free
baseline: it stays beside the models as a reference, with their standing against it, and never
gates. Comparisons on other columns keep their effects but enter no decision: they leave the family
(Holm's ``K`` counts only testable comparisons) and a claim with none testable is "not testable at
this scale: no model beats <baseline> on <column>", never "contradicted". Verdicts that are given
read "supported at this scale" and "contradicted at this scale": they are about models of the
size, pretraining and tasks of the run, which the book states beside them.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import pandas as pd

from pe_book.verdicts.intervals import interval_halfwidth, standing
from pe_book.verdicts.mixed_model import ALPHA, ColumnStats, column_stats, difference_tests

#: The fewest pretraining seeds with which a variant can be the gate's best variant of a column
#: (:func:`best_variant`): with fewer it has no pretraining variance of its own, and its interval
#: would borrow the others'.
GATE_SEEDS = 2
#: The roles of a baseline beside the models: an order-free bar of the gate, or a rule that reads
#: word order, shown as a reference and never a bar.
ORDER_FREE, REFERENCE = "order-free", "reads word order (reference)"


def best_on(selection: pd.DataFrame, column: str, candidates: Sequence[str]) -> str | None:
    """The candidate with the highest variant mean (mean of its pretrained models' means) on
    ``column`` of ``selection`` (per-seed scores of the *validation* split: selecting on the
    split that is then tested would bias the test); None when no candidate has a score."""
    if column not in selection.columns:
        return None
    model_means = selection[column].groupby(level=["variant", "pretrain_seed"], sort=False).mean()
    means = model_means.groupby(level="variant", sort=False).mean().reindex(list(candidates)).dropna()
    return str(means.idxmax()) if len(means) else None


def pretraining_seeds(per_seed: pd.DataFrame, column: str) -> pd.Series:
    """The number of pretraining seeds with a score on ``column``, per variant (in order of appearance)."""
    index = per_seed[column].dropna().index
    return index.to_frame(index=False).groupby("variant", sort=False)["pretrain_seed"].nunique()


def gate_candidates(per_seed: pd.DataFrame, column: str) -> list[str]:
    """The variants that can be the gate's best variant of ``column``: those with at least
    :data:`GATE_SEEDS` pretraining seeds scored on it (their own pretraining variance is measured);
    every variant with a score where none has as many (then the variance is unknown, and
    :func:`learned` decides by the mean, nothing borrowed)."""
    seeds = pretraining_seeds(per_seed, column)
    return [v for v, n in seeds.items() if n >= GATE_SEEDS] or list(seeds.index)


def best_variant(per_seed: pd.DataFrame, column: str, selection: pd.DataFrame | None = None) -> str | None:
    """The gate's best variant of ``column``: the one of :func:`gate_candidates` with the highest
    mean on ``selection`` (the validation split's per-seed scores, :func:`best_on`), or on
    ``per_seed`` itself where ``selection`` has none of them; None when no variant has a score."""
    candidates = gate_candidates(per_seed, column)
    return (best_on(selection, column, candidates) if selection is not None else None) or best_on(per_seed, column,
                                                                                                  candidates)


def _interval(col: ColumnStats, variant: str, level_alpha: float) -> tuple[float, float]:
    """A variant's mean and the half-width of its two-sided ``1 - level_alpha`` t interval
    (standard error ``sqrt(tau2_v / P_v)``; NaN where the variance is unknown)."""
    c, i = col.components, col.index(variant)
    half = interval_halfwidth(math.sqrt(float(c.tau2[i]) / c.n_pre[i]), c.df_tau, level_alpha)
    return float(c.mean[i]), float(half)


def learned(per_seed: pd.DataFrame, column: str, baseline: tuple[str, float], selection: pd.DataFrame | None = None,
            alpha: float = ALPHA, control: str | None = None) -> dict:
    """Have the models learned ``column`` beyond ``baseline`` (its bar: the best of its order-free
    baselines, name and score; :mod:`pe_book.verdicts.testability`)? The best variant is chosen on
    ``selection`` (per-seed scores of the validation split; without it, on ``per_seed`` itself,
    which favours the models); the column is
    *testable* when the lower end of that variant's two-sided ``1 - alpha`` interval on
    ``per_seed`` lies above the baseline's score (where the variance is unknown: when its mean
    does). Otherwise the reason reads "no model beats <baseline> on <column>".

    The best variant is chosen only among the variants with at least :data:`GATE_SEEDS`
    pretraining seeds (:func:`best_variant`). ``high`` is the upper end of its interval and
    ``level`` the interval's (``1 - alpha``).

    ``control``: a variant that cannot read word order (``none``), itself an order-free bar of an
    order-sensitive column: the best variant must also beat it beyond the ``1 - alpha`` interval
    of their difference (``gap``, ``gap low``; given also where the baseline is not beaten, the
    reason naming the baseline first); when the control is the best variant, no model beats it."""
    name, score = baseline
    variants = list(dict.fromkeys(per_seed[column].dropna().index.get_level_values("variant")))
    best = best_variant(per_seed, column, selection)
    control = control if control in variants else None
    row = {"column": column, "best variant": best, "mean": math.nan, "low": math.nan, "high": math.nan,
           "level": 1 - alpha, "baseline": name, "baseline score": float(score), "control": control,
           "gap": math.nan, "gap low": math.nan, "testable": False, "reason": f"no model beats {name} on {column}"}
    if best is None:
        return {**row, "reason": f"no model has a score on {column}"}
    col = column_stats(per_seed, column, alpha)
    mean, half = _interval(col, best, alpha)
    beats = mean > score if math.isnan(half) else mean - half > score
    row = {**row, "mean": mean, "low": mean - half, "high": mean + half, "testable": bool(beats),
           "reason": "" if beats else row["reason"]}
    if control is None:
        return row
    if best == control:
        return {**row, "testable": False,
                "reason": row["reason"] or f"no model beats {control} (no word order) on {column}"}
    test = difference_tests(col.components, [col.index(best)], [col.index(control)])
    gap, gap_half = float(test["difference"][0]), float(interval_halfwidth(test["se"][0], test["df"][0], alpha))
    ahead = gap > 0 if math.isnan(gap_half) else gap - gap_half > 0
    behind = "" if ahead else f"no model beats {control} (no word order) on {column} beyond its interval"
    return {**row, "gap": gap, "gap low": gap - gap_half, "testable": bool(beats and ahead),
            "reason": row["reason"] or behind}


def against_baselines(per_seed: pd.DataFrame, selection: pd.DataFrame, baselines: Mapping[str, Mapping[str, float]],
                      alpha: float = ALPHA, ranges: Mapping[str, tuple[float, float]] | None = None,
                      references: Collection[str] = ()) -> pd.DataFrame:
    """The best variant of each column against fixed baselines, one row per (column, baseline).

    ``baselines``: baseline name -> column -> score (absent or NaN: that baseline does not score
    the column); each a distinct baseline (a summary such as "the best of them" repeats one and is
    no comparison of its own). The best variant of a column is the gate's (:func:`best_variant`:
    chosen on ``selection``, the per-seed scores of the validation split, among the variants with
    at least :data:`GATE_SEEDS` pretraining seeds) and its mean on ``per_seed`` gets a t interval
    from its ``tau2_v`` (standard error ``sqrt(tau2_v / P_v)``), Bonferroni over the ``K`` distinct
    baselines of the column (``level`` ``1 - alpha / K``, ``over`` ``K``). A baseline's score is one
    deterministic fit on the same examples, taken as exact. Outcome (:func:`~pe_book.verdicts.intervals.standing`):
    ``"above"`` when the interval lies above the baseline, ``"below"`` when it lies below,
    ``"within the interval"`` when it contains it, ``"variance unknown"`` when no variant has two
    pretraining seeds. ``role``: ``"reads word order (reference)"`` for the baselines named in
    ``references`` (rules that read word order: shown, never a bar of the gate), else
    ``"order-free"``. ``ranges`` (column -> the lowest and highest score it can take,
    :func:`pe_book.verdicts.groups.score_ranges`) bounds each interval: a t interval intersected with the
    values the mean can take covers it as often (no score above 100), and no outcome changes, since
    every baseline's score lies in that range too."""
    rows = []
    for column in per_seed.columns:
        scored = {name: float(scores[column]) for name, scores in baselines.items()
                  if not math.isnan(float(scores.get(column, math.nan)))}
        best = best_variant(per_seed, column, selection)
        if not scored or best is None:
            continue
        col = column_stats(per_seed, column, alpha)
        if best not in col.variants:
            continue
        mean, half = _interval(col, best, alpha / len(scored))
        lowest, highest = (ranges or {}).get(column, (-math.inf, math.inf))
        low, high = max(mean - half, lowest), min(mean + half, highest)  # NaN when the variance is unknown
        for name, score in scored.items():
            rows.append({"column": column, "best variant": best, "mean": mean, "low": low,
                         "high": high, "level": 1 - alpha / len(scored), "over": len(scored), "baseline": name,
                         "role": REFERENCE if name in references else ORDER_FREE, "baseline score": score,
                         "difference": mean - score, "outcome": standing(low, high, score)})
    return pd.DataFrame(rows, columns=["column", "best variant", "mean", "low", "high", "level", "over", "baseline",
                                       "role", "baseline score", "difference", "outcome"])
