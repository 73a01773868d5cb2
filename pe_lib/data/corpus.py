"""The pretraining corpus: WikiText-103 from the hub, or an English corpus assembled from packages.

A prepared corpus is a folder ``<cache>/prepared/corpus-<origin>-<key>/`` with ``train.txt`` and
``validation.txt`` (one paragraph per line, a blank line between documents) and a data card
(``card.json``, ``card.md``). The key hashes every input's version, so a new package pin or a
new cleaning version means a rebuild, never a stale reuse.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from pe_lib.data import readers
from pe_lib.data.cache import cache_root, content_key, read_json
from pe_lib.data.cards import write_card
from pe_lib.data.hub import hub_or_packaged, load_hub_dataset
from pe_lib.data.readers import Document
from pe_lib.data.sources import get_source, source_dir
from pe_lib.io import manifested_dir, verified

#: bump when cleaning or splitting changes: it is part of every prepared corpus key
BUILD_VERSION = 1
VALIDATION_FRACTION = 0.05
SPLIT_SEED = 2021
MIN_PACKAGED_WORDS = 3_500_000
HUB_CORPUS = "wikitext-103"

_READERS: dict[str, Callable[[Path], list[Document]]] = {
    "wikipedia": readers.read_wikipedia,
    "austen": readers.read_austen,
    "wordnet": lambda folder: readers.wordnet_documents(readers.read_wordnet(folder)),
    "kjv": lambda folder: readers.bible_documents("kjv", readers.read_sword(folder)),
    "web": lambda folder: readers.bible_documents("web", readers.read_sword(folder)),
}
#: Only sources whose text stays fixed: Debian's python3.11-doc was dropped because its security
#: updates change the documentation text (deb12u8 and deb12u9 differ in four pages) and the
#: mirror keeps only the newest, so a pinned version disappears and the corpus with it.
CORPUS_SOURCES = tuple(_READERS)


@dataclass(frozen=True)
class Corpus:
    """A prepared corpus on disk: where its splits are, where it came from, and its data card."""

    folder: Path
    origin: str
    card: dict[str, Any]

    def path(self, split: str) -> Path:
        """``train.txt`` or ``validation.txt``."""
        if split not in ("train", "validation"):
            raise ValueError(f"corpus split must be 'train' or 'validation', not {split!r}")
        return self.folder / f"{split}.txt"

    def lines(self, split: str) -> Iterator[str]:
        """The non-empty paragraph lines of a split."""
        with open(self.path(split), encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield line.rstrip("\n")

    def documents(self, split: str) -> Iterator[list[str]]:
        """The documents of a split, each a list of paragraphs."""
        doc: list[str] = []
        with open(self.path(split), encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    doc.append(line.rstrip("\n"))
                elif doc:
                    yield doc
                    doc = []
        if doc:
            yield doc


def in_validation(doc: Document, fraction: float = VALIDATION_FRACTION, seed: int = SPLIT_SEED) -> bool:
    """Whether a document falls in the validation split: a pure function of its source and id."""
    digest = hashlib.sha256(f"{seed}:{doc.source}/{doc.doc_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split_documents(docs: Iterable[Document], fraction: float = VALIDATION_FRACTION,
                    seed: int = SPLIT_SEED) -> tuple[list[Document], list[Document]]:
    """(train, validation), deterministic by document; both non-empty or ValueError."""
    train: list[Document] = []
    validation: list[Document] = []
    for doc in docs:
        (validation if in_validation(doc, fraction, seed) else train).append(doc)
    if not train or not validation:
        raise ValueError(f"corpus split is empty (train {len(train)} documents, validation {len(validation)}); "
                         "it needs more documents")
    return train, validation


def packaged_documents(names: Iterable[str] = CORPUS_SOURCES,
                       cache_dir: str | os.PathLike[str] | None = None, progress: bool = True) -> list[Document]:
    """Documents of the named packaged corpus sources, fetched as needed, in a fixed order."""
    docs: list[Document] = []
    for name in tqdm(list(names), desc="reading corpus sources", unit="source", disable=not progress):
        if name not in _READERS:
            raise ValueError(f"unknown corpus source {name!r}; valid: {', '.join(CORPUS_SOURCES)}")
        found = _READERS[name](source_dir(name, cache_dir))
        if not found:
            raise ValueError(f"corpus source {name!r} gave no documents")
        docs += found
    return docs


def wikitext_documents(lines: Iterable[str], source: str = HUB_CORPUS) -> list[Document]:
    """Articles of WikiText (hub ``text`` column): a new document at each `` = Title = `` line."""
    docs: list[Document] = []
    title, paragraphs = "", []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.startswith("= ") and line.endswith(" =") and not line.startswith("= ="):
            if paragraphs:
                docs.append(Document(source, title, tuple(paragraphs)))
            title, paragraphs = line.strip("= ").strip(), []
        elif not line.startswith("= ="):
            paragraphs.append(line)
    if paragraphs:
        docs.append(Document(source, title, tuple(paragraphs)))
    return docs


def _write_split(path: Path, docs: list[Document]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write("\n".join(p.replace("\n", " ") for p in doc.paragraphs) + "\n\n")


def _count(docs: list[Document]) -> dict[str, int]:
    return {"documents": len(docs), "paragraphs": sum(len(d.paragraphs) for d in docs),
            "words": sum(len(p.split()) for d in docs for p in d.paragraphs)}


def corpus_card(origin: str, train: list[Document], validation: list[Document], names: Iterable[str]) -> dict[str, Any]:
    """Counts per source and split, with each source's package, version and licence."""
    per_source: dict[str, Any] = {}
    for name in names:
        src = get_source(name)
        per_source[name] = {
            "description": src.description, "licence": src.licence, "fetched_as": src.requirement,
            "sha256": src.sha256,
            "train": _count([d for d in train if d.source == name]),
            "validation": _count([d for d in validation if d.source == name]),
        }
    return {"kind": "corpus", "origin": origin, "split": "by document",
            "validation_fraction": VALIDATION_FRACTION if origin == "packaged" else None,
            "sources": per_source, "train": _count(train), "validation": _count(validation),
            "total_words": _count(train)["words"] + _count(validation)["words"]}


