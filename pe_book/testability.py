"""Which columns the models learned: the gate that every verdict of the book passes.

A comparison between position embeddings means something only on a task the models have learned.
A column (one task, or a group of tasks averaged) is *testable* when its best variant, chosen on
the validation split, beats **every** baseline of the column beyond its interval
(:func:`pe_book.stats.learned`): the best constant, bag of words and, on span tasks, every fixed
rule, the rules that read word order included ("neighbour match"). A model that does not beat a
cheap rule has not shown that it learned more than the rule, whatever the rule reads. Where the
column's tasks need word order, the best variant must also beat ``none``, the variant that cannot
see it, beyond the interval of their difference. A group is testable only when each of its tasks
is: an average must not hide a task no model learned. A comparison on any other column is "not
testable at this scale" and enters no verdict (``stats.compare_family``'s ``untestable``).
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import pandas as pd

from pe_book import stats
from pe_book.experiments.baselines import best_baseline

#: The variant that cannot see word order: a bar of every order-sensitive column.
NO_ORDER = "none"
COLUMNS = ["tasks", "best variant", "mean", "low", "baseline", "baseline score", "control", "gap", "gap low",
           "testable", "reason"]


def task_bars(runner, tasks: Sequence[str], split: str = "test",
              order_free: bool = False) -> dict[str, tuple[str, float]]:
    """Each task's best stored baseline on ``split``: task -> ``(name, score in percent)``; of
    every baseline, or with ``order_free`` of those that ignore word order."""
    return {task: best_baseline(runner.ensure_baselines(task).payload, split, order_free) for task in tasks}


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
                control: str = NO_ORDER) -> pd.DataFrame:
    """Which columns the models learned (:func:`pe_book.stats.learned`), one row per task (against
    its best baseline, ``bars``: task -> ``(name, score)``) and per group (against the mean of its
    tasks' bars). On the ``order_sensitive`` tasks, and the groups of such tasks alone, the best
    variant must also beat the ``control`` variant (which cannot see word order). A group is
    testable only when each of its tasks is."""
    rows = {}

    def control_of(tasks: Sequence[str]) -> str | None:
        return control if tasks and all(t in order_sensitive for t in tasks) else None

    bar = column_bars(bars, groups)
    for task in dict.fromkeys([*bars, *(t for tasks in groups.values() for t in tasks)]):
        if task in per_seed.columns:
            row = stats.learned(per_seed, task, bar.get(task, ("no baseline", math.nan)), selection, alpha,
                                control_of([task]))
            reason = row["reason"] if task in bars else f"no baseline scores {task}"
            rows[task] = {**row, "reason": "" if row["testable"] else reason, "tasks": task}
    for group, tasks in groups.items():
        if group not in per_seed.columns:
            continue
        row = stats.learned(per_seed, group, bar[group], selection, alpha, control_of(tasks))
        failed = [rows[t]["reason"] for t in tasks if t in rows and not rows[t]["testable"]]
        failed += [f"no baseline scores {t}" for t in tasks if t not in bars and t not in rows]
        if failed:
            row = {**row, "testable": False, "reason": "; ".join(failed)}
        rows[group] = {**row, "tasks": ", ".join(tasks)}
    return pd.DataFrame.from_dict(rows, orient="index", columns=COLUMNS).rename_axis("column")


def gate(runner, per_seed: pd.DataFrame, selection: pd.DataFrame, specs: Mapping, groups: Mapping[str, Sequence[str]],
         split: str = "test", alpha: float = stats.ALPHA) -> pd.DataFrame:
    """:func:`testability` of ``groups`` and their tasks (``specs``: task -> ``TaskSpec``) against
    every stored baseline of ``runner`` on ``split``, the order-sensitive tasks held to ``none``."""
    return testability(per_seed, selection, task_bars(runner, list(specs), split), groups, alpha,
                       [t for t, s in specs.items() if s.order_sensitive])


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
    return (f"the models learned {', '.join(learned) if learned else 'no column'} beyond every baseline"
            + (f"; no verdict rests on {'; '.join(not_learned)}" if not_learned else ""))
