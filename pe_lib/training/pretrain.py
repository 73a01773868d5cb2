"""Resumable masked-language-model pretraining, single- or multi-process (``accelerate``/DDP).

Objective (Devlin et al. 2019): 15% of the non-special tokens are selected; of those 80% become
[MASK], 10% a random token, 10% stay; the loss is the cross-entropy at the selected positions.
AdamW, linear warm-up then a schedule
(:data:`pe_lib.training.pretrain_config.SCHEDULES`), gradient clipping, optional bf16 autocast.

Anytime schedules and snapshots. Under the ``linear`` schedule (BERT's: decay to zero at the last
step) the learning rate of step t depends on the run's length. Under ``constant`` and
``inverse-sqrt`` it does not, so the model after t steps of a long run *is* the model of a run of t
steps; ``snapshot_steps`` saves those models on the way (``snapshots/step-N``), and
``pretrain(..., until=t)`` trains only up to a snapshot and returns it: one run of 16x steps gives
the models of the budgets 1x, 2x, 4x, 8x and 16x, each finished (and committable) as soon as it is
reached. For the same reason a finished run of t steps is the first t steps of every longer run of
its recipe: :func:`pe_lib.training.checkpoints.extend` starts the longer run's folder from the shorter
run's last checkpoint.

Determinism and resuming. Everything random is a pure function of ``(seed, step, rank)``: the batch
rows come from a per-epoch permutation seeded by ``(seed, epoch)``, the masking generator and the
dropout RNG are re-seeded from ``(seed, step, rank)`` at every step. A checkpoint therefore needs
only the weights, the optimizer and scheduler states and the step; a resumed run replays exactly
the batches, masks and dropout of an uninterrupted one and ends with identical weights (same
machine, same threads).

Processes and threads (:mod:`pe_lib.training.distributed`): N processes train another run than
1 at the same global batch, so the process count is part of the run's identity and a run folder is
resumed only with the count it was begun with; another torch thread count changes only the rounding,
and a resume with one is warned about, not refused.

Memory. ``accumulation_steps`` cuts each process's rows of a step into that many micro-batches whose
gradients are summed before the optimizer step, each micro-batch's mean loss weighted by its share
of the masked tokens: the step's gradient is the whole batch's (the masks are drawn for the whole
batch, as without accumulation), equal up to float rounding when there is no dropout (dropout draws
its masks micro-batch by micro-batch). ``activation_checkpointing`` recomputes each layer in the
backward pass instead of keeping its activations (torch restores the RNG, so the same dropout).
Both are part of a run's identity when they are set (:func:`pe_lib.training.pretrain_config.config_identity`); at their defaults
they are left out of it, so the identities and keys of runs made before they existed stay. bf16
is ``precision`` (autocast on CUDA and on CPUs with fast bf16).

The run folder (its layout, checkpoints, snapshots and final files, each read only with its
checksum) is :mod:`pe_lib.training.checkpoints`; the configuration and a run's identity
:mod:`pe_lib.training.pretrain_config`; the data, batches, masks and validation loss
:mod:`pe_lib.training.mlm`.
"""
from __future__ import annotations

import copy
import json
import math
import os
import pickle
import time
import warnings
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from pe_lib.config import PEBertConfig
from pe_lib.errors import CorruptFileError, InputError
from pe_lib.io import (
    MANIFEST,
    atomic_write_text,
    exclusive_lock,
    explain_disk_full,
    manifested_dir,
    read_json,
    remove_stale_parts,
    write_json,
    write_manifest,
)
from pe_lib.model import PEBertForMaskedLM, model_card, quiet_transformers
from pe_lib.training.checkpoints import (
    WRITTEN_ATOMICALLY,
    check_run_folder,
    curve_until,
    finished_result,
    finished_snapshot,
    load_checkpoint,
    save_checkpoint,
    set_aside,
    snapshot_dir,
    verified_checkpoint,
)
from pe_lib.training.distributed import check_fits, check_same_run, ranks_agree, resumed_threads
from pe_lib.training.mlm import MLMData, batch_rows, evaluate, mask_tokens, step_seed
from pe_lib.training.optim import autocast, lr_schedule, param_groups, use_bf16
from pe_lib.training.pretrain_config import PretrainConfig, run_identity


