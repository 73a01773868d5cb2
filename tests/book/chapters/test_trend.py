import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from book.experiments.test_runner import profile, runner, tokenizer  # noqa: F401 (fixtures)

from pe_book.chapters import trend
from pe_book.experiments.runner import Runner
from pe_book.verdicts import claims, intervals, mixed_model, power


def effect(differences, se=1.0, df=10.0, half=2.0) -> pd.DataFrame:
    """Rows of one effect at 1x, 2x, 4x, ... (the interval ``difference ± half``)."""
    tokens = [1000 * 2 ** i for i in range(len(differences))]
    return pd.DataFrame({"tokens": tokens, "difference": differences, "se": se, "df": df,
                         "low": [d - half for d in differences], "high": [d + half for d in differences]})


@pytest.mark.parametrize(("differences", "direction"), [
    ([1.0, 4.0, 7.0, 10.0, 13.0], trend.GROWS),
    ([13.0, 10.0, 7.0, 4.0, 1.0], trend.SHRINKS),
    ([-13.0, -10.0, -7.0, -4.0, -1.0], trend.SHRINKS),
    ([6.0, 3.0, 0.0, -3.0, -6.0], trend.FLIPS),
    ([3.0, 2.5, 3.5, 2.8, 3.1], trend.NO_TREND),
    ([3.0], trend.TOO_FEW),
    ([], trend.TOO_FEW),
])
def test_the_direction_of_an_effect_over_budgets(differences, direction):
    assert trend.slope(effect(differences), 0.05)["direction"] == direction


def test_the_slope_is_per_doubling_and_its_interval_widens_with_the_borrowed_se():
    exact = trend.slope(effect([1.0, 4.0, 7.0]), 0.05)
    assert exact["slope"] == pytest.approx(3.0) and exact["first"] == 1.0 and exact["last"] == 7.0
    # x = 0, 1, 2 (log2 tokens): se(slope) = se * sqrt(sum (x - xbar)^2) / sum (x - xbar)^2 = se / sqrt(2)
    half = float(intervals.interval_halfwidth(1.0 / math.sqrt(2), 10.0, 0.05))
    assert exact["slope high"] - exact["slope"] == pytest.approx(half)
    assert exact["detectable slope"] == pytest.approx(power.mde(1.0 / math.sqrt(2), 10.0, 0.05))
    assert trend.slope(effect([1.0, 4.0, 7.0], se=100.0), 0.05)["direction"] == trend.NO_TREND
    assert trend.slope(effect([1.0, 4.0, 7.0], se=math.nan), 0.05)["direction"] == trend.UNKNOWN


def per_seed(scores: dict) -> pd.DataFrame:
    """variant -> [[runs of pretraining seed 0], [runs of seed 1], ...] as a per-seed table of column "x"."""
    rows = [{"variant": v, "pretrain_seed": p, "seed": s, "x": y}
            for v, models in scores.items() for p, runs in enumerate(models) for s, y in enumerate(runs)]
    return pd.DataFrame(rows).set_index(["variant", "pretrain_seed", "seed"])


def test_one_runs_variance_is_the_pretraining_part_plus_the_variants_finetuning_part():
    table = per_seed({"a": [[60.0, 62.0], [70.0, 71.0], [64.0, 66.0]], "b": [[50.0, 51.0], [55.0, 53.0], [58.0, 59.0]]})
    variance, df = trend.run_variance(table, ["x", "absent"])
    c = mixed_model.column_stats(table, "x").components
    for i, v in enumerate(["a", "b"]):
        assert variance.loc[v, "x"] == pytest.approx(float(c.pretrain) + float(c.within[i]))
    assert df == {"x": 4.0, "absent": 0.0} and variance["absent"].isna().all()
    one_seed = trend.run_variance(per_seed({"a": [[60.0]], "b": [[50.0]]}), ["x"])[0]
    assert one_seed["x"].isna().all(), "one pretraining seed a variant: the variance is unknown"


