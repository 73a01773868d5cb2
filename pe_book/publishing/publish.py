"""Publishing the book: the repository's URL (one setting), the Colab notebooks, the checks.

The repository's URL is ``[project.urls] Repository`` in ``pyproject.toml``, and nothing else
holds it: the book's repository and launch buttons get it from the configuration that
:func:`book_config` writes for ``jupyter-book build``, the Colab notebooks from
:func:`colab_notebook`, the README from the published book's link. A fork sets it there; the
publishing workflow then refuses to deploy while it names a repository other than the one being
built (:func:`check_repository`).

Colab opens ``https://colab.research.google.com/github/<owner>/<name>/blob/colab/book/<page>.ipynb``:
the branch ``colab``, which the workflow rewrites on every publication with one notebook per
chapter (:func:`write_colab_notebooks`). Each notebook's first cell clones the repository at the
commit the book was built from, installs it, and moves into the clone, so the chapter finds the
package of that commit and its committed results, and runs unchanged under the parameters of the
published page, written into its ``parameters`` cell as the defaults. Colab has no myst-nb, so a
notebook reads like the page without it: the first cell makes every glued figure a plain image
output (:data:`pe_book.publishing.notebook.SHOW_FIGURES`), and the text cells are the page's text
(:func:`render_markdown`): the glued values of the executed book (``book/<chapter>.ipynb``, which
must have been executed with the same parameters) in place of the glue markup, a glued figure's
caption in place of its directive, and references as links into the published book
(:func:`link_references`, also used by a single page: :func:`pe_book.publishing.book.build_page`). The
command line (``pe-book publish``) is :mod:`pe_book.commands.publish`.
"""
from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pe_lib.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
#: The branch that holds the Colab notebooks (the book's ``repository.branch``).
COLAB_BRANCH = "colab"
#: Where the Colab cell clones the repository (beside the notebook, in Colab's working folder).
CLONE = "pe-book"
_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)/?$")


class PublishError(InputError):
    """The repository setting or a Colab notebook cannot be what the published book needs."""


def repository_url(root: Path = ROOT) -> str:
    """``[project.urls] Repository`` of ``pyproject.toml``: a ``https://github.com/<owner>/<name>`` URL."""
    with open(root / "pyproject.toml", "rb") as f:
        url = tomllib.load(f).get("project", {}).get("urls", {}).get("Repository", "")
    if not _GITHUB.match(url):
        raise PublishError(f"pyproject.toml [project.urls] Repository must be https://github.com/<owner>/<name>, got {url!r}")
    return url.rstrip("/")


def pages_url(repository: str) -> str:
    """The GitHub Pages address of a repository's book: ``https://<owner>.github.io/<name>/``."""
    owner, name = _GITHUB.match(repository).groups()
    return f"https://{owner.lower()}.github.io/{name}/"


def check_repository(repository: str, github_repository: str | None) -> None:
    """Refuse to publish a book whose URL names another repository than the one being built
    (``github_repository``: ``GITHUB_REPOSITORY`` of the workflow, ``<owner>/<name>``); a fork that
    has not set its own URL would link every button to the original."""
    if not github_repository:
        raise PublishError("GITHUB_REPOSITORY is not set: the repository being published is unknown")
    expected = f"https://github.com/{github_repository}"
    if repository.lower() != expected.lower():
        raise PublishError(f"pyproject.toml [project.urls] Repository is {repository}, but this is {expected}; "
                           f"set Repository = \"{expected}\" there (see the README: forking)")


