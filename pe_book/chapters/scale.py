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
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import pandas as pd

from pe_book.chapters import common
from pe_book.experiments import adopt, costs
from pe_book.experiments.baselines import task_score
from pe_book.experiments.profiles import Profile
from pe_book.experiments.runner import Runner, stage_name
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
    cited: dict = field(default_factory=dict)  # the numbers and phrases the prose cites, by glue name


def collect(runner: Runner, variants: Sequence[str], tasks: Sequence[str]) -> pd.DataFrame:
    """One row per stored pretrained model (variant, pretraining seed, budget): tokens, validation
    loss, the learned APE's indicators (NaN without one), averaged over the stored fine-tuning
    seeds the classification average on the validation and test splits (NaN when none is stored),
    and when its pretraining artifact was created (a copy taken by ``pe-book adopt`` keeps it)."""
    profile = runner.profile
    tokens_per_step = profile.pretrain.batch_size * profile.seq_len
    rows = []
    for variant, p, steps in runner.models(list(variants)):
        at = runner.snapshot(steps)
        pre = runner.store.load(variant, stage_name("pretrain", p, snapshot=at), runner.pretrain_config(variant, p, steps))
        if pre is None:
            continue
        analysis = runner.store.load(variant, stage_name("analysis", p, snapshot=at),
                                     runner.analysis_config(variant, p, steps))
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


def classification_average(runner: Runner, variant: str, p: int, steps: int, tasks: Sequence[str]) -> dict:
    """Mean over the fine-tuning seeds stored for every task of the mean task score (percent)."""
    at = runner.snapshot(steps)
    by_seed = {"validation": [], "test": []}
    for seed in runner.profile.seeds:
        found = [runner.store.load(variant, stage_name("finetune", p, task, f"seed{seed}", snapshot=at),
                                   runner.finetune_config(variant, task, seed, p, steps)) for task in tasks]
        if tasks and all(f is not None for f in found):
            for split in by_seed:
                by_seed[split].append(np.mean([100.0 * task_score(f.payload[split]) for f in found]))
    return {"classification_validation": float(np.mean(by_seed["validation"])) if by_seed["validation"] else math.nan,
            "classification_test": float(np.mean(by_seed["test"])) if by_seed["test"] else math.nan,
            "finetune_seeds": len(by_seed["test"])}


def baseline_average(runner: Runner, tasks: Sequence[str], name: str) -> float:
    """The test classification average (percent) of a stored baseline (``constant``, ``bag of
    words``); NaN unless it is stored for every task."""
    found = [runner.store.load(Runner.BASELINES, f"baselines-{t}", runner.baselines_config(t)) for t in tasks]
    if not tasks or any(f is None for f in found):
        return math.nan
    return float(np.mean([100.0 * task_score(f.payload["baselines"][name]["test"]) for f in found]))


def unigram_loss(runner: Runner) -> float:
    """The stored unigram validation loss (NaN when it is not stored yet)."""
    found = runner.store.load(Runner.BASELINES, "unigram", runner.unigram_config())
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


