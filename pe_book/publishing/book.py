"""The book: execute ``notebooks/*.py`` with papermill, then build the Jupyter Book
(``pe-book book``, :mod:`pe_book.commands.book`).

1. Each ``notebooks/NN_topic.py`` (jupytext py:percent) is converted in memory and executed by
   papermill with the parameters of the profile (:data:`BOOK_PROFILES`, checked against each
   notebook's declared parameters first: :mod:`pe_book.publishing.notebook`) into ``book/NN_topic.ipynb``
   (written to a temporary file, moved into place only on success; a failed run is kept in
   ``book/_build/failed/`` and the build stops with one line naming the notebook and the cell).
2. ``jupyter-book build . --path-output book --warningiserror`` renders ``book/_build/html``
   (``_config.yml``, completed with the repository's URL by :func:`pe_book.publishing.publish.book_config`,
   and ``_toc.yml`` at the repository root; notebooks are not re-executed).

Every build writes the glued values of all chapters to ``book/_build/glued.json``
(:func:`glued_values`); :func:`compare_glued` lists what differs between two builds, e.g. before
and after a refactor that should change no number. At import time this module needs only the
standard library; jupytext, papermill, nbformat, tqdm and PyYAML are imported by the functions that
use them.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from pe_book.publishing.notebook import (BOOK_DIR, ROOT, ParameterError, check_parameters, declared_parameters,
                              glued_values, notebook_paths, with_defaults)
from pe_lib.errors import DiskFullError, PeLibError
from pe_lib.io import atomic_write_text, explain_disk_full, remove_dead_temporaries

#: Per-profile parameter overrides, per notebook (file stem); the chapters themselves are the
#: notebooks/ folder, each listed in _toc.yml (checked by every build). A notebook's own defaults are the
#: smoke profile's values; a build writes a profile's values into the executed chapter's parameters
#: cell as its defaults (:func:`execute_notebook`), so ``papermill book/X.ipynb out.ipynb -p seed 1``
#: reruns a built chapter with only ``seed`` changed (papermill replaces the injected cell only).
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
        "03_pretraining": {"profile": "cpu", "trend_profile": "trend"},
        "04_dot_products": {"profile": "cpu"},
        "05_probing": {"profile": "cpu"},
        "06_classification": {"profile": "cpu"},
        "07_span_prediction": {"profile": "cpu"},
        "08_findings": {"profile": "cpu", "trend_profile": "trend", "trend_reference": "cpu"},
        "09_performance": {},
        "10_real_models": {"profile": "cpu"},
        "11_length_extrapolation": {"profile": "cpu"},
        "12_cls_untying": {"profile": "cpu"},
        "13_scale": {"profile": "scale", "trend_profile": "trend", "trend_reference": "cpu"},
    },
}

KERNEL_NAME = "python3"
#: The built profile's score table (``pe-book export``'s CSV), written beside the book by every
#: HTML build; the findings chapter links it for download (``{download}`` relative to ``book/``).
SCORE_TABLE = f"{BOOK_DIR}/_static/scores.csv"


# ----------------------------------------------------------------------------- building


class BookError(PeLibError, RuntimeError):
    """A one-line reason why the book could not be built."""


def chapter_parameters(profile: str, root: Path = ROOT) -> dict[Path, dict[str, Any]]:
    """Each notebook of ``root/notebooks`` (:func:`notebook_paths`) with its parameters under
    ``profile`` (:data:`BOOK_PROFILES`; a notebook it does not name has none). Refuses a profile
    that is not there, and one that names a notebook that is not there."""
    if profile not in BOOK_PROFILES:
        raise BookError(f"unknown profile {profile!r}; valid: {', '.join(BOOK_PROFILES)}")
    overrides = BOOK_PROFILES[profile]
    paths = notebook_paths(root)
    names = [p.stem for p in paths]
    stray = [n for n in overrides if n not in names]
    if stray:
        raise BookError(f"BOOK_PROFILES[{profile!r}] names {stray[0]!r}, which is not in notebooks/; valid: {', '.join(names)}")
    return {path: dict(overrides.get(path.stem, {})) for path in paths}


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

    Raises :class:`BookError` with one line naming the notebook and the failing cell, and a
    :class:`~pe_lib.errors.DiskFullError` naming the notebook when the disk is full. What a killed
    build of the same notebook left (``book/.tmp-X-<pid>.ipynb`` of a process that is gone) is
    deleted first. The ``parameters`` are the defaults of the executed notebook's
    parameters cell (:func:`_with_published_defaults`).
    """
    import jupytext
    import nbformat

    name = path.stem
    nb = jupytext.read(path)
    try:
        check_parameters(parameters, declared_parameters(nb))
    except ParameterError as exc:
        raise BookError(f"{name}: {exc}") from None
    _with_published_defaults(nb, parameters)
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"}
    book = root / BOOK_DIR
    book.mkdir(exist_ok=True)
    target = book / f"{name}.ipynb"
    remove_dead_temporaries(book, rf"\.tmp-{re.escape(name)}-(?P<pid>\d+)\.ipynb")
    tmp = book / f".tmp-{name}-{os.getpid()}.ipynb"
    try:
        with explain_disk_full(f"executed notebook {target}"):
            executed = _papermill(path, nb, tmp, parameters, root)
            _hide_injected(executed)
            executed.metadata.papermill["input_path"] = _shown(path, root)
            executed.metadata.papermill["output_path"] = target.relative_to(root).as_posix()
            nbformat.write(executed, tmp)
            os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _with_published_defaults(nb, parameters: dict[str, Any]) -> None:
    """Write a chapter's ``parameters`` into its ``parameters`` cell as the defaults
    (:func:`pe_book.publishing.notebook.with_defaults`): a papermill rerun replaces the injected cell, and keeps
    the page's profile, trend runs and every other value it does not override."""
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = with_defaults(cell.source, parameters)


