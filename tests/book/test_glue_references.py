"""Every ``{glue}`` reference in a chapter's prose names a value the chapter glues, checked
without executing or building anything: a renamed or removed glue breaks this test, not the book."""
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.py"))
#: ``{glue}`name```, ``{glue:text}`name:.2f```, ``{glue:figure} name``, ``{glue:md}`name```
REFERENCE = re.compile(r"\{glue(?::\w+)?\}\s*`([A-Za-z_][\w]*)|\{glue:figure\}\s+([A-Za-z_][\w]*)")
#: ``glue("name", ...)`` or ``glue(f"name_{x}", ...)`` (an f-string is a pattern: each {...} any name part)
GLUED = re.compile(r"\bglue\(\s*(f?)\"([^\"]+)\"")


def glued_patterns(source: str) -> list[re.Pattern]:
    patterns = []
    for fstring, name in GLUED.findall(source):
        parts = re.split(r"\{[^}]*\}", name) if fstring else [name]
        patterns.append(re.compile("[A-Za-z0-9_]+".join(map(re.escape, parts)) + r"\Z"))
    return patterns


def references(source: str) -> set[str]:
    return {a or b for a, b in REFERENCE.findall(source)}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glue_reference_is_glued(path):
    source = path.read_text()
    patterns = glued_patterns(source)
    missing = sorted(name for name in references(source) if not any(p.match(name) for p in patterns))
    assert not missing, f"{path.name} refers to values it never glues: {missing}"


def test_the_checker_finds_a_missing_glue():
    source = 'book.glue("a", 1)\nbook.glue(f"rank_{v}", 2)\n# {glue:text}`a:.2f` {glue:text}`rank_rope` {glue:figure} fig_x\n'
    assert references(source) == {"a", "rank_rope", "fig_x"}
    patterns = glued_patterns(source)
    assert [n for n in sorted(references(source)) if not any(p.match(n) for p in patterns)] == ["fig_x"]
