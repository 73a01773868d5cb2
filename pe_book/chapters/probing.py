"""Chapter "Identical-word probing" (05): what the attention of a pretrained layer does between
positions, with the words taken out of the picture, and the indicators of that map."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_book import tables
from pe_book.chapters import common
from pe_lib.positions import parse_variant, resolve_variants


@dataclass
class Probing:
    """What the chapter shows: the probed ``maps`` of ``layer`` (``state -> variant -> (n, n)``,
    states ``"init"`` and ``"trained"``), the indicators after pretraining (``trained``), their
    ``change`` from initialisation (:func:`tables.indicator_change`) and ``cited``, by glue name."""
    names: list[str]
    layer: int
    maps: dict[str, dict[str, np.ndarray]]
    trained: pd.DataFrame
    change: pd.DataFrame
    cited: dict

    @property
    def delta(self) -> pd.DataFrame:
        """Trained minus initial value of every indicator."""
        return self.change.xs("change", axis=1, level=1)


def compute(runner, variants: Sequence[str] = (), layer: int = 0) -> Probing:
    """Identical-word probing of ``layer`` for ``variants`` (default: the profile's), before and
    after pretraining; as stored."""
    names = resolve_variants(variants, runner.profile.variants)
    common.check_layer(runner.profile, layer)
    analyses = {name: runner.analysis(name) for name in names}
    payloads = {name: a.payload for name, a in analyses.items()}
    maps = {state: {name: a.arrays[f"{state}.probe"][layer].astype(float) for name, a in analyses.items()}
            for state in ("trained", "init")}
    result = Probing(names, layer, maps, tables.indicator_table(payloads, "trained", "probe", layer),
                     tables.indicator_change(payloads, "probe", layer), {})
    widest = common.largest_spread(common.seed_spread(common.over_pretraining_seeds(
        runner.profile, names, lambda v, p: tables.indicator_table(
            {v: runner.analysis(v, p).payload}, "trained", "probe", layer).loc[v].to_dict())))
    result.cited = {"probe_length": runner.profile.probe["length"], "probe_words": runner.profile.probe["n_words"],
                    "layer_number": layer + 1, **_observations(result),
                    "seed_variants": widest["variants"], "seed_spread_max": widest["value"],
                    "seed_spread_variant": widest["variant"], "seed_spread_indicator": tables.LABELS.get(widest["column"], "")}
    return result


def _observations(result: Probing) -> dict:
    """The indicator values and comparisons the prose quotes."""
    trained, change, delta, cell = result.trained, result.change, result.delta, tables.cell
    parsed = {v: parse_variant(v) for v in result.names}
    relative_only = [v for v, p in parsed.items() if p.absolute is None and p.relative]
    absolute_only = [v for v, p in parsed.items() if p.absolute and p.relative is None]
    ti = trained["translation_invariance"]
    rel_ti_min = ti[relative_only].min() if relative_only else math.nan
    abs_ti_max = ti[absolute_only].max() if absolute_only else math.nan
    local = trained["monotonicity_local"].dropna()
    moved = delta.abs().max(axis=1)
    rose = delta["monotonicity_local"].dropna()
    return {
        "rel_ti_min": rel_ti_min, "abs_ti_max": abs_ti_max,
        "ti_separated": "the two kinds do not overlap, as" if rel_ti_min > abs_ti_max else "the two kinds overlap, unlike what",
        "top_local": str(local.idxmax()) if len(local) else "none",
        "top_local_value": local.max() if len(local) else math.nan,
        "most_moved": str(moved.idxmax()) if moved.notna().any() else "none",
        "most_moved_value": moved.max() if moved.notna().any() else math.nan,
        "local_rose": f"{int((rose > 0).sum())} of {len(rose)}",
        "mean_abs_change": float(delta.abs().stack().mean()) if delta.notna().any().any() else math.nan,
        "rpel_sym": cell(trained, "rpe-learned", "symmetry"),
        "rpel_sym_init": cell(change, "rpe-learned", ("symmetry", "init")),
        "t5_sym": cell(trained, "t5-bias", "symmetry"), "rpes_sym": cell(trained, "rpe-sin", "symmetry"),
        "alibi_mono": cell(trained, "alibi", "monotonicity"), "none_ti": cell(trained, "none", "translation_invariance"),
    }
