r"""What the verdict rule can detect: the minimum detectable effect, the pretraining seeds a claim
would need, and the rule's false-verdict rate and power on simulated runs of a design.

*Not decidable at this scale* comes with the **minimum detectable effect** (MDE): the true
difference that a comparison would detect with 80% power at the Bonferroni level ``alpha / K``
(exact, from the non-central t), with this claim's seeds and variance estimate; the claim's MDE is
the largest over its comparisons. It is also projected with twice the fine-tuning seeds (only the
:math:`\sigma^2_{ft}/F` part shrinks) and twice the pretraining seeds (all of :math:`\tau^2/P`
halves, and the df grow), so a reader sees what more seeds would buy. Turned around, it gives
the **pretraining seeds needed**: the seeds per variant (each model fine-tuned as now) at which the
comparison would detect, with the same power, a true difference as large as the one observed
(an optimistic target: an undecided difference is as likely to be inflated as not), and for a
claim the fewest at which the quantifier's rule would decide it if each comparison were decided
in its observed sign from its own count on.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

from pe_book.verdicts.mixed_model import ALPHA, ColumnStats, Components, column_stats, components, difference_tests
from pe_book.verdicts.rule import Claim, Comparison, claim_codes, holm, outcomes

POWER = 0.8


def mde(se: float, df: float, level_alpha: float, power: float = POWER) -> float:
    """The smallest true difference that a two-sided t test at ``level_alpha`` with this standard
    error and df detects with probability ``power`` (exact, non-central t)."""
    if not (se > 0 and df > 0):  # also NaN
        return math.nan
    critical = stats.t.isf(level_alpha / 2, df)

    def shortfall(ncp):  # the far tail is negligible but scipy's nct.cdf can return NaN there
        return stats.nct.sf(critical, df, ncp) + np.nan_to_num(stats.nct.cdf(-critical, df, ncp)) - power

    return float(optimize.brentq(shortfall, 0.0, 10.0 + 3 * critical) * se)


def mde_projections(c: Components, pair: tuple[int, int], level_alpha: float,
                    power: float) -> tuple[float, float, float]:
    """MDE of the comparison of variants ``pair`` now, with twice the fine-tuning seeds (the
    fine-tuning parts of ``tau2`` halve, df unchanged) and with twice the pretraining seeds (each
    ``tau2_v / P_v`` halves; every variant then has ``2 P_v - 1`` df to pool)."""
    a, b = pair
    tau2, n_pre, pre, ft = c.tau2, c.n_pre, float(c.pretrain), c.ft_part
    variance = float(tau2[a] / n_pre[a] + tau2[b] / n_pre[b])
    now = mde(math.sqrt(variance), float(c.df_tau), level_alpha, power)
    more_ft = mde(math.sqrt(float((pre + ft[a] / 2) / n_pre[a] + (pre + ft[b] / 2) / n_pre[b])), float(c.df_tau),
                  level_alpha, power)
    more_pre = mde(math.sqrt(variance / 2), float(np.sum(2 * n_pre[n_pre > 0] - 1)), level_alpha, power)
    return now, more_ft, more_pre


#: The most pretraining seeds per variant :func:`seeds_needed` considers (beyond: NaN, "more").
MAX_SEEDS = 64


def seeds_needed(c: Components, pair: tuple[int, int], effect: float, level_alpha: float, power: float = POWER,
                 limit: int = MAX_SEEDS) -> float:
    """The fewest pretraining seeds ``P`` per variant (each model fine-tuned with as many seeds as
    now, so each ``tau2_v`` stays) at which the comparison of variants ``pair`` detects a true
    difference ``effect`` with probability ``power`` at ``level_alpha``: standard error
    ``sqrt((tau2_a + tau2_b) / P)``, df ``V (P - 1)`` over the ``V`` variants of the column. NaN
    when the variance is unknown or ``limit`` is not enough."""
    n_variants = int(np.sum(c.n_pre > 0))
    variance = float(c.tau2[pair[0]] + c.tau2[pair[1]])
    if not (variance > 0 and abs(effect) > 0 and n_variants):
        return math.nan
    for seeds in range(2, limit + 1):
        if mde(math.sqrt(variance / seeds), n_variants * (seeds - 1), level_alpha, power) <= abs(effect):
            return float(seeds)
    return math.nan


def claim_seeds_needed(needed: Sequence[float], difference: Sequence[float], quantifier: str) -> float:
    """The fewest pretraining seeds at which a claim would be decided (supported or contradicted
    by the rule of :func:`claim_codes`) if every comparison were decided in the sign of its observed
    ``difference`` once the seeds reach its :func:`seeds_needed`; NaN when no seed count up to
    :data:`MAX_SEEDS` decides it."""
    needed, sign = np.asarray(needed, dtype=float), np.sign(np.asarray(difference, dtype=float)).astype(int)
    for seeds in np.unique(needed[~np.isnan(needed)]):
        if claim_codes(np.where(needed <= seeds, sign, 0), quantifier):
            return float(seeds)
    return math.nan


@dataclass(frozen=True)
class Design:
    """A column as the simulations draw it: its ``variants`` with their pretraining seeds
    ``n_pre`` and fine-tuning seeds a model ``n_ft``, and true variance components: ``pretrain``
    (one for the column) and ``finetune`` (per variant)."""

    variants: list[str]
    n_pre: np.ndarray
    n_ft: np.ndarray
    pretrain: float
    finetune: np.ndarray

    @classmethod
    def of(cls, col: ColumnStats) -> Design:
        """The design and the estimated components of a column of this run."""
        c = col.components
        present = c.n_pre > 0
        return cls([v for v, keep in zip(col.variants, present) if keep], c.n_pre[present].astype(int),
                   np.maximum(np.rint(c.n_ft[present]), 1).astype(int), float(c.pretrain),
                   np.nan_to_num(c.within[present]))

    def draw(self, mean: np.ndarray, runs: int, rng: np.random.Generator) -> np.ndarray:
        """``runs`` score arrays ``[runs, V, P, F]`` (NaN where a variant has fewer seeds) with
        true variant means ``mean``: ``y = mu_v + a_vp + e_vpf``."""
        n_variants, p_max, f_max = len(self.variants), int(self.n_pre.max()), int(self.n_ft.max())
        y = (mean[None, :, None, None] + math.sqrt(self.pretrain) * rng.standard_normal((runs, n_variants, p_max, 1))
             + np.sqrt(self.finetune)[None, :, None, None] * rng.standard_normal((runs, n_variants, p_max, f_max)))
        absent = ((np.arange(p_max)[None, :, None] >= self.n_pre[:, None, None])
                  | (np.arange(f_max)[None, None, :] >= self.n_ft[:, None, None]))  # [V, P, F]
        return np.where(absent[None], np.nan, y)


def planted_means(comparisons: Sequence[Comparison], variants: Sequence[str], effect: float) -> np.ndarray:
    """True variant means at which every comparison holds with difference ``effect``: ``+effect/2``
    for the variants expected higher, ``-effect/2`` for those expected lower, 0 for the others
    (the two sets must be apart)."""
    higher, lower = {c.better for c in comparisons}, {c.worse for c in comparisons}
    if higher & lower:
        raise ValueError(f"a planted effect needs variants expected higher and lower apart; both: {sorted(higher & lower)}")
    return np.array([effect / 2 if v in higher else -effect / 2 if v in lower else 0.0 for v in variants])


def simulated_verdicts(claim: Claim, designs: Mapping[str, Design], effect: float = 0.0, runs: int = 1000,
                       rng: np.random.Generator | None = None, alpha: float = ALPHA) -> tuple[float, float]:
    """The rates of "supported" and "contradicted" when the claim's comparisons on the columns
    of ``designs`` (the others are left out, as untestable comparisons are) are tested by this
    module's rule on ``runs`` simulated runs in which each holds with true difference ``effect``
    (0: no true difference). NaN when no comparison is simulated or a pretraining variance is
    unknown."""
    rng = rng if rng is not None else np.random.default_rng(0)
    differences, p_values = [], []
    for column, design in designs.items():
        chosen = [c for c in claim.comparisons
                  if c.column == column and c.better in design.variants and c.worse in design.variants]
        if not chosen:
            continue
        if math.isnan(design.pretrain):
            return math.nan, math.nan
        y = design.draw(planted_means(chosen, design.variants, effect), runs, rng)
        tests = difference_tests(components(y, alpha), [design.variants.index(c.better) for c in chosen],
                                 [design.variants.index(c.worse) for c in chosen])
        differences.append(tests["difference"])
        p_values.append(tests["p"])
    if not differences:
        return math.nan, math.nan
    difference, p = np.concatenate(differences, -1), np.concatenate(p_values, -1)
    codes = claim_codes(outcomes(difference, holm(p), alpha), claim.quantifier)
    return float((codes == 1).mean()), float((codes == -1).mean())


def operating_characteristics(claims: Iterable[Claim], per_seed: pd.DataFrame,
                              untestable: Mapping[str, str] | None = None, effects: Sequence[float] = (2.0, 5.0),
                              runs: int = 1000, seed: int = 0, alpha: float = ALPHA) -> pd.DataFrame:
    """How often this rule gives a wrong verdict and how often it finds a true effect, per claim,
    on runs simulated with this run's design (variants, seeds) and estimated variance components
    on each testable column of the claim (:meth:`Design.of`): the rate of any verdict when no
    comparison holds ("false verdicts", every verdict then wrong), and for each planted effect
    (points, every comparison true by that much) the rates of "supported" (power) and of
    "contradicted" (wrong). Rates are over ``runs`` runs (seeded), conditional on the columns
    being testable."""
    untestable = untestable or {}
    rng = np.random.default_rng(seed)
    designs: dict[str, Design] = {}
    rows = {}
    for claim in claims:
        for column in dict.fromkeys(c.column for c in claim.comparisons):
            if column not in designs and column in per_seed.columns and column not in untestable:
                designs[column] = Design.of(column_stats(per_seed, column, alpha))
        own = {c.column: designs[c.column] for c in claim.comparisons if c.column in designs}
        row = {"claim": claim.text, "quantifier": claim.quantifier,
               "false verdicts (no true difference)": sum(simulated_verdicts(claim, own, 0.0, runs, rng, alpha))}
        for effect in effects:
            supported, contradicted = simulated_verdicts(claim, own, effect, runs, rng, alpha)
            row[f"power at {effect:+g} points"], row[f"contradicted at {effect:+g} points"] = supported, contradicted
        rows[claim.key] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("claim id")
