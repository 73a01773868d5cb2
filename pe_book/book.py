"""The book: execute ``notebooks/*.py`` with papermill, then build the Jupyter Book.

``pe-book book [--profile P] [--only NOTEBOOK] [--no-html]``

1. Each ``notebooks/NN_topic.py`` (jupytext py:percent) is converted in memory and executed by
   papermill with the parameters of the profile (:data:`BOOK_PROFILES`) into
   ``book/NN_topic.ipynb`` (written to a temporary file, moved into place only on success; a
   failed run is kept in ``book/_build/failed/`` and the build stops with one line naming the
   notebook and the cell).
2. ``jupyter-book build . --path-output book --warningiserror`` renders ``book/_build/html``
   (``_config.yml``, completed with the repository's URL by :func:`pe_book.publish.book_config`,
   and ``_toc.yml`` at the repository root; notebooks are not re-executed).

Notebook parameters
-------------------
Papermill only *warns* about a parameter the notebook does not have, and never checks types. So
each notebook declares its parameters with a type and checks what it was given::

    # %%                                   first code cell
    from pe_book import book
    book.record_names(globals())           # the names that exist before the parameters cell

    # %% tags=["parameters"]
    seed: int = 0                          # one annotated literal per parameter
    variants: list[str] = ["ape-learned"]

    # %%
    params = book.check_notebook_parameters(globals())

Papermill injects ``name = value`` lines after the ``parameters`` cell. Any name that the
parameters cell did not declare (a new global, or a pre-existing one re-bound) is an unknown
parameter; any declared value whose type does not match its annotation is a wrong type. Both raise
:class:`ParameterError` (a ``ValueError``) naming the valid parameters. :func:`check_parameters` is
the same check on plain dicts.

Notebooks also glue their numbers and figures with :func:`glue` (``myst_nb.glue`` that also
works without myst-nb, e.g. on Colab). Every build writes the glued values of all chapters to
``book/_build/glued.json`` (:func:`glued_values`); :func:`compare_glued` lists what differs
between two builds, e.g. before and after a refactor that should change no number. At import time this module needs only the standard
library; jupytext, papermill, nbformat, tqdm and PyYAML are imported by the functions that use
them.
"""
from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import sys
import time
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pe_lib.errors import InputError, PeLibError
from pe_lib.io import atomic_write_text


#: The published book's profile: ``pe-book book`` builds it by default (``make book`` from the
#: committed results only), ``make colab`` writes its parameters into the Colab notebooks.
DEFAULT_PROFILE = "cpu"

#: Per-profile parameter overrides, per notebook (file stem); the chapters themselves are the
#: notebooks/ folder, each listed in _toc.yml (checked by every build). A notebook's own defaults are the
#: smoke profile's values, so ``papermill book/X.ipynb out.ipynb -p seed 1`` reruns a smoke-built
#: chapter with only ``seed`` changed (papermill replaces the injected cell, so overrides of
#: another profile must be passed again).
BOOK_PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "smoke": {},  # every notebook's own defaults are the smoke profile's
    "cpu": {
        "00_intro": {"profile": "cpu"},
        "01_properties": {
            "profile": "cpu",
            "hidden_size": 768,
            "num_heads": 12,
            "num_layers": 1,
            "length": 128,
            "n_words": 50,
        },
        "02_sinusoid": {"profile": "cpu", "max_offset": 256, "n_bases": 61},
        "03_pretraining": {"profile": "cpu"},
        "04_dot_products": {"profile": "cpu"},
        "05_probing": {"profile": "cpu"},
        "06_classification": {"profile": "cpu"},
        "07_span_prediction": {"profile": "cpu"},
        "08_findings": {"profile": "cpu"},
        "09_performance": {},
        "10_real_models": {"profile": "cpu"},
        "11_length_extrapolation": {"profile": "cpu"},
        "12_cls_untying": {"profile": "cpu"},
        "13_scale": {"profile": "scale"},
    },
}

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = "notebooks"
BOOK_DIR = "book"
KERNEL_NAME = "python3"
_SNAPSHOT_KEY = "__pe_lib_names_before_parameters__"
# Names IPython rebinds on its own between cells: the input history (_i, _ii, _iii, _iN: strings
# of ``In``) and the output history (_, __, ___, _N: objects of ``Out``). Python adds the module's
# annotations when the parameters cell runs. Any other new or rebound name is a parameter.
_IPYTHON_INPUTS = re.compile(r"^(_i|_ii|_iii|_i\d+)$")
_IPYTHON_OUTPUTS = re.compile(r"^(_|__|___|_\d+)$")
_PYTHON_NAMES = ("__annotations__", "__annotate__")


