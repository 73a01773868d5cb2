"""What every result chapter starts from: the stored results of a profile, the table of its
parameters and data, the tasks it covers, and the fine-tuned results of its variants.

A chapter only reads (:class:`~pe_book.experiments.results.Results`): a missing artifact stops
it with the artifact's name and the command that computes it (``pe-book run --profile P``, the
pipeline; ``pe-book book`` runs it first unless built ``--stored-only``). The stored results take
the data their keys and tables need from the store's data record where there is one: no corpus,
tokenizer or task is prepared.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pe_book import tables
from pe_book.experiments.baselines import LABELS, baseline_payloads
from pe_book.experiments.profiles import get_profile
from pe_book.experiments.results import Results
from pe_lib.data.tasks import TASKS, get_task
from pe_lib.errors import InputError
from pe_lib.positions import resolve_variants


def open_results(profile: str, results: str = "results") -> Results:
    """The stored results (:class:`~pe_book.experiments.results.Results`) of the named profile in
    the artifact store ``results``, without progress bars; refused, in one line naming the folder it
    looked in, where ``results`` does not exist or holds none of the profile's artifacts."""
    stored = Results(get_profile(profile), results=results, progress=False)
    check_results_folder(stored, results)
    return stored


def check_results_folder(runner, results: str) -> None:
    """Refuse (:class:`~pe_lib.errors.InputError`) a ``results`` folder that does not exist or
    holds none of ``runner``'s profile's artifacts, naming it (a relative one as found from the
    working directory) and how to compute them instead."""
    folder = Path(results)
    shown = f"{str(results)!r}" if folder.is_absolute() else (
        f"{str(results)!r} ({folder.resolve()}: relative to the working directory {Path.cwd()})")
    name = runner.profile.name
    instead = f"or compute profile {name}'s results there with `pe-book run --profile {name} --results {results}`"
    if not folder.is_dir():
        raise InputError(f"results folder {shown} does not exist; set results to the artifact store's folder, "
                         f"{instead}")
    if not runner.store.artifact_folders():
        raise InputError(f"results folder {shown} holds no artifact of profile {name} (in its subfolder "
                         f"{runner.store.root.name}); set results to the folder that holds them, {instead}")


def data_used(params: Mapping, runner, tasks: Iterable[str] = ()) -> pd.DataFrame:
    """A chapter's parameters table, with the data its results come from: the pretraining corpus
    (``packaged``: offline analogues from pinned packages; ``hub``: the paper's data from the
    HuggingFace hub) and the origin of each of ``tasks``. Online and offline runs differ here, so
    a reader (on Colab, say) knows why numbers differ from the published book."""
    corpus = runner.corpus
    sources = ", ".join(corpus.card.get("sources", {})) or corpus.origin
    rows = {**param_table(params)["value"],
            "data: pretraining text": f"{corpus.origin} ({sources})"}
    rows.update({f"data: task {t}": runner.task(t).origin for t in tasks})
    return pd.DataFrame({"value": rows})


def param_table(params: Mapping) -> pd.DataFrame:
    """A chapter's parameters as a table of :func:`param_text` values (a chapter without a runner
    shows this; the others :func:`data_used`)."""
    return pd.DataFrame({"value": {name: param_text(value) for name, value in params.items()}}, dtype=object)


def param_text(value) -> str:
    """A parameter's value as a reader reads it: text without quotes, lists joined by commas, an
    empty list or None as "(default)", True/False as yes/no, numbers with thousands separators and
    never in e-notation (:func:`number_text`, exact)."""
    if value is None or (isinstance(value, (list, tuple, set, dict)) and not value):
        return "(default)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return number_text(value, 15)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {param_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return ", ".join(param_text(v) for v in value)
    return str(value)


def number_text(value, digits: int = 3) -> str:
    """A number as a reader reads it: ``digits`` significant digits, thousands separated, never in
    e-notation ("12,810", "8.49", "0.000123"); an integer exactly; NaN as "n/a"."""
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, numbers.Integral):  # numpy's integers too
        return f"{int(value):,}"
    x = float(value)
    if math.isnan(x):
        return "n/a"
    if x == 0 or math.isinf(x):
        return f"{x:g}"
    magnitude = math.floor(math.log10(abs(x)))
    x = round(x, digits - 1 - magnitude)
    text = f"{x:,.{max(0, digits - 1 - magnitude)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def yes_no(value: bool) -> str:
    """True/False as a reader reads it: "yes"/"no"."""
    return "yes" if value else "no"


