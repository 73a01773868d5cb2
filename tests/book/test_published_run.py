"""The published cpu run, read from its committed results: what its verdicts stand on.

Each column that enters a verdict is checked here against every stored order-free baseline of each
of its tasks, read straight from the baselines artifacts (not through the gate that chose the
column; a rule that reads word order is a reference, never a bar), its best variant has the
pretraining seeds of its own variance, and every paper variant has the pretraining seeds that its
comparisons need."""
import math
from pathlib import Path

import pytest

from pe_book.chapters import common, findings
from pe_book.experiments.baselines import LABELS, baseline_score, reads_order
from pe_book.experiments.profiles import PAPER_VARIANTS, get_profile
from pe_book.experiments.results import Results
from pe_book.verdicts import gate, intervals, rule
from pe_book.verdicts.groups import SPAN
from pe_lib.data.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def published():
    runner = Results(get_profile("cpu"), results=ROOT / "results", progress=False)  # read, never computed
    return runner, findings.compute(runner)


def test_every_paper_variant_has_two_pretraining_seeds_or_three(published):
    runner, _ = published
    specs = {t: get_task(t) for t in runner.profile.tasks}
    stored = common.finetuned_payloads(runner, list(PAPER_VARIANTS), specs)
    seeds = {v: {p for (variant, _, p, _) in stored if variant == v} for v in PAPER_VARIANTS}
    assert all(len(found) >= 2 for found in seeds.values()), seeds
    assert all(len(seeds[v]) >= 3 for v in ("none", "ape-learned", "rpe-learned")), seeds


def _seeds(runner, variant: str, task: str) -> int:
    """The pretraining seeds of ``variant`` fine-tuned on ``task`` in the published store."""
    stored = common.finetuned_payloads(runner, [variant], {task: get_task(task)})
    return len({p for (v, t, p, _) in stored if v == variant and t == task})


def test_a_column_enters_a_verdict_only_where_its_best_variant_beats_every_order_free_baseline(published):
    runner, result = published
    entered = set(result.details.loc[result.details["outcome"] != "not testable", "column"])
    assert entered, "no column of the published run enters a verdict: nothing to check"
    for column in entered:
        row = result.testable.loc[column]
        tasks = result.groups.get(column, [column])
        assert row["testable"] and not math.isnan(row["low"])
        for task in tasks:
            payload = runner.baselines(task).payload
            task_row = result.testable.loc[task]
            assert _seeds(runner, task_row["best variant"], task) >= gate.GATE_SEEDS, (column, task)
            for name in payload["baselines"]:
                if not reads_order(payload, name):  # every order-free baseline; a rule that reads order never gates
                    assert task_row["low"] > baseline_score(payload, name), (column, task, name)
            if get_task(task).order_sensitive:
                assert task_row["gap low"] > 0, (column, task)  # and the variant that cannot see order


def test_the_span_claims_are_testable_exactly_where_the_models_beat_every_order_free_rule(published):
    runner, result = published
    span = result.testable.loc[SPAN]
    payloads = {t: runner.baselines(t).payload for t in result.groups[SPAN]}
    rules = {t: max(baseline_score(p, n) for n in p["baselines"] if not reads_order(p, n)) for t, p in payloads.items()}
    beaten = all(result.testable.loc[t, "low"] > score and result.testable.loc[t, "gap low"] > 0
                 for t, score in rules.items())
    assert bool(span["testable"]) == beaten
    on_span = result.details[result.details["column"].isin([SPAN, *result.groups[SPAN]])]
    assert beaten or (on_span["outcome"] == "not testable").all()
    if not beaten:
        only_span = [k for k, rows in result.details.groupby("claim id") if set(rows["column"]) <= set(on_span["column"])]
        assert all(result.verdicts.loc[k, "verdict"].startswith(rule.NOT_TESTABLE) for k in only_span)
    # the rule that reads order stays beside the models as a reference, with their standing against it
    readers = {LABELS[n] for p in payloads.values() for n in p["baselines"] if reads_order(p, n)}
    shown = result.against_baselines[result.against_baselines["baseline"].isin(readers)]
    assert readers and len(shown) and (shown["role"] == gate.REFERENCE).all()
    assert set(shown["outcome"]) <= {intervals.ABOVE, intervals.BELOW, intervals.WITHIN}


def test_the_intervals_against_the_baselines_count_each_distinct_baseline_once(published):
    runner, result = published
    for column, rows in result.against_baselines.groupby("column"):
        tasks = result.groups.get(column, [column])
        distinct = set.intersection(*({LABELS[n] for n in runner.baselines(t).payload["baselines"]} for t in tasks))
        assert sorted(rows["baseline"]) == sorted(distinct), column
        assert (rows["over"] == len(distinct)).all() and rows["level"].to_numpy() == pytest.approx(1 - 0.05 / len(distinct))
