"""The book machinery: the chapters' parameters per profile, the layout, notebook execution
(papermill runs with small parameters, a few seconds each: a kernel start and the imports), the
browser check's link and text checks, the glued values. The notebooks' parameter checks and glue
themselves: test_notebook.py."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from pe_book.publishing import book, book_check, notebook, publish
from pe_book.publishing.notebook import check_parameters

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
SMALL_SINUSOID = {"max_offset": 8, "n_bases": 3, "pretrained": False}


# ----------------------------------------------------------------------------- the notebooks


@pytest.mark.parametrize("profile", sorted(book.BOOK_PROFILES))
def test_profiles_name_real_notebooks_and_valid_parameters(profile):
    declared = {p.stem: notebook.declared_parameters(p) for p in NOTEBOOKS}
    for name, overrides in book.BOOK_PROFILES[profile].items():
        assert name in declared, f"BOOK_PROFILES[{profile!r}] names a missing notebook {name!r}"
        check_parameters(overrides, declared[name])
    for path in NOTEBOOKS:  # a notebook's defaults are the smoke profile's, so the smoke book needs no overrides
        default = re.search(r'^profile: str = "(\w+)"', path.read_text(), re.M)
        assert default is None or default.group(1) == "smoke", path.name


def test_chapter_parameters_give_every_notebook_its_parameters_under_a_profile():
    chapters = book.chapter_parameters("cpu")
    assert list(chapters) == NOTEBOOKS
    assert chapters[ROOT / "notebooks" / "13_scale.py"]["profile"] == "scale"
    assert chapters[ROOT / "notebooks" / "09_performance.py"] == {}
    chapters[ROOT / "notebooks" / "13_scale.py"]["profile"] = "changed"  # a copy: the profiles stay as they are
    assert book.BOOK_PROFILES["cpu"]["13_scale"]["profile"] == "scale"
    assert all(parameters == {} for parameters in book.chapter_parameters("smoke").values())
    with pytest.raises(book.BookError, match="unknown profile 'gpu'; valid: smoke, cpu"):
        book.chapter_parameters("gpu")


def test_book_profiles_are_experiment_profiles():
    from pe_book.experiments.profiles import PROFILES

    assert set(book.BOOK_PROFILES) <= set(PROFILES)


def test_book_layout_and_offline_configuration():
    names = [p.stem for p in NOTEBOOKS]
    entries = {Path(f).with_suffix("").as_posix() for f in book.toc_files(ROOT)}
    assert {f"book/{n}" for n in names} <= entries
    for entry in entries:
        assert any((ROOT / entry).with_suffix(s).exists() for s in (".md", ".ipynb")) or entry.split("/")[-1] in names
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"
    sphinx = config["sphinx"]["config"]
    assert "sphinx.ext.intersphinx" not in sphinx["extensions"]
    assert "sphinxcontrib.bibtex" in sphinx["extensions"]
    mathjax = ROOT / sphinx["html_static_path"][0] / sphinx["mathjax_path"]
    assert mathjax.is_file() and not sphinx["mathjax_path"].startswith(("http:", "https:", "//"))
    bib = (ROOT / config["bibtex_bibfiles"][0]).read_text()
    for key in ("wang2021position", "vaswani2017attention", "shaw2018self", "huang2020improve",
                "wei2019nezha", "su2021roformer", "press2022train", "raffel2020exploring",
                "ke2021rethinking", "wang2020position", "chen2023locality", "devlin2019bert",
                "gehring2017convolutional"):
        assert f"{{{key}," in bib


# ----------------------------------------------------------------------------- executing the notebooks


def _copy_book(dst: Path) -> Path:
    """The book's sources (not its executed notebooks or build) in ``dst``."""
    shutil.copytree(ROOT / "notebooks", dst / "notebooks", ignore=shutil.ignore_patterns("__pycache__", ".*"))
    shutil.copytree(ROOT / "book", dst / "book", ignore=shutil.ignore_patterns("_build", "*.ipynb", ".tmp-*"))
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dst)
    return dst


