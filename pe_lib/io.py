"""Files that are never half-written: atomic writes, atomic folders, checksums, stable hashes.

Every artefact of the project is written to a temporary sibling and moved into place with
``os.replace``, so a run killed at any instant leaves either the old file or the new one, never a
truncated one that a later run would trust.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_key(payload: Any, length: int = 12) -> str:
    """A short stable hash of a JSON-able payload (sorted keys): the key of a config's artefacts."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` through a temporary sibling file, fsync, then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: str | os.PathLike[str], payload: Any) -> None:
    """Atomically write ``payload`` as indented JSON."""
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


@contextlib.contextmanager
def atomic_dir(final: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary sibling folder; on success it replaces ``final`` in one move.

    On any exception the temporary folder is removed and ``final`` is left as it was. An existing
    ``final`` is first moved aside and deleted only after the new folder is in place.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent))
    try:
        yield work
        work.chmod(0o755)
        old = None
        if final.exists():
            old = final.with_name(f".{final.name}.old-{os.getpid()}")
            os.replace(final, old)
        os.replace(work, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


class LockedError(RuntimeError):
    """Another process holds the lock."""


_held: dict[str, tuple[int, object]] = {}  # lock path -> (depth, open file) in this process


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike[str], what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (re-entrant within a process). A second process gets
    one clear :class:`LockedError` at once, naming ``what`` and the holder's pid."""
    import fcntl

    key = str(Path(path).resolve())
    if key in _held:
        depth, handle = _held[key]
        _held[key] = (depth + 1, handle)
        try:
            yield
        finally:
            _held[key] = (depth, handle)
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown pid"
        handle.close()
        raise LockedError(f"{what} is in use by another run ({holder}); wait for it to finish or use another folder") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    _held[key] = (1, handle)
    try:
        yield
    finally:
        depth, _ = _held.pop(key)
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


@contextlib.contextmanager
def explain_disk_full(what: str) -> Iterator[None]:
    """Turn 'no space left on device' while writing ``what`` into one clear error."""
    import errno

    try:
        yield
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        raise OSError(errno.ENOSPC, f"disk full while writing {what}; nothing half-written was kept and "
                                    "earlier files are intact: free space and rerun") from error


def remove_stale_parts(folder: str | os.PathLike[str]) -> list[str]:
    """Delete the temporary ``.*.part`` files and folders that a killed writer left under ``folder``
    (call it only while holding the folder's lock); return their names."""
    removed = []
    for path in sorted(Path(folder).rglob(".*.part"), reverse=True):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path.name)
    return removed
