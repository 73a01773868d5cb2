"""``pe-lib adopt``: take into a profile the artifacts and models another profile computed under the
same keys (:mod:`pe_book.experiments.adopt`), e.g. the scale study's models for the cpu profile."""
from __future__ import annotations

from pe_book.commands.common import add_profile


def configure(parser) -> None:
    add_profile(parser)
    from pe_book.experiments.profiles import PROFILES

    parser.add_argument("--from", dest="source", required=True, choices=sorted(PROFILES),
                        help="the profile whose stored artifacts and saved models are taken (e.g. scale)")
    parser.add_argument("--results", default="results", help="artifact store folder of both (default: results/)")
    parser.add_argument("--work", help="folder for checkpoints and models of both (default: <cache>/runs)")


def run(args) -> int:
    from pe_book.experiments.adopt import adopt
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    target, source = (Runner(get_profile(name), args.results, args.work, args.cache, progress=False)
                      for name in (args.profile, args.source))
    with target.store.lock():
        done = adopt(target, source)
    print(f"profile {args.profile}: {len(done.artifacts)} artifacts and {len(done.models)} models taken from {args.source}")
    for path in done.artifacts + done.models:
        print(f"  {path}")
    return 0
