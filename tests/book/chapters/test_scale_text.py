"""pe_book.chapters.scale_text: chapter 13 in words (its notebook's text and shown tables)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd

from pe_book.chapters import scale, scale_text


def _screen() -> pd.DataFrame:
    return pd.DataFrame({"recipe": ["a", "a", "b", "b"], "task": ["sst2", "sst2", "sst2", "cola"],
                         "variant": ["none", "ape-learned", "none", "none"], "test": [60.0, 78.94, 70.0, 10.0],
                         "training examples": [1500, 1500, 10000, 2751]})


def test_budgets_and_criteria_in_words():
    assert scale_text.million_tokens(4_096_000) == "4.1 million tokens"
    assert [scale_text.criterion_verdict(v) for v in (True, False, None)] == ["pass", "fail", "not decidable"]
    assert scale_text.standing_text(8_000_000, None) == "no stored budget of the study meets all three criteria"
    assert scale_text.standing_text(8_000_000, 8_000_000) == "the smallest budget of the study at which all three criteria hold"
    assert scale_text.standing_text(4_000_000, 8_000_000) == (
        "below the smallest budget of the study at which all three criteria hold (8.0 million tokens)")
    assert scale_text.below_text({}) == "the study stores no smaller budget"
    assert scale_text.below_text({1_000_000: ["a", "c"], 2_000_000: []}) == (
        "at 1.0 million tokens it fails or cannot decide (a), (c); at 2.0 million tokens all three hold")


def test_a_screen_reads_its_best_run_per_task_and_shows_its_table():
    assert scale_text.best_runs(_screen()) == "cola 10.0 with 2,751 examples; sst2 78.9 with 1,500 examples"
    html = scale_text.styled_screen(_screen()).to_html()
    assert "78.9" in html and "10,000" in html and "—" in html  # b has no ape-learned run: a dash


def test_the_criteria_table_says_pass_fail_or_not_decidable():
    criteria = pd.DataFrame({"tokens": [1_000_000], "steps": [100], "a": [True], "b": [False], "c": [None],
                             "loss_gap": [0.01]})
    html = scale_text.shown_criteria(criteria).to_html()
    assert "pass" in html and "fail" in html and "not decidable" in html and "steps" not in html


def test_the_affordable_budget_in_words():
    assert scale_text.affordable_text(None) == f"none of the budgets fits {scale.CPU_HOURS:g} hours"
    row = {"total (h)": 3.25, "without a measured rate": 2, "tokens": 8_000_000, "steps": 1000}
    assert scale_text.affordable_text(row) == (
        "8,000,000 tokens (1,000 steps): 3.2 hours, plus 2 artifacts whose cost has no measured rate")
    assert scale_text.affordable_text({**row, "total (h)": 0.0, "without a measured rate": 0}).endswith(
        "nothing with a measured rate left to compute")


def test_the_cpu_profiles_departures_from_the_study_in_words():
    assert scale_text.departures_text(scale.Departures()) == "none"
    departures = scale.Departures(
        settings=["corpus"], finetuning={"sst2": [scale.Change("epochs", 10, 2)]},
        precision=scale.Precision("bf16", "fp32", "auto", "bf16"), caps=({4000: ["cola", "sst2"], None: ["squad"]},
                                                                       {10000: ["cola"]}))
    assert scale_text.departures_text(departures) == (
        "corpus; fine-tuning of sst2 (epochs 10 against the study's 2); precision (bf16 for pretraining, fp32 for "
        "fine-tuning, against the study's auto, which ran in bf16); training examples (at most 4,000 for cola, sst2 "
        "and all for squad, against the study's 10,000 for cola)")


def test_the_runs_spending_and_shared_models_in_words():
    done = scale.Spending(stored=4, planned=4, spent_hours=2.0, rest_hours=0.0, unpriced=0, total_hours=2.0)
    assert scale_text.spending_text(done) == (
        f"2.0 hours for all 4 artifacts (the sum of their recorded wall times), within the {scale.CPU_HOURS:g} hours asked")
    part = scale.Spending(stored=1, planned=4, spent_hours=2.0, rest_hours=20.0, unpriced=1, total_hours=22.0)
    assert scale_text.spending_text(part).endswith(
        "artifacts have no measured rate yet: 22.0 hours in all, over the 10 hours asked")
    assert scale_text.shared_text(None) == "no model of the cpu profile is stored yet"
    assert scale_text.shared_text(scale.SharedModels(0, 0, math.nan, 0)) == (
        "the study and the cpu profile share no stored model at this budget yet")
    assert scale_text.shared_text(scale.SharedModels(2, 1, 1e-3, 1)) == (
        "1 of the 2 models that both trained (same variant and pretraining seed) have the same validation loss to "
        "the last bit; the largest difference is 1.00e-03 nats (1 more the study took from the cpu profile)")


def test_the_trend_status_names_its_profile():
    assert scale_text.trend_status(None, "").startswith("not part of this book")
    cited = {"trend_reference": "cpu", "trend_runs": 3, "trend_planned": 9, "trend_variants": "none, ape-learned",
             "trend_budgets": "4M, 8M"}
    assert scale_text.trend_status(SimpleNamespace(cited=cited), "trend") == (
        "profile trend holds 3 of its 9 fine-tunings (none, ape-learned; budgets 4M, 8M tokens); each run's variance "
        "is borrowed from profile cpu")