def yes_no_columns(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its True/False columns as "yes"/"no" (the boolean columns of a displayed table)."""
    table = table.copy()
    for column in table.columns:
        values = table[column]
        if pd.api.types.is_bool_dtype(values) or (
                values.dtype == object and len(values) and values.map(lambda v: isinstance(v, bool)).all()):
            table[column] = values.map(yes_no)
    return table


def breakable(name: str, after: str = "._") -> str:
    """``name`` (a tensor's dotted name, a run's snake_case name) with a zero-width space after
    each character of ``after``, where a table's narrow column may break it."""
    return "".join(c + "\u200b" if c in after else c for c in name)


def with_intervals(table: pd.DataFrame, low: str, high: str, name: str = "interval", digits: int = 2) -> pd.DataFrame:
    """``table`` with its ``low`` and ``high`` columns as one ``name`` column, "[-2.02, +1.08]"
    (signed, ``digits`` decimals; "n/a" where either end is missing), in the place of ``low``."""
    text = [f"[{lo:+.{digits}f}, {hi:+.{digits}f}]" if pd.notna(lo) and pd.notna(hi) else "n/a"
            for lo, hi in zip(table[low], table[high])]
    table = table.drop(columns=high).rename(columns={low: name})
    table[name] = text
    return table


def plural(n: int, word: str, words: str | None = None) -> str:
    """``"1 seed"``, ``"3 seeds"``: ``n`` and the noun in the right number."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def learned_init(runner, variant: str = "ape-learned") -> str:
    """How a profile's learned position tables start, in words: "zero vectors" when its model's
    ``position_init_std`` is 0, else "random vectors (N(0, σ²), σ = ...)"."""
    config = runner.model_config(variant)
    std = config.position_init_std if config.position_init_std is not None else config.initializer_range
    return "zero vectors" if std == 0 else f"random vectors (normal, standard deviation {std:g})"


def chapter_tasks(requested: Sequence[str], default: Sequence[str], span: bool) -> dict:
    """The task specs of a fine-tuning chapter: the ``requested`` ones, which must all be of the
    chapter's kind (span prediction or sentence level), else the ``default`` ones of that kind."""
    specs = {t: get_task(t) for t in (requested or default)}  # raises on an unknown task
    if not requested:
        return {t: s for t, s in specs.items() if (s.meta.kind == "span") == span}
    wrong = [t for t, s in specs.items() if (s.meta.kind == "span") != span]
    if wrong:
        kind = "span-prediction" if span else "sentence-level"
        valid = [t for t, s in TASKS.items() if (s.meta.kind == "span") == span]
        raise ValueError(f"this chapter shows {kind} tasks, not {', '.join(wrong)}; valid: {', '.join(valid)}")
    return specs


def finetuned_payloads(runner, names: Sequence[str], tasks: Iterable[str], seeds: Sequence[int] = ()) -> dict:
    """Every fine-tuning payload keyed ``(variant, task, pretrain_seed, seed)``: each of the
    profile's pretraining seeds of the variant, each fine-tuning seed of ``seeds`` (default: the
    profile's seeds of each task)."""
    tasks = list(tasks)
    return {(v, t, p, s): runner.finetuned(v, t, s, pretrain_seed=p).payload
            for v in names for p in runner.profile.pretrain_seeds_for(v) for t in tasks
            for s in (seeds or runner.profile.seeds_for(t))}


def finetuning_seeds(profile, tasks: Iterable[str]) -> int:
    """The most fine-tuning seeds any of ``tasks`` has in ``profile`` (its seeds when there are none)."""
    return max((len(profile.seeds_for(t)) for t in tasks), default=len(profile.seeds))


def seed_design(profile, names: Sequence[str], tasks: Sequence[str] = ()) -> str:
    """The seeds of a profile in words: how many pretraining seeds each of ``names`` has (the most
    common count as "the other N"), and the fine-tuning seeds run on each pretrained model (per
    group of ``tasks`` where their counts differ)."""
    by_count: dict[int, list[str]] = {}
    for name in names:
        by_count.setdefault(len(profile.pretrain_seeds_for(name)), []).append(name)
    common = max(by_count, key=lambda n: len(by_count[n])) if by_count else 0
    parts = [f"{plural(n, 'pretraining seed')} for {', '.join(vs)}" for n, vs in sorted(by_count.items(), reverse=True)
             if n != common]
    rest = (f"{common} for the other {plural(len(by_count[common]), 'variant')}" if parts
            else f"{common} for every variant")
    pre = "; ".join(parts + [rest]) if parts else f"{plural(common, 'pretraining seed')} for every variant"
    by_task: dict[int, list[str]] = {}
    for task in tasks:
        by_task.setdefault(len(profile.seeds_for(task)), []).append(task)
    if len(by_task) < 2:
        n = next(iter(by_task), len(profile.seeds))
        return f"{pre}; {plural(n, 'fine-tuning seed')} on each pretrained model"
    fine = " and ".join(f"{plural(n, 'fine-tuning seed')} on {', '.join(ts)}" for n, ts in sorted(by_task.items(), reverse=True))
    return f"{pre}; {fine}, on each pretrained model"


SPLITS = ("test", "validation")


def over_pretraining_seeds(profile, names: Sequence[str], read) -> pd.DataFrame:
    """``read(variant, pretraining_seed)`` (a number, or a mapping of named numbers) for every
    pretraining seed of every variant in ``names``: rows indexed by (variant, pretraining seed)."""
    rows = {(name, p): read(name, p) for name in names for p in profile.pretrain_seeds_for(name)}
    return pd.DataFrame([v if isinstance(v, Mapping) else {"value": v} for v in rows.values()],
                        index=pd.MultiIndex.from_tuples(list(rows), names=["variant", "pretraining seed"]))


def seed_spread(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per variant of an :func:`over_pretraining_seeds` frame: the number of pretraining seeds and,
    per column, the spread over them (largest minus smallest; NaN where there is one seed)."""
    grouped = per_seed.groupby(level="variant", sort=False)
    spread = grouped.max() - grouped.min()
    spread[grouped.size() < 2] = math.nan
    return spread.assign(seeds=grouped.size())


def largest_spread(spread: pd.DataFrame) -> dict:
    """The largest spread of a :func:`seed_spread` table: its ``value``, ``variant`` and ``column``,
    and ``variants``, how many variants have several seeds (value NaN and names empty when none)."""
    values = spread.drop(columns="seeds").stack().dropna()
    several = int((spread["seeds"] > 1).sum())
    if not len(values):
        return {"value": math.nan, "variant": "", "column": "", "variants": several}
    variant, column = values.idxmax()
    return {"value": float(values.max()), "variant": str(variant), "column": str(column), "variants": several}


def check_split(split: str) -> str:
    """``split`` when it is one a chapter can show, else ValueError naming the choices."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    return split


def check_layer(profile, layer: int) -> int:
    """``layer`` when ``profile``'s models have it, else :class:`~pe_lib.errors.InputError` naming
    the valid range (a notebook shows it as one line)."""
    layers = profile.model["num_hidden_layers"]
    if not 0 <= layer < layers:
        raise InputError(f"layer must be in 0..{layers - 1} for profile {profile.name!r} "
                         f"(its models have {plural(layers, 'layer')}), got {layer}")
    return layer


def spread_note(n_seeds: int) -> str:
    """How a score table's spread reads, in words, for ``n_seeds`` fine-tuning seeds."""
    return (f"each variant was fine-tuned with {n_seeds} seeds" if n_seeds > 1
            else "with one seed per variant, as here, the spread is undefined and only the mean is shown")


def ranked(average: pd.Series, variant: str) -> str:
    """``"r of n"``: the rank of ``variant`` in ``average`` (sorted best first), or "not run"."""
    return f"{list(average.index).index(variant) + 1} of {len(average)}" if variant in average.index else "not run"


@dataclass
class TaskScores:
    """A fine-tuning chapter's scores: ``summary`` and ``baseline_summary``
    (:func:`pe_book.tables.summarise` tables; the baselines' rows are not candidates), the
    ``per_seed`` scores (columns: the chapter's columns and ``"average"``), the task ``origin``
    table and ``cited``, the numbers and phrases the prose cites, by glue name."""
    names: list[str]
    tasks: list[str]
    origin: pd.DataFrame
    per_seed: pd.DataFrame
    summary: pd.DataFrame
    baseline_summary: pd.DataFrame
    cited: dict

    @property
    def table(self) -> pd.DataFrame:
        """The variants' summary with the baselines' rows below."""
        return pd.concat([self.summary, self.baseline_summary])

    @property
    def average(self) -> pd.Series:
        """Mean average score per variant, best first."""
        return self.summary[("average", "mean")].dropna().sort_values(ascending=False)

    @property
    def floor(self) -> pd.DataFrame:
        """The baselines' mean score per column."""
        return self.baseline_summary.xs("mean", axis=1, level=1)

    def order(self) -> list[str]:
        """Variants by average, best first, then those without one."""
        return list(self.average.index) + [v for v in self.names if v not in self.average.index]

    def ranking(self) -> dict:
        """The best and the worst average and the best constant's, as the prose cites them."""
        average, best = self.average, tables.best_per_column(self.summary)["average"]
        return {"best_average": tables.best_text(best, len(self.summary)),
                "best_average_value": average.iloc[0] if len(average) else math.nan,
                "worst_average": str(average.index[-1]) if len(average) else "none",
                "worst_average_value": average.iloc[-1] if len(average) else math.nan,
                "baseline_average": self.floor.loc[LABELS["constant"], "average"]}


@dataclass
class Finetuned:
    """What a fine-tuning chapter reads: its ``names`` (variants), ``tasks`` (name -> kind),
    fine-tuning ``seeds`` and ``split``; every payload (``finetuned``, keyed ``(variant, task, pretrain_seed,
    seed)``) and the baselines' (``baseline_payloads``, rows labelled as baselines); the task
    ``origin`` table and the tasks whose data were ``packaged`` analogues in this run."""
    names: list[str]
    kinds: dict[str, str]
    seeds: list[int]
    split: str
    finetuned: dict
    baseline_payloads: dict
    origin: pd.DataFrame
    packaged: list[str]

    @property
    def tasks(self) -> list[str]:
        return list(self.kinds)

    def cited(self, per_seed: pd.DataFrame) -> dict:
        """What every fine-tuning chapter's prose says about its runs and data (``per_seed``: the
        chapter's scores, whose runs without a score the spread note names)."""
        missing = tables.unscored_text(per_seed)
        return {"n_seeds": len(self.seeds), "split": self.split,
                "packaged_tasks": ", ".join(self.packaged) if self.packaged else "none",
                "hub_tasks": ", ".join(t for t in self.kinds if t not in self.packaged) or "none",
                "spread_note": spread_note(len(self.seeds)) + (f"; {missing}" if missing else "")}


def read_finetuned(runner, variants: Sequence[str], tasks: Sequence[str], seeds: Sequence[int], split: str,
                   span: bool) -> Finetuned:
    """The fine-tuned results of ``variants`` (default: the profile's) on the chapter's ``tasks``
    (span prediction or sentence level; default: the profile's of that kind) for the fine-tuning
    ``seeds`` (default: the profile's) and every pretraining seed, as stored."""
    check_split(split)
    names = resolve_variants(variants, runner.profile.variants)
    specs = chapter_tasks(tasks, runner.profile.tasks, span=span)
    seed_list = list(seeds) or sorted({s for t in specs for s in runner.profile.seeds_for(t)})
    finetuned = finetuned_payloads(runner, names, specs, seeds)
    origin = tables.origin_table(finetuned, {t: s.analogue for t, s in specs.items()}, {t: s.meta.metrics for t, s in specs.items()},
                          {t: len(runner.task(t).splits[split]) for t in specs})
    packaged = [t for t in specs if origin.loc[t, "origin"].startswith("packaged")]
    return Finetuned(names, {t: s.meta.kind for t, s in specs.items()}, seed_list, split, finetuned,
                     baseline_payloads(runner, list(specs)), origin, packaged)
