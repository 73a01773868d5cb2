"""Options shared by several subcommands."""
from __future__ import annotations

import argparse


def add_profile(parser: argparse.ArgumentParser) -> None:
    from pe_lib.experiments.profiles import PROFILES

    parser.add_argument("--profile", default="smoke", choices=sorted(PROFILES), help="experiment profile (default: smoke)")
    parser.add_argument("--cache", default=None, help="data cache folder (default: $PE_LIB_CACHE or ~/.cache/pe-book)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
