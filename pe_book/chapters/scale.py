"""Chapter "The scale study" (13): at which pretraining budget do position embeddings start to matter?

Every model of a profile is evaluated at each budget its run keeps (``PretrainConfig.budgets``:
the snapshots of an anytime schedule, then the last step). This module reads what the store holds,
never computes a model (a study runs for hours, in chunks; the chapter shows what is finished), and
decides three criteria at each budget, all from the data:

(a) ``ape-learned`` beats ``none`` on validation MLM loss beyond the pretraining-seed spread: with
    at least two pretraining seeds each, every ``ape-learned`` seed has a lower loss than every
    ``none`` seed (the ranges do not overlap). With one seed each it is not decidable.
(b) the learned APE's trained dot-product map P P^T shows the diagonal: the mean over seeds of its
    ``monotonicity`` and of its ``monotonicity_local`` (offsets 1..``ANALYSIS_WINDOW``) are both at least
    :data:`DIAGONAL_THRESHOLD`. Random Gaussian tables of the same shape score 0.00 +- 0.04 on both
    (largest |value| of 40 draws 0.085); a fixed sinusoid scores 0.99 and 1.00.
(c) the best variant's classification average beats the best constant predictor's by at least
    :data:`CHANCE_MARGIN` points on the test split, the best variant chosen on the validation split
    (no selection on the test data); the bag-of-words baseline is reported beside it.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from pe_book.chapters import common
from pe_book.experiments import adopt, costs
from pe_book.experiments.baselines import task_score
from pe_book.experiments.profiles import Profile
from pe_book.experiments.results import Results
from pe_lib.data.tasks import get_task
from pe_lib.positions import resolve_variants
from pe_lib.training.finetune import FinetuneConfig

#: Criterion (b): both diagonal indicators of the learned APE's P P^T at least this.
DIAGONAL_THRESHOLD = 0.2
#: Criterion (c): points above the best constant predictor's classification average.
CHANCE_MARGIN = 10.0
#: The variants criteria (a) and (b) compare.
APE, NO_PE = "ape-learned", "none"
#: The cpu profile's limit: its whole run, on the 2-core machine (issue 14).
CPU_HOURS = 10.0
#: The study's variants (those a profile has are its default).
STUDY_VARIANTS = (NO_PE, APE, "rpe-learned", "ape-sin-learned")


class Change(NamedTuple):
    """A fine-tuning setting in which the cpu profile departs from the study on a task."""

    setting: str  # a field of FinetuneConfig, e.g. "epochs"
    cpu: Any  # the cpu profile's value
    study: Any  # the study's value


class Precision(NamedTuple):
    """The precisions of a cpu profile that departs from the study's in them."""

    pretraining: str  # the cpu profile's, for pretraining
    finetuning: str  # the cpu profile's, for fine-tuning
    study: str  # the study's, for pretraining
    study_ran_in: str  # what the study's models ran in where the study let the machine choose ("auto"); else ""


@dataclass
class Departures:
    """How the cpu profile trains unlike the study apart from its length (all empty: the study's
    recipe stopped at the cpu profile's budget)."""

    settings: list[str] = field(default_factory=list)  # whole settings that differ ("model", "corpus", "pretraining", ...)
    finetuning: dict[str, list[Change]] = field(default_factory=dict)  # task -> its fine-tuning overrides that differ
    precision: Precision | None = None  # None: the same precisions as the study
    caps: tuple[dict, dict] | None = None  # the cpu profile's and the study's caps on training examples (caps_by_value)


@dataclass
class SharedModels:
    """The models the study and the cpu profile both hold at the cpu budget (the same variant and
    pretraining seed)."""

    trained_twice: int  # both trained it: two runs of one recipe
    same_loss: int  # of those, how many have the same validation loss to the last bit
    largest_gap: float  # the largest |difference| of their validation losses (nats; NaN when none was trained twice)
    taken: int  # one took the other's artifact (``pe-book adopt``: created once, not a second run)


