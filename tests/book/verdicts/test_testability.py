"""The gate of every verdict (``pe_book.verdicts.testability``): a column enters a verdict only where its
best variant (one with at least two pretraining seeds) beats every order-free baseline and, on tasks
that need word order, the variant that cannot see it; a rule that reads word order is a reference
beside them, never a bar."""
from types import SimpleNamespace

import numpy as np
import pandas as pd

from pe_book.verdicts import intervals, mixed_model, testability


def _two_variants(variants: tuple[str, str], levels: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Per-seed scores of two variants (3 pretraining x 2 fine-tuning seeds each): every column at
    its two levels, plus the same small noise."""
    rows = [(v, p, s) for v in variants for p in range(3) for s in range(2)]
    index = pd.MultiIndex.from_tuples(rows, names=list(mixed_model.LEVELS))
    noise = np.tile([0.0, 0.5, 1.0, 0.2, 0.4, 0.8], 2)
    return pd.DataFrame({c: np.r_[np.full(6, a), np.full(6, b)] + noise for c, (a, b) in levels.items()}, index=index)


def test_a_group_is_testable_only_when_each_of_its_tasks_is():
    per_seed = _two_variants(("x", "y"), {"a": (80.0, 70.0), "b": (50.0, 40.0)})
    per_seed["g"] = per_seed[["a", "b"]].mean(axis=1)
    table = testability.testability(per_seed, per_seed, {"a": ("bag of words", 60.0), "b": ("constant", 55.0)},
                                 {"g": ["a", "b"]}, 0.05)
    assert table.loc["a", "testable"] and not table.loc["b", "testable"]
    assert table.loc["b", "reason"] == "no model beats constant on b" and table.loc["a", "best variant"] == "x"
    # the group's own mean (65.5) beats the mean of its baselines (57.5), yet b is not learned
    assert table.loc["g", "mean"] - 57.5 > 5 and not table.loc["g", "testable"]
    assert table.loc["g", "reason"] == "no model beats constant on b" and table.loc["g", "baseline"] == "bag of words / constant"
    assert testability.testable_text(table) == ("the models learned a beyond every order-free baseline; no verdict "
                                                "rests on b (no model beats constant on b); g (no model beats constant "
                                                "on b)")


def test_only_order_sensitive_columns_are_held_to_the_variant_that_cannot_see_order():
    per_seed = _two_variants(("none", "x"), {"order": (80.0, 70.0), "free": (80.0, 70.0)})
    per_seed["g"] = per_seed[["order"]].mean(axis=1)
    table = testability.testability(per_seed, per_seed, {"order": ("absent word", 40.0), "free": ("bag of words", 40.0)},
                                 {"g": ["order"]}, 0.05, order_sensitive=["order"])
    assert not table.loc["order", "testable"] and table.loc["order", "control"] == "none"
    assert table.loc["order", "reason"] == "no model beats none (no word order) on order"
    assert table.loc["g", "reason"] == "no model beats none (no word order) on order"
    assert table.loc["free", "testable"] and pd.isna(table.loc["free", "control"])


def _span_payload(absent: float, neighbour: float) -> dict:
    """A span task's stored baselines: an order-free rule and one that reads word order."""
    return {"kind": "span", "baselines": {
        "constant": {"test": {"exact_match": 0.0, "f1": 0.0}, "order_free": True},
        "absent word": {"test": {"exact_match": absent, "f1": absent}, "order_free": True},
        "neighbour match": {"test": {"exact_match": neighbour, "f1": neighbour}, "order_free": False}}}


def test_a_rule_that_reads_word_order_is_a_reference_never_a_bar():
    payloads = {"cloze": _span_payload(40.0, 82.0), "cloze_v2": _span_payload(60.0, 80.0)}
    bars = testability.task_bars(payloads)  # the gate's bars: order-free
    assert bars == {"cloze": ("absent word", 40.0), "cloze_v2": ("absent word", 60.0)}
    assert testability.task_bars({"cloze": payloads["cloze"]}, order_free=False) == {"cloze": ("neighbour match", 82.0)}
    references = testability.task_references(payloads)
    assert references == {"cloze": ("neighbour match", 82.0), "cloze_v2": ("neighbour match", 80.0)}
    # the models beat the order-free rule and none by far, and neighbour match, which reads order, on
    # cloze_v2 only: above the rule that reads order or below it, the columns are testable
    per_seed = _two_variants(("none", "x"), {"cloze": (30.0, 81.0), "cloze_v2": (30.0, 85.0)})
    per_seed["span"] = per_seed[["cloze", "cloze_v2"]].mean(axis=1)
    table = testability.testability(per_seed, per_seed, bars, {"span": ["cloze", "cloze_v2"]}, 0.05,
                                    order_sensitive=["cloze", "cloze_v2"], references=references)
    assert table["testable"].all() and testability.untestable(table) == {}
    assert table.loc["cloze", "high"] < 82.0 and table.loc["cloze", "against reference"] == intervals.BELOW
    assert table.loc["cloze_v2", "against reference"] == intervals.ABOVE
    assert table.loc["span", "reference"] == "neighbour match" and table.loc["span", "reference score"] == 81.0
    assert table.loc["span", "baseline"] == "absent word" and table.loc["span", "baseline score"] == 50.0
    # a reference within the interval: the standing says so, and the gate does not change
    near = testability.testability(per_seed, per_seed, bars, {"span": ["cloze", "cloze_v2"]}, 0.05,
                                   order_sensitive=["cloze", "cloze_v2"], references={"cloze": ("neighbour match", 81.5)})
    assert near.loc["cloze", "against reference"] == intervals.WITHIN and near["testable"].all()
    assert pd.isna(near.loc["span", "reference"]), "a group's reference needs one on each of its tasks"


def test_an_order_free_baseline_above_the_best_variant_gates():
    payloads = {"cloze": _span_payload(90.0, 95.0), "cloze_v2": _span_payload(60.0, 80.0), "other": _span_payload(0, 0)}
    per_seed = _two_variants(("none", "x"), {"cloze": (30.0, 81.0), "cloze_v2": (30.0, 85.0)})
    per_seed["span"] = per_seed[["cloze", "cloze_v2"]].mean(axis=1)
    specs = {t: SimpleNamespace(order_sensitive=True) for t in ("cloze", "cloze_v2")}
    table = testability.gate(payloads, per_seed, per_seed, specs, {"span": ["cloze", "cloze_v2"]})  # specs' tasks only
    assert not table.loc["cloze", "testable"] and table.loc["cloze_v2", "testable"]
    assert table.loc["cloze", "reason"] == "no model beats absent word on cloze"
    assert testability.untestable(table) == {"cloze": "no model beats absent word on cloze",
                                             "span": "no model beats absent word on cloze"}
    assert table.loc["cloze", "reference"] == "neighbour match" and table.loc["cloze", "against reference"] == intervals.BELOW


def test_the_gate_never_chooses_a_variant_with_one_pretraining_seed():
    per_seed = _two_variants(("x", "y"), {"a": (70.0, 60.0)})
    solo = pd.DataFrame({"a": [99.0, 99.5]}, index=pd.MultiIndex.from_tuples([("solo", 0, 0), ("solo", 0, 1)],
                                                                            names=list(mixed_model.LEVELS)))
    per_seed = pd.concat([per_seed, solo])  # solo scores highest on both splits, with one pretraining seed
    table = testability.testability(per_seed, per_seed, {"a": ("bag of words", 65.0)}, {}, 0.05)
    assert table.loc["a", "best variant"] == "x" and table.loc["a", "testable"]
    assert table.loc["a", "level"] == 0.95
    # with solo as the best variant it would pass a bar that x does not
    assert not testability.testability(per_seed, per_seed, {"a": ("bag of words", 80.0)}, {}, 0.05).loc["a", "testable"]


def test_a_task_without_a_baseline_is_not_testable():
    per_seed = _two_variants(("x", "y"), {"a": (80.0, 70.0), "b": (80.0, 70.0)})
    per_seed["g"] = per_seed[["a", "b"]].mean(axis=1)
    table = testability.testability(per_seed, per_seed, {"a": ("bag of words", 40.0)}, {"g": ["a", "b"]}, 0.05)
    assert table.loc["a", "testable"] and not table.loc["b", "testable"]
    assert table.loc["b", "reason"] == "no baseline scores b" and table.loc["g", "reason"] == "no baseline scores b"


def test_a_column_above_its_bar_in_the_mean_is_within_reach_of_more_seeds():
    table = pd.DataFrame({"tasks": ["cloze", "cloze_v2", "cloze, cloze_v2", "cola"],
                          "mean": [90.0, 70.0, 85.0, 40.0], "low": [60.0, 50.0, 60.0, 20.0],
                          "baseline score": [85.0, 80.0, 82.5, 10.0], "gap": [30.0, 20.0, 25.0, -1.0],
                          "testable": [False] * 4}, index=["cloze", "cloze_v2", "span", "cola"])
    assert testability.within_reach(table, "cloze")  # above its bar in the mean, its low below: more seeds
    assert not testability.within_reach(table, "cloze_v2")  # below its bar in the mean: more seeds cannot help
    assert not testability.within_reach(table, "span"), "a group is within reach only where each of its tasks is"
    assert not testability.within_reach(table, "cola"), "behind none in the mean"
    assert not testability.within_reach(table, "absent")
