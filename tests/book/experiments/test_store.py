"""pe_book.experiments.store: provenance (the faults of the store are in tests/faults)."""
import subprocess

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