@dataclass
class Spending:
    """What the cpu profile's run has cost so far and what the rest will, in hours of this machine type."""

    stored: int  # artifacts stored
    planned: int  # artifacts of the whole run
    spent_hours: float  # the stored artifacts' recorded wall times
    rest_hours: float  # the rest at the rates the cpu profile's own artifacts measured (the study's where it has none)
    unpriced: int  # artifacts of the rest without a measured rate
    total_hours: float  # spent_hours + rest_hours


@dataclass
class CpuChoice:
    """The cpu profile's budget among the study's: the verdicts there, the study's smaller budgets,
    its recipe's departures and the models both trained."""

    steps: int
    tokens: int
    study_verdicts: dict | None  # the study's (a), (b), (c) at this budget: True, False or None; None: not a budget it stores
    own_verdicts: dict | None  # the same on the cpu profile's own models; None: none stored yet
    a_chance: float  # the chance that (a) passes on the cpu profile's seeds with no true difference
    unmet_below: dict[int, list[str]]  # each smaller budget of the study (tokens) -> the criteria that do not hold there
    departures: Departures
    shared: SharedModels | None  # None: no model of the cpu profile is stored yet


@dataclass
class ScaleStudy:
    """What a profile's store holds of the study, and the criteria at each budget."""

    models: pd.DataFrame  # one row per stored model: variant, pretrain_seed, steps, tokens, loss, indicators, scores
    criteria: pd.DataFrame  # one row per budget: tokens, a/b/c (True, False or None = not decidable), their numbers
    unigram_loss: float  # validation loss of a unigram model on the same masked tokens
    constant: float  # the best constant predictor's classification average (test, percent)
    bag_of_words: float  # the bag-of-words baseline's classification average (test, percent)
    stored: int  # artifacts of the study found in the store
    planned: int  # artifacts the profile's run computes in all
    smallest_budget: int | None  # the fewest tokens at which (a), (b) and (c) all hold (None: at none)
    variants: list[str] = field(default_factory=list)  # the variants studied
    tasks: list[str] = field(default_factory=list)  # the tasks of the classification average
    budget_tokens: list[int] = field(default_factory=list)  # the tokens of every kept budget, stored or not
    cpu_costs: pd.DataFrame | None = None  # what the cpu profile would cost at each budget (cpu_costs)
    cpu_models: pd.DataFrame | None = None  # the cpu profile's own stored models (collect)
    cpu_criteria: pd.DataFrame | None = None  # the criteria on them (its one budget)
    cpu_choice: CpuChoice | None = None  # its budget and recipe against the study's (cpu_choice)
    cpu_spending: Spending | None = None  # what its run costs (cpu_spending)
    cited: dict = field(default_factory=dict)  # the numbers the prose cites, by glue name


def collect(runner: Results, variants: Sequence[str], tasks: Sequence[str]) -> pd.DataFrame:
    """One row per stored pretrained model (variant, pretraining seed, budget): tokens, validation
    loss, the learned APE's indicators (NaN without one), averaged over the stored fine-tuning
    seeds the classification average on the validation and test splits (NaN when none is stored),
    and when its pretraining artifact was created (a copy taken by ``pe-book adopt`` keeps it)."""
    profile = runner.profile
    tokens_per_step = profile.pretrain.batch_size * profile.seq_len
    rows = []
    for variant, p, steps in runner.models(list(variants)):
        pre = runner.stored(runner.pretrain_place(variant, p, steps))
        if pre is None:
            continue
        analysis = runner.stored(runner.analysis_place(variant, p, steps))
        ape = (analysis.payload["trained"].get("ape", {}) if analysis is not None else {})
        row = {"variant": variant, "pretrain_seed": p, "steps": steps, "tokens": steps * tokens_per_step,
               "validation_loss": pre.payload["result"]["validation_loss"], "created": pre.provenance["created"],
               "monotonicity": ape.get("monotonicity", math.nan),
               "monotonicity_local": ape.get("monotonicity_local", math.nan)}
        row.update(classification_average(runner, variant, p, steps, tasks))
        rows.append(row)
    columns = ["variant", "pretrain_seed", "steps", "tokens", "validation_loss", "monotonicity", "monotonicity_local",
               "classification_validation", "classification_test", "finetune_seeds", "created"]
    return pd.DataFrame(rows, columns=columns)


