"""``pe-book run``: compute every artifact of a profile that the store lacks (pretraining, analysis,
fine-tuning), and print the wall time of each stage; ``--dry-run`` only lists what is stored and
what would be computed."""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from pe_book.commands.common import BadOptionValue, add_profile, add_set, positive_int
from pe_book.experiments.cards import CARDS
from pe_lib.errors import InputError


def configure(parser) -> None:
    add_profile(parser)
    parser.add_argument("--variants", nargs="+", metavar="V", help="only these variants (default: the profile's)")
    parser.add_argument("--tasks", nargs="+", metavar="T", help="only these tasks (default: the profile's)")
    add_set(parser)
    parser.add_argument("--pretrain-seeds", type=positive_int, metavar="N",
                        help="at most the first N pretraining seeds of each variant (default: the profile's); "
                             "their artifacts keep their keys")
    parser.add_argument("--results", default="results", help="artifact store folder (default: results/)")
    parser.add_argument("--work", help="folder for checkpoints and token blocks (default: <cache>/runs)")
    parser.add_argument("--dry-run", action="store_true",
                        help="list what is stored and what would be computed, per variant and stage; compute nothing")
    parser.add_argument("--estimate-from", metavar="PROFILE",
                        help="with --dry-run: the hours of what is to compute, at the rates measured by the stored "
                             "artifacts of PROFILE (the same model and recipe on this machine type; e.g. scale)")
    parser.add_argument("--stop-after", type=positive_int, metavar="SECONDS",
                        help="end the run before a model whose missing artifacts (pretraining, analysis, "
                             "fine-tunings) would not finish within SECONDS, at the rates this profile's stored "
                             "artifacts measured, so that no partial run is lost")
    parser.add_argument("--card", choices=sorted(CARDS), metavar="CARD",
                        help="with --dry-run: the GPU-hours and memory per device of every model of the profile on "
                             f"this card ({', '.join(sorted(CARDS))}): at the rate results/bench.json measured on it, "
                             "else at a stated share of its peak")
    parser.add_argument("--devices", type=positive_int, default=1, metavar="N",
                        help="with --card: the number of cards the global batch is split over (default 1)")
    parser.add_argument("--record-data", action="store_true",
                        help="only write the profile's data record beside its results (<results>/<folder>/data/: "
                             "fingerprints, tokenizer, task sizes; a book from stored results then needs no data); "
                             "a run without --set or --tasks writes it too")
    parser.add_argument("--check", action="store_true",
                        help="with --dry-run: exit 1 when a stored artifact is not one this code would read "
                             "(an orphan: its key no longer matches, e.g. another machine's tokenizer)")


def run(args) -> int:
    from pe_book.experiments import costs
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.overrides import with_overrides
    from pe_book.experiments.runner import Runner
    from pe_book.experiments.stored_data import record_data, recorded_tasks
    from pe_lib.data.tasks import get_task
    from pe_lib.positions import parse_variant

    check_named_once("--variants", args.variants, lambda name: parse_variant(name).name)
    check_named_once("--tasks", args.tasks, lambda name: get_task(name).meta.name)
    profile = with_overrides(get_profile(args.profile), args.overrides)
    if (args.card or args.devices != 1) and not args.dry_run:
        raise InputError("--card and --devices go with --dry-run")
    if args.card:  # from the profile alone: printed even where its data cannot be loaded
        print_card_estimate(profile, args.card, args.devices, Path(args.results) / "bench.json")
    unavailable = check_tasks_available(profile, args.tasks)
    runner = Runner(profile.with_first_pretrain_seeds(args.pretrain_seeds, args.variants) if args.pretrain_seeds else profile,
                    args.results, args.work, args.cache, progress=not args.no_progress)
    absent = absent_results(runner)
    if args.dry_run:
        if absent:
            print(f"note: {absent}; everything below is counted as to compute")
        return dry_run(runner, args.variants, args.tasks, args.check, args.estimate_from,
                       whole=runner.with_profile(profile) if args.pretrain_seeds else None, unavailable=unavailable)
    if args.check or args.estimate_from:
        raise InputError(f"{'--check' if args.check else '--estimate-from'} goes with --dry-run")
    if absent and profile.name in published_profiles() and not runner.store.root.is_dir():
        raise InputError(f"{absent}; to compute them all here anyway (many hours), create the folder first: "
                         f"mkdir -p {runner.store.root}")
    if not args.record_data:
        check_committed(profile)
    tasks = [t for t in recorded_tasks(profile) if t not in unavailable]  # the data record's
    if args.record_data:
        print(f"profile {args.profile}: data record in {record_data(runner, tasks)}")
        return 0
    stop = costs.stop_when_out_of_time(runner, args.stop_after) if args.stop_after else None
    timings = runner.run(args.variants, args.tasks, stop)
    if not (args.overrides or args.tasks):  # the profile's own data, all its tasks: after the run, which
        record_data(runner, tasks)          # refuses an unwritable store first
    print(f"profile {args.profile}: artifacts in {runner.store.root}" + (f" ({runner.stopped})" if runner.stopped else ""))
    for stage, seconds in timings.items():
        print(f"  {stage:10s} {seconds:8.1f} s")
    return 0


