"""pe_book.experiments.store: provenance (the faults of the store are in tests/faults)."""
import os
import subprocess
import sys

from pe_book.experiments import store


def test_git_commit_is_read_once_per_process(monkeypatch):
    """A commit made while a long run is going must not appear in that run's provenance."""
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        head = "a" * 40 if len([c for c in calls if "rev-parse" in c]) == 1 else "b" * 40
        return subprocess.CompletedProcess(command, 0, stdout=head if "rev-parse" in command else "", stderr="")

    store.git_commit.cache_clear()
    monkeypatch.setattr(store.subprocess, "run", fake_run)
    try:
        assert store.git_commit() == "a" * 40
        assert store.git_commit() == "a" * 40  # HEAD moved to b..., the process still runs a...
        assert store.provenance({}, 0.0)["git_commit"] == "a" * 40
        assert sum("rev-parse" in c for c in calls) == 1
    finally:
        store.git_commit.cache_clear()


def test_hardware_names_the_blas_kernel_numpy_chose_and_the_cpu_family():
    """The kernel moves float64 statistics by a few ulp (studies/verify/blas_kernels.py), so provenance
    names it; OPENBLAS_CORETYPE chooses it when numpy loads, hence a fresh process."""
    code = "from pe_book.experiments.store import hardware; h = hardware(); print(h['blas'], '|', h['cpu_id'])"
    for kernel in ("Haswell", "Sandybridge"):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OPENBLAS_CORETYPE": kernel},
                             check=True, capture_output=True, text=True).stdout
        blas, cpu_id = out.strip().split(" | ")
        assert blas.startswith("openblas ") and blas.endswith(f" {kernel}"), blas
        assert cpu_id.startswith("family ") and " model " in cpu_id
    assert not store.same_machine_type({**store.hardware(), "cpu": "Other"}, store.hardware())
    assert store.same_machine_type({**store.hardware(), "blas": None, "cpu_id": None}, store.hardware())  # records from before
