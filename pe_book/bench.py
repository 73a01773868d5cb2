"""Side-by-side benchmarks (``python -m pe_book.bench`` or ``make bench``).

Every figure is a ratio of measurements taken in the same run, interleaved step by step so that
machine noise hits all contenders alike, and printed with a description of the machine:

1. ``hf``: training throughput (tokens/s) of ``PEBertForMaskedLM`` (ape-learned) vs HF
   ``BertForMaskedLM`` with the same configuration, fp32 and bf16 autocast, at each ``--seqs``;
2. ``variants``: every basic variant's step time (and ``rpe-learned+untie-cls``'s) relative to
   ``ape-learned`` (bf16), at each ``--seqs``;
3. ``relative``: the relative-attention term alone, pe_lib's gather vs HF v4's naive
   (n, n, head_dim) einsum: forward+backward time and peak memory, at 128..2048 tokens;
4. ``mfu``: model FLOPs utilisation: the model FLOPs of a training step of the cpu profile's model
   per second, divided by the matmul peak of this machine in the same dtype, measured here;
5. ``smoke``: wall time of ``pe-book run --profile smoke`` end to end and per stage (fresh results
   and work folders, the data cache reused);
6. ``profile``: where a training step's time goes (matmuls, dtype casts, dropout's random
   numbers, other operators, the optimizer), pe_lib and HF, fp32 and bf16, at seq 128;
7. ``fine-tune``: non-padding training tokens per second of a whole fine-tuning of the cpu
   profile's model on each of its tasks (:data:`FINETUNE_TASKS`, packaged data), before (batches of a plain
   permutation, features built by each fine-tuning) and after (length-grouped batches, features
   built once per task), against the pretraining step of the same model timed in turns with them,
   and where a fine-tuning's time goes;
8. ``dry-run``: wall time of ``pe-book run --profile cpu --dry-run`` (a new process: imports, data
   and keys) of this working tree against the commit ``--base`` (a temporary git worktree of it,
   run with the same Python), in turns, and whether both listed the same artifacts;
9. ``precision``: the decisive cpu profile's pretraining step in fp32
   and in bf16, per variant, kept per machine type: which precision the profile trains in.

A training step is forward + backward + AdamW update on an MLM batch with 15% of tokens masked
(sections 1-6).
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM

from pe_lib.model import PEBertConfig, PEBertForMaskedLM
from pe_lib.positions import PE_VARIANTS

SECTIONS = ("hf", "variants", "relative", "mfu", "smoke", "profile", "fine-tune", "dry-run", "precision")
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
        from pe_lib.training.pretrain import param_groups

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


# ----------------------------------------------------------------------------- 1 and 2


def pe_lib_and_hf(cfg: BenchConfig, bf16: bool) -> dict[str, Stepper]:
    """pe_lib (ape-learned) and HF's BERT with the same configuration, on the same batch."""
    batch = mlm_batch(cfg)
    torch.manual_seed(0)
    return {"pe_lib": Stepper(pe_model(cfg, "ape-learned"), {**batch, **PRETRAINING_ROUTE}, bf16),
            "hf": Stepper(hf_model(cfg), batch, bf16)}


def bench_vs_hf(cfg: BenchConfig) -> list[dict]:
    rows = []
    for bf16 in (False, True):
        med = race(pe_lib_and_hf(cfg, bf16), cfg.rounds)
        tokens = cfg.batch * cfg.seq
        rows.append({"seq": cfg.seq, "dtype": "bf16" if bf16 else "fp32", "pe_lib_tok_s": tokens / med["pe_lib"],
                     "hf_tok_s": tokens / med["hf"], "speedup": med["hf"] / med["pe_lib"]})
    return rows


def bench_variants(cfg: BenchConfig, bf16: bool = True) -> list[dict]:
    batch = mlm_batch(cfg)
    torch.manual_seed(0)
    steppers = {v: Stepper(pe_model(cfg, v), {**batch, **PRETRAINING_ROUTE}, bf16) for v in BENCH_VARIANTS}
    med = race(steppers, cfg.rounds)
    return [{"seq": cfg.seq, "variant": v, "ms_per_step": 1000 * t, "relative_to_ape_learned": t / med["ape-learned"]}
            for v, t in med.items()]