def check_named_once(option: str, names: list[str] | None, canonical: Callable[[str], str]) -> None:
    """Refuse, in one line, an option that names one variant or task twice (``ape-sin+rpe-learned``
    and ``rpe-learned+ape-sin`` are one variant): its artifacts would be counted twice."""
    names = names or []
    canonical_names = [canonical(name) for name in names]
    repeated = [c for i, c in enumerate(canonical_names) if c in canonical_names[:i]]
    if repeated:
        spelled = ", ".join(name for name, c in zip(names, canonical_names) if c == repeated[0])
        raise BadOptionValue(option, f"{repeated[0]} is named more than once ({spelled}); name each once")


def published_profiles() -> set[str]:
    """The profiles whose results the published book reads (committed in the repository's ``results/``)."""
    from pe_book.publishing.book import BOOK_PROFILES
    from pe_book.commands.common import PUBLISHED_PROFILE

    return {value for params in BOOK_PROFILES[PUBLISHED_PROFILE].values() for key, value in params.items()
            if key == "profile" or key.endswith(("_profile", "_reference"))}


def absent_results(runner) -> str | None:
    """Why ``runner``'s store holds none of its profile's artifacts, in words, or None when it holds some."""
    root = runner.store.root
    if root.is_dir() and runner.store.artifact_folders():
        return None
    where = "does not exist" if not root.is_dir() else "holds no artifact"
    published = (" (the published profiles' results are committed in the repository's results/: run from a clone's "
                 "root, or give --results CLONE/results)") if runner.profile.name in published_profiles() else ""
    return f"{root} {where}{published}"


def check_committed(profile) -> None:
    """Refuse, in one line, to compute a published profile's artifacts from uncommitted code: each
    records its commit, and a ``-dirty`` one names code nobody can recover."""
    from pe_book.experiments.store import git_commit

    if profile.committed_code_only and git_commit().endswith("-dirty"):
        raise InputError(f"profile {profile.name} is computed from committed code only, and the working tree has "
                         "uncommitted changes (git status): commit or stash them first")


def check_tasks_available(profile, tasks: list[str] | None) -> list[str]:
    """Refuse, in one line, to run a task that cannot be loaded here: one with no packaged offline
    analogue while the hub is off (``HF_DATASETS_OFFLINE``/``HF_HUB_OFFLINE``, or the profile's
    ``data_source`` packaged). Returns the profile's tasks (and recorded tasks) that cannot be loaded (outside ``tasks``)."""
    from pe_lib.data.cache import is_offline
    from pe_lib.data.tasks import get_task

    if not (profile.data_source == "packaged" or (profile.data_source == "auto" and is_offline())):
        return []
    without = [t for t in (*profile.tasks, *profile.recorded_tasks) if get_task(t).packaged is None]
    asked = [get_task(t).meta.name for t in tasks] if tasks else list(profile.tasks)
    refused = [t for t in asked if get_task(t).packaged is None]
    if refused:
        runnable = [t for t in profile.tasks if t not in without]
        raise InputError(f"profile {profile.name}: {', '.join(refused)} ha{'s' if len(refused) == 1 else 've'} no packaged "
                         "offline analogue and the hub is off (HF_DATASETS_OFFLINE/HF_HUB_OFFLINE or data_source "
                         f"packaged); go online, or run the others: --tasks {' '.join(runnable)}")
    return without