def _papermill(path: Path, nb, tmp: Path, parameters: dict[str, Any], root: Path):
    """Execute ``nb`` (read from ``path``) with papermill into ``tmp``; return the executed notebook.
    A failing cell is one :class:`BookError` line, its notebook kept in ``book/_build/failed/``."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        return papermill.execute_notebook(
            nb,
            str(tmp),
            parameters=parameters,
            kernel_name=KERNEL_NAME,
            cwd=str(root),
            progress_bar=False,
            log_output=False,
            # ipykernel >= 7 warns on every start that its local TCP sockets are unencrypted
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
            # killed, not asked to shut down: a kernel asked while a cell runs (the build stopped by
            # SIGTERM) prints a traceback of its closed sockets; the executed notebook is complete by then
            shutdown_kernel="immediate",
        )
    except PapermillExecutionError as exc:
        failed = root / BOOK_DIR / "_build" / "failed" / f"{path.stem}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            os.replace(tmp, failed)
        kept = failed if failed.exists() else None
        line = _failure_line(path.stem, _shown(path, root), nb, bool(parameters), kept, exc)
        raise BookError(line) from None


def _shown(path: Path, root: Path) -> str:
    """``path`` as a build names it: relative to ``root`` where it is inside."""
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


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

    from pe_book.publishing.publish import book_config

    config = root / BOOK_DIR / "_build" / "_config.yml"  # _config.yml with the repository's URL (pyproject.toml)
    with explain_disk_full(f"book configuration {config}"):
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(yaml.safe_dump(book_config(root), sort_keys=False))
    exe = Path(sys.executable).with_name("jupyter-book")
    command = [str(exe) if exe.exists() else "jupyter-book", "build", ".", "--path-output", BOOK_DIR,
               "--config", str(config), "--warningiserror", "--keep-going"]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    html = root / BOOK_DIR / "_build" / "html"
    if result.returncode:
        log = _jupyter_book_log(result, html)
        problems = [line for line in log if re.search(r"WARNING|ERROR|Error|error:", line)]
        print("\n".join((problems or log)[-30:]), file=sys.stderr)
        raise BookError(f"jupyter-book build failed (exit {result.returncode}); see the lines above")
    return html / "index.html"


def _jupyter_book_log(result, where: Path) -> list[str]:
    """The output of a failed ``jupyter-book`` run, line by line; a full disk is one
    :class:`~pe_lib.errors.DiskFullError` naming ``where``, the HTML it was writing."""
    log = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr).strip().splitlines()
    if any("No space left on device" in line for line in log):
        raise DiskFullError(f"disk full while writing the HTML {where} (jupyter-book: No space left on "
                            "device); free space and rerun")
    return log


#: How ``pe-book book --page`` reruns a chapter into an executed notebook.
RERUN_EXAMPLE = "papermill book/05_probing.ipynb out.ipynb -p profile cpu -p layer 1"
#: The file name (stem) of a notebook that ``--page`` renders: its page's name and build folder.
PAGE_NAME = re.compile(r"\w[\w.-]*")


def build_page(notebook: Path, root: Path = ROOT) -> Path:
    """One executed notebook (a papermill rerun of a chapter) as a standalone HTML page with the
    book's configuration: glued values filled in, figures as in the book, its citations with a list
    of references at its end, nothing executed again; references to other chapters link into the
    published book (:func:`_link_other_chapters`).
    Return the page's path (``book/_build/pages/<name>/_build/_page/<name>/html/<name>.html``, named
    after the notebook's file, :data:`PAGE_NAME`: nothing outside ``pages/<name>`` is deleted)."""
    import subprocess

    notebook = Path(notebook).resolve()
    if notebook.suffix != ".ipynb" or not notebook.is_file():
        raise BookError(f"{notebook}: not an executed notebook (.ipynb); papermill writes one, e.g. "
                        f"{RERUN_EXAMPLE}")
    if not PAGE_NAME.fullmatch(notebook.stem):
        raise BookError(f"{notebook}: {notebook.stem!r} cannot name a page: a page is named after its "
                        "notebook's file, of letters, digits, '_', '-' and '.' (not first); rename it, e.g. "
                        "out.ipynb")
    work = root / BOOK_DIR / "_build" / "pages" / notebook.stem
    with explain_disk_full(f"page build {work}"):
        _write_page_sources(notebook, _read_executed(notebook), work, root)
    exe = Path(sys.executable).with_name("jupyter-book")
    command = [str(exe) if exe.exists() else "jupyter-book", "build", notebook.name,
               "--config", "_config.yml"]
    result = subprocess.run(command, cwd=work, capture_output=True, text=True)
    page = work / "_build" / "_page" / notebook.stem / "html" / f"{notebook.stem}.html"
    if result.returncode or not page.exists():
        print("\n".join(_jupyter_book_log(result, page.parent)[-30:]), file=sys.stderr)
        raise BookError(f"jupyter-book could not render {notebook.name} (exit {result.returncode}); "
                        "see the lines above")
    return page


