"""Resumable masked-language-model pretraining, single- or multi-process (``accelerate``/DDP).

Objective (Devlin et al. 2019): 15% of the non-special tokens are selected; of those 80% become
[MASK], 10% a random token, 10% stay; the loss is the cross-entropy at the selected positions.
AdamW, linear warm-up then a schedule (:data:`SCHEDULES`), gradient clipping, optional bf16 autocast.

Anytime schedules and snapshots. Under the ``linear`` schedule (BERT's: decay to zero at the last
step) the learning rate of step t depends on the run's length. Under ``constant`` and
``inverse-sqrt`` it does not, so the model after t steps of a long run *is* the model of a run of t
steps; ``snapshot_steps`` saves those models on the way (``snapshots/step-N``), and
``pretrain(..., until=t)`` trains only up to a snapshot and returns it: one run of 16x steps gives
the models of the budgets 1x, 2x, 4x, 8x and 16x, each finished (and committable) as soon as it is
reached. For the same reason a finished run of t steps is the first t steps of every longer run of
its recipe: :func:`extend` starts the longer run's folder from the shorter run's last checkpoint.

Determinism and resuming. Everything random is a pure function of ``(seed, step, rank)``: the batch
rows come from a per-epoch permutation seeded by ``(seed, epoch)``, the masking generator and the
dropout RNG are re-seeded from ``(seed, step, rank)`` at every step. A checkpoint therefore needs
only the weights, the optimizer and scheduler states and the step; a resumed run replays exactly
the batches, masks and dropout of an uninterrupted one and ends with identical weights (same
machine, same threads).

Processes and threads. The masks and the dropout are drawn per process (the ``rank`` of the seed),
and the loss is averaged per process before DDP averages the gradients, so N processes train
another run than 1 at the same global batch: the process count is part of the run's identity
(``processes`` in checkpoints and results), a run folder is resumed only with the count it was
begun with (:func:`check_same_run` refuses any other), and :func:`launched_processes` puts it in the
runner's keys when it is above 1 (the keys of 1-process runs are those made before it was
recorded). The torch thread count changes no draw, only the rounding: fp32 CPU reductions (the
gradient sums over the batch, LayerNorm statistics, large matrix products) split their work by
thread, so another count sums in another order and the weights differ in the last bits, as on
another CPU. It is recorded (``threads``: the counts the steps ran with) and a resume with another
count is warned about, not refused: the run is then still a run of its recipe, only not
bit-identical to an uninterrupted one, and refusing would strand a run moved to another machine.

Memory. ``accumulation_steps`` cuts each process's rows of a step into that many micro-batches whose
gradients are summed before the optimizer step, each micro-batch's mean loss weighted by its share
of the masked tokens: the step's gradient is the whole batch's (the masks are drawn for the whole
batch, as without accumulation), equal up to float rounding when there is no dropout (dropout draws
its masks micro-batch by micro-batch). ``activation_checkpointing`` recomputes each layer in the
backward pass instead of keeping its activations (torch restores the RNG, so the same dropout).
Both are part of a run's identity when they are set (:func:`config_identity`); at their defaults
they are left out of it, so the identities and keys of runs made before they existed stay. bf16
is ``precision`` (autocast on CUDA and on CPUs with fast bf16).

Layout of ``out_dir``::

    checkpoints/step-00000100/   model.safetensors, trainer_state.pt, state.json, manifest.json
                                 (state.json: step, time, run identity, the curve so far)
    checkpoints/latest           name of the newest complete checkpoint
    snapshots/step-00001000/     model at a snapshot step (save_pretrained), result.json, manifest.json
    refused/step-00000100/       a checkpoint set aside because its trainer state was not plain
                                 tensors (a pickle carrying code); kept for inspection, never read
    curve.jsonl                  {"step", "split": "train"|"validation", "loss", ...} per line
    model/                       the final model (save_pretrained) with its manifest.json
    result.json                  final validation loss, throughput, wall time
    manifest.json                sha256 of result.json, curve.jsonl and model/manifest.json

Nothing is read without its checksum. The final files are written model first, result and run
manifest last; a run folder counts as finished only when its manifest and the model's verify. A
finished folder that fails (bit flip, truncation, or written by a version without manifests) is
reported by name and finished again from its last checkpoint, which needs no training steps.
"""
from __future__ import annotations

