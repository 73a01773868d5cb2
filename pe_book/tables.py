r"""Tables of the book's result chapters, on plain data (payload dicts, data frames).

Indicators
----------
:func:`indicator_table` and :func:`indicator_change` turn analysis payloads into one row per
variant and one column per indicator of :mod:`pe_lib.properties`.

Scores
------
Every fine-tuning metric is reported in percent: GLUE-style metrics (accuracy, F1, Matthews and
Pearson/Spearman correlations, in ``[-1, 1]``) are multiplied by 100, SQuAD's exact match and F1
are percentages already. The **score of a task** is the mean of its metrics (the GLUE benchmark's
convention for MRPC and STS-B; for SQuAD the mean of EM and F1). The **average** of a group of
tasks (classification, span prediction) is computed per run (one pretraining seed, one
fine-tuning seed), over the tasks of the group, then summarised like a task. Per-seed tables are
indexed ``(variant, pretrain_seed, seed)``. A variant's mean is the mean of its pretrained
models' means; the spread is the sample standard deviation of single runs (``ddof=1``); with one
run it is undefined (NaN). A run that gave no score (a NaN where the design has one,
:func:`expected_runs`) is left out of the means and named: its cells read ``"(n of N runs)"`` and
:func:`unscored_text` lists it.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pe_book.verdicts.mixed_model import LEVELS, variant_means
from pe_lib.probing import ANALYSIS_WINDOW
from pe_lib.properties import indicators
from pe_lib.training.metrics import scale_metric

#: Indicator columns, in the order tables show them.
INDICATORS = ("monotonicity", "monotonicity_local", "translation_invariance", "symmetry")


PROBE_INDICATORS = INDICATORS + ("chen_locality", "chen_symmetry")


LABELS = {"monotonicity": "monotonicity", "monotonicity_local": "local monotonicity",
          "translation_invariance": "translation invariance", "symmetry": "symmetry",
          "chen_locality": "Chen locality", "chen_symmetry": "Chen symmetry"}


def indicator_table(analyses: Mapping[str, Mapping], state: str = "trained", kind: str = "probe",
                    layer: int = 0, window: int | None = None,
                    maps: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> pd.DataFrame:
    """Indicators per variant (rows) from analysis payloads: ``kind`` is ``"probe"`` (identical-
    word attention of ``layer``), ``"ape"`` or ``"rpe"`` (dot products of position / offset
    vectors; variants without them are left out). ``state``: ``"init"`` or ``"trained"``.
    ``window`` other than the analysis's own (``ANALYSIS_WINDOW``): local monotonicity over
    offsets 1..window, recomputed from the stored maps (``maps``: variant -> analysis arrays)."""
    columns = PROBE_INDICATORS if kind == "probe" else INDICATORS
    rows = {}
    for variant, payload in analyses.items():
        found = payload[state].get(kind)
        if found is None:
            continue
        values = found[layer] if kind == "probe" else found
        rows[variant] = {c: _number(values.get(c)) for c in columns}
        if window is not None and window != ANALYSIS_WINDOW:
            gram = maps[variant][f"{state}.{kind}"]
            gram = gram[layer] if kind == "probe" else gram
            rows[variant]["monotonicity_local"] = indicators(np.asarray(gram, dtype=np.float64), window=window)["monotonicity_local"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(columns)).rename_axis("variant")


def _number(value) -> float:
    return math.nan if value is None else float(value)


def indicator_change(analyses: Mapping[str, Mapping], kind: str = "probe", layer: int = 0) -> pd.DataFrame:
    """Init, trained and trained - init of every indicator: columns ``(indicator, state)``."""
    init = indicator_table(analyses, "init", kind, layer)
    trained = indicator_table(analyses, "trained", kind, layer)
    parts = {"init": init, "trained": trained, "change": trained - init}
    table = pd.concat(parts, axis=1).swaplevel(0, 1, axis=1)
    order = [(c, s) for c in init.columns for s in parts]
    return table[order]


#: What each task stands for in the paper (GLUE / SQuAD names).
PAPER_TASKS = {"cola": "CoLA: grammatical acceptability", "sst2": "SST-2: sentiment",
               "mrpc": "MRPC: paraphrase", "stsb": "STS-B: sentence similarity (regression)",
               "qnli": "QNLI: question-answer entailment", "rte": "RTE: textual entailment",
               "squad": "SQuAD v1.1: extractive question answering",
               "squad_v2": "SQuAD v2.0: extractive QA with unanswerable questions"}


def score_records(finetuned: Mapping[tuple[str, str, int, int], Mapping], kinds: Mapping[str, str],
                  split: str = "test") -> pd.DataFrame:
    """Long table ``variant, task, pretrain_seed, seed, metric, value`` (percent) from fine-tuning
    payloads keyed by ``(variant, task, pretrain_seed, seed)``; ``kinds`` maps each task to its
    kind (``TaskMeta.kind``)."""
    rows = [{"variant": v, "task": t, "pretrain_seed": p, "seed": s, "metric": metric,
             "value": scale_metric(value, kinds[t], metric)}
            for (v, t, p, s), payload in finetuned.items() for metric, value in payload[split].items()]
    return pd.DataFrame(rows, columns=["variant", "task", "pretrain_seed", "seed", "metric", "value"])


def metric_means(records: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of every metric: rows variants (in order of appearance), columns
    ``(task, metric)``."""
    table = records.pivot_table(index="variant", columns=["task", "metric"], values="value", aggfunc="mean",
                                sort=False)
    return table.reindex(list(dict.fromkeys(records["variant"])))


