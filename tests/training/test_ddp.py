"""`accelerate launch` runs `pe-book pretrain` as 2 CPU processes (DDP over gloo) whose weights agree."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

WORDS = "the a cat dog sat ran on under mat log and then it was big small red blue".split()


@pytest.mark.slow
def test_two_cpu_processes_agree(tmp_path):
    accelerate = Path(sys.executable).with_name("accelerate")
    if not accelerate.exists():
        accelerate = shutil.which("accelerate")
    rng = np.random.default_rng(0)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(WORDS, size=12)) for _ in range(400)) + "\n")
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    out = tmp_path / "run"
    command = [str(accelerate), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "pe_book.cli", "pretrain",
               "--profile", "smoke", "--variant", "ape-learned+rpe-learned", "--corpus-file", str(corpus),
               "--tokenizer", str(tmp_path / "tok"), "--steps", "3", "--precision", "fp32", "--out", str(out), "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    assert result["processes"] == 2
    assert result["ranks_agree"] is True
    assert (out / "model" / "model.safetensors").exists()