def compute(runner: Runner, variants: Sequence[str] = (), tasks: Sequence[str] = (), cpu: Runner | None = None) -> ScaleStudy:
    """The scale study of ``runner``'s profile over ``variants`` (default: those of
    :data:`STUDY_VARIANTS` the profile has; criteria (a) and (b) need ``ape-learned`` and
    ``none``) and the sentence-level ``tasks`` (default: the profile's). With ``cpu``, a runner of
    the profile the study chooses for: what it would cost at each budget (:func:`cpu_costs`), its
    budget and recipe against the study's (:func:`cpu_choice`), and the criteria on its own
    stored models. Reads the stores only."""
    names = resolve_variants(variants, [v for v in STUDY_VARIANTS if v in runner.profile.variants])
    tasks = list(common.chapter_tasks(tasks, runner.profile.tasks, span=False))
    models = collect(runner, names, tasks)
    constant, bag_of_words = baseline_average(runner, tasks, "constant"), baseline_average(runner, tasks, "bag of words")
    criteria = criteria_table(models, constant, bag_of_words)
    passing = criteria[(criteria.a == True) & (criteria.b == True) & (criteria.c == True)]  # noqa: E712 (None stays out)
    planned = [a for a in runner.plan(names, tasks) if a.variant != Runner.BASELINES]
    cfg = runner.profile.pretrain
    study = ScaleStudy(
        models=models, criteria=criteria, unigram_loss=unigram_loss(runner),
        constant=constant, bag_of_words=bag_of_words,
        stored=sum(a.stored for a in planned), planned=len(planned),
        smallest_budget=int(passing.tokens.min()) if len(passing) else None,
        variants=names, tasks=tasks, budget_tokens=[s * cfg.batch_size * runner.profile.seq_len for s in cfg.budgets],
    )
    study.cited = {"study_variants": ", ".join(names), "study_tasks": ", ".join(tasks), **recipe(runner, names[0]),
                   "stored": study.stored, "planned": study.planned,
                   "budgets": ", ".join(f"{t:,}" for t in study.budget_tokens),
                   "threshold": DIAGONAL_THRESHOLD, "margin": CHANCE_MARGIN, "unigram_loss": study.unigram_loss,
                   "constant": study.constant, "bag_of_words": study.bag_of_words,
                   "smallest_budget": "none of the stored budgets" if study.smallest_budget is None
                   else f"{study.smallest_budget / 1e6:.1f} million tokens"}
    if cpu is not None:
        study.cpu_costs = cpu_costs(runner, cpu.profile)
        study.cpu_models = collect(cpu, [v for v in names if v in cpu.profile.variants], tasks)
        study.cpu_criteria = criteria_table(study.cpu_models, baseline_average(cpu, tasks, "constant"),
                                            baseline_average(cpu, tasks, "bag of words"))
        study.cited.update(cpu_hours=CPU_HOURS, cpu_affordable=largest_affordable(study.cpu_costs),
                           cpu_spending=cpu_spending(runner, cpu),
                           **cpu_choice(study, runner.profile, cpu.profile, runner.stored_precision()))
    return study


def cpu_choice(study: ScaleStudy, study_profile: Profile, cpu: Profile, ran_in: str = "") -> dict:
    """The cited phrases of the cpu profile's choice: its budget, where that budget stands among
    the study's, the study's verdict on each criterion there, the recipe's departures from the
    study's (whose models ran in the precision ``ran_in``), and the verdicts on the cpu
    profile's own models (``study.cpu_criteria``)."""
    tokens = cpu.pretrain.steps * cpu.pretrain.batch_size * cpu.seq_len
    at = study.criteria[study.criteria.tokens == tokens]
    own = study.cpu_criteria if study.cpu_criteria is not None else pd.DataFrame()
    smallest = study.smallest_budget
    if smallest is None:
        standing = "no stored budget of the study meets all three criteria"
    elif tokens == smallest:
        standing = "the smallest budget of the study at which all three criteria hold"
    else:
        side = "below" if tokens < smallest else "above"
        standing = f"{side} the smallest budget of the study at which all three criteria hold ({smallest / 1e6:.1f} million tokens)"
    seeds = {v: len(cpu.pretrain_seeds_for(v)) for v in (APE, NO_PE)}
    cited = {"cpu_name": cpu.name, "cpu_tokens": f"{tokens / 1e6:.1f} million tokens ({cpu.pretrain.steps:,} steps)",
             "cpu_standing": standing, "cpu_recipe": recipe_departures(study_profile, cpu, ran_in),
             "cpu_seeds": common.seed_design(cpu, list(cpu.variants)),
             "cpu_a_chance": f"{separation_chance(seeds[APE], seeds[NO_PE]):.3f}"}
    for key in ("a", "b", "c"):
        cited[f"cpu_study_{key}"] = verdict(at[key].iloc[0]) if len(at) else "not a budget the study stores"
        cited[f"cpu_own_{key}"] = verdict(own[key].iloc[0]) if len(own) else "nothing stored yet"
    cited["cpu_shared"] = shared_models_text(study.models, study.cpu_models, tokens)
    cited["cpu_below"] = smaller_budgets_text(study.criteria, tokens)
    return cited