def pretrain(
    model_config: PEBertConfig,
    data: MLMData,
    cfg: PretrainConfig,
    out_dir: str | os.PathLike,
    progress: bool = True,
    on_step: Callable[[int], None] | None = None,
    until: int | None = None,
    tokenizer=None,
    card: Mapping[str, Any] | None = None,
) -> dict:
    """Pretrain ``PEBertForMaskedLM(model_config)`` on ``data``; resume from ``out_dir`` if it holds a
    checkpoint. ``on_step(step)`` is called after each completed step (tests use it to interrupt).
    Returns the content of ``result.json``; with ``until`` (a snapshot step), trains only up to it
    and returns the snapshot's result (its model is ``snapshot_dir(out_dir, until) / "model"``).
    Each saved model folder also holds ``tokenizer`` (so ``pipeline("fill-mask", model=folder)``
    works) and a model card whose training section lists ``card`` (label -> value) and the steps."""
    from accelerate import Accelerator

    out_dir = Path(out_dir)
    check_run_folder(out_dir)
    until = cfg.at(until if until is not None else cfg.steps).steps  # refuses a step with no snapshot
    accelerator = Accelerator(cpu=not torch.cuda.is_available())  # cpu=True: DDP over gloo on CPUs
    result = finished_result(out_dir) if until == cfg.steps else finished_snapshot(out_dir, until)
    if result is not None:
        check_same_run(result, model_config, cfg, out_dir / "result.json", accelerator.num_processes)
        return result
    if accelerator.is_main_process:
        with exclusive_lock(out_dir.parent / f".{out_dir.name}.lock", f"the run folder {out_dir}"):
            return _pretrain(accelerator, model_config, data, cfg, out_dir, progress, on_step, until, tokenizer, card)
    return _pretrain(accelerator, model_config, data, cfg, out_dir, progress, on_step, until, tokenizer, card)


def train_step(ddp_model, accelerator, inputs: torch.Tensor, labels: torch.Tensor, parts: int, device,
               bf16: bool) -> torch.Tensor:
    """Forward and backward of one process's rows of a step, (b, n) inputs and labels, in ``parts``
    micro-batches; returns the step's loss, the mean over its masked tokens (module docstring:
    Memory). DDP synchronises the gradients at the last micro-batch with a target only."""
    if parts == 1:
        with autocast(device, bf16):
            # masked_only: the vocabulary logits of the masked tokens alone (PEBertForMaskedLM)
            loss = ddp_model(input_ids=inputs.to(device), labels=labels.to(device), masked_only=True).loss
        accelerator.backward(loss)
        return loss
    micro = [(x, y) for x, y in zip(inputs.chunk(parts), labels.chunk(parts)) if (y != -100).any()]  # (b/parts, n) each
    total = sum(int((y != -100).sum()) for _, y in micro)
    losses = []
    for i, (x, y) in enumerate(micro):
        with nullcontext() if i == len(micro) - 1 else accelerator.no_sync(ddp_model):
            with autocast(device, bf16):
                share = int((y != -100).sum()) / total
                loss = ddp_model(input_ids=x.to(device), labels=y.to(device), masked_only=True).loss * share
            accelerator.backward(loss)
        losses.append(loss.detach())
    return torch.stack(losses).sum()


def save_model_folder(model, folder: Path, steps: int, tokens: int, tokenizer=None, card: Mapping[str, Any] | None = None):
    """``model.save_pretrained(folder)``, the tokenizer beside it, and the model card's training section."""
    with quiet_transformers():
        model.save_pretrained(folder)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    training = {**(card or {}), "steps": f"{steps:,}", "tokens": f"{tokens:,}"}
    atomic_write_text(folder / "README.md", model_card(model.config, type(model).__name__, training))


