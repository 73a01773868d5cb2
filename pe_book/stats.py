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

*Estimating* :math:`\tau^2`. Within one column the variance components are assumed equal across
variants (homogeneity: a stated assumption, needed because a variant with one pretraining seed has
no measure of its own). :math:`\tau^2` is the pooled between-pretraining-seed mean square of the
variants with at least two pretraining seeds (their pretrained-model means around the variant
mean), with ``df = sum(P_v - 1)`` over those variants; every variant of the column uses it, and
the output names the variants it was pooled from. A variant with one pretraining seed borrows it:
its pretraining variance is not measured, which the comparison table says. Where no variant of a
column has two pretraining seeds, :math:`\tau^2` is unknown: the fine-tuning spread alone would
pretend :math:`\sigma^2_{pre} = 0`, so such comparisons get no interval and the verdict says
"pretraining variance unknown". :math:`\sigma^2_{ft}` (pooled within-model variance) and
:math:`\sigma^2_{pre} = \max(0, \tau^2 - \sigma^2_{ft}/F)` are reported and used only to project
what more seeds would buy.

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
false-verdict rate is at most ``alpha``. ``tests/experiments/test_stats.py`` measures it with no true
difference and 3 x 3 seeds over 2,000 simulated runs: 4.9% for one comparison (the exact test's
nominal 5%, half each way), 0.4-1.9% for claims of 4 or 5 comparisons. This is conservative for "all ... supported" and "any ...
contradicted", which as intersection-union tests would need no correction; one rule for every
quantifier keeps each verdict readable off the comparison table.

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

*Models at chance.* A column on which no variant beats the best constant predictor (an input,
column -> score) beyond its interval (its ``1 - alpha`` interval above the constant, or, where the
variance is unknown, every mean at or below it) carries no signal about position embeddings:
comparisons on it are never decided, and a claim that only has such comparisons is "not decidable:
models at chance on this task", never "contradicted".
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

