"""The Colab notebook's first cell: safe to run twice (one clone, one install, the same folder),
and the hub off, so that online the chapters read the committed results (packaged data) instead
of computing from the hub's data under other keys; a published notebook run online finds them."""
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pe_book import publish
from pe_book.book import BOOK_DIR, chapter_parameters, glued_values
from pe_book.chapters import pretraining
from pe_book.chapters.common import STORED_ONLY, open_runner
from pe_book.commands.common import PUBLISHED_PROFILE

ROOT = Path(__file__).resolve().parents[2]

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_the_first_cell_runs_twice_into_one_clone_with_the_hub_off(tmp_path, monkeypatch):
    calls = []

    def run(argv, check):  # git clone / checkout and pip install, recorded; a clone makes its folder
        calls.append(argv[:3] if argv[0] == "git" else argv[1:4])
        if argv[:2] == ["git", "clone"]:
            os.makedirs(os.path.join(argv[-1], ".git"))

    monkeypatch.setitem(sys.modules, "subprocess", types.SimpleNamespace(run=run))
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "PE_BOOK_CLONE"):  # online, as Colab is
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    cell = publish.colab_cell("https://github.com/o/r", COMMIT)
    for _ in range(2):
        exec(compile(cell, "colab-cell", "exec"), {})
        assert os.getcwd() == str(tmp_path / publish.CLONE)
    assert not (tmp_path / publish.CLONE / publish.CLONE).exists()  # no clone inside the clone
    assert calls == [["git", "clone", "--quiet"], ["git", "-C", str(tmp_path / publish.CLONE)], ["-m", "pip", "install"]]
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["HF_DATASETS_OFFLINE"] == "1"
    assert sys.path.count(str(tmp_path / publish.CLONE)) == 1
    from pe_lib.data.cache import is_offline

    assert is_offline()  # the data source "auto" of the published profiles then means the packaged data


#: The chapter run online: it reads the pretraining artifacts of every variant of the published profile.
CHAPTER = "03_pretraining"
#: ``sitecustomize`` of the notebook's processes: the hub answers, and any dataset asked of it stops
#: the notebook (pe_lib asks through ``datasets.load_dataset``, looked up at call time). A
#: BaseException: the fallback to the packaged data of an unreachable hub catches Exceptions only.
HUB_REACHABLE = """import datasets


class HubReached(BaseException):
    pass


def load_dataset(path, *args, **kwargs):
    raise HubReached(f"the hub was asked for {path}: online the chapter reads the hub's data, whose keys differ")


datasets.load_dataset = load_dataset
"""


@pytest.mark.slow
def test_a_published_colab_notebook_run_online_reads_the_committed_results(tmp_path, monkeypatch):
    """The Colab notebook of chapter 3 as ``pe-book publish colab`` writes it (the published
    profile's parameters, the repository's GitHub URL), executed by papermill online: no
    HF_*_OFFLINE in the kernel's environment, as on Colab, and stored-only, so that a chapter that
    would compute instead of reading (results missing) stops the notebook. The hub is simulated
    reachable (:data:`HUB_REACHABLE`): any dataset asked of it stops the notebook, since with the
    hub's data every key differs (here, with no network, the data source "auto" would fall back to
    the packaged data by itself and hide a first cell that leaves the hub on). Git fetches the URL
    from a local clone of this repository (``url.<clone>.insteadOf``): the first cell clones and
    checks out unchanged. The commit is HEAD plus an empty ``.colab-installed``, the first cell's
    mark of a done install: pip would otherwise install the clone into the environment running
    this test (Colab's install is the first cell's own test). The glued best validation loss and
    training commit are the book's, from the committed results."""
    origin = tmp_path / "origin"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(origin)], check=True)
    (origin / ".colab-installed").touch()
    git = ["git", "-C", str(origin), "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run([*git, "add", "-f", ".colab-installed"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "installed"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    source = ROOT / "notebooks" / f"{CHAPTER}.py"
    [notebook] = publish.write_colab_notebooks(tmp_path / "colab", commit, {source: chapter_parameters(PUBLISHED_PROFILE)[source]})
    online = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "PE_BOOK_CLONE")}
    (tmp_path / "hub" / "sitecustomize.py").parent.mkdir()
    (tmp_path / "hub" / "sitecustomize.py").write_text(HUB_REACHABLE)
    env = online | {STORED_ONLY: "1", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{origin}.insteadOf",
                    "GIT_CONFIG_VALUE_0": publish.repository_url(),
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "hub"), os.environ.get("PYTHONPATH")]))}
    executed = tmp_path / "executed" / BOOK_DIR / notebook.name
    executed.parent.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "papermill", notebook.name, str(executed), "-k", "python3", "--no-progress-bar"],
                          cwd=notebook.parent, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    glued = glued_values(tmp_path / "executed")[CHAPTER]
    monkeypatch.setenv(STORED_ONLY, "1")
    book = pretraining.compute(open_runner(PUBLISHED_PROFILE, str(ROOT / "results"))).cited
    assert (glued["best_loss"], glued["git_commit"]) == (repr(float(book["best_loss"])), book["git_commit"])