@dataclass
class Run:
    """One process's share of the run being trained in ``out_dir``: its model, optimizer and schedule,
    and where training stands (the step it resumed from, the wall time, curve, thread counts and
    origin of the steps before it)."""

    accelerator: Any
    model_config: PEBertConfig
    data: MLMData
    cfg: PretrainConfig
    out_dir: Path
    bf16: bool
    model: PEBertForMaskedLM
    optimizer: torch.optim.Optimizer
    scheduler: Any
    tokenizer: Any = None  # saved beside each model folder
    card: Mapping[str, Any] | None = None  # the model card's training section
    start: int = 0  # the step training resumes from
    elapsed_before: float = 0.0  # wall seconds of the steps before ``start``
    records: list[dict] = field(default_factory=list)  # the curve so far
    origin: dict = field(default_factory=dict)  # {"extended_from": the shorter run folder} of a run begun from one
    threads: list[int] = field(default_factory=lambda: [torch.get_num_threads()])  # counts the steps ran with, in order

    @property
    def world(self) -> int:
        return self.accelerator.num_processes

    @property
    def main(self) -> bool:
        return self.accelerator.is_main_process

    @property
    def tokens_per_step(self) -> int:
        return self.cfg.batch_size * self.data.seq_len


def new_run(accelerator, model_config: PEBertConfig, data: MLMData, cfg: PretrainConfig, out_dir: Path, tokenizer=None,
            card: Mapping[str, Any] | None = None) -> Run:
    """The run at step 0: the model initialised from ``cfg.seed`` on the process's device, AdamW and
    the learning-rate schedule."""
    device = accelerator.device
    bf16 = use_bf16(cfg.precision, device)
    torch.manual_seed(cfg.seed)
    # a copy: save_pretrained records `architectures` in the model's config, which must not change the caller's
    model = PEBertForMaskedLM(copy.deepcopy(model_config)).to(device).train()
    if cfg.activation_checkpointing:
        model.activation_checkpointing_enable()
    optimizer = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.999), eps=1e-6)
    return Run(accelerator, model_config, data, cfg, out_dir, bf16, model, optimizer, lr_schedule(optimizer, cfg),
               tokenizer, card)


def resume(run: Run, until: int) -> None:
    """Load the latest verified checkpoint of ``run.out_dir`` into ``run`` (weights, optimizer and
    schedule states, step, wall time, curve, thread counts, origin); without one ``run`` stays at
    step 0. A checkpoint whose trainer state is not plain tensors is refused unexecuted and set
    aside (``refused/``), and training starts from step 0. Training past a missing snapshot
    ``until`` is an error, since its model can no longer be kept."""
    checkpoint = verified_checkpoint(run.out_dir)
    if checkpoint is None:
        return
    check_same_run(read_json(checkpoint / "state.json"), run.model_config, run.cfg, checkpoint, run.world)
    try:
        state = load_checkpoint(checkpoint, run.model, run.optimizer, run.scheduler)
    except pickle.UnpicklingError as error:  # refused unexecuted; set aside so that it cannot fail every rerun
        aside = set_aside(checkpoint, run.out_dir) if run.main else checkpoint
        warnings.warn(f"refused checkpoint {checkpoint}: its trainer state is not plain tensors "
                      f"({str(error).split('. ')[0]}); set aside as {aside}, training from step 0", stacklevel=3)
        return
    run.start, run.elapsed_before = state["step"], state["elapsed_s"]
    run.origin = {k: state[k] for k in ("extended_from",) if k in state}
    run.threads = resumed_threads(state.get("threads", []), run.threads[0], checkpoint)
    run.records = state["curve"] if "curve" in state else curve_until(run.out_dir / "curve.jsonl", run.start)
    if until < run.cfg.steps and run.start >= until:  # the snapshot is missing or corrupt, training at or past it
        raise CorruptFileError(f"the snapshot at step {until} of {run.out_dir} is missing or corrupt and its "
                               f"training is past it (step {run.start}); delete {run.out_dir} to train it again")


