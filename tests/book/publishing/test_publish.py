"""Publishing: one repository URL, the workflow, and the Colab notebooks run as Colab would."""
import re
import subprocess
from pathlib import Path

import jupytext
import pytest
import yaml

from pe_book.commands.common import PUBLISHED_PROFILE
from pe_book.publishing import book, publish
from pe_lib.errors import InputError

ROOT = Path(__file__).resolve().parents[3]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_the_repository_url_has_one_home(tmp_path):
    url = publish.repository_url()
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url)
    config = publish.book_config()
    assert config["repository"]["url"] == url and config["repository"]["branch"] == publish.COLAB_BRANCH
    raw = (ROOT / "_config.yml").read_text()
    assert url not in raw and all(url not in p.read_text() for p in (ROOT / "notebooks").glob("*.py"))
    (tmp_path / "pyproject.toml").write_text('[project.urls]\nRepository = "https://example.org/x"\n')
    with pytest.raises(InputError, match=r"must be https://github.com/<owner>/<name>"):
        publish.repository_url(tmp_path)
    assert publish.pages_url("https://github.com/Some-Org/pe-lib") == "https://some-org.github.io/pe-lib/"


def test_publishing_refuses_a_url_that_is_not_the_repository_built():
    url = publish.repository_url()
    owner_name = url.removeprefix("https://github.com/")
    publish.check_repository(url, owner_name)
    publish.check_repository(url, owner_name.upper())  # GitHub names are case-insensitive
    with pytest.raises(InputError, match=r"but this is https://github.com/someone/fork; set Repository = "):
        publish.check_repository(url, "someone/fork")
    with pytest.raises(InputError, match="GITHUB_REPOSITORY is not set"):
        publish.check_repository(url, None)


def test_the_workflow_builds_deploys_and_tests_with_the_makefile_targets():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    assert workflow[True]["push"]["branches"] == ["main"]  # YAML reads the key `on` as True
    assert set(workflow["jobs"]) == {"test", "book"}
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    ci = (ROOT / ".ci" / "run").read_text()
    used = {}
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            for command in step.get("run", "").splitlines():
                assert command.startswith("make "), f"the workflow runs only Makefile targets: {command!r}"
                target = command.split()[1]
                assert target in targets, f"make {target} is not a Makefile target"
                used[target] = command
    assert {"test", "book", "check-book", "check-keys", "check-repository", "colab"} <= set(used)
    for target in ("test", "book", "check-book", "check-keys"):  # what .ci/run checks is what the workflow runs
        assert used[target].replace(" COMMIT=${{ github.sha }}", "") in ci, used[target]
    uses = [step.get("uses", "") for step in workflow["jobs"]["book"]["steps"]]
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)


def _make_book(*args: str) -> str:
    """The command `make book ARGS` would run (make -n)."""
    return subprocess.run(["make", "-n", "book", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_make_book_builds_the_published_profile_from_the_committed_results():
    """The Makefile's PROFILE repeats PUBLISHED_PROFILE (make cannot import it): the two agree."""
    assert f"book --profile {PUBLISHED_PROFILE} --stored-only" in _make_book()
    assert "--stored-only" not in _make_book("PROFILE=smoke")  # the smoke book computes its results
    assert "--stored-only" not in _make_book("STORED_ONLY=")
    assert f"--profile {PUBLISHED_PROFILE}" in subprocess.run(
        ["make", "-n", "colab", f"COMMIT={COMMIT}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert PUBLISHED_PROFILE in book.BOOK_PROFILES


class EveryName(dict):
    """Glued values: 61.234 for every name."""

    def __contains__(self, name) -> bool:
        return True

    def __missing__(self, name) -> str:
        return "61.234"


def test_a_colab_notebook_is_the_chapter_after_one_cell():
    """The chapter's code unchanged but its parameters cell, whose defaults are the published page's;
    its text as the page reads: glued values, figure captions and links into the published book."""
    source = ROOT / "notebooks" / "06_classification.py"
    chapter = jupytext.read(source).cells
    glued = EveryName()
    nb = publish.colab_notebook(source, "https://github.com/o/r", COMMIT, {"profile": "cpu"}, glued,
                                publish.chapter_labels())
    first, cells = nb.cells[0], nb.cells[1:]
    assert '"https://github.com/o/r", "' + COMMIT + '"' in first.source and "checkout" in first.source
    at = next(i for i, c in enumerate(chapter) if "parameters" in c.metadata.get("tags", []))
    assert "profile: str = 'cpu'" in cells[at].source and len(cells) == len(chapter)
    assert [c.source for c in cells if c.cell_type == "code"] == [
        cells[at].source if i == at else c.source for i, c in enumerate(chapter) if c.cell_type == "code"]
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    assert "{glue" not in text and "{ref}" not in text and "(classification)=" not in text
    assert "**Figure.** Task scores on the 61.234 split" in text and "words averages 61.2," in text
    assert "[Findings: the paper's claims against this run](https://o.github.io/r/book/08_findings.html#findings)" in text
    with pytest.raises(InputError, match="full 40-digit hash"):
        publish.colab_notebook(source, "https://github.com/o/r", "main", {}, glued, {})
