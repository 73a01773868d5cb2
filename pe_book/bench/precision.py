"""Section 9 of :mod:`pe_book.bench`, ``precision``: the decisive cpu profile's pretraining step (its
model, 32 x 64 tokens, its masking, AdamW with its weight-decay groups, gradient clipping) in fp32 and
under bf16 autocast, in turns on the same batch, per variant. The rows are kept per machine type
(results/bench.json: precision[<machine type>]), since which precision is faster depends on the CPU: a
profile trained in chunks on whatever machine a session gets takes bf16 only where every machine type
measured trains faster in it (fastest_everywhere; tests/book/test_bench.py ties the decisive cpu profile
to it)."""
from __future__ import annotations

import torch

from pe_book.bench.contenders import BenchConfig, PretrainingStepper, mlm_batch, race
from pe_lib.config import PEBertConfig
from pe_lib.model import PEBertForMaskedLM


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
