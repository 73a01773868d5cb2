"""Chapter "Fine-tuning: span prediction" (07): every variant's exact match and F1 on the SQuAD
tasks with their spread over seeds, beside fixed answer rules scored on the same examples."""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from pe_book import tables
from pe_book.chapters import common
from pe_book.experiments import baselines
from pe_lib.positions import parse_variant

CONSTANT = baselines.LABELS["constant"]
#: The rows of the fixed rules (best constant included), which are baselines, not candidates.
RULES = [baselines.LABELS[name] for name in baselines.SPAN_RULES]
SHORT = {"exact_match": "EM", "f1": "F1"}


class SpanPrediction(common.TaskScores):
    """:class:`~pe_book.chapters.common.TaskScores` of the span tasks, over the columns
    ``"<task> EM"``, ``"<task> F1"`` and ``"average"`` (baseline rows :data:`RULES`)."""


def _per_seed(records: pd.DataFrame, tasks: list[str]) -> pd.DataFrame:
    """Every metric of every task as a column, and the average of the task scores."""
    return tables.per_seed_by_metric(records, SHORT).join(tables.per_seed_scores(records, {"average": tasks})[["average"]])


def compute(runner, variants: Sequence[str] = (), tasks: Sequence[str] = (), seeds: Sequence[int] = (),
            split: str = "test") -> SpanPrediction:
    """Scores of ``variants`` (default: the profile's) on the span ``tasks`` (default: the
    profile's) on ``split``, over the fine-tuning ``seeds`` (default: the profile's) and every
    pretraining seed; as stored."""
    read = common.read_finetuned(runner, variants, tasks, seeds, split, span=True)
    per_seed = _per_seed(tables.score_records(read.finetuned, read.kinds, split), read.tasks)
    baseline_records = tables.score_records(read.baseline_payloads, read.kinds, split)
    result = SpanPrediction(read.names, read.tasks, read.origin, per_seed, tables.summarise(per_seed),
                            tables.summarise(_per_seed(baseline_records, read.tasks)), {})
    result.cited = {**read.cited(per_seed), **_findings(result, read.finetuned)}
    return result


def _findings(result: SpanPrediction, finetuned: dict) -> dict:
    """The numbers and phrases of "What this run shows"."""
    summary, average, floor = result.summary, result.average, result.floor
    best = tables.best_per_column(summary)
    means = summary.xs("mean", axis=1, level=1)
    best_rule = floor["average"].idxmax()
    metric_columns = [c for c in result.per_seed.columns if c != "average"]
    unbeaten = [f"{c} ({floor[c].idxmax().removeprefix('baseline: ')}, {floor[c].max():.1f})"
                for c in metric_columns if not (means[c] > floor[c].max()).any()]
    rpe_models = [v for v in average.index if parse_variant(v).has_offset_table]
    rpe_above_ape = (f"{int((average[rpe_models] > average['ape-learned']).sum())} of {len(rpe_models)}"
                     if "ape-learned" in average.index and rpe_models else "none (variants not run)")
    return {
        **result.ranking(),
        "best_rule": best_rule.removeprefix("baseline: "),
        "best_rule_average": floor.loc[best_rule, "average"],
        "above_rules": f"{int((average > floor['average'].max()).sum())} of {len(average)}",
        "rules_unbeaten": "; ".join(unbeaten) if unbeaten else "none",
        "v2_note": baselines.null_threshold_note(finetuned, means, floor.loc[CONSTANT]),
        "ape_learned_average": average.get("ape-learned", math.nan),
        "none_average": average.get("none", math.nan),
        "none_rank": common.ranked(average, "none"),
        "rpe_above_ape": rpe_above_ape,
        "per_task_best": "; ".join(f"{c}: {tables.best_text(best[c], len(summary))}" for c in metric_columns),
    }
