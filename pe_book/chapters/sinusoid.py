"""Chapter "Sinusoidal embeddings" (02): the dot product psi of sinusoidal position vectors, its
monotonic range, how the range moves with the frequencies, and what pretraining did to learnable
frequencies."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_lib.sinusoid import frequencies, integer_monotonic_range, monotonic_range

INDEXINGS = ((0, "i = 0..D/2-1 (Vaswani et al.)"), (1, "i = 1..D/2 (the paper)"))


@dataclass
class Sinusoid:
    """What the chapter shows: the vector sizes ``dims`` (label -> D), the monotonic ``ranges``
    per size and indexing, the sweep of the range over ``bases`` and frequency ``scales``
    (``sweep[label, "base" | "scale"]``: (n, 2) real and integer ranges, NaN where psi never
    turns), the ``learned`` frequencies (name -> (initial, trained)) with their ``learned_table``
    and ``cited``, by glue name."""
    dims: dict[str, int]
    ranges: pd.DataFrame
    bases: np.ndarray
    scales: np.ndarray
    sweep: dict[tuple[str, str], np.ndarray]
    learned: dict[str, tuple[np.ndarray, np.ndarray]]
    learned_table: pd.DataFrame
    cited: dict


def ranges_for(freq_sets: Sequence[np.ndarray]) -> np.ndarray:
    """Real and integer monotonic ranges for each array of frequencies: (n, 2), NaN where psi never turns."""
    out = []
    for w in freq_sets:
        try:
            out.append((monotonic_range(freqs=w), integer_monotonic_range(freqs=w)))
        except ValueError:
            out.append((np.nan, np.nan))
    return np.array(out)  # (n, 2)


def learned_frequencies(runner) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``"<variant> (APE|RPE)" -> (initial, trained)`` frequencies of every learnable sinusoid of
    ``runner``'s profile (RPE: the first layer's); as stored."""
    learned = {}
    for variant in [v for v in runner.profile.variants if "sin-learned" in v]:
        arrays = runner.analysis(variant).arrays
        for kind in ("ape", "rpe"):
            if f"trained.{kind}_freqs" in arrays:
                init, trained = (np.asarray(arrays[f"{state}.{kind}_freqs"], dtype=np.float64) for state in ("init", "trained"))
                if kind == "rpe":
                    init, trained = init[0], trained[0]  # first layer
                learned[f"{variant} ({kind.upper()})"] = (init, trained)
    return learned


def learned_ranges(learned: dict[str, tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """Per learned sinusoid: its size, the median relative change of its frequencies, and its
    monotonic range before and after pretraining."""
    rows = {name: {"dimension": 2 * len(init),
                   "median |w - w0| / w0": float(np.median(np.abs(trained - init) / init)),
                   "range w0 (integer)": integer_monotonic_range(freqs=init),
                   "range w (integer)": integer_monotonic_range(freqs=trained),
                   "range w0 (real)": monotonic_range(freqs=init), "range w (real)": monotonic_range(freqs=trained)}
            for name, (init, trained) in learned.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def compute(runner=None, ape_dim: int = 768, head_dim: int = 64, base: float = 10000.0, n_bases: int = 41) -> Sinusoid:
    """Monotonic ranges of an APE of ``ape_dim`` and a head's RPE of ``head_dim`` dimensions
    (frequencies ``base^(-2i/D)``), swept over ``n_bases`` bases and frequency scales; with a
    ``runner``, the learnable frequencies of its profile's pretrained models."""
    dims = {"APE": ape_dim, "RPE (one head)": head_dim}
    ranges = pd.DataFrame([{"embedding": label, "D": dim, "indexing": indexing,
                            "real offsets: M": monotonic_range(dim, base, first_index=first),
                            "integer offsets: M": integer_monotonic_range(dim, base, first_index=first)}
                           for label, dim in dims.items() for first, indexing in INDEXINGS])
    bases, scales = np.geomspace(10.0, 1e6, n_bases), np.geomspace(0.05, 2.0, n_bases)
    sweep = {}
    for label, dim in dims.items():
        sweep[label, "base"] = ranges_for([frequencies(dim, b) for b in bases])
        sweep[label, "scale"] = ranges_for([c * frequencies(dim, base) for c in scales])
    learned = learned_frequencies(runner) if runner is not None else {}
    learned_table = learned_ranges(learned)
    half = 0.5 * frequencies(ape_dim, base)
    best = int(np.nanargmax(sweep["APE", "base"][:, 1]))
    cited = {"ape_dim": ape_dim, "head_dim": head_dim, "base": base,
             **{f"{key}_{suffix}": value for key, dim in (("ape", ape_dim), ("head", head_dim)) for suffix, value in (
                 ("range_real", monotonic_range(dim, base)), ("range_int", integer_monotonic_range(dim, base)),
                 ("range_int_paper", integer_monotonic_range(dim, base, first_index=1)))},
             "half_ratio": monotonic_range(freqs=half) / monotonic_range(ape_dim, base),
             "half_range_int": integer_monotonic_range(freqs=half),
             "best_base": bases[best], "best_base_range": int(sweep["APE", "base"][best, 1]),
             "n_learned": len(learned),
             "max_relative_change": float(learned_table["median |w - w0| / w0"].max()) if learned else float("nan")}
    return Sinusoid(dims, ranges, bases, scales, sweep, learned, learned_table, cited)
