"""Which columns the models learned: the gate that every verdict of the book passes.

A comparison between position embeddings means something only on a task the models have learned.
A column (one task, or a group of tasks averaged) is *testable* when its best variant, chosen on
the validation split among the variants with at least ``GATE_SEEDS`` (:mod:`pe_book.verdicts.gate`)
pretraining seeds (one with fewer would borrow the others' variance), beats **every order-free**
baseline of each of its tasks beyond its interval (:func:`pe_book.verdicts.gate.learned`): the best
constant, bag of words and, on span tasks, every fixed rule that ignores word order. Where the
column's tasks need word order, the best variant must also beat ``none``, the variant that cannot
see it, beyond the interval of their difference. A group is testable only when each of its tasks is: an average must not hide a
task no model learned. A comparison on any other column is "not testable at this scale" and
enters no verdict (``untestable`` of :func:`pe_book.verdicts.comparisons.compare_family`).

A rule that reads word order ("neighbour match" on cloze tasks,
``pe_book.experiments.baselines.reads_order``) is a cheap position-using model, not an order-free
baseline: it never gates. Each column shows it as a *reference*, the best such rule of each task
(a group's: the mean of its tasks', where each has one), with the best variant's standing against
it (:func:`~pe_book.verdicts.intervals.standing`: above, below or within the interval).
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import pandas as pd

from pe_book.experiments.baselines import best_baseline, best_reference
from pe_book.verdicts.gate import learned
from pe_book.verdicts.intervals import standing
from pe_book.verdicts.mixed_model import ALPHA

#: The variant that cannot see word order: a bar of every order-sensitive column.
NO_ORDER = "none"
COLUMNS = ["tasks", "best variant", "mean", "low", "high", "level", "baseline", "baseline score", "control", "gap",
           "gap low", "testable", "reason", "reference", "reference score", "against reference"]


def task_bars(payloads: Mapping[str, Mapping], split: str = "test",
              order_free: bool = True) -> dict[str, tuple[str, float]]:
    """Each task's bar on ``split``: its best stored baseline that ignores word order, task ->
    ``(name, score in percent)``; with ``order_free=False`` its best of every baseline.
    ``payloads``: task -> its stored baselines payload (``Results.baselines(task).payload``)."""
    return {task: best_baseline(payload, split, order_free) for task, payload in payloads.items()}


def task_references(payloads: Mapping[str, Mapping], split: str = "test") -> dict[str, tuple[str, float]]:
    """Each task's best stored baseline that reads word order on ``split``, task -> ``(name, score
    in percent)``, for the tasks that have one: a reference beside the models, never a bar.
    ``payloads``: task -> its stored baselines payload."""
    found = {task: best_reference(payload, split) for task, payload in payloads.items()}
    return {task: reference for task, reference in found.items() if reference is not None}


def column_bars(bars: Mapping[str, tuple[str, float]],
                groups: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, float]]:
    """The bar of every column: each task's own (``bars``: task -> ``(name, score)``) and each
    group's, the mean score of its tasks that have a bar, their names joined by " / " (NaN and
    "no baseline" when none has)."""
    found = dict(bars)
    for group, tasks in groups.items():
        scored = [t for t in tasks if t in bars]
        names = " / ".join(dict.fromkeys(bars[t][0] for t in scored)) or "no baseline"
        found[group] = (names, sum(bars[t][1] for t in scored) / len(scored) if scored else math.nan)
    return found


def testability(per_seed: pd.DataFrame, selection: pd.DataFrame, bars: Mapping[str, tuple[str, float]],
                groups: Mapping[str, Sequence[str]], alpha: float, order_sensitive: Collection[str] = (),
                control: str = NO_ORDER, references: Mapping[str, tuple[str, float]] | None = None) -> pd.DataFrame:
    """Which columns the models learned (:func:`pe_book.verdicts.gate.learned`), one row per task (against
    its best order-free baseline, ``bars``: task -> ``(name, score)``) and per group (against the
    mean of its tasks' bars). On the ``order_sensitive`` tasks, and the groups of such tasks alone,
    the best variant must also beat the ``control`` variant (which cannot see word order). A group
    is testable only when each of its tasks is. ``references``: task -> its best rule that reads
    word order ``(name, score)``; a row shows it (a group: the mean of its tasks', where each has
    one) with the best variant's standing against it (:func:`pe_book.verdicts.intervals.standing` on the
    ``1 - alpha`` interval), which never changes whether the column is testable."""
    references = references or {}
    shown = column_bars(references, {g: tasks for g, tasks in groups.items() if all(t in references for t in tasks)})
    rows = {}

    def control_of(tasks: Sequence[str]) -> str | None:
        return control if tasks and all(t in order_sensitive for t in tasks) else None

    bar = column_bars(bars, groups)
    for task in dict.fromkeys([*bars, *(t for tasks in groups.values() for t in tasks)]):
        if task in per_seed.columns:
            row = learned(per_seed, task, bar.get(task, ("no baseline", math.nan)), selection, alpha,
                                control_of([task]))
            reason = row["reason"] if task in bars else f"no baseline scores {task}"
            rows[task] = {**row, "reason": "" if row["testable"] else reason, "tasks": task}
    for group, tasks in groups.items():
        if group not in per_seed.columns:
            continue
        row = learned(per_seed, group, bar[group], selection, alpha, control_of(tasks))
        failed = [rows[t]["reason"] for t in tasks if t in rows and not rows[t]["testable"]]
        failed += [f"no baseline scores {t}" for t in tasks if t not in bars and t not in rows]
        if failed:
            row = {**row, "testable": False, "reason": "; ".join(failed)}
        rows[group] = {**row, "tasks": ", ".join(tasks)}
    for column, row in rows.items():
        name, score = shown.get(column, ("", math.nan))
        row.update({"reference": name or None, "reference score": score,
                    "against reference": standing(row["low"], row["high"], score) if name else None})
    return pd.DataFrame.from_dict(rows, orient="index", columns=COLUMNS).rename_axis("column")


def gate(payloads: Mapping[str, Mapping], per_seed: pd.DataFrame, selection: pd.DataFrame, specs: Mapping,
         groups: Mapping[str, Sequence[str]], split: str = "test", alpha: float = ALPHA) -> pd.DataFrame:
    """:func:`testability` of ``groups`` and their tasks (``specs``: task -> ``TaskSpec``) against
    every stored order-free baseline on ``split`` (``payloads``: task -> its stored baselines
    payload, for every task of ``specs``), the order-sensitive tasks held to ``none``; the rules
    that read word order shown as references."""
    stored = {task: payloads[task] for task in specs}
    return testability(per_seed, selection, task_bars(stored, split), groups, alpha,
                       [t for t, s in specs.items() if s.order_sensitive],
                       references=task_references(stored, split))


def untestable(table: pd.DataFrame) -> dict[str, str]:
    """The columns of a :func:`testability` table that no model learned: column -> why."""
    return {column: row["reason"] for column, row in table.iterrows() if not row["testable"]}


def within_reach(table: pd.DataFrame, column: str) -> bool:
    """Whether a column of a :func:`testability` table that no model learned is kept out by its
    interval alone: its best variant (and that of each of its tasks) is above the bar, and ahead of
    the control where held to it, in the mean. More pretraining seeds narrow the interval and could
    let it in; a column below its bar in the mean needs models that learn more."""
    members = [column, *str(table.loc[column, "tasks"]).split(", ")] if column in table.index else []
    rows = [table.loc[c] for c in dict.fromkeys(members) if c in table.index]
    return bool(rows) and all(r["mean"] > r["baseline score"] and not r["gap"] <= 0 for r in rows)


def testable_text(table: pd.DataFrame) -> str:
    """Which columns carry verdicts and why the others do not, in words."""
    learned = [column for column, row in table.iterrows() if row["testable"]]
    not_learned = [f"{column} ({row['reason']})" for column, row in table.iterrows() if not row["testable"]]
    return (f"the models learned {', '.join(learned) if learned else 'no column'} beyond every order-free baseline"
            + (f"; no verdict rests on {'; '.join(not_learned)}" if not_learned else ""))
