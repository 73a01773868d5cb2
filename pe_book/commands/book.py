"""``pe-book book [--profile P] [--only NOTEBOOK] [--no-html] [--no-compute | --stored-only]``:
run the profile's pipeline (unless ``--no-compute`` or ``--stored-only``), then execute the
notebooks, which only read, and build the Jupyter Book (:func:`pe_book.publishing.book.build`); by default the
published book's profile (:data:`~pe_book.commands.common.PUBLISHED_PROFILE`).
``pe-book book --page OUT.ipynb``: a chapter rerun by papermill as one HTML page
(:func:`pe_book.publishing.book.build_page`)."""
from __future__ import annotations

import sys
import time

from pe_book.publishing.book import BOOK_PROFILES, ROOT, BookError, build, build_page
from pe_book.commands.common import PUBLISHED_PROFILE, need_checkout


def configure(parser) -> None:
    parser.add_argument("--profile", default=PUBLISHED_PROFILE, choices=sorted(BOOK_PROFILES),
                        help=f"parameter values for the notebooks (default: {PUBLISHED_PROFILE})")
    parser.add_argument("--only", metavar="NOTEBOOK", help="execute only this notebook (e.g. 01_properties)")
    parser.add_argument("--no-html", action="store_true", help="execute the notebooks but do not build the HTML")
    parser.add_argument("--page", metavar="NOTEBOOK.ipynb",
                        help="render this executed notebook (a papermill rerun of a chapter) as one HTML page, and "
                             "nothing else")
    computing = parser.add_mutually_exclusive_group()
    computing.add_argument("--no-compute", action="store_true",
                           help="do not compute missing results first (the notebooks only read: one that "
                                "lacks a result stops with its name)")
    computing.add_argument("--stored-only", action="store_true",
                           help="compute nothing, and refuse a profile whose results are not all stored before any "
                                "notebook runs")


def run(args) -> int:
    need_checkout("pe-book book")
    start = time.perf_counter()
    try:
        if args.page:
            page = build_page(args.page)
            print(f"page: {page.relative_to(ROOT) if page.is_relative_to(ROOT) else page}")
            return 0
        index = build(args.profile, args.only, html=not args.no_html, compute=not args.no_compute,
                      stored_only=args.stored_only)
    except BookError as exc:
        print(f"pe-book book: {exc}", file=sys.stderr)
        return 1
    total = time.perf_counter() - start
    if index is not None:
        print(f"book: {index.relative_to(ROOT) if index.is_relative_to(ROOT) else index} ({total:.1f} s in all)")
    else:
        print(f"notebooks executed ({total:.1f} s in all)")
    return 0
