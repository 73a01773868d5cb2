"""Chapter "Dot products of position embeddings" (04): the paper's figure of p_x . p_y and
r_a . r_b after pretraining, and the observations the paper draws from it, measured."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_book import tables
from pe_book.chapters import common
from pe_book.chapters.paper_figure import PANELS, maps_of, panels
from pe_lib import geometry
from pe_lib.positions import parse_variant, resolve_variants

INDICATORS = ["monotonicity", "monotonicity_local", "translation_invariance"]  # a Gram matrix is symmetric
APE_COLUMNS = INDICATORS + ["near cosine", "far cosine", "contrast cosine", "contrast at init"]
RPE_COLUMNS = INDICATORS + ["norm_ratio", "norm_ratio at init", "small_cosine", "large_cosine"]
#: Two diagonal contrasts (cosines) within this distance are "close": an APE's picture beside an
#: RPE is then said to be the APE's alone, as the paper reports.
CLOSE_CONTRAST = 0.1


@dataclass
class DotProducts:
    """What the chapter shows: the stored ``maps`` (``(variant, "init" | "trained", "ape" |
    "rpe") -> matrix``) of every variant with an APE or an offset table, the indicators and
    geometry of the trained maps (``ape_table``, ``rpe_table``) and ``cited``, by glue name."""
    maps: dict[tuple[str, str, str], np.ndarray]
    ape_table: pd.DataFrame
    rpe_table: pd.DataFrame
    cited: dict

    def panels(self, state: str) -> list[tuple[str, np.ndarray | None, str]]:
        """The paper's figure in ``state``: ``(title, matrix or None when not run, kind)`` per panel."""
        return panels(self.maps, state)

    def others(self) -> list[tuple[str, np.ndarray, str]]:
        """The trained maps of every variant the paper's figure does not show."""
        in_paper = {(v, kind) for _, v, kind in PANELS}
        return [(f"{name}\n{kind.upper()}", matrix, kind) for (name, state, kind), matrix in self.maps.items()
                if state == "trained" and (name, kind) not in in_paper]


def compute(runner, variants: Sequence[str] = (), window: int = 8, small_offset: int = 2,
            close: float = CLOSE_CONTRAST) -> DotProducts:
    """The maps of ``variants`` (default: the profile's) with an APE or an offset table; distances
    1..``window`` are near in the APE's diagonal contrast and the range of local monotonicity,
    offsets up to ``small_offset`` are small in the RPE's bands; two diagonal contrasts within
    ``close`` are "close"."""
    names = resolve_variants(variants, runner.profile.variants)
    shown = [n for n in names if parse_variant(n).absolute or parse_variant(n).has_offset_table]
    analyses = {name: runner.analysis(name) for name in shown}
    maps = maps_of(analyses)
    payloads = {name: a.payload for name, a in analyses.items()}
    stored = {name: a.arrays for name, a in analyses.items()}
    ape_geometry = {name: {**{f"{key} cosine": v for key, v in geometry.ape_locality(a["trained.ape"], window).items()},
                           "contrast at init": geometry.ape_locality(a["init.ape"], window)["contrast"]}
                    for name, a in stored.items() if "trained.ape" in a}
    rpe_geometry = {name: {**geometry.rpe_bands(a["trained.rpe"], small_offset),
                           "norm_ratio at init": geometry.rpe_bands(a["init.rpe"], small_offset)["norm_ratio"]}
                    for name, a in stored.items() if "trained.rpe" in a}
    ape_table = _table(tables.indicator_table(payloads, "trained", "ape", window=window, maps=stored), ape_geometry,
                       APE_COLUMNS)
    rpe_table = _table(tables.indicator_table(payloads, "trained", "rpe", window=window, maps=stored), rpe_geometry,
                       RPE_COLUMNS)
    result = DotProducts(maps, ape_table, rpe_table, {})
    missing = sorted({v for _, v, _ in PANELS if v not in analyses})
    offsets = [m for (_, _, kind), m in maps.items() if kind == "rpe"]
    result.cited = {"window": window, "small_offset": small_offset, "seq_len": runner.profile.seq_len,
                    "panels_missing": ", ".join(missing) if missing else "none",
                    "max_offset": (offsets[0].shape[0] - 1) // 2 if offsets else 0,
                    "n_others": len(result.others()), "learned_init": common.learned_init(runner),
                    "close_contrast": close, **_observations(result), **_at_init(result), **_rpe_effect(result, close)}
    return result


def at_init_text(value: float, matrix: np.ndarray | None, fmt: str = ".3f") -> str:
    """A measure of an initial map in words: ``"0.276 at initialisation"``, "not run" without a
    map, and "undefined at initialisation (the vectors start at zero)" for a map of zero vectors."""
    if matrix is None:
        return "not run"
    if not np.any(matrix):
        return "undefined at initialisation, where the vectors are zero"
    return f"{value:{fmt}} at initialisation"