@pytest.mark.parametrize("chapter", sorted(book.BOOK_PROFILES["cpu"]))
def test_a_papermill_rerun_of_a_built_chapter_keeps_the_published_parameters(chapter):
    """papermill replaces the injected cell of a rerun; the published values (chapter 8's and 13's
    trend runs, 13's profile scale) stay, as the defaults the build wrote into the parameters cell."""
    import jupytext
    from papermill.parameterize import parameterize_notebook

    published = book.BOOK_PROFILES["cpu"][chapter]
    nb = jupytext.read(ROOT / "notebooks" / f"{chapter}.py")
    built = published
    book._with_published_defaults(nb, built)
    nb.metadata.papermill = {}
    for cell in nb.cells:  # as papermill reads a notebook
        cell.metadata.setdefault("tags", [])
    override = {"results": "elsewhere"} if "results" in notebook.declared_parameters(nb) else {}
    rerun = parameterize_notebook(parameterize_notebook(nb, built, kernel_name="python3"), override, kernel_name="python3")
    namespace = {}
    for cell in rerun.cells:
        if {"parameters", "injected-parameters"} & set(cell.metadata.get("tags", [])):
            exec(cell.source, namespace)
    assert {name: namespace[name] for name in published} == published
    assert namespace.get("results", "elsewhere") == "elsewhere"


def test_execute_notebook_keeps_the_parameters_tag_and_records_the_run(tmp_path):
    import nbformat

    root = _copy_book(tmp_path)
    out = book.execute_notebook(root / "notebooks" / "02_sinusoid.py", SMALL_SINUSOID, root)
    assert out == root / "book" / "02_sinusoid.ipynb"
    nb = nbformat.read(out, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    at = next(i for i, t in enumerate(tags) if "parameters" in t)
    assert "injected-parameters" in tags[at + 1]
    assert "max_offset: int = 8" in nb.cells[at].source  # the page's parameters are its defaults
    assert nb.metadata.papermill["parameters"] == SMALL_SINUSOID
    assert nb.metadata.papermill["input_path"] == "notebooks/02_sinusoid.py"
    assert nb.metadata.kernelspec["name"] == "python3"
    assert not list((root / "book").glob(".tmp-*"))
    # papermill reruns the executed notebook, replacing the injected cell
    rerun = _run_papermill_on(out, tmp_path / "rerun.ipynb", {"max_offset": 4, "n_bases": 2, "pretrained": False})
    assert rerun.metadata.papermill["parameters"] == {"max_offset": 4, "n_bases": 2, "pretrained": False}


def _run_papermill_on(path, out, parameters):
    import papermill

    return papermill.execute_notebook(str(path), str(out), parameters=parameters, kernel_name="python3",
                                      progress_bar=False)


def test_a_failing_notebook_fails_with_one_line_naming_notebook_and_cell(tmp_path):
    root = _copy_book(tmp_path)
    with pytest.raises(book.BookError) as info:
        book.execute_notebook(root / "notebooks" / "02_sinusoid.py", {**SMALL_SINUSOID, "ape_dim": 7}, root)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("02_sinusoid: cell ")
    assert "of notebooks/02_sinusoid.py failed: ValueError: dim must be a positive even integer, got 7" in message
    assert (root / "book" / "_build" / "failed" / "02_sinusoid.ipynb").is_file()
    assert not (root / "book" / "02_sinusoid.ipynb").exists()
    # the cell number counts the cells of the .py file (the injected cell is not one of them)
    import jupytext

    cell = int(message.split("cell ")[1].split()[0])
    assert "sinusoid.compute(" in jupytext.read(root / "notebooks" / "02_sinusoid.py").cells[cell - 1].source


def test_build_rejects_bad_profiles_and_parameters_before_running_anything(tmp_path, monkeypatch):
    root = _copy_book(tmp_path)
    with pytest.raises(book.BookError, match="unknown profile 'gpu'"):
        book.build("gpu", root=root)
    with pytest.raises(book.BookError, match="no notebook 'nope'"):
        book.build("smoke", only="nope", root=root)
    monkeypatch.setitem(book.BOOK_PROFILES, "bad", {"02_sinusoid": {"base": "10000"}})
    with pytest.raises(book.BookError, match="02_sinusoid: parameter 'base' must be float"):
        book.build("bad", root=root)


def test_a_stored_only_build_refuses_an_incomplete_profile_before_running_anything(tmp_path, monkeypatch):
    from pe_book.experiments.results import PlannedArtifact, Results

    root = _copy_book(tmp_path)
    planned = [PlannedArtifact("baselines", "unigram", {}, tmp_path, True), PlannedArtifact("none", "pretrain-p0", {}, tmp_path, False)]
    monkeypatch.setattr(Results, "plan", lambda self: planned)
    monkeypatch.setattr(book, "ensure_results", lambda *a: pytest.fail("a stored-only build computed"))
    monkeypatch.setattr(book, "execute_notebook", lambda *a: pytest.fail("a notebook ran"))
    with pytest.raises(book.BookError, match=r"^1 of the 2 planned results of profile smoke are not stored "
                                             r"\(the first: pretrain-p0 of none\); run `pe-book run --profile smoke`"):
        book.build("smoke", root=root, stored_only=True)


def test_the_chapters_and_notebooks_only_read():
    """Computing is the pipeline's (``pe-book run``; ``pe-book book`` runs it first): no chapter
    module or notebook imports the runner or calls an ``ensure_*`` method, and no notebook declares
    a parameter that would make it compute."""
    sources = [*sorted((ROOT / "pe_book" / "chapters").glob("*.py")), *sorted((ROOT / "notebooks").glob("*.py"))]
    computing = [p.name for p in sources if re.search(r"experiments\.runner|\bRunner\b|\.ensure_\w+\(", p.read_text())]
    assert computing == []
    assert not [p.name for p in sorted((ROOT / "notebooks").glob("*.py")) if "compute" in notebook.declared_parameters(p)]


# ----------------------------------------------------------------------------- the browser check


def test_check_links_finds_broken_files_and_anchors(tmp_path):
    from pe_book.publishing.book_check import check_links

    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="sub/page.html#here">ok</a><a href="sub/page.html#gone">bad anchor</a>'
        '<img src="missing.png"><a href="https://example.org/x">external</a><a href="#top" id="top">self</a>'
    )
    (tmp_path / "sub" / "page.html").write_text('<h1 id="here">x</h1><a href="../index.html">up</a>')
    count, problems = check_links(tmp_path, tmp_path / "index.html")
    assert count == 4
    assert len(problems) == 2
    assert any("no id 'gone'" in p for p in problems)
    assert any("missing.png" in p for p in problems)
    assert check_links(tmp_path, tmp_path / "sub" / "page.html") == (1, [])


