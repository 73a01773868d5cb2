"""The score columns of the verdicts: tasks grouped by kind and by whether their label depends on
word order, and the range of scores each column can take."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


#: The score columns of the findings: tasks grouped by kind and by whether their label depends on
#: word order (``TaskSpec.order_sensitive``), so that an order-free task is never averaged with
#: one that tests position. Keys ``(span, order_sensitive)``.
GROUP_NAMES = {(False, True): "order-sensitive classification", (False, False): "order-free classification",
               (True, True): "span", (True, False): "order-free span"}
ORDER_SENSITIVE_CLASSIFICATION, SPAN = GROUP_NAMES[(False, True)], GROUP_NAMES[(True, True)]


#: The range of each metric, in percent, where it is not 0 to 100 (accuracy, F1, exact match):
#: correlations run from -100 to 100.
METRIC_RANGES = {"matthews_correlation": (-100.0, 100.0), "pearson": (-100.0, 100.0), "spearmanr": (-100.0, 100.0)}


def score_ranges(specs: Mapping, groups: Mapping[str, Sequence[str]] | None = None) -> dict[str, tuple[float, float]]:
    """The range of every score column: a task's score is the mean of its metrics (``specs``: task
    -> ``TaskSpec``), a group's (``groups``: name -> tasks) the mean of its tasks' scores, so each
    ranges from the mean of the lower ends to the mean of the upper ends."""
    def mean_range(ranges: Sequence[tuple[float, float]]) -> tuple[float, float]:
        return float(np.mean([r[0] for r in ranges])), float(np.mean([r[1] for r in ranges]))

    found = {task: mean_range([METRIC_RANGES.get(m, (0.0, 100.0)) for m in spec.meta.metrics])
             for task, spec in specs.items()}
    for name, tasks in (groups or {}).items():
        found[name] = mean_range([found[t] for t in tasks])
    return found


def score_groups(specs: Mapping) -> dict[str, list[str]]:
    """The non-empty groups of :data:`GROUP_NAMES` (name -> tasks, in the order of ``specs``:
    task -> ``TaskSpec``)."""
    groups = {name: [t for t, s in specs.items() if ((s.meta.kind == "span"), s.order_sensitive) == key]
              for key, name in GROUP_NAMES.items()}
    return {name: tasks for name, tasks in groups.items() if tasks}


def task_and_group_columns(tasks: Sequence[str], groups: Mapping[str, Sequence[str]]) -> list[str]:
    """The score columns a chapter analyses one by one: each task, then each group of several tasks
    (a group of one task is that task's column again)."""
    return list(tasks) + [group for group, members in groups.items() if len(members) > 1]