# ----------------------------------------------------------------------------- 3: relative attention


def naive_relative(q: torch.Tensor, k: torch.Tensor, table: torch.Tensor, clip: int) -> torch.Tensor:
    """HF v4 ``relative_key_query``: materialise E[i, j] = r_{clip(i - j)}, shape (n, n, d)."""
    n = q.shape[-2]
    distance = torch.arange(n)[:, None] - torch.arange(n)[None, :]  # (n, n)
    embedding = table[distance.clamp(-clip, clip) + clip]  # (n, n, d)
    return (torch.einsum("bhld,lrd->bhlr", q, embedding) + torch.einsum("bhrd,lrd->bhlr", k, embedding)) / math.sqrt(q.shape[-1])


def _relative_worker(kind: str, n: int, batch: int, heads: int, head_dim: int, clip: int, queue) -> None:
    """Run in a fresh process: time forward+backward of one implementation, report its peak RSS
    growth over the resident set at the start (Linux /proc; the peak mark is reset first)."""
    torch.set_num_threads(THREADS)
    from pe_lib.positions import LearnedRPE

    config = PEBertConfig(hidden_size=heads * head_dim, num_attention_heads=heads, rpe_max_distance=clip, rpe_key_query=True)
    module = LearnedRPE(config)
    q = torch.randn(batch, heads, n, head_dim, requires_grad=True)
    k = torch.randn(batch, heads, n, head_dim, requires_grad=True)
    run = (lambda: module.bias(q, k)) if kind == "pe_lib" else (lambda: naive_relative(q, k, module.weight, clip))
    with open("/proc/self/clear_refs", "w") as f:  # reset the peak-RSS mark (VmHWM) to the current RSS
        f.write("5")
    before = proc_status_kib("VmRSS")
    times = []
    for _ in range(3):
        start = time.perf_counter()
        run().sum().backward()
        times.append(time.perf_counter() - start)
    queue.put({"seconds": statistics.median(times), "peak_mib": (proc_status_kib("VmHWM") - before) / 1024})


def proc_status_kib(field: str) -> int:
    """A memory field of /proc/self/status (VmRSS: resident now, VmHWM: peak since the last reset)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))


def bench_relative(seqs=(128, 512, 1024, 2048), batch: int = 1, heads: int = 4, head_dim: int = 64, clip: int = 128) -> list[dict]:
    """Each measurement in its own process, so that peak memory is that computation's alone."""
    context = multiprocessing.get_context("spawn")
    rows = []
    for n in seqs:
        row = {"seq": n}
        for kind in ("pe_lib", "naive"):
            queue = context.Queue()
            process = context.Process(target=_relative_worker, args=(kind, n, batch, heads, head_dim, clip, queue))
            process.start()
            result = queue.get()
            process.join()
            row[f"{kind}_s"], row[f"{kind}_peak_mib"] = result["seconds"], result["peak_mib"]
        row["time_ratio"] = row["pe_lib_s"] / row["naive_s"]
        row["memory_ratio"] = row["pe_lib_peak_mib"] / row["naive_peak_mib"]
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- 4: MFU


def model_flops_per_step(config: PEBertConfig, batch: int, seq: int, mask_fraction: float = 0.15) -> float:
    """Model FLOPs of one training step (forward + backward = 3x forward matmul FLOPs):
    per token and layer 2(4H^2 + 2HI) for the projections and 4nH for q.k and attention.v; the MLM
    head 2(H^2 + HV) on the masked fraction only. Embedding look-ups, norms and softmax are not counted."""
    H, I, L, V = config.hidden_size, config.intermediate_size, config.num_hidden_layers, config.vocab_size
    per_token = L * (2 * (4 * H * H + 2 * H * I) + 4 * seq * H) + mask_fraction * 2 * (H * H + H * V)
    return 3 * per_token * batch * seq


def matmul_seconds(m: int, k: int, n: int, dtype: torch.dtype, repeats: int) -> float:
    """Best of ``repeats`` timings of an (m, k) @ (k, n) matmul in ``dtype``, after one warm-up."""
    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
    a @ b
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return best