@pytest.mark.parametrize("text, what", [
    ("Profile {glue:text}`cpu_name` pretrains", "raw MyST markup"),
    ("the norm ratio is nan at initialisation", "nan"),
    ("the norm ratio is NaN at initialisation", "nan"),
    ("the norm ratio NAN", "nan"),
    ("fast bf16: True", "True/False/None"),
    ("profile 'cpu' and more", "a quoted string"),
    ("np.float64(1.3995)", "numpy/torch"),
    ("seeds [0, 1, 2]", "a list"),
    ("took 702.664361 s", "unrounded float"),
    ("1.281e+04 tokens", "e-notation"),
    ("3 seed(s) each", "plural"),
])
def test_book_check_finds_raw_markup_nan_and_python_reprs(text, what):
    from pe_book.publishing.book_check import text_problems

    problems = text_problems(f"Some prose. {text}. More prose.")
    assert len(problems) == 1 and what in problems[0] and text.split()[-1][:5] in problems[0]


def test_book_check_lets_prose_and_formatted_numbers_through():
    from pe_book.publishing.book_check import text_problems

    prose = ("The paper's figure [WSL+21] scores 0.627 (97.5% interval 58.6 to 62.3) on 4,096,000 tokens; "
             "a variant not run; Nonesuch, nano, Truely; \u2018quoted\u2019 words; 1,234.5 hours; "
             "[WYH+24] Liang Wang, Nan Yang, Xiaolong Huang; lr 3·10⁻⁴.")
    assert text_problems(prose) == []


def test_every_text_rule_and_a_table_wider_than_the_column_fail_a_page():
    from pe_book.publishing.book_check import page_findings

    problems = page_findings("fast: True; 3 seed(s); 1.281e+04 tokens; loss nan", ["table 900 px wide, 212 px past the 688 px text column"])
    assert len(problems) == 5 and problems[-1] == "wider than the text column: table 900 px wide, 212 px past the 688 px text column"
    assert page_findings("Liang Wang, Nan Yang", []) == []
    shrunk = page_findings("", [], ["Scores of every variant: shown at 0.36 of its drawn width"])
    assert shrunk == ["figure too small to read (draw it narrower, e.g. in more rows): "
                      "Scores of every variant: shown at 0.36 of its drawn width"]