# ----------------------------------------------------------------------------- parameters


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
            raise ParameterError(
                f"parameter {name!r} must be {_type_name(annotation)}, got "
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
        raise RuntimeError("call pe_book.book.record_names(globals()) in the cell before the parameters cell")
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
    return check_parameters({name: namespace[name] for name in declared}, declared)


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


class _Text(str):
    """A string whose text/plain representation is itself (no quotes)."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


#: What a glued NaN reads as: a chapter's number of a variant (or task) that this run left out. A
#: value that is undefined for another reason is glued as words by its chapter, never as NaN.
NOT_RUN = "not run"


def glue(name: str, value: Any, display: bool = False) -> None:
    """``myst_nb.glue`` for the book's notebooks: hidden by default, numpy scalars become Python
    numbers (so that ``{glue:text}`name:.2f``` can format them), a NaN becomes the words
    :data:`NOT_RUN` (shown as they are whatever the format, see :mod:`pe_book.sphinx_glue`), strings
    are shown without quotes, and it works where myst-nb is not installed (e.g. Colab), writing the
    same output."""
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


# ----------------------------------------------------------------------------- building


class BookError(PeLibError, RuntimeError):
    """A one-line reason why the book could not be built."""


def notebook_paths(root: Path = ROOT) -> list[Path]:
    return sorted((root / NOTEBOOKS_DIR).glob("[0-9]*.py"))


def toc_files(root: Path = ROOT) -> list[str]:
    """Every ``file:`` entry of ``_toc.yml`` (the root included), as written there."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf8"))
    found = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                found.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk({k: v for k, v in toc.items() if k != "root"})
    return found


def _check_layout(root: Path, names: list[str]) -> None:
    entries = {Path(f).with_suffix("").as_posix() for f in toc_files(root)}
    absent = [n for n in names if f"{BOOK_DIR}/{n}" not in entries]
    if absent:
        raise BookError(f"notebooks/{absent[0]}.py is not in _toc.yml (add '- file: {BOOK_DIR}/{absent[0]}')")


def _select(paths: list[Path], only: str | None) -> list[Path]:
    if only is None:
        return paths
    stem = Path(only).name.removesuffix(".py").removesuffix(".ipynb")
    chosen = [p for p in paths if p.stem == stem]
    if not chosen:
        raise BookError(f"no notebook {only!r}; valid: {', '.join(p.stem for p in paths)}")
    return chosen


def _failure_line(name: str, src: str, source_nb, injected: bool, failed: Path | None, error) -> str:
    """One line: notebook, failing cell (1-based, counted as in the .py file), exception."""
    index = error.cell_index  # in the executed notebook, which has the injected cell
    params_at = next((i for i, c in enumerate(source_nb.cells) if "parameters" in c.metadata.get("tags", [])), None)
    if injected and params_at is not None and index > params_at:
        if index == params_at + 1:
            where = "the injected-parameters cell"
        else:
            where = f"cell {index} of {src}"  # index - 1 (injected cell) + 1 (1-based)
    else:
        where = f"cell {index + 1} of {src}"
    lines = (error.evalue or "").strip().splitlines()
    detail = f"{error.ename}: {lines[0]}" if lines else error.ename
    kept = ""
    if failed is not None:
        kept = f" [executed notebook: {failed.relative_to(ROOT) if failed.is_relative_to(ROOT) else failed}]"
    return f"{name}: {where} failed: {detail}{kept}"


