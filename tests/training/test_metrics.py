import math

import numpy as np

import pytest

from pe_lib.training import metrics


def test_squad_normalisation_matches_the_official_script():
    assert metrics.normalize_answer("The  Cat, sat!") == "cat sat"
    assert metrics.normalize_answer("an apple a day") == "apple day"


def test_squad_scores_take_the_best_gold_answer_and_handle_no_answer():
    golds = {"q1": ["Denver Broncos", "the Broncos"], "q2": [], "q3": ["Paris"]}
    preds = {"q1": "Broncos", "q2": "", "q3": "London"}
    scores = metrics.squad_scores(preds, golds)
    assert scores["exact_match"] == pytest.approx(100 * 2 / 3)  # q1 via "the Broncos", q2 empty==empty
    assert scores["f1"] == pytest.approx(100 * 2 / 3)
    assert metrics.squad_scores({"q2": "something"}, {"q2": []})["f1"] == 0.0


def test_token_f1_partial_overlap():
    assert metrics.token_f1("the big red dog", "red dog") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))


def test_glue_metrics():
    y, p = [1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 0, 1]
    assert metrics.accuracy(y, p) == pytest.approx(4 / 6)
    assert metrics.binary_f1(y, p) == pytest.approx(2 / 3)
    assert metrics.matthews(y, p) == pytest.approx(1 / 3)
    assert metrics.matthews(y, [1] * 6) == 0.0
    assert metrics.pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(0.9933992677987828)
    assert metrics.spearman([1, 2, 3], [2, 4, 7]) == pytest.approx(1.0)
    assert math.isnan(metrics.pearson([1, 2, 3], [5, 5, 5]))


def test_empty_squad_is_an_error():
    with pytest.raises(ValueError, match="no questions"):
        metrics.squad_scores({}, {})


def test_scale_metric_counts_an_undefined_correlation_as_zero():
    assert metrics.scale_metric(float("nan"), "regression", "pearson") == 0.0
    assert math.isnan(metrics.scale_metric(float("nan"), "classification", "accuracy"))
    assert metrics.scale_metric(45.0, "span", "f1") == 45.0


def test_bootstrap_se_of_a_mean_is_near_its_standard_error() -> None:
    values = np.random.default_rng(1).integers(0, 2, 2000).astype(float)
    se = metrics.bootstrap_se(lambda i: float(values[i].mean()), range(len(values)))
    assert se == pytest.approx(values.std() / np.sqrt(len(values)), rel=0.1)
    assert se == metrics.bootstrap_se(lambda i: float(values[i].mean()), range(len(values)))  # seeded


def test_bootstrap_se_draws_a_cluster_whole() -> None:
    # pairs of equal values: drawn whole, the SE is that of 500 values, not of 1000
    half = np.random.default_rng(2).normal(size=500)
    values = np.repeat(half, 2)
    clustered = metrics.bootstrap_se(lambda i: float(values[i].mean()), np.repeat(np.arange(500), 2))
    independent = metrics.bootstrap_se(lambda i: float(values[i].mean()), range(1000))
    assert clustered == pytest.approx(half.std() / np.sqrt(500), rel=0.1)
    assert clustered > 1.3 * independent