ALPHA = 0.05
POWER = 0.8
QUANTIFIERS = ("all", "most", "any")
SUPPORTED, CONTRADICTED = "supported", "contradicted"
UNDECIDED = "not decidable at this scale"
AT_CHANCE = "not decidable: models at chance on this task"
VARIANCE_UNKNOWN = "not decidable: pretraining variance unknown (no variant has two pretraining seeds)"
NOT_TESTED = "not tested (variants absent)"
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

    ``mean``, ``n_pre``: per variant (``[..., V]``); the rest per column (``[...]``): ``tau2`` the
    pooled variance of a pretrained model's mean score (NaN when ``df_tau == 0``), ``within`` the
    pooled fine-tuning variance (NaN when ``df_within == 0``), ``n_ft`` the harmonic mean of the
    fine-tuning seeds per pretrained model."""

    mean: np.ndarray
    n_pre: np.ndarray
    tau2: np.ndarray
    df_tau: np.ndarray
    within: np.ndarray
    df_within: np.ndarray
    n_ft: np.ndarray

    @property
    def pretrain(self) -> np.ndarray:
        """The pretraining component ``max(0, tau2 - within / n_ft)`` (NaN where either is unknown)."""
        return np.maximum(self.tau2 - self.within / self.n_ft, 0.0)


def _ratio(numerator, denominator):
    numerator, denominator = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    return np.divide(numerator, denominator, out=np.full(np.broadcast(numerator, denominator).shape, np.nan),
                     where=denominator > 0)


def components(scores: np.ndarray) -> Components:
    """:class:`Components` of ``scores[..., V, P, F]`` (the last three axes: variant, pretraining
    seed, fine-tuning seed; NaN pads variants with fewer seeds)."""
    y = np.asarray(scores, dtype=float)
    present = ~np.isnan(y)
    n_runs = present.sum(-1)  # [..., V, P]
    model_mean = _ratio(np.where(present, y, 0.0).sum(-1), n_runs)
    has_model = n_runs > 0
    n_pre = has_model.sum(-1)  # [..., V]
    mean = _ratio(np.where(has_model, model_mean, 0.0).sum(-1), n_pre)
    between = np.where(has_model, (model_mean - mean[..., None]) ** 2, 0.0).sum((-1, -2))
    df_tau = np.maximum(n_pre - 1, 0).sum(-1)
    within = np.where(present, (y - model_mean[..., None]) ** 2, 0.0).sum((-1, -2, -3))
    df_within = np.maximum(n_runs - 1, 0).sum((-1, -2))
    n_ft = _ratio(has_model.sum((-1, -2)), np.where(has_model, 1.0 / np.maximum(n_runs, 1), 0.0).sum((-1, -2)))
    return Components(mean=mean, n_pre=n_pre, tau2=_ratio(between, df_tau), df_tau=df_tau,
                      within=_ratio(within, df_within), df_within=df_within, n_ft=n_ft)


def difference_tests(c: Components, better: Sequence[int], worse: Sequence[int]) -> dict[str, np.ndarray]:
    """Effect ``d = mean[better] - mean[worse]``, its standard error, df and two-sided p for the
    variant index pairs (last axis: the comparisons)."""
    better, worse = np.asarray(better), np.asarray(worse)
    d = c.mean[..., better] - c.mean[..., worse]
    scale = 1.0 / c.n_pre[..., better] + 1.0 / c.n_pre[..., worse]
    se = np.sqrt(c.tau2[..., None] * scale)
    df = np.broadcast_to(c.df_tau[..., None], d.shape).astype(float)
    t = _ratio(d, se)
    p = np.where(df > 0, 2 * stats.t.sf(np.abs(t), np.maximum(df, 1)), np.nan)
    return {"difference": d, "se": se, "df": df, "t": t, "p": p, "scale": scale}


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
    chance: str  # "above" (some variant beats the constant), "at chance", "unknown" or "no baseline"

    def index(self, variant: str) -> int:
        return self.variants.index(variant)

    @property
    def pooled_from(self) -> list[str]:
        return [v for v, n in zip(self.variants, self.components.n_pre) if n >= 2]


def column_stats(per_seed: pd.DataFrame, column: str, baseline: float | None = None,
                 alpha: float = ALPHA) -> ColumnStats:
    """Variance components of ``column`` and whether its models are at chance against
    ``baseline`` (the best constant predictor's score; None: not checked)."""
    y, variants = score_array(per_seed, column)
    c = components(y)
    return ColumnStats(c, variants, chance_status(c, baseline, alpha))


def chance_status(c: Components, baseline: float | None, alpha: float = ALPHA) -> str:
    """``"above"`` when some variant's ``1 - alpha`` interval lies above ``baseline``, ``"at
    chance"`` when none does (or, variance unknown, every mean is at or below it), else
    ``"unknown"``; ``"no baseline"`` without one."""
    if baseline is None or (isinstance(baseline, float) and math.isnan(baseline)) or not len(c.mean):
        return "no baseline"
    if float(np.nanmax(c.mean)) <= baseline:
        return "at chance"
    if not c.df_tau > 0:
        return "unknown"
    lower = c.mean - interval_halfwidth(np.sqrt(c.tau2 / c.n_pre), c.df_tau, alpha)
    return "above" if bool(np.any(lower > baseline)) else "at chance"


def variance_table(per_seed: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Per column: the pooled variance of a pretrained model's mean score (``tau2``) with its df
    and the variants it was pooled from, the fine-tuning and pretraining components, and the
    standard deviation of one run (``sqrt(pretraining + fine-tuning)``)."""
    rows = {}
    for column in columns:
        col = column_stats(per_seed, column)
        c = col.components
        rows[column] = {"tau2": float(c.tau2), "df": int(c.df_tau), "fine-tuning": float(c.within),
                        "pretraining": float(c.pretrain), "sd of one run": float(np.sqrt(c.pretrain + c.within)),
                        "pooled from": ", ".join(col.pooled_from) or "none (pretraining variance unknown)"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("column")


def _variance_note(column: ColumnStats, better: str, worse: str) -> str:
    c = column.components
    if not c.df_tau > 0:
        return "pretraining variance unknown"
    pooled = column.pooled_from
    borrowed = [v for v in (better, worse) if c.n_pre[column.index(v)] < 2]
    note = f"pooled over {len(pooled)} variant(s), df {int(c.df_tau)}"
    return note + (f"; one pretraining seed (borrowed): {', '.join(borrowed)}" if borrowed else "")


def compare_family(comparisons: Sequence[Comparison], per_seed: pd.DataFrame,
                   baselines: Mapping[str, float] | None = None, alpha: float = ALPHA,
                   power: float = POWER) -> pd.DataFrame:
    """Test a family of comparisons (a claim's): one row per comparison whose variants and column
    are present, with the effect, its Bonferroni interval, p, Holm's p, the outcome, the MDE (80%
    power at the Bonferroni level) and its projections with 2x fine-tuning / pretraining seeds."""
    columns: dict[str, ColumnStats] = {}
    rows, tested_on = [], []
    for comp in comparisons:
        if comp.column not in per_seed.columns:
            continue
        if comp.column not in columns:
            base = None if baselines is None else baselines.get(comp.column)
            columns[comp.column] = column_stats(per_seed, comp.column, base, alpha)
        col = columns[comp.column]
        if comp.better not in col.variants or comp.worse not in col.variants:
            continue
        test = {k: float(v[0]) for k, v in
                difference_tests(col.components, [col.index(comp.better)], [col.index(comp.worse)]).items()}
        rows.append({"comparison": comp, "better": comp.better, "worse": comp.worse, "column": comp.column,
                     **test, "chance": col.chance, "variance": _variance_note(col, comp.better, comp.worse)})
        tested_on.append(col.components)
    table = pd.DataFrame(rows, columns=["comparison", "better", "worse", "column", "difference", "se", "df", "t", "p",
                                        "scale", "chance", "variance"])
    k = len(table)
    if not k:
        return _finish(table)
    at_chance = (table["chance"] == "at chance").to_numpy()
    p = np.where(at_chance, np.nan, table["p"].to_numpy(dtype=float))
    table["p (Holm)"] = holm(p)
    half = interval_halfwidth(table["se"].to_numpy(dtype=float), table["df"].to_numpy(dtype=float), alpha / k)
    table["low"], table["high"] = table["difference"] - half, table["difference"] + half
    table["outcome"] = outcomes(table["difference"].to_numpy(dtype=float), table["p (Holm)"].to_numpy(), alpha)
    projections = [_mde_row(c, se, df, scale, alpha / k, power)
                   for c, se, df, scale in zip(tested_on, table["se"], table["df"], table["scale"])]
    table["MDE"], table["MDE 2x fine-tuning seeds"], table["MDE 2x pretraining seeds"] = map(list, zip(*projections))
    table["seeds needed"] = [math.nan if chance == "at chance" else seeds_needed(c, d, alpha / k, power)
                             for c, d, chance in zip(tested_on, table["difference"], table["chance"])]
    return _finish(table)


def _mde_row(c: Components, se: float, df: float, scale: float, level_alpha: float,
             power: float) -> tuple[float, float, float]:
    """MDE of a comparison (standard error ``se``, ``scale = 1/P_a + 1/P_b``) now, with twice the
    fine-tuning seeds (the fine-tuning part of ``tau2`` halves, df unchanged) and with twice the
    pretraining seeds (``scale`` halves; every variant then has ``2 P_v - 1`` df to pool)."""
    now = mde(se, df, level_alpha, power)
    pre, ft = float(c.pretrain), float(c.within / c.n_ft)
    more_ft = mde(math.sqrt((pre + ft / 2) * scale), df, level_alpha, power)
    df_more_pre = float(np.sum(2 * c.n_pre[c.n_pre > 0] - 1))
    more_pre = mde(math.sqrt(float(c.tau2) * scale / 2), df_more_pre, level_alpha, power)
    return now, more_ft, more_pre


#: The most pretraining seeds per variant :func:`seeds_needed` considers (beyond: NaN, "more").
MAX_SEEDS = 64


def seeds_needed(c: Components, effect: float, level_alpha: float, power: float = POWER,
                 limit: int = MAX_SEEDS) -> float:
    """The fewest pretraining seeds ``P`` per variant (each model fine-tuned with as many seeds as
    now, so ``tau2`` stays) at which a comparison detects a true difference ``effect`` with
    probability ``power`` at ``level_alpha``: standard error ``sqrt(2 tau2 / P)``, df ``V (P - 1)``
    over the ``V`` variants of the column. NaN when the variance is unknown or ``limit`` is not enough."""
    n_variants = int(np.sum(c.n_pre > 0))
    if not (float(c.tau2) > 0 and abs(effect) > 0 and n_variants):
        return math.nan
    for seeds in range(2, limit + 1):
        if mde(math.sqrt(2 * float(c.tau2) / seeds), n_variants * (seeds - 1), level_alpha, power) <= abs(effect):
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
    for name in ("p (Holm)", "low", "high", "MDE", "MDE 2x fine-tuning seeds", "MDE 2x pretraining seeds",
                 "seeds needed"):
        if name not in table:
            table[name] = pd.Series(dtype=float)
    if "outcome" not in table:
        table["outcome"] = pd.Series(dtype=int)
    return table.drop(columns=["t", "scale"])


def claim_verdict(claim: Claim, details: pd.DataFrame) -> str:
    """The verdict of a claim from :func:`compare_family`'s rows."""
    if details.empty:
        return NOT_TESTED
    code = int(claim_codes(details["outcome"].to_numpy(), claim.quantifier))
    if code:
        return SUPPORTED if code > 0 else CONTRADICTED
    if (details["chance"] == "at chance").all():
        return AT_CHANCE
    if details["variance"].eq("pretraining variance unknown").any():
        return VARIANCE_UNKNOWN
    return UNDECIDED


def assess(claim: Claim, per_seed: pd.DataFrame, baselines: Mapping[str, float] | None = None,
           alpha: float = ALPHA, power: float = POWER) -> dict:
    """Test one claim on per-seed scores (index :data:`LEVELS`): the verdict, counts, the mean
    effect, the claim's MDE (largest over its comparisons) and its projections, and the
    comparison rows (``details``). Comparisons whose variants or column are absent are skipped."""
    details = compare_family(claim.comparisons, per_seed, baselines, alpha, power)
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
        "verdict": verdict, "MDE": largest("MDE"), "MDE 2x fine-tuning seeds": largest("MDE 2x fine-tuning seeds"),
        "MDE 2x pretraining seeds": largest("MDE 2x pretraining seeds"),
        "seeds needed": claim_seeds_needed(details["seeds needed"], details["difference"], claim.quantifier)
        if verdict == UNDECIDED else math.nan, "details": details,
    }


def assess_claims(claims: Iterable[Claim], per_seed: pd.DataFrame, baselines: Mapping[str, float] | None = None,
                  alpha: float = ALPHA) -> pd.DataFrame:
    """:func:`assess` for each claim, one row per claim (index: the claim's key)."""
    rows = {claim.key: assess(claim, per_seed, baselines, alpha) for claim in claims}
    return pd.DataFrame.from_dict(rows, orient="index").drop(columns="details").rename_axis("claim id")


def comparison_table(claims: Iterable[Claim], per_seed: pd.DataFrame, baselines: Mapping[str, float] | None = None,
                     alpha: float = ALPHA) -> pd.DataFrame:
    """Every comparison of every claim: the effect, its Bonferroni interval, p, Holm's p, the
    outcome in words, the MDE and where the variance came from."""
    words = {1: "as claimed", -1: "against", 0: "not decided"}
    parts = []
    for claim in claims:
        details = assess(claim, per_seed, baselines, alpha)["details"]
        outcome = [("at chance" if chance == "at chance" else words[o]) for o, chance in
                   zip(details["outcome"], details["chance"])]
        parts.append(pd.DataFrame({
            "claim id": claim.key, "expected higher": details["better"], "expected lower": details["worse"],
            "column": details["column"], "difference": details["difference"], "low": details["low"],
            "high": details["high"], "p": details["p"], "p (Holm)": details["p (Holm)"], "outcome": outcome,
            "MDE": details["MDE"], "variance": details["variance"]}))
    columns = ["claim id", "expected higher", "expected lower", "column", "difference", "low", "high", "p",
               "p (Holm)", "outcome", "MDE", "variance"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def against_baselines(per_seed: pd.DataFrame, selection: pd.DataFrame, baselines: Mapping[str, Mapping[str, float]],
                      alpha: float = ALPHA) -> pd.DataFrame:
    """The best variant of each column against fixed baselines, one row per (column, baseline).

    ``baselines``: baseline name -> column -> score (absent or NaN: that baseline does not score
    the column). The best variant of a column is chosen on ``selection`` (the per-seed scores of
    the validation split, :func:`best_on`) and its mean on ``per_seed`` gets a t interval from the
    column's pooled ``tau2`` (standard error ``sqrt(tau2 / P)``), Bonferroni over the column's
    baselines (level ``alpha / K`` for ``K`` baselines). A baseline's score is one deterministic
    fit on the same examples, taken as exact. Outcome: ``"above"``
    when the interval lies above the baseline, ``"below"`` when it lies below, ``"not decided"``
    when it contains it, ``"variance unknown"`` when no variant has two pretraining seeds."""
    rows = []
    for column in per_seed.columns:
        scored = {name: float(scores[column]) for name, scores in baselines.items()
                  if not math.isnan(float(scores.get(column, math.nan)))}
        best = best_on(selection, column, list(dict.fromkeys(per_seed.index.get_level_values("variant"))))
        if not scored or best is None:
            continue
        col = column_stats(per_seed, column)
        if best not in col.variants:
            continue
        c, i = col.components, col.index(best)
        half = float(interval_halfwidth(math.sqrt(float(c.tau2) / c.n_pre[i]), c.df_tau, alpha / len(scored)))
        mean = float(c.mean[i])
        for name, score in scored.items():
            outcome = ("variance unknown" if math.isnan(half) else "above" if mean - half > score
                       else "below" if mean + half < score else "not decided")
            rows.append({"column": column, "best variant": best, "mean": mean, "low": mean - half,
                         "high": mean + half, "baseline": name, "baseline score": score,
                         "difference": mean - score, "outcome": outcome})
    return pd.DataFrame(rows, columns=["column", "best variant", "mean", "low", "high", "baseline", "baseline score",
                                       "difference", "outcome"])


def best_on(selection: pd.DataFrame, column: str, candidates: Sequence[str]) -> str | None:
    """The candidate with the highest variant mean (mean of its pretrained models' means) on
    ``column`` of ``selection`` (per-seed scores of the *validation* split: selecting on the
    split that is then tested would bias the test); None when no candidate has a score."""
    if column not in selection.columns:
        return None
    model_means = selection[column].groupby(level=["variant", "pretrain_seed"], sort=False).mean()
    means = model_means.groupby(level="variant", sort=False).mean().reindex(list(candidates)).dropna()
    return str(means.idxmax()) if len(means) else None
