"""Which sections of :mod:`pe_book.bench` to run, and the result of running them (one dict, the
format of ``results/bench.json``)."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import torch

from pe_book.bench.contenders import THREADS, BenchConfig, machine
from pe_book.bench.model_speed import bench_mfu, bench_profile, bench_relative, bench_variants, bench_vs_hf
from pe_book.bench.pipeline_speed import DryRunBench, FinetuneBench, bench_dry_run, bench_finetune, bench_smoke
from pe_book.bench.precision import bench_precision, precision_measured

SECTIONS = ("hf", "variants", "relative", "mfu", "smoke", "profile", "fine-tune", "dry-run", "precision")


@dataclass
class Plan:
    """What one benchmark run measures: its ``sections`` (of :data:`SECTIONS`), the sequence lengths
    of hf and variants, the timed steps per contender, the fine-tune section's share of each task and
    the dry-run section's base commit."""

    sections: list[str] = field(default_factory=lambda: list(SECTIONS))
    seqs: list[int] = field(default_factory=lambda: [128, 512])
    rounds: int = 5
    finetune_fraction: float = FinetuneBench.fraction
    base: str = DryRunBench.base


def measure(plan: Plan, stored_precision: dict | None = None) -> dict:
    """Run the sections of ``plan`` in :data:`~pe_book.bench.contenders.THREADS` torch threads: the
    result, with the machine, the time and the commit (``stored_precision``: the precision section
    stored so far, whose other machine types are kept)."""
    from pe_book.experiments.store import git_commit

    torch.set_num_threads(THREADS)
    result: dict = {"machine": machine(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "git_commit": git_commit()}
    configs = [BenchConfig(seq=seq, rounds=plan.rounds, batch=32 if seq <= 128 else 8) for seq in plan.seqs]
    result["configs"] = [asdict(cfg) for cfg in configs]  # of the hf and variants sections
    for cfg in configs:
        if "hf" in plan.sections:
            result.setdefault("hf", []).extend(bench_vs_hf(cfg))
        if "variants" in plan.sections:
            result.setdefault("variants", []).extend(bench_variants(cfg))
    if "profile" in plan.sections:
        result["profile"] = bench_profile(BenchConfig(seq=128, batch=32))
    if "relative" in plan.sections:
        result["relative"] = bench_relative()
    if "mfu" in plan.sections:
        result["mfu"] = bench_mfu(rounds=plan.rounds)
    if "smoke" in plan.sections:
        result["smoke"] = bench_smoke()
    if "fine-tune" in plan.sections:
        measured = bench_finetune(FinetuneBench(fraction=plan.finetune_fraction, rounds=2 * plan.rounds))
        result["fine-tune"] = {"machine": result["machine"], "created": result["created"],
                               "git_commit": result["git_commit"], **measured}
    if "dry-run" in plan.sections:
        result["dry-run"] = bench_dry_run(DryRunBench(base=plan.base))
    if "precision" in plan.sections:
        result["precision"] = precision_measured(stored_precision, bench_precision(rounds=plan.rounds), result)
    return result