import copy
import io
import json
import math
import os
import pickle
import re
import shutil
import time
import warnings
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_model, save_model
from tqdm.auto import tqdm
from torch.optim.lr_scheduler import LambdaLR
from transformers import get_linear_schedule_with_warmup

from pe_lib.errors import CorruptFileError, InputError
from pe_lib.io import (
    MANIFEST,
    atomic_write_text,
    exclusive_lock,
    explain_disk_full,
    is_intact,
    manifested_dir,
    read_json,
    remove_stale_parts,
    verified,
    verify_manifest,
    write_json,
    write_manifest,
)
from pe_lib.model import PEBertConfig, PEBertForMaskedLM, model_card, quiet_transformers

PRECISIONS = ("auto", "bf16", "fp32")
#: Learning-rate schedules after the linear warm-up: ``linear`` decays to 0 at the last step;
#: ``constant`` holds the peak; ``inverse-sqrt`` decays as sqrt(warmup / step). The last two are
#: anytime schedules: the learning rate of a step does not depend on the run's length.
SCHEDULES = ("linear", "constant", "inverse-sqrt")
NO_DECAY = ("bias", "norm.weight", "freqs")  # parameter-name endings exempt from weight decay


@dataclass(frozen=True)
class PretrainConfig:
    """Optimisation settings of one pretraining run (model size lives in ``PEBertConfig``)."""

    steps: int = 1000
    batch_size: int = 32  # global batch (sequences per step, over all processes)
    lr: float = 5e-4
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    mask_prob: float = 0.15
    precision: str = "auto"  # auto: bf16 where the CPU/GPU supports it, else fp32
    seed: int = 0
    log_every: int = 10
    eval_every: int = 100
    eval_batches: int = 4
    checkpoint_every: int = 100
    schedule: str = "linear"  # one of SCHEDULES
    snapshot_steps: tuple[int, ...] = ()  # steps whose models are kept (anytime schedules only)
    accumulation_steps: int = 1  # micro-batches per process and step, gradients summed (module docstring: Memory)
    activation_checkpointing: bool = False  # recompute each layer in the backward pass (less activation memory)

    def __post_init__(self):
        if self.precision not in PRECISIONS:
            raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.schedule not in SCHEDULES:
            raise InputError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        for name in ("steps", "batch_size", "log_every", "eval_every", "eval_batches", "checkpoint_every",
                     "accumulation_steps"):
            if getattr(self, name) < 1:
                raise InputError(f"PretrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.seed < 0:
            raise InputError(f"PretrainConfig.seed must be an integer of at least 0, got {self.seed!r}")
        if self.warmup_steps < 0:
            raise InputError(f"PretrainConfig.warmup_steps must be an integer of at least 0, got "
                             f"{self.warmup_steps!r}")
        for name in ("lr", "grad_clip"):
            check_number(self, name, above=0)
        check_number(self, "weight_decay", at_least=0)
        check_number(self, "mask_prob", above=0, at_most=1)
        object.__setattr__(self, "snapshot_steps", tuple(sorted(set(self.snapshot_steps))))
        if self.snapshot_steps and self.schedule == "linear":
            raise InputError("snapshot_steps need an anytime schedule (constant or inverse-sqrt): under the linear "
                             "schedule a snapshot is not the model of a run of that length")
        if any(not 0 < s < self.steps for s in self.snapshot_steps):
            raise InputError(f"snapshot_steps must lie between 0 and steps ({self.steps}), got {self.snapshot_steps}")

    def at(self, steps: int) -> PretrainConfig:
        """The configuration of a run of ``steps`` steps whose model is this run's snapshot at ``steps``
        (the same configuration without snapshots when ``steps`` is this run's length)."""
        if steps != self.steps and steps not in self.snapshot_steps:
            raise InputError(f"no model is kept at step {steps}; kept: {', '.join(map(str, self.budgets))}")
        return replace(self, steps=steps, snapshot_steps=())

    @property
    def budgets(self) -> tuple[int, ...]:
        """The steps at which a model is kept: every snapshot, then the last step."""
        return (*self.snapshot_steps, self.steps)


def check_number(config, name: str, above: float | None = None, at_least: float | None = None,
                 at_most: float = math.inf) -> None:
    """Refuse, naming it, a field of ``config`` that is not a finite number above ``above`` (or at
    least ``at_least``) and at most ``at_most``: a NaN learning rate would reach the optimiser."""
    value = getattr(config, name)
    low, included = (at_least, True) if above is None else (above, False)
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if number and low <= value <= at_most and (included or value > low):
        return
    bounds = f"{'at least' if included else 'above'} {low:g}"
    bounds += f" and at most {at_most:g}" if at_most < math.inf else ""
    raise InputError(f"{type(config).__name__}.{name} must be a finite number {bounds}, got {value!r}")


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


@dataclass
class MLMData:
    """Fixed-length token blocks for MLM: rows of ``[CLS] ... [SEP]`` token ids."""

    train: np.ndarray  # (N, n) integer token ids
    validation: np.ndarray  # (M, n)
    vocab_size: int
    mask_id: int
    special_ids: tuple[int, ...]  # never selected for masking, never drawn as random replacements

    def __post_init__(self):
        for name in ("train", "validation"):
            rows = getattr(self, name)
            if rows.ndim != 2 or len(rows) == 0:
                raise InputError(f"MLMData.{name} must be a non-empty (rows, seq_len) array, got shape {rows.shape}")
        if int(self.train.max()) >= self.vocab_size:
            raise InputError(f"token id {int(self.train.max())} >= vocab_size {self.vocab_size}: tokenizer and model disagree")

    @property
    def seq_len(self) -> int:
        return self.train.shape[1]

    @classmethod
    def for_tokenizer(cls, tokenizer, train: np.ndarray, validation: np.ndarray) -> MLMData:
        """Blocks made with a HF tokenizer: its size, [MASK] and special tokens."""
        return cls(train, validation, len(tokenizer), tokenizer.mask_token_id, tuple(tokenizer.all_special_ids))


def make_blocks(token_ids: np.ndarray, seq_len: int, cls_id: int, sep_id: int) -> np.ndarray:
    """Cut a token stream into rows ``[CLS] t_1 .. t_{n-2} [SEP]`` (the ragged tail is dropped)."""
    body = seq_len - 2
    n_rows = len(token_ids) // body
    if n_rows == 0:
        raise InputError(f"only {len(token_ids)} tokens: not enough for one block of {seq_len}; give a longer corpus")
    rows = np.asarray(token_ids[: n_rows * body]).reshape(n_rows, body)  # (N, n-2)
    cls = np.full((n_rows, 1), cls_id, dtype=rows.dtype)
    sep = np.full((n_rows, 1), sep_id, dtype=rows.dtype)
    return np.concatenate([cls, rows, sep], axis=1)  # (N, n)


def text_blocks(tokenizer, lines, seq_len: int, max_tokens: int | None = None) -> np.ndarray:
    """``[CLS] ... [SEP]`` blocks of ``seq_len`` tokens from lines of text (at most ``max_tokens``
    tokens of them: :func:`pe_lib.data.tokenizer.tokenize`)."""
    from pe_lib.data.tokenizer import tokenize

    return make_blocks(tokenize(tokenizer, lines, max_tokens), seq_len, tokenizer.cls_token_id, tokenizer.sep_token_id)


def step_seed(*parts: int) -> int:
    """A 63-bit seed derived from non-negative integers such as (seed, step, rank, purpose)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def batch_rows(n_rows: int, batch_size: int, step: int, seed: int) -> np.ndarray:
    """Row indices of global batch ``step``: consecutive slices of a per-epoch seeded permutation."""
    per_epoch = n_rows // batch_size
    if per_epoch == 0:
        raise InputError(f"{n_rows} training rows are fewer than one batch of {batch_size}; "
                         "give a longer corpus or a smaller batch size")
    epoch, i = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(n_rows)
    return order[i * batch_size : (i + 1) * batch_size]


def mask_tokens(ids: torch.Tensor, data: MLMData, prob: float, generator: torch.Generator):
    """BERT's 80/10/10 masking: returns ``(inputs, labels)``, labels -100 where not selected."""
    special = torch.isin(ids, torch.tensor(data.special_ids))  # (B, n)
    selected = (torch.rand(ids.shape, generator=generator) < prob) & ~special  # (B, n)
    if not selected.any():  # keep the loss defined on tiny batches
        selected[0, 1] = True
    labels = torch.where(selected, ids, torch.full_like(ids, -100))  # (B, n)
    choice = torch.rand(ids.shape, generator=generator)  # (B, n)
    allowed = torch.tensor(sorted(set(range(data.vocab_size)) - set(data.special_ids)))
    random_tokens = allowed[torch.randint(len(allowed), ids.shape, generator=generator)]  # (B, n)
    inputs = torch.where(selected & (choice < 0.8), torch.full_like(ids, data.mask_id), ids)
    inputs = torch.where(selected & (choice >= 0.8) & (choice < 0.9), random_tokens, inputs)  # (B, n)
    return inputs, labels


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


# ----------------------------------------------------------------------------- checkpoints


#: The name of a checkpoint folder, ``step-`` and the step in 8 digits.
CHECKPOINT_NAME = re.compile(r"step-\d{8}")


def latest_checkpoint(out_dir: Path) -> Path | None:
    """The checkpoint that ``checkpoints/latest`` names (None without a pointer). A pointer that
    names no checkpoint folder (a flipped bit, a truncation) is named in one warning, and the newest
    checkpoint folder whose manifest verifies is taken instead: a damaged pointer never sends a run
    back to step 0, whose next checkpoint would delete the intact one."""
    root = out_dir / "checkpoints"
    pointer = root / "latest"
    if not pointer.exists():
        return None
    name = pointer.read_bytes().decode("utf-8", "replace").strip()
    if CHECKPOINT_NAME.fullmatch(name) and (root / name / MANIFEST).exists():
        return root / name
    intact = [folder for folder in sorted(root.iterdir(), reverse=True)
              if CHECKPOINT_NAME.fullmatch(folder.name) and is_intact(folder)]
    then = (f"resuming from the newest intact checkpoint {intact[0]}" if intact
            else "training from step 0 (none is intact)")
    warnings.warn(f"damaged checkpoint pointer {pointer}: it names {name!r}, which is no checkpoint folder; "
                  f"{then}", stacklevel=2)
    return intact[0] if intact else None


def save_checkpoint(out_dir: Path, model, optimizer, scheduler, state: dict) -> None:
    """Write ``checkpoints/step-N`` atomically, point ``latest`` at it, drop older checkpoints."""
    name = f"step-{state['step']:08d}"
    root = out_dir / "checkpoints"
    with manifested_dir(root / name, "checkpoint") as work:
        save_model(model, str(work / "model.safetensors"))
        buffer = io.BytesIO()  # torch.save straight to a full disk fails with an opaque "unexpected pos"
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, buffer)
        (work / "trainer_state.pt").write_bytes(buffer.getvalue())
        write_json(work / "state.json", state)
    with explain_disk_full(f"checkpoint pointer {root / 'latest'}"):
        atomic_write_text(root / "latest", name + "\n")
    for old in root.glob("step-*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(folder: Path, model, optimizer, scheduler) -> dict:
    """Restore a verified checkpoint (weights with safetensors, states with ``weights_only=True``).
    The trainer state is read first: when it is refused (``pickle.UnpicklingError``) nothing has
    been loaded into ``model``."""
    trainer = torch.load(folder / "trainer_state.pt", weights_only=True)
    load_model(model, str(folder / "model.safetensors"))
    optimizer.load_state_dict(trainer["optimizer"])
    scheduler.load_state_dict(trainer["scheduler"])
    return read_json(folder / "state.json")


def set_aside(checkpoint: Path, out_dir: Path) -> Path:
    """Move a refused checkpoint to ``out_dir/refused/`` (never read again, kept for inspection)."""
    target = out_dir / "refused" / checkpoint.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    os.replace(checkpoint, target)
    return target


def curve_until(path: Path, step: int) -> list[dict]:
    """The curve records of ``path`` up to ``step``, for a checkpoint written before checkpoints
    carried their curve (a line torn by a kill or a full disk is dropped)."""
    records = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record["step"] <= step:
                records.append(record)
    return records


def finished_result(out_dir: Path) -> dict | None:
    """The result of a finished run folder, or None when it is not finished. A folder that claims
    to be finished (it has a result or a manifest) but fails its manifests is reported by name and
    gives None, so the run is finished again from its last checkpoint."""
    if not (out_dir / "result.json").exists() and not (out_dir / MANIFEST).exists():
        return None
    try:
        verify_manifest(out_dir)
        verify_manifest(out_dir / "model")
        return read_json(out_dir / "result.json")
    except CorruptFileError as error:
        warnings.warn(f"ignoring the final model and result of {out_dir}: {error}; finishing the run again from "
                      "its last checkpoint", stacklevel=3)
        return None


# ----------------------------------------------------------------------------- the loop


#: PretrainConfig fields added after runs were stored, with their defaults: a field at its default is
#: left out of a run's identity, so the identities (and the runner's keys) of earlier runs stay.
LATER_FIELDS = {"accumulation_steps": 1, "activation_checkpointing": False}


def config_identity(cfg: PretrainConfig) -> dict:
    """``asdict(cfg)`` without the :data:`LATER_FIELDS` that are at their defaults."""
    return {k: v for k, v in asdict(cfg).items() if not (k in LATER_FIELDS and v == LATER_FIELDS[k])}


def run_identity(model_config: PEBertConfig, cfg: PretrainConfig) -> dict:
    """What a run folder's checkpoints and result belong to (as read back from JSON)."""
    return json.loads(json.dumps({"model": model_config.to_diff_dict(), "config": config_identity(cfg)}))


def snapshot_dir(out_dir: Path, step: int) -> Path:
    return out_dir / "snapshots" / f"step-{step:08d}"


def finished_snapshot(out_dir: Path, step: int) -> dict | None:
    """The result of the snapshot at ``step`` (its model beside it), or None when it is not written.
    A corrupt snapshot is reported by name and gives None."""
    folder = snapshot_dir(out_dir, step)
    return read_json(folder / "result.json") if verified(folder, f"snapshot of {out_dir} at step {step}") else None


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


def extend(shorter: Path, out_dir: Path, model_config: PEBertConfig, cfg: PretrainConfig) -> bool:
    """Start the run folder ``out_dir`` of ``cfg`` from the last checkpoint of the finished shorter
    run ``shorter``. Under an anytime schedule a run of t steps, at its step t, is in the state of
    every longer run of its recipe at step t (weights, optimizer, scheduler, curve), so the longer
    run trains only the steps that remain (its curve also has the evaluation that the shorter run
    made at its last step, when that is not a multiple of ``eval_every``). Refuses a shorter run of
    another model, recipe or length; does nothing (False) when ``out_dir`` holds a checkpoint or a
    final model already."""
    if cfg.schedule == "linear":
        raise InputError("only a run with an anytime schedule (constant or inverse-sqrt) can extend a shorter one")
    if finished_result(out_dir) is not None or latest_checkpoint(out_dir) is not None:
        return False
    saved = finished_result(shorter)
    if saved is None:
        raise InputError(f"{shorter} is not a finished run: only a finished run can be extended")
    checkpoint = latest_checkpoint(shorter)
    steps = saved["config"]["steps"]
    if checkpoint is None or checkpoint.name != f"step-{steps:08d}":
        raise InputError(f"{shorter} keeps no checkpoint of its last step ({steps}): it cannot be extended")
    verify_manifest(checkpoint)
    if not (steps < cfg.steps and same_recipe(saved, model_config, cfg)):
        raise InputError(f"{shorter} is not the first {steps} steps of this run (another model, recipe or a longer "
                         f"run than its {cfg.steps} steps): it cannot be extended")
    state = {**read_json(checkpoint / "state.json"), **run_identity(model_config, cfg), "extended_from": str(shorter)}
    with manifested_dir(out_dir / "checkpoints" / checkpoint.name, "extended checkpoint") as work:
        for name in ("model.safetensors", "trainer_state.pt"):
            shutil.copyfile(checkpoint / name, work / name)
        write_json(work / "state.json", state)
    with explain_disk_full(f"checkpoint pointer {out_dir / 'checkpoints' / 'latest'}"):
        atomic_write_text(out_dir / "checkpoints" / "latest", checkpoint.name + "\n")
    return True


def same_recipe(saved: dict, model_config: PEBertConfig, cfg: PretrainConfig) -> bool:
    """True when the run ``saved`` (its result) is ``cfg``'s model and recipe, whatever its length and snapshots."""
    def recipe(identity: dict) -> dict:
        return {"model": identity["model"], "config": {**identity["config"], "steps": None, "snapshot_steps": None}}
    return recipe(saved) == recipe(run_identity(model_config, cfg))


def ranks_agree(accelerator, model) -> bool:
    """True when every process holds the same weights (checked on two float64 sums)."""
    sums = torch.stack([sum(p.detach().double().sum() for p in model.parameters()),
                        sum(p.detach().double().abs().sum() for p in model.parameters())])  # (2,)
    gathered = accelerator.gather(sums.to(accelerator.device)).view(-1, 2)  # (world, 2)
    return bool((gathered == gathered[0]).all())


@torch.no_grad()
def evaluate(model, data: MLMData, cfg: PretrainConfig, device, bf16: bool) -> float:
    """Validation MLM loss on fixed rows with fixed masks, drawn from seed 0 whatever the run's
    seed: comparable across runs, pretraining seeds and variants."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for i in range(min(cfg.eval_batches, math.ceil(len(data.validation) / cfg.batch_size))):
        ids = torch.as_tensor(data.validation[i * cfg.batch_size : (i + 1) * cfg.batch_size], dtype=torch.long)
        inputs, labels = mask_tokens(ids, data, cfg.mask_prob, torch.Generator().manual_seed(step_seed(0, i, 0, 2)))
        with autocast(device, bf16):
            loss = model(input_ids=inputs.to(device), labels=labels.to(device), masked_only=True).loss
        n = int((labels != -100).sum())
        total, count = total + float(loss) * n, count + n
    model.train(was_training)
    return total / count


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


def verified_checkpoint(out_dir: Path) -> Path | None:
    """The latest checkpoint of ``out_dir`` when its manifest verifies; a corrupt one is reported by
    name and gives None (training starts from step 0)."""
    checkpoint = latest_checkpoint(out_dir)
    if checkpoint is None:
        return None
    try:
        verify_manifest(checkpoint)
    except CorruptFileError as error:
        warnings.warn(f"corrupt checkpoint file {error}; discarding {checkpoint} and training from step 0",
                      stacklevel=4)
        return None
    return checkpoint


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


#: What pretraining writes in a run folder (module docstring: Layout): a folder that holds anything
#: else is not a run folder (:func:`check_run_folder`).
RUN_FOLDER = ("checkpoints", "snapshots", "refused", "curve.jsonl", "model", "result.json", MANIFEST)
#: What it writes through a temporary sibling (glob patterns): the only temporaries it removes.
WRITTEN_ATOMICALLY = ("model", "result.json", "curve.jsonl", MANIFEST, "checkpoints/step-*",
                      "checkpoints/latest", "snapshots/step-*")


def check_run_folder(out_dir: Path) -> None:
    """Refuse, before anything in it is written or removed, an ``out_dir`` that is a file or a folder
    holding what no run writes (:data:`RUN_FOLDER` and the temporaries of its names): a user's
    folder is never taken for a run folder, whose manifest and temporaries a run replaces."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir} is a file, not a run folder: give a new or empty folder (or a run "
                         "folder to resume)")
    own = tuple(f".{name}." for name in RUN_FOLDER)  # temporaries and moved-aside folders
    entries = [path.name for path in out_dir.iterdir()] if out_dir.is_dir() else []
    foreign = sorted(name for name in entries if name not in RUN_FOLDER and not name.startswith(own))
    if foreign:
        raise InputError(f"{out_dir} is not a pretraining run folder: it holds {', '.join(foreign[:3])}"
                         f"{' and more' if len(foreign) > 3 else ''}, which no run writes, and was left "
                         "untouched; give a new or empty folder (a run folder holds only "
                         f"{', '.join(RUN_FOLDER)})")


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
