"""``pe-book bench``: the side-by-side benchmarks of :mod:`pe_book.bench` (``make bench``), printed and,
with ``--json``, written (atomically) where the Performance chapter reads them."""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def fraction(text: str) -> float:
    """A share in (0, 1], for ``--finetune-fraction`` (a usage error otherwise)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def stored_precision(path: str | None) -> dict | None:
    """The precision section of the benchmark file at ``path`` (None without one)."""
    return json.loads(Path(path).read_text()).get("precision") if path and Path(path).exists() else None


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``bench`` subcommand's arguments."""
    from pe_book.bench.sections import SECTIONS, Plan

    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                        help="the sections to run (default: all)")
    parser.add_argument("--seqs", nargs="+", type=int, default=Plan().seqs, help="sequence lengths for hf/variants")
    parser.add_argument("--rounds", type=int, default=Plan.rounds, help="timed steps per contender")
    parser.add_argument("--finetune-fraction", type=fraction, default=Plan.finetune_fraction,
                        help="fine-tune: share of the cpu profile's training examples a task")
    parser.add_argument("--base", default=Plan.base,
                        help="dry-run: the commit whose dry run is timed against the working tree's (default: HEAD)")
    parser.add_argument("--json", help="also write the results to this JSON file (atomically)")
    parser.add_argument("--update", action="store_true",
                        help="with --json: replace only the sections run in the existing file (the fine-tune section "
                             "records its own machine, time and commit)")


def run(args: argparse.Namespace) -> int:
    """Run ``pe-book bench``: measure, print the report, write the JSON file."""
    from pe_book.bench.report import print_report, updated
    from pe_book.bench.sections import Plan, measure
    from pe_lib.io import write_json

    plan = Plan(args.sections, args.seqs, args.rounds, args.finetune_fraction, args.base)
    result = measure(plan, stored_precision(args.json) if "precision" in plan.sections else None)
    print_report(result)
    if args.json:
        write_json(args.json, updated(args.json, result, args.sections) if args.update else result)
    return 0
