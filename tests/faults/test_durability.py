"""A power loss keeps what an atomic write promised: the file's bytes are synced before the rename
and its folder after it, and a folder's every file and subfolder before the folder moves into place
(SIGKILL, which test_kill.py simulates, loses nothing the kernel holds; a power loss does)."""
import os
from pathlib import Path

import pytest

import pe_lib.io as io_module
from pe_lib.io import atomic_dir, atomic_write_text


@pytest.fixture
def events(monkeypatch):
    """The fsyncs (by the path their descriptor names) and renames, in order."""
    happened = []
    fsync, replace = os.fsync, os.replace

    def recording_fsync(fd):
        happened.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        fsync(fd)

    def recording_replace(src, dst):
        happened.append(("replace", str(src), str(dst)))
        replace(src, dst)

    monkeypatch.setattr(io_module.os, "fsync", recording_fsync)
    monkeypatch.setattr(io_module.os, "replace", recording_replace)
    return happened


def test_an_atomic_file_is_synced_before_its_rename_and_its_folder_after(events, tmp_path):
    atomic_write_text(tmp_path / "a.json", "{}")
    (kind, synced), (_, moved, to), (kind_after, folder) = events
    assert kind == "fsync" and synced == moved and Path(moved).parent == tmp_path
    assert to == str(tmp_path / "a.json") and (kind_after, folder) == ("fsync", str(tmp_path))


def test_an_atomic_folder_is_synced_whole_before_its_move_and_its_parent_after(events, tmp_path):
    with atomic_dir(tmp_path / "artifact") as work:
        (work / "model").mkdir()
        (work / "model" / "weights.bin").write_bytes(b"w" * 10)  # written by a writer that does not sync
        (work / "artifact.json").write_text("{}")
    move = next(i for i, e in enumerate(events) if e[0] == "replace" and e[2] == str(tmp_path / "artifact"))
    work = Path(events[move][1])
    before = {e[1] for e in events[:move] if e[0] == "fsync"}
    assert {str(work / "model" / "weights.bin"), str(work / "artifact.json"), str(work / "model"), str(work)} <= before
    assert ("fsync", str(tmp_path)) in events[move + 1:]
    assert (tmp_path / "artifact" / "model" / "weights.bin").read_bytes() == b"w" * 10


def test_a_file_system_that_cannot_sync_a_folder_is_no_error(tmp_path, monkeypatch):
    import errno

    fsync = os.fsync

    def no_folder_sync(fd):
        if os.path.isdir(os.readlink(f"/proc/self/fd/{fd}")):
            raise OSError(errno.EINVAL, "Invalid argument")
        fsync(fd)

    monkeypatch.setattr(io_module.os, "fsync", no_folder_sync)
    atomic_write_text(tmp_path / "a.json", "{}")
    assert (tmp_path / "a.json").read_text() == "{}"
