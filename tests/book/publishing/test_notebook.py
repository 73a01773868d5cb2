"""pe_book.publishing.notebook: the notebooks' typed parameters (checked on plain dicts, in a namespace as a
kernel has it, and in papermill runs of the sinusoid notebook) and what every notebook declares."""
from __future__ import annotations

from pathlib import Path

import pytest

from pe_book.publishing.notebook import (ParameterError, check_notebook_parameters, check_parameters,
                                         declared_parameters, record_names, with_defaults)

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
SMALL_SINUSOID = {"max_offset": 8, "n_bases": 3, "pretrained": False}


# ----------------------------------------------------------------------------- check_parameters


DECLARED = {"seed": int, "lr": float, "name": str, "flag": bool, "variants": list[str],
            "dims": tuple[int, ...], "limit": int | None}


def test_check_parameters_accepts_valid_values():
    given = {"seed": 3, "lr": 1, "name": "x", "flag": False, "variants": ["a", "b"], "dims": (1, 2),
             "limit": None}
    assert check_parameters(given, DECLARED) == given
    assert check_parameters({}, DECLARED) == {}


def test_check_parameters_rejects_unknown_name_and_names_the_valid_ones():
    with pytest.raises(ParameterError) as info:
        check_parameters({"seeed": 1}, DECLARED)
    message = str(info.value)
    assert "unknown parameter 'seeed'" in message
    assert "did you mean 'seed'?" in message
    assert "valid parameters: dims, flag, limit, lr, name, seed, variants" in message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "name, value",
    [("seed", "1"), ("seed", 1.5), ("seed", True), ("lr", "0.1"), ("name", 3), ("flag", 1),
     ("variants", "ape-sin"), ("variants", ["a", 2]), ("dims", [1, 2]), ("limit", "none")],
)
def test_check_parameters_rejects_wrong_types(name, value):
    with pytest.raises(ParameterError, match=f"parameter '{name}' must be"):
        check_parameters({name: value}, DECLARED)


# ----------------------------------------------------------------------------- in a namespace


def _namespace_after_parameters(**injected):
    """A namespace as a kernel has it after: setup cell (with an output), parameters cell, injected
    cell. IPython appends each cell's source to ``In`` and binds ``_iN`` to it."""
    output = object()
    ns = {"__name__": "__main__", "sys": object(), "In": ["", "import sys"], "Out": {1: output}, "_i1": "import sys",
          "_1": output, "_": output}
    record_names(ns)
    ns["In"].append("seed: int = 0")
    ns["__annotations__"] = {"seed": int, "variants": list[str]}
    ns.update(seed=0, variants=["ape-sin"], _i2="seed: int = 0", _i="import sys", _ii="")  # the parameters cell
    ns["In"].append("# Parameters")
    ns.update(injected, _i3="# Parameters")  # papermill's injected cell
    return ns


def test_check_notebook_parameters_returns_the_declared_values():
    ns = _namespace_after_parameters(seed=4)
    assert check_notebook_parameters(ns) == {"seed": 4, "variants": ["ape-sin"]}


def test_check_notebook_parameters_rejects_an_injected_unknown_name():
    with pytest.raises(ParameterError, match="unknown parameter 'seeed'.*valid parameters: seed, variants"):
        check_notebook_parameters(_namespace_after_parameters(seeed=4))


def test_check_notebook_parameters_rejects_rebinding_an_existing_name():
    with pytest.raises(ParameterError, match="unknown parameter 'sys'"):
        check_notebook_parameters(_namespace_after_parameters(sys=1))


@pytest.mark.parametrize("name", ["In", "Out", "__foo__", "_oh", "_i5", "_7", "_"])
def test_check_notebook_parameters_rejects_names_shaped_like_ipythons(name):
    with pytest.raises(ParameterError, match=f"unknown parameter '{name}'.*valid parameters: seed, variants"):
        check_notebook_parameters(_namespace_after_parameters(**{name: 1}))


def test_check_notebook_parameters_accepts_what_ipython_binds_itself():
    ns = _namespace_after_parameters()
    ns.update(_i4=ns["In"][2], __=ns["Out"][1])
    assert check_notebook_parameters(ns) == {"seed": 0, "variants": ["ape-sin"]}


def test_check_notebook_parameters_rejects_a_wrong_type():
    with pytest.raises(ParameterError, match="parameter 'variants' must be list\\[str\\], got int"):
        check_notebook_parameters(_namespace_after_parameters(variants=5))


@pytest.mark.parametrize("text", ['["none", "rope"]', "[none, rope]"])
def test_a_list_parameter_given_as_json_or_yaml_text_is_the_list(text):
    """papermill's ``-p variants '["none","rope"]'`` injects a string: it is read as the list, and
    the notebook's global is the list."""
    ns = _namespace_after_parameters(variants=text)
    assert check_notebook_parameters(ns) == {"seed": 0, "variants": ["none", "rope"]} and ns["variants"] == ["none", "rope"]