def open_run_folder(run: Run) -> None:
    """Make ``run.out_dir`` ready for training (main process): remove what a killed run left
    half-written and the run manifest (the final files are rewritten), and write the curve up to
    the resumed step (from the verified checkpoint; later records are replayed)."""
    if not run.main:
        return
    with explain_disk_full(f"run folder {run.out_dir}"):
        run.out_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_parts(run.out_dir, WRITTEN_ATOMICALLY)  # left by a killed run; never trusted: removed
        (run.out_dir / MANIFEST).unlink(missing_ok=True)
        atomic_write_text(run.out_dir / "curve.jsonl", "".join(json.dumps(r) + "\n" for r in run.records))


def result_record(run: Run, steps: int, tokens_per_s: float | None, wall_s: float) -> dict:
    """The result of the run's model at ``steps``, a snapshot's or the final one: the run's identity,
    whether every process holds the same weights, the validation loss, throughput, wall time since
    step 0, precision, process and thread counts, and the origin of a run begun from a shorter one."""
    return {
        **run_identity(run.model_config, run.cfg),
        "steps": steps,
        "ranks_agree": ranks_agree(run.accelerator, run.model),
        "validation_loss": evaluate(run.model, run.data, run.cfg, run.accelerator.device, run.bf16),
        "tokens_per_s": tokens_per_s,
        "wall_s": wall_s,
        "precision": "bf16" if run.bf16 else "fp32",
        "processes": run.world,
        "threads": run.threads,
        **run.origin,
    }


def optimizer_step(run: Run, ddp_model, step: int) -> torch.Tensor:
    """Train this process's rows of global batch ``step`` (masks and dropout drawn from ``(seed, step,
    rank)``), clip the gradients and step the optimizer and schedule; returns the step's loss."""
    cfg, rank = run.cfg, run.accelerator.process_index
    local_rows = cfg.batch_size // run.world
    rows = batch_rows(len(run.data.train), cfg.batch_size, step, cfg.seed)[rank * local_rows : (rank + 1) * local_rows]
    ids = torch.as_tensor(run.data.train[rows], dtype=torch.long)  # (b, n)
    generator = torch.Generator().manual_seed(step_seed(cfg.seed, step, rank, 0))
    inputs, labels = mask_tokens(ids, run.data, cfg.mask_prob, generator)
    torch.manual_seed(step_seed(cfg.seed, step, rank, 1))  # dropout
    device = run.accelerator.device
    loss = train_step(ddp_model, run.accelerator, inputs, labels, cfg.accumulation_steps, device, run.bf16)
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), cfg.grad_clip)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return loss


def log_curve(run: Run, curve, entry: dict) -> None:
    """Add ``entry`` to the run's curve, and to ``curve.jsonl`` (``curve``: its open file, None
    outside the main process)."""
    run.records.append(entry)
    if curve is not None:
        with explain_disk_full(f"training curve {run.out_dir / 'curve.jsonl'}"):
            curve.write(json.dumps(entry) + "\n")
            curve.flush()


def keep_models(run: Run, done: int, tok_s: float, elapsed: float) -> None:
    """After step ``done``: the snapshot when ``done`` is a snapshot step, and a checkpoint every
    ``checkpoint_every`` steps, at the last step and at each snapshot (``elapsed``: the wall
    seconds of this process's steps so far)."""
    cfg = run.cfg
    if done in cfg.snapshot_steps:
        snapshot = result_record(run, done, tok_s, run.elapsed_before + elapsed)
        if run.main:
            with manifested_dir(snapshot_dir(run.out_dir, done), "snapshot") as work:
                save_model_folder(run.model, work / "model", done, done * run.tokens_per_step, run.tokenizer, run.card)
                write_json(work / "result.json", snapshot)
    if done % cfg.checkpoint_every == 0 or done == cfg.steps or done in cfg.snapshot_steps:
        run.accelerator.wait_for_everyone()
        if run.main:
            save_checkpoint(run.out_dir, run.model, run.optimizer, run.scheduler,
                            {"step": done, "elapsed_s": run.elapsed_before + elapsed,
                             **run_identity(run.model_config, run.cfg), "processes": run.world,
                             "threads": run.threads, "curve": run.records, **run.origin})


