r"""The design of a run, chosen before it and committed beside its results (issue 57).

A run decides a claim only if its seeds can see the claim's effect through the noise. The design
takes, per score column, the variance components a pilot measured (:func:`column_variance`: the
variance between pretraining seeds of one variant and between fine-tuning seeds of one model,
:mod:`pe_book.verdicts`' model), the effect each claim is planned for (:func:`planned_effects`: the
effect a pilot or trend run observed where it measured the claim's variants, else
:data:`DEFAULT_EFFECT`), and what one pretrained model costs per variant (pretraining with its
fine-tunings and analyses, in hours of the machine type priced). It then allocates pretraining
seeds (:func:`allocate`): every paper variant starts at :data:`~pe_book.verdicts.gate.GATE_SEEDS` (the gate
and the pooled variance need two), and one seed at a time goes to the variant that raises the
number of claims at :data:`~pe_book.verdicts.power.POWER` or more, then the summed power, most per hour,
until the budget is spent. A claim's power is that of the book's own verdict rule
(:func:`pe_book.verdicts.power.simulated_verdicts`: Holm within the claim, Bonferroni intervals) on runs
simulated with the design's seeds and the pilot's variances, every comparison of the claim true by
its planned effect; seeds already stored (``have``: a pilot's or trend's models under the run's
keys) cost nothing.

The power is conditional on the claim's columns entering the verdicts (the gate of
:mod:`pe_book.verdicts.testability`), and on the pilot's variances, which three seeds estimate loosely:
the design says what was promised; the findings show it beside what came out.

**Pairing.** Every variant's pretraining seed ``s`` sees the same batches and masks (each random
draw is a function of seed, step and process), so scores may share a seed-index effect. With
:math:`y_{vs} = \mu_v + b_s + e_{vs}`, :math:`b \sim N(0, \sigma^2_b)`, a difference of two variants
at the same seeds has variance :math:`2\sigma^2_e/P` instead of :math:`2(\sigma^2_b + \sigma^2_e)/P`:
:func:`pairing` estimates both components (two-way analysis of variance without interaction on the
variants that share seed indices) and the share of a difference's variance that pairing removes.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_book.verdicts.gate import GATE_SEEDS
from pe_book.verdicts.mixed_model import column_stats, score_array
from pe_book.verdicts.power import POWER, Design, simulated_verdicts
from pe_book.verdicts.rule import Claim

#: The effect (points) a claim is planned for where no pilot or trend run measured its variants.
DEFAULT_EFFECT = 5.0
#: Simulated runs per power estimate (seeded; the same inputs give the same design).
RUNS = 400


@dataclass(frozen=True)
class ColumnVariance:
    """One column's variance components (points squared), as a pilot measured them."""

    pretrain: float  # between the pretraining seeds of a variant (its fine-tuning noise removed)
    finetune: float  # between the fine-tuning seeds of one pretrained model
    df_pretrain: int  # degrees of freedom of the pretraining component


def column_variance(per_seed: pd.DataFrame, column: str) -> ColumnVariance:
    """The components of ``column`` of a per-seed table (:func:`pe_book.verdicts.mixed_model.column_stats`): the
    pretraining component pooled over the variants with two seeds or more, the fine-tuning one
    pooled over every model with two fine-tuning seeds or more (0 where none has)."""
    c = column_stats(per_seed, column).components
    return ColumnVariance(float(c.pretrain), float(np.nan_to_num(c.pooled_within)), int(c.df_tau))


def planned_effects(claims: Sequence[Claim], per_seed: pd.DataFrame, default: float = DEFAULT_EFFECT) -> dict[str, float]:
    """Per claim, the effect to plan for: the median absolute difference of variant means over its
    comparisons that ``per_seed`` (a pilot's or trend's scores) measured, else ``default``."""
    means = per_seed.groupby(level="variant").mean()
    effects = {}
    for claim in claims:
        measured = [abs(means.at[c.better, c.column] - means.at[c.worse, c.column]) for c in claim.comparisons
                    if c.column in means and {c.better, c.worse} <= set(means.index)]
        seen = [d for d in measured if not math.isnan(d)]
        effects[claim.key] = float(np.median(seen)) if seen else default
    return effects


def claim_power(claim: Claim, seeds: Mapping[str, int], finetune_seeds: Mapping[str, int],
                variance: Mapping[str, ColumnVariance], effect: float, runs: int = RUNS, seed: int = 0) -> float:
    """The power of the verdict rule to support ``claim`` when each of its comparisons holds by
    ``effect`` points, with ``seeds`` pretraining seeds per variant and ``finetune_seeds`` per column."""
    designs = {}
    variants = [v for v in seeds if seeds[v] > 0]
    for column in dict.fromkeys(c.column for c in claim.comparisons):
        if column not in variance:
            continue
        v = variance[column]
        designs[column] = Design(variants, np.array([seeds[x] for x in variants]),
                                 np.full(len(variants), finetune_seeds[column]), v.pretrain,
                                 np.full(len(variants), v.finetune))
    supported, _ = simulated_verdicts(claim, designs, effect, runs, np.random.default_rng(seed))
    return supported


