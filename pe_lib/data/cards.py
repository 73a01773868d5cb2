"""Data cards: a JSON record and a Markdown rendering of the same facts, written side by side."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pe_lib.data.cache import write_json


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) for v in value)
    return str(value)


def _lines(payload: dict[str, Any], depth: int) -> list[str]:
    out: list[str] = []
    for key, value in payload.items():
        if isinstance(value, dict):
            out.append(f"{'  ' * depth}- **{key}**")
            out += _lines(value, depth + 1)
        else:
            out.append(f"{'  ' * depth}- {key}: {_fmt(value)}")
    return out


def render_markdown(card: dict[str, Any], title: str) -> str:
    """A nested bullet list of the card, under a heading."""
    return "\n".join([f"# {title}", "", *_lines(card, 0), ""])


def write_card(folder: Path, card: dict[str, Any], title: str) -> None:
    """Write ``card.json`` and ``card.md`` into ``folder``."""
    write_json(folder / "card.json", card)
    (folder / "card.md").write_text(render_markdown(card, title), encoding="utf-8")
