"""``pe-book data``: fetch and prepare the corpus, tokenizer and tasks; ``--list`` shows what is cached.

A thin layer over :mod:`pe_lib.data` (:func:`pe_lib.data.prepare.prepare_all`, the sources and the
cache): what to prepare, and the summary in words or JSON."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pe_lib.data.archives import ArchiveError
from pe_lib.data.cache import CacheError, cache_root, read_json
from pe_lib.data.hub import SOURCE_CHOICES
from pe_lib.data.prepare import prepare_all, valid_targets
from pe_lib.data.sources import SOURCES, SourceUnavailable, source_state
from pe_lib.data.tokenizer import DEFAULT_VOCAB_SIZE
from pe_lib.pretrained_pes import POSITION_TABLES


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``data`` subcommand's arguments."""
    parser.add_argument("--list", action="store_true", help="list every source, its state and size, and exit")
    parser.add_argument("--cache", metavar="DIR", default=None,
                        help="cache folder (default: $PE_LIB_CACHE or ~/.cache/pe-book)")
    parser.add_argument("--only", nargs="+", metavar="NAME", default=None,
                        help=f"prepare only these: {', '.join(valid_targets())}")
    parser.add_argument("--source", choices=SOURCE_CHOICES, default="packaged",
                        help="where the corpus, tokenizer and tasks come from (default: packaged)")
    parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE,
                        help=f"WordPiece vocabulary size (default {DEFAULT_VOCAB_SIZE})")
    parser.add_argument("--position-tables", nargs="?", const=f"results/{POSITION_TABLES}", metavar="DIR",
                        help="only write the packaged real models' position tables (chapter 10) into DIR "
                             f"(default results/{POSITION_TABLES}, where the book reads them: it fetches no "
                             "package then), reading them from the cache or their packages")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _size(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MiB" if n_bytes else "-"


def list_sources(cache: str | None) -> str:
    """A table of every source (state, size, what is fetched, licence) and every prepared artefact."""
    root = cache_root(cache)
    rows = [("NAME", "KIND", "STATE", "SIZE", "FETCHED AS", "LICENCE")]
    for name, src in SOURCES.items():
        state, size = source_state(name, root)
        fetched = f"{src.method}: {src.requirement}"
        rows.append((name, src.kind, state, _size(size), fetched, src.licence))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [f"cache: {root}", *("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[5] for r in rows)]
    prepared = sorted(p for p in (root / "prepared").iterdir() if (p / "card.json").exists())
    lines.append("")
    lines.append(f"prepared artefacts ({len(prepared)}):" if prepared else "prepared artefacts: none")
    for folder in prepared:
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        lines.append(f"  {folder.name.ljust(44)} {_size(size)}  ({read_json(folder / 'card.json').get('origin', '')})")
    return "\n".join(lines)


def _report(summary: dict) -> str:  # type: ignore[type-arg]
    lines = [f"cache: {summary['cache']}", f"sources ready: {len(summary['sources'])}"]
    if "corpus" in summary:
        words = summary["corpus"]["words"]
        lines.append(f"corpus ({summary['corpus']['origin']}): {words['train']:,} train + "
                     f"{words['validation']:,} validation words  [{Path(summary['corpus']['folder']).name}]")
    if "tokenizer" in summary:
        tokens = summary["tokenizer"]["corpus_tokens"]
        lines.append(f"tokenizer: WordPiece {summary['tokenizer']['vocab_size']} -> corpus {tokens['train']:,} train + "
                     f"{tokens['validation']:,} validation tokens; bert-base-uncased vocab "
                     f"{summary['bert_vocab_size']:,}")
    for name, info in summary["tasks"].items():
        if isinstance(info, str):
            lines.append(f"task {name}: {info}")
            continue
        sizes = ", ".join(f"{s} {v['examples']:,}" for s, v in info["splits"].items())
        lines.append(f"task {name} ({info['origin']}): {sizes}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``pe-book data``; errors are one line on stderr and exit status 1."""
    try:
        if args.list:
            print(list_sources(args.cache))
            return 0
        if args.position_tables:
            from pe_lib.pretrained_pes import packaged_names, store_position_tables

            for folder in store_position_tables(packaged_names(), args.position_tables, args.cache):
                print(folder)
            return 0
        start = time.perf_counter()
        summary = prepare_all(args.cache, args.source, args.vocab_size, args.only, progress=not args.no_progress)
        summary["wall_seconds"] = round(time.perf_counter() - start, 1)
    except (SourceUnavailable, CacheError, ArchiveError, ValueError) as exc:
        print(f"pe-book data: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2) if args.json else f"{_report(summary)}\ndone in {summary['wall_seconds']} s")
    return 0
