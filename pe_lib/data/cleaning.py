"""Turn marked-up source text (MediaWiki, reStructuredText, OSIS) into plain prose paragraphs."""
from __future__ import annotations

import html
import re

MIN_PARAGRAPH_WORDS = 5

_WS = re.compile(r"\s+")
_WIKI_COMMENT = re.compile(r"<!--.*?-->", re.S)
_WIKI_REF = re.compile(r"<ref[^>]*/>|<ref[^>]*>.*?</ref>", re.S | re.I)
_WIKI_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_WIKI_TABLE = re.compile(r"\{\|(?:(?!\{\|).)*?\|\}", re.S)
_WIKI_INNER_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_WIKI_EXT_LINK = re.compile(r"\[(?:https?|ftp)://[^\s\]]+\s*([^\]]*)\]")
_URL = re.compile(r"(?:https?|ftp)://\S+")
_WIKI_QUOTES = re.compile(r"'{2,5}")
_WIKI_HEADING = re.compile(r"^=+\s*(.*?)\s*=+\s*$")
_HTML_TAG = re.compile(r"<[^>]+>")
_LINK_NAMESPACE = re.compile(r"^\s*:?\s*(file|image|category|media|wikipedia|wp|[a-z]{2,3}(-[a-z]+)?):", re.I)
_WIKI_STOP_SECTIONS = {"references", "external links", "see also", "notes", "further reading", "bibliography",
                       "sources", "footnotes", "citations"}


def normalise_space(text: str) -> str:
    """Collapse runs of whitespace into one space and strip the ends."""
    return _WS.sub(" ", text).strip()


def is_prose(text: str, min_words: int = MIN_PARAGRAPH_WORDS) -> bool:
    """At least ``min_words`` words, and mostly letters rather than symbols or digits."""
    if len(text.split()) < min_words:
        return False
    letters = sum(ch.isalpha() for ch in text)
    return letters >= 0.6 * sum(not ch.isspace() for ch in text)


def _replace_link(match: re.Match[str]) -> str:
    inner = match.group(1)
    if _LINK_NAMESPACE.match(inner):
        return ""
    return inner.rsplit("|", 1)[-1]


def _until_stable(pattern: re.Pattern[str], repl, text: str) -> str:  # type: ignore[no-untyped-def]
    while True:
        new = pattern.sub(repl, text)
        if new == text:
            return new
        text = new


def clean_wiki(markup: str) -> list[str]:
    """Plain prose paragraphs of one MediaWiki article (no templates, tables, lists of links)."""
    text = html.unescape(_WIKI_COMMENT.sub("", markup))
    text = _WIKI_REF.sub("", text)
    text = _until_stable(_WIKI_TEMPLATE, "", text)
    text = _until_stable(_WIKI_TABLE, "", text)
    text = _until_stable(_WIKI_INNER_LINK, _replace_link, text)
    text = _WIKI_EXT_LINK.sub(r"\1", text)
    text = _URL.sub("", _WIKI_QUOTES.sub("", text))
    text = html.unescape(_HTML_TAG.sub("", text))
    paragraphs: list[str] = []
    for line in text.splitlines():
        heading = _WIKI_HEADING.match(line.strip())
        if heading:
            if heading.group(1).strip().lower() in _WIKI_STOP_SECTIONS:
                break
            continue
        line = normalise_space(line.lstrip("*#:;"))
        if line[:1] in {"|", "!", "{"} or any(mark in line for mark in ("[[", "]]", "{{", "}}")):
            continue  # table rows and the rare link or template the patterns above could not unnest
        if is_prose(line):
            paragraphs.append(line)
    return paragraphs


_OSIS_DROP = re.compile(r"<(note|title)\b[^>]*?(?<!/)>.*?</\1>", re.S)


def strip_osis(markup: str) -> str:
    """Plain text of an OSIS verse: footnotes and headings removed, word tags unwrapped."""
    text = _OSIS_DROP.sub(" ", markup)
    text = html.unescape(_HTML_TAG.sub("", text)).replace("¶", " ")
    return normalise_space(text)


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z])")


def split_sentences(paragraph: str) -> list[str]:
    """Split prose into sentences at ., ! or ? followed by a capitalised word (heuristic)."""
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]
