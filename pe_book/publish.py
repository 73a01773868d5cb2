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
published page. The command line (``pe-book publish``) is :mod:`pe_book.commands.publish`.
"""
from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pe_lib.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
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
    would read the hub's data, whose keys differ, and find none of the results."""
    return f'''# Colab: the repository at the commit this book was built from: the package and its committed results.
import os
import subprocess
import sys

# The published results were computed from pe-lib's packaged data, offline; reading them needs the same
# data, so the hub stays off in this notebook (to compute with the hub's data, under keys of its own, set
# both to "0" and the chapter's parameter compute to True).
os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
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


def colab_notebook(source: Path, repository: str, commit: str, parameters: dict[str, Any]):
    """The Colab notebook of one chapter: :func:`colab_cell`, then the chapter unchanged, with
    ``parameters`` (the published page's) in papermill's injected-parameters cell."""
    import jupytext
    import nbformat

    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise PublishError(f"commit must be a full 40-digit hash, got {commit!r}")
    nb = jupytext.read(source)
    cells = copy.deepcopy(nb.cells)
    at = next((i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])), None)
    if at is None:
        raise PublishError(f"{source} has no cell tagged 'parameters'")
    if parameters:
        injected = nbformat.v4.new_code_cell("# Parameters of the published page\n" + "\n".join(
            f"{name} = {json.dumps(value) if not isinstance(value, (list, dict)) else repr(value)}"
            for name, value in parameters.items()))
        injected.metadata["tags"] = ["injected-parameters"]
        cells.insert(at + 1, injected)
    first = nbformat.v4.new_code_cell(colab_cell(repository, commit))
    nb.cells = [first, *cells]
    nb.metadata.pop("jupytext", None)
    return nb


def write_colab_notebooks(out: Path, commit: str, chapters: Mapping[Path, dict[str, Any]], root: Path = ROOT) -> list[Path]:
    """One Colab notebook per chapter, ``out/book/<chapter>.ipynb`` (the branch ``colab``'s layout):
    ``chapters`` maps each chapter's source to its parameters (the published profile's:
    :func:`pe_book.book.chapter_parameters`)."""
    import nbformat

    repository = repository_url(root)
    written = []
    for source, parameters in chapters.items():
        nb = colab_notebook(source, repository, commit, parameters)
        target = out / "book" / f"{source.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    return written