def _read_executed(notebook: Path) -> dict:
    """The JSON of an executed notebook; one :class:`BookError` line naming it when it is not one
    (truncated, not JSON, no list of cells)."""
    try:
        content = json.loads(notebook.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BookError(f"{notebook}: not a notebook: not JSON ({error}), e.g. cut short; papermill "
                        f"writes it again: {RERUN_EXAMPLE}") from None
    if not isinstance(content, dict) or not isinstance(content.get("cells"), list):
        raise BookError(f"{notebook}: not a notebook: it has no list of cells; papermill writes one: "
                        f"{RERUN_EXAMPLE}")
    return content


def _write_page_sources(notebook: Path, content: dict, work: Path, root: Path) -> None:
    """Into ``work`` (emptied first): the notebook's ``content`` with a list of its references at its
    end, the bibliography and the book's configuration."""
    import shutil

    import yaml

    from pe_book.publishing.publish import book_config

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _link_other_chapters(content, root)
    references = "## References\n\n```{bibliography}\n:filter: docname in docnames\n```"  # its citations
    content["cells"].append({"cell_type": "markdown", "id": "page-references", "metadata": {},
                             "source": references})
    (work / notebook.name).write_text(json.dumps(content))
    config = book_config(root)
    for i, bib in enumerate(config.get("bibtex_bibfiles", [])):  # the bibliography beside the page
        shutil.copy2(root / bib, work / Path(bib).name)
        config["bibtex_bibfiles"][i] = Path(bib).name
    (work / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))


