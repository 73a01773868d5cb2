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
