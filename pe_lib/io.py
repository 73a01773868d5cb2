"""Files that are never half-written: atomic writes, atomic folders, checksums, stable hashes.

Every artefact of the project is written to a temporary sibling and moved into place with
``os.replace``, so a run killed at any instant leaves either the old file or the new one, never a
truncated one that a later run would trust. A folder that a later run reads also carries a sha256
manifest (:func:`manifested_dir` writes it, :func:`verified` checks it): a bit flip or a
truncation after the write is found, reported by name and the folder rebuilt, never used.

This module is the one home of that manifest and its one format, ``manifest.json`` mapping each
file (path relative to the folder) to its sha256: the artifact store, training runs and their
checkpoints, prepared data, extracted sources and cached position tables all write and check it here.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pe_lib.errors import CorruptFileError, DiskFullError, LockedError, NotWritableError, PeLibError

MANIFEST = "manifest.json"


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
    """Write ``text`` (UTF-8) through a temporary sibling file, fsync, then ``os.replace``."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` through a temporary sibling file, fsync, ``os.replace``, then fsync the folder
    (an atomic rename is durable only once the file and its folder are synced)."""
    path = Path(path)
    with explain_unwritable(str(path.parent)):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)  # the rename itself survives a power loss only once its folder is synced
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush ``folder``'s entries (a new or renamed file or folder in it) to the disk. A file system
    that cannot sync a folder (EINVAL and the like) is left as it is: there is nothing more to do."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EROFS):
            raise
    finally:
        os.close(fd)


def fsync_tree(folder: str | os.PathLike[str]) -> None:
    """Flush every file and folder under ``folder`` (and ``folder`` itself) to the disk, deepest
    first: what a writer put there (``np.savez``, ``shutil.copyfile``, safetensors) is durable
    before the folder is moved into place."""
    for root, _, files in os.walk(folder, topdown=False):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(root)


@contextlib.contextmanager
def explain_unwritable(what: str) -> Iterator[None]:
    """Turn 'permission denied' or 'read-only file system' while creating ``what`` into one
    :class:`NotWritableError`."""
    try:
        yield
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR):
            raise
        raise NotWritableError(error.errno, f"{what} cannot be written ({error.strerror}: {error.filename}); "
                                            "use a writable folder") from None


def write_json(path: str | os.PathLike[str], payload: Any) -> None:
    """Atomically write ``payload`` as indented JSON."""
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


@contextlib.contextmanager
def atomic_dir(final: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary sibling folder; on success it replaces ``final`` in one move.

    On any exception the temporary folder is removed and ``final`` is left as it was. An existing
    ``final`` is first moved aside and deleted only after the new folder is in place. Both carry
    this process's pid (``.<name>.<pid>-*.part``, ``.<name>.old-<pid>``): those of ``final`` that a
    killed writer left are deleted here first, a running writer's are kept.
    """
    final = Path(final)
    with explain_unwritable(str(final.parent)):
        final.parent.mkdir(parents=True, exist_ok=True)
        name = re.escape(final.name)
        remove_dead_temporaries(final.parent, rf"\.{name}\.(?P<pid>\d+)-\w+\.part",
                                rf"\.{name}\.old-(?P<pid>\d+)")
        work = Path(tempfile.mkdtemp(prefix=f".{final.name}.{os.getpid()}-", suffix=".part",
                                     dir=final.parent))
    try:
        yield work
        work.chmod(0o755)
        fsync_tree(work)  # the contents are on the disk before the move that makes them visible
        old = None
        if final.exists():
            old = final.with_name(f".{final.name}.old-{os.getpid()}")
            os.replace(final, old)
        os.replace(work, final)
        fsync_dir(final.parent)  # and the move itself
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def remove_dead_temporaries(folder: str | os.PathLike[str], *patterns: str) -> list[str]:
    """Delete the files and folders of ``folder`` whose whole name matches one of ``patterns``
    (regular expressions with a group ``pid``, the writer's process id) and whose writer is no
    longer running: what a killed run left. Nothing else is touched, so a concurrent run's
    temporaries stay. Return the names removed."""
    removed = []
    for path in sorted(Path(folder).glob(".*")):
        match = next(filter(None, (re.fullmatch(p, path.name) for p in patterns)), None)
        if match is None or process_running(int(match.group("pid"))):
            continue
        remove_path(path)
        removed.append(path.name)
    return removed


