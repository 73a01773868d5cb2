import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pe_lib import PEBertForMaskedLM
from pe_lib.extrapolation import (
    CANNOT_RUN,
    OK,
    length_extrapolation,
    mask_stream,
    scored_prefix,
)
from pe_lib.training.mlm import MLMData, make_blocks

PAD, UNK, CLS, SEP, MASK = range(5)
TRAIN_LENGTH = 8


def make_data(n_tokens: int, vocab: int = 64, seed: int = 0) -> MLMData:
    """Random text as pretraining-style rows of TRAIN_LENGTH ([CLS] ... [SEP])."""
    stream = np.random.default_rng(seed).integers(5, vocab, size=n_tokens)
    rows = make_blocks(stream, TRAIN_LENGTH, CLS, SEP)
    return MLMData(rows, rows, vocab, MASK, (PAD, UNK, CLS, SEP, MASK))


def make_model(make_config, variant: str, **overrides) -> PEBertForMaskedLM:
    return PEBertForMaskedLM(make_config(variant, **overrides)).eval()


def test_loss_is_finite_deterministic_and_scores_the_same_tokens_at_every_length(make_config):
    data, model = make_data(600), make_model(make_config, "ape-sin")
    first = length_extrapolation(model, data, [8, 16, 32], tokens=600, batch_tokens=64)
    assert length_extrapolation(model, data, [8, 16, 32], tokens=600, batch_tokens=64) == first
    rebatched = length_extrapolation(model, data, [8, 16, 32], tokens=600, batch_tokens=1000)
    assert [r["loss"] for r in rebatched["records"]] == pytest.approx([r["loss"] for r in first["records"]], rel=1e-6)
    assert [r["status"] for r in first["records"]] == [OK, OK, OK]
    assert [r["multiplier"] for r in first["records"]] == [1, 2, 4]
    assert all(math.isfinite(r["loss"]) and r["perplexity"] == pytest.approx(math.exp(r["loss"])) for r in first["records"])
    assert {r["tokens"] for r in first["records"]} == {first["scored_tokens"]} and first["scored_tokens"] > 50
    other_seed = length_extrapolation(model, data, [8, 16, 32], tokens=600, seed=1, batch_tokens=64)
    assert abs(other_seed["records"][0]["loss"] - first["records"][0]["loss"]) > 1e-3, "the seed draws the masks"


def test_loss_equals_the_models_own_loss_on_the_same_rows(make_config):
    data, model = make_data(400), make_model(make_config, "rpe-learned")
    result = length_extrapolation(model, data, [16], tokens=400, batch_tokens=48)  # several batches
    inputs, labels = mask_stream(data.validation[:, 1:-1].reshape(-1)[:400], data, 0.15, seed=0)
    labels[scored_prefix(len(inputs), [16]):] = -100
    rows = torch.as_tensor(make_blocks(inputs, 16, CLS, SEP))  # (N, 16)
    targets = torch.as_tensor(make_blocks(labels, 16, -100, -100))  # (N, 16)
    with torch.no_grad():
        expected = float(model(input_ids=rows, labels=targets).loss)
    assert result["records"][0]["loss"] == pytest.approx(expected, rel=1e-5)
    record = result["records"][0]
    weighted = sum(b["loss"] * b["count"] for b in record["buckets"] if b["count"]) / record["tokens"]
    assert weighted == pytest.approx(record["loss"], rel=1e-9)
    assert [(b["start"], b["end"]) for b in record["buckets"]] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10), (10, 12),
                                                                  (12, 14), (14, 16)]


def test_learned_ape_beyond_its_positions_cannot_run(make_config):
    data, model = make_data(400), make_model(make_config, "ape-learned", max_position_embeddings=24)
    result = length_extrapolation(model, data, [8, 16, 32], tokens=400)
    ok, ok2, too_long = result["records"]
    assert ok["status"] == ok2["status"] == OK
    assert too_long == {"length": 32, "multiplier": 4, "status": CANNOT_RUN,
                        "reason": too_long["reason"]}
    assert "position 31 is beyond the maximum of 24 positions" in too_long["reason"] and "\n" not in too_long["reason"]


def test_other_value_errors_are_not_swallowed(make_config, monkeypatch):
    data, model = make_data(400), make_model(make_config, "none")

    def broken(*args, **kwargs):
        raise ValueError("something else went wrong")

    monkeypatch.setattr(model, "forward", broken)
    with pytest.raises(ValueError, match="something else"):
        length_extrapolation(model, data, [8, 16], tokens=400)


def largest_z(result) -> float:
    """Largest |bucket loss - overall loss| / bucket standard error at the longest length."""
    record = result["records"][-1]
    return max(abs(b["loss"] - record["loss"]) / b["se"] for b in record["buckets"] if b["count"])


