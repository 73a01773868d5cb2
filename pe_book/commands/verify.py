"""``pe-book verify``: recompute one variant of a profile from scratch and compare every number with
the committed artifacts (``make verify-results VARIANT=...``).

Everything the runner computes for the variant (pretraining, analysis, extrapolation, fine-tuning;
``--pretrain-seeds N``: of its first N pretrained models only) is recomputed into a scratch folder, with a scratch work folder (no checkpoint or token block is
reused; the data cache is). Each committed artifact is then compared number by number with its
recomputed twin: payload values and arrays, all but wall-clock timings. Each difference is printed,
a float's with how many float64 steps (ulp) it moved; on another machine type than the one that
produced the committed results, after a warning that names the variants the store holds from this
machine's type.
"""
from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pe_book.commands.common import PUBLISHED_PROFILE, add_profile, positive_int
from pe_lib.errors import InputError

#: Payload keys that measure time, not results: never compared.
TIMING_KEYS = frozenset({"wall_s", "elapsed_s", "tokens_per_s"})

#: Two floats at most this many float64 steps apart differ by rounding (a reordered sum moves its
#: result a few steps); a drift through training moves them by millions.
ROUNDING_ULPS = 16


def configure(parser) -> None:
    parser.add_argument("--variant", required=True, help="the variant to recompute, e.g. ape-learned")
    add_profile(parser, default=PUBLISHED_PROFILE)  # the profile whose results are committed
    parser.add_argument("--results", default="results", help="the committed artifact store (default: results/)")
    parser.add_argument("--scratch", help="folder for the recomputation (default: a temporary folder, removed after)")
    parser.add_argument("--pretrain-seeds", type=positive_int, metavar="N",
                        help="recompute only the variant's first N pretraining seeds (default: all of the profile's)")


def run(args) -> int:
    from pe_book.experiments.profiles import get_profile
    from pe_book.experiments.runner import Runner

    profile = get_profile(args.profile)
    if args.pretrain_seeds:
        profile = first_seeds(profile, args.variant, args.pretrain_seeds)
    committed = Runner(profile, args.results, cache_dir=args.cache, progress=False)
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        fresh = Runner(profile, Path(scratch) / "results", Path(scratch) / "work", args.cache, progress=not args.no_progress)
        return 1 if verify_variant(committed, fresh, args.variant) else 0


def first_seeds(profile, variant: str, n: int):
    """``profile`` with only the first ``n`` pretraining seeds of ``variant``; more than it has is an error."""
    have = len(profile.pretrain_seeds_for(variant))
    if n > have:
        raise InputError(f"--pretrain-seeds {n}: {variant} has {have} pretraining seed(s) in profile {profile.name}")
    return profile.with_first_pretrain_seeds(n, [variant])


def verify_variant(committed, fresh, variant: str, out=print, machine: Mapping | None = None) -> int:
    """Recompute ``variant`` (and the profile's baselines) with the ``fresh`` runner (an empty store
    and work folder) and compare each artifact that ``committed`` holds; print the machines, a line
    per artifact and per difference (at most 20 each); return the number of differences.
    ``machine``: this machine's :func:`~pe_book.experiments.store.hardware` record (default: read)."""
    from pe_book.chapters.pretraining import machine_name, machines_text
    from pe_book.experiments.store import hardware, same_machine_type

    machine = hardware() if machine is None else machine
    planned = committed.plan([variant])
    stored = [(a, _load(committed, a)) for a in planned if a.stored]
    if not stored:
        raise InputError(f"nothing of {variant!r} is committed in {committed.store.root}; "
                         f"run `pe-book run --profile {committed.profile.name} --dry-run` to see what is")
    own = [found.provenance for a, found in stored if a.variant == variant]
    out(f"committed: computed on {machines_text(own)}")
    out(f"this machine: {machine_name(machine)}")
    if not all(same_machine_type(p["hardware"], machine) for p in own):
        here = variants_computed_on(committed.store, machine)
        out(f"warning: {variant} was computed on another machine type; its floating-point kernels differ from this "
            "one's, so expect differences that grow through training. Bit-identical training is promised on the "
            f"type that computed them (float64 statistics within a few ulp: numpy's BLAS kernel); of this store, {', '.join(here) if here else 'no variant'} was computed on this one.")
    fresh.run([variant])
    differences = rounding = 0
    for artifact, found in stored:
        diffs = list(compare(_compared(found), _compared(_load(fresh, artifact))))
        steps = [ulps_apart(a, b) if isinstance(a, float) and isinstance(b, float) else None for _, a, b in diffs]
        differences += len(diffs)
        rounding += sum(s is not None and s <= ROUNDING_ULPS for s in steps)
        out(f"{artifact.stage:28s} {'identical' if not diffs else f'{len(diffs)} differences'}")
        for (path, a, b), s in list(zip(diffs, steps))[:20]:
            out(f"    {path}: committed {a!r}, recomputed {b!r}" + (f" ({s} ulp)" if s is not None else ""))
    missing = len(planned) - len(stored)
    out(f"{len(stored)} artifacts compared, {differences} differences" +
        (f", {rounding} of them rounding (floats at most {ROUNDING_ULPS} ulp apart)" if rounding else "") +
        (f" ({missing} planned artifacts are not committed)" if missing else ""))
    return differences


