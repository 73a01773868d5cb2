"""The design of a run (pe_book.design): variance from a pilot, planned effects, power of the
verdict rule, seeds allocated within a budget, and what pairing by seed index saves."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pe_book import design
from pe_book.verdicts.rule import Claim, Comparison


def per_seed(means: dict[str, float], n_pre: int = 3, n_ft: int = 2, pretrain_sd: float = 2.0, ft_sd: float = 1.0,
             seed_index_sd: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """Scores ``y = mu_v + b_s + a_vs + e_vsf`` on one column ``c``, index (variant, pretrain_seed, seed)."""
    rng = np.random.default_rng(seed)
    b = rng.normal(0, seed_index_sd, n_pre)
    rows = {}
    for v, mu in means.items():
        for s in range(n_pre):
            a = rng.normal(0, pretrain_sd)
            for f in range(n_ft):
                rows[(v, s, f)] = mu + b[s] + a + rng.normal(0, ft_sd)
    index = pd.MultiIndex.from_tuples(rows, names=["variant", "pretrain_seed", "seed"])
    return pd.DataFrame({"c": list(rows.values())}, index=index)


CLAIM = Claim("a-beats-b", "a beats b", (Comparison("a", "b", "c"),))


def test_column_variance_recovers_the_components_of_a_large_pilot():
    v = design.column_variance(per_seed({f"v{i}": 0.0 for i in range(20)}, n_pre=6, n_ft=4), "c")
    assert v.pretrain == pytest.approx(4.0, rel=0.35) and v.finetune == pytest.approx(1.0, rel=0.2)
    assert v.df_pretrain == 20 * 5


def test_planned_effects_take_what_the_pilot_measured_and_the_default_elsewhere():
    pilot = per_seed({"a": 10.0, "b": 0.0}, pretrain_sd=0.0, ft_sd=0.0)
    unmeasured = Claim("x", "x beats b", (Comparison("x", "b", "c"),))
    effects = design.planned_effects([CLAIM, unmeasured], pilot)
    assert effects == {"a-beats-b": pytest.approx(10.0), "x": design.DEFAULT_EFFECT}


def test_power_grows_with_pretraining_seeds_and_is_small_without_an_effect():
    variance = {"c": design.ColumnVariance(pretrain=25.0, finetune=4.0, df_pretrain=4)}
    few = design.claim_power(CLAIM, {"a": 2, "b": 2}, {"c": 1}, variance, 10.0)
    many = design.claim_power(CLAIM, {"a": 8, "b": 8}, {"c": 1}, variance, 10.0)
    null = design.claim_power(CLAIM, {"a": 8, "b": 8}, {"c": 1}, variance, 0.0)
    assert few < many and many > 0.8 and null < 0.1


def test_allocate_starts_every_variant_at_two_seeds_and_spends_no_more_than_the_budget():
    variance = {"c": design.ColumnVariance(pretrain=25.0, finetune=4.0, df_pretrain=4)}
    hours = {"a": 1.0, "b": 1.0, "z": 1.0}  # z enters no claim: it keeps its two seeds
    plan = design.allocate([CLAIM], list(hours), hours, 16.0, {"c": 1}, variance, {"a-beats-b": 10.0})
    assert plan["seeds"]["z"] == 2 and plan["seeds"]["a"] > 2 and plan["seeds"]["b"] > 2
    assert plan["hours"] <= 16.0
    assert plan["power"]["a-beats-b"] >= 0.8


def test_allocate_counts_stored_seeds_as_free_and_refuses_a_budget_below_two_seeds_each():
    variance = {"c": design.ColumnVariance(pretrain=25.0, finetune=4.0, df_pretrain=4)}
    hours = {"a": 1.0, "b": 1.0}
    plan = design.allocate([CLAIM], list(hours), hours, 0.0, {"c": 1}, variance, {"a-beats-b": 10.0}, have={"a": 3, "b": 2})
    assert plan["seeds"] == {"a": 3, "b": 2} and plan["hours"] == 0.0
    with pytest.raises(ValueError, match="over the budget"):
        design.allocate([CLAIM], list(hours), hours, 1.0, {"c": 1}, variance, {"a-beats-b": 10.0})


def test_pairing_finds_a_shared_seed_index_effect_and_none_where_there_is_none():
    means = {f"v{i}": float(i) for i in range(8)}
    shared = design.pairing(per_seed(means, n_pre=4, pretrain_sd=0.5, seed_index_sd=5.0), "c")
    independent = design.pairing(per_seed(means, n_pre=4, pretrain_sd=2.0, seed_index_sd=0.0, seed=3), "c")
    assert shared["saved"] > 0.5 and shared["variants"] == 8 and shared["seeds"] == 4
    assert independent["saved"] < 0.3


def test_pairing_needs_two_variants_with_two_common_seeds():
    assert np.isnan(design.pairing(per_seed({"a": 0.0}, n_pre=3), "c")["saved"])


def test_fine_tuning_seeds_pay_where_fine_tuning_is_noisy_and_cheap():
    noisy = design.ColumnVariance(pretrain=1.0, finetune=16.0, df_pretrain=4)
    quiet = design.ColumnVariance(pretrain=16.0, finetune=1.0, df_pretrain=4)
    assert design.finetune_seeds(noisy, model_hours=2.0, finetune_hours=0.1) == 3  # capped at most=3
    assert design.finetune_seeds(quiet, model_hours=2.0, finetune_hours=0.5) == 1
    assert design.finetune_seeds(design.ColumnVariance(0.0, 0.0, 4), 2.0, 0.1) == 1
