"""Readers that open each packaged source's raw files (as extracted by :mod:`pe_lib.data.sources`).

Each reader takes the source's folder and returns plain Python records: documents of prose
paragraphs for the corpus, and labelled rows for the tasks. No reader downloads anything.
"""
from __future__ import annotations

import bz2
import csv
import gzip
import io
import re
import struct
import tarfile
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from pe_lib.data.cleaning import clean_wiki, is_prose, normalise_space, strip_osis


@dataclass(frozen=True)
class Document:
    """One document of the corpus: the unit of the train/validation split."""

    source: str
    doc_id: str
    paragraphs: tuple[str, ...]


def _only(folder: Path, pattern: str) -> Path:
    hits = sorted(folder.rglob(pattern))
    if len(hits) != 1:
        raise FileNotFoundError(f"expected one {pattern!r} under {folder}, found {len(hits)}")
    return hits[0]


# ---------------------------------------------------------------- Wikipedia (MediaWiki XML dump)

def read_wikipedia(folder: Path) -> list[Document]:
    """Articles (namespace 0, no redirects) of a MediaWiki XML dump, ``*.bz2`` or plain."""
    path = _only(folder, "enwiki-*")
    opener = bz2.open if path.suffix == ".bz2" else open
    docs: list[Document] = []
    with opener(path, "rb") as handle:
        for _, elem in ElementTree.iterparse(handle):
            if not elem.tag.endswith("}page") and elem.tag != "page":
                continue
            fields = {child.tag.rsplit("}", 1)[-1]: child for child in elem.iter()}
            text = (fields["text"].text or "") if "text" in fields else ""
            namespace = (fields["ns"].text or "0") if "ns" in fields else "0"
            if namespace == "0" and "redirect" not in fields and not text.lstrip().upper().startswith("#REDIRECT"):
                paragraphs = clean_wiki(text)
                if paragraphs:
                    docs.append(Document("wikipedia", fields["title"].text or "", tuple(paragraphs)))
            elem.clear()
    return docs


# ---------------------------------------------------------------- Jane Austen (R lazy-load database)

def _read_rdb(folder: Path) -> dict[str, list[str]]:
    """The character vectors of an R lazy-load data base (``Rdata.rdb`` + ``Rdata.rdx``)."""
    import rdata

    def parse(raw: bytes):  # type: ignore[no-untyped-def]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rdata warns that a bare serialisation has no file header
            return rdata.conversion.convert(rdata.parser.parse_data(raw))

    index = parse(gzip.decompress(_only(folder, "Rdata.rdx").read_bytes()))
    blob = _only(folder, "Rdata.rdb").read_bytes()
    objects: dict[str, list[str]] = {}
    for name, (offset, length) in index["variables"].items():
        chunk = blob[int(offset):int(offset) + int(length)]
        size = struct.unpack(">I", chunk[:4])[0]
        raw = zlib.decompress(chunk[4:])
        if len(raw) != size:
            raise ValueError(f"corrupt R object {name!r} in {folder}")
        objects[str(name)] = [str(line) for line in parse(raw)]
    return objects


_CHAPTER = re.compile(r"^(chapter|volume)\b", re.I)


def read_austen(folder: Path) -> list[Document]:
    """Jane Austen's novels, one document per chapter, paragraphs rejoined from the text lines."""
    docs: list[Document] = []
    for novel, lines in sorted(_read_rdb(folder).items()):
        chapters: list[list[str]] = [[]]
        paragraph: list[str] = []
        for line in [*lines, ""]:
            if _CHAPTER.match(line.strip()):
                chapters.append([])
                continue
            if line.strip():
                paragraph.append(line.strip())
                continue
            text = normalise_space(" ".join(paragraph))
            paragraph = []
            if is_prose(text, min_words=3):
                chapters[-1].append(text)
        docs += [Document("austen", f"{novel}/{i:03d}", tuple(ch)) for i, ch in enumerate(chapters) if ch]
    return docs


# ---------------------------------------------------------------- WordNet 3.0 database files

LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
    "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
    "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
    "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
)
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")


@dataclass(frozen=True)
class Synset:
    """One WordNet synset: its lexicographer file, words, definition and usage examples."""

    key: str
    lexname: str
    words: tuple[str, ...]
    definition: str
    examples: tuple[str, ...]


def _parse_gloss(gloss: str) -> tuple[str, tuple[str, ...]]:
    parts = [p.strip() for p in re.split(r';\s*(?=")', gloss)]
    definition = parts[0].rstrip(";").strip()
    examples = tuple(p.strip('"; ') for p in parts[1:] if p.strip('"; '))
    return definition, examples


def read_wordnet(folder: Path) -> list[Synset]:
    """All synsets of ``data.{noun,verb,adj,adv}`` in file order (licence header lines skipped)."""
    synsets: list[Synset] = []
    for pos in ("noun", "verb", "adj", "adv"):
        for line in _only(folder, f"data.{pos}").read_text(encoding="utf-8").splitlines():
            if line.startswith(" ") or "|" not in line:
                continue
            head, gloss = line.split("|", 1)
            fields = head.split()
            count = int(fields[3], 16)
            words = tuple(_ADJ_MARKER.sub("", w).replace("_", " ") for w in fields[4:4 + 2 * count:2])
            definition, examples = _parse_gloss(gloss.strip())
            synsets.append(Synset(f"{pos}.{fields[0]}", LEXNAMES[int(fields[1])], words, definition, examples))
    return synsets


