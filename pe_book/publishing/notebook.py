"""What the book's notebooks call: their typed parameters, checked, and ``glue``.

Notebook parameters
-------------------
Papermill only *warns* about a parameter the notebook does not have, and never checks types. So
each notebook declares its parameters with a type and checks what it was given::

    # %%                                   first code cell
    from pe_book.publishing import notebook
    notebook.record_names(globals())       # the names that exist before the parameters cell

    # %% tags=["parameters"]
    seed: int = 0                          # one annotated literal per parameter
    variants: list[str] = ["ape-learned"]

    # %%
    params = notebook.check_notebook_parameters(globals())

Papermill injects ``name = value`` lines after the ``parameters`` cell. Any name that the
parameters cell did not declare (a new global, or a pre-existing one re-bound) is an unknown
parameter; any declared value whose type does not match its annotation is a wrong type. Both raise
:class:`ParameterError` (a ``ValueError``) naming the valid parameters. :func:`check_parameters` is
the same check on plain dicts, and :func:`declared_parameters` reads a notebook's declarations
without running it (:mod:`pe_book.publishing.book` checks a profile's parameters with both before any
notebook runs).

A list (or dict) parameter may be given as its JSON or YAML text, since papermill's ``-p`` passes
every value that is not a number, bool or None as a string: ``-p variants '["none", "rope"]'`` is
the same as ``-y 'variants: [none, rope]'``. :func:`with_defaults` writes a page's parameters into
its ``parameters`` cell as the defaults, so that a papermill rerun, which replaces the injected
cell, keeps every parameter it does not override.

Glue
----
Notebooks glue their numbers and figures with :func:`glue` (``myst_nb.glue`` that also works
without myst-nb, e.g. on Colab); a NaN is glued as the words :data:`NOT_RUN`. Where the environment
variable :data:`SHOW_FIGURES` is ``1`` (set by the first cell of a Colab notebook, which has no
myst-nb to place a glued figure in the text), a glued figure is also shown as the cell's output.

At import time this module needs only the standard library (and :mod:`pe_lib.errors`); jupytext,
IPython and myst-nb are imported by the functions that use them.
"""
from __future__ import annotations

import difflib
import os
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pe_lib.errors import InputError

#: The repository's root, its notebook sources and the folder of the executed chapters.
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = "notebooks"
BOOK_DIR = "book"

_SNAPSHOT_KEY = "__pe_lib_names_before_parameters__"
# Names IPython rebinds on its own between cells: the input history (_i, _ii, _iii, _iN: strings
# of ``In``) and the output history (_, __, ___, _N: objects of ``Out``). Python adds the module's
# annotations when the parameters cell runs. Any other new or rebound name is a parameter.
_IPYTHON_INPUTS = re.compile(r"^(_i|_ii|_iii|_i\d+)$")
_IPYTHON_OUTPUTS = re.compile(r"^(_|__|___|_\d+)$")
_PYTHON_NAMES = ("__annotations__", "__annotate__")


class ParameterError(InputError):
    """An unknown or wrongly typed notebook parameter."""


def _type_name(annotation) -> str:
    if isinstance(annotation, type) and not isinstance(annotation, types.GenericAlias):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _matches(value, annotation) -> bool:
    """Whether ``value`` has the (simple) type ``annotation``: a class, ``None``, ``Any``,
    ``X | Y`` / ``Optional``, ``Literal[...]``, ``list[X]``, ``tuple[X, ...]``, ``tuple[X, Y]``,
    ``dict[K, V]``. ``bool`` is not an ``int`` here, and an ``int`` is accepted as a ``float``
    (papermill turns ``-p lr 1`` into an int)."""
    if annotation is Any or annotation is typing.Any:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin in (list, set, frozenset):
        return isinstance(value, origin) and all(_matches(v, args[0]) for v in value) if args else isinstance(value, origin)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(v, args[0]) for v in value)
        return not args or (len(args) == len(value) and all(_matches(v, a) for v, a in zip(value, args)))
    if origin is dict:
        if not isinstance(value, dict):
            return False
        return not args or all(_matches(k, args[0]) and _matches(v, args[1]) for k, v in value.items())
    if isinstance(annotation, type):
        if annotation is float:
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if annotation is int:
            return isinstance(value, int) and not isinstance(value, bool)
        return isinstance(value, annotation)
    raise ParameterError(f"unsupported parameter annotation {annotation!r}")