def smaller_budgets_text(criteria: pd.DataFrame, tokens: int) -> str:
    """The criteria the study fails at each of its budgets below ``tokens``, in words."""
    below = criteria[criteria.tokens < tokens].sort_values("tokens")
    if not len(below):
        return "the study stores no smaller budget"
    parts = []
    for _, row in below.iterrows():
        failed = [f"({key})" for key in ("a", "b", "c") if row[key] is None or not bool(row[key])]
        parts.append(f"at {row.tokens / 1e6:.1f} million tokens " + (f"it fails or cannot decide {', '.join(failed)}"
                                                                    if failed else "all three hold"))
    return "; ".join(parts)


def cpu_spending(runner: Runner, cpu: Runner) -> str:
    """What the cpu profile's run has cost so far and what the rest will, in words: its stored
    artifacts' recorded wall hours, and the hours of the rest at the rates its own artifacts
    measured (the study's, ``runner``'s store, where it has measured none yet)."""
    planned = cpu.plan()
    stored = sum(a.stored for a in planned)
    rates = costs.with_fallback(costs.measured_rates(cpu.store), costs.measured_rates(runner.store))
    rest = costs.estimate(cpu, planned, rates, checkpoints=False).loc["total"]
    unknown = f", and {int(rest['unknown'])} artifacts have no measured rate yet" if rest["unknown"] else ""
    spent = costs.spent_hours(cpu.store)
    total = spent + rest["hours"]
    against = f"{'within' if total <= CPU_HOURS else 'over'} the {CPU_HOURS:g} hours asked"
    if stored == len(planned):
        return f"{spent:.1f} hours for all {stored} artifacts (the sum of their recorded wall times), {against}"
    return (f"{spent:.1f} hours for the {stored} of {len(planned)} artifacts stored; the other "
            f"{len(planned) - stored} are estimated at {rest['hours']:.1f} hours (at the rates its own artifacts "
            f"measured, the study's where it has none yet){unknown}: {total:.1f} hours in all, {against}")


def shared_models_text(models: pd.DataFrame, cpu_models: pd.DataFrame | None, tokens: int) -> str:
    """The models the study and the cpu profile both trained (same variant and pretraining seed at
    the cpu budget), compared by validation loss, in words: the same recipe and seed on machines
    of one type give the same bits. A model one took from the other (``pe-book adopt``: the same
    artifact, created once) is not a second run, and is counted apart."""
    if cpu_models is None or not len(cpu_models):
        return "no model of the cpu profile is stored yet"
    keys = ["variant", "pretrain_seed"]
    both = models[models.tokens == tokens].merge(cpu_models, on=keys, suffixes=("_study", "_cpu"))
    if not len(both):
        return "the study and the cpu profile share no stored model at this budget yet"
    taken = both.created_study == both.created_cpu
    taken_text = f" ({int(taken.sum())} more the study took from the cpu profile)" if taken.any() else ""
    both = both[~taken]
    if not len(both):
        return "the study and the cpu profile trained no model twice at this budget yet" + taken_text
    gap = (both.validation_loss_study - both.validation_loss_cpu).abs()
    same = int((gap == 0).sum())
    return (f"{same} of the {len(both)} models that both trained (same variant and pretraining seed) have the same "
            f"validation loss to the last bit" + ("" if same == len(both) else f"; the largest difference is {gap.max():.2e} nats")
            + taken_text)


