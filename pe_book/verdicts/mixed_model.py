r"""The mixed model of the verdicts: variance components of scores from nested seeds (numpy, scipy,
pandas), and the t test of a difference between two variants' means.

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
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

ALPHA = 0.05
#: Index levels of per-seed score tables.
LEVELS = ("variant", "pretrain_seed", "seed")


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


def variant_means(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per variant (rows, in order of appearance) and column: the mean of its pretrained models'
    means, each pretraining seed weighing the same (the variant mean :math:`\\bar y_v` the verdicts
    compare)."""
    model_means = per_seed.groupby(level=["variant", "pretrain_seed"], sort=False).mean()
    return model_means.groupby(level="variant", sort=False).mean()


def column_stats(per_seed: pd.DataFrame, column: str, alpha: float = ALPHA) -> ColumnStats:
    """Variance components of ``column`` of a per-seed table (Bartlett's test at ``alpha``)."""
    y, variants = score_array(per_seed, column)
    return ColumnStats(components(y, alpha), variants)


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