def book_config(root: Path = ROOT) -> dict:
    """``_config.yml`` with the repository's URL and the Colab branch filled in."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text())
    config.setdefault("repository", {}).update(url=repository_url(root), branch=COLAB_BRANCH)
    return config


def colab_cell(repository: str, commit: str) -> str:
    """The first cell of a Colab notebook: the repository at ``commit``, installed, as working
    folder, with the hub off. Safe to run again: the clone's absolute path is kept in the
    environment (a second run neither clones into the clone nor installs again). The hub is off
    because the published results were computed from the packaged data: online, the chapters
    would read the hub's data, whose keys differ, and find none of the results. Glued figures are
    shown as the cells' outputs (:data:`pe_book.publishing.notebook.SHOW_FIGURES`)."""
    from pe_book.publishing.notebook import SHOW_FIGURES

    return f'''# Colab: the repository at the commit this book was built from: the package and its committed results.
import os
import subprocess
import sys

# The published results were computed from pe-lib's packaged data, offline; reading them needs the same
# data, so the hub stays off in this notebook (to compute with the hub's data, under keys of its own, set
# both to "0" and run `!pe-book run --profile PROFILE` before the chapter's cells).
os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["{SHOW_FIGURES}"] = "1"  # a glued figure is shown below its cell (Colab has no myst-nb to place it)
REPOSITORY, COMMIT = "{repository}", "{commit}"
CLONE = os.environ.setdefault("PE_BOOK_CLONE", os.path.abspath("{CLONE}"))  # the same folder when run again
if not os.path.isdir(os.path.join(CLONE, ".git")):
    subprocess.run(["git", "clone", "--quiet", REPOSITORY, CLONE], check=True)
    subprocess.run(["git", "-C", CLONE, "checkout", "--quiet", COMMIT], check=True)
if not os.path.exists(os.path.join(CLONE, ".colab-installed")):
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", CLONE], check=True)
    open(os.path.join(CLONE, ".colab-installed"), "w").close()
os.chdir(CLONE)
if CLONE not in sys.path:
    sys.path.insert(0, CLONE)  # pe_lib and pe_book from the clone, so that they find the clone's results'''


def colab_notebook(source: Path, repository: str, commit: str, parameters: dict[str, Any],
                   glued: Mapping[str, str], labels: Mapping[str, tuple[str, str]]):
    """The Colab notebook of one chapter: :func:`colab_cell`, then the chapter, with ``parameters``
    (the published page's) as the defaults of its ``parameters`` cell
    (:func:`pe_book.publishing.notebook.with_defaults`), and its text as the page reads, with the page's
    ``glued`` values (name -> text, :func:`pe_book.publishing.notebook.glued_values`; :func:`render_markdown`) and
    references linked into the published book with ``labels`` (:func:`chapter_labels`)."""
    import jupytext
    import nbformat

    from pe_book.publishing.notebook import with_defaults

    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise PublishError(f"commit must be a full 40-digit hash, got {commit!r}")
    nb = jupytext.read(source)
    cells = copy.deepcopy(nb.cells)
    at = next((i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])), None)
    if at is None:
        raise PublishError(f"{source} has no cell tagged 'parameters'")
    cells[at].source = with_defaults(cells[at].source, parameters)
    book = pages_url(repository)
    for cell in cells:
        if cell.cell_type == "markdown":
            cell.source = link_references(render_markdown(cell.source, glued, source.stem), labels, book)
    first = nbformat.v4.new_code_cell(colab_cell(repository, commit))
    nb.cells = [first, *cells]
    nb.metadata.pop("jupytext", None)
    return nb


def write_colab_notebooks(out: Path, commit: str, chapters: Mapping[Path, dict[str, Any]], root: Path = ROOT,
                          executed: Path | None = None) -> list[Path]:
    """One Colab notebook per chapter, ``out/book/<chapter>.ipynb`` (the branch ``colab``'s layout):
    ``chapters`` maps each chapter's source to its parameters (the published profile's:
    :func:`pe_book.publishing.book.chapter_parameters`); the text takes the glued values of the chapters
    executed with those parameters under ``executed`` (default: ``root``; ``book/<chapter>.ipynb``,
    what ``make book`` writes)."""
    import nbformat

    from pe_book.publishing.notebook import glued_values

    repository = repository_url(root)
    executed = root if executed is None else executed
    glued, labels = glued_values(executed), chapter_labels(root)
    written = []
    for source, parameters in chapters.items():
        _check_executed(executed, source.stem, parameters)
        nb = colab_notebook(source, repository, commit, parameters, glued[source.stem], labels)
        target = out / "book" / f"{source.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    return written


def _check_executed(executed: Path, chapter: str, parameters: Mapping[str, Any]) -> None:
    """Refuse an executed chapter (``executed/book/<chapter>.ipynb``) that is absent or was run with
    other ``parameters`` than the published page's: its glued values would not be the page's."""
    import nbformat

    from pe_book.publishing.notebook import BOOK_DIR

    path = executed / BOOK_DIR / f"{chapter}.ipynb"
    if not path.exists():
        raise PublishError(f"{path} is missing: the Colab notebooks take their text's values from the executed "
                           "book; build it first (make book)")
    ran = nbformat.read(path, as_version=4).metadata.get("papermill", {}).get("parameters", {})
    differ = [name for name, value in parameters.items() if ran.get(name) != value]
    if differ:
        raise PublishError(f"{path} was executed with {differ[0]}={ran.get(differ[0])!r}, not the published "
                           f"{parameters[differ[0]]!r}; build the published book first (make book)")