def powers(claims: Sequence[Claim], seeds: Mapping[str, int], finetune_seeds: Mapping[str, int],
           variance: Mapping[str, ColumnVariance], effects: Mapping[str, float], runs: int = RUNS) -> dict[str, float]:
    """:func:`claim_power` of every claim at its planned effect."""
    return {c.key: claim_power(c, seeds, finetune_seeds, variance, effects[c.key], runs) for c in claims}


def _objective(power: Mapping[str, float]) -> tuple[int, float]:
    values = [p for p in power.values() if not math.isnan(p)]
    return sum(p >= POWER for p in values), float(sum(values))


def allocate(claims: Sequence[Claim], variants: Sequence[str], hours: Mapping[str, float], budget: float,
             finetune_seeds: Mapping[str, int], variance: Mapping[str, ColumnVariance], effects: Mapping[str, float],
             have: Mapping[str, int] | None = None, start: int = GATE_SEEDS, runs: int = RUNS) -> dict:
    """Pretraining seeds per variant within ``budget`` hours (see the module docstring): the seeds,
    the hours they cost beyond ``have``, and each claim's power at its planned effect."""
    have = have or {}
    seeds = {v: max(start, have.get(v, 0)) for v in variants}

    def cost(allocation: Mapping[str, int]) -> float:
        return sum(hours[v] * max(0, n - have.get(v, 0)) for v, n in allocation.items())

    if cost(seeds) > budget:
        raise ValueError(f"{start} pretraining seeds of every variant cost {cost(seeds):.1f} h, over the budget of "
                         f"{budget:.1f} h")
    power = powers(claims, seeds, finetune_seeds, variance, effects, runs)
    while True:
        best = None
        for v in variants:
            trial = {**seeds, v: seeds[v] + 1}
            if cost(trial) > budget:
                continue
            trial_power = powers(claims, trial, finetune_seeds, variance, effects, runs)
            gain = np.subtract(_objective(trial_power), _objective(power)) / hours[v]
            if gain[0] > 0 or gain[1] > 0:
                key = (gain[0], gain[1])
                if best is None or key > best[0]:
                    best = (key, trial, trial_power)
        if best is None:
            return {"seeds": seeds, "hours": cost(seeds), "power": power}
        _, seeds, power = best


def pairing(per_seed: pd.DataFrame, column: str) -> dict[str, float]:
    """The seed-index effect of ``column`` (two-way analysis of variance, variants x seed index,
    on each pretrained model's mean over its fine-tuning seeds, over the variants that have every
    seed index the most variants share): ``seed_index`` and ``residual`` variance components,
    ``saved`` the share of a paired difference's variance that pairing removes
    (``seed_index / (seed_index + residual)``, 0 when the seed index explains nothing), with the
    ``variants`` and ``seeds`` used."""
    y, variants = score_array(per_seed, column)
    with warnings.catch_warnings():  # a missing pretrained model is an all-NaN row: its mean is NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        models = np.nanmean(y, axis=-1)  # [V, P]: each pretrained model's mean
    complete = ~np.isnan(models)
    p = int(np.bincount(complete.sum(1)).argmax()) if len(models) else 0  # the most common seed count
    rows = [i for i in range(len(variants)) if complete[i, :p].all()] if p >= 2 else []
    if len(rows) < 2:
        return {"seed_index": math.nan, "residual": math.nan, "saved": math.nan, "variants": len(rows), "seeds": p}
    table = models[rows, :p]  # [V', P]
    n_v, n_s = table.shape
    resid = table - table.mean(1, keepdims=True) - table.mean(0, keepdims=True) + table.mean()
    ms_resid = float((resid ** 2).sum() / ((n_v - 1) * (n_s - 1)))
    ms_seed = float(n_v * ((table.mean(0) - table.mean()) ** 2).sum() / (n_s - 1))
    seed_index = max(0.0, (ms_seed - ms_resid) / n_v)
    total = seed_index + ms_resid
    return {"seed_index": seed_index, "residual": ms_resid, "saved": seed_index / total if total > 0 else 0.0,
            "variants": n_v, "seeds": n_s}


# ----------------------------------------------------------------------------- a run's design from its pilot


def finetune_seeds(variance: ColumnVariance, model_hours: float, finetune_hours: float, most: int = 3) -> int:
    """Fine-tuning seeds per pretrained model where they pay: the cost-optimal count of a nested
    design, :math:`F^* = \\sqrt{(\\sigma^2_{ft}/\\sigma^2_{pre}) (c_{pre}/c_{ft})}` (the fine-tuning
    seeds that minimise :math:`\\tau^2/P` per hour), rounded, between 1 and ``most``."""
    if variance.pretrain <= 0:
        return most if variance.finetune > 0 else 1
    best = math.sqrt(variance.finetune / variance.pretrain * model_hours / max(finetune_hours, 1e-9))
    return int(min(most, max(1, round(best))))