def _link_other_chapters(content: dict, root: Path) -> None:
    """In the text cells of an executed notebook's ``content``, each reference to another chapter
    (or its figure) as a link into the published book (:func:`pe_book.publishing.publish.link_references`);
    a single page has no other chapters to resolve it against."""
    from pe_book.publishing.publish import chapter_labels, link_references, pages_url, repository_url

    text = [c for c in content["cells"] if c.get("cell_type") == "markdown"]
    for cell in text:
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
    targets = re.findall(r"^\(([\w-]+)\)=|^:name:[ \t]+([\w-]+)", "\n".join(c["source"] for c in text), re.M)
    own = frozenset(label or figure for label, figure in targets)
    labels, book = chapter_labels(root), pages_url(repository_url(root))
    for cell in text:
        cell["source"] = link_references(cell["source"], labels, book, keep=own)


def check_stored(profile: str, results: Path = ROOT / "results") -> None:
    """Refuse a profile whose planned results are not all in the store (``pe-book book --stored-only``)."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.results import Results

    planned = Results(get_profile(profile), results, progress=False).plan()
    missing = [a for a in planned if not a.stored]
    if missing:
        raise BookError(f"{len(missing)} of the {len(planned)} planned results of profile {profile} are not stored "
                        f"(the first: {missing[0].stage} of {missing[0].variant}); run `pe-book run --profile {profile}`, "
                        "or build without --stored-only")


def ensure_results(profile: str, results: str = "results") -> None:
    """Run the pipeline of ``profile`` (:class:`~pe_book.experiments.runner.Runner`): compute
    whatever the artifact store lacks (pretraining, analysis, fine-tuning), so that the notebooks
    only read and plot."""
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    timings = Runner(get_profile(profile), ROOT / results).run()
    print("results: " + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in timings.items()), file=sys.stderr)


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


def build(profile: str, only: str | None = None, html: bool = True, root: Path = ROOT,
          compute: bool = True, stored_only: bool = False) -> Path | None:
    """Compute missing results first (``compute``: the profile's pipeline), execute the (selected)
    notebooks, which only read the store, then build the HTML; return the index page (or None).
    ``stored_only``: compute nothing, and refuse a profile whose planned results are not all stored
    before any notebook runs."""
    from tqdm.auto import tqdm

    chapters = chapter_parameters(profile, root)
    names = [p.stem for p in chapters]
    _check_layout(root, names)
    selected = _select(list(chapters), only)
    for path in selected:  # every parameter is checked before any notebook runs
        chapters[path] = _build_parameters(path, chapters[path])
    if stored_only:
        check_stored(profile, root / "results")
    elif compute:
        ensure_results(profile)
    bar = tqdm(selected, desc=f"notebooks ({profile})", unit="nb", file=sys.stderr)
    for path in bar:
        bar.set_postfix_str(path.stem)
        start = time.perf_counter()
        out = execute_notebook(path, chapters[path], root)
        tqdm.write(f"{path.stem}: {time.perf_counter() - start:.1f} s -> {out.relative_to(root)}", file=sys.stderr)
    bar.close()
    glued = root / BOOK_DIR / "_build" / "glued.json"  # compare two builds: compare_glued
    with explain_disk_full(f"glued values {glued}"):
        glued.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(glued, json.dumps(glued_values(root), indent=1, sort_keys=True))
    if not html:
        return None
    missing = [n for n in names if not (root / BOOK_DIR / f"{n}.ipynb").exists()]
    if missing:
        raise BookError(f"book/{missing[0]}.ipynb has not been executed yet; run 'pe-book book' without --only (or --only {missing[0]})")
    write_score_table(profile, root)
    start = time.perf_counter()
    index = build_html(root)
    print(f"jupyter-book: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return index


def write_score_table(profile: str, root: Path = ROOT) -> Path:
    """Write ``profile``'s stored scores (:func:`pe_book.results_data.score_table`) as
    :data:`SCORE_TABLE`, which the findings chapter links for download; returns its path."""
    from pe_book.results_data import score_table

    path = root / SCORE_TABLE
    with explain_disk_full(f"score table {path}"):
        atomic_write_text(path, score_table(profile, root / "results").to_csv(index=False))
    return path


def _build_parameters(path: Path, overrides: dict[str, Any]) -> dict[str, Any]:
    """A notebook's parameters in a build: the profile's ``overrides``, checked against what the
    notebook declares."""
    try:
        return check_parameters(overrides, declared_parameters(path))
    except ParameterError as exc:
        raise BookError(f"{path.stem}: {exc}") from None
