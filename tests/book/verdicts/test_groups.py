"""pe_book.verdicts.groups: the score columns and their ranges."""
from __future__ import annotations

from pe_book.verdicts.groups import ORDER_SENSITIVE_CLASSIFICATION, SPAN, score_groups, score_ranges


def test_a_columns_range_is_the_mean_of_its_metrics_and_tasks_ranges():
    from pe_lib.data.tasks import TASKS

    specs = {t: TASKS[t] for t in ("cola", "sst2", "stsb", "cloze")}
    ranges = score_ranges(specs, {"classification": ["cola", "sst2"], "span": ["cloze"]})
    assert ranges["cola"] == (-100.0, 100.0) and ranges["sst2"] == (0.0, 100.0) and ranges["stsb"] == (-100.0, 100.0)
    assert ranges["classification"] == (-50.0, 100.0) and ranges["span"] == (0.0, 100.0)


def test_score_groups_keep_order_sensitive_and_order_free_tasks_apart():
    from types import SimpleNamespace

    def spec(kind, order_sensitive):
        return SimpleNamespace(meta=SimpleNamespace(kind=kind), order_sensitive=order_sensitive)

    specs = {"sst2": spec("classification", False), "cola": spec("classification", True),
             "paws": spec("classification", True), "cloze": spec("span", True), "mrpc": spec("classification", False)}
    assert score_groups(specs) == {"order-sensitive classification": ["cola", "paws"],
                                   "order-free classification": ["sst2", "mrpc"], "span": ["cloze"]}
    assert score_groups({"squad": spec("span", False)}) == {"order-free span": ["squad"]}
    assert ORDER_SENSITIVE_CLASSIFICATION == "order-sensitive classification" and SPAN == "span"
