"""A pretraining run folder: its checkpoints, snapshots and final files, each read only with its checksum.

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

A finished run of t steps under an anytime schedule is the first t steps of every longer run of its
recipe: :func:`extend` starts the longer run's folder from the shorter run's last checkpoint.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import warnings
from pathlib import Path

import torch
from safetensors.torch import load_model, save_model

from pe_lib.config import PEBertConfig
from pe_lib.errors import CorruptFileError, InputError
from pe_lib.io import (
    MANIFEST,
    atomic_write_text,
    explain_disk_full,
    is_intact,
    manifested_dir,
    read_json,
    verified,
    verify_manifest,
    write_json,
)
from pe_lib.training.pretrain_config import PretrainConfig, run_identity, same_recipe


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


def snapshot_dir(out_dir: Path, step: int) -> Path:
    return out_dir / "snapshots" / f"step-{step:08d}"


def finished_snapshot(out_dir: Path, step: int) -> dict | None:
    """The result of the snapshot at ``step`` (its model beside it), or None when it is not written.
    A corrupt snapshot is reported by name and gives None."""
    folder = snapshot_dir(out_dir, step)
    return read_json(folder / "result.json") if verified(folder, f"snapshot of {out_dir} at step {step}") else None


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
