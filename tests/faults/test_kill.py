"""kill -9 during a step, a checkpoint write and an artifact write; the resumed run ends identical."""
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

SCRIPT = Path(__file__).with_name("kill_pretrain.py")


def run(out: Path, fault: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(out), fault], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("straight")
    assert run(out, "none").returncode == 0
    return load_file(out / "model" / "model.safetensors")


@pytest.mark.parametrize("fault", ["step", "checkpoint", "artifact"])
def test_killed_run_resumes_to_identical_weights(fault, straight, tmp_path):
    killed = run(tmp_path, fault)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (tmp_path / "result.json").exists()
    latest = (tmp_path / "checkpoints" / "latest").read_text().strip()
    assert latest == {"step": "step-00000004", "checkpoint": "step-00000002", "artifact": "step-00000006"}[fault]
    visible = [p.name for p in (tmp_path / "checkpoints").iterdir() if not p.name.startswith(".")]
    assert sorted(visible) == sorted([latest, "latest"]), "only complete checkpoints are visible"
    assert not (tmp_path / "model").exists(), "no half-written model folder is ever in place"
    resumed = run(tmp_path, "none")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    weights = load_file(tmp_path / "model" / "model.safetensors")
    assert weights.keys() == straight.keys()
    assert all((weights[k] == straight[k]).all() for k in weights)
    leftovers = [p.name for p in tmp_path.rglob(".*.part")]
    assert leftovers == [], f"stale temporary files were not cleaned: {leftovers}"
