"""Gradient accumulation and activation checkpointing in pretraining: the plain step is unchanged
(bit for bit), accumulation gives the big batch's step, and neither moves the identity of a run
that does not use it."""
import json
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
from accelerate import Accelerator
from safetensors.torch import load_file

from pe_lib import PEBertConfig, PEBertForMaskedLM
from pe_lib.errors import InputError
from pe_lib.training.mlm import mask_tokens, step_seed
from pe_lib.training.pretrain import pretrain, train_step
from pe_lib.training.pretrain_config import PretrainConfig, config_identity, run_identity
from training.test_pretrain import run_cfg, synthetic_data


def tiny(dropout: float = 0.0) -> PEBertConfig:
    return PEBertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=16, rpe_max_distance=6, position_embedding="ape-learned+rpe-learned",
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)


def final_weights(out: Path) -> dict[str, torch.Tensor]:
    return load_file(out / "model" / "model.safetensors")


def gradients_of_the_plain_step(model, inputs, labels) -> dict[str, torch.Tensor]:
    """The pretraining step as written before accumulation existed: one forward, one backward."""
    loss = model(input_ids=inputs, labels=labels, masked_only=True).loss
    loss.backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def test_one_micro_batch_is_the_plain_step_bit_for_bit():
    data = synthetic_data()
    ids = torch.as_tensor(data.train[:8], dtype=torch.long)  # (8, 16)
    inputs, labels = mask_tokens(ids, data, 0.15, torch.Generator().manual_seed(step_seed(0, 0, 0, 0)))
    torch.manual_seed(0)
    model = PEBertForMaskedLM(tiny(dropout=0.1)).train()
    torch.manual_seed(1)  # the same dropout in both
    expected = gradients_of_the_plain_step(model, inputs, labels)
    model.zero_grad(set_to_none=True)
    torch.manual_seed(1)
    loss = train_step(model, Accelerator(cpu=True), inputs, labels, 1, torch.device("cpu"), False)
    got = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert got.keys() == expected.keys() and loss.requires_grad
    for name in expected:
        assert torch.equal(got[name], expected[name]), name


def test_defaults_leave_a_runs_identity_as_it_was():
    cfg = run_cfg()
    before = {k: v for k, v in asdict(cfg).items() if k not in ("accumulation_steps", "activation_checkpointing")}
    assert config_identity(cfg) == before  # the keys of runs made before the fields existed stay
    assert run_identity(tiny(), cfg)["config"] == json.loads(json.dumps(before))
    changed = config_identity(run_cfg(accumulation_steps=2, activation_checkpointing=True))
    assert changed == {**before, "accumulation_steps": 2, "activation_checkpointing": True}


def test_accumulation_gives_the_big_batch_run(tmp_path):
    """Without dropout, 4 micro-batches of 2 rows train the run of batches of 8 (equal up to rounding);
    the masks are drawn for the whole batch either way."""
    data = synthetic_data()
    whole = pretrain(tiny(), data, run_cfg(), tmp_path / "whole", progress=False)
    parts = pretrain(tiny(), data, run_cfg(accumulation_steps=4), tmp_path / "parts", progress=False)
    assert parts["config"]["accumulation_steps"] == 4 and "accumulation_steps" not in whole["config"]
    assert parts["validation_loss"] == pytest.approx(whole["validation_loss"], rel=1e-5)
    a, b = final_weights(tmp_path / "whole"), final_weights(tmp_path / "parts")
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-5, msg=name)
    curve = lambda out: [r["loss"] for r in map(json.loads, (out / "curve.jsonl").read_text().splitlines())]
    assert curve(tmp_path / "parts") == pytest.approx(curve(tmp_path / "whole"), rel=1e-5)


def test_activation_checkpointing_trains_the_same_run(tmp_path):
    data = synthetic_data()
    plain = pretrain(tiny(dropout=0.1), data, run_cfg(), tmp_path / "plain", progress=False)
    saved = pretrain(tiny(dropout=0.1), data, run_cfg(activation_checkpointing=True), tmp_path / "saved", progress=False)
    assert saved["validation_loss"] == pytest.approx(plain["validation_loss"], rel=1e-5)
    a, b = final_weights(tmp_path / "plain"), final_weights(tmp_path / "saved")
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-5, msg=name)


def test_accumulation_must_divide_a_process_rows(tmp_path):
    with pytest.raises(InputError, match="accumulation_steps 3 does not divide the 8 rows"):
        pretrain(tiny(), synthetic_data(), run_cfg(accumulation_steps=3), tmp_path / "run", progress=False)
    with pytest.raises(InputError, match="accumulation_steps must be >= 1"):
        PretrainConfig(accumulation_steps=0)
