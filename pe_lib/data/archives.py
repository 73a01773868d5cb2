"""Read selected members out of wheels, sdists and Debian packages, safely.

Only members matching the requested glob patterns are written, never links or devices, and a
member whose path would land outside the target folder is refused. Debian packages are read
in pure Python (an ``ar`` archive holding ``data.tar.*``), so no ``dpkg-deb`` is needed.
"""
from __future__ import annotations

import fnmatch
import io
import shutil
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from pe_lib.errors import ArchiveError

_AR_MAGIC = b"!<arch>\n"

def safe_target(root: Path, member: str) -> Path:
    """``root/member``, refusing absolute paths and ``..`` that would escape ``root``."""
    pure = PurePosixPath(member)
    if pure.is_absolute() or ".." in pure.parts:
        raise ArchiveError(f"refusing archive member outside the target folder: {member!r}")
    target = (root / Path(*pure.parts)).resolve()
    if not target.is_relative_to(root.resolve()):
        raise ArchiveError(f"refusing archive member outside the target folder: {member!r}")
    return target


def _normalise(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def _deb_data_tar(handle: BinaryIO) -> tarfile.TarFile:
    """The ``data.tar.*`` member of a ``.deb`` (an ``ar`` archive), opened as a tar file."""
    if handle.read(8) != _AR_MAGIC:
        raise ArchiveError("not a Debian package (no ar header)")
    while header := handle.read(60):
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        payload = handle.read(size)
        if size % 2:
            handle.read(1)
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                raise ArchiveError("zstd-compressed .deb: extract it with `dpkg-deb -x` instead")
            return tarfile.open(fileobj=io.BytesIO(payload), mode="r:*")
    raise ArchiveError("Debian package without data.tar")


def _iter_members(archive: Path) -> Iterator[tuple[str, BinaryIO]]:
    """(normalised name, readable file) for each regular file in a zip, tar or deb archive."""
    name = archive.name
    if name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    with zf.open(info) as handle:
                        yield _normalise(info.filename), handle
        return
    with open(archive, "rb") as raw:
        tar = _deb_data_tar(raw) if name.endswith(".deb") else tarfile.open(fileobj=raw, mode="r:*")
        with tar:
            for info in tar:
                if info.isfile():
                    handle = tar.extractfile(info)
                    assert handle is not None
                    yield _normalise(info.name), handle


def extract_members(archive: Path, patterns: tuple[str, ...], target: Path) -> list[str]:
    """Write the members matching any glob in ``patterns`` under ``target``; return their names.

    Each pattern must match at least one member, else :class:`ArchiveError`.
    """
    written: list[str] = []
    hits = dict.fromkeys(patterns, 0)
    for name, handle in _iter_members(archive):
        matched = [p for p in patterns if fnmatch.fnmatchcase(name, p)]
        if not matched:
            continue
        for pattern in matched:
            hits[pattern] += 1
        destination = safe_target(target, name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        with open(destination, "wb") as out:
            shutil.copyfileobj(handle, out)
        written.append(name)
    missing = [p for p, n in hits.items() if n == 0]
    if missing:
        raise ArchiveError(f"{archive.name} has no member matching {missing}")
    return sorted(written)
