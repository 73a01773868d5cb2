"""``pe-book design``: the design of a run from its pilot (:func:`pe_book.design.from_pilot`): seeds
per variant by the power of the verdict rule per claim at the pilot's variances, within a budget of
hours priced at the rates a stored profile measured; ``--write`` commits it to the run's results
folder as ``design.json``, refused once the run has begun (a design is chosen before its run)."""
from __future__ import annotations

from pe_book.commands.common import add_profile, positive_float


def configure(parser) -> None:
    add_profile(parser)
    from pe_book.experiments.profiles import PROFILES

    parser.add_argument("--pilot", required=True, choices=sorted(PROFILES), help="the profile whose stored results are the pilot")
    parser.add_argument("--budget", type=positive_float, required=True, help="hours of compute the run may take")
    parser.add_argument("--estimate-from", required=True, choices=sorted(PROFILES), metavar="PROFILE",
                        help="the profile whose stored artifacts measured the rates (same model and machine type)")
    parser.add_argument("--held-in", nargs="*", default=[], choices=sorted(PROFILES), metavar="PROFILE",
                        help="profiles (besides the pilot) whose stores hold models under the run's keys, counted as done")
    parser.add_argument("--results", default="results", help="artifact store folder (default: results/)")
    parser.add_argument("--write", action="store_true", help="write design.json into the run's results folder")


def run(args) -> int:
    import json

    from pe_book.design import from_pilot
    from pe_book.experiments import costs
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.results import Results
    from pe_book.experiments.store import Store, git_commit, hardware
    from pe_lib.errors import InputError
    from pe_lib.io import write_json

    def reader(name: str) -> Results:
        return Results(get_profile(name), args.results, cache_dir=args.cache, progress=False)

    target, pilot = reader(args.profile), reader(args.pilot)
    calibration = Store(target.store.root.parent, get_profile(args.estimate_from).results_folder)
    if not calibration.artifact_folders():
        raise InputError(f"--estimate-from {args.estimate_from}: no stored artifacts in {calibration.root} to measure rates on")
    # this machine type's rates, the others' where it measured none
    rates = costs.with_fallback(costs.measured_rates(calibration, hardware()), costs.measured_rates(calibration))
    try:
        design = from_pilot(target, pilot, rates, args.budget, [pilot] + [reader(name) for name in args.held_in])
    except InputError:
        raise
    except ValueError as error:  # a cost without a measured rate, a budget below two seeds a variant
        raise InputError(str(error)) from None
    print(json.dumps({k: design[k] for k in ("pretrain_seeds", "finetune_seeds", "hours", "claims")}, indent=1))
    if args.write:
        if any(a.stage.startswith("pretrain") for a in target.plan() if a.stored):
            raise InputError(f"{target.store.root} already holds pretraining artifacts: a design is written before its run")
        path = target.store.root / "design.json"
        write_json(path, {**design, "git_commit": git_commit(), "machine": hardware()})
        print(f"wrote {path}")
    return 0