def execute_notebook(path: Path, parameters: dict[str, Any], root: Path = ROOT) -> Path:
    """Run ``notebooks/X.py`` with papermill into ``book/X.ipynb``; return that path.

    Raises :class:`BookError` with one line naming the notebook and the failing cell.
    """
    import jupytext
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    name = path.stem
    src = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    nb = jupytext.read(path)
    try:
        check_parameters(parameters, declared_parameters(nb))
    except ParameterError as exc:
        raise BookError(f"{name}: {exc}") from None
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"}
    book = root / BOOK_DIR
    book.mkdir(exist_ok=True)
    target = book / f"{name}.ipynb"
    tmp = book / f".tmp-{name}-{os.getpid()}.ipynb"
    try:
        try:
            executed = papermill.execute_notebook(
                nb,
                str(tmp),
                parameters=parameters,
                kernel_name=KERNEL_NAME,
                cwd=str(root),
                progress_bar=False,
                log_output=False,
                # ipykernel >= 7 warns on every start that its local TCP sockets are unencrypted
                extra_arguments=["--IPKernelApp.log_level=ERROR"],
            )
        except PapermillExecutionError as exc:
            failed = book / "_build" / "failed" / f"{name}.ipynb"
            failed.parent.mkdir(parents=True, exist_ok=True)
            if tmp.exists():
                os.replace(tmp, failed)
            kept = failed if failed.exists() else None
            raise BookError(_failure_line(name, src, nb, bool(parameters), kept, exc)) from None
        _hide_injected(executed)
        executed.metadata.papermill["input_path"] = src
        executed.metadata.papermill["output_path"] = target.relative_to(root).as_posix()
        nbformat.write(executed, tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


def _hide_injected(nb) -> None:
    """A page whose ``parameters`` cell is removed from the HTML (``remove-cell``, the intro) loses
    papermill's injected-parameters cell too; both stay in the notebook for a rerun."""
    tags = [set(c.metadata.get("tags", [])) for c in nb.cells]
    if any({"parameters", "remove-cell"} <= t for t in tags):
        for cell, cell_tags in zip(nb.cells, tags):
            if "injected-parameters" in cell_tags and "remove-cell" not in cell_tags:
                cell.metadata["tags"] = [*cell.metadata.get("tags", []), "remove-cell"]


def build_html(root: Path = ROOT) -> Path:
    """``jupyter-book build`` with warnings as errors; return ``book/_build/html/index.html``."""
    import subprocess

    import yaml

    from pe_book.publish import book_config

    config = root / BOOK_DIR / "_build" / "_config.yml"  # _config.yml with the repository's URL (pyproject.toml)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump(book_config(root), sort_keys=False))
    exe = Path(sys.executable).with_name("jupyter-book")
    command = [str(exe) if exe.exists() else "jupyter-book", "build", ".", "--path-output", BOOK_DIR,
               "--config", str(config), "--warningiserror", "--keep-going"]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if result.returncode:
        log = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr).strip().splitlines()
        problems = [line for line in log if re.search(r"WARNING|ERROR|Error|error:", line)]
        print("\n".join((problems or log)[-30:]), file=sys.stderr)
        raise BookError(f"jupyter-book build failed (exit {result.returncode}); see the lines above")
    return root / BOOK_DIR / "_build" / "html" / "index.html"


def check_stored(profile: str, results: Path = ROOT / "results") -> None:
    """Refuse a profile whose planned results are not all in the store (``pe-book book --stored-only``)."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    planned = Runner(get_profile(profile), results, progress=False).plan()
    missing = [a for a in planned if not a.stored]
    if missing:
        raise BookError(f"{len(missing)} of the {len(planned)} planned results of profile {profile} are not stored "
                        f"(the first: {missing[0].stage} of {missing[0].variant}); run `pe-book run --profile {profile}`, "
                        "or build without --stored-only")


def ensure_results(profile: str, results: str = "results") -> None:
    """Compute whatever the artifact store lacks for ``profile`` (pretraining, analysis,
    fine-tuning), so that the notebooks only read and plot."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    timings = Runner(get_profile(profile), ROOT / results).run()
    print("results: " + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in timings.items()), file=sys.stderr)


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


def compare_glued(before: dict, after: dict) -> list[str]:
    """One line per glued value that differs, appeared or disappeared between two books
    (:func:`glued_values`); empty when a change altered no number the prose cites."""
    lines = []
    for chapter in sorted(set(before) | set(after)):
        a, b = before.get(chapter, {}), after.get(chapter, {})
        for name in sorted(set(a) | set(b)):
            if a.get(name) != b.get(name):
                lines.append(f"{chapter}: {name}: {a.get(name, '(absent)')!r} -> {b.get(name, '(absent)')!r}")
    return lines


