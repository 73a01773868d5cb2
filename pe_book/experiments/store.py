"""The artifact store: small, committed results under ``results/<folder>/<variant>/<stage>-<key>/``
(a profile's folder is its name unless it names another: ``Profile.results_folder``).

An artifact is a folder with ``artifact.json`` (payload + provenance), optionally ``arrays.npz``
(fp16 matrices), and ``manifest.json`` (sha256 of both). ``key`` hashes everything that produced
the artifact, so a changed config is a new key, never a stale reuse. Folders are written
atomically; a folder whose manifest does not verify is reported and treated as missing.
"""
from __future__ import annotations

import datetime
import functools
import importlib.metadata
import io
import os
import platform
import shutil
import subprocess
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pe_lib.errors import CorruptFileError
from pe_lib.io import content_key, exclusive_lock, manifested_dir, read_json, verify_manifest, write_json

PACKAGES = ("pe-lib", "torch", "transformers", "tokenizers", "datasets", "accelerate", "numpy")


@functools.cache
def git_commit() -> str:
    """The commit of the code this process runs: the repository's HEAD (suffix ``-dirty`` with
    uncommitted changes) read once, at the first call, or ``unknown``. Read again later, HEAD could
    name a commit made while a long run was going, not the code that produced its artifacts; the
    :class:`~pe_book.experiments.runner.Runner` calls this when it is created."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


#: CPU features that change which kernels run, hence the bits of a trained model: two machines
#: with one model name ("Intel(R) Xeon(R) Processor") may differ in them (AMX or not).
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile")


def hardware() -> dict[str, Any]:
    """The machine, as provenance: the same type (CPU model, ``isa`` flags, threads) gives the same bits.
    ``cpu_id`` (family and model) and ``blas`` (the kernel numpy's BLAS chose for this CPU, which moves
    float64 statistics by a few ulp) say more of it, without entering the type."""
    cpu, flags, cpu_id = platform.processor() or platform.machine(), set(), None
    try:
        first_cpu = Path("/proc/cpuinfo").read_text().split("\n\n")[0].splitlines()
        info = {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in first_cpu if ":" in line)}
        cpu, flags = info["model name"], set(info["flags"].split())
        cpu_id = f"family {info['cpu family']} model {info['model']}"
    except (OSError, KeyError):
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"cpu": cpu, "cpu_id": cpu_id, "isa": [f for f in ISA_FLAGS if f in flags],
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(), "blas": numpy_blas(),
            "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(), "gpu": gpu,
            "python": platform.python_version(), "platform": platform.platform()}


@functools.cache
def numpy_blas() -> str | None:
    """numpy's BLAS and the kernel it chose for this CPU, e.g. ``openblas 0.3.31 SkylakeX``."""
    from threadpoolctl import threadpool_info

    libs = Path(np.__file__).parent.parent / "numpy.libs"  # where numpy's wheel keeps its BLAS (scipy's: scipy.libs)
    found = [i for i in threadpool_info() if i["user_api"] == "blas" and Path(i["filepath"]).is_relative_to(libs)]
    return " ".join(str(found[0].get(k)) for k in ("internal_api", "version", "architecture")) if found else None


#: The fields of :func:`hardware` that make a machine type: the same type gives the same bits.
MACHINE_TYPE = ("cpu", "isa", "cores", "torch_threads", "gpu")


def same_machine_type(a: Mapping, b: Mapping) -> bool:
    """Whether two :func:`hardware` records are of one machine type."""
    return all(a.get(k) == b.get(k) for k in MACHINE_TYPE)


def versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def provenance(config: dict, wall_s: float) -> dict[str, Any]:
    """Where a number came from: its config, the code, the packages, the machine, the time taken."""
    return {"config": config, "git_commit": git_commit(), "versions": versions(), "hardware": hardware(),
            "wall_s": wall_s, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


@dataclass
class Artifact:
    folder: Path
    payload: dict
    provenance: dict
    arrays: dict[str, np.ndarray]


class Store:
    """Artifacts of one profile under ``root/<folder>`` (:attr:`Profile.results_folder`)."""

    def __init__(self, root: str | os.PathLike, folder: str):
        self.root = Path(root) / folder

    def lock(self):
        """Exclusive use of this profile's store by one process (re-entrant); a second run gets a clear error."""
        return exclusive_lock(self.root / ".lock", f"the artifact store {self.root}")

    @staticmethod
    def key(config: dict) -> str:
        return content_key(config)

    def folder(self, variant: str, stage: str, config: dict) -> Path:
        return self.root / variant / f"{stage}-{self.key(config)}"

    def artifact_folders(self) -> list[Path]:
        """Every artifact folder of this profile (``<variant>/<stage>-<key>`` with a manifest)."""
        return sorted(f.parent for f in self.root.glob("*/*/manifest.json") if not f.parent.name.startswith("."))

    def load(self, variant: str, stage: str, config: dict) -> Artifact | None:
        """The artifact for this exact config, or None when absent or corrupt (with a warning)."""
        return self.read(self.folder(variant, stage, config))

    def read(self, folder: Path) -> Artifact | None:
        """The artifact in ``folder``, or None when absent; None with a warning naming it when it is
        not to be trusted: no manifest (deleted, or written by an older version), a manifest that is
        not a mapping of file -> sha256 covering ``artifact.json`` and every other file there
        (``arrays.npz``, a stored ``model/``: all are read), or a file failing its check. Such a
        folder is then computed again, never read unchecked."""
        if not folder.exists():
            return None
        try:
            verify_manifest(folder, required=["artifact.json"], complete=True)
            document = read_json(folder / "artifact.json")
            arrays = {}
            if (folder / "arrays.npz").exists():
                with np.load(folder / "arrays.npz", allow_pickle=False) as npz:
                    arrays = {k: npz[k] for k in npz.files}
            payload, provenance_ = document["payload"], document["provenance"]
        except (CorruptFileError, OSError, ValueError, KeyError, TypeError) as error:
            warnings.warn(f"ignoring corrupt artifact {folder}: {error}; it will be recomputed", stacklevel=3)
            return None
        return Artifact(folder, payload, provenance_, arrays)

    def save(self, variant: str, stage: str, config: dict, payload: dict, wall_s: float,
             arrays: dict[str, np.ndarray] | None = None, copies: Mapping[str, Path] | None = None) -> Artifact:
        """Write an artifact atomically (arrays stored as fp16 when floating; ``copies``: files copied
        in unchanged, by their name in the artifact, e.g. ``model/model.safetensors``) and return it."""
        folder = self.folder(variant, stage, config)
        document = {"payload": payload, "provenance": provenance(config, wall_s)}
        with manifested_dir(folder, "artifact") as work:
            write_json(work / "artifact.json", document)
            if arrays:
                buffer = io.BytesIO()
                np.savez_compressed(buffer, **{k: small(v) for k, v in arrays.items()})
                (work / "arrays.npz").write_bytes(buffer.getvalue())
            for name, source in (copies or {}).items():
                (work / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, work / name)
        return self.load(variant, stage, config)


def small(array: np.ndarray) -> np.ndarray:
    """fp16 for floating arrays whose values fit, else unchanged."""
    array = np.asarray(array)
    if np.issubdtype(array.dtype, np.floating) and np.all(np.abs(array[np.isfinite(array)]) < 6e4):
        return array.astype(np.float16)
    return array
