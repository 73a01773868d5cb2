"""What the benchmark times: a small BERT of pe_lib and HF's, a fixed MLM batch, and a training step
of each (:class:`Stepper`), run in turns (:func:`race`)."""
from __future__ import annotations

import statistics
import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from transformers import BertConfig, BertForMaskedLM

from pe_lib.config import PEBertConfig
from pe_lib.model import PEBertForMaskedLM
from pe_lib.positions import PE_VARIANTS


#: The basic variants, and one with [CLS] untied (what the modifier costs).
BENCH_VARIANTS = PE_VARIANTS + ("rpe-learned+untie-cls",)


#: torch threads of every measurement: the cores of the machines this project runs on (the worker
#: processes of the relative-attention section set it too); the JSON records it as torch_threads.
THREADS = 2


@dataclass
class BenchConfig:
    layers: int = 4
    hidden: int = 256
    heads: int = 4
    vocab: int = 8000
    batch: int = 32
    seq: int = 128
    rounds: int = 5  # timed steps per contender (after one warm-up step)


def mlm_batch(cfg: BenchConfig, seed: int = 0, mask_prob: float = 0.15) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, cfg.vocab, (cfg.batch, cfg.seq), generator=g)  # (B, n)
    masked = torch.rand(cfg.batch, cfg.seq, generator=g) < mask_prob  # (B, n)
    labels = torch.where(masked, ids, torch.full_like(ids, -100))  # (B, n)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


#: The pretraining loop's route through ``PEBertForMaskedLM`` (vocabulary logits at the masked positions only).
PRETRAINING_ROUTE = {"masked_only": True}


def pe_model(cfg: BenchConfig, variant: str) -> torch.nn.Module:
    return PEBertForMaskedLM(PEBertConfig(
        vocab_size=cfg.vocab, hidden_size=cfg.hidden, num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
        intermediate_size=4 * cfg.hidden, max_position_embeddings=max(512, cfg.seq), position_embedding=variant,
    ))


def hf_model(cfg: BenchConfig) -> torch.nn.Module:
    return BertForMaskedLM(BertConfig(
        vocab_size=cfg.vocab, hidden_size=cfg.hidden, num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
        intermediate_size=4 * cfg.hidden, max_position_embeddings=max(512, cfg.seq), attn_implementation="sdpa",
    ))


class Stepper:
    """One model, its optimizer and a fixed batch; ``step()`` runs one timed training step."""

    def __init__(self, model: torch.nn.Module, batch: dict, bf16: bool, optimizer: torch.optim.Optimizer | None = None):
        self.model = model.train()
        self.batch = batch
        self.bf16 = bf16
        self.optimizer = optimizer if optimizer is not None else torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.times: list[float] = []
        self.step()  # warm-up (allocator, kernels)

    def forward_backward(self) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16) if self.bf16 else nullcontext():
            loss = self.model(**self.batch).loss
        loss.backward()

    def step(self) -> float:
        start = time.perf_counter()
        self.forward_backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - start


class PretrainingStepper(Stepper):
    """A step of the pretraining loop (``pe_lib.training.pretrain``): AdamW with its weight-decay
    groups, forward and backward by the masked-only route, gradient clipping."""

    def __init__(self, model: torch.nn.Module, batch: dict, bf16: bool, lr: float, weight_decay: float, grad_clip: float):
        from pe_lib.training.optim import param_groups

        self.grad_clip = grad_clip
        optimizer = torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, eps=1e-6)
        super().__init__(model, {**batch, **PRETRAINING_ROUTE}, bf16, optimizer)

    def step(self) -> float:
        start = time.perf_counter()
        self.forward_backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - start


def race(steppers: dict[str, Stepper], rounds: int) -> dict[str, float]:
    """Median seconds per step of each contender, one step each in turn, ``rounds`` times."""
    for _ in range(rounds):
        for stepper in steppers.values():
            stepper.times.append(stepper.step())
    return {name: statistics.median(s.times) for name, s in steppers.items()}


def machine() -> dict:
    from pe_book.experiments.store import hardware, versions

    return {**hardware(), "torch_threads": torch.get_num_threads(), "versions": versions()}