def classification_average(runner: Results, variant: str, p: int, steps: int, tasks: Sequence[str]) -> dict:
    """Mean over the fine-tuning seeds stored for every task of the mean task score (percent)."""
    by_seed = {"validation": [], "test": []}
    for seed in runner.profile.seeds:
        found = [runner.stored(runner.finetune_place(variant, task, seed, p, steps)) for task in tasks]
        if tasks and all(f is not None for f in found):
            for split in by_seed:
                by_seed[split].append(np.mean([100.0 * task_score(f.payload[split]) for f in found]))
    return {"classification_validation": float(np.mean(by_seed["validation"])) if by_seed["validation"] else math.nan,
            "classification_test": float(np.mean(by_seed["test"])) if by_seed["test"] else math.nan,
            "finetune_seeds": len(by_seed["test"])}


def baseline_average(runner: Results, tasks: Sequence[str], name: str) -> float:
    """The test classification average (percent) of a stored baseline (``constant``, ``bag of
    words``); NaN unless it is stored for every task."""
    found = [runner.stored(runner.baselines_place(t)) for t in tasks]
    if not tasks or any(f is None for f in found):
        return math.nan
    return float(np.mean([100.0 * task_score(f.payload["baselines"][name]["test"]) for f in found]))


def unigram_loss(runner: Results) -> float:
    """The stored unigram validation loss (NaN when it is not stored yet)."""
    found = runner.stored(runner.unigram_place())
    return float(found.payload["validation_loss"]) if found is not None else math.nan


def separation_chance(n_a: int, n_b: int) -> float:
    """The chance that ``n_a`` seeds all fall below ``n_b`` seeds when both come from one
    distribution (no true difference): ``n_a! n_b! / (n_a + n_b)!``, the false-positive rate of
    criterion (a) (1/6 with two seeds each, 1/20 with three)."""
    return math.factorial(n_a) * math.factorial(n_b) / math.factorial(n_a + n_b)


def criteria_at(models: pd.DataFrame, constant: float, bag_of_words: float = math.nan) -> dict:
    """Criteria (a), (b), (c) on the models of one budget (None: not decidable from what is stored),
    with the best variant's classification average against the ``bag_of_words`` baseline's beside (c)."""
    loss = {v: models.loc[models.variant == v, "validation_loss"] for v in (APE, NO_PE)}
    ape = models[models.variant == APE]
    decided_a = len(loss[APE]) >= 2 and len(loss[NO_PE]) >= 2
    scored = models.dropna(subset=["classification_validation", "classification_test"])
    means = scored.groupby("variant")[["classification_validation", "classification_test"]].mean()
    best = means["classification_validation"].idxmax() if len(means) else None
    mono = (float(ape["monotonicity"].mean()), float(ape["monotonicity_local"].mean())) if len(ape) else (math.nan,) * 2
    best_test = float(means.loc[best, "classification_test"]) if best is not None else math.nan
    return {
        "loss_gap": float(loss[APE].mean() - loss[NO_PE].mean()) if len(loss[APE]) and len(loss[NO_PE]) else math.nan,
        "a": bool(loss[APE].max() < loss[NO_PE].min()) if decided_a else None,
        "a_null_rate": separation_chance(len(loss[APE]), len(loss[NO_PE])) if decided_a else math.nan,
        "monotonicity": mono[0], "monotonicity_local": mono[1],
        "b": bool(min(mono) >= DIAGONAL_THRESHOLD) if not any(map(math.isnan, mono)) else None,
        "best_variant": best,
        "best_classification": best_test,
        "c": bool(best_test - constant >= CHANCE_MARGIN) if best is not None and not math.isnan(constant) else None,
        "minus_bag_of_words": best_test - bag_of_words,
    }


