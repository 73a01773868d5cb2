"""The book and its reruns when things go wrong: a chapter rerun that lacks a result, a results folder
that is not there, a layer the models lack, a full disk, a page named ``..`` or a notebook that is
not one, the temporaries of a killed build, and SIGTERM while a notebook runs."""
import errno
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pe_book.chapters import common, findings, probing
from pe_book.experiments.profiles import SMOKE
from pe_book.experiments.results import MissingResult
from pe_book.publishing import book
from pe_lib.errors import DiskFullError, InputError

ROOT = Path(__file__).resolve().parents[2]
RESULTS = str(ROOT / "results")
NOTEBOOKS = ROOT / "notebooks"


def test_a_chapter_rerun_only_reads_and_names_what_is_missing(tmp_path):
    stored = common.open_results("cpu", RESULTS)
    assert not hasattr(stored, "ensure_pretrained")
    with pytest.raises(MissingResult, match=r"none/analysis-p9-\w+ is not stored: compute it with `pe-book run "
                                            r"--profile cpu`"):
        stored.analysis("none", pretrain_seed=9)
    probing_notebook, performance = NOTEBOOKS / "05_probing.py", NOTEBOOKS / "09_performance.py"
    assert book._build_parameters(probing_notebook, {"profile": "cpu"}) == {"profile": "cpu"}
    assert book._build_parameters(performance, {}) == {}  # it reads no results


def test_a_results_folder_that_is_not_there_or_holds_nothing_of_the_profile_is_one_line(tmp_path, monkeypatch):
    typo = tmp_path / "typo"
    with pytest.raises(InputError, match=rf"^results folder '{typo}' does not exist; .*`pe-book run --profile cpu --results {typo}`"):
        common.open_results("cpu", str(typo))
    (tmp_path / "book").mkdir()
    monkeypatch.chdir(tmp_path / "book")  # papermill run from inside book/: a relative folder is found there
    with pytest.raises(InputError) as info:
        common.open_results("cpu", "results")
    assert str(info.value).startswith(f"results folder 'results' ({tmp_path}/book/results: relative to the "
                                      f"working directory {tmp_path}/book) does not exist")
    (tmp_path / "book" / "results" / "smoke").mkdir(parents=True)
    with pytest.raises(InputError, match=r"holds no artifact of profile cpu \(in its subfolder cpu-next\)"):
        common.open_results("cpu", "results")
    assert "\n" not in str(info.value)


def test_a_layer_the_models_do_not_have_is_one_line_naming_the_valid_range():
    runner = SimpleNamespace(profile=SMOKE)  # refused before anything is read
    for compute in (probing.compute, findings.compute):
        with pytest.raises(InputError, match=r"^layer must be in 0\.\.1 for profile 'smoke' \(its models "
                                             r"have 2 layers\), got 999$"):
            compute(runner, layer=999)


# ----------------------------------------------------------------------------- building


def _tiny_notebook(root: Path, name: str, code: str = "x = 1") -> Path:
    path = root / "notebooks" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'# %% tags=["parameters"]\n\n# %%\n{code}\n')
    return path


def test_a_full_disk_while_writing_an_executed_notebook_is_one_line(tmp_path, monkeypatch):
    from papermill.iorw import LocalHandler

    def full(self, buf, path):
        Path(path).write_text(buf[:10])  # what a writer leaves when the space runs out
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LocalHandler, "write", full)
    target = tmp_path / "book" / "99_x.ipynb"
    with pytest.raises(DiskFullError, match=rf"^disk full while writing executed notebook {target}; "
                                            "nothing half-written was kept"):
        book.execute_notebook(_tiny_notebook(tmp_path, "99_x"), {}, tmp_path)
    assert sorted(p.name for p in (tmp_path / "book").iterdir()) == []


def _executed(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_page_named_dot_dot_is_refused_and_nothing_outside_its_page_build_is_deleted(tmp_path):
    kept = tmp_path / "book" / "_build" / "html" / "index.html"
    kept.parent.mkdir(parents=True)
    kept.write_text("the book")
    with pytest.raises(book.BookError, match=r"\.\.\.ipynb: '\.\.' cannot name a page: .* out\.ipynb$"):
        book.build_page(_executed(tmp_path / "x" / "...ipynb"), tmp_path)
    assert kept.read_text() == "the book"


@pytest.mark.parametrize("text", ['{"cells": [{"cell_type": "markdown", "sou', "{}", "[]", "\udcff"],
                         ids=["truncated", "empty", "a list", "not text"])
def test_a_page_of_a_notebook_that_is_not_one_is_one_line_naming_it(tmp_path, text):
    notebook = tmp_path / "out.ipynb"
    notebook.write_bytes(text.encode("utf-8", "surrogateescape"))
    earlier = tmp_path / "book" / "_build" / "pages" / "out" / "out.ipynb"  # the last good page build stays
    _executed(earlier)
    with pytest.raises(book.BookError, match=rf"^{notebook}: not a notebook: ") as info:
        book.build_page(notebook, tmp_path)
    assert "\n" not in str(info.value) and earlier.exists()


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_killed_builds_temporaries_of_the_notebook_go_and_a_running_ones_stay(tmp_path, monkeypatch):
    import papermill

    running = subprocess.Popen(["sleep", "60"])
    try:
        dead = _dead_pid()
        names = {"killed": f".tmp-99_x-{dead}.ipynb", "running": f".tmp-99_x-{running.pid}.ipynb",
                 "another notebook's": f".tmp-99_y-{dead}.ipynb", "the user's": ".tmp-99_x-notes.ipynb"}
        for name in names.values():
            _executed(tmp_path / "book" / name)
        monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("stop here"))
        with pytest.raises(pytest.fail.Exception, match="stop here"):
            book.execute_notebook(_tiny_notebook(tmp_path, "99_x"), {}, tmp_path)
    finally:
        running.kill()
        running.wait()
    left = sorted(p.name for p in (tmp_path / "book").iterdir())
    assert left == sorted(name for what, name in names.items() if what != "killed")


BUSY = "import time\nend = time.time() + 60\nwhile time.time() < end:\n    sum(range(10000))"


def test_sigterm_while_a_notebook_runs_is_only_the_promised_line(tmp_path, capfd, monkeypatch):
    import pe_book.commands.book as book_command
    from pe_book.cli import main

    path = _tiny_notebook(tmp_path, "99_busy", f"open({str(tmp_path / 'started')!r}, 'w').close()\n{BUSY}")

    def terminate_when_the_cell_runs():
        while not (tmp_path / "started").exists():
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(book_command, "build", lambda *a, **k: book.execute_notebook(path, {}, tmp_path))
    threading.Thread(target=terminate_when_the_cell_runs, daemon=True).start()
    assert main(["book", "--no-html"]) == 143
    time.sleep(1)  # what the kernel would print, it has printed by now
    errors = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert errors == ["pe-book book: terminated (SIGTERM); finished artifacts and checkpoints are kept, and "
                      "a rerun resumes from them"]
    assert not list((tmp_path / "book").glob(".tmp-*"))
