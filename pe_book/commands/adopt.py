"""``pe-book adopt``: take into a profile the artifacts and models another profile computed under the
same keys (:mod:`pe_book.experiments.adopt`), e.g. the scale study's models for the cpu profile, or
the cpu profile's finished runs as the first steps of the scale study's; or re-store a profile's
artifacts made under precision "auto" under the keys of the explicit precision they ran in."""
from __future__ import annotations

from pe_book.commands.common import add_profile


def configure(parser) -> None:
    add_profile(parser)
    from pe_book.experiments.profiles import PROFILES

    parser.add_argument("--from", dest="source", choices=sorted(PROFILES),
                        help="the profile whose stored artifacts, saved models and finished runs are taken (e.g. scale)")
    parser.add_argument("--rekey-auto-precision", action="store_true",
                        help="re-store the profile's artifacts made under precision 'auto' under its explicit precision's keys "
                             "(refused unless they ran in it)")
    parser.add_argument("--results", default="results", help="artifact store folder of both (default: results/)")
    parser.add_argument("--work", help="folder for checkpoints and models of both (default: <cache>/runs)")


def run(args) -> int:
    from pe_book.experiments.adopt import adopt, rekey_auto_precision
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner
    from pe_lib.errors import InputError

    if args.source is None and not args.rekey_auto_precision:
        raise InputError("pe-book adopt: give --from PROFILE, --rekey-auto-precision, or both")
    target = Runner(get_profile(args.profile), args.results, args.work, args.cache, progress=False)
    with target.store.lock():
        if args.rekey_auto_precision:
            rekeyed = rekey_auto_precision(target)
            print(f"profile {args.profile}: {len(rekeyed)} artifacts re-stored under "
                  f"{target.profile.pretrain.precision} keys")
        if args.source is not None:
            done = adopt(target, Runner(get_profile(args.source), args.results, args.work, args.cache, progress=False))
            print(f"profile {args.profile}: {len(done.artifacts)} artifacts and {len(done.models)} models taken from "
                  f"{args.source}; {len(done.extended)} runs begin from its finished runs")
            for path in done.artifacts + done.models + done.extended:
                print(f"  {path}")
    return 0