def origins(finetuned: Mapping[tuple[str, str, int, int], Mapping]) -> dict[str, set[str]]:
    """Task -> the set of origins (``hub:...`` / ``packaged:...``) found in fine-tuning payloads."""
    found: dict[str, set[str]] = {}
    for (_, task, *_), payload in finetuned.items():
        found.setdefault(task, set()).add(str(payload.get("origin", "unknown")))
    return found


def origin_table(finetuned: Mapping[tuple[str, str, int, int], Mapping], analogues: Mapping[str, str],
                 metrics: Mapping[str, Sequence[str]], test_sizes: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One row per task: what it stands for in the paper, where this run's data came from
    (``hub:...`` or ``packaged:...``, from the artifacts), the packaged analogue's description,
    its metrics and sizes."""
    found = origins(finetuned)
    train = {}
    for (_, task, *_), payload in finetuned.items():
        train.setdefault(task, payload.get("train_examples"))
    rows = {}
    for task, kinds in found.items():
        packaged = any(o.startswith("packaged") for o in kinds)
        rows[task] = {"in the paper": PAPER_TASKS.get(task, task), "origin": ", ".join(sorted(kinds)),
                      "data in this run": analogues.get(task, "") if packaged else "the original data set",
                      "metrics": ", ".join(metrics.get(task, ())),
                      "examples (train / test)": f"{train.get(task)} / {(test_sizes or {}).get(task, '?')}"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("task")


def per_seed_scores(records: pd.DataFrame, groups: Mapping[str, Sequence[str]] | None = None,
                    metrics: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """Scores per ``(variant, pretrain_seed, seed)`` (rows) and column: each task's score (the mean
    of its metrics, or of ``metrics[task]`` when given) and, for each ``groups`` entry (name ->
    tasks), the mean of those task scores (NaN unless every task of the group has a score for that
    run)."""
    chosen = records
    if metrics:
        keep = [m in metrics.get(t, [m]) for t, m in zip(records["task"], records["metric"])]
        chosen = records[keep]
    table = _per_run(chosen, "task")
    for name, tasks in (groups or {}).items():
        present = [t for t in tasks if t in table.columns]
        if len(present) == len(tasks) and present:
            table[name] = table[present].mean(axis=1, skipna=False)
        else:
            table[name] = np.nan
    return table


def per_seed_by_metric(records: pd.DataFrame, short: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every metric of every task as its own column ``"<task> <metric>"`` (metric names shortened
    by ``short``), per ``(variant, pretrain_seed, seed)``, in the order of ``records``."""
    short = short or {}
    labelled = records.assign(column=[f"{t} {short.get(m, m)}" for t, m in zip(records["task"], records["metric"])])
    return _per_run(labelled, "column")[list(dict.fromkeys(labelled["column"]))]


def _per_run(records: pd.DataFrame, column: str) -> pd.DataFrame:
    """Mean ``value`` per run (rows ``LEVELS``) and ``column``: a run whose every score is NaN
    keeps its row (a failed run is named by :func:`summarise`, never dropped)."""
    table = records.groupby([*LEVELS, column])["value"].mean().unstack(column)
    table.columns.name = None
    return table


