"""Sphinx extension of the book (``_config.yml``): a glued text that is not a number is shown as
it is, whatever format the prose asks for.

A chapter cites a number as ``{glue:text}`name:.3f```; when its variant was left out of a run,
:func:`pe_book.publishing.notebook.glue` glues the words "not run" instead of NaN. myst-nb would fail to apply
``.3f`` to them (a warning, an error under ``--warningiserror``); with this extension the words
appear as they are. Numbers are formatted exactly as by myst-nb.
"""
from __future__ import annotations


def format_text(text: str, fmt_spec: str) -> str:
    """myst-nb's ``format_plain_text``, except that a text that is not a number is returned as it
    is (without quotes) when ``fmt_spec`` asks for a number."""
    from myst_nb.core.variables import format_plain_text

    try:
        return format_plain_text(text, fmt_spec)
    except (TypeError, ValueError):
        return text.strip("'\"")


def setup(app) -> dict:
    """Route myst-nb's glue roles and cross-references through :func:`format_text`."""
    from myst_nb.ext.glue import crossref, roles

    roles.format_plain_text = format_text
    crossref.format_plain_text = format_text
    return {"parallel_read_safe": True, "parallel_write_safe": True}