def criteria_table(models: pd.DataFrame, constant: float, bag_of_words: float = math.nan) -> pd.DataFrame:
    """Criteria (a)-(c) at each budget of ``models`` (:func:`collect`), one row per budget, against
    the best constant predictor's classification average ``constant``, with the best variant's
    average minus the ``bag_of_words`` baseline's (``minus_bag_of_words``)."""
    rows = [{"steps": steps, "tokens": int(group.tokens.iloc[0]), **criteria_at(group, constant, bag_of_words)}
            for steps, group in models.groupby("steps", sort=True)]
    return pd.DataFrame(rows, columns=["steps", "tokens", "loss_gap", "a", "a_null_rate", "monotonicity", "monotonicity_local", "b",
                                       "best_variant", "best_classification", "c", "minus_bag_of_words"])


def compute(runner: Results, variants: Sequence[str] = (), tasks: Sequence[str] = (), cpu: Results | None = None) -> ScaleStudy:
    """The scale study of ``runner``'s profile over ``variants`` (default: those of
    :data:`STUDY_VARIANTS` the profile has; criteria (a) and (b) need ``ape-learned`` and
    ``none``) and the sentence-level ``tasks`` (default: the profile's). With ``cpu``, a runner of
    the profile the study chooses for: what it would cost at each budget (:func:`cpu_costs`), its
    budget and recipe against the study's (:func:`cpu_choice`), the criteria on its own stored
    models, and what its run costs (:func:`cpu_spending`). Reads the stores only."""
    names = resolve_variants(variants, [v for v in STUDY_VARIANTS if v in runner.profile.variants])
    tasks = list(common.chapter_tasks(tasks, runner.profile.tasks, span=False))
    models = collect(runner, names, tasks)
    constant, bag_of_words = baseline_average(runner, tasks, "constant"), baseline_average(runner, tasks, "bag of words")
    criteria = criteria_table(models, constant, bag_of_words)
    passing = criteria[(criteria.a == True) & (criteria.b == True) & (criteria.c == True)]  # noqa: E712 (None stays out)
    planned = [a for a in runner.plan(names, tasks) if a.variant != Results.BASELINES]
    cfg = runner.profile.pretrain
    study = ScaleStudy(
        models=models, criteria=criteria, unigram_loss=unigram_loss(runner),
        constant=constant, bag_of_words=bag_of_words,
        stored=sum(a.stored for a in planned), planned=len(planned),
        smallest_budget=int(passing.tokens.min()) if len(passing) else None,
        variants=names, tasks=tasks, budget_tokens=[s * cfg.batch_size * runner.profile.seq_len for s in cfg.budgets],
    )
    study.cited = {**recipe(runner, names[0]), "stored": study.stored, "planned": study.planned,
                   "threshold": DIAGONAL_THRESHOLD, "margin": CHANCE_MARGIN, "unigram_loss": study.unigram_loss,
                   "constant": study.constant, "bag_of_words": study.bag_of_words}
    if cpu is not None:
        study.cpu_costs = cpu_costs(runner, cpu.profile)
        study.cpu_models = collect(cpu, [v for v in names if v in cpu.profile.variants], tasks)
        study.cpu_criteria = criteria_table(study.cpu_models, baseline_average(cpu, tasks, "constant"),
                                            baseline_average(cpu, tasks, "bag of words"))
        study.cpu_choice = cpu_choice(study, runner.profile, cpu.profile, runner.stored_precision())
        study.cpu_spending = cpu_spending(runner, cpu)
        study.cited.update(cpu_hours=CPU_HOURS, cpu_a_chance=study.cpu_choice.a_chance)
    return study


def cpu_choice(study: ScaleStudy, study_profile: Profile, cpu: Profile, ran_in: str = "") -> CpuChoice:
    """The cpu profile's budget among the study's: the study's verdicts there and on the cpu
    profile's own models (``study.cpu_criteria``), the criteria unmet at the study's smaller
    budgets, the recipe's departures from the study's (whose models ran in the precision
    ``ran_in``), and the models both trained."""
    tokens = cpu.pretrain.steps * cpu.pretrain.batch_size * cpu.seq_len
    own = study.cpu_criteria if study.cpu_criteria is not None else pd.DataFrame()
    seeds = {v: len(cpu.pretrain_seeds_for(v)) for v in (APE, NO_PE)}
    return CpuChoice(steps=cpu.pretrain.steps, tokens=tokens,
                     study_verdicts=verdicts(study.criteria[study.criteria.tokens == tokens]),
                     own_verdicts=verdicts(own), a_chance=separation_chance(seeds[APE], seeds[NO_PE]),
                     unmet_below=unmet_below(study.criteria, tokens),
                     departures=recipe_departures(study_profile, cpu, ran_in),
                     shared=shared_models(study.models, study.cpu_models, tokens))


