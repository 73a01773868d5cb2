r"""The verdict rule: tests of the paper's claims on scores from nested seeds (numpy, scipy, pandas).

Design
------
Each variant is pretrained with ``P`` pretraining seeds (``profile.pretrain_seeds_for``) and every
pretrained model is fine-tuned with ``F`` fine-tuning seeds. A score of variant ``v`` on a column (a
task or a group average) is modelled as nested random effects

.. math::  y_{vpf} = \mu_v + a_{vp} + e_{vpf}, \qquad a \sim N(0, \sigma^2_{pre}),\; e \sim N(0, \sigma^2_{ft}),

and the quantity compared is the variant mean :math:`\mu_v`, estimated by the mean of its
pretrained models' means :math:`\bar y_v` (each pretraining seed weighs the same). Its variance is

.. math::  \operatorname{Var}(\bar y_v) = \sigma^2_{pre}/P_v + \sigma^2_{ft}/(P_v F)
           = \tau^2 / P_v, \qquad \tau^2 = \sigma^2_{pre} + \sigma^2_{ft}/F,

where :math:`\tau^2` is the variance of one pretrained model's mean score. So the **pretrained model
is the experimental unit**; fine-tuning seeds are sub-samples of it (treating the ``P x F`` runs as
independent would be pseudo-replication and understate the variance whenever pretraining varies).

*Estimating* :math:`\tau^2`. The pretraining component is assumed equal across the variants of
a column (a variant with one pretraining seed has no measure of its own, so it borrows the pooled
one); the fine-tuning component is too, unless Bartlett's test (:func:`bartlett_p`, on each
variant's within-model variance) rejects equality at ``alpha``: then each variant keeps its own
:math:`\sigma^2_{ft,v}` (fine-tuning variances of one column differed up to 52-fold between
variants in the first cpu run). With the pooled between-pretraining-seed mean square :math:`B`
of the variants with at least two pretraining seeds (``df_tau = sum(P_v - 1)``) and the
fine-tuning part :math:`\sigma^2_{ft,v}/F_v` averaged over the same variants with weights
:math:`P_v - 1`,

.. math::  \hat\sigma^2_{pre} = \max\bigl(0,\; B - \overline{\sigma^2_{ft}/F}\bigr), \qquad
           \hat\tau^2_v = \hat\sigma^2_{pre} + \hat\sigma^2_{ft,v}/F_v,

so :math:`\hat\tau^2_v` is **never below the floor its own model implies**, the fine-tuning part
alone (pooled over three variants with 6 df, :math:`B` alone came out below it: 1.13 against
1.80 on the first cpu run's classification average, which made its smallest detectable effects
optimistic, 6.86 instead of 8.65 points). In the balanced design with equal fine-tuning variances
and :math:`B` above the floor, :math:`\hat\tau^2_v = B`. A comparison's standard error is
:math:`\sqrt{\hat\tau^2_a/P_a + \hat\tau^2_b/P_b}` with ``df_tau`` degrees of freedom (the
fine-tuning part is estimated with many more df, so this is conservative where the floor or
Bartlett's test changes it). The output names the variants :math:`B` was pooled from and says
when the floor or own fine-tuning variances were used. Where no variant of a column has two
pretraining seeds, :math:`\tau^2` is unknown: the fine-tuning spread alone would pretend
:math:`\sigma^2_{pre} = 0`, so such comparisons get no interval and the verdict says
"pretraining variance unknown".

*Why a t interval and not a bootstrap.* With 3 pretraining seeds per variant a hierarchical
bootstrap resamples 3 clusters: it has 10 distinct resamples of the top level, its percentile
intervals are far too narrow at this size, and its coverage cannot be trusted. In the balanced
design the t statistic :math:`(\bar y_a - \bar y_b) / \sqrt{\hat\tau^2 (1/P_a + 1/P_b)}` is exactly
t-distributed with the pooled df under the model (the variant means are independent of the mean
square), so no Satterthwaite approximation is needed: Satterthwaite's df would only arise when
combining the between and within mean squares, which the balanced design does not require. With
unequal fine-tuning seeds per model the test is approximate (the pretrained-model means then have
slightly unequal variances).

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
false-verdict rate is at most ``alpha``. ``tests/book/test_stats.py`` measures it on simulated
runs (:func:`simulated_verdicts`), and :func:`operating_characteristics` gives, per claim of a
run, its false-verdict rate and its power to find planted effects at that run's design and
estimated variances (the findings chapter shows them). Holm is conservative for "all ...
supported" and "any ... contradicted", which as intersection-union tests would need no
correction; one rule for every quantifier keeps each verdict readable off the comparison table.

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

*Verdicts only where the models learned.* A comparison between position embeddings says
something only on a column that the models have learned beyond what needs no word order. A column
is *testable* (:func:`learned`, :mod:`pe_book.testability`) when the best variant, chosen on the
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

*Every interval says its level* where it is shown (:func:`interval_label`): "95% interval" at
``1 - alpha``, "98.8% interval (Bonferroni over 4)" for one of 4 simultaneous intervals; the tables
carry the ``level`` they were computed at and the number of comparisons it is corrected ``over``.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

ALPHA = 0.05
POWER = 0.8
QUANTIFIERS = ("all", "most", "any")
SUPPORTED, CONTRADICTED = "supported at this scale", "contradicted at this scale"
UNDECIDED = "not decidable at this scale"
NOT_TESTABLE = "not testable at this scale"
VARIANCE_UNKNOWN = "not decidable: pretraining variance unknown (no variant has two pretraining seeds)"
NOT_TESTED = "not tested (variants absent)"
#: The fewest pretraining seeds with which a variant can be the gate's best variant of a column
#: (:func:`best_variant`): with fewer it has no pretraining variance of its own, and its interval
#: would borrow the others'.
GATE_SEEDS = 2
#: Where the best variant's interval stands against a fixed score (:func:`standing`).
ABOVE, BELOW, WITHIN, UNKNOWN = "above", "below", "within the interval", "variance unknown"
#: The roles of a baseline beside the models: an order-free bar of the gate, or a rule that reads
#: word order, shown as a reference and never a bar.
ORDER_FREE, REFERENCE = "order-free", "reads word order (reference)"
#: Index levels of per-seed score tables.
LEVELS = ("variant", "pretrain_seed", "seed")


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


# ----------------------------------------------------------------------------- arrays (vectorised)


@dataclass(frozen=True)
class Components:
    """Variance components of scores ``y[..., variant, pretrain, finetune]`` (NaN: missing).

    Per variant (``[..., V]``): ``mean``, ``n_pre`` (pretraining seeds), ``n_ft`` (the harmonic
    mean of the fine-tuning seeds of its pretrained models), ``own_within`` (its own fine-tuning
    variance, NaN with no within-model df) and ``df_own``. Per column (``[...]``): ``between`` the
    pooled between-pretraining-seed mean square of the pretrained models' means (NaN when
    ``df_tau == 0``), ``pooled_within`` the pooled fine-tuning variance with ``df_within``, and
    ``equal_ft_p`` Bartlett's p-value for equal fine-tuning variances across the variants."""

    mean: np.ndarray
    n_pre: np.ndarray
    n_ft: np.ndarray
    own_within: np.ndarray
    df_own: np.ndarray
    between: np.ndarray
    df_tau: np.ndarray
    pooled_within: np.ndarray
    df_within: np.ndarray
    equal_ft_p: np.ndarray
    alpha: float = ALPHA

    @property
    def unequal_ft(self) -> np.ndarray:
        """Whether Bartlett's test rejects equal fine-tuning variances at ``alpha`` (``[...]``)."""
        return np.nan_to_num(self.equal_ft_p, nan=1.0) < self.alpha

    @property
    def within(self) -> np.ndarray:
        """The fine-tuning variance each variant is given (``[..., V]``): its own where the
        variances differ (and it has one), the pooled one otherwise."""
        pooled = np.broadcast_to(self.pooled_within[..., None], self.own_within.shape)
        use_own = self.unequal_ft[..., None] & ~np.isnan(self.own_within)
        return np.where(use_own, self.own_within, pooled)

    @property
    def ft_part(self) -> np.ndarray:
        """``sigma2_ft,v / F_v``: the fine-tuning part of a pretrained model's mean (``[..., V]``;
        0 where no model has two fine-tuning seeds: then ``between`` alone estimates ``tau2``)."""
        return np.nan_to_num(_ratio(self.within, self.n_ft))

    @property
    def pretrain(self) -> np.ndarray:
        """``sigma2_pre = max(0, between - ft_part)``, ``ft_part`` averaged over the variants the
        between mean square is pooled from with its weights ``P_v - 1`` (NaN where unknown)."""
        weight = np.maximum(self.n_pre - 1, 0)
        ft = _ratio(np.where(weight > 0, weight * self.ft_part, 0.0).sum(-1), self.df_tau)
        return np.maximum(self.between - ft, 0.0)

    @property
    def tau2(self) -> np.ndarray:
        """The variance of one pretrained model's mean score, per variant (``[..., V]``):
        ``sigma2_pre + sigma2_ft,v / F_v``, never below its fine-tuning part."""
        return self.pretrain[..., None] + self.ft_part