def matmul_peak(dtype: torch.dtype, size: int = 2048, repeats: int = 10) -> float:
    """FLOP/s of a square matmul in ``dtype`` on this machine (the best of ``repeats``)."""
    return 2 * size**3 / matmul_seconds(size, size, size, dtype, repeats)


def bench_mfu(profile_name: str = "cpu", batch: int = 32, rounds: int = 5) -> list[dict]:
    from pe_book.experiments.profiles import get_profile

    profile = get_profile(profile_name)
    cfg = BenchConfig(layers=profile.model["num_hidden_layers"], hidden=profile.model["hidden_size"],
                      heads=profile.model["num_attention_heads"], vocab=8192, batch=batch, seq=profile.seq_len, rounds=rounds)
    rows = []
    for bf16 in (True, False):
        torch.manual_seed(0)
        model = pe_model(cfg, "ape-learned")
        seconds = race({"model": Stepper(model, {**mlm_batch(cfg), **PRETRAINING_ROUTE}, bf16)}, rounds)["model"]
        flops = model_flops_per_step(model.config, cfg.batch, cfg.seq)
        peak = matmul_peak(torch.bfloat16 if bf16 else torch.float32)
        rows.append({"profile": profile_name, "dtype": "bf16" if bf16 else "fp32", "hidden": cfg.hidden, "tokens_per_s": cfg.batch * cfg.seq / seconds,
                     "achieved_tflops": flops / seconds / 1e12, "peak_tflops": peak / 1e12, "mfu": flops / seconds / peak})
    return rows


# ----------------------------------------------------------------------------- 6: where the time goes (profile)

#: Operator -> category of the time breakdown (an operator not listed is "elementwise, norms, softmax").
OP_CATEGORIES = {
    "matmul": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_dot_product_flash_attention_for_cpu",
               "aten::_scaled_dot_product_flash_attention_for_cpu_backward"),
    "copies and dtype casts": ("aten::copy_", "aten::_to_copy"),
    "dropout random numbers": ("aten::uniform_", "aten::bernoulli_", "aten::random_"),
}
OTHER = "elementwise, norms, softmax"


def op_shares(stepper: Stepper) -> dict[str, float]:
    """Share of the forward+backward operators' self CPU time by category (torch.profiler; shares,
    because the profiler's overhead inflates absolute times)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        stepper.forward_backward()
    stepper.optimizer.zero_grad(set_to_none=True)
    us = dict.fromkeys([*OP_CATEGORIES, OTHER], 0.0)
    for event in prof.key_averages():
        us[next((c for c, ops in OP_CATEGORIES.items() if event.key in ops), OTHER)] += event.self_cpu_time_total
    total = sum(us.values())
    return {k: v / total for k, v in us.items()}


def step_matmuls(cfg: BenchConfig, mask_fraction: float = 0.15) -> list[tuple[int, int, int, int]]:
    """The matmuls of one pe_lib training step as (count, m, k, n): forward and, for each, the two
    backward matmuls of the same size (dX = dY W, dW = dY^T X). Per layer: q/k/v, output and the
    two feed-forward projections over all tokens, q.k and attention.v per head; the sparse MLM head
    (transform and tied decoder) over the masked tokens only."""
    tokens, masked, H, I, V, n = cfg.batch * cfg.seq, round(mask_fraction * cfg.batch * cfg.seq), cfg.hidden, 4 * cfg.hidden, cfg.vocab, cfg.seq
    d, heads = cfg.hidden // cfg.heads, cfg.batch * cfg.heads
    per_layer = [(1, tokens, H, 3 * H), (1, tokens, H, H), (1, tokens, H, I), (1, tokens, I, H),
                 (heads, n, d, n), (heads, n, n, d)]
    shapes = [(cfg.layers * c, m, k, n_) for c, m, k, n_ in per_layer] + [(1, masked, H, H), (1, masked, H, V)]
    return [(3 * c, m, k, n_) for c, m, k, n_ in shapes]


def matmul_floor(cfg: BenchConfig, bf16: bool, repeats: int = 3) -> float:
    """Seconds that the matmuls of one pe_lib training step take alone, each shape timed on its own
    (best of ``repeats``) in the step's dtype: no step with these kernels can be faster."""
    dtype = torch.bfloat16 if bf16 else torch.float32
    return sum(count * matmul_seconds(m, k, n, dtype, repeats) for count, m, k, n in step_matmuls(cfg))