def recipe_departures(study: Profile, cpu: Profile, ran_in: str = "") -> str:
    """How ``cpu`` trains differently from ``study`` apart from its length, in words ("none" when
    it is the study's recipe stopped at its own budget); ``ran_in``: the precision the study's
    stored models ran in."""
    checks = {"model": (study.model, cpu.model), "sequence length": (study.seq_len, cpu.seq_len),
              "tokenizer": (study.tokenizer, cpu.tokenizer), "corpus": (study.corpus_tokens, cpu.corpus_tokens),
              "pretraining": (replace(study.pretrain, steps=1, snapshot_steps=(), precision="auto"),
                              replace(cpu.pretrain, steps=1, snapshot_steps=(), precision="auto")),
              "fine-tuning": (replace(study.finetune, precision="auto"), replace(cpu.finetune, precision="auto"))}
    differ = [name for name, (a, b) in checks.items() if a != b]
    per_task = {t: _config_changes(study.finetune_for(t), cpu.finetune_for(t),
                                   set(study.finetune_by_task.get(t, {})) | set(cpu.finetune_by_task.get(t, {})))
                for t in cpu.tasks if t in study.tasks}
    if any(per_task.values()):
        differ.append("fine-tuning of " + "; ".join(f"{t} ({changes})" for t, changes in per_task.items() if changes))
    if (study.pretrain.precision, study.finetune.precision) != (cpu.pretrain.precision, cpu.finetune.precision):
        ran = f", which ran in {ran_in}" if ran_in and study.pretrain.precision == "auto" else ""
        differ.append(f"precision ({cpu.pretrain.precision} for pretraining, {cpu.finetune.precision} for fine-tuning, "
                      f"against the study's {study.pretrain.precision}{ran})")
    if any(cpu.max_train_for(t) != study.max_train_for(t) for t in cpu.tasks if t in study.tasks):
        differ.append(f"training examples (at most {caps_text(cpu, cpu.tasks)}, against the study's {caps_text(study, study.tasks)})")
    return "; ".join(differ) if differ else "none"


def _config_changes(study: FinetuneConfig, cpu: FinetuneConfig, names: set[str]) -> str:
    """The fields among ``names`` (a task's overrides) in which ``cpu`` fine-tunes the task unlike
    ``study``, in words ("epochs 10 against the study's 2"; empty when alike)."""
    return ", ".join(f"{f.name} {getattr(cpu, f.name)} against the study's {getattr(study, f.name)}"
                     for f in fields(FinetuneConfig) if f.name in names and getattr(cpu, f.name) != getattr(study, f.name))


def caps_text(profile: Profile, tasks: Sequence[str]) -> str:
    """A profile's caps on training examples in words: "4,000 for cola, sst2 and 2,000 for squad"."""
    by_cap: dict[int | None, list[str]] = {}
    for task in tasks:
        by_cap.setdefault(profile.max_train_for(task), []).append(task)
    return " and ".join(f"{'all' if cap is None else f'{cap:,}'} for {', '.join(names)}" for cap, names in by_cap.items())


def recipe(runner: Runner, variant: str) -> dict:
    """The pretraining recipe the prose states: the settings every variant of the profile shares
    (read from ``variant``'s model config)."""
    cfg, model = runner.profile.pretrain, runner.model_config(variant)
    return {"schedule": cfg.schedule, "precision": cfg.precision, "layer_norm": model.layer_norm,
            "seq_len": runner.profile.seq_len, "lr": cfg.lr,
            "dropout": model.hidden_dropout_prob, "mask_prob": cfg.mask_prob,
            "position_init_std": model.position_init_std if model.position_init_std is not None
            else model.initializer_range}


def verdict(value: bool | None) -> str:
    """A criterion's cell: pass, fail, or not decidable."""
    return {True: "pass", False: "fail", None: "not decidable"}[value]


