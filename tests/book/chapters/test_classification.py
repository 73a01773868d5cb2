"""pe_book.chapters.classification: the prose's best single position embedding and best
combination, right for every subset of variants a rerun may choose."""
import math

import pandas as pd
import pytest

from pe_book.chapters.classification import best_single_and_combination


@pytest.mark.parametrize("scores, clause", [
    ({"none": 50, "ape-learned": 60, "rope": 70, "ape-learned+rpe-learned": 65},
     "the best single position embedding is rope, the best combination ape-learned+rpe-learned"),
    ({"none": 80, "ape-learned": 60, "rpe-learned+untie-cls": 61},
     "the best single position embedding is rpe-learned+untie-cls, no APE + RPE combination was run"),
    ({"none": 50, "ape-learned+rpe-learned": 65, "alibi": math.nan},
     "this run has no single position embedding, the best combination ape-learned+rpe-learned"),
    ({"none": 50}, "this run has no single position embedding, no APE + RPE combination was run"),
    ({}, "this run has no single position embedding, no APE + RPE combination was run"),
])
def test_best_single_and_combination_for_a_subset_of_variants(scores, clause):
    """rope (and any variant but none and the paper's combinations) is a single position
    embedding; none is neither; a kind with no variant run is said so, never read as a variant."""
    average = pd.Series(scores, dtype=float).sort_values(ascending=False)
    assert best_single_and_combination(average) == clause
