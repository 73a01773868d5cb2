"""The published cpu run, read from its committed results: what its verdicts stand on.

Each column that enters a verdict is checked here against every stored baseline of each of its
tasks, read straight from the baselines artifacts (not through the gate that chose the column),
and every paper variant has the pretraining seeds that its comparisons need."""
import math
from pathlib import Path

import pytest

from pe_book import stats, tables
from pe_book.chapters import common, findings
from pe_book.experiments.baselines import baseline_score
from pe_book.experiments.profiles import PAPER_VARIANTS, get_profile
from pe_book.experiments.runner import Runner
from pe_lib.data.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def published():
    runner = Runner(get_profile("cpu"), results=ROOT / "results", progress=False, compute=False)  # read, never computed
    return runner, findings.compute(runner)


def test_every_paper_variant_has_two_pretraining_seeds_or_three(published):
    runner, _ = published
    specs = {t: get_task(t) for t in runner.profile.tasks}
    stored = common.finetuned_payloads(runner, list(PAPER_VARIANTS), specs)
    seeds = {v: {p for (variant, _, p, _) in stored if variant == v} for v in PAPER_VARIANTS}
    assert all(len(found) >= 2 for found in seeds.values()), seeds
    assert all(len(seeds[v]) >= 3 for v in ("none", "ape-learned", "rpe-learned")), seeds


def test_a_column_enters_a_verdict_only_where_its_best_variant_beats_every_baseline(published):
    runner, result = published
    entered = set(result.details.loc[result.details["outcome"] != "not testable", "column"])
    assert entered, "no column of the published run enters a verdict: nothing to check"
    for column in entered:
        row = result.testable.loc[column]
        tasks = result.groups.get(column, [column])
        assert row["testable"] and not math.isnan(row["low"])
        for task in tasks:
            payload = runner.ensure_baselines(task).payload
            task_row = result.testable.loc[task]
            for name in payload["baselines"]:  # every baseline, the rules that read word order included
                assert task_row["low"] > baseline_score(payload, name), (column, task, name)
            if get_task(task).order_sensitive:
                assert task_row["gap low"] > 0, (column, task)  # and the variant that cannot see order


def test_the_span_claims_are_not_testable_where_a_cheap_rule_matches_the_models(published):
    runner, result = published
    span = result.testable.loc[tables.SPAN]
    rules = {t: max(baseline_score(runner.ensure_baselines(t).payload, n)
                    for n in runner.ensure_baselines(t).payload["baselines"]) for t in result.groups[tables.SPAN]}
    beaten = all(result.testable.loc[t, "low"] > score for t, score in rules.items())
    assert bool(span["testable"]) == beaten
    on_span = result.details[result.details["column"].isin([tables.SPAN, *result.groups[tables.SPAN]])]
    assert beaten or (on_span["outcome"] == "not testable").all()
    if not beaten:
        only_span = [k for k, rows in result.details.groupby("claim id") if set(rows["column"]) <= set(on_span["column"])]
        assert all(result.verdicts.loc[k, "verdict"].startswith(stats.NOT_TESTABLE) for k in only_span)