def from_pilot(target, pilot, rates, budget: float, sources: Sequence = ()) -> dict:
    """The design of ``target`` (the :class:`~pe_book.experiments.results.Results` of the run to
    plan) from the stored results of ``pilot`` (another :class:`Results`): its variance
    components and planned effects per claim, each variant's cost of one model (pretraining,
    analyses, every fine-tuning at every budget) at ``rates`` (``pe_book.experiments.costs``), the
    seeds ``sources`` (the pilot's and other runners' stores) already hold under ``target``'s keys,
    and the seeds :func:`allocate` gives within ``budget`` hours. Raises ``MissingResult`` when the
    pilot is incomplete and ``ValueError`` when a cost has no measured rate."""
    from pe_book import tables
    from pe_book.chapters import common
    from pe_book.experiments import costs
    from pe_book.experiments.profiles import PAPER_VARIANTS
    from pe_book.verdicts import claims as paper
    from pe_book.verdicts.groups import score_groups, task_and_group_columns
    from pe_lib.data.tasks import get_task

    specs = {t: get_task(t) for t in target.profile.tasks}
    kinds = {t: s.meta.kind for t, s in specs.items()}
    groups = score_groups(specs)
    finetuned = common.finetuned_payloads(pilot, list(pilot.profile.variants), specs)
    scores = tables.per_seed_scores(tables.score_records(finetuned, kinds, "test"), groups)
    columns = task_and_group_columns(specs, groups)
    variance = {c: column_variance(scores, c) for c in columns}
    claims = paper.paper_claims(span_tasks=[t for t, k in kinds.items() if k == "span"])
    effects = planned_effects(claims, scores)

    def hours(variant: str, tasks: Sequence[str], pretraining: bool) -> float:
        parts = [a for steps in target.profile.pretrain.budgets for a in target.model_plan(variant, 0, steps, list(tasks))
                 if pretraining or not a.stage.startswith("pretrain")]
        seconds = [costs.artifact_seconds(target, a, rates, checkpoints=False) for a in parts]
        unknown = sorted({a.stage.split("-p")[0] for a, s in zip(parts, seconds) if math.isnan(s)})
        if unknown:
            raise ValueError(f"no measured rate for {', '.join(unknown)}: price the design from a store that computed them")
        return sum(seconds) / 3600

    base = {v: hours(v, [], True) for v in PAPER_VARIANTS}  # pretraining, analyses, extrapolation
    per_seed_hours = {t: (hours("ape-learned", [t], False) - hours("ape-learned", [], False))
                      / len(target.profile.seeds_for(t)) for t in specs}  # one fine-tuning seed, every budget
    f_seeds = {t: finetune_seeds(variance[t], base["ape-learned"], per_seed_hours[t]) for t in specs}
    model_hours = {v: base[v] + sum(f_seeds[t] * per_seed_hours[t] for t in specs) for v in PAPER_VARIANTS}
    f_seeds |= {g: min(f_seeds[t] for t in ts) for g, ts in groups.items() if len(ts) > 1}
    have = {v: held_seeds(target, v, sources) for v in PAPER_VARIANTS}
    plan = allocate(claims, PAPER_VARIANTS, model_hours, budget, f_seeds, variance, effects, have)
    return {"profile": target.profile.name, "folder": target.profile.results_folder, "budget_hours": budget,
            "steps": target.profile.pretrain.steps, "budgets": list(target.profile.pretrain.budgets),
            "tokens": target.profile.pretrain.steps * target.profile.pretrain.batch_size * target.profile.seq_len,
            "tasks": list(specs), "test_examples": {t: max(p["test_examples"] for (_, task, _, _), p in finetuned.items()
                                                           if task == t) for t in specs},
            "pretrain_seeds": plan["seeds"], "finetune_seeds": {t: f_seeds[t] for t in specs},
            "hours": plan["hours"], "model_hours": model_hours, "held": have,
            "variance": {c: vars(v) for c, v in variance.items()},
            "claims": [{"claim": c.key, "text": c.text, "planned effect": effects[c.key], "power": plan["power"][c.key]}
                       for c in claims],
            "pilot": {"profile": pilot.profile.name, "folder": pilot.profile.results_folder,
                      "variants": list(pilot.profile.variants), "models": len({k[::2] for k in finetuned})},
            "power_target": POWER, "runs": RUNS}


def held_seeds(target, variant: str, sources: Sequence) -> int:
    """How many of ``variant``'s first pretraining seeds have their final pretraining stored under
    ``target``'s keys in one of the stores of ``sources`` (:class:`~pe_book.experiments.results.Results`),
    counting from seed 0."""
    steps, n = target.profile.pretrain.steps, 0
    while any(s.stored(target.pretrain_place(variant, n, steps)) is not None for s in sources):
        n += 1
    return n
