"""The chapter's tables of stored length-extrapolation payloads (pe_lib.extrapolation's records)."""
import math

import numpy as np
import pytest

from pe_book.chapters.length_extrapolation import bucket_frame, cannot_run, degradation, inside_beyond, loss_table
from pe_lib import PEBertForMaskedLM
from pe_lib.extrapolation import length_extrapolation
from pe_lib.training.mlm import MLMData, make_blocks

PAD, UNK, CLS, SEP, MASK = range(5)


def payload(make_config, variant: str, data: MLMData) -> dict:
    """The length extrapolation of a tiny random ``variant`` with 24 positions, at 1x, 2x and 4x of 8."""
    model = PEBertForMaskedLM(make_config(variant, max_position_embeddings=24)).eval()
    return length_extrapolation(model, data, [8, 16, 32], tokens=400)


def test_book_tables_show_cannot_run_and_leave_it_out_of_rankings(make_config):
    rows = make_blocks(np.random.default_rng(0).integers(5, 64, size=400), 8, CLS, SEP)
    data = MLMData(rows, rows, 64, MASK, (PAD, UNK, CLS, SEP, MASK))
    payloads = {v: payload(make_config, v, data) for v in ("ape-learned", "alibi")}
    table = loss_table(payloads)
    assert list(table.columns) == [("loss", "1x"), ("perplexity", "1x"), ("loss", "2x"), ("perplexity", "2x"),
                                   ("loss", "4x"), ("perplexity", "4x")]
    assert math.isnan(table.loc["ape-learned", ("loss", "4x")]) and math.isfinite(table.loc["alibi", ("loss", "4x")])
    reasons = cannot_run(payloads)
    assert reasons[["variant", "length", "multiplier"]].values.tolist() == [["ape-learned", 32, "4x"]]
    assert list(degradation(table).index) == ["alibi"]
    assert degradation(table, high="2x").index.tolist() == sorted(payloads, key=lambda v: (
        table.loc[v, ("loss", "2x")] - table.loc[v, ("loss", "1x")]))
    buckets = bucket_frame(payloads)
    assert set(buckets["variant"]) == {"alibi"} and set(buckets["length"]) == {32}
    assert set(bucket_frame(payloads, multiplier=2)["variant"]) == {"ape-learned", "alibi"}
    split = inside_beyond(payloads)
    assert list(split.index) == ["alibi"]
    record = payloads["alibi"]["records"][2]
    assert split.loc["alibi"].tolist() == [record["inside"]["loss"], record["beyond"]["loss"], record["inside"]["change"],
                                           record["beyond"]["change"], record["beyond"]["change_se"]]
    assert record["change"] == pytest.approx(record["loss"] - payloads["alibi"]["records"][0]["loss"])
    assert inside_beyond(payloads, multiplier=1).empty, "at 1x nothing lies beyond the pretraining length"
