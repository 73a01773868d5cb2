"""The optimiser's parts shared by pretraining and fine-tuning: bf16 autocast, AdamW's weight-decay
groups and the learning-rate schedules after the warm-up (:data:`pe_lib.training.pretrain_config.SCHEDULES`)."""
from __future__ import annotations

import math
from contextlib import nullcontext
from pathlib import Path

import torch
from torch.optim.lr_scheduler import LambdaLR
from transformers import get_linear_schedule_with_warmup

from pe_lib.training.pretrain_config import PretrainConfig

NO_DECAY = ("bias", "norm.weight", "freqs")  # parameter-name endings exempt from weight decay


def use_bf16(precision: str, device: torch.device) -> bool:
    """bf16 autocast when asked, or (auto) when the hardware has fast bf16 (CPU: AMX or AVX512-BF16)."""
    if precision != "auto":
        return precision == "bf16"
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def autocast(device: torch.device, bf16: bool):
    return torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else nullcontext()


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if name.endswith(NO_DECAY) or p.ndim < 2 else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def lr_schedule(optimizer, cfg: PretrainConfig):
    """The learning-rate scheduler of ``cfg.schedule`` (:data:`SCHEDULES`) with ``cfg.warmup_steps`` of linear warm-up."""
    if cfg.schedule == "linear":
        return get_linear_schedule_with_warmup(optimizer, cfg.warmup_steps, cfg.steps)
    warmup = max(1, cfg.warmup_steps)

    def factor(step: int) -> float:  # lr of the step after ``step`` optimizer steps, over the peak
        if step < warmup:
            return step / warmup
        return 1.0 if cfg.schedule == "constant" else math.sqrt(warmup / step)

    return LambdaLR(optimizer, factor)