def remove_path(path: Path) -> None:
    """Delete ``path``: a folder with its content (a link to one: the link only), or a file; gone
    already is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def process_running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # no process has such a pid
        return False
    return True


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
    with explain_unwritable(what):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown pid"
        handle.close()
        raise LockedError(f"{what} is in use by another run ({holder}); wait for it to finish or use another folder") from None
    try:
        with explain_disk_full(f"the lock file {path}"):
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()}")
            handle.flush()
    except DiskFullError:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
        raise
    _held[key] = (1, handle)
    try:
        yield
    finally:
        depth, _ = _held.pop(key)
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) means no space was left on the device. Writers that are
    not Python's own say it only in words: safetensors raises ``SafetensorError(... code: 28,
    kind: StorageFull ...)``."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "No space left on device" in str(error) or "StorageFull" in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


@contextlib.contextmanager
def explain_disk_full(what: str) -> Iterator[None]:
    """Turn 'no space left on device' while writing ``what`` into one :class:`DiskFullError`
    (any other error passes through unchanged, as does a DiskFullError raised inside)."""
    try:
        yield
    except PeLibError:
        raise
    except Exception as error:
        if not is_disk_full(error):
            raise
        raise DiskFullError(f"disk full while writing {what}; nothing half-written was kept and earlier files "
                            "are intact: free space and rerun") from error


# ----------------------------------------------------------------------------- manifests


def write_manifest(folder: str | os.PathLike[str], names: Iterable[str] | None = None) -> None:
    """Write ``folder/manifest.json``: the sha256 of each of ``names`` (default: every file under
    ``folder``, by relative path)."""
    folder = Path(folder)
    if names is None:
        names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    write_json(folder / MANIFEST, {name: sha256_file(folder / name) for name in names})


def verify_manifest(folder: str | os.PathLike[str], required: Iterable[str] = (), complete: bool = False) -> None:
    """Raise :class:`CorruptFileError` naming the first file of ``folder``'s manifest that is
    missing or whose sha256 differs (or naming the manifest when it is missing, unreadable, not a
    non-empty mapping of file -> sha256, or when it leaves out one of the ``required`` files: a
    manifest of ``{}`` vouches for nothing and must never let its folder be read unchecked). With
    ``complete``, it must also list every file in ``folder`` (a reader of the whole folder reads
    no file that it does not vouch for)."""
    folder = Path(folder)
    try:
        manifest = read_json(folder / MANIFEST)
    except FileNotFoundError:
        raise CorruptFileError(f"{folder} has no {MANIFEST} (written by an older version, or interrupted)") from None
    except (OSError, ValueError) as error:
        raise CorruptFileError(f"{folder / MANIFEST} is unreadable ({error})") from None
    if not isinstance(manifest, dict) or not manifest:
        raise CorruptFileError(f"{folder / MANIFEST} lists no files")
    for name in [*required, *(unlisted_files(folder, manifest) if complete else ())]:
        if name not in manifest:
            raise CorruptFileError(f"{folder / MANIFEST} does not list {name}")
    for name, digest in manifest.items():
        path = folder / name
        if not isinstance(digest, str):
            raise CorruptFileError(f"{folder / MANIFEST} holds {digest!r} for {name}, not a sha256")
        if not path.is_file():
            raise CorruptFileError(f"{path} is missing")
        if sha256_file(path) != digest:
            raise CorruptFileError(f"{path} fails its sha256 check (truncated or altered)")


def unlisted_files(folder: Path, manifest: dict) -> list[str]:
    """The files under ``folder`` (by relative path, through linked folders too; its own manifest
    aside) that ``manifest`` leaves out."""
    present = sorted(os.path.relpath(os.path.join(root, name), folder)
                     for root, _, files in os.walk(folder, followlinks=True) for name in files)
    return [name for name in present if name != MANIFEST and name not in manifest]


def is_intact(folder: str | os.PathLike[str], required: Iterable[str] = ()) -> bool:
    """Whether ``folder`` exists and matches its manifest, listing the ``required`` files (quietly)."""
    try:
        verify_manifest(folder, required)
    except CorruptFileError:
        return False
    return True


def verified(folder: str | os.PathLike[str], what: str, required: Iterable[str] = ()) -> bool:
    """True when ``folder`` exists and matches its manifest (which lists the ``required`` files).
    A folder that exists but does not is reported in one warning naming the bad file, and False is
    returned so that the caller rebuilds it (an :func:`atomic_dir` replaces it whole)."""
    folder = Path(folder)
    if not folder.exists():
        return False
    try:
        verify_manifest(folder, required)
    except CorruptFileError as error:
        warnings.warn(f"ignoring corrupt {what}: {error}; it will be rebuilt", stacklevel=2)
        return False
    return True


@contextlib.contextmanager
def manifested_dir(final: str | os.PathLike[str], what: str) -> Iterator[Path]:
    """:func:`atomic_dir` whose files get a sha256 manifest before the folder moves into place;
    a full disk is one :class:`DiskFullError` naming ``what`` and leaves no temporary behind."""
    with explain_disk_full(f"{what} {final}"), atomic_dir(final) as work:
        yield work
        write_manifest(work)


def remove_stale_parts(folder: str | os.PathLike[str], names: Iterable[str]) -> list[str]:
    """Delete the temporaries that a killed writer left in ``folder`` for the files and folders
    ``names`` (glob patterns relative to ``folder``: ``model``, ``checkpoints/step-*``): the
    ``.<name>.*.part`` siblings that :func:`atomic_write_bytes` and :func:`atomic_dir` make, and
    nothing else, so a file of the user's (``notes/.draft.part``) is never touched. Call it only
    while holding the folder's lock; return the names removed."""
    removed = []
    for pattern in names:
        parent, _, name = pattern.rpartition("/")
        for path in sorted(Path(folder).glob(f"{parent}/.{name}.*.part" if parent else f".{name}.*.part")):
            remove_path(path)
            removed.append(path.name)
    return removed