def bench_profile(cfg: BenchConfig) -> list[dict]:
    """What bounds the speed-up over HF, fp32 and bf16: each model's step time (raced, no profiler),
    its operator-time shares (profiler), and pe_lib's matmul floor; ``max_speedup`` = HF's step
    time / pe_lib's matmul floor is the most any pe_lib step could gain with these matmul kernels."""
    rows = []
    for bf16 in (False, True):
        steppers = pe_lib_and_hf(cfg, bf16)
        step_s = race(steppers, cfg.rounds)
        floor = matmul_floor(cfg, bf16)
        for name, stepper in steppers.items():
            rows.append({"seq": cfg.seq, "dtype": "bf16" if bf16 else "fp32", "model": name, "step_ms": 1e3 * step_s[name],
                         **({"matmul_floor_ms": 1e3 * floor, "max_speedup": step_s["hf"] / floor} if name == "pe_lib" else {}),
                         "shares": op_shares(stepper)})
    return rows


# ----------------------------------------------------------------------------- 5: smoke pipeline


def bench_smoke() -> dict:
    """``pe-book run --profile smoke`` into fresh results/work folders (the data cache is reused)."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    with tempfile.TemporaryDirectory(prefix="pe-bench-smoke-") as tmp:
        start = time.perf_counter()
        timings = Runner(get_profile("smoke"), f"{tmp}/results", f"{tmp}/work", progress=False).run()
        return {"end_to_end_s": time.perf_counter() - start, **{f"{k}_s": v for k, v in timings.items()}}


# ----------------------------------------------------------------------------- 7: fine-tuning

#: The tasks timed, by kind: those the cpu profile fine-tunes (the packaged analogues: offline).
FINETUNE_TASKS = {"sentence": "sst2", "word order": "cola", "span": "cloze", "span v2": "cloze_v2"}
#: The phases of a fine-tuning's time (``pe_lib.training.finetune.Tally``) in the order reported;
#: "training loop" is the training time outside collation, forward/backward and optimiser.
FINETUNE_PHASES = ("model", "features", "collation", "forward and backward", "optimiser", "training loop", "evaluation")


@dataclass
class FinetuneBench:
    profile: str = "cpu"  # whose model, pretraining step and FinetuneConfig are timed
    fraction: float = 0.25  # of the profile's training examples a task (fewer: minutes, not an hour)
    rounds: int = 10  # pretraining steps timed before and again after each fine-tuning


def finetune_phases(tally, wall_s: float) -> dict[str, float]:
    """Seconds of each of FINETUNE_PHASES, from a fine-tuning's tally and its wall time."""
    seconds = dict(tally.seconds)
    inner = sum(seconds.get(k, 0.0) for k in ("collation", "forward and backward", "optimiser"))
    phases = {k: seconds.get(k, 0.0) for k in FINETUNE_PHASES}
    phases["training loop"] = seconds.get("training", 0.0) - inner
    return phases | {"other": wall_s - sum(phases.values())}