needs_browser = pytest.mark.skipif(not all(book_check.browser_paths().values()), reason="needs chromium (make chromium)")


def browser_problems(folder, html: str) -> list[str]:
    """What the book check finds on ``html``, served as ``folder/index.html`` in headless Chromium."""
    import tempfile

    from pe_book.publishing.book_check import check_page, serve, start_browser

    page = folder / "index.html"
    page.write_text(html)
    with tempfile.TemporaryDirectory() as profile, serve(folder) as url:
        driver = start_browser(profile)
        try:
            return check_page(driver, url, folder, page, folder).problems
        finally:
            driver.quit()


@needs_browser
def test_the_browser_check_fails_a_figure_shown_below_half_its_size_and_passes_one_that_fits(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name, inches in (("wide", 16), ("fits", 5)):
        fig = plt.figure(figsize=(inches, 2), dpi=100)
        fig.savefig(tmp_path / f"{name}.png")
        plt.close(fig)
    problems = browser_problems(tmp_path, '<html><body><main style="width: 600px"><table><tr><td>verdicts</td></tr></table>'
                                '<img alt="a wide figure" src="wide.png" style="max-width: 100%">'
                                '<img alt="a figure that fits" src="fits.png" style="max-width: 100%"></main></body></html>')
    assert problems == ["figure too small to read (draw it narrower, e.g. in more rows): "
                        "a wide figure: shown at 0.38 of its drawn width"]


@needs_browser
def test_the_browser_check_fails_a_table_cut_off_at_the_text_columns_edge_though_narrower_than_the_page(tmp_path):
    """The text column is the article's content box: a table inside a scrolling output box that
    passes its right edge is cut off there, although it is narrower than the article with its padding."""
    problems = browser_problems(tmp_path, '<html><body><main style="box-sizing: border-box; width: 600px; padding: 0 40px">'
                                '<div class="cell_output"><div class="output" style="overflow-x: auto">'
                                '<table style="width: 560px"><tr><td>cut off</td></tr></table></div></div>'
                                '<table style="width: 520px"><tr><td>fits</td></tr></table></main></body></html>')
    width = [p for p in problems if p.startswith("wider than the text column: table")]
    assert len(width) == 1 and "past the 520 px text column" in width[0], problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_plumbing_is_hidden_and_only_parameters_show_their_code(path):
    """The rendered page shows prose, figures and tables; code stays in the source, behind a toggle."""
    import jupytext

    nb = jupytext.read(path)
    for cell in nb.cells:
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type == "code" and "parameters" not in tags:
            assert tags & {"hide-input", "hide-cell", "remove-input", "remove-cell"}, cell.source[:80]


def test_glued_values_are_collected_and_compared(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("")
    record = lambda name, data: nbformat.v4.new_output(  # noqa: E731
        "display_data", data={f"application/papermill.record/{k}": v for k, v in data.items()},
        metadata={"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}})
    cell.outputs = [record("loss", {"text/plain": "6.1"}), record("fig", {"image/png": "AA==", "text/plain": "<Figure>"}),
                    nbformat.v4.new_output("stream", text="not glued")]
    nb.cells = [cell]
    (tmp_path / "book").mkdir()
    nbformat.write(nb, tmp_path / "book" / "03_pretraining.ipynb")
    values = book.glued_values(tmp_path)
    assert values == {"03_pretraining": {"loss": "6.1", "fig": "<figure>"}}
    after = {"03_pretraining": {"loss": "6.2", "fig": "<figure>", "new": "1"}}
    assert book.compare_glued(values, values) == []
    assert book.compare_glued(values, after) == ["03_pretraining: loss: '6.1' -> '6.2'", "03_pretraining: new: '(absent)' -> '1'"]


def test_a_chapter_restricted_to_two_variants_says_not_run_for_the_others(tmp_path, monkeypatch):
    """A rerun of chapter 4 on the committed cpu results with two variants: the values of the
    variants it left out read "not run" (glued as words, formatted as they are), never "nan"."""
    import nbformat

    root = _copy_book(tmp_path)
    parameters = {"profile": "cpu", "results": str(ROOT / "results"), "variants": ["ape-learned", "rpe-learned"]}
    out = book.execute_notebook(root / "notebooks" / "04_dot_products.py", parameters, root)
    glued = book.glued_values(root)["04_dot_products"]
    assert glued["apesl_contrast"] == notebook.NOT_RUN and glued["apel_rpel_norm_ratio"] == notebook.NOT_RUN
    assert glued["apesl_similarity_init_text"] == notebook.NOT_RUN
    assert glued["panels_missing"] == "ape-learned+rpe-learned, ape-sin-learned, ape-sin-learned+rpe-learned"
    assert float(glued["apel_contrast"]) > 0  # the variants it ran keep their numbers
    assert not [name for name, text in glued.items() if re.search(r"\bnan\b", text, re.I)]
    from pe_book.publishing.sphinx_glue import format_text

    assert format_text(glued["apesl_contrast"], ".3f") == "not run"
    text = "".join(str(o.get("data", {})) for c in nbformat.read(out, as_version=4).cells for o in c.get("outputs", []))
    assert not re.search(r"\bnan\b", text, re.I)  # nor in its tables


def test_the_intro_hides_its_parameters_and_papermills_injected_cell():
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("profile = 'smoke'", metadata={"tags": ["parameters", "remove-cell"]}),
        nbformat.v4.new_code_cell("profile = 'cpu'", metadata={"tags": ["injected-parameters"]})])
    book._hide_injected(nb)
    assert nb.cells[1].metadata["tags"] == ["injected-parameters", "remove-cell"]
    shown = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("x = 2", metadata={"tags": ["injected-parameters"]})])
    book._hide_injected(shown)
    assert shown.cells[1].metadata["tags"] == ["injected-parameters"]  # a chapter shows both


