"""The model's speed (sections 1-4 and 6 of :mod:`pe_book.bench`): against HF, variant by variant, the
relative-attention term against HF v4's, model FLOPs utilisation, and where a step's time goes."""
from __future__ import annotations

import math
import multiprocessing
import statistics
import time

import torch

from pe_book.bench.contenders import (BENCH_VARIANTS, PRETRAINING_ROUTE, THREADS, BenchConfig, Stepper, hf_model,
                                      mlm_batch, pe_model, race)
from pe_lib.config import PEBertConfig


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