def bench_finetune(cfg: FinetuneBench) -> dict:
    """Each task kind's fine-tuning, before and after, with the pretraining step of the same model
    timed ``cfg.rounds`` times just before and just after each fine-tuning (their median is its
    reference). A fine-tuning's tokens/s: its non-padding training tokens over its whole wall time
    (model, features, training, evaluation), the rate that makes a run's hours. "after" reuses the
    task's features, built once beforehand (``features_s``) as the runner does for every seed and
    model of a task."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner
    from pe_lib.training.finetune import Tally, finetune, task_features

    profile = get_profile(cfg.profile)
    rows = []
    with tempfile.TemporaryDirectory(prefix="pe-bench-finetune-") as tmp:
        runner = Runner(profile, f"{tmp}/results", f"{tmp}/work", progress=False)
        tokenizer = runner.tokenizer
        torch.manual_seed(0)
        model = PEBertForMaskedLM(runner.model_config("ape-learned"))
        model.save_pretrained(f"{tmp}/model")  # the fine-tunings start from it (speed does not depend on the weights)
        pre = profile.pretrain
        shape = BenchConfig(vocab=model.config.vocab_size, batch=pre.batch_size, seq=profile.seq_len)
        pretraining = PretrainingStepper(model, mlm_batch(shape, mask_prob=pre.mask_prob), pre.precision == "bf16",
                                         pre.lr, pre.weight_decay, pre.grad_clip)
        for kind, name in FINETUNE_TASKS.items():
            task = runner.task(name)
            task.splits["train"] = task.splits["train"].select(range(math.ceil(cfg.fraction * len(task.splits["train"]))))
            ft = profile.finetune_for(name)
            start = time.perf_counter()
            features = task_features(tokenizer, task, ft)
            features_s = time.perf_counter() - start
            for when, options in (("before", {"group_by_length": False}), ("after", {"features": features})):
                steps = [pretraining.step() for _ in range(cfg.rounds)]
                tally = Tally()
                result = finetune(f"{tmp}/model", tokenizer, task, ft, progress=False, tally=tally, **options)
                steps += [pretraining.step() for _ in range(cfg.rounds)]
                pretraining_tok_s = shape.batch * shape.seq / statistics.median(steps)
                tok_s = tally.tokens / result["wall_s"]
                rows.append({"kind": kind, "task": name, "when": when, "train_examples": len(task.splits["train"]),
                             "eval_examples": len(task.splits["validation"]) + len(task.splits["test"]),
                             "train_features": len(features.splits["train"]), "features_s": features_s,
                             "tokens": tally.tokens, "padded_tokens": tally.padded_tokens,
                             "padding_share": 1 - tally.tokens / tally.padded_tokens, "wall_s": result["wall_s"],
                             "tokens_per_s": tok_s, "pretraining_tokens_per_s": pretraining_tok_s,
                             "ratio": tok_s / pretraining_tok_s, "seconds": finetune_phases(tally, result["wall_s"]),
                             "forward_backward_tokens_per_s": tally.tokens / tally.seconds["forward and backward"]})
    return {"profile": cfg.profile, "fraction": cfg.fraction, "rounds": cfg.rounds,
            "pretraining": {"batch": shape.batch, "seq": shape.seq, "mask_prob": pre.mask_prob, "precision": pre.precision},
            "finetune": asdict(profile.finetune), "rows": rows}


# ----------------------------------------------------------------------------- 8: dry run

#: The repository whose working tree this module belongs to.
REPOSITORY = Path(__file__).resolve().parents[1]


@dataclass
class DryRunBench:
    profile: str = "cpu"  # whose dry run is timed
    base: str = "HEAD"  # the commit timed against the working tree
    rounds: int = 2  # dry runs of each, in turns


def dry_run(tree: Path, profile: str) -> tuple[float, str]:
    """Wall time and output of ``pe-book run --profile <profile> --dry-run`` in a new process running
    the code of ``tree`` (first on its path) on this repository's results, offline."""
    env = os.environ | {"PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    command = [sys.executable, "-m", "pe_book", "run", "--profile", profile, "--dry-run", "--no-progress",
               "--results", str(REPOSITORY / "results")]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def bench_dry_run(cfg: DryRunBench) -> dict:
    """The dry run of the working tree and of the commit ``cfg.base``, in turns ``cfg.rounds`` times:
    the median wall time of each, ``speedup`` = base / working tree, and whether the last two listed
    the same artifacts (``same_plan``: the same counts stored and to compute)."""
    git = ["git", "-C", str(REPOSITORY)]
    commit = subprocess.run([*git, "rev-parse", cfg.base], capture_output=True, text=True, check=True).stdout.strip()
    seconds: dict[str, list[float]] = {"base": [], "working tree": []}
    with tempfile.TemporaryDirectory(prefix="pe-bench-dry-run-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run([*git, "worktree", "add", "--quiet", "--detach", str(base), commit], check=True)
        try:
            for _ in range(cfg.rounds):
                outputs = {}
                for name, tree in (("base", base), ("working tree", REPOSITORY)):
                    wall, outputs[name] = dry_run(tree, cfg.profile)
                    seconds[name].append(wall)
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(base)], check=True)
    base_s, current_s = statistics.median(seconds["base"]), statistics.median(seconds["working tree"])
    return {"profile": cfg.profile, "base": commit, "rounds": cfg.rounds, "base_s": base_s, "working_tree_s": current_s,
            "speedup": base_s / current_s, "same_plan": outputs["base"] == outputs["working tree"], "seconds": seconds}