def verdicts(criteria: pd.DataFrame) -> dict | None:
    """Criteria (a), (b), (c) of the first row of a :func:`criteria_table` (True, False or None:
    not decidable); None when it has no row."""
    if not len(criteria):
        return None
    row = criteria.iloc[0]
    return {key: None if row[key] is None else bool(row[key]) for key in ("a", "b", "c")}


def unmet_below(criteria: pd.DataFrame, tokens: int) -> dict[int, list[str]]:
    """The criteria that fail or are not decidable at each budget of ``criteria`` below
    ``tokens``: tokens -> ["a", ...] (empty where all three hold), smallest budget first."""
    below = criteria[criteria.tokens < tokens].sort_values("tokens")
    return {int(row.tokens): [key for key in ("a", "b", "c") if row[key] is None or not bool(row[key])]
            for _, row in below.iterrows()}


def cpu_spending(runner: Results, cpu: Results) -> Spending:
    """What the cpu profile's run has cost so far (its stored artifacts' recorded wall hours) and
    what the rest will, at the rates its own artifacts measured (the study's, ``runner``'s store,
    where it has measured none yet)."""
    planned = cpu.plan()
    rates = costs.with_fallback(costs.measured_rates(cpu.store), costs.measured_rates(runner.store))
    rest = costs.estimate(cpu, planned, rates, checkpoints=False).loc["total"]
    spent = costs.spent_hours(cpu.store)
    return Spending(stored=sum(a.stored for a in planned), planned=len(planned), spent_hours=spent,
                    rest_hours=float(rest["hours"]), unpriced=int(rest["unknown"]), total_hours=spent + float(rest["hours"]))


def shared_models(models: pd.DataFrame, cpu_models: pd.DataFrame | None, tokens: int) -> SharedModels | None:
    """The models the study and the cpu profile both hold at the cpu budget (same variant and
    pretraining seed), compared by validation loss: the same recipe and seed on machines of one
    type give the same bits. A model one took from the other (``pe-book adopt``: the same
    artifact, created once) is not a second run, and is counted apart. None when no model of the
    cpu profile is stored."""
    if cpu_models is None or not len(cpu_models):
        return None
    both = models[models.tokens == tokens].merge(cpu_models, on=["variant", "pretrain_seed"], suffixes=("_study", "_cpu"))
    taken = both.created_study == both.created_cpu
    gap = (both.validation_loss_study - both.validation_loss_cpu).abs()[~taken]
    return SharedModels(trained_twice=len(gap), same_loss=int((gap == 0).sum()),
                        largest_gap=float(gap.max()) if len(gap) else math.nan, taken=int(taken.sum()))


def recipe_departures(study: Profile, cpu: Profile, ran_in: str = "") -> Departures:
    """How ``cpu`` trains differently from ``study`` apart from its length (empty when it is the
    study's recipe stopped at its own budget); ``ran_in``: the precision the study's stored models
    ran in."""
    checks = {"model": (study.model, cpu.model), "sequence length": (study.seq_len, cpu.seq_len),
              "tokenizer": (study.tokenizer, cpu.tokenizer), "corpus": (study.corpus_tokens, cpu.corpus_tokens),
              "pretraining": (replace(study.pretrain, steps=1, snapshot_steps=(), precision="auto"),
                              replace(cpu.pretrain, steps=1, snapshot_steps=(), precision="auto")),
              "fine-tuning": (replace(study.finetune, precision="auto"), replace(cpu.finetune, precision="auto"))}
    departures = Departures(settings=[name for name, (a, b) in checks.items() if a != b])
    for task in (t for t in cpu.tasks if t in study.tasks):
        changes = _config_changes(study.finetune_for(task), cpu.finetune_for(task),
                                  set(study.finetune_by_task.get(task, {})) | set(cpu.finetune_by_task.get(task, {})))
        if changes:
            departures.finetuning[task] = changes
    if (study.pretrain.precision, study.finetune.precision) != (cpu.pretrain.precision, cpu.finetune.precision):
        departures.precision = Precision(cpu.pretrain.precision, cpu.finetune.precision, study.pretrain.precision,
                                         ran_in if study.pretrain.precision == "auto" else "")
    if any(cpu.max_train_for(t) != study.max_train_for(t) for t in cpu.tasks if t in study.tasks):
        departures.caps = (caps_by_value(cpu, cpu.tasks), caps_by_value(study, study.tasks))
    return departures


