"""The cache folder and the small file-safety helpers every data module shares.

Layout under the cache root (default ``~/.cache/pe-book``, or ``$XDG_CACHE_HOME/pe-book``;
``$PE_LIB_CACHE`` or a ``cache_dir`` argument override it)::

    downloads/    archives exactly as fetched, trusted only when their sha256 matches the registry
    sources/      members extracted from those archives, one folder per source, with a manifest
    prepared/     corpus, tokenizer and task artefacts, one folder per content key
    tmp/          work in progress; nothing here is ever trusted

Every artefact is written into a temporary sibling folder and moved into place with one
``os.replace`` (``pe_lib.io.atomic_dir``), so an interrupted run leaves either the complete
artefact or nothing that a later run would use.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pe_lib.errors import CacheError
from pe_lib.io import atomic_dir, content_key, read_json, sha256_file, write_json  # noqa: F401  (re-exported)

ENV_CACHE = "PE_LIB_CACHE"
_OFFLINE_ENV = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")


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