def inside_minus_beyond_z(record) -> float:
    inside, beyond = record["inside"], record["beyond"]
    return (inside["loss"] - beyond["loss"]) / math.hypot(inside["se"], beyond["se"])


def test_without_pe_the_loss_does_not_depend_on_position(make_config):
    """No PE: attention is permutation-equivariant, so on random text every position has the same
    expected loss; bucket means stay within sampling noise of the overall mean (a wide init makes
    the loss depend strongly on the context, so the noise is not trivially small)."""
    data = make_data(20_000)
    torch.manual_seed(0)
    model = make_model(make_config, "none", initializer_range=0.5)
    result = length_extrapolation(model, data, [32], tokens=20_000, train_length=16, bucket=4)
    record = result["records"][0]
    assert len(record["buckets"]) == 8 and all(b["count"] > 200 for b in record["buckets"][1:])
    assert largest_z(result) < 4, "bucket means within sampling noise of the overall mean"
    assert abs(inside_minus_beyond_z(record)) < 4
    assert record["inside"]["count"] + record["beyond"]["count"] == record["tokens"]


class BucketIndexMLM(torch.nn.Module):
    """A fake MLM whose loss depends on position only: the target's logit is the index of the
    position's bucket of width 4 (all others 0), so a token at position p has loss
    log(e^b + V - 1) - b with b = p // 4."""

    def __init__(self, vocab: int = 64):
        super().__init__()
        self.vocab = vocab
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, labels, masked_only):  # PEBertForMaskedLM's pretraining route: (m, V) logits
        assert masked_only
        selected = labels != -100  # (B, n)
        targets = labels[selected]  # (m,)
        logits = torch.zeros(len(targets), self.vocab)  # (m, V)
        logits[torch.arange(len(targets)), targets] = (selected.nonzero()[:, 1] // 4).float()
        return SimpleNamespace(logits=logits)


def test_losses_land_in_the_bucket_of_their_position():
    """The control for the test above: a loss that does depend on position is seen, bucket by bucket."""
    data, vocab = make_data(2_000), 64
    result = length_extrapolation(BucketIndexMLM(vocab), data, [32], tokens=2_000, train_length=16, bucket=4,
                                  batch_tokens=100)
    record = result["records"][0]
    expected = [math.log(math.exp(b) + vocab - 1) - b for b in range(8)]
    assert [b["loss"] for b in record["buckets"]] == pytest.approx(expected, abs=1e-6)
    assert sum(b["count"] for b in record["buckets"]) == record["tokens"] == result["scored_tokens"]
    inside = sum(b["loss"] * b["count"] for b in record["buckets"][:4]) / sum(b["count"] for b in record["buckets"][:4])
    assert record["inside"]["loss"] == pytest.approx(inside) and record["beyond"]["loss"] < inside


def test_changes_pair_each_token_with_itself_at_the_reference_length():
    """Token s of the stream sits at position 1 + s % (L - 2) at length L; the change of a bucket
    is the mean of g(position at 32) - g(position at 8) over its tokens, g the fake's loss."""
    data, vocab = make_data(2_000), 64
    result = length_extrapolation(BucketIndexMLM(vocab), data, [8, 32], tokens=2_000, train_length=8, bucket=4)
    reference, record = result["records"]
    assert reference["change"] == 0 and all(b["change"] == 0 for b in reference["buckets"] if b["count"])
    _, labels = mask_stream(data.validation[:, 1:-1].reshape(-1)[:2_000], data, 0.15, seed=0)
    scored = np.flatnonzero(labels[: scored_prefix(2_000, [8, 32])] != -100)  # stream indices
    at_32, at_8 = 1 + scored % 30, 1 + scored % 6  # positions
    g = np.log(np.exp(np.arange(8)) + vocab - 1) - np.arange(8)  # loss of the fake by bucket index
    for b in record["buckets"]:
        tokens = at_32 // 4 == b["start"] // 4
        assert b["count"] == tokens.sum()
        assert b["change"] == pytest.approx(np.mean(g[at_32[tokens] // 4] - g[at_8[tokens] // 4]), abs=1e-6)
    beyond = at_32 >= 8
    assert record["beyond"]["change"] == pytest.approx(np.mean(g[at_32[beyond] // 4] - g[at_8[beyond] // 4]), abs=1e-6)


def test_bad_inputs_are_one_line_errors(make_config):
    data, model = make_data(40), make_model(make_config, "none")
    with pytest.raises(ValueError, match="only 36 validation tokens: not enough for one row of 64"):
        length_extrapolation(model, data, [8, 64], tokens=1000)
    with pytest.raises(ValueError, match="lengths must be a non-empty list of integers >= 3"):
        length_extrapolation(model, data, [2, 8], tokens=40)
    with pytest.raises(ValueError, match="lengths must be"):
        length_extrapolation(model, data, [], tokens=40)
