"""Helpers shared by the tests (importable as ``support`` because tests/ is on sys.path)."""


def tiny_config(variant: str = "ape-learned", **overrides):
    """A 2-layer, 32-wide PEBertConfig for fast tests."""
    from pe_lib import PEBertConfig

    fields = dict(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=24, rpe_max_distance=6, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        position_embedding=variant,
    )
    fields.update(overrides)
    return PEBertConfig(**fields)


def tmpfs(folder, options: str):
    """Generator for a fixture: ``folder`` as a tmpfs mounted with ``options`` (root only; the test
    is skipped where it cannot be mounted), unmounted afterwards."""
    import os
    import shutil
    import subprocess

    import pytest

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


class StoreLockHolder:
    """Another process holding an artifact store's lock: ``with StoreLockHolder(root, profile) as pid: ...``."""

    def __init__(self, root, profile: str = "smoke"):
        self.root, self.profile = root, profile

    def __enter__(self) -> int:
        import subprocess
        import sys

        self.holder = subprocess.Popen([sys.executable, "-c", (
            "import time; from pe_book.experiments.store import Store\n"
            f"with Store({str(self.root)!r}, {self.profile!r}).lock():\n"
            "    print('locked', flush=True); time.sleep(30)")], stdout=subprocess.PIPE, text=True)
        assert self.holder.stdout.readline().strip() == "locked"
        return self.holder.pid

    def __exit__(self, *exc) -> None:
        self.holder.kill()
        self.holder.wait()
