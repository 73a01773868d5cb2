"""Cache folder resolution, atomic writes and safe archive extraction."""
from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from pe_lib.data import cache
from pe_lib.data.archives import ArchiveError, extract_members, safe_target


def test_default_cache_dir_env_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache.ENV_CACHE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_cache_dir() == tmp_path / "xdg" / "pe-book"
    monkeypatch.setenv(cache.ENV_CACHE, str(tmp_path / "mine"))
    assert cache.default_cache_dir() == tmp_path / "mine"
    assert cache.cache_root(tmp_path / "param") == tmp_path / "param"  # the parameter wins
    assert (tmp_path / "param" / "downloads").is_dir()


def test_unwritable_cache_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(cache.CacheError, match="not writable.*PE_LIB_CACHE"):
        cache.cache_root(blocker / "cache")


def test_is_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert not cache.is_offline()
    monkeypatch.setenv("HF_HUB_OFFLINE", "true")
    assert cache.is_offline()


def test_content_key_is_stable_and_order_free() -> None:
    assert cache.content_key({"a": 1, "b": [2]}) == cache.content_key({"b": [2], "a": 1})
    assert cache.content_key({"a": 1}) != cache.content_key({"a": 2})


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _tar_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _deb(path: Path, members: dict[str, bytes]) -> Path:
    def ar_entry(name: str, data: bytes) -> bytes:
        header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        return header + data + (b"\n" if len(data) % 2 else b"")

    payload = (b"!<arch>\n" + ar_entry("debian-binary", b"2.0\n") + ar_entry("control.tar.xz", _tar_bytes({}))
               + ar_entry("data.tar.xz", _tar_bytes(members)))
    path.write_bytes(payload)
    return path


@pytest.mark.parametrize("kind", ["zip", "tar", "deb"])
def test_extract_only_matching_members(tmp_path: Path, kind: str) -> None:
    members = {"./usr/share/x/data.noun": b"noun", "./usr/share/x/data.verb": b"verb", "./usr/bin/tool": b"elf"}
    if kind == "zip":
        archive = _zip(tmp_path / "a.whl", {k[2:]: v for k, v in members.items()})
    elif kind == "tar":
        archive = tmp_path / "a.tar.xz"
        archive.write_bytes(_tar_bytes(members))
    else:
        archive = _deb(tmp_path / "a.deb", members)
    out = tmp_path / "out"
    names = extract_members(archive, ("usr/share/x/data.*",), out)
    assert names == ["usr/share/x/data.noun", "usr/share/x/data.verb"]
    assert (out / "usr/share/x/data.verb").read_bytes() == b"verb"
    assert not (out / "usr/bin/tool").exists()


def test_extract_refuses_escaping_paths(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "evil.zip", {"../evil.txt": b"x"})
    with pytest.raises(ArchiveError, match="outside the target"):
        extract_members(archive, ("*",), tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()
    with pytest.raises(ArchiveError):
        safe_target(tmp_path, "/etc/passwd")


def test_extract_missing_member_is_an_error(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", {"a.txt": b"x"})
    with pytest.raises(ArchiveError, match="no member matching"):
        extract_members(archive, ("b.txt",), tmp_path / "out")