# ----------------------------------------------------------------------------- 9: precision
# The decisive cpu profile's pretraining step (its model, 32 x 64 tokens, its masking, AdamW with
# its weight-decay groups, gradient clipping) in fp32 and under bf16 autocast, in turns on the same
# batch, per variant. The rows are kept per machine type (results/bench.json: precision[<machine
# type>]), since which precision is faster depends on the CPU: a profile trained in chunks on
# whatever machine a session gets takes bf16 only where every machine type measured trains faster
# in it (fastest_everywhere; tests/book/test_bench.py ties the decisive cpu profile to it).

#: The variants the precision section times: an absolute PE and a relative one (the relative term's share of the step differs).
PRECISION_VARIANTS = ("ape-learned", "rpe-learned")
PRECISION_DTYPES = ("fp32", "bf16")


def machine_type(described: dict) -> str:
    """The key of a machine type in the section: its CPU, instruction-set flags, cores and threads."""
    from pe_book.experiments.store import MACHINE_TYPE

    return ", ".join(f"{field} {described.get(field)}" for field in MACHINE_TYPE)


def bench_precision(profile_name: str = "cpu-65m", rounds: int = 5) -> list[dict]:
    """Tokens/s of the profile's pretraining step in each of :data:`PRECISION_DTYPES`, per variant (median of
    ``rounds`` steps each, the two precisions in turns), with bf16's ratio to fp32."""
    from pe_book.experiments.profiles import get_profile

    profile = get_profile(profile_name)
    cfg = BenchConfig(layers=profile.model["num_hidden_layers"], hidden=profile.model["hidden_size"],
                      heads=profile.model["num_attention_heads"], vocab=8192, batch=profile.pretrain.batch_size,
                      seq=profile.seq_len, rounds=rounds)
    batch = mlm_batch(cfg, mask_prob=profile.pretrain.mask_prob)
    rows = []
    for variant in PRECISION_VARIANTS:
        steppers = {}
        for dtype in PRECISION_DTYPES:
            torch.manual_seed(0)
            model = PEBertForMaskedLM(PEBertConfig(vocab_size=cfg.vocab, position_embedding=variant, **profile.model))
            steppers[dtype] = PretrainingStepper(model, batch, dtype == "bf16", profile.pretrain.lr,
                                                 profile.pretrain.weight_decay, profile.pretrain.grad_clip)
        seconds = race(steppers, rounds)
        rows += [{"profile": profile_name, "variant": variant, "dtype": dtype, "tokens_per_s": cfg.batch * cfg.seq / s,
                  "vs_fp32": seconds["fp32"] / s} for dtype, s in seconds.items()]
    return rows


def precision_measured(stored: dict | None, rows: list[dict], result: dict) -> dict:
    """The section with this machine type's rows replaced by ``rows`` (the other types' kept)."""
    described = result["machine"]
    return {**(stored or {}), machine_type(described): {"machine": described, "created": result["created"],
                                                         "git_commit": result["git_commit"], "rows": rows}}


def fastest_everywhere(section: dict) -> str:
    """bf16 where it trains faster than fp32 on every machine type measured, for every variant;
    else fp32 (a run in chunks cannot choose its machine)."""
    ratios = [row["vs_fp32"] for entry in section.values() for row in entry["rows"] if row["dtype"] == "bf16"]
    return "bf16" if ratios and min(ratios) > 1 else "fp32"


# ----------------------------------------------------------------------------- targets

