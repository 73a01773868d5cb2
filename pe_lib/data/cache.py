"""The cache folder and the small file-safety helpers every data module shares.

Layout under the cache root (default ``~/.cache/pe-book``, or ``$XDG_CACHE_HOME/pe-book``;
``$PE_LIB_CACHE`` or a ``cache_dir`` argument override it)::

    downloads/    archives exactly as fetched, trusted only when their sha256 matches the registry
    sources/      members extracted from those archives, one folder per source, with a manifest
    prepared/     corpus, tokenizer and task artefacts, one folder per content key
    tmp/          work in progress; nothing here is ever trusted

Every artefact is written into ``tmp/`` and moved into place with one ``os.replace``, so an
interrupted run leaves either the complete artefact or nothing that a later run would use.
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

ENV_CACHE = "PE_LIB_CACHE"
_OFFLINE_ENV = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")


class CacheError(RuntimeError):
    """The cache folder cannot be created or written."""


def default_cache_dir() -> Path:
    """``$PE_LIB_CACHE``, else ``$XDG_CACHE_HOME/pe-book``, else ``~/.cache/pe-book``."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pe-book"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache root, created and checked writable; raises one clear :class:`CacheError`."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    try:
        for sub in ("downloads", "sources", "prepared", "tmp"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root / "tmp"):
            pass
    except OSError as exc:
        raise CacheError(
            f"cache folder {root} is not writable ({exc.strerror or exc}); "
            f"set {ENV_CACHE}=/some/writable/dir or pass cache_dir=..."
        ) from None
    return root


def is_offline() -> bool:
    """True when HF_DATASETS_OFFLINE or HF_HUB_OFFLINE is set to a true value."""
    return any(
        os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"} for name in _OFFLINE_ENV
    )


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_key(payload: Any, length: int = 12) -> str:
    """A short stable hash of a JSON-able payload: the version key of a prepared artefact."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


@contextlib.contextmanager
def atomic_dir(final: Path, root: Path) -> Iterator[Path]:
    """Yield a fresh folder in ``root/tmp``; on success it replaces ``final`` in one move.

    On any exception the work folder is removed and ``final`` is left as it was.
    """
    work = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=root / "tmp"))
    try:
        yield work
        work.chmod(0o755)  # mkdtemp makes it private; a prepared artefact is as readable as any cache file
        if final.exists():
            shutil.rmtree(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(work, final)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def write_json(path: Path, payload: Any) -> None:
    """Write JSON through a temporary file and ``os.replace`` (never a half-written file)."""
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    """Parse a JSON file."""
    return json.loads(path.read_text(encoding="utf-8"))
