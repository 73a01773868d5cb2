"""The flow of the package: text -> data -> models -> training -> experiments -> verdicts ->
chapters -> publishing (the notebooks' calls, the book, its checks, Colab, the README) -> command
line. No module imports one above it (function-level imports included), so the library
stands apart from the book's application; a module this map does not place fails the test until it
is placed. Nor do two modules import each other, directly or through others (an import circle),
within a layer or across it. The verdicts only read plain tables: nothing they import, directly or
through others, is the runner, a chapter or a command. And no chapter imports another: what two
chapters share lives in a chapter-neutral module (:data:`SHARED_CHAPTER_MODULES`)."""
import ast
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pe_lib", "pe_book")  # the library, then the reproduction built on it
LAYERS = (
    ("base", {"pe_lib.errors", "pe_lib.io", "pe_lib.__main__"}),
    ("data", {"pe_lib.data"}),
    ("models", {"pe_lib", "pe_lib.positions", "pe_lib.config", "pe_lib.model", "pe_lib.sinusoid", "pe_lib.hf_import",
                "pe_lib.properties", "pe_lib.probing", "pe_lib.geometry"}),
    ("training", {"pe_lib.training", "pe_lib.extrapolation", "pe_lib.pretrained_pes"}),
    ("experiments", {"pe_book.experiments"}),
    ("verdicts", {"pe_book.verdicts"}),
    ("chapters", {"pe_book.tables", "pe_book.plots", "pe_book.plateau", "pe_book.design", "pe_book.chapters",
                  "pe_book.bench", "pe_book.results_data"}),
    ("publishing", {"pe_book.publishing"}),
    ("command line", {"pe_book", "pe_book.commands", "pe_book.cli", "pe_book.__main__"}),
)
#: What the verdicts never import, directly or through others: they compute nothing and present nothing.
NOT_BELOW_VERDICTS = ("pe_book.experiments.runner", "pe_book.chapters", "pe_book.commands")
#: The modules of ``pe_book.chapters`` that are no chapter: what several chapters share.
SHARED_CHAPTER_MODULES = {"pe_book.chapters", "pe_book.chapters.common", "pe_book.chapters.escapes",
                          "pe_book.chapters.paper_figure", "pe_book.chapters.paper_verdicts",
                          "pe_book.chapters.run_scale"}
#: Modules that are part of a chapter (module -> its chapter's main module), which they may import.
CHAPTER_PARTS = {"pe_book.chapters.scale_text": "pe_book.chapters.scale"}


def layer(module: str) -> int:
    """The index of the layer of ``module`` (its own entry or its package's, the longest match;
    a package's own name stands only for its ``__init__``)."""
    matches = [(len(prefix), i) for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
               if module == prefix or (prefix not in PACKAGES and module.startswith(prefix + "."))]
    assert matches, f"{module} is in no layer of tests/test_layers.py"
    return max(matches)[1]


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from pe_book import tables`` imports the module pe_book.tables, not the package
            submodules = [f"{node.module}.{a.name}" for a in node.names if is_module(f"{node.module}.{a.name}")]
            found.update(submodules or [node.module])
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.split(".")[0] in PACKAGES}


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module of the packages -> the modules of the packages it imports (function-level imports included)."""
    paths = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
    return {module_name(path): imports(path) - {module_name(path)} for path in paths}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle of ``graph``, once: for each module, the shortest path of imports that
    leads from it back to it (``[a, b, a]``), unless a circle of the same modules was found first."""
    found, seen = [], set()
    for start in sorted(graph):
        before = {}  # module -> the module that imports it on a shortest path from start
        queue = deque([start])
        while queue and start not in before:
            module = queue.popleft()
            for other in sorted(graph.get(module, ())):
                if other not in before:
                    before[other] = module
                    queue.append(other)
        if start in before:
            circle, module = [start], before[start]
            while module != start:
                circle.append(module)
                module = before[module]
            circle = [start, *reversed(circle[1:]), start]
            if frozenset(circle) not in seen:
                seen.add(frozenset(circle))
                found.append(circle)
    return found


def test_no_module_imports_a_layer_above_its_own():
    upward = [f"{me} ({LAYERS[layer(me)][0]}) imports {other} ({LAYERS[layer(other)][0]})"
              for me, imported in import_graph().items() for other in sorted(imported) if layer(other) > layer(me)]
    assert not upward, "\n".join(upward)


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module that ``start`` imports, directly or through others."""
    found, todo = set(), [start]
    while todo:
        for other in graph.get(todo.pop(), ()):
            if other not in found:
                found.add(other)
                todo.append(other)
    return found


def is_under(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_verdicts_import_no_runner_chapter_or_command():
    graph = import_graph()
    wrong = [f"{me} imports {other}" for me in graph if is_under(me, ["pe_book.verdicts"])
             for other in sorted(reachable(graph, me)) if is_under(other, NOT_BELOW_VERDICTS)]
    assert not wrong, "\n".join(wrong)


def chapter_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a chapter module by another chapter's module (shared modules and a chapter's
    own parts aside)."""
    return [f"{me} imports {other}" for me, imported in graph.items()
            if is_under(me, ["pe_book.chapters"]) and me not in SHARED_CHAPTER_MODULES
            for other in sorted(imported) if is_under(other, ["pe_book.chapters"])
            and other not in SHARED_CHAPTER_MODULES and CHAPTER_PARTS.get(me) != other]


def test_no_chapter_imports_another():
    wrong = chapter_imports(import_graph())
    assert not wrong, "\n".join(wrong)


def test_the_chapter_check_sees_a_chapter_importing_another():
    graph = {"pe_book.chapters.intro": {"pe_book.chapters.findings", "pe_book.chapters.common"},
             "pe_book.chapters.scale_text": {"pe_book.chapters.scale"}, "pe_book.chapters.common": {"pe_book.chapters.x"}}
    assert chapter_imports(graph) == ["pe_book.chapters.intro imports pe_book.chapters.findings"]
    assert reachable({"a": {"b"}, "b": {"c"}, "c": {"a"}}, "a") == {"a", "b", "c"}


def test_no_modules_import_each_other():
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(circle) for circle in found)


def test_the_check_sees_function_level_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from pe_book.tables import summarise\n    import pe_book.publishing.book\n")
    assert imports(source) == {"pe_book.tables", "pe_book.publishing.book"}
    assert layer("pe_lib.data.tasks") < layer("pe_lib.training.pretrain") < layer("pe_book.chapters.common")
    assert layer("pe_book.chapters.findings") < layer("pe_book.publishing.headline") < layer("pe_book.commands.publish")
    with pytest.raises(AssertionError, match="pe_lib.newcomer is in no layer"):
        layer("pe_lib.newcomer")


def test_the_circle_check_finds_each_circle_once():
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"b"}, "e": {"a"}}
    assert circles(graph) == [["a", "b", "c", "a"], ["b", "d", "b"]]
    assert circles({"a": {"b"}, "b": set()}) == []
