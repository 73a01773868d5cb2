"""Chapter "Fine-tuning: sentence classification and regression" (06): every variant's task scores
with their spread over seeds, beside the best constant and the bag of words scored on the same
examples."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from pe_book import tables
from pe_book.chapters import common
from pe_book.experiments import baselines
from pe_book.experiments.profiles import COMBINATIONS

CONSTANT, BOW = baselines.LABELS["constant"], baselines.LABELS["bag of words"]


@dataclass
class Classification(common.TaskScores):
    """:class:`~pe_book.chapters.common.TaskScores` of the sentence-level tasks (baseline rows
    :data:`CONSTANT` and :data:`BOW`), with ``records``: every metric, baselines included."""
    records: pd.DataFrame


def compute(runner, variants: Sequence[str] = (), tasks: Sequence[str] = (), seeds: Sequence[int] = (),
            split: str = "test") -> Classification:
    """Scores of ``variants`` (default: the profile's) on the sentence-level ``tasks`` (default:
    the profile's) on ``split``, over the fine-tuning ``seeds`` (default: the profile's) and every
    pretraining seed; as stored."""
    read = common.read_finetuned(runner, variants, tasks, seeds, split, span=False)
    records = tables.score_records(read.finetuned, read.kinds, split)
    baseline_records = tables.score_records(read.baseline_payloads, read.kinds, split)
    per_seed = tables.per_seed_scores(records, {"average": read.tasks})
    result = Classification(
        read.names, read.tasks, read.origin, per_seed, tables.summarise(per_seed),
        tables.summarise(tables.per_seed_scores(baseline_records, {"average": read.tasks})), {},
        records=pd.concat([records, baseline_records]))
    result.cited = {**read.cited(per_seed), "n_variants": len(read.names), **_findings(result)}
    return result


def _findings(result: Classification) -> dict:
    """The numbers and phrases of "What this run shows"."""
    summary, average, floor = result.summary, result.average, result.floor
    best = tables.best_per_column(summary)
    means = summary.xs("mean", axis=1, level=1)
    at_chance = [t for t in result.tasks if not (means[t] > floor.loc[CONSTANT, t]).any()]
    below_bow = [t for t in result.tasks if not (means[t] > floor.loc[BOW, t]).any()]
    return {
        **result.ranking(),
        "bow_average": floor.loc[BOW, "average"],
        "above_baseline": f"{int((average > floor.loc[CONSTANT, 'average']).sum())} of {len(average)}",
        "above_bow": f"{int((average > floor.loc[BOW, 'average']).sum())} of {len(average)}",
        "at_chance": ", ".join(at_chance) if at_chance else "none",
        "below_bow": ", ".join(below_bow) if below_bow else "none",
        "ape_learned_rank": common.ranked(average, "ape-learned"),
        "best_single_and_combination": best_single_and_combination(average),
        "per_task_best": "; ".join(f"{t}: {tables.best_text(best[t], len(summary))}" for t in result.tasks),
    }


def best_single_and_combination(average: pd.Series) -> str:
    """The clause "the best single position embedding is X, the best combination Y" for the
    variants of ``average`` (variant -> average score; NaN: not run). A single position embedding
    is any variant but ``none`` and the paper's APE + RPE combinations (:data:`COMBINATIONS`), so
    rope, ALiBi and the untied RPEs count; a kind this run has none of is said to be missing, never
    named as a variant."""
    average = average.dropna()
    singles = average[[v != "none" and v not in COMBINATIONS for v in average.index]]
    combos = average[[v in COMBINATIONS for v in average.index]]
    single = (f"the best single position embedding is {singles.idxmax()}" if len(singles)
              else "this run has no single position embedding")
    combination = (f"the best combination {combos.idxmax()}" if len(combos)
                   else "no APE + RPE combination was run")
    return f"{single}, {combination}"