def test_an_effects_interval_adds_both_variants_variance():
    budgets = {1000: per_seed({"a": [[60.0]], "b": [[50.0]]}), 2000: per_seed({"a": [[66.0]], "b": [[52.0]]}),
               4000: pd.DataFrame()}
    variance = pd.DataFrame({"x": {"a": 4.0, "b": 5.0}})
    rows = trend.effect_rows(budgets, [("a", "b")], ["x"], variance, {"x": 6.0}, 0.05)
    assert list(rows["tokens"]) == [1000, 2000] and list(rows["difference"]) == [10.0, 14.0]
    assert rows["se"].eq(3.0).all() and rows["effect"].eq("a − b").all()
    assert (rows["high"] - rows["difference"]).to_numpy() == pytest.approx(float(intervals.interval_halfwidth(3.0, 6.0, 0.05)))


def test_claims_are_traced_through_the_comparisons_of_the_tracked_variants():
    variance = pd.DataFrame({"span": {"ape-learned": 1.0, "none": 1.0}})
    budgets = {1000 * 2 ** i: pd.DataFrame({"span": [50.0 + 5 * i, 50.0]},
                                           index=pd.MultiIndex.from_tuples([("ape-learned", 0, 0), ("none", 0, 0)],
                                                                           names=mixed_model.LEVELS)) for i in range(4)}
    table = trend.claim_trends(claims.paper_claims(span_tasks=[]), budgets, variance, {"span": 8.0},
                               ["ape-learned", "none"], 0.05)
    assert list(table["claim id"]) == ["span-none-drops"], "only its comparison has both variants"
    row = table.iloc[0]
    assert row["effect"] == "ape-learned − none" and row["direction"] == trend.GROWS and row["slope"] == pytest.approx(5.0)


def test_the_claims_table_shows_the_interval_as_one_column_and_the_budgets_only_when_asked():
    row = {"claim id": "span-none-drops", "claim": "text", "effect": "ape-learned − none", "column": "span",
           "comparisons": 1, "budgets": 5, "first": -2.04, "last": 24.0, "slope": 8.92, "slope low": -4.97,
           "slope high": 22.81, "detectable slope": 18.44, "direction": trend.NO_TREND}
    table = pd.DataFrame([row])
    assert list(trend.style_claims(table).data.columns) == ["claim id", "effect", "column", "first", "last", "slope",
                                                            "interval", "detectable", "direction"]
    html = trend.style_claims(table, budgets=True).to_html()
    assert ">budgets<" in html and "[-4.97, +22.81]" in html and "-2.0<" in html and "18.44" in html and ">text<" not in html


def one_run(scores: dict) -> pd.DataFrame:
    """variant -> {column: score} as the per-seed table of single runs (pretraining and fine-tuning seed 0)."""
    index = pd.MultiIndex.from_tuples([(v, 0, 0) for v in scores], names=list(mixed_model.LEVELS))
    return pd.DataFrame(list(scores.values()), index=index)


