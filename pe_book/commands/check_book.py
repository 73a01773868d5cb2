"""``pe-book check-book``: open every page of the built book in headless Chromium and check it
(:func:`pe_book.publishing.book_check.check_book`: figures, mathematics, links, offline, console, text, width);
one line per page, and exit status 1 when any page fails (``make check-book``)."""
from __future__ import annotations

import argparse
import time
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``check-book`` subcommand's arguments."""
    from pe_book.publishing.book_check import DEFAULT_HTML, DEFAULT_SHOTS

    parser.add_argument("--html", type=Path, default=DEFAULT_HTML, help="the built book (default: book/_build/html)")
    parser.add_argument("--screenshots", type=Path, default=DEFAULT_SHOTS,
                        help="where the screenshots and report.json go (default: book/_build/screenshots)")


def run(args: argparse.Namespace) -> int:
    """Check every page; print each page's counts and problems, then the totals."""
    from pe_book.publishing.book_check import check_book

    start = time.perf_counter()
    reports = check_book(args.html, args.screenshots)
    for r in reports:
        status = "ok  " if r.ok else "FAIL"
        print(f"{status} {r.page}: {r.images} images, {r.math} math, {r.links} local links")
        for problem in r.problems:
            print(f"       {problem}")
    failed = [r for r in reports if not r.ok]
    print(f"{len(reports)} pages, {len(failed)} failed, screenshots in {args.screenshots} "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0
