"""The project's set-up files agree with each other, and its study records still import."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pins(text: str) -> dict[str, str]:
    return {m[1].lower(): m[2] for m in re.finditer(r"^[\s-]*([A-Za-z0-9_.\-]+)==([^\s#]+)", text, re.M)}


def test_environment_yml_pins_the_same_versions_as_the_lock_file():
    lock = pins((ROOT / "requirements.lock").read_text())
    conda = pins((ROOT / "environment.yml").read_text())
    assert lock and lock == conda


def test_torch_is_pinned_to_the_local_cpu_wheel():
    assert pins((ROOT / "requirements.lock").read_text())["torch"] == "2.13.0"


def test_the_license_file_is_the_license_pyproject_declares():
    declared = re.search(r'^license = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    assert declared == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License\n")


def test_readme_quick_start_has_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"^make (\w+)$", quick_start, re.M) == ["book", "test"]


@pytest.mark.parametrize("script", sorted((ROOT / "studies").glob("*/run.py")), ids=lambda p: p.parent.name)
def test_the_study_records_import_names_that_exist(script):
    """A study's script stays runnable as the code moves: every ``from pe_lib... / pe_book... import``
    names a module and attributes that exist."""
    import ast
    import importlib

    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("pe_lib", "pe_book"):
            module = importlib.import_module(node.module)
            missing = [a.name for a in node.names if not hasattr(module, a.name)]
            assert not missing, f"{script}: {node.module} has no {missing}"


#: Where a repository path may be named: the docs, the chapters' notebooks and the two packages
#: (their docstrings and comments; the book's generated files under book/ are not checked).
NAMING_FILES = ("README.md", "book/*.md", "studies/**/*.md", "notebooks/*.py", "pe_lib/**/*.py", "pe_book/**/*.py")
#: A path as the docs write one: a top-level folder of the repository, then at least one more name.
REPOSITORY_PATH = re.compile(r"(?<![\w./-])((?:pe_lib|pe_book|notebooks|results|studies|scripts|tests|\.ci|\.github)"
                             r"/[\w./+-]*[\w+-])")
#: Words that look like paths and are not: "fresh results/work folders" (pe_book/bench/pipeline_speed.py) names two folders.
NOT_PATHS = {"results/work"}


def missing_paths(text: str) -> list[str]:
    """The repository paths that ``text`` names and that do not exist. A placeholder stands for any
    name: ``notebooks/NN_topic.py`` for every chapter's notebook, ``notebooks/X.py`` for any file."""
    missing = []
    for path in dict.fromkeys(m[1] for m in REPOSITORY_PATH.finditer(text)):
        pattern = re.sub(r"(?<=/)X(?=\.)", "*", path.replace("NN_topic", "[0-9][0-9]_*"))
        if path not in NOT_PATHS and not (ROOT / path).exists() and not any(ROOT.glob(pattern)):
            missing.append(path)
    return missing


def test_the_path_check_finds_a_path_that_does_not_exist():
    text = "see `pe_lib/training/pretrain.py`, `notebooks/NN_topic.py`, .ci/run and `pe_lib/no_such_module.py`"
    assert missing_paths(text) == ["pe_lib/no_such_module.py"]
    assert missing_paths("`studies/verify/`, tests/training/, `results/<profile>/`") == []


@pytest.mark.parametrize("where", NAMING_FILES)
def test_every_path_the_docs_and_code_name_exists(where):
    """A path named in the README, the docs, a notebook or a docstring or comment of the packages
    exists in the repository, so that a moved or renamed file leaves no stale pointer."""
    files = sorted(ROOT.glob(where))
    assert files, where
    stale = {str(f.relative_to(ROOT)): missing for f in files if (missing := missing_paths(f.read_text()))}
    assert not stale, f"paths that do not exist: {stale}"
