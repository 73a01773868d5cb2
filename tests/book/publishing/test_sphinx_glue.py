"""pe_book.publishing.sphinx_glue and pe_book.publishing.notebook.glue: a value of a variant a run left
out reads "not run"."""
from __future__ import annotations

import math

from pe_book.publishing import sphinx_glue


def test_numbers_are_formatted_as_myst_nb_does_and_words_stay_words():
    assert sphinx_glue.format_text("0.123456", ".3f") == "0.123"
    assert sphinx_glue.format_text("12345", ",d") == "12,345"
    assert sphinx_glue.format_text("not run", ".3f") == "not run"
    assert sphinx_glue.format_text("'not run'", ".2f") == "not run"


def test_glue_turns_nan_into_not_run(monkeypatch):
    from pe_book.publishing import notebook

    seen = {}
    monkeypatch.setattr("myst_nb.glue", lambda name, value, display=False: seen.update({name: value}))
    notebook.glue("x", math.nan)
    notebook.glue("y", 0.5)
    assert str(seen["x"]) == notebook.NOT_RUN and repr(seen["x"]) == "not run" and seen["y"] == 0.5