def _ratio(numerator, denominator):
    numerator, denominator = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    return np.divide(numerator, denominator, out=np.full(np.broadcast(numerator, denominator).shape, np.nan),
                     where=denominator > 0)


def bartlett_p(variance: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Bartlett's test of equal variances from sample variances and their df (last axis: the
    groups; groups without df are left out):

    .. math::  T = \\frac{N \\ln s^2_p - \\sum_i d_i \\ln s^2_i}{1 + (\\sum_i 1/d_i - 1/N) / (3(k-1))},
               \\qquad N = \\sum_i d_i,\\; p = P(\\chi^2_{k-1} > T).

    NaN with fewer than two groups or all variances 0; 0 when some but not all variances are 0."""
    variance, df = np.asarray(variance, dtype=float), np.asarray(df, dtype=float)
    used = (df > 0) & ~np.isnan(variance)
    k = used.sum(-1)
    d = np.where(used, df, 0.0)
    total = d.sum(-1)
    pooled = _ratio((d * np.nan_to_num(variance)).sum(-1), total)
    with np.errstate(divide="ignore", invalid="ignore"):
        own = np.where(used, d * np.log(np.where(used, variance, 1.0)), 0.0).sum(-1)
        correction = 1 + (np.where(used, 1 / np.where(used, df, 1.0), 0.0).sum(-1) - 1 / total) / (3 * (k - 1))
        statistic = (total * np.log(pooled) - own) / correction
        p = stats.chi2.sf(statistic, np.maximum(k - 1, 1))
    return np.where((k >= 2) & (pooled > 0), np.nan_to_num(p, nan=0.0), np.nan)


def components(scores: np.ndarray, alpha: float = ALPHA) -> Components:
    """:class:`Components` of ``scores[..., V, P, F]`` (the last three axes: variant, pretraining
    seed, fine-tuning seed; NaN pads variants with fewer seeds); ``alpha``: the level of
    Bartlett's test that decides whether each variant gets its own fine-tuning variance."""
    y = np.asarray(scores, dtype=float)
    present = ~np.isnan(y)
    n_runs = present.sum(-1)  # [..., V, P]
    model_mean = _ratio(np.where(present, y, 0.0).sum(-1), n_runs)
    has_model = n_runs > 0
    n_pre = has_model.sum(-1)  # [..., V]
    mean = _ratio(np.where(has_model, model_mean, 0.0).sum(-1), n_pre)
    between = np.where(has_model, (model_mean - mean[..., None]) ** 2, 0.0).sum((-1, -2))
    df_tau = np.maximum(n_pre - 1, 0).sum(-1)
    within_ss = np.where(present, (y - model_mean[..., None]) ** 2, 0.0).sum((-1, -2))  # [..., V]
    df_own = np.maximum(n_runs - 1, 0).sum(-1)  # [..., V]
    own_within = _ratio(within_ss, df_own)
    n_ft = _ratio(n_pre, np.where(has_model, 1.0 / np.maximum(n_runs, 1), 0.0).sum(-1))  # [..., V]
    return Components(mean=mean, n_pre=n_pre, n_ft=n_ft, own_within=own_within, df_own=df_own,
                      between=_ratio(between, df_tau), df_tau=df_tau,
                      pooled_within=_ratio(within_ss.sum(-1), df_own.sum(-1)), df_within=df_own.sum(-1),
                      equal_ft_p=bartlett_p(own_within, df_own), alpha=alpha)


