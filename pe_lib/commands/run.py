"""``pe-lib run``: compute every artifact of a profile that the store lacks (pretraining, analysis,
fine-tuning), and print the wall time of each stage."""
from __future__ import annotations

from pe_lib.commands.common import add_profile


def configure(parser) -> None:
    add_profile(parser)
    parser.add_argument("--variants", nargs="+", metavar="V", help="only these variants (default: the profile's)")
    parser.add_argument("--tasks", nargs="+", metavar="T", help="only these tasks (default: the profile's)")
    parser.add_argument("--results", default="results", help="artifact store folder (default: results/)")
    parser.add_argument("--work", help="folder for checkpoints and token blocks (default: <cache>/runs)")


def run(args) -> int:
    from pe_lib.experiments.profiles import get_profile
    from pe_lib.experiments.runner import Runner

    runner = Runner(get_profile(args.profile), args.results, args.work, args.cache, progress=not args.no_progress)
    timings = runner.run(args.variants, args.tasks)
    print(f"profile {args.profile}: artifacts in {runner.store.root}")
    for stage, seconds in timings.items():
        print(f"  {stage:10s} {seconds:8.1f} s")
    return 0
