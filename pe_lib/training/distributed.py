"""Processes and threads of a pretraining run (``accelerate``/DDP): what a run may be launched as.

The masks and the dropout are drawn per process (the ``rank`` of the seed), and the loss is
averaged per process before DDP averages the gradients, so N processes train another run than 1 at
the same global batch: the process count is part of the run's identity (``processes`` in
checkpoints and results), a run folder is resumed only with the count it was begun with
(:func:`check_same_run` refuses any other), and :func:`launched_processes` puts it in the runner's
keys when it is above 1 (the keys of 1-process runs are those made before it was recorded). The
torch thread count changes no draw, only the rounding: fp32 CPU reductions (the gradient sums over
the batch, LayerNorm statistics, large matrix products) split their work by thread, so another
count sums in another order and the weights differ in the last bits, as on another CPU. It is
recorded (``threads``: the counts the steps ran with) and a resume with another count is warned
about (:func:`resumed_threads`), not refused: the run is then still a run of its recipe, only not
bit-identical to an uninterrupted one, and refusing would strand a run moved to another machine.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import torch

from pe_lib.config import PEBertConfig
from pe_lib.errors import InputError
from pe_lib.training.mlm import MLMData
from pe_lib.training.pretrain_config import PretrainConfig, run_identity


def launched_processes() -> int:
    """The number of processes this program was launched as (``WORLD_SIZE``, which torchrun and
    ``accelerate launch`` set; 1 when not launched by them)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def check_same_run(saved: dict, model_config: PEBertConfig, cfg: PretrainConfig, where: Path, processes: int) -> None:
    """Refuse to resume or reuse a run folder that belongs to another model or configuration, or
    that was trained by another number of processes (``saved`` without ``processes``: 1, as every
    run was before the count was recorded)."""
    if {k: saved.get(k) for k in ("model", "config")} != run_identity(model_config, cfg):
        raise InputError(f"{where} belongs to a run with another model or pretraining configuration; "
                         "use another output folder (or delete this one)")
    trained_by = saved.get("processes", 1)
    if trained_by != processes:
        raise InputError(f"{where} belongs to a run of {trained_by} process(es) and this one has {processes}: masks and "
                         f"dropout are drawn per process, so it would mix two runs; launch it with {trained_by} or use "
                         "another output folder")


def check_fits(model_config: PEBertConfig, data: MLMData, cfg: PretrainConfig, processes: int) -> None:
    """Refuse a global batch that the processes, or a process's rows that the micro-batches, do not
    divide, and a model whose vocabulary is not the data's; each error names the valid choices."""
    if cfg.batch_size % processes:
        below, above = processes * (cfg.batch_size // processes), processes * (cfg.batch_size // processes + 1)
        multiples = f"{below} or {above}" if below else f"{above}"
        raise InputError(f"batch_size {cfg.batch_size} is not divisible by the {processes} processes: use a multiple of "
                         f"{processes} ({multiples}) or launch {divisors(cfg.batch_size)} processes")
    rows = cfg.batch_size // processes
    if rows % cfg.accumulation_steps:
        raise InputError(f"accumulation_steps {cfg.accumulation_steps} does not divide the {rows} rows a process trains "
                         f"per step (batch_size {cfg.batch_size} over {processes} process(es)): use {divisors(rows)}")
    if model_config.vocab_size != data.vocab_size:
        raise InputError(f"model vocab_size {model_config.vocab_size} != tokenizer vocab size {data.vocab_size}: give "
                         f"the model the tokenizer's vocabulary size (vocab_size={data.vocab_size})")


def divisors(n: int) -> str:
    """The divisors of ``n`` in words: "1, 2, 3 or 6"."""
    found = [str(d) for d in range(1, n + 1) if n % d == 0]
    return found[0] if len(found) == 1 else f"{', '.join(found[:-1])} or {found[-1]}"


def ranks_agree(accelerator, model) -> bool:
    """True when every process holds the same weights (checked on two float64 sums)."""
    sums = torch.stack([sum(p.detach().double().sum() for p in model.parameters()),
                        sum(p.detach().double().abs().sum() for p in model.parameters())])  # (2,)
    gathered = accelerator.gather(sums.to(accelerator.device)).view(-1, 2)  # (world, 2)
    return bool((gathered == gathered[0]).all())


def resumed_threads(before: list[int], now: int, checkpoint: Path) -> list[int]:
    """The thread counts of a run resumed from ``checkpoint`` with ``now`` threads (``before``: the
    counts its steps so far ran with, empty for a checkpoint written before they were recorded);
    warns in one line when ``now`` differs from the last (module docstring: the run is then not
    bit-identical to an uninterrupted one)."""
    if before and before[-1] != now:
        warnings.warn(f"{checkpoint} was trained with {before[-1]} torch threads and this process has {now}: the "
                      f"resumed run differs from an uninterrupted one in the last bits (torch.set_num_threads("
                      f"{before[-1]}) resumes it exactly)", stacklevel=4)
    return before if before and before[-1] == now else before + [now]