def difference_tests(c: Components, better: Sequence[int], worse: Sequence[int]) -> dict[str, np.ndarray]:
    """Effect ``d = mean[better] - mean[worse]``, its standard error
    ``sqrt(tau2_b / P_b + tau2_w / P_w)``, df (``df_tau``) and two-sided p for the variant index
    pairs (last axis: the comparisons)."""
    better, worse = np.asarray(better), np.asarray(worse)
    d = c.mean[..., better] - c.mean[..., worse]
    tau2 = c.tau2
    se = np.sqrt(tau2[..., better] / c.n_pre[..., better] + tau2[..., worse] / c.n_pre[..., worse])
    df = np.broadcast_to(c.df_tau[..., None], d.shape).astype(float)
    t = _ratio(d, se)
    p = np.where(df > 0, 2 * stats.t.sf(np.abs(t), np.maximum(df, 1)), np.nan)
    return {"difference": d, "se": se, "df": df, "t": t, "p": p}


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


def mde(se: float, df: float, level_alpha: float, power: float = POWER) -> float:
    """The smallest true difference that a two-sided t test at ``level_alpha`` with this standard
    error and df detects with probability ``power`` (exact, non-central t)."""
    if not (se > 0 and df > 0):  # also NaN
        return math.nan
    critical = stats.t.isf(level_alpha / 2, df)

    def shortfall(ncp):  # the far tail is negligible but scipy's nct.cdf can return NaN there
        return stats.nct.sf(critical, df, ncp) + np.nan_to_num(stats.nct.cdf(-critical, df, ncp)) - power

    return float(optimize.brentq(shortfall, 0.0, 10.0 + 3 * critical) * se)


