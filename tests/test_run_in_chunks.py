"""scripts/run_in_chunks.sh: its calls of ``pe-book run`` and its exit status, with a stub ``pe-book``
in a throwaway git repository (no model is trained)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "run_in_chunks.sh"
STUB = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/calls.txt"
mkdir -p results/{folder}/none/x && echo "{}" > results/{folder}/none/x/artifact.json
exit {status}
"""


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None or shutil.which("timeout") is None:
        pytest.skip("needs git and timeout")
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "run_in_chunks.sh")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".gitignore").write_text(".venv/\n")
    for args in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True)
    return tmp_path


def chunk(repo: Path, *args: str, status: int = 0, folder: str = "cpu") -> tuple[int, list[str], str]:
    stub = repo / ".venv" / "bin" / "pe-book"
    stub.write_text(STUB.replace("{status}", str(status)).replace("{folder}", folder))
    stub.chmod(0o755)
    env = {**os.environ, "CHUNK_POLL_SECONDS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(["bash", "scripts/run_in_chunks.sh", "cpu", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=60)
    calls = (repo / ".venv" / "bin" / "calls.txt").read_text().splitlines()
    return done.returncode, calls, done.stdout


def test_a_chunk_passes_its_seconds_to_the_stop_rule_and_commits_what_it_finished(repo):
    status, calls, out = chunk(repo, "900", "--variants", "rope")
    assert status == 0 and calls == ["run --profile cpu --no-progress --stop-after 900 --variants rope"]
    assert "committed results/cpu (1 artifacts)" in out
    log = subprocess.run(["git", "log", "--format=%s", "-1"], cwd=repo, capture_output=True, text=True).stdout
    assert log.strip() == "results/cpu: 1 artifacts (chunk of pe-book run --profile cpu)"


def test_the_tail_starts_the_next_model_past_the_stop_rule(repo):
    status, calls, out = chunk(repo, "900", "--tail", "--variants", "rope")
    assert status == 0 and "the tail starts the next model anyway" in out
    assert calls[1] == "run --profile cpu --no-progress --variants rope --stop-after 100000000"


def test_no_tail_after_a_failed_run_or_in_the_last_minutes(repo):
    status, calls, _ = chunk(repo, "900", "--tail", status=3)
    assert status == 3 and len(calls) == 1
    (repo / ".venv" / "bin" / "calls.txt").unlink()
    status, calls, _ = chunk(repo, "200", "--tail")
    assert status == 0 and len(calls) == 1, "under 5 minutes left: no tail"


def test_a_profile_that_keeps_another_folder_has_that_folder_committed(repo):
    """The published cpu profile keeps the folder it was computed in (Profile.folder): its chunk
    commits what the run wrote there, and says so."""
    status, _, out = chunk(repo, "900", folder="cpu-next")
    assert status == 0 and "committed results/cpu-next (1 artifacts)" in out
    log = subprocess.run(["git", "log", "--format=%s", "-1"], cwd=repo, capture_output=True, text=True).stdout
    assert log.strip() == "results/cpu-next: 1 artifacts (chunk of pe-book run --profile cpu)"


def test_a_chunk_never_commits_a_writers_temporaries(repo):
    """A commit while an artifact is written: its temporary folder (``.NAME.*.part``), a temporary
    file, a replaced folder set aside and the store's lock stay out of it, whatever the repository
    ignores."""
    half = ["results/cpu/none/.finetune-x.k2.part/artifact.json", "results/cpu/none/.artifact.json.a1.part",
            "results/cpu/none/.y.old-12/artifact.json", "results/cpu/.lock"]
    for path in half:
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("half-written")
    status, _, out = chunk(repo, "900")
    committed = subprocess.run(["git", "ls-files", "results"], cwd=repo, capture_output=True, text=True)
    assert status == 0 and committed.stdout.split() == ["results/cpu/none/x/artifact.json"]


def test_the_repository_ignores_the_stores_temporaries():
    """What a writer leaves beside an artifact folder while it writes (or after a kill)."""
    names = [".pretrain-p0-a.k3j.part/artifact.json", ".artifact.json.x1.part",
             ".pretrain-p0-a.old-12/arrays.npz"]
    paths = [f"results/cpu/rope/{name}" for name in names]
    done = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=SCRIPT.parents[1],
                          capture_output=True, text=True)
    assert done.stdout.split() == paths
