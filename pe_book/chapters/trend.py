r"""The scale trend of the key effects (chapter 13's last section; chapter 8 cites it per claim).

The trend profile keeps ``none``, ``ape-learned`` and ``rpe-learned`` at every budget of the scale
study (1x-16x of 4.1M tokens), one pretraining seed and one fine-tuning seed each. At budget
:math:`b` and on a score column, the effect of a pair of variants is the difference of their
single runs,

.. math::  d_b = y_{a,b} - y_{c,b}.

One run has no variance of its own, so each variant's is **borrowed** from a reference profile
(the published run) at its one budget, from the variance components of :mod:`pe_book.verdicts`:
a run with one pretraining and one fine-tuning seed varies by
:math:`\sigma^2_v = \sigma^2_\mathrm{pre} + \sigma^2_{\mathrm{ft},v}`, so

.. math::  \mathrm{se}(d_b) = \sqrt{\sigma^2_a + \sigma^2_c}, \qquad \mathrm{df} = \text{the pretraining df of the components},

assuming the variance at the reference's budget holds at every budget. The trend over budgets is
the least-squares slope of :math:`d_b` on :math:`x_b = \log_2(\text{tokens}_b)`, the change per
doubling of the pretraining budget:

.. math::  s = \frac{\sum_b (x_b - \bar x)\, d_b}{\sum_b (x_b - \bar x)^2}, \qquad
           \mathrm{se}(s)^2 = \frac{\sum_b (x_b - \bar x)^2\, \mathrm{se}(d_b)^2}{\bigl(\sum_b (x_b - \bar x)^2\bigr)^2}.

The budgets are treated as independent. They are not: the snapshots of one run share its
pretraining noise, and a contrast whose weights sum to zero cancels that shared part, so this
standard error is conservative. Directions: an effect **flips** when its intervals at the smallest
and the largest budget both exclude zero, on opposite sides; otherwise it **grows** (or
**shrinks**) when the slope's interval excludes zero and the effect is larger (smaller) in size
at the largest budget than at the smallest; otherwise there is **no trend** at this resolution,
and the slope a test of the same size would detect with 80% power says how large a trend could
have been seen. A claim's comparisons get Bonferroni intervals over its comparisons (familywise
level ``alpha``), as in :mod:`pe_book.verdicts`.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pe_book import tables
from pe_book.chapters import common
from pe_book.experiments.baselines import stored_baselines
from pe_book.experiments.results import Place, Results, stage_name
from pe_book.verdicts import claims, intervals, mixed_model, power, testability
from pe_book.verdicts.groups import score_groups
from pe_lib.data.tasks import get_task

#: The key effects of issue 36, item 6: (higher, lower) variants of each difference shown.
KEY_EFFECTS = (("rpe-learned", "ape-learned"), ("ape-learned", "none"))

FLIPS, GROWS, SHRINKS, NO_TREND, TOO_FEW, UNKNOWN = ("flips", "grows", "shrinks", "no trend detected",
                                                     "fewer than two budgets", "variance unknown")


def effect_name(higher: str, lower: str) -> str:
    """The label of a difference: ``"rpe-learned − ape-learned"``."""
    return f"{higher} − {lower}"


@dataclass
class Trend:
    """What the trend holds: per budget (tokens) the ``per_seed`` scores of its stored runs, the
    ``variance`` of one run per variant and column (borrowed; with its ``df``), the key
    ``effects`` at each budget on the shown ``columns`` (pointwise ``1 - alpha`` intervals), the
    per-claim ``claims`` table (Bonferroni over each claim's comparisons), which columns the runs
    had ``learned`` at each budget (:func:`learned_by_budget`) and ``cited``, the numbers the
    prose cites."""
    per_budget: dict[int, pd.DataFrame]
    variance: pd.DataFrame
    df: dict[str, float]
    effects: pd.DataFrame
    claims: pd.DataFrame
    columns: list[str] = field(default_factory=list)
    budgets: list[int] = field(default_factory=list)
    learned: pd.DataFrame = field(default_factory=pd.DataFrame)
    cited: dict = field(default_factory=dict)

    @property
    def stored(self) -> bool:
        """Whether any budget has a stored run."""
        return any(not table.empty for table in self.per_budget.values())


def stored_payloads(runner: Results, variants: Sequence[str], tasks: Sequence[str],
                    reference: Results | None = None) -> dict[int, dict]:
    """Tokens -> fine-tuning payloads keyed ``(variant, task, pretrain_seed, seed)`` of every run
    that ``runner``'s store holds, at every budget its models keep; never computes. Where it lacks
    one that ``reference``'s store holds under the same key (the reference's final model is the
    same model as the runner's snapshot at that budget: an anytime schedule), that one is read."""
    tokens_per_step = runner.profile.pretrain.batch_size * runner.profile.seq_len
    found: dict[int, dict] = {steps * tokens_per_step: {} for steps in runner.profile.pretrain.budgets}
    for variant, p, steps in runner.models(list(variants)):
        for task in tasks:
            for seed in runner.profile.seeds_for(task):
                config = runner.finetune_config(variant, task, seed, p, steps)
                artifact = _load_finetuned(runner, variant, task, seed, p, steps, config)
                if artifact is None and reference is not None and _same_model(reference, variant, p, steps, config):
                    artifact = _load_finetuned(reference, variant, task, seed, p, None, config)
                if artifact is not None:
                    found[steps * tokens_per_step][(variant, task, p, seed)] = artifact.payload
    return found


def _load_finetuned(runner: Results, variant: str, task: str, seed: int, p: int, steps: int | None, config: dict):
    """The stored fine-tuning of ``runner``'s model (``steps``: a snapshot's; None: the final model), or None."""
    return runner.stored(Place(variant, stage_name("finetune", p, task, f"seed{seed}", snapshot=runner.snapshot(steps)), config))


def _same_model(reference: Results, variant: str, p: int, steps: int, config: dict) -> bool:
    """Whether ``reference`` fine-tunes its final model of ``variant`` (seed ``p``) under ``config``."""
    if steps != reference.profile.pretrain.steps or variant not in reference.profile.variants:
        return False
    if p not in reference.profile.pretrain_seeds_for(variant) or config["task"] not in reference.profile.tasks:
        return False
    return reference.finetune_config(variant, config["task"], config["seed"], p) == config


def run_variance(per_seed: pd.DataFrame, columns: Sequence[str], alpha: float = mixed_model.ALPHA) -> tuple[pd.DataFrame, dict]:
    """The variance of ONE run (one pretraining seed, one fine-tuning seed) per variant (rows) and
    column, ``sigma2_pre + sigma2_ft,v`` from the components of ``per_seed`` (a reference run with
    several seeds), and the pretraining df per column; NaN where unknown."""
    rows: dict[str, dict[str, float]] = {}
    df = {}
    for column in columns:
        if column not in per_seed.columns or per_seed[column].dropna().empty:
            df[column] = 0.0
            continue
        col = mixed_model.column_stats(per_seed, column, alpha)
        c = col.components
        within = np.nan_to_num(c.within)
        for i, variant in enumerate(col.variants):
            rows.setdefault(variant, {})[column] = float(c.pretrain + within[i])
        df[column] = float(c.df_tau)
    return pd.DataFrame.from_dict(rows, orient="index").reindex(columns=list(columns)), df


def effect_rows(per_budget: Mapping[int, pd.DataFrame], pairs: Sequence[tuple[str, str]], columns: Sequence[str],
                variance: pd.DataFrame, df: Mapping[str, float], level_alpha: float) -> pd.DataFrame:
    """One row per pair, column and budget where both variants have a score: the difference of
    their mean scores, its borrowed standard error and df, and its two-sided ``1 - level_alpha``
    interval (``low``, ``high``; NaN where the variance is unknown)."""
    rows = []
    for higher, lower in pairs:
        for column in columns:
            var = (_cell(variance, higher, column) + _cell(variance, lower, column))
            se, dof = math.sqrt(var) if var >= 0 else math.nan, df.get(column, 0.0)
            half = float(intervals.interval_halfwidth(se, dof, level_alpha)) if not math.isnan(se) else math.nan
            for tokens, per_seed in per_budget.items():
                means = _means(per_seed, column)
                if higher not in means or lower not in means:
                    continue
                difference = means[higher] - means[lower]
                rows.append({"effect": effect_name(higher, lower), "higher": higher, "lower": lower, "column": column,
                             "tokens": tokens, "difference": difference, "se": se, "df": dof,
                             "low": difference - half, "high": difference + half})
    return pd.DataFrame(rows, columns=["effect", "higher", "lower", "column", "tokens", "difference", "se", "df",
                                       "low", "high"])


def _cell(table: pd.DataFrame, row: str, column: str) -> float:
    try:
        return float(table.loc[row, column])
    except KeyError:
        return math.nan


def _means(per_seed: pd.DataFrame, column: str) -> dict[str, float]:
    if per_seed.empty or column not in per_seed.columns:
        return {}
    return per_seed[column].dropna().groupby(level="variant").mean().to_dict()


def slope(effect: pd.DataFrame, level_alpha: float) -> dict:
    """The trend of one effect over budgets (rows of :func:`effect_rows` for one pair and column,
    their intervals at ``level_alpha``): its slope per doubling of tokens with a two-sided
    ``1 - level_alpha`` interval, the effects at the smallest and the largest budget, the
    direction (see the module's docstring) and the smallest slope detectable with 80% power."""
    effect = effect.sort_values("tokens")
    row = {"budgets": len(effect), "first": math.nan, "last": math.nan, "slope": math.nan, "slope low": math.nan,
           "slope high": math.nan, "detectable slope": math.nan, "direction": TOO_FEW}
    if effect.empty:
        return row
    first, last = effect.iloc[0], effect.iloc[-1]
    row.update({"first": first["difference"], "last": last["difference"]})
    if len(effect) < 2:
        return row
    x = np.log2(effect["tokens"].to_numpy(dtype=float))
    centred = x - x.mean()
    sxx = float((centred ** 2).sum())
    s = float((centred * effect["difference"].to_numpy()).sum() / sxx)
    se = math.sqrt(float((centred ** 2 * effect["se"].to_numpy() ** 2).sum())) / sxx
    dof = float(effect["df"].iloc[0])
    half = float(intervals.interval_halfwidth(se, dof, level_alpha)) if not math.isnan(se) else math.nan
    row.update({"slope": s, "slope low": s - half, "slope high": s + half,
                "detectable slope": power.mde(se, dof, level_alpha)})
    if math.isnan(half):
        return {**row, "direction": UNKNOWN}
    if (first["low"] > 0 and last["high"] < 0) or (first["high"] < 0 and last["low"] > 0):
        return {**row, "direction": FLIPS}
    if s - half > 0 or s + half < 0:
        return {**row, "direction": GROWS if abs(last["difference"]) > abs(first["difference"]) else SHRINKS}
    return {**row, "direction": NO_TREND}


def claim_trends(claim_list: Sequence[claims.Claim], per_budget: Mapping[int, pd.DataFrame], variance: pd.DataFrame,
                 df: Mapping[str, float], variants: Sequence[str], alpha: float) -> pd.DataFrame:
    """One row per comparison of each claim whose two variants the trend runs: its effect's
    slope and direction (:func:`slope`), with Bonferroni intervals over the claim's comparisons
    that the trend runs (familywise level ``alpha``)."""
    rows = []
    for claim in claim_list:
        tracked = [c for c in claim.comparisons if c.better in variants and c.worse in variants]
        for comparison in tracked:
            level = alpha / len(tracked)
            effect = effect_rows(per_budget, [(comparison.better, comparison.worse)], [comparison.column], variance,
                                 df, level)
            rows.append({"claim id": claim.key, "claim": claim.text, "effect": effect_name(comparison.better, comparison.worse),
                         "column": comparison.column, "comparisons": len(tracked), **slope(effect, level)})
    return pd.DataFrame(rows, columns=["claim id", "claim", "effect", "column", "comparisons", "budgets", "first", "last",
                                       "slope", "slope low", "slope high", "detectable slope", "direction"])


def learned_by_budget(per_budget: Mapping[int, pd.DataFrame], selection: Mapping[int, pd.DataFrame],
                      variance: pd.DataFrame, df: Mapping[str, float], bars: Mapping[str, tuple[str, float]],
                      groups: Mapping[str, Sequence[str]], order_sensitive: Collection[str], alpha: float,
                      control: str = testability.NO_ORDER) -> pd.DataFrame:
    """The gate of :mod:`pe_book.verdicts.testability` at each budget, on single runs: per budget and
    column (each task of ``bars``: task -> its best order-free baseline ``(name, score)``, and each group of
    several tasks), the best variant (chosen on the validation scores ``selection``), its score, the
    lower end of its two-sided ``1 - alpha`` interval from its borrowed variance, the bar, and on
    order-sensitive columns the gap to ``control`` with its low. A column is *learned* when the low
    is above the bar and, where held to the control, the gap's low above 0 (where the variance is
    unknown: the score and the gap themselves, as :func:`pe_book.verdicts.gate.learned` does); a group when
    each of its tasks is."""
    bar = testability.column_bars(bars, groups)
    several = {name: tasks for name, tasks in groups.items() if len(tasks) > 1}

    def half(variance_of_run: float, dof: float) -> float:
        return float(intervals.interval_halfwidth(math.sqrt(variance_of_run), dof, alpha))

    rows = []
    for tokens, per_seed in per_budget.items():
        found = {}
        for column in [*bars, *several]:
            means, chosen = _means(per_seed, column), _means(selection.get(tokens, pd.DataFrame()), column)
            if not means:
                continue
            pool = {v: x for v, x in chosen.items() if v in means} or means
            best = max(pool, key=pool.get)
            dof = df.get(column, 0.0)
            score_half = half(_cell(variance, best, column), dof)
            tasks = several.get(column, [column])
            held = control in means and best != control and all(t in order_sensitive for t in tasks)
            gap = means[best] - means[control] if held else math.nan
            gap_half = half(_cell(variance, best, column) + _cell(variance, control, column), dof) if held else math.nan
            beats = np.nan_to_num(means[best] - score_half, nan=means[best]) > bar[column][1]
            beats = beats and (not held or np.nan_to_num(gap - gap_half, nan=gap) > 0)
            if column in several:
                beats = beats and all(found.get(t, {}).get("learned", False) for t in tasks)
            found[column] = {"tokens": tokens, "column": column, "best variant": best, "score": means[best],
                             "low": means[best] - score_half, "baseline": bar[column][0], "baseline score": bar[column][1],
                             "gap to none": gap, "its low": gap - gap_half, "learned": bool(beats)}
        rows += found.values()
    return pd.DataFrame(rows, columns=["tokens", "column", "best variant", "score", "low", "baseline", "baseline score",
                                       "gap to none", "its low", "learned"])


def learned_text(table: pd.DataFrame) -> str:
    """At which budgets a single run learned each column beyond every order-free baseline
    (:func:`learned_by_budget`), in words."""
    if table.empty:
        return "no trend run is stored"
    at = {column: [f"{t / 1e6:.3g}M" for t in rows.loc[rows["learned"], "tokens"]]
          for column, rows in table.sort_values("tokens").groupby("column", sort=False)}
    learned = [f"{column} at {', '.join(budgets)} tokens" for column, budgets in at.items() if budgets]
    never = [column for column, budgets in at.items() if not budgets]
    return "; ".join(learned + ([f"{', '.join(never)} at none of the budgets"] if never else []))


def style_claims(claim_table: pd.DataFrame, budgets: bool = False):
    """A pandas Styler of :func:`claim_trends`' rows as the chapters show them: the slope's interval
    as one column, the effects at the first and last budget, the detectable slope, the direction
    (and the number of budgets, with ``budgets``)."""
    shown = common.with_intervals(claim_table, "slope low", "slope high").rename(columns={"detectable slope": "detectable"})
    columns = ["claim id", "effect", "column", *(["budgets"] if budgets else []), "first", "last", "slope", "interval",
               "detectable", "direction"]
    return (shown[columns].style
            .format({"first": "{:+.1f}", "last": "{:+.1f}", "slope": "{:+.2f}", "detectable": "{:.2f}"}, na_rep="—")
            .hide(axis="index").set_table_attributes('class="dataframe"'))


def compute(runner: Results, reference: Results | None = None, alpha: float = mixed_model.ALPHA) -> Trend:
    """The trend of the key effects (per task and group of several tasks) from what ``runner``'s
    store holds (and ``reference``'s, for the models both hold under one key), each run's variance
    borrowed from ``reference``'s stored runs at its budget; familywise level ``alpha`` per claim,
    pointwise in the figure."""
    variants = [v for pair in KEY_EFFECTS for v in pair if v in runner.profile.variants]
    variants = list(dict.fromkeys(variants))
    specs = {t: get_task(t) for t in runner.profile.tasks}
    kinds = {t: s.meta.kind for t, s in specs.items()}
    groups = score_groups(specs)
    columns = list(specs) + list(groups)
    shown = list(specs) + [name for name, group in groups.items() if len(group) > 1]  # a one-task group is its task
    payloads = stored_payloads(runner, variants, list(specs), reference)
    per_budget, validation = ({tokens: tables.per_seed_scores(tables.score_records(found, kinds, split), groups) if found
                               else pd.DataFrame() for tokens, found in payloads.items()} for split in ("test", "validation"))
    reference_scores = _reference_scores(reference, variants, specs, groups) if reference is not None else pd.DataFrame()
    variance, df = run_variance(reference_scores, columns, alpha)
    pairs = [pair for pair in KEY_EFFECTS if set(pair) <= set(variants)]
    span_tasks = [t for t, kind in kinds.items() if kind == "span"]
    claim_table = claim_trends(claims.paper_claims(span_tasks=span_tasks), per_budget, variance, df, variants, alpha)
    stored_runs = sum(len(found) for found in payloads.values())
    bars = testability.task_bars(stored_baselines(runner, specs))
    learned = learned_by_budget(per_budget, validation, variance, df, bars, groups,
                                [t for t, spec in specs.items() if spec.order_sensitive], alpha)
    trend = Trend(per_budget, variance, df, effect_rows(per_budget, pairs, shown, variance, df, alpha), claim_table,
                  shown, sorted(per_budget), learned)
    trend.cited = {"trend_variants": ", ".join(variants), "trend_runs": stored_runs,
                   "trend_planned": sum(len(runner.profile.seeds_for(t)) for t in specs) * len(variants) * len(per_budget),
                   "trend_reference": reference.profile.name if reference is not None else "none",
                   "trend_budgets": ", ".join(f"{t / 1e6:.3g}M" for t in trend.budgets),
                   "trend_learned_text": learned_text(learned),
                   **{f"trend_n_{d.replace(' ', '_')}": int((claim_table["direction"] == d).sum())
                      for d in (FLIPS, GROWS, SHRINKS, NO_TREND, TOO_FEW, UNKNOWN)}}
    return trend


def _reference_scores(reference: Results, variants: Sequence[str], specs: Mapping, groups: Mapping) -> pd.DataFrame:
    """The reference's stored per-seed test scores of ``variants`` at its final budget (every
    pretraining and fine-tuning seed)."""
    names = [v for v in variants if v in reference.profile.variants]
    tasks = [t for t in specs if t in reference.profile.tasks]
    final = stored_payloads(reference, names, tasks)
    found = final[max(final)] if final else {}
    if not found:
        return pd.DataFrame()
    return tables.per_seed_scores(tables.score_records(found, {t: specs[t].meta.kind for t in tasks}), groups)


def read(profile: str, reference: str = "", results: str = "results", alpha: float = mixed_model.ALPHA) -> Trend | None:
    """The trend of the runs of ``profile`` (None when it is empty: the book leaves the trend
    out), its variance borrowed from ``reference``'s (none when empty), both on ``results``."""
    if not profile:
        return None
    return compute(common.open_results(profile, results), common.open_results(reference, results) if reference else None,
                   alpha)
