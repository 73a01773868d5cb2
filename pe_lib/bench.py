"""Side-by-side training-step benchmarks (``python -m pe_lib.bench`` or ``make bench``).

Every figure is a ratio of timings taken in the same run, interleaved round by round so that
machine noise hits all contenders alike:

1. throughput (tokens/s) of ``PEBertForMaskedLM`` (ape-learned) vs HF ``BertForMaskedLM`` with the
   same configuration, fp32 and bf16 autocast;
2. every variant's step time relative to ``ape-learned``.

A training step is forward + backward + AdamW update on an MLM batch with 15% of tokens masked.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import torch
from transformers import BertConfig, BertForMaskedLM

from pe_lib.model import PEBertConfig, PEBertForMaskedLM
from pe_lib.positions import PE_VARIANTS


@dataclass
class BenchConfig:
    layers: int = 4
    hidden: int = 256
    heads: int = 4
    vocab: int = 8000
    batch: int = 32
    seq: int = 128
    threads: int = 2
    rounds: int = 5  # timed rounds per contender (after one warm-up step)
    steps_per_round: int = 2


def mlm_batch(cfg: BenchConfig, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, cfg.vocab, (cfg.batch, cfg.seq), generator=g)  # (B, n)
    masked = torch.rand(cfg.batch, cfg.seq, generator=g) < 0.15  # (B, n)
    labels = torch.where(masked, ids, torch.full_like(ids, -100))  # (B, n)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


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

    def __init__(self, model: torch.nn.Module, batch: dict, bf16: bool):
        self.model = model.train()
        self.batch = batch
        self.bf16 = bf16
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.times: list[float] = []
        self.step()  # warm-up (allocator, kernels)

    def step(self) -> float:
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16) if self.bf16 else nullcontext():
            loss = self.model(**self.batch).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - start


def race(steppers: dict[str, Stepper], cfg: BenchConfig) -> dict[str, float]:
    """Median seconds per step of each contender, timed in interleaved rounds."""
    for _ in range(cfg.rounds):
        for stepper in steppers.values():
            stepper.times.append(sum(stepper.step() for _ in range(cfg.steps_per_round)) / cfg.steps_per_round)
    return {name: statistics.median(s.times) for name, s in steppers.items()}


def machine() -> dict[str, str | int]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "threads": torch.get_num_threads(), "torch": torch.__version__, "python": sys.version.split()[0]}


def bench_vs_hf(cfg: BenchConfig) -> list[dict]:
    rows = []
    for bf16 in (False, True):
        batch = mlm_batch(cfg)
        torch.manual_seed(0)
        steppers = {"pe_lib": Stepper(pe_model(cfg, "ape-learned"), batch, bf16),
                    "hf": Stepper(hf_model(cfg), batch, bf16)}
        med = race(steppers, cfg)
        tokens = cfg.batch * cfg.seq
        rows.append({"dtype": "bf16" if bf16 else "fp32", "pe_lib_tok_s": tokens / med["pe_lib"],
                     "hf_tok_s": tokens / med["hf"], "speedup": med["hf"] / med["pe_lib"]})
    return rows


def bench_variants(cfg: BenchConfig, bf16: bool = True) -> list[dict]:
    batch = mlm_batch(cfg)
    torch.manual_seed(0)
    steppers = {v: Stepper(pe_model(cfg, v), batch, bf16) for v in PE_VARIANTS}
    med = race(steppers, cfg)
    return [{"variant": v, "ms_per_step": 1000 * t, "relative_to_ape_learned": t / med["ape-learned"]}
            for v, t in med.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pe_lib.bench", description=__doc__.splitlines()[0])
    for field, value in asdict(BenchConfig()).items():
        parser.add_argument(f"--{field}", type=int, default=value)
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    cfg = BenchConfig(**{k: getattr(args, k) for k in asdict(BenchConfig())})
    torch.set_num_threads(cfg.threads)
    result = {"machine": machine(), "config": asdict(cfg)}
    print(f"machine: {result['machine']}\nconfig:  {result['config']}\n")

    result["vs_hf"] = bench_vs_hf(cfg)
    print("1. training throughput, PEBertForMaskedLM (ape-learned) vs HF BertForMaskedLM")
    for r in result["vs_hf"]:
        print(f"   {r['dtype']}: pe_lib {r['pe_lib_tok_s']:8.0f} tok/s   hf {r['hf_tok_s']:8.0f} tok/s   "
              f"speedup {r['speedup']:.2f}x  (target >= 1.5x)")

    result["variants"] = bench_variants(cfg)
    print("\n2. step time relative to ape-learned (bf16 autocast; target <= 1.3x)")
    for r in result["variants"]:
        flag = "" if r["relative_to_ape_learned"] <= 1.3 else "  <-- above target"
        print(f"   {r['variant']:18s} {r['ms_per_step']:8.1f} ms  {r['relative_to_ape_learned']:.2f}x{flag}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