def _config_changes(study: FinetuneConfig, cpu: FinetuneConfig, names: set[str]) -> list[Change]:
    """The fields among ``names`` (a task's overrides) in which ``cpu`` fine-tunes the task unlike
    ``study`` (empty when alike)."""
    return [Change(f.name, getattr(cpu, f.name), getattr(study, f.name))
            for f in fields(FinetuneConfig) if f.name in names and getattr(cpu, f.name) != getattr(study, f.name)]


def caps_by_value(profile: Profile, tasks: Sequence[str]) -> dict[int | None, list[str]]:
    """A profile's caps on training examples: cap (None: all) -> the ``tasks`` it applies to, in
    the order of their first task."""
    by_cap: dict[int | None, list[str]] = {}
    for task in tasks:
        by_cap.setdefault(profile.max_train_for(task), []).append(task)
    return by_cap


def recipe(runner: Results, variant: str) -> dict:
    """The pretraining recipe the prose states: the settings every variant of the profile shares
    (read from ``variant``'s model config)."""
    cfg, model = runner.profile.pretrain, runner.model_config(variant)
    return {"schedule": cfg.schedule, "precision": cfg.precision, "layer_norm": model.layer_norm,
            "seq_len": runner.profile.seq_len, "lr": cfg.lr,
            "dropout": model.hidden_dropout_prob, "mask_prob": cfg.mask_prob,
            "position_init_std": model.position_init_std if model.position_init_std is not None
            else model.initializer_range}