# ----------------------------------------------------------------------------- data frames


def score_array(per_seed: pd.DataFrame, column: str) -> tuple[np.ndarray, list[str]]:
    """Scores of one column of a per-seed table (index :data:`LEVELS`) as ``y[V, P, F]`` (NaN
    padded) and the variants in order of appearance."""
    missing = [level for level in LEVELS if level not in per_seed.index.names]
    if missing:
        raise ValueError(f"per-seed scores need the index levels {', '.join(LEVELS)}; missing {', '.join(missing)}")
    series = per_seed[column].dropna()
    variants = list(dict.fromkeys(series.index.get_level_values("variant")))
    if series.empty:
        return np.full((0, 1, 1), np.nan), variants
    table = series.unstack("seed")  # rows (variant, pretrain_seed), columns fine-tuning seeds
    slot = table.groupby(level="variant", sort=False).cumcount().to_numpy()
    row = pd.Index(variants).get_indexer(table.index.get_level_values("variant"))
    y = np.full((len(variants), slot.max() + 1, table.shape[1]), np.nan)
    y[row, slot] = table.to_numpy(dtype=float)
    return y, variants


@dataclass(frozen=True)
class ColumnStats:
    """The components of one column of a per-seed table, per variant name."""

    components: Components
    variants: list[str]

    def index(self, variant: str) -> int:
        return self.variants.index(variant)

    @property
    def pooled_from(self) -> list[str]:
        return [v for v, n in zip(self.variants, self.components.n_pre) if n >= 2]


def column_stats(per_seed: pd.DataFrame, column: str, alpha: float = ALPHA) -> ColumnStats:
    """Variance components of ``column`` of a per-seed table (Bartlett's test at ``alpha``)."""
    y, variants = score_array(per_seed, column)
    return ColumnStats(components(y, alpha), variants)


