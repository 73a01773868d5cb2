"""Finding the ``{glue}`` references of a chapter's prose and the names its notebook glues itself;
``chapters/test_compute.py`` resolves every reference against these and the chapter result's
``cited`` numbers, so a renamed or removed value breaks a test, not the book."""
import re
from pathlib import Path

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


def test_the_checker_finds_a_missing_glue():
    source = 'notebook.glue("a", 1)\nnotebook.glue(f"rank_{v}", 2)\n# {glue:text}`a:.2f` {glue:text}`rank_rope` {glue:figure} fig_x\n'
    assert references(source) == {"a", "rank_rope", "fig_x"}
    patterns = glued_patterns(source)
    assert [n for n in sorted(references(source)) if not any(p.match(n) for p in patterns)] == ["fig_x"]