def check_finite(loss: float, run: Run, step: int, split: str) -> float:
    """``loss``, or one error line when it is not finite: a diverged run is never saved (its
    checkpoints stop at the last finite step), so no NaN model is scored or stored."""
    if not math.isfinite(loss):
        raise InputError(f"pretraining of {run.model_config.position_embedding} diverged: {split} loss {loss} at step "
                         f"{step}; no checkpoint from that step on was kept; lower the learning rate (pretrain.lr is "
                         f"{run.cfg.lr:g})")
    return loss


def train_until(run: Run, until: int, progress: bool, on_step: Callable[[int], None] | None) -> float:
    """Train from ``run.start`` up to step ``until``: after each step the curve's train record every
    ``log_every`` steps and validation record every ``eval_every`` (both at the last step), then
    snapshots and checkpoints (:func:`keep_models`), then ``on_step(step)``. Returns the wall seconds
    this process trained."""
    cfg = run.cfg
    ddp_model = run.accelerator.prepare_model(run.model)
    bar = tqdm(total=cfg.steps, initial=run.start, desc=f"pretrain {run.model_config.position_embedding}",
               disable=not (progress and run.main), unit="step")
    with open(run.out_dir / "curve.jsonl", "a") if run.main else nullcontext() as curve:
        t0 = time.perf_counter()
        for step in range(run.start, until):
            loss = optimizer_step(run, ddp_model, step)
            done = step + 1
            elapsed = time.perf_counter() - t0
            tok_s = (done - run.start) * run.tokens_per_step / elapsed
            bar.update(1)
            if done % cfg.log_every == 0 or done == cfg.steps:
                train_loss = check_finite(float(run.accelerator.reduce(loss.detach().float(), "mean")), run, done, "training")
                bar.set_postfix(loss=f"{train_loss:.3f}", tok_s=f"{tok_s:.0f}")
                log_curve(run, curve, {"step": done, "split": "train", "loss": train_loss,
                                       "lr": run.scheduler.get_last_lr()[0], "tokens_per_s": tok_s})
            if done % cfg.eval_every == 0 or done == cfg.steps:
                validation = evaluate(run.model, run.data, cfg, run.accelerator.device, run.bf16)
                log_curve(run, curve, {"step": done, "split": "validation", "loss": check_finite(validation, run, done, "validation")})
            keep_models(run, done, tok_s, elapsed)
            if on_step is not None:
                on_step(done)
        bar.close()
        return time.perf_counter() - t0


def save_final(run: Run, wall: float) -> dict:
    """The run's result after its last step (``wall``: the seconds this process trained), written
    with the final model: the model folder first, then ``result.json`` and the run manifest."""
    cfg = run.cfg
    trained = cfg.steps - run.start
    result = result_record(run, cfg.steps, trained * run.tokens_per_step / wall if trained > 0 else None,
                           run.elapsed_before + wall)
    if run.main:
        with manifested_dir(run.out_dir / "model", "final model") as work:
            save_model_folder(run.model, work, cfg.steps, cfg.steps * run.tokens_per_step, run.tokenizer, run.card)
        with explain_disk_full(f"result {run.out_dir / 'result.json'}"):
            write_json(run.out_dir / "result.json", result)
            write_manifest(run.out_dir, ("result.json", "curve.jsonl", f"model/{MANIFEST}"))
    run.accelerator.wait_for_everyone()
    return result


def _pretrain(accelerator, model_config, data, cfg, out_dir: Path, progress, on_step, until: int, tokenizer=None,
              card=None) -> dict:
    """This process's part of :func:`pretrain`: resume, train up to ``until``, and save the final
    model and result (or, with ``until`` a snapshot step, return that snapshot's result)."""
    check_fits(model_config, data, cfg, accelerator.num_processes)
    run = new_run(accelerator, model_config, data, cfg, out_dir, tokenizer, card)
    resume(run, until)
    open_run_folder(run)
    wall = train_until(run, until, progress, on_step)
    if until < cfg.steps:
        accelerator.wait_for_everyone()
        return read_json(snapshot_dir(out_dir, until) / "result.json")
    return save_final(run, wall)