def test_a_single_run_learns_a_column_only_where_its_borrowed_interval_clears_every_bar():
    test = {1000: one_run({"none": {"o": 40.0, "p": 80.0}, "a": {"o": 90.0, "p": 60.0}}),
            2000: one_run({"none": {"o": 40.0, "p": 80.0}, "a": {"o": 95.0, "p": 82.0}})}
    for table in test.values():
        table["g"] = table[["o", "p"]].mean(axis=1)
    chosen = {1000: test[1000], 2000: test[2000].assign(p=[90.0, 70.0])}  # validation picks none on p at 2000
    variance = pd.DataFrame({"o": [4.0, 4.0], "p": [4.0, 4.0], "g": [4.0, 4.0]}, index=["none", "a"])
    df = {"o": 10.0, "p": 10.0, "g": 10.0}
    bars = {"o": ("absent word", 80.0), "p": ("bag of words", 50.0)}
    table = trend.learned_by_budget(test, chosen, variance, df, bars, {"g": ["o", "p"]}, ["o"], 0.05)
    rows = table.set_index(["tokens", "column"])
    half = float(intervals.interval_halfwidth(2.0, 10.0, 0.05))
    assert rows.loc[(1000, "o"), "low"] == pytest.approx(90.0 - half) and rows.loc[(1000, "o"), "learned"]
    assert rows.loc[(1000, "o"), "gap to none"] == 50.0  # o needs word order: held to none
    assert math.isnan(rows.loc[(1000, "p"), "gap to none"]) and rows.loc[(1000, "p"), "learned"]
    assert rows.loc[(1000, "g"), "baseline"] == "absent word / bag of words" and rows.loc[(1000, "g"), "learned"]
    # at 2000 validation chooses none on p (its test score, 80, is what is held to the bar)
    assert rows.loc[(2000, "p"), "best variant"] == "none" and rows.loc[(2000, "p"), "score"] == 80.0
    assert trend.learned_text(table) == "o at 0.001M, 0.002M tokens; p at 0.001M, 0.002M tokens; g at 0.001M, 0.002M tokens"
    partly = trend.learned_by_budget(test, chosen, variance.assign(o=[900.0, 900.0]), df, bars, {"g": ["o", "p"]}, ["o"], 0.05)
    assert not partly["learned"][partly["column"] == "g"].any(), "a group is learned only where each of its tasks is"
    near = trend.learned_by_budget({1000: test[1000]}, {}, variance * 100, df, bars, {}, ["o"], 0.05)
    assert not near.set_index("column").loc["o", "learned"], "a score above the bar whose interval reaches below it"
    assert trend.learned_text(near) == "o, p at none of the budgets"
    assert trend.learned_text(near.iloc[:0]) == "no trend run is stored"
    unknown = trend.learned_by_budget({1000: test[1000]}, {}, variance.iloc[:0], df, bars, {}, ["o"], 0.05)
    assert unknown["learned"].all() and unknown["low"].isna().all(), "variance unknown: the score decides"


def test_compute_reads_the_reference_model_of_the_same_key_and_borrows_its_variance(runner, profile):  # noqa: F811
    variants = ("none", "ape-learned")
    pretrain = dataclasses.replace(profile.pretrain, schedule="constant", snapshot_steps=(2,))
    trend_runner = Runner(dataclasses.replace(profile, name="trend", variants=variants, pretrain=pretrain, seeds=(0,)),
                          runner.store.root.parent, runner.work, progress=False, tokenizer=runner.tokenizer,
                          data=runner.mlm_data())
    reference_profile = dataclasses.replace(profile, name="reference", variants=variants, pretrain=pretrain.at(2),
                                            pretrain_seeds_by_variant={v: 2 for v in variants})
    reference = trend_runner.with_profile(reference_profile)
    trend_runner.ensure_baselines("sst2")  # computing is the pipeline's; the chapter reads
    nothing = trend.compute(trend_runner, reference)
    assert not nothing.stored and nothing.effects.empty and nothing.cited["trend_runs"] == 0
    for v in variants:
        for p in (0, 1):
            for s in (0, 1):
                reference.ensure_finetuned(v, "sst2", s, pretrain_seed=p)
    borrowed = trend.compute(trend_runner, reference)
    small, large = borrowed.budgets
    assert set(borrowed.per_budget[small].index) == {("none", 0, 0), ("ape-learned", 0, 0)} and borrowed.per_budget[large].empty
    key = (reference.finetune_config("none", "sst2", 0, 0))
    assert trend_runner.finetune_config("none", "sst2", 0, 0, 2) == key, "the same model under one key"
    assert np.isfinite(borrowed.variance.loc[["none", "ape-learned"], "sst2"]).all() and borrowed.df["sst2"] == 2
    assert borrowed.effects["low"].notna().all() and list(borrowed.effects["tokens"].unique()) == [small]
    assert list(borrowed.learned["tokens"]) == [small] and list(borrowed.learned["column"]) == ["sst2"]
    other = trend_runner.with_profile(dataclasses.replace(
        reference_profile, finetune=dataclasses.replace(reference_profile.finetune, epochs=3)))
    assert not trend.compute(trend_runner, other).per_budget[small].shape[0], "another fine-tuning: not the same key"
    for v in variants:
        trend_runner.ensure_finetuned(v, "sst2", 0, steps=4)
    both = trend.compute(trend_runner, reference)
    assert list(both.effects.loc[both.effects["column"] == "sst2", "tokens"]) == [small, large]
    assert both.cited["trend_runs"] == both.cited["trend_planned"] == 4
