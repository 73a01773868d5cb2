"""What a killed writer leaves of a folder written in one move (``pe_lib.io.atomic_dir``: the
prepared corpus, tokenizer and tasks of the cache, artifacts, checkpoints) is deleted by the next
write of the same folder; a running writer's temporary and every other name are kept."""
import os
import signal
import time

from pe_lib.io import atomic_dir


def _writer(final) -> int:
    """The pid of a process (forked: no imports to wait for) halfway through writing ``final``."""
    ready, say = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: begins the folder, says so, and waits there to be killed
        try:
            with atomic_dir(final) as work:
                (work / "train.txt").write_bytes(b"x" * 100_000)
                os.write(say, b"1")
                time.sleep(60)
        finally:
            os._exit(0)
    os.close(say)
    assert os.read(ready, 1) == b"1"
    os.close(ready)
    return pid


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_the_next_write_deletes_a_killed_writers_temporary_and_keeps_a_running_ones(tmp_path):
    prepared = tmp_path / "prepared"
    final = prepared / "corpus-packaged-abc"
    killed = _writer(final)
    _kill(killed)
    left_by_killed = sorted(p.name for p in prepared.iterdir())
    assert len(left_by_killed) == 1 and left_by_killed[0].startswith(".corpus-packaged-abc.")
    (prepared / f".tokenizer-wordpiece-abc.{killed}-x.part").mkdir()  # another folder's
    (prepared / ".corpus-packaged-abc.notes.part").write_text("the user's")
    running = _writer(final)
    try:
        with_running = set(p.name for p in prepared.iterdir()) - set(left_by_killed)
        with atomic_dir(final) as work:
            (work / "train.txt").write_text("rebuilt")
        assert (final / "train.txt").read_text() == "rebuilt"
        assert set(p.name for p in prepared.iterdir()) == with_running | {final.name}
    finally:
        _kill(running)