def check_parameters(given: Mapping[str, Any], declared: Mapping[str, Any]) -> dict[str, Any]:
    """Check parameter values against their declared types.

    ``given`` maps names to values (what papermill injected, or a profile's overrides);
    ``declared`` maps each valid parameter name to its type annotation (e.g. ``int``,
    ``list[str]``, ``str | None``). Raises :class:`ParameterError` (a ``ValueError``) for a name
    not in ``declared`` -- naming the valid ones -- or a value of the wrong type. Returns
    ``dict(given)``.
    """
    valid = ", ".join(sorted(declared)) or "(none)"
    unknown = [name for name in given if name not in declared]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, list(declared), n=1)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        noun = "parameter" if len(unknown) == 1 else "parameters"
        raise ParameterError(f"unknown {noun} {', '.join(hints)}; valid parameters: {valid}")
    for name, value in given.items():
        annotation = declared[name]
        if not _matches(value, annotation):
            hint = (f" (as text: -p {name} '[\"a\", \"b\"]' or -y '{name}: [a, b]')"
                    if isinstance(value, str) and _containers(annotation) else "")
            raise ParameterError(
                f"parameter {name!r} must be {_type_name(annotation)}{hint}, got "
                f"{type(value).__name__} {value!r}; valid parameters: {valid}"
            )
    return dict(given)


def record_names(namespace: dict) -> None:
    """Remember which names exist (and what they are bound to) before the ``parameters`` cell.
    Call it as the last statement of the cell before the ``parameters`` cell."""
    # keep the objects themselves: comparing ids of objects that may have been freed could
    # mistake a new object for an old one
    namespace[_SNAPSHOT_KEY] = {k: v for k, v in namespace.items() if k != _SNAPSHOT_KEY}


def _annotations(namespace: dict) -> dict[str, Any]:
    """The module-level annotations of an IPython namespace (``__annotations__``, or
    ``__annotate__`` under Python 3.14's deferred annotations)."""
    annotations = namespace.get("__annotations__")
    if annotations is None and callable(namespace.get("__annotate__")):
        annotations = namespace["__annotate__"](1)  # annotationlib.Format.VALUE
    return dict(annotations or {})


def check_notebook_parameters(namespace: dict) -> dict[str, Any]:
    """Check a notebook's parameters after papermill's injected cell; return them as a dict.

    Declared parameters are the annotated names (``seed: int = 0``) of the parameters cell. A
    name bound since :func:`record_names` (or re-bound to another object) that is not declared
    is an unknown parameter; every declared value must match its annotation. Re-running the
    notebook in the same kernel is fine (a re-bound declared name is not unknown).
    """
    _one_line_input_errors()
    before = namespace.get(_SNAPSHOT_KEY)
    if before is None:
        raise RuntimeError("call pe_book.publishing.notebook.record_names(globals()) in the cell before the "
                           "parameters cell")
    declared = _annotations(namespace)
    new = {
        name: value
        for name, value in namespace.items()
        if name not in declared and (name not in before or before[name] is not value)
        and not _bound_by_ipython(name, value, before)
    }
    if new:
        check_parameters(new, declared)  # raises: every undeclared new name is unknown
    missing = [name for name in declared if name not in namespace]
    if missing:
        raise ParameterError(f"parameter {missing[0]!r} is annotated but has no value in the parameters cell")
    for name, annotation in declared.items():
        namespace[name] = from_text(namespace[name], annotation)
    return check_parameters({name: namespace[name] for name in declared}, declared)