def dry_run(runner, variants, tasks, check: bool, estimate_from: str | None = None, whole=None,
            unavailable: list[str] = ()) -> int:
    """Per variant, each stage kind's count stored / to compute; the orphans (what no artifact of the
    whole profile names, whichever variants, tasks and seeds this run is restricted to; ``whole``: a
    runner of that profile when ``runner``'s has fewer pretraining seeds; the profile's tasks that
    cannot be loaded here, ``unavailable``, are left out of that plan, and their artifacts out of
    the orphans); with ``check``, a data record that the data read here contradicts
    (:func:`~pe_book.experiments.stored_data.record_differences`); with ``estimate_from`` the hours of
    what is to compute; last, ``N stored, M to compute``."""
    from pe_book.experiments import costs
    from pe_book.experiments.stored_data import RECORD, record_differences

    planned = runner.plan(variants, tasks)
    by_variant: dict[str, Counter] = defaultdict(Counter)
    for a in planned:
        by_variant[a.variant][(costs.stage_kind(a.stage), a.stored)] += 1
    print(f"profile {runner.profile.name}: artifacts in {runner.store.root}")
    for variant, counts in by_variant.items():
        kinds = dict.fromkeys(kind for kind, _ in counts)
        parts = [f"{kind} {counts[(kind, True)]} stored" + (f" / {counts[(kind, False)]} to compute" if counts[(kind, False)] else "")
                 for kind in kinds]
        print(f"  {variant:34s} " + "; ".join(parts))
    restricted = whole is not None or variants or tasks
    everything = whole or runner
    loadable = [t for t in everything.profile.tasks if t not in unavailable]
    orphans = [folder for folder in runner.orphans(everything.plan(tasks=loadable) if restricted else planned)
               if not any(f"-{task}-" in folder.name for task in unavailable)]
    if unavailable:
        print(f"  not checked for orphans (no offline analogue): {', '.join(unavailable)}")
    for folder in orphans:
        print(f"  orphan (no key of this code names it): {folder}")
    if estimate_from:
        print_estimate(runner, planned, estimate_from)
    stale = record_differences(runner) if check else []
    if stale:
        print(f"  stale data record (it differs from the data read here in {', '.join(stale)}): {runner.store.root / RECORD}; "
              f"write it again with `pe-book run --profile {runner.profile.name} --record-data`")
    stored = sum(a.stored for a in planned)
    print(f"{stored} stored, {len(planned) - stored} to compute" + (f", {len(orphans)} orphaned" if orphans else ""))
    return 1 if check and (orphans or stale) else 0


def print_estimate(runner, planned, calibration: str) -> None:
    """The expected hours per stage, at the rates of the ``calibration`` profile's stored artifacts."""
    from pe_book.experiments import costs
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.store import Store

    store = Store(runner.store.root.parent, get_profile(calibration).results_folder)
    if not store.artifact_folders():
        raise InputError(f"--estimate-from {calibration}: no stored artifacts in {store.root} to measure rates on")
    table = costs.estimate(runner, planned, costs.measured_rates(store))
    print(f"expected hours at the rates measured by {store.root} (unknown: no measured rate):")
    for row in table.itertuples():
        unknown = f" ({row.unknown} unknown)" if row.unknown else ""
        print(f"  {row.Index:14s} {row[1]:5d} to compute  {row.hours:7.2f} h{unknown}")


def print_card_estimate(profile, card: str, devices: int, bench: Path) -> None:
    """The GPU-hours and memory per device of every model of ``profile`` on ``devices`` cards
    (:func:`pe_book.experiments.costs.card_estimate`), at the rates ``bench`` measured where it has any."""
    import json

    from pe_book.experiments import costs

    e = costs.card_estimate(profile, CARDS[card], devices, json.loads(bench.read_text()) if bench.is_file() else None)
    fits = "fits" if e.memory_gib <= e.card.memory_gib else (
        "does not fit: raise --set pretrain.accumulation_steps=N, or --set pretrain.activation_checkpointing=true")
    precision = "fp32" if profile.pretrain.precision == "fp32" else "bf16"
    print(f"on {devices} x {e.card.name} ({e.card.memory_gib:.0f} GiB, {e.card.bf16_tflops:.0f} bf16 TFLOP/s dense), "
          f"every model of profile {profile.name} ({e.models} pretrainings of {profile.pretrain.steps:,} steps):")
    print(f"  memory per device {e.memory_gib:.1f} GiB of {e.card.memory_gib:.0f}, {fits}: {e.state_gib:.1f} model states "
          f"({costs.STATE_BYTES} bytes a parameter: fp32 weights, gradients, AdamW moments), {e.activation_gib:.1f} "
          f"activations (micro-batch {e.micro_batch} x {profile.seq_len} tokens, {precision}; Korthikanti et al. 2022), "
          f"{e.logits_gib:.1f} MLM logits")
    total = e.pretrain_hours + e.finetune_hours
    print(f"  GPU-hours {total:,.1f}: pretraining {e.pretrain_hours:,.1f}, fine-tuning {e.finetune_hours:,.1f} (padding "
          f"counted: an upper bound); {total / devices:,.1f} h of wall time")
    print(f"  rate: {e.rate}")