def expected_runs(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per run and column: was a score expected there? A run of a variant is expected in a column
    when some variant has a score for its ``(pretrain_seed, seed)`` there (a fine-tuning seed that
    the design runs on that task); a NaN in an expected cell is a run without a score."""
    seeds = per_seed.index.droplevel("variant")
    scored = per_seed.notna().groupby(seeds).any()  # (pretrain_seed, seed) x column
    return pd.DataFrame(scored.reindex(seeds).to_numpy(), index=per_seed.index, columns=per_seed.columns)


def unscored(per_seed: pd.DataFrame) -> list[str]:
    """The runs expected in a column (:func:`expected_runs`) whose score there is NaN, in words:
    ``"rope sst2 (pretraining seed 0, fine-tuning seed 2)"``."""
    missing = expected_runs(per_seed) & per_seed.isna()
    return [f"{v} {c} (pretraining seed {p}, fine-tuning seed {s})"
            for (v, p, s), row in missing.iterrows() for c in per_seed.columns if row[c]]


def unscored_text(per_seed: pd.DataFrame, most: int = 5) -> str:
    """A sentence naming the runs without a score (NaN) whose means leave them out, or ``""``."""
    names = unscored(per_seed)
    if not names:
        return ""
    listed = "; ".join(names[:most]) + (f"; and {len(names) - most} more" if len(names) > most else "")
    return (f"{len(names)} run{'s' if len(names) > 1 else ''} gave no score (NaN) and {'are' if len(names) > 1 else 'is'} "
            f"left out of the means, marked (n of N runs): {listed}")


def summarise(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Per variant and column: the mean (of the pretrained models' means, each pretraining seed
    weighing the same: the variant mean that :mod:`pe_book.verdicts` tests), the standard
    deviation of single runs over all pretraining and fine-tuning seeds (``ddof=1``; NaN with one
    run), the number of runs with a score and of runs expected (:func:`expected_runs`): columns
    ``(column, "mean" | "std" | "n" | "runs")``."""
    grouped = per_seed.groupby(level="variant", sort=False)
    parts = {"mean": variant_means(per_seed), "std": grouped.std(ddof=1),
             "n": grouped.count(), "runs": expected_runs(per_seed).groupby(level="variant", sort=False).sum()}
    table = pd.concat(parts, axis=1).swaplevel(0, 1, axis=1)
    return table[[(c, s) for c in per_seed.columns for s in parts]]


def best_per_column(summary: pd.DataFrame, exclude: Sequence[str] = ()) -> dict[str, list[str]]:
    """The variant(s) with the highest mean in each column of a :func:`summarise` table (rows
    in ``exclude``, e.g. a baseline, are not candidates). Ties are all listed."""
    best = {}
    for column in dict.fromkeys(c for c, _ in summary.columns):
        means = summary[(column, "mean")].drop(index=list(exclude), errors="ignore").dropna()
        best[column] = list(means.index[np.isclose(means, means.max())]) if len(means) else []
    return best


def best_text(best: Sequence[str], total: int, most: int = 3) -> str:
    """The best variant(s) of a column in words: their names, or how many tie when more than
    ``most`` do."""
    if not best:
        return "none"
    if len(best) > most:
        return f"all {total} variants tie" if len(best) == total else f"{len(best)} variants tie"
    return ", ".join(best)


def format_summary(summary: pd.DataFrame, digits: int = 1, mark: str = "▲",
                   exclude: Sequence[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Strings ``"mean ± std"`` (``"mean"`` when the spread is undefined, ``"—"`` when missing;
    suffixed ``"(n of N runs)"`` when runs gave no score) per variant and column, the best mean of each column (rows in ``exclude`` aside) suffixed by
    ``mark`` (nothing is marked in a column where every variant ties); and a boolean frame
    marking those best cells."""
    columns = list(dict.fromkeys(c for c, _ in summary.columns))
    best = best_per_column(summary, exclude)
    text = pd.DataFrame(index=summary.index, columns=columns, dtype=object)
    flags = pd.DataFrame(False, index=summary.index, columns=columns)
    for column in columns:
        candidates = summary[(column, "mean")].drop(index=list(exclude), errors="ignore").notna().sum()
        marked = best[column] if len(best[column]) < candidates else []  # all tie: no best
        for variant in summary.index:
            mean, std = summary.loc[variant, (column, "mean")], summary.loc[variant, (column, "std")]
            if pd.isna(mean):
                cell = "—"
            elif pd.isna(std):
                cell = f"{mean:.{digits}f}"
            else:
                cell = f"{mean:.{digits}f} ± {std:.{digits}f}"
            n, runs = summary.loc[variant, (column, "n")], summary.get((column, "runs"), {}).get(variant, 0)
            if n < runs:
                cell += f" ({n:.0f} of {runs:.0f} runs)"
            if variant in marked:
                cell += f" {mark}"
                flags.loc[variant, column] = True
            text.loc[variant, column] = cell
    return text, flags


def style_summary(summary: pd.DataFrame, digits: int = 1, exclude: Sequence[str] = ()):
    """A pandas Styler of :func:`format_summary` with the best cell of each column in bold."""
    text, flags = format_summary(summary, digits, exclude=exclude)
    bold = flags.replace({True: "font-weight: bold", False: ""})
    return text.style.apply(lambda _: bold, axis=None).set_table_attributes('class="dataframe"')


def cell(table: pd.DataFrame, row: str, column: str) -> float:
    """``table.loc[row, column]`` as a float, NaN when the row is absent (a variant not run)."""
    return float(table.loc[row, column]) if row in table.index else math.nan