def finetune_screen(path) -> pd.DataFrame:
    """The fine-tuning screen (``studies/finetune_screen/results.jsonl``): one row per variant,
    task and recipe, with the training examples and the test score (percent; the mean of the
    task's metrics)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return pd.DataFrame([{"recipe": r["recipe"], "variant": r["variant"], "task": r["task"],
                          "training examples": r["train_examples"], "validation": task_percent(r["task"], r["validation"]),
                          "test": task_percent(r["task"], r["test"])} for r in rows])


def epochs_screen(paths: Sequence, cpu: Runner) -> pd.DataFrame:
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


def beside_stored(screen: pd.DataFrame, runner: Runner, steps: int, recipe: str,
                  tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """A screen's rows (:func:`finetune_screen`) followed by ``runner``'s stored fine-tunings at
    ``steps`` of the screen's variants on ``tasks`` (default: the screen's), named ``recipe``."""
    tasks = sorted(set(screen.task)) if tasks is None else tasks
    own = stored_finetunings(runner, sorted(set(screen.variant)), tasks, steps, recipe)
    return pd.concat([screen, own], ignore_index=True) if len(own) else screen


def stored_finetunings(runner: Runner, variants: Sequence[str], tasks: Sequence[str], steps: int, recipe: str) -> pd.DataFrame:
    """The stored fine-tunings (pretraining seed 0, fine-tuning seed 0) of ``variants`` at ``steps``
    as rows of :func:`finetune_screen` named ``recipe``, to set a profile's own runs beside a screen's
    (none when the profile keeps no model at ``steps``)."""
    columns = ["recipe", "variant", "task", "training examples", "validation", "test"]
    if steps not in runner.profile.pretrain.budgets:
        return pd.DataFrame(columns=columns)
    at = runner.snapshot(steps)
    rows = []
    for variant in variants:
        for task in tasks:
            found = runner.store.load(variant, stage_name("finetune", 0, task, "seed0", snapshot=at),
                                      runner.finetune_config(variant, task, 0, 0, steps))
            if found is not None:
                rows.append({"recipe": recipe, "variant": variant, "task": task,
                             "training examples": found.payload["train_examples"],
                             "validation": task_percent(task, found.payload["validation"]),
                             "test": task_percent(task, found.payload["test"])})
    return pd.DataFrame(rows, columns=columns)


#: The study's own recipe, as the cpu fine-tuning screen's last row.
STUDY_FINETUNING = "2 epochs, 10,000 examples (the study)"


def cpu_finetune_screen(path, runner: Runner, steps: int) -> pd.DataFrame:
    """The fine-tuning screen on the cpu profile's models (``studies/finetune_screen/results-cpu.jsonl``)
    with the study's own fine-tunings of the same models at ``steps`` (sst2, mrpc, stsb) beside it."""
    return beside_stored(finetune_screen(path), runner, steps, STUDY_FINETUNING)


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


def finetune_screen_table(screen: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The fine-tuning screen as a table (rows: recipes; columns: each task's test score per
    variant and its training examples) and its best result per task in words."""
    scores = screen.pivot_table(index="recipe", columns=["task", "variant"], values="test", sort=False)
    examples = screen.groupby(["recipe", "task"], sort=False)["training examples"].first().unstack()
    examples.columns = pd.MultiIndex.from_tuples([(task, "training examples") for task in examples.columns])
    table = pd.concat([scores, examples], axis=1).sort_index(axis=1, level=0, sort_remaining=False)
    best = screen.loc[screen.groupby("task")["test"].idxmax()]
    return table, "; ".join(f"{r.task} {r.test:.1f} with {r['training examples']:,} examples" for _, r in best.iterrows())


def cpu_candidate(study: Profile, cpu: Profile, steps: int) -> Profile:
    """The cpu profile as the study's recipe at ``steps``: the study's model, data and training, with
    the cpu profile's variants, tasks and seeds, fine-tuned on as many examples as the study."""
    return replace(study, name=cpu.name, description=cpu.description, variants=cpu.variants, tasks=cpu.tasks,
                   finetune_by_task=cpu.finetune_by_task, seeds=cpu.seeds, pretrain_seeds=cpu.pretrain_seeds,
                   pretrain_seeds_by_variant=cpu.pretrain_seeds_by_variant,
                   pretrain=replace(study.pretrain, steps=steps, snapshot_steps=()))


def cpu_costs(runner: Runner, cpu: Profile) -> pd.DataFrame:
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


def largest_affordable(table: pd.DataFrame, hours: float = CPU_HOURS) -> str:
    """The largest budget of a :func:`cpu_costs` table whose known cost fits ``hours``, in words."""
    fits = table[table["total (h)"] <= hours]
    if not len(fits):
        return f"none of the budgets fits {hours:g} hours"
    row = fits.iloc[-1]
    hours, unknown = float(row["total (h)"]), int(row["without a measured rate"])
    cost = (f"{hours:.1f} hours" if hours >= 0.05 else "under 0.1 hours" if hours > 0
            else "nothing with a measured rate left to compute")
    if unknown:
        cost += f", plus {unknown:,} artifact{'' if unknown == 1 else 's'} whose cost has no measured rate"
    return f"{int(row['tokens']):,} tokens ({int(row['steps']):,} steps): {cost}"