def _interval(col: ColumnStats, variant: str, level_alpha: float) -> tuple[float, float]:
    """A variant's mean and the half-width of its two-sided ``1 - level_alpha`` t interval
    (standard error ``sqrt(tau2_v / P_v)``; NaN where the variance is unknown)."""
    c, i = col.components, col.index(variant)
    half = interval_halfwidth(math.sqrt(float(c.tau2[i]) / c.n_pre[i]), c.df_tau, level_alpha)
    return float(c.mean[i]), float(half)


def learned(per_seed: pd.DataFrame, column: str, baseline: tuple[str, float], selection: pd.DataFrame | None = None,
            alpha: float = ALPHA, control: str | None = None) -> dict:
    """Have the models learned ``column`` beyond ``baseline`` (its bar: the best of its order-free
    baselines, name and score; :mod:`pe_book.testability`)? The best variant is chosen on ``selection`` (per-seed scores of the validation
    split; without it, on ``per_seed`` itself, which favours the models); the column is
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


def variance_table(per_seed: pd.DataFrame, columns: Sequence[str], alpha: float = ALPHA) -> pd.DataFrame:
    """Per column: the between-pretraining-seed mean square with its df and the variants it was
    pooled from, its floor (the pooled fine-tuning variance over the fine-tuning seeds a model has),
    ``tau2`` (the larger of the two, for a variant with the pooled fine-tuning variance), the
    fine-tuning and pretraining components, the standard deviation of one run
    (``sqrt(pretraining + fine-tuning)``), Bartlett's p for equal fine-tuning variances across
    variants and the range of the variants' own fine-tuning variances."""
    rows = {}
    for column in columns:
        col = column_stats(per_seed, column, alpha)
        c = col.components
        present = c.n_pre > 0
        n_ft = float(c.n_pre[present].sum() / (c.n_pre[present] / c.n_ft[present]).sum()) if present.any() else math.nan
        floor = float(c.pooled_within) / n_ft
        own = c.own_within[present & ~np.isnan(c.own_within)]
        rows[column] = {"between": float(c.between), "df": int(c.df_tau), "floor": floor,
                        "tau2": float(c.pretrain) + (floor if not math.isnan(floor) else 0.0),
                        "fine-tuning": float(c.pooled_within), "pretraining": float(c.pretrain),
                        "sd of one run": math.sqrt(float(c.pretrain) + float(c.pooled_within)),
                        "equal fine-tuning (Bartlett p)": float(c.equal_ft_p),
                        "fine-tuning per variant": f"{own.min():.2f} to {own.max():.2f}" if len(own) else "n/a",
                        "pooled from": pooled_text(col.pooled_from)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("column")


def pooled_text(variants: Sequence[str], named: int = 3) -> str:
    """The variants a pretraining variance is pooled from: named when at most ``named``, else counted
    ("11 variants": the published run pools every variant with two or more pretraining seeds)."""
    if not variants:
        return "none (pretraining variance unknown)"
    return ", ".join(variants) if len(variants) <= named else f"{len(variants)} variants"


def _variance_note(column: ColumnStats, better: str, worse: str) -> str:
    c = column.components
    if not c.df_tau > 0:
        return "pretraining variance unknown"
    pooled = len(column.pooled_from)
    note = f"pooled over {pooled} variant{'' if pooled == 1 else 's'}, df {int(c.df_tau)}"
    if float(c.pretrain) == 0.0:
        note += "; tau2 at its floor (fine-tuning part)"
    if bool(c.unequal_ft):
        note += f"; own fine-tuning variances (Bartlett p {float(c.equal_ft_p):.2g})"
    borrowed = [v for v in (better, worse) if c.n_pre[column.index(v)] < 2]
    return note + (f"; one pretraining seed (borrowed): {', '.join(borrowed)}" if borrowed else "")


def compare_family(comparisons: Sequence[Comparison], per_seed: pd.DataFrame,
                   untestable: Mapping[str, str] | None = None, alpha: float = ALPHA,
                   power: float = POWER) -> pd.DataFrame:
    """Test a family of comparisons (a claim's): one row per comparison whose variants and column
    are present, with the effect, its Bonferroni interval, p, Holm's p, the outcome, the MDE (80%
    power at the Bonferroni level) and its projections with 2x fine-tuning / pretraining seeds,
    and the intervals' ``level`` (``1 - alpha / K``) with the ``K`` it is corrected ``over``.

    ``untestable``: column -> why it is not testable (:func:`learned`). A comparison on such a
    column keeps its effect and interval but enters no decision: it is left out of the family
    (Holm's ``K`` and the Bonferroni level count only the testable comparisons) and its
    ``gate`` says why."""
    untestable = untestable or {}
    columns: dict[str, ColumnStats] = {}
    rows, pairs = [], []
    for comp in comparisons:
        if comp.column not in per_seed.columns:
            continue
        if comp.column not in columns:
            columns[comp.column] = column_stats(per_seed, comp.column, alpha)
        col = columns[comp.column]
        if comp.better not in col.variants or comp.worse not in col.variants:
            continue
        pair = (col.index(comp.better), col.index(comp.worse))
        test = {k: float(v[0]) for k, v in difference_tests(col.components, [pair[0]], [pair[1]]).items()}
        rows.append({"comparison": comp, "better": comp.better, "worse": comp.worse, "column": comp.column,
                     **test, "gate": untestable.get(comp.column, ""),
                     "variance": _variance_note(col, comp.better, comp.worse)})
        pairs.append((col.components, pair))
    table = pd.DataFrame(rows, columns=["comparison", "better", "worse", "column", "difference", "se", "df", "t", "p",
                                        "gate", "variance"])
    if not len(table):
        return _finish(table)
    testable = (table["gate"] == "").to_numpy()
    k = max(int(testable.sum()), 1)
    adjusted = np.full(len(table), np.nan)
    adjusted[testable] = holm(table["p"].to_numpy(dtype=float)[testable])
    table["p (Holm)"] = adjusted
    half = interval_halfwidth(table["se"].to_numpy(dtype=float), table["df"].to_numpy(dtype=float), alpha / k)
    table["low"], table["high"] = table["difference"] - half, table["difference"] + half
    table["level"], table["over"] = 1 - alpha / k, k  # every interval of the family: Bonferroni over K
    table["outcome"] = outcomes(table["difference"].to_numpy(dtype=float), adjusted, alpha)
    projections = [_mde_row(c, pair, alpha / k, power) if ok else (math.nan,) * 3
                   for (c, pair), ok in zip(pairs, testable)]
    table["MDE"], table["MDE 2x fine-tuning seeds"], table["MDE 2x pretraining seeds"] = map(list, zip(*projections))
    table["seeds needed"] = [seeds_needed(c, pair, d, alpha / k, power) if ok else math.nan
                             for (c, pair), d, ok in zip(pairs, table["difference"], testable)]
    return _finish(table)


def _mde_row(c: Components, pair: tuple[int, int], level_alpha: float, power: float) -> tuple[float, float, float]:
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


def _finish(table: pd.DataFrame) -> pd.DataFrame:
    for name in ("p (Holm)", "low", "high", "level", "over", "MDE", "MDE 2x fine-tuning seeds",
                 "MDE 2x pretraining seeds", "seeds needed"):
        if name not in table:
            table[name] = pd.Series(dtype=float)
    if "outcome" not in table:
        table["outcome"] = pd.Series(dtype=int)
    return table.drop(columns=["t"])


def not_testable(reasons: Iterable[str]) -> str:
    """The verdict on what no model has learned: "not testable at this scale: <reasons>"."""
    return f"{NOT_TESTABLE}: {'; '.join(dict.fromkeys(reasons))}"


def claim_verdict(claim: Claim, details: pd.DataFrame) -> str:
    """The verdict of a claim from :func:`compare_family`'s rows (its testable ones)."""
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


def assess(claim: Claim, per_seed: pd.DataFrame, untestable: Mapping[str, str] | None = None,
           alpha: float = ALPHA, power: float = POWER) -> dict:
    """Test one claim on per-seed scores (index :data:`LEVELS`): the verdict, counts, the mean
    effect, the claim's MDE (largest over its testable comparisons) and its projections, the
    columns it is ``not testable on`` and the comparison rows (``details``). Comparisons whose
    variants or column are absent are skipped."""
    details = compare_family(claim.comparisons, per_seed, untestable, alpha, power)
    verdict = claim_verdict(claim, details)
    undecided = verdict.startswith("not decidable")

    def largest(name):
        values = details[name].dropna()
        return float(values.max()) if undecided and len(values) else math.nan

    return {
        "claim": claim.text, "quantifier": claim.quantifier, "comparisons": len(details),
        "in claimed direction": int((details["difference"] > 0).sum()),
        "decided as claimed": int((details["outcome"] == 1).sum()),
        "decided against": int((details["outcome"] == -1).sum()),
        "mean difference": float(details["difference"].mean()) if len(details) else math.nan,
        "verdict": verdict, "not testable on": "; ".join(dict.fromkeys(g for g in details["gate"] if g)),
        "MDE": largest("MDE"), "MDE 2x fine-tuning seeds": largest("MDE 2x fine-tuning seeds"),
        "MDE 2x pretraining seeds": largest("MDE 2x pretraining seeds"),
        "seeds needed": claim_seeds_needed(details["seeds needed"], details["difference"], claim.quantifier)
        if verdict == UNDECIDED else math.nan, "details": details,
    }


def assess_claims(claims: Iterable[Claim], per_seed: pd.DataFrame, untestable: Mapping[str, str] | None = None,
                  alpha: float = ALPHA) -> pd.DataFrame:
    """:func:`assess` for each claim, one row per claim (index: the claim's key)."""
    rows = {claim.key: assess(claim, per_seed, untestable, alpha) for claim in claims}
    return pd.DataFrame.from_dict(rows, orient="index").drop(columns="details").rename_axis("claim id")


def comparison_table(claims: Iterable[Claim], per_seed: pd.DataFrame, untestable: Mapping[str, str] | None = None,
                     alpha: float = ALPHA) -> pd.DataFrame:
    """Every comparison of every claim: the effect, its Bonferroni interval with its ``level`` and
    the number of comparisons it is corrected ``over``, p, Holm's p, the outcome in words, the MDE
    and where the variance came from."""
    words = {1: "as claimed", -1: "against", 0: "not decided"}
    parts = []
    for claim in claims:
        details = assess(claim, per_seed, untestable, alpha)["details"]
        outcome = [("not testable" if gate else words[o]) for o, gate in zip(details["outcome"], details["gate"])]
        parts.append(pd.DataFrame({
            "claim id": claim.key, "expected higher": details["better"], "expected lower": details["worse"],
            "column": details["column"], "difference": details["difference"], "low": details["low"],
            "high": details["high"], "level": details["level"], "over": details["over"], "p": details["p"],
            "p (Holm)": details["p (Holm)"], "outcome": outcome, "MDE": details["MDE"], "variance": details["variance"]}))
    columns = ["claim id", "expected higher", "expected lower", "column", "difference", "low", "high", "level", "over",
               "p", "p (Holm)", "outcome", "MDE", "variance"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


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
    deterministic fit on the same examples, taken as exact. Outcome (:func:`standing`):
    ``"above"`` when the interval lies above the baseline, ``"below"`` when it lies below,
    ``"within the interval"`` when it contains it, ``"variance unknown"`` when no variant has two
    pretraining seeds. ``role``: ``"reads word order (reference)"`` for the baselines named in
    ``references`` (rules that read word order: shown, never a bar of the gate), else
    ``"order-free"``. ``ranges`` (column -> the lowest and highest score it can take,
    :func:`pe_book.tables.score_ranges`) bounds each interval: a t interval intersected with the
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


# ----------------------------------------------------------------------------- the rule on simulated runs


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