def ulps_apart(a: float, b: float) -> int:
    """How many float64 steps separate ``a`` and ``b`` (0 when equal; 1 for neighbours)."""
    def ordered(x: float) -> int:  # the float64 bits as an integer that grows with x
        bits = int(np.float64(x).view(np.int64))
        return bits if bits >= 0 else -(bits & 0x7FFF_FFFF_FFFF_FFFF)
    return abs(ordered(a) - ordered(b))


def variants_computed_on(store, machine: Mapping) -> list[str]:
    """The variants of ``store`` whose every pretraining was computed on ``machine``'s type (each read
    through its manifest: a damaged one is named in a warning and left out)."""
    from pe_book.experiments.store import same_machine_type

    types: dict[str, set[bool]] = {}
    for folder in store.artifact_folders():
        artifact = store.read(folder) if folder.name.startswith("pretrain-") else None
        if artifact is not None:
            same = same_machine_type(artifact.provenance["hardware"], machine)
            types.setdefault(folder.parent.name, set()).add(same)
    return sorted(variant for variant, same in types.items() if same == {True})


def _load(runner, artifact):
    found = runner.store.load(artifact.variant, artifact.stage, artifact.config)
    if found is None:
        raise InputError(f"{artifact.stage} of {artifact.variant} was not recomputed under the same key")
    return found


def _compared(artifact) -> dict[str, Any]:
    """What of an artifact is a result (its provenance is not)."""
    return {"payload": artifact.payload, "arrays": artifact.arrays}


def compare(committed: Any, recomputed: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """``(path, committed, recomputed)`` for every value that differs (timings skipped; NaN equals NaN;
    arrays compared element by element)."""
    if isinstance(committed, dict) and isinstance(recomputed, dict):
        for key in sorted(set(committed) | set(recomputed), key=str):
            if key in TIMING_KEYS:
                continue
            yield from compare(committed.get(key), recomputed.get(key), f"{path}.{key}" if path else str(key))
    elif isinstance(committed, list) and isinstance(recomputed, list) and len(committed) == len(recomputed):
        for i, (a, b) in enumerate(zip(committed, recomputed)):
            yield from compare(a, b, f"{path}[{i}]")
    elif isinstance(committed, np.ndarray) or isinstance(recomputed, np.ndarray):
        a, b = np.asarray(committed), np.asarray(recomputed)
        if a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            worst = float(np.nanmax(np.abs(a.astype(float) - b.astype(float)))) if a.shape == b.shape else math.nan
            yield path, f"array{a.shape}", f"array{b.shape}, max |difference| {worst:.3g}"
    elif isinstance(committed, float) and isinstance(recomputed, float):
        if not (committed == recomputed or (math.isnan(committed) and math.isnan(recomputed))):
            yield path, committed, recomputed
    elif committed != recomputed:
        yield path, committed, recomputed
