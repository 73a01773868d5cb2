"""pe_book.verdicts.mixed_model: the variance components (pooling, the floor, Bartlett), the t test and the variance table."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from book.verdicts.scores import seed_table
from pe_book.verdicts import comparisons, mixed_model, rule
from pe_book.verdicts.rule import Claim, Comparison


def test_components_pool_the_pretraining_variance_over_variants_with_two_seeds():
    frame = seed_table({"a": [[1.0, 3.0], [5.0, 7.0]], "b": [[0.0, 2.0], [2.0, 4.0], [4.0, 6.0]], "c": [[9.0, 9.5]]})
    y, variants = mixed_model.score_array(frame, "classification")
    assert variants == ["a", "b", "c"] and y.shape == (3, 3, 2) and np.isnan(y[0, 2]).all()
    c = mixed_model.components(y)
    # model means a: 2, 6 (mean 4); b: 1, 3, 5 (mean 3); c: 9.25 -> between SS 8 + 8 = 16 over df 1 + 2
    assert c.mean.tolist() == [4.0, 3.0, 9.25] and c.n_pre.tolist() == [2, 3, 1]
    assert float(c.between) == pytest.approx(16 / 3) and int(c.df_tau) == 3
    # within: a's and b's models have runs 2 apart (variance 2), c's 0.5 apart (0.125)
    assert c.own_within == pytest.approx([2.0, 2.0, 0.125]) and c.df_own.tolist() == [2, 3, 1]
    assert float(c.pooled_within) == pytest.approx((4 + 6 + 0.125) / 6) and int(c.df_within) == 6
    assert not c.unequal_ft  # Bartlett: 16-fold apart with 1 df for c is no evidence
    ft = (4 + 6 + 0.125) / 6 / 2  # the pooled fine-tuning variance over F = 2
    assert float(c.pretrain) == pytest.approx(16 / 3 - ft)
    assert c.tau2 == pytest.approx([16 / 3] * 3)  # balanced fine-tuning, between above its floor: tau2 = between


def test_tau2_is_never_below_the_floor_its_model_implies():
    # the pretrained models' means are 10, 10.25 and 9, 9.25, but their fine-tuning runs spread
    # 3.5-4 apart: the between mean square (0.03125) is far below sigma2_ft / F = 7.06 / 2
    frame = seed_table({"a": [[8.0, 12.0], [8.5, 12.0]], "b": [[7.0, 11.0], [7.5, 11.0]]})
    c = mixed_model.column_stats(frame, "classification").components
    assert float(c.between) == pytest.approx(0.03125) and float(c.pretrain) == 0.0
    assert c.tau2 == pytest.approx([c.pooled_within / 2] * 2)
    row = comparisons.compare_family([Comparison("a", "b", "classification")], frame).iloc[0]
    assert row["se"] == pytest.approx(math.sqrt(2 * c.pooled_within / 2 / 2))
    assert "tau2 at its floor" in row["variance"]
    table = mixed_model.variance_table(frame, ["classification"]).loc["classification"]
    assert table["tau2"] == pytest.approx(table["floor"]) and table["between"] < table["floor"]


def test_bartlett_is_scipys_test_from_variances_and_df():
    rng = np.random.default_rng(7)
    groups = [rng.normal(0, sd, n) for sd, n in ((1.0, 5), (3.0, 7), (0.5, 4))]
    variance = np.array([g.var(ddof=1) for g in groups])
    df = np.array([len(g) - 1 for g in groups])
    assert float(mixed_model.bartlett_p(variance, df)) == pytest.approx(sps.bartlett(*groups).pvalue)
    # a group without df is left out; one group alone is no test
    assert float(mixed_model.bartlett_p(np.r_[variance, np.nan], np.r_[df, 0])) == pytest.approx(sps.bartlett(*groups).pvalue)
    assert np.isnan(mixed_model.bartlett_p(variance[:1], df[:1]))


def test_unequal_fine_tuning_variances_keep_their_own():
    rng = np.random.default_rng(8)
    quiet = (50 + rng.normal(0, 1, (3, 1)) + rng.normal(0, 0.1, (3, 5))).tolist()
    noisy = (50 + rng.normal(0, 1, (3, 1)) + rng.normal(0, 5.0, (3, 5))).tolist()
    frame = seed_table({"quiet": quiet, "noisy": noisy})
    c = mixed_model.column_stats(frame, "classification").components
    assert c.unequal_ft and float(c.equal_ft_p) < 1e-6
    assert c.within == pytest.approx(c.own_within) and c.within[1] > 100 * c.within[0]
    assert c.tau2[1] - c.tau2[0] == pytest.approx((c.own_within[1] - c.own_within[0]) / 5)
    row = comparisons.compare_family([Comparison("quiet", "noisy", "classification")], frame).iloc[0]
    assert "own fine-tuning variances (Bartlett p" in row["variance"]
    assert row["se"] == pytest.approx(math.sqrt((c.tau2[0] + c.tau2[1]) / 3))


def test_interval_and_p_are_the_pooled_t_test_on_pretrained_model_means():
    frame = seed_table({"a": [[10.0, 12.0], [14.0, 16.0], [12.0, 12.0]], "b": [[9.0, 9.0], [11.0, 13.0], [8.0, 8.0]]})
    row = comparisons.compare_family([Comparison("a", "b", "classification")], frame).iloc[0]
    a, b = np.array([11.0, 15.0, 12.0]), np.array([9.0, 12.0, 8.0])  # the pretrained models' means
    reference = sps.ttest_ind(a, b)  # equal-variance t test, df 4
    assert row["difference"] == pytest.approx(a.mean() - b.mean())
    assert row["p"] == pytest.approx(reference.pvalue) and row["df"] == 4
    half = sps.t.isf(0.025, 4) * math.sqrt(((a.var(ddof=1) + b.var(ddof=1)) / 2) * (2 / 3))
    assert (row["low"], row["high"]) == pytest.approx((row["difference"] - half, row["difference"] + half))


def test_no_pretraining_variance_anywhere_is_unknown_not_zero():
    frame = seed_table({"a": [[10.0, 10.5, 11.0]], "b": [[1.0, 1.5, 2.0]]})
    claim = Claim("k", "a beats b", (Comparison("a", "b", "classification"),))
    result = comparisons.assess(claim, frame)
    assert result["verdict"] == rule.VARIANCE_UNKNOWN
    assert math.isnan(result["details"].iloc[0]["low"]) and math.isnan(result["MDE"])


def test_per_seed_tables_need_the_three_levels():
    frame = pd.DataFrame({"variant": ["a"], "seed": [0], "c": [1.0]}).set_index(["variant", "seed"])
    with pytest.raises(ValueError, match="pretrain_seed"):
        mixed_model.score_array(frame, "c")


def test_variance_table_names_where_the_pretraining_variance_comes_from():
    frame = seed_table({"a": [[1.0, 3.0], [5.0, 7.0]], "b": [[0.0, 2.0]]})
    frame["span"] = frame["classification"].where(frame.index.get_level_values("pretrain_seed") == 0)
    table = mixed_model.variance_table(frame, ["classification", "span"])
    assert table.loc["classification", "pooled from"] == "a" and table.loc["classification", "df"] == 1
    assert table.loc["classification", "between"] == pytest.approx(8.0)  # model means 2 and 6
    assert table.loc["classification", "floor"] == pytest.approx(1.0)  # fine-tuning variance 2 over 2 seeds
    assert table.loc["classification", "tau2"] == pytest.approx(8.0)  # pretraining 7 + floor 1
    assert table.loc["classification", "sd of one run"] == pytest.approx(math.sqrt(7.0 + 2.0))
    assert table.loc["classification", "fine-tuning per variant"] == "2.00 to 2.00"
    assert table.loc["span", "pooled from"].startswith("none") and math.isnan(table.loc["span", "tau2"])


def test_a_long_pool_is_counted_so_that_the_variance_table_fits_the_page():
    assert mixed_model.pooled_text(["a", "b", "c"]) == "a, b, c"
    assert mixed_model.pooled_text([f"v{i}" for i in range(11)]) == "11 variants"


def test_a_variant_mean_weighs_each_pretrained_model_the_same():
    table = seed_table({"a": [[1.0, 3.0, 5.0], [7.0]], "b": [[2.0]]})  # a: model means 3 and 7, not the runs' 4
    means = mixed_model.variant_means(table)
    assert list(means.index) == ["a", "b"] and means.loc["a", "classification"] == 5.0
    assert means.loc["b", "classification"] == 2.0