#: (name, section, row filter, value, comparison, threshold) of the project's performance targets.
TARGETS = (
    ("throughput vs HF, seq 128, fp32", "hf", {"seq": 128, "dtype": "fp32"}, "speedup", ">=", 2.0),
    ("throughput vs HF, seq 128, bf16", "hf", {"seq": 128, "dtype": "bf16"}, "speedup", ">=", 2.0),
    ("slowest variant vs ape-learned, seq 128", "variants", {"seq": 128}, "relative_to_ape_learned", "<=", 1.25),
    ("slowest variant vs ape-learned, seq 512", "variants", {"seq": 512}, "relative_to_ape_learned", "<=", 1.5),
    ("relative attention peak memory vs naive, seq 2048", "relative", {"seq": 2048}, "memory_ratio", "<=", 0.25),
    ("MFU of the cpu profile's model, bf16", "mfu", {"dtype": "bf16"}, "mfu", ">=", 0.25),
    ("fine-tuning vs pretraining tokens/s, every task kind", "fine-tune", {"when": "after"}, "ratio", ">=", 0.8),
)


def section_rows(result: dict, section: str) -> list[dict]:
    """A section's rows: the section itself, or its ``rows`` when it records more (fine-tune)."""
    rows = result.get(section, [])
    return rows.get("rows", []) if isinstance(rows, dict) else rows


def targets(result: dict) -> list[dict]:
    """Each target with the measured value (the worst matching row), whether it is met, and for a
    missed one how far it is short, relative to the threshold."""
    rows = []
    for name, section, where, key, op, threshold in TARGETS:
        values = [r[key] for r in section_rows(result, section) if all(r.get(k) == v for k, v in where.items())]
        if not values:
            rows.append({"target": name, "threshold": f"{op} {threshold:g}", "measured": None, "met": None, "short by": None})
            continue
        value = min(values) if op == ">=" else max(values)
        met = value >= threshold if op == ">=" else value <= threshold
        short = None if met else abs(value - threshold) / threshold
        rows.append({"target": name, "threshold": f"{op} {threshold:g}", "measured": value, "met": bool(met), "short by": short})
    return rows


# ----------------------------------------------------------------------------- main


def print_report(result: dict) -> None:
    m = result["machine"]
    print(f"machine: {m['cpu']}, {m['cores']} cores, torch {m['versions']['torch']}, {m['torch_threads']} threads")
    for r in result.get("hf", []):
        print(f"[hf]       seq {r['seq']:4d} {r['dtype']}: pe_lib {r['pe_lib_tok_s']:7.0f} tok/s, hf {r['hf_tok_s']:7.0f} tok/s,"
              f" speedup {r['speedup']:.2f}x")
    for r in result.get("variants", []):
        print(f"[variants] seq {r['seq']:4d} {r['variant']:16s} {r['ms_per_step']:8.1f} ms  {r['relative_to_ape_learned']:.2f}x")
    for r in result.get("relative", []):
        print(f"[relative] seq {r['seq']:4d}: time {r['pe_lib_s'] * 1e3:8.1f} vs {r['naive_s'] * 1e3:8.1f} ms ({r['time_ratio']:.2f}x),"
              f" peak {r['pe_lib_peak_mib']:7.1f} vs {r['naive_peak_mib']:7.1f} MiB ({r['memory_ratio']:.2f}x)")
    for r in result.get("mfu", []):
        print(f"[mfu]      {r['profile']} model {r['dtype']}: {r['tokens_per_s']:.0f} tok/s, {r['achieved_tflops']:.3f} of"
              f" {r['peak_tflops']:.3f} TFLOP/s peak = MFU {100 * r['mfu']:.1f}%")
    for r in result.get("profile", []):
        shares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["shares"].items())
        floor = f", matmul floor {r['matmul_floor_ms']:.0f} ms (max speed-up {r['max_speedup']:.2f}x)" if "max_speedup" in r else ""
        print(f"[profile]  seq {r['seq']} {r['dtype']} {r['model']:6s}: {r['step_ms']:.0f} ms/step{floor}; {shares}")
    if "smoke" in result:
        print("[smoke]    " + ", ".join(f"{k} {v:.1f}" for k, v in result["smoke"].items()))
    if "dry-run" in result:
        r = result["dry-run"]
        print(f"[dry-run]  {r['profile']}: base {r['base'][:10]} {r['base_s']:.1f} s, working tree {r['working_tree_s']:.1f} s"
              f" (median of {r['rounds']}): {r['speedup']:.2f}x faster; same plan: {'yes' if r['same_plan'] else 'NO'}")
    for kind, entry in result.get("precision", {}).items():
        for r in entry["rows"]:
            print(f"[precision] {r['variant']:12s} {r['dtype']}: {r['tokens_per_s']:7.0f} tok/s = {r['vs_fp32']:.2f}x fp32 ({kind})")
    for r in result.get("fine-tune", {}).get("rows", []):
        phases = ", ".join(f"{k} {v:.1f}" for k, v in r["seconds"].items())
        print(f"[fine-tune] {r['kind']:15s} ({r['task']}) {r['when']:6s}: {r['tokens_per_s']:7.0f} tok/s vs pretraining"
              f" {r['pretraining_tokens_per_s']:7.0f} = {r['ratio']:.2f}x; padding {100 * r['padding_share']:.0f}%;"
              f" {r['wall_s']:.1f} s: {phases}")