@pytest.mark.parametrize("text", ["[1, 2]", "[none", "rope"])
def test_a_list_text_of_another_type_names_both_ways_of_giving_a_list(text):
    with pytest.raises(ParameterError, match=r"""parameter 'variants' must be list\[str\] \(as text: -p variants '\["a", "b"\]' """
                                             r"""or -y 'variants: \[a, b\]'\), got str"""):
        check_notebook_parameters(_namespace_after_parameters(variants=text))


def test_check_notebook_parameters_needs_record_names():
    with pytest.raises(RuntimeError, match="record_names"):
        check_notebook_parameters({"__annotations__": {"seed": int}, "seed": 0})


# ----------------------------------------------------------------------------- with_defaults


CELL = """profile: str = "smoke"  # results profile (smoke, cpu or gpu) — é
files: list[str] = ["a",
                    "b"]  # over two lines
alpha: float = 0.05
"""


def test_with_defaults_writes_the_values_and_keeps_the_rest():
    import ast

    written = with_defaults(CELL, {"files": ["x"], "profile": "cpu"})
    assert written.splitlines()[0] == "profile: str = 'cpu'  # results profile (smoke, cpu or gpu) — é"
    assert written.splitlines()[1:] == ["files: list[str] = ['x']  # over two lines", "alpha: float = 0.05"]
    values = {n.target.id: ast.literal_eval(n.value) for n in ast.parse(written).body}
    assert values == {"profile": "cpu", "files": ["x"], "alpha": 0.05}
    assert with_defaults(CELL, {}) == CELL


def test_with_defaults_refuses_a_name_the_cell_does_not_declare():
    with pytest.raises(ParameterError, match="no parameter 'seed' with a default; valid parameters: alpha, files, profile"):
        with_defaults(CELL, {"seed": 1})


def test_glue_shows_a_figure_as_its_output_where_asked(monkeypatch):
    """Under SHOW_FIGURES (Colab's first cell) a glued figure is displayed; a number never is."""
    import matplotlib.figure

    from pe_book.publishing import notebook

    shown = {}
    monkeypatch.setattr("myst_nb.glue", lambda name, value, display=False: shown.update({name: display}))
    figure = matplotlib.figure.Figure()
    notebook.glue("before", figure)
    monkeypatch.setenv(notebook.SHOW_FIGURES, "1")
    notebook.glue("fig", figure)
    notebook.glue("number", 0.5)
    assert shown == {"before": False, "fig": True, "number": False}


# ----------------------------------------------------------------------------- the notebooks


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_is_typed_and_papermill_reads_it(path, tmp_path):
    import jupytext
    import nbformat
    import papermill

    declared = declared_parameters(path)
    assert declared, f"{path.name} declares no parameters"
    nb = jupytext.read(path)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    nbformat.write(nb, tmp_path / "nb.ipynb")
    inferred = papermill.inspect_notebook(str(tmp_path / "nb.ipynb"))  # what `papermill --help-notebook` shows
    assert set(inferred) == set(declared)
    for name, parameter in inferred.items():
        assert parameter["inferred_type_name"] != "None", f"papermill cannot read the type of {name}"
    code = [c for c in nb.cells if c.cell_type == "code"]
    at = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    assert code[at - 1].source.rstrip().endswith("notebook.record_names(globals())")
    assert "notebook.check_notebook_parameters(globals())" in code[at + 1].source.splitlines()[0]


# ----------------------------------------------------------------------------- papermill runs


def _run_papermill(tmp_path, parameters):
    import jupytext
    import papermill

    return papermill.execute_notebook(
        jupytext.read(ROOT / "notebooks" / "02_sinusoid.py"), str(tmp_path / "out.ipynb"),
        parameters=parameters, kernel_name="python3", cwd=str(ROOT), progress_bar=False,
    )


def test_papermill_run_with_an_unknown_parameter_fails_clearly(tmp_path):
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as info:
        _run_papermill(tmp_path, {**SMALL_SINUSOID, "n_basez": 3})
    assert info.value.ename == "ParameterError"
    assert "unknown parameter 'n_basez' (did you mean 'n_bases'?)" in info.value.evalue
    assert ("valid parameters: ape_dim, base, head_dim, max_offset, n_bases, pretrained, profile, results"
            in info.value.evalue)


@pytest.mark.parametrize("name", ["In", "__foo__"])
def test_papermill_run_with_a_parameter_named_like_ipythons_fails_clearly(name, tmp_path):
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as info:
        _run_papermill(tmp_path, {**SMALL_SINUSOID, name: 1})
    assert info.value.ename == "ParameterError"
    assert f"unknown parameter '{name}'" in info.value.evalue


def test_papermill_run_with_a_wrongly_typed_parameter_fails_clearly(tmp_path):
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as info:
        _run_papermill(tmp_path, {**SMALL_SINUSOID, "ape_dim": "768"})
    assert info.value.ename == "ParameterError"
    assert "parameter 'ape_dim' must be int, got str '768'" in info.value.evalue
    # one line, not a traceback: in papermill's message and in the failed notebook
    assert info.value.traceback == [f"ParameterError: {info.value.evalue}"]