def _containers(annotation) -> bool:
    """Whether ``annotation`` is (or, as a union, admits) a list or dict type."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_containers(a) for a in typing.get_args(annotation))
    return (origin or annotation) in (list, dict)


def from_text(value, annotation):
    """``value`` read as JSON or YAML when it is a string given for a list (or dict) parameter that
    takes no string (papermill's ``-p variants '["none", "rope"]'``); any other value, or a text
    that does not read as the declared type, unchanged (the type check then names it)."""
    if not isinstance(value, str) or _matches(value, annotation) or not _containers(annotation):
        return value
    import yaml

    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    return parsed if _matches(parsed, annotation) else value


def _one_line_input_errors() -> None:
    """In an IPython kernel, show a bad parameter or input (:class:`~pe_lib.errors.InputError`,
    :class:`ParameterError` among them) as its one line, not as a traceback: the line is what
    papermill reports, and what a reader of a failed rerun sees in its notebook."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return

    def one_line(shell, etype, value, tb, tb_offset=None):
        stb = [f"{etype.__name__}: {value}"]
        shell._showtraceback(etype, value, stb)
        return stb

    shell.set_custom_exc((InputError,), one_line)


def _bound_by_ipython(name: str, value, before: dict) -> bool:
    """Whether IPython (or Python) could have bound ``name`` to ``value`` since
    :func:`record_names`: an input-history name holding one of ``In``'s strings, an output-history
    name holding one of ``Out``'s objects, or the module's annotations. ``-p In 1`` or
    ``-p __foo__ 1`` is none of these, so it is an unknown parameter."""
    if name in _PYTHON_NAMES or name == _SNAPSHOT_KEY:
        return True
    if _IPYTHON_INPUTS.match(name):
        return isinstance(value, str) and any(value == text for text in before.get("In", ()))
    if _IPYTHON_OUTPUTS.match(name):
        return any(value is output for output in dict(before.get("Out", {})).values())
    return False


def declared_parameters(notebook) -> dict[str, Any]:
    """Name -> type annotation of the ``parameters`` cell of a notebook (a NotebookNode or a
    path readable by jupytext), read without running it. Annotations are evaluated with the
    builtins only (``int``, ``list[str]``, ``str | None``, ...)."""
    import ast

    if not hasattr(notebook, "cells"):
        import jupytext

        notebook = jupytext.read(notebook)
    cells = [c for c in notebook.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not cells:
        raise ParameterError("notebook has no cell tagged 'parameters'")
    env = {"Any": Any, "Literal": typing.Literal, "Optional": typing.Optional}
    declared = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared[node.target.id] = eval(compile(ast.Expression(node.annotation), "<parameters>", "eval"), env)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            raise ParameterError(f"parameters cell line {node.lineno}: declare each parameter with a type, e.g. 'seed: int = 0'")
    return declared


def with_defaults(source: str, values: Mapping[str, Any]) -> str:
    """The source of a ``parameters`` cell with ``values`` (name -> a Python literal value) as the
    defaults of those declared parameters, everything else (annotations, comments) as it was.
    Raises :class:`ParameterError` for a name the cell does not declare."""
    import ast

    nodes = {node.target.id: node.value for node in ast.parse(source).body
             if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None}
    unknown = [name for name in values if name not in nodes]
    if unknown:
        raise ParameterError(f"no parameter {unknown[0]!r} with a default; valid parameters: {', '.join(sorted(nodes)) or '(none)'}")
    lines = source.encode("utf-8").splitlines(keepends=True)  # ast's columns count bytes
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    text = source.encode("utf-8")
    for name in sorted(values, key=lambda n: nodes[n].lineno, reverse=True):  # from the end: offsets stay valid
        node = nodes[name]
        begin = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        text = text[:begin] + repr(values[name]).encode("utf-8") + text[end:]
    return text.decode("utf-8")


class _Text(str):
    """A string whose text/plain representation is itself (no quotes)."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


#: The environment variable that makes :func:`glue` show a glued figure as its cell's output too
#: ("1"; the Colab notebooks' first cell sets it: :func:`pe_book.publishing.publish.colab_cell`).
SHOW_FIGURES = "PE_BOOK_SHOW_FIGURES"

#: What a glued NaN reads as: a chapter's number of a variant (or task) that this run left out. A
#: value that is undefined for another reason is glued as words by its chapter, never as NaN.
NOT_RUN = "not run"


def glue(name: str, value: Any, display: bool = False) -> None:
    """``myst_nb.glue`` for the book's notebooks: hidden by default, numpy scalars become Python
    numbers (so that ``{glue:text}`name:.2f``` can format them), a NaN becomes the words
    :data:`NOT_RUN` (shown as they are whatever the format, see :mod:`pe_book.publishing.sphinx_glue`), strings
    are shown without quotes, and it works where myst-nb is not installed (e.g. Colab), writing the
    same output. Under :data:`SHOW_FIGURES`, a figure is also displayed."""
    display = display or (os.environ.get(SHOW_FIGURES) == "1" and hasattr(value, "savefig"))
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, float) and value != value:  # NaN
        value = NOT_RUN
    if isinstance(value, str):
        value = _Text(value)  # {glue:text} shows text/plain: without quotes
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        from IPython.core.formatters import format_display_data
        from IPython.display import display as ipy_display

        bundle, metadata = format_display_data(value)
        prefix = "" if display else "application/papermill.record/"
        metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
        ipy_display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
    else:
        myst_glue(name, value, display=display)


def glue_all(values: Mapping[str, Any]) -> None:
    """:func:`glue` every ``name: value`` of ``values`` (a chapter result's ``cited`` numbers)."""
    for name, value in values.items():
        glue(name, value)


# ----------------------------------------------------------------------------- the book's notebooks


def notebook_paths(root: Path = ROOT) -> list[Path]:
    """The chapters' notebook sources (``notebooks/NN_topic.py``), in order."""
    return sorted((root / NOTEBOOKS_DIR).glob("[0-9]*.py"))


def glued_values(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """Every value glued by the executed chapters (``book/NN_topic.ipynb``): chapter -> name ->
    its text (figures by their MIME types only), as the prose shows them."""
    import nbformat

    found = {}
    for path in sorted((root / BOOK_DIR).glob("[0-9]*.ipynb")):
        values = {}
        for cell in nbformat.read(path, as_version=4).cells:
            for output in cell.get("outputs", []):
                record = output.get("metadata", {}).get("scrapbook")
                if record:
                    data = {k.removeprefix(record["mime_prefix"]): v for k, v in output.get("data", {}).items()}
                    values[record["name"]] = data.get("text/plain", "") if "image/png" not in data else "<figure>"
        found[path.stem] = values
    return found

