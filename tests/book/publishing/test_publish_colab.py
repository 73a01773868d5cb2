"""The Colab notebooks: the first cell is safe to run twice (one clone, one install, the same
folder) and turns the hub off, so that online the chapters read the committed results (packaged
data) instead of computing from the hub's data under other keys; the text reads as the page
(glued values, captions, links into the published book) and figures are outputs; a published
notebook run online, and one run in a fresh environment, find the committed results."""
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

from pe_book.chapters import pretraining
from pe_book.chapters.common import open_results
from pe_book.commands.common import PUBLISHED_PROFILE
from pe_book.publishing import book, publish
from pe_book.publishing.book import BOOK_DIR, chapter_parameters, glued_values

ROOT = Path(__file__).resolve().parents[3]

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


def test_the_text_takes_the_glued_values_as_the_book_formats_them_and_refuses_what_it_cannot_show():
    glued = {"split": "'test'", "best": "61.2345", "skipped": "not run", "fig_x": "<figure>"}
    text = ("(here)=\n# Title\n\nOn {glue:text}`split`: {glue:text}`best:.1f`, {glue}`skipped:.2f`.\n\n"
            "```{glue:figure} fig_x\n:alt: A plot\n:name: fig-x\n\nScores on {glue:text}`split`.\n```\n")
    assert publish.render_markdown(text, glued, "ch") == "# Title\n\nOn test: 61.2, not run.\n\n**Figure.** Scores on test.\n"
    with pytest.raises(publish.PublishError, match="ch: the text cites 'other', which the executed chapter did not glue"):
        publish.render_markdown("{glue:text}`other`", glued, "ch")
    with pytest.raises(publish.PublishError, match="glue markup that a Colab notebook cannot show: '{glue:md}`best`'"):
        publish.render_markdown("{glue:md}`best`", glued, "ch")


def test_references_link_into_the_published_book_but_a_pages_own():
    labels = {"findings": ("08_findings", "Findings"), "fig-x": ("06_classification", "the figure")}
    book_url = "https://o.github.io/r/"
    text = "{numref}`fig-x` shows it; see {ref}`findings` and {ref}`the claims <findings>`."
    assert publish.link_references(text, labels, book_url) == (
        "[The figure](https://o.github.io/r/book/06_classification.html#fig-x) shows it; see "
        "[Findings](https://o.github.io/r/book/08_findings.html#findings) and "
        "[the claims](https://o.github.io/r/book/08_findings.html#findings).")
    assert publish.link_references(text, labels, book_url, keep=frozenset({"fig-x", "findings"})) == text
    with pytest.raises(publish.PublishError, match="no chapter has the label 'gone'"):
        publish.link_references("{ref}`gone`", labels, book_url)


@pytest.mark.parametrize("source", book.notebook_paths(), ids=lambda p: p.stem)
def test_every_chapter_reads_without_myst_as_a_colab_notebook_and_as_a_single_page(source):
    """No glue or reference markup is left in a Colab notebook's text; on a single page (``pe-book
    book --page``), a reference to another chapter is a link into the published book and one to the
    page itself stays for Sphinx."""
    import jupytext

    glued = {name: "1" for name in _glue_names(source)}
    labels = publish.chapter_labels()
    nb = publish.colab_notebook(source, "https://github.com/o/r", COMMIT, {}, glued, labels)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "{glue" not in text and "{ref}" not in text and "{numref}" not in text
    content = {"cells": [{"cell_type": c.cell_type, "source": c.source.splitlines(keepends=True)}
                         for c in jupytext.read(source).cells]}
    book._link_other_chapters(content, ROOT)
    page = "\n".join(c["source"] for c in content["cells"] if c["cell_type"] == "markdown")
    own = {label for label, (chapter, _) in labels.items() if chapter == source.stem}
    assert {m["target"] or m["label"] for m in publish.REFERENCE.finditer(page)} <= own
    assert f"/book/{source.stem}.html" not in page


def _glue_names(source: Path) -> set[str]:
    """The names a chapter's text cites with glue."""
    return {match["name"] for match in publish.GLUE_TEXT.finditer(source.read_text())}


def test_colab_notebooks_take_their_text_from_the_published_books_execution(tmp_path):
    source = ROOT / "notebooks" / "06_classification.py"
    with pytest.raises(publish.PublishError, match="06_classification.ipynb is missing: .* build it first"):
        publish.write_colab_notebooks(tmp_path / "colab", COMMIT, {source: {"profile": "cpu"}}, executed=tmp_path)
    executed = nbformat.v4.new_notebook()
    executed.metadata["papermill"] = {"parameters": {"compute": True}}  # the smoke profile's book
    (tmp_path / BOOK_DIR).mkdir()
    nbformat.write(executed, tmp_path / BOOK_DIR / "06_classification.ipynb")
    with pytest.raises(publish.PublishError, match="executed with profile=None, not the published 'cpu'"):
        publish.write_colab_notebooks(tmp_path / "colab", COMMIT, {source: {"profile": "cpu"}}, executed=tmp_path)