def _at_init(result: DotProducts) -> dict:
    """The initial values the prose cites, as words (:func:`at_init_text`)."""
    maps, cited = result.maps, {}
    for variant, key in [("ape-learned", "apel"), ("ape-sin-learned", "apesl")]:
        cited[f"{key}_contrast_init_text"] = at_init_text(tables.cell(result.ape_table, variant, "contrast at init"),
                                                          maps.get((variant, "init", "ape")))
    for variant, key in [("rpe-learned", "rpel"), ("ape-learned+rpe-learned", "apel_rpel")]:
        cited[f"{key}_norm_ratio_init_text"] = at_init_text(tables.cell(result.rpe_table, variant, "norm_ratio at init"),
                                                            maps.get((variant, "init", "rpe")), ".2f")
    for alone, combined, key in [("ape-learned", "ape-learned+rpe-learned", "apel"),
                                 ("ape-sin-learned", "ape-sin-learned+rpe-learned", "apesl")]:
        pair = maps.get((alone, "init", "ape")), maps.get((combined, "init", "ape"))
        if pair[0] is None or pair[1] is None:
            cited[f"{key}_similarity_init_text"] = "not run"
        elif not np.any(pair[0]) and not np.any(pair[1]):
            cited[f"{key}_similarity_init_text"] = "both tables start at zero, where a correlation is undefined"
        else:
            cited[f"{key}_similarity_init_text"] = f"{geometry.map_similarity(*pair):.3f} at initialisation"
    return cited


def _rpe_effect(result: DotProducts, close: float) -> dict:
    """Whether adding a fully learnable RPE left each APE's diagonal contrast within ``close``, in words."""
    changes = {}
    for alone, name in [("ape-learned", "fully learnable APE"), ("ape-sin-learned", "learnable sinusoidal APE")]:
        before = tables.cell(result.ape_table, alone, "contrast cosine")
        after = tables.cell(result.ape_table, f"{alone}+rpe-learned", "contrast cosine")
        if not (math.isnan(before) or math.isnan(after)):
            changes[name] = after - before
    if not changes:
        return {"rpe_effect": "neither pair was run, so the comparison cannot be made"}
    far = {name: d for name, d in changes.items() if abs(d) > close}
    if not far:
        return {"rpe_effect": f"every pair is within {close:g}, so the RPE changed the APE's picture little, "
                              "as the paper reports"}
    moved = " and ".join(f"{'lowered' if d < 0 else 'raised'} it by {abs(d):.3f} for {name}" for name, d in far.items())
    return {"rpe_effect": f"the RPE {moved}, more than {close:g}: in this run adding the RPE did change the APE's "
                          "picture, unlike what the paper reports"}


def _table(indicators: pd.DataFrame, geometry_rows: dict, columns: list[str]) -> pd.DataFrame:
    """The indicators of the stored maps (local monotonicity over this chapter's window) beside their geometry."""
    table = indicators.join(pd.DataFrame.from_dict(geometry_rows, orient="index"))
    return table[columns] if len(table) else table


def _observations(result: DotProducts) -> dict:
    """The paper's observations, measured: which APE is most local, how far the offset tables
    are from it, and how alike an APE is alone and beside a learned RPE."""
    ape, rpe, cell = result.ape_table, result.rpe_table, tables.cell
    apes = ape["contrast cosine"].dropna() if len(ape) else pd.Series(dtype=float)
    top = str(apes.idxmax()) if len(apes) else "none"
    cited = {"top_contrast_variant": top, "top_contrast": apes.max() if len(apes) else math.nan,
             "top_agrees": "agrees with" if top == "ape-sin-learned" else "differs from"}
    for variant, key in [("ape-learned", "apel"), ("ape-sin-learned", "apesl"), ("ape-sin", "apes"),
                         ("ape-learned+rpe-learned", "apel_rpel"), ("ape-sin-learned+rpe-learned", "apesl_rpel")]:
        cited[f"{key}_contrast"] = cell(ape, variant, "contrast cosine")
        cited[f"{key}_contrast_init"] = cell(ape, variant, "contrast at init")
    for variant, key in [("rpe-learned", "rpel"), ("ape-learned+rpe-learned", "apel_rpel")]:
        cited[f"{key}_norm_ratio"] = cell(rpe, variant, "norm_ratio")
        cited[f"{key}_norm_ratio_init"] = cell(rpe, variant, "norm_ratio at init")
        cited[f"{key}_small_cos"] = cell(rpe, variant, "small_cosine")
        cited[f"{key}_large_cos"] = cell(rpe, variant, "large_cosine")
    for alone, combined, key in [("ape-learned", "ape-learned+rpe-learned", "apel"),
                                 ("ape-sin-learned", "ape-sin-learned+rpe-learned", "apesl")]:
        for state in ("init", "trained"):
            pair = result.maps.get((alone, state, "ape")), result.maps.get((combined, state, "ape"))
            cited[f"{key}_similarity_{state}"] = (geometry.map_similarity(*pair) if pair[0] is not None
                                                  and pair[1] is not None else math.nan)
    return cited