def finetune_screen(path) -> pd.DataFrame:
    """The fine-tuning screen (``studies/finetune_screen/results.jsonl``): one row per variant,
    task and recipe, with the training examples and the test score (percent; the mean of the
    task's metrics)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return pd.DataFrame([{"recipe": recipe_label(r["recipe"]), "variant": r["variant"], "task": r["task"],
                          "training examples": r["train_examples"], "validation": task_percent(r["task"], r["validation"]),
                          "test": task_percent(r["task"], r["test"])} for r in rows])


_E_NOTATION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)e([+-]?)0*(\d+)(?![\w.])")
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def recipe_label(recorded: str) -> str:
    """A screen's recipe name as the prose writes its numbers: "lr 3e-4" as "lr 3·10⁻⁴", "lr 1e-3"
    as "lr 10⁻³" (the recorded names, in ``studies/``, keep their e-notation)."""
    def power(match: re.Match) -> str:
        mantissa, sign, exponent = match.groups()
        ten = "10" + (("-" if sign == "-" else "") + exponent).translate(_SUPERSCRIPT)
        return ten if mantissa in ("1", "1.0") else f"{mantissa}·{ten}"

    return _E_NOTATION.sub(power, recorded)


def epochs_screen(paths: Sequence, cpu: Results) -> pd.DataFrame:
    """The screens of more fine-tuning epochs (:func:`finetune_screen` of each file in ``paths``),
    with the ``cpu`` profile's own stored runs of the same variants on the screened tasks whose
    recipe it kept (the tasks it does not fine-tune differently)."""
    screen = pd.concat([finetune_screen(path) for path in paths], ignore_index=True)
    kept = [t for t in sorted(set(screen.task)) if t not in cpu.profile.finetune_by_task]
    return beside_stored(screen, cpu, cpu.profile.pretrain.steps,
                         f"{cpu.profile.finetune.epochs} epochs (the {cpu.profile.name} profile)", kept)


def task_percent(task: str, values: dict) -> float:
    """A task's score in percent (:func:`task_score`; a span task's metrics are percentages already)."""
    return task_score(values) * (1.0 if get_task(task).meta.kind == "span" else 100.0)


def beside_stored(screen: pd.DataFrame, runner: Results, steps: int, recipe: str,
                  tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """A screen's rows (:func:`finetune_screen`) followed by ``runner``'s stored fine-tunings at
    ``steps`` of the screen's variants on ``tasks`` (default: the screen's), named ``recipe``."""
    tasks = sorted(set(screen.task)) if tasks is None else tasks
    own = stored_finetunings(runner, sorted(set(screen.variant)), tasks, steps, recipe)
    return pd.concat([screen, own], ignore_index=True) if len(own) else screen


def stored_finetunings(runner: Results, variants: Sequence[str], tasks: Sequence[str], steps: int, recipe: str) -> pd.DataFrame:
    """The stored fine-tunings (pretraining seed 0, fine-tuning seed 0) of ``variants`` at ``steps``
    as rows of :func:`finetune_screen` named ``recipe``, to set a profile's own runs beside a screen's
    (none when the profile keeps no model at ``steps``)."""
    columns = ["recipe", "variant", "task", "training examples", "validation", "test"]
    if steps not in runner.profile.pretrain.budgets:
        return pd.DataFrame(columns=columns)
    rows = []
    for variant in variants:
        for task in tasks:
            found = runner.stored(runner.finetune_place(variant, task, 0, 0, steps))
            if found is not None:
                rows.append({"recipe": recipe, "variant": variant, "task": task,
                             "training examples": found.payload["train_examples"],
                             "validation": task_percent(task, found.payload["validation"]),
                             "test": task_percent(task, found.payload["test"])})
    return pd.DataFrame(rows, columns=columns)


#: The study's own recipe, as the cpu fine-tuning screen's last row.
STUDY_FINETUNING = "2 epochs, 10,000 examples (the study)"


def cpu_finetune_screen(path, runner: Results, steps: int) -> pd.DataFrame:
    """The fine-tuning screen on the cpu profile's models (``studies/finetune_screen/results-cpu.jsonl``)
    with the study's own fine-tunings of the same models at ``steps`` (sst2, mrpc, stsb) beside it."""
    return beside_stored(finetune_screen(path), runner, steps, STUDY_FINETUNING)


#: The column names of the study's tables (:attr:`Study.models`, :attr:`Study.criteria`), as the
#: chapter shows them; a soft hyphen lets a long heading break in a narrow column.
LABELS = {"pretrain_seed": "seed", "validation_loss": "validation loss", "monotonicity": "mono\u00adtonicity",
          "monotonicity_local": "local mono\u00adtonicity", "classification_validation": "average (validation)",
          "classification_test": "average (test)", "finetune_seeds": "fine-tuning seeds",
          "a": "(a)", "b": "(b)", "c": "(c)", "loss_gap": "loss: ape-learned − none", "a_null_rate": "(a) by chance",
          "best_variant": "best variant (validation)", "best_classification": "its test average",
          "minus_bag_of_words": "its average − bag of words"}

#: The recipe settings of a screen run shown beside its result (``args`` of ``studies/recipe_screen/*.json``).
SCREEN_SETTINGS = {"seq": "sequence", "lr": "peak lr", "sched": "schedule", "warmup": "warm-up", "preln": "pre-LN",
                   "dropout": "dropout", "mask": "masking", "pe_init": "position init std", "pe_lr_mult": "position lr x",
                   "sin_scale": "sinusoid scale"}