#: ``{glue}`name``` or ``{glue:text}`name:format```.
GLUE_TEXT = re.compile(r"\{glue(?::text)?\}`(?P<name>[A-Za-z_]\w*)(?::(?P<format>[^`]*))?`")
#: A ``{glue:figure} name`` directive in a fence of backquotes or colons, to the fence's end.
GLUE_FIGURE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{glue:figure\}[ \t]+(?P<name>\w+)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                         re.S | re.M)
#: A target label line, ``(label)=``.
LABEL = re.compile(r"^\((?P<label>[\w-]+)\)=[ \t]*\n?", re.M)


def render_markdown(text: str, glued: Mapping[str, str], chapter: str) -> str:
    """A text cell of ``chapter`` as its page reads without myst-nb: each glued value's text in
    place of its ``{glue:text}`` (formatted as the book formats it:
    :func:`pe_book.publishing.sphinx_glue.format_text`), each ``{glue:figure}`` directive as its caption (the
    figure is the output of the cell that glued it), no target labels. Refuses a name the chapter
    did not glue, and glue markup of another kind."""
    from pe_book.publishing.sphinx_glue import format_text

    def value(match: re.Match) -> str:
        name = match["name"]
        if name not in glued:
            raise PublishError(f"{chapter}: the text cites {name!r}, which the executed chapter did not glue")
        return format_text(glued[name], match["format"] or "")

    def caption(match: re.Match) -> str:
        lines = [line for line in match["body"].splitlines() if not line.startswith(":")]
        return "**Figure.** " + "\n".join(lines).strip()

    text = LABEL.sub("", GLUE_TEXT.sub(value, GLUE_FIGURE.sub(caption, text)))
    if "{glue" in text:
        raise PublishError(f"{chapter}: glue markup that a Colab notebook cannot show: "
                           f"{text[text.index('{glue'):][:40]!r}; use {{glue:text}} or {{glue:figure}}")
    return text


def chapter_labels(root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """Every target of the chapters, label -> (chapter, title): a ``(label)=`` line (its title: the
    heading that follows) and a figure's ``:name:`` (its title: "the figure")."""
    import jupytext

    from pe_book.publishing.notebook import notebook_paths

    labels = {}
    for path in notebook_paths(root):
        for cell in jupytext.read(path).cells:
            if cell.cell_type != "markdown":
                continue
            for match in re.finditer(r"^\(([\w-]+)\)=[ \t]*\n+#+[ \t]+(.+)$", cell.source, re.M):
                labels[match[1]] = (path.stem, match[2].strip())
            for match in re.finditer(r"^:name:[ \t]+([\w-]+)", cell.source, re.M):
                labels[match[1]] = (path.stem, "the figure")
    return labels


#: ``{ref}`label```, ``{ref}`text <label>```, ``{numref}`label```.
REFERENCE = re.compile(r"\{(?:ref|numref)\}`(?:(?P<text>[^`<]*?)\s*<(?P<target>[\w-]+)>|(?P<label>[\w-]+))`")


def link_references(text: str, labels: Mapping[str, tuple[str, str]], book: str, keep: frozenset[str] = frozenset()) -> str:
    """``text`` with each ``{ref}``/``{numref}`` to a label of ``labels`` (:func:`chapter_labels`)
    but those in ``keep`` (a page's own) as a Markdown link into the published book at ``book``
    (:func:`pages_url`): ``[title](<book>book/<chapter>.html#<label>)``, titled by the reference's
    own text, else the target's title. Refuses a label that no chapter has."""
    from pe_book.publishing.notebook import BOOK_DIR

    def link(match: re.Match) -> str:
        label = match["target"] or match["label"]
        if label in keep:
            return match[0]
        if label not in labels:
            raise PublishError(f"{match[0]}: no chapter has the label {label!r}")
        chapter, title = labels[label]
        title = match["text"] or title
        before = text[:match.start()].rstrip()
        if not before or before[-1] in ".!?:":
            title = title[0].upper() + title[1:]
        return f"[{title}]({book}{BOOK_DIR}/{chapter}.html#{label})"

    return REFERENCE.sub(link, text)