def _origin(tmp_path: Path, installed: bool) -> tuple[Path, str]:
    """A clone of this repository whose last commit is the working tree as it is (changed and new
    files that git does not ignore), plus, when ``installed``, an empty ``.colab-installed``, the
    first cell's mark of a done install; and that commit."""
    origin = tmp_path / "origin"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(origin)], check=True)
    listed = [subprocess.run(["git", "-C", str(ROOT), *args, "-z"], capture_output=True, text=True, check=True).stdout
              for args in (["diff", "HEAD", "--name-only", "--no-renames"], ["ls-files", "--others", "--exclude-standard"])]
    for name in filter(None, "\0".join(listed).split("\0")):
        if (ROOT / name).is_file():
            (origin / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, origin / name)
        else:
            (origin / name).unlink(missing_ok=True)
    git = ["git", "-C", str(origin), "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run([*git, "add", "-A"], check=True)
    if installed:
        (origin / ".colab-installed").touch()
        subprocess.run([*git, "add", "-f", ".colab-installed"], check=True)
    subprocess.run([*git, "commit", "--quiet", "--allow-empty", "-m", "the working tree"], check=True)
    return origin, subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def _executed_book(tmp_path: Path, source: Path, parameters: dict) -> Path:
    """The folder of the chapter executed as ``make book`` executes it (``book/<chapter>.ipynb``,
    the committed results), whose glued values the Colab notebook's text takes."""
    root = tmp_path / "book-build"
    root.mkdir()
    book.execute_notebook(source, {**parameters, "results": str(ROOT / "results")}, root)
    return root


def _git_url_from(origin: Path) -> dict[str, str]:
    """Environment variables under which git fetches the repository's URL from ``origin``."""
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{origin}.insteadOf",
            "GIT_CONFIG_VALUE_0": publish.repository_url()}


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
    checks out unchanged. The commit is the working tree plus an empty ``.colab-installed``
    (:func:`_origin`): pip would otherwise install the clone into the environment running this
    test (the next test installs it into a fresh one). The text takes its values from the chapter
    executed as the book executes it. The glued best validation loss and
    training commit are the book's, from the committed results."""
    origin, commit = _origin(tmp_path, installed=True)
    source = ROOT / "notebooks" / f"{CHAPTER}.py"
    parameters = chapter_parameters(PUBLISHED_PROFILE)[source]
    [notebook] = publish.write_colab_notebooks(tmp_path / "colab", commit, {source: parameters},
                                               executed=_executed_book(tmp_path, source, parameters))
    online = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "PE_BOOK_CLONE")}
    (tmp_path / "hub" / "sitecustomize.py").parent.mkdir()
    (tmp_path / "hub" / "sitecustomize.py").write_text(HUB_REACHABLE)
    env = online | _git_url_from(origin) | {
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "hub"), os.environ.get("PYTHONPATH")]))}
    executed = tmp_path / "executed" / BOOK_DIR / notebook.name
    executed.parent.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "papermill", notebook.name, str(executed), "-k", "python3", "--no-progress-bar"],
                          cwd=notebook.parent, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    glued = glued_values(tmp_path / "executed")[CHAPTER]
    book = pretraining.compute(open_results(PUBLISHED_PROFILE, str(ROOT / "results"))).cited
    assert (glued["best_loss"], glued["git_commit"]) == (repr(float(book["best_loss"])), book["git_commit"])



#: A chapter that reads the corpus and tokenizer besides the results, with figures.
DATA_CHAPTER = "06_classification"


@pytest.mark.slow
def test_a_colab_notebook_reads_like_its_page_when_run_in_a_fresh_environment(tmp_path, monkeypatch):
    """As Colab would: a fresh virtual environment that has the scientific stack (Colab's
    preinstalled packages; here this environment's, without pe_lib and without myst-nb's glue in the
    text), the notebook alone in a folder, and a local clone of the working tree standing in for the
    repository URL. The first cell clones, checks out and installs; the chapter, which needs data,
    then runs unchanged, online (the first cell turns the hub off itself), stored-only. Its figures
    are image outputs and its text holds the glued values, no glue markup."""
    origin, commit = _origin(tmp_path, installed=False)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    stack = Path(subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                capture_output=True, text=True, check=True).stdout.strip())
    (site / "colab_stack.pth").write_text(str(stack) + "\n")  # packages only: .pth files there (pe_lib's) are not read
    assert subprocess.run([str(python), "-c", "import pe_lib"], capture_output=True, cwd=tmp_path).returncode != 0
    source = ROOT / "notebooks" / f"{DATA_CHAPTER}.py"
    parameters = chapter_parameters(PUBLISHED_PROFILE)[source]
    [notebook] = publish.write_colab_notebooks(tmp_path / "colab", commit, {source: parameters},
                                               executed=_executed_book(tmp_path, source, parameters))
    online = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "PE_BOOK_CLONE")}
    result = subprocess.run([str(python), "-m", "papermill", notebook.name, "out.ipynb", "-k", "python3",
                             "--no-progress-bar"], cwd=notebook.parent, capture_output=True, text=True,
                            env=online | _git_url_from(origin))
    assert result.returncode == 0, result.stderr[-3000:]
    executed = nbformat.read(notebook.parent / "out.ipynb", as_version=4)
    outputs = [output for cell in executed.cells for output in cell.get("outputs", [])]
    assert "Error" not in json.dumps(outputs) and any("image/png" in output.get("data", {}) for output in outputs)
    text = "\n".join(cell.source for cell in executed.cells if cell.cell_type == "markdown")
    assert "{glue" not in text and "**Figure.**" in text