def wordnet_documents(synsets: list[Synset], per_document: int = 100) -> list[Document]:
    """Glosses as prose (definition, then examples), ``per_document`` synsets of one lexicographer file each."""
    docs: list[Document] = []
    group: list[str] = []
    for i, synset in enumerate(synsets):
        text = normalise_space(". ".join([synset.definition, *synset.examples]))
        group.append(text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else "."))
        last = i + 1 == len(synsets) or synsets[i + 1].lexname != synset.lexname
        if last or len(group) == per_document:
            docs.append(Document("wordnet", f"{synset.lexname}/{synset.key}", tuple(group)))
            group = []
    return docs


# ---------------------------------------------------------------- SWORD zText Bible modules

@dataclass(frozen=True)
class Verse:
    """One Bible verse: its OSIS reference (``Gen.1.1``) and plain text."""

    ref: str
    text: str

    @property
    def chapter(self) -> str:
        """``Book.Chapter`` of the verse."""
        return self.ref.rsplit(".", 1)[0]


_CHAPTER_TAG = re.compile(r'<chapter\b[^>]*\bosisID="([^".]+)\.(\d+)"')


def _ztext_entries(folder: Path, testament: str) -> Iterator[str]:
    """The decoded entries of one testament of a SWORD zText module, in index order."""
    blocks_raw = _only(folder, f"{testament}.bzs").read_bytes()
    verses_raw = _only(folder, f"{testament}.bzv").read_bytes()
    data = _only(folder, f"{testament}.bzz").read_bytes()
    blocks = [struct.unpack_from("<III", blocks_raw, i) for i in range(0, len(blocks_raw), 12)]
    cache: dict[int, bytes] = {}
    for i in range(0, len(verses_raw), 10):
        block, offset, size = struct.unpack_from("<IIH", verses_raw, i)
        if size == 0:
            yield ""
            continue
        if block not in cache:
            start, length, _ = blocks[block]
            cache.clear()
            cache[block] = zlib.decompress(data[start:start + length])
        yield cache[block][offset:offset + size].decode("utf-8")


def read_sword(folder: Path) -> list[Verse]:
    """Verses of a SWORD zText module; references come from the OSIS chapter markers it carries."""
    verses: list[Verse] = []
    for testament in ("ot", "nt"):
        if not list(folder.rglob(f"{testament}.bzv")):
            continue
        book_chapter, number = "", 0
        for entry in _ztext_entries(folder, testament):
            marker = _CHAPTER_TAG.search(entry)
            if marker and 'eID="' not in marker.group(0):
                book_chapter, number = f"{marker.group(1)}.{marker.group(2)}", 0
                continue
            if not book_chapter:
                continue
            number += 1
            text = strip_osis(entry)
            if text:
                verses.append(Verse(f"{book_chapter}.{number}", text))
    return verses


def bible_documents(source: str, verses: list[Verse]) -> list[Document]:
    """One document per chapter, one paragraph per verse."""
    chapters: dict[str, list[str]] = {}
    for verse in verses:
        chapters.setdefault(verse.chapter, []).append(verse.text)
    return [Document(source, chapter, tuple(texts)) for chapter, texts in chapters.items()]


# ---------------------------------------------------------------- labelled sources

def read_rotten_tomatoes(folder: Path) -> list[dict[str, str]]:
    """Critics' snippets labelled ``fresh`` or ``rotten`` (plot summaries dropped): text, category, movie."""
    with bz2.open(_only(folder, "rotten_tomatoes_corpus_full.csv.bz2"), "rt", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [{"text": normalise_space(r["text"]), "category": r["category"], "movie": r["movie_name"]}
            for r in rows if r["category"] in {"fresh", "rotten"} and r["text"].strip()]


_VADER_DOMAINS = {"movieReviewSnippets": "movies", "tweets": "tweets", "amazonReviewSnippets": "amazon",
                  "nytEditorialSnippets": "nyt"}


def read_vader(folder: Path) -> list[dict[str, str | float]]:
    """VADER ground-truth snippets: id, domain, text and the mean human sentiment score."""
    rows: list[dict[str, str | float]] = []
    with tarfile.open(_only(folder, "hutto_ICWSM_2014.tar.gz")) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            stem = Path(member.name).name.removesuffix("_GroundTruth.txt")
            if stem not in _VADER_DOMAINS or not member.name.endswith("_GroundTruth.txt"):
                continue
            handle = tar.extractfile(member)
            assert handle is not None
            text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace").read().lstrip("\ufeff")
            for line in text.splitlines():
                parts = line.split("\t", 2)
                if len(parts) == 3 and parts[2].strip():
                    rows.append({"id": f"{_VADER_DOMAINS[stem]}:{parts[0].strip()}", "domain": _VADER_DOMAINS[stem],
                                 "text": normalise_space(parts[2]), "score": float(parts[1])})
    return rows