def test_the_variance_table_is_shown_a_column_per_score_column_with_unknowns_named():
    import pandas as pd

    from pe_book.chapters import findings
    from pe_book.verdicts import mixed_model

    per_seed = pd.DataFrame({"variant": ["a", "a", "a", "a", "b", "b"], "pretrain_seed": [0, 0, 1, 1, 0, 0],
                             "seed": [0, 1, 0, 1, 0, 1], "classification": [1.0, 3.0, 5.0, 7.0, 0.0, 2.0]})
    per_seed["span"] = per_seed["classification"].where(per_seed["pretrain_seed"] == 0)
    shown = findings.variance_shown(mixed_model.variance_table(per_seed.set_index(["variant", "pretrain_seed", "seed"]),
                                                               ["classification", "span"]))
    assert list(shown.columns) == ["classification", "span"] and list(shown.index) == list(findings.VARIANCE_FORMATS) + [
        "fine-tuning per variant", "pooled from"]
    assert shown.loc["between", "classification"] == "8.00" and shown.loc["df", "classification"] == "1"
    assert shown.loc["tau2", "span"] == "unknown" and shown.loc["pooled from", "classification"] == "a"


def test_a_rerun_notebook_renders_as_one_page_with_its_glued_values_and_citations(tmp_path):
    """``pe-book book --page OUT.ipynb``: the glued value and the citation of an executed notebook
    appear on its page, a reference to another chapter links into the published book, nothing of
    the markup is left; anything but an .ipynb is refused."""
    import nbformat

    source = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from pe_book.publishing import notebook\nnotebook.glue('answer', 'forty-two')"),
        nbformat.v4.new_markdown_cell("# A rerun\n\nThe answer is {glue:text}`answer`, after {cite:t}`wang2021position`; "
                                      "see {ref}`findings`.")])
    source.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(source, tmp_path / "source.ipynb")
    out = tmp_path / "rerun-page-test.ipynb"
    _run_papermill_on(tmp_path / "source.ipynb", out, {})
    page = book.build_page(out)
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>|<style.*?</style>", "", page.read_text(), flags=re.S))
    assert page.name == "rerun-page-test.html" and "The answer is forty-two" in " ".join(text.split())
    assert "glue:text" not in text and "cite:t" not in text and "Wang" in text
    findings = f'href="{publish.pages_url(publish.repository_url())}book/08_findings.html#findings"'
    assert findings in page.read_text()  # another chapter: a link into the published book
    with pytest.raises(book.BookError, match=r"not an executed notebook \(\.ipynb\)"):
        book.build_page(ROOT / "notebooks" / "05_probing.py")