def _prepare(folder: Path, root: Path, origin: str, build: Callable[[], tuple[list[Document], list[Document]]],
             names: tuple[str, ...]) -> Corpus:
    if not verified(folder, "prepared corpus"):  # absent, or corrupt (reported): built again
        train, validation = build()
        with manifested_dir(folder, "prepared corpus") as work:
            _write_split(work / "train.txt", train)
            _write_split(work / "validation.txt", validation)
            write_card(work, corpus_card(origin, train, validation, names), title=f"Corpus ({origin})")
    return Corpus(folder, origin, read_json(folder / "card.json"))


def packaged_corpus(cache_dir: str | os.PathLike[str] | None = None,
                    names: tuple[str, ...] = CORPUS_SOURCES, min_words: int | None = None,
                    progress: bool = True) -> Corpus:
    """The offline corpus assembled from packaged sources (prepared once, then reused).

    Building fails when the sources hold fewer than ``min_words`` (default
    :data:`MIN_PACKAGED_WORDS`) words.
    """
    needed = MIN_PACKAGED_WORDS if min_words is None else min_words
    root = cache_root(cache_dir)
    key = content_key({"sources": {n: get_source(n).sha256 for n in names}, "version": BUILD_VERSION,
                       "fraction": VALIDATION_FRACTION, "seed": SPLIT_SEED})

    def build() -> tuple[list[Document], list[Document]]:
        docs = packaged_documents(names, root, progress)
        words = sum(len(p.split()) for d in docs for p in d.paragraphs)
        if words < needed:
            raise ValueError(f"packaged corpus has {words:,} words, fewer than the {needed:,} required")
        return split_documents(docs)

    return _prepare(root / "prepared" / f"corpus-packaged-{key}", root, "packaged", build, names)


def hub_corpus(cache_dir: str | os.PathLike[str] | None = None) -> Corpus:
    """WikiText-103 (raw) from the hub, using its own train/validation article split."""
    root = cache_root(cache_dir)
    src = get_source(HUB_CORPUS)
    key = content_key({"hub": src.requirement, "version": BUILD_VERSION})

    def build() -> tuple[list[Document], list[Document]]:
        data = load_hub_dataset(src)
        train = wikitext_documents(data["train"]["text"])
        validation = wikitext_documents(data["validation"]["text"])
        if not train or not validation:
            raise ValueError(f"hub corpus {src.requirement} has an empty split")
        return train, validation

    return _prepare(root / "prepared" / f"corpus-{HUB_CORPUS}-{key}", root, f"hub:{src.requirement}", build,
                    (HUB_CORPUS,))


def load_corpus(source: str = "auto", cache_dir: str | os.PathLike[str] | None = None,
                progress: bool = True) -> Corpus:
    """The pretraining corpus: WikiText-103 from the hub when reachable, else the packaged corpus
    (``progress=False``: no progress bars while it is prepared)."""
    corpus, _ = hub_or_packaged("corpus", get_source(HUB_CORPUS), lambda: hub_corpus(cache_dir),
                                lambda: packaged_corpus(cache_dir, progress=progress), source)
    return corpus