def updated(path: str, result: dict, sections: list[str]) -> dict:
    """The benchmark stored at ``path`` with ``sections`` replaced by this run's (the rest kept,
    with the machine, time and commit they were measured on)."""
    import json
    from pathlib import Path

    stored = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    if not stored:
        return result
    replaced = [*sections, *(["configs"] if {"hf", "variants"} & set(sections) else [])]  # configs: of hf and variants
    return stored | {key: result[key] for key in replaced if key in result}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pe_book.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--seqs", nargs="+", type=int, default=[128, 512], help="sequence lengths for hf/variants")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--finetune-fraction", type=float, default=FinetuneBench.fraction,
                        help="fine-tune: share of the cpu profile's training examples a task")
    parser.add_argument("--base", default=DryRunBench.base,
                        help="dry-run: the commit whose dry run is timed against the working tree's (default: HEAD)")
    parser.add_argument("--json", help="also write the results to this JSON file (atomically)")
    parser.add_argument("--update", action="store_true",
                        help="with --json: replace only the sections run in the existing file (the fine-tune section "
                             "records its own machine, time and commit)")
    args = parser.parse_args(argv)
    if not 0 < args.finetune_fraction <= 1:
        parser.error(f"--finetune-fraction must be in (0, 1], got {args.finetune_fraction}")
    torch.set_num_threads(THREADS)
    result: dict = {"machine": machine(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    from pe_book.experiments.store import git_commit

    result["git_commit"] = git_commit()
    configs = [BenchConfig(seq=seq, rounds=args.rounds, batch=32 if seq <= 128 else 8) for seq in args.seqs]
    result["configs"] = [asdict(cfg) for cfg in configs]  # of the hf and variants sections
    for cfg in configs:
        if "hf" in args.sections:
            result.setdefault("hf", []).extend(bench_vs_hf(cfg))
        if "variants" in args.sections:
            result.setdefault("variants", []).extend(bench_variants(cfg))
    if "profile" in args.sections:
        result["profile"] = bench_profile(BenchConfig(seq=128, batch=32))
    if "relative" in args.sections:
        result["relative"] = bench_relative()
    if "mfu" in args.sections:
        result["mfu"] = bench_mfu(rounds=args.rounds)
    if "smoke" in args.sections:
        result["smoke"] = bench_smoke()
    if "fine-tune" in args.sections:
        measured = bench_finetune(FinetuneBench(fraction=args.finetune_fraction, rounds=2 * args.rounds))
        result["fine-tune"] = {"machine": result["machine"], "created": result["created"], "git_commit": result["git_commit"], **measured}
    if "dry-run" in args.sections:
        result["dry-run"] = bench_dry_run(DryRunBench(base=args.base))
    if "precision" in args.sections:
        stored = json.loads(Path(args.json).read_text()).get("precision") if args.json and Path(args.json).exists() else None
        result["precision"] = precision_measured(stored, bench_precision(rounds=args.rounds), result)
    print_report(result)
    if args.json:
        from pe_lib.io import write_json

        write_json(args.json, updated(args.json, result, args.sections) if args.update else result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