def build(profile: str = DEFAULT_PROFILE, only: str | None = None, html: bool = True, root: Path = ROOT,
          compute: bool = True, stored_only: bool = False) -> Path | None:
    """Compute missing results (``compute``), execute the (selected) notebooks, then build the HTML;
    return the index page (or None). ``stored_only``: compute nothing, neither first nor in a
    notebook; a profile whose planned results are not all stored is refused before any notebook runs."""
    from tqdm.auto import tqdm

    if profile not in BOOK_PROFILES:
        raise BookError(f"unknown profile {profile!r}; valid: {', '.join(BOOK_PROFILES)}")
    overrides = BOOK_PROFILES[profile]
    paths = notebook_paths(root)
    names = [p.stem for p in paths]
    stray = [n for n in overrides if n not in names]
    if stray:
        raise BookError(f"BOOK_PROFILES[{profile!r}] names {stray[0]!r}, which is not in notebooks/; valid: {', '.join(names)}")
    _check_layout(root, names)
    selected = _select(paths, only)
    for path in selected:  # every parameter is checked before any notebook runs
        try:
            check_parameters(overrides.get(path.stem, {}), declared_parameters(path))
        except ParameterError as exc:
            raise BookError(f"{path.stem}: {exc}") from None
    if stored_only:
        check_stored(profile, root / "results")
    elif compute:
        ensure_results(profile)
    with _stored_only_kernels(stored_only):
        bar = tqdm(selected, desc=f"notebooks ({profile})", unit="nb", file=sys.stderr)
        for path in bar:
            bar.set_postfix_str(path.stem)
            start = time.perf_counter()
            out = execute_notebook(path, dict(overrides.get(path.stem, {})), root)
            tqdm.write(f"{path.stem}: {time.perf_counter() - start:.1f} s -> {out.relative_to(root)}", file=sys.stderr)
        bar.close()
    glued = root / BOOK_DIR / "_build" / "glued.json"  # compare two builds: compare_glued
    glued.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(glued, json.dumps(glued_values(root), indent=1, sort_keys=True))
    if not html:
        return None
    missing = [n for n in names if not (root / BOOK_DIR / f"{n}.ipynb").exists()]
    if missing:
        raise BookError(f"book/{missing[0]}.ipynb has not been executed yet; run 'pe-book book' without --only (or --only {missing[0]})")
    start = time.perf_counter()
    index = build_html(root)
    print(f"jupyter-book: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return index


@contextlib.contextmanager
def _stored_only_kernels(on: bool):
    """While ``on``, the notebooks' kernels (which inherit this environment) open runners that only
    read (:data:`pe_book.chapters.common.STORED_ONLY`)."""
    from pe_book.chapters.common import STORED_ONLY

    before = os.environ.get(STORED_ONLY)
    if on:
        os.environ[STORED_ONLY] = "1"
    try:
        yield
    finally:
        if on and before is None:
            del os.environ[STORED_ONLY]
        elif on:
            os.environ[STORED_ONLY] = before


# ----------------------------------------------------------------------------- CLI


def configure(parser) -> None:
    parser.add_argument("--profile", default=DEFAULT_PROFILE, choices=sorted(BOOK_PROFILES),
                        help=f"parameter values for the notebooks (default: {DEFAULT_PROFILE})")
    parser.add_argument("--only", metavar="NOTEBOOK", help="execute only this notebook (e.g. 01_properties)")
    parser.add_argument("--no-html", action="store_true", help="execute the notebooks but do not build the HTML")
    computing = parser.add_mutually_exclusive_group()
    computing.add_argument("--no-compute", action="store_true",
                           help="do not compute missing results first (notebooks then compute what they need)")
    computing.add_argument("--stored-only", action="store_true",
                           help="compute nothing: refuse a profile whose results are not all stored, and stop a "
                                "notebook that asks for a missing one")


def run(args) -> int:
    start = time.perf_counter()
    try:
        index = build(args.profile, args.only, html=not args.no_html, compute=not args.no_compute,
                      stored_only=args.stored_only)
    except BookError as exc:
        print(f"pe-book book: {exc}", file=sys.stderr)
        return 1
    total = time.perf_counter() - start
    if index is not None:
        print(f"book: {index.relative_to(ROOT) if index.is_relative_to(ROOT) else index} ({total:.1f} s in all)")
    else:
        print(f"notebooks executed ({total:.1f} s in all)")
    return 0