def recipe_screen(folder) -> pd.DataFrame:
    """The recipe screen's runs (``studies/recipe_screen/*.json``), one row per run and variant:
    the recipe, the tokens seen, the validation loss against the unigram loss on the same masked
    tokens, and the learned APE's indicators where the variant has one."""
    rows = []
    for path in sorted(Path(folder).glob("*.json")):
        run = json.loads(path.read_text())
        settings = {label: run["args"].get(key) for key, label in SCREEN_SETTINGS.items()}
        if settings["position init std"] is None:  # the screen's default: like every other weight
            settings["position init std"] = run["args"]["init"]
        for variant, result in run["variants"].items():
            final = result["final"]
            rows.append({"run": path.stem, "variant": variant, **settings, "tokens (M)": final["tokens"] / 1e6,
                         "validation loss": final["val"], "unigram loss": run["unigram"],
                         "APE monotonicity": final.get("mono", math.nan),
                         "APE local monotonicity": final.get("mono_local", math.nan)})
    return pd.DataFrame(rows)


def finetune_screen_table(screen: pd.DataFrame) -> pd.DataFrame:
    """The fine-tuning screen as a table (rows: recipes; columns: each task's test score per
    variant and its training examples)."""
    scores = screen.pivot_table(index="recipe", columns=["task", "variant"], values="test", sort=False)
    examples = screen.groupby(["recipe", "task"], sort=False)["training examples"].first().unstack()
    examples.columns = pd.MultiIndex.from_tuples([(task, "training examples") for task in examples.columns])
    return pd.concat([scores, examples], axis=1).sort_index(axis=1, level=0, sort_remaining=False)


def best_per_task(screen: pd.DataFrame) -> pd.DataFrame:
    """The run of a fine-tuning screen (:func:`finetune_screen`) with the best test score on each
    task, one row per task (by name)."""
    return screen.loc[screen.groupby("task")["test"].idxmax()]


def cpu_candidate(study: Profile, cpu: Profile, steps: int) -> Profile:
    """The cpu profile as the study's recipe at ``steps``: the study's model, data and training, with
    the cpu profile's variants, tasks and seeds, fine-tuned on as many examples as the study."""
    return replace(study, name=cpu.name, description=cpu.description, variants=cpu.variants, tasks=cpu.tasks,
                   finetune_by_task=cpu.finetune_by_task, seeds=cpu.seeds, pretrain_seeds=cpu.pretrain_seeds,
                   pretrain_seeds_by_variant=cpu.pretrain_seeds_by_variant,
                   pretrain=replace(study.pretrain, steps=steps, snapshot_steps=()))


def cpu_costs(runner: Results, cpu: Profile) -> pd.DataFrame:
    """What the cpu profile would cost as the study's recipe at each of the study's budgets, in
    hours of this machine type at the rates the study's stored artifacts measured
    (:mod:`pe_book.experiments.costs`): what the study already holds under the same key (its
    models and their analyses, which ``pe-book adopt`` takes) counts nothing."""
    rates = costs.measured_rates(runner.store)
    held = adopt.stored_by_key(runner)
    rows = []
    for steps in runner.profile.pretrain.budgets:
        candidate = runner.with_profile(cpu_candidate(runner.profile, cpu, steps))
        planned = [replace(a, stored=a.stored or (a.variant, adopt.artifact_key(a.folder)) in held) for a in candidate.plan()]
        table = costs.estimate(candidate, planned, rates, checkpoints=False)
        hours = table["hours"]
        rows.append({"steps": steps, "tokens": steps * runner.profile.pretrain.batch_size * runner.profile.seq_len,
                     "pretraining (h)": hours.get("pretrain", 0.0), "fine-tuning (h)": hours.get("finetune", 0.0),
                     "total (h)": hours["total"], "held by the study": sum(a.stored for a in planned),
                     "to compute": int(table.loc["total", "to compute"]),
                     "without a measured rate": int(table.loc["total", "unknown"])})
    return pd.DataFrame(rows)


def largest_affordable(table: pd.DataFrame, hours: float = CPU_HOURS) -> pd.Series | None:
    """The row of the largest budget of a :func:`cpu_costs` table whose known cost fits ``hours``
    (None: none fits)."""
    fits = table[table["total (h)"] <= hours]
    return fits.iloc[-1] if len(fits) else None
