"""SIGTERM (docker stop, systemd, SLURM) ends a command like Ctrl-C: one line, exit status 143,
finished checkpoints kept, and the rerun resumes from them (here with another thread count: recorded
in the result, and one warning line)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from transformers import BertTokenizer

from pe_book.cli import main
from pe_lib.io import verify_manifest

SCRIPT = Path(__file__).with_name("term_pretrain.py")
WORDS = "good bad film plot the was a cat dog sat".split()


def test_sigterm_is_one_line_and_status_143(tmp_path, capsys, monkeypatch):
    import pe_book.commands.run as run_command

    def terminated(args):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler interrupts this at once
        raise AssertionError("SIGTERM was not raised")

    monkeypatch.setattr(run_command, "run", terminated)
    start = time.monotonic()
    assert main(["run", "--results", str(tmp_path / "r"), "--cache", str(tmp_path / "c")]) == 143
    assert time.monotonic() - start < 20
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert errors == ["pe-book run: terminated (SIGTERM); finished artifacts and checkpoints are kept, and a rerun "
                      "resumes from them"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, "the handler is the command's only"


def test_a_terminated_pretraining_keeps_its_checkpoint_and_resumes(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizer(vocab=str(vocab)).save_pretrained(tmp_path / "tokenizer")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(30)) for i in range(400)) + "\n")
    out = tmp_path / "run"
    argv = [sys.executable, str(SCRIPT), "--variant", "ape-learned", "--corpus-file", str(corpus), "--tokenizer",
            str(tmp_path / "tokenizer"), "--out", str(out), "--cache", str(tmp_path / "cache"), "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 143, first.stderr
    assert first.stderr.strip().splitlines()[-1].startswith("pe-book pretrain: terminated (SIGTERM); finished "
                                                            "artifacts and checkpoints are kept")
    checkpoints = sorted((out / "checkpoints").glob("step-*"))
    assert [c.name for c in checkpoints] == ["step-00000020"]
    verify_manifest(checkpoints[0])
    assert not list(out.rglob(".*.part")), "no temporary is left behind"
    # resumed with another thread count (recorded, and warned about in one line: other rounding)
    again = subprocess.run(argv, capture_output=True, text=True, env={**env, "TERM_AT": "0", "OMP_NUM_THREADS": "2"},
                           timeout=600)
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert result["steps"] == 40 and result["threads"] == [1, 2]
    warned = [line for line in again.stderr.splitlines() if "torch threads" in line]
    assert warned == [f"warning: {checkpoints[0]} was trained with 1 torch threads and this process has 2: the resumed "
                      "run differs from an uninterrupted one in the last bits (torch.set_num_threads(1) resumes it exactly)"]
