"""Chapter "Real pretrained models" (10): the position matrices of real pretrained models (packaged
offline, or from the hub online) measured with the same indicators as this project's APEs."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_book.experiments.results import Results
from pe_lib import pretrained_pes as pes
from pe_lib.positions import parse_variant, resolve_variants

#: The indicators whose extremes the prose cites, by their glue key.
CITED_COLUMNS = (("monotonicity_local", "local"), ("monotonicity", "mono"), ("translation_invariance", "ti"),
                 ("contrast", "contrast"), ("first_norm_ratio", "first"))


@dataclass
class RealModels:
    """What the chapter shows: the loaded ``real`` models (each with its ``info``), the
    ``grams`` of their position matrices and the ``project`` ones of this profile's APEs (name ->
    (n, n)), the indicator ``table`` of both, the ``provenance`` of every real matrix and
    ``cited``, by glue name."""
    real: list
    grams: dict[str, np.ndarray]
    project: dict[str, np.ndarray]
    table: pd.DataFrame
    provenance: pd.DataFrame
    cited: dict

    def maps(self) -> dict[str, np.ndarray]:
        """Every map by its title: the real models', then this project's."""
        return {**{m.info.title.split("/")[-1]: self.grams[m.name] for m in self.real},
                **{f"this project: {v}": g for v, g in self.project.items()}}


#: A sha256 in a provenance line, and how many of its digits a table shows (the data card keeps all 64).
SHA256 = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{52}\b")


def short_sha256(text: str) -> str:
    """``text`` with each sha256 cut to its first 12 digits and an ellipsis, for a table that
    must fit the page."""
    return SHA256.sub(r"\1…", text)


def compute(runner: Results, models: Sequence[str], variants: Sequence[str] = (), length: int = 128,
            window: int = 8) -> RealModels:
    """``models`` (packaged names or hub ids; those that cannot be loaded are skipped, with the
    reason) beside ``variants`` (default: the profile's with an APE), over ``length`` positions;
    local monotonicity and the near cosine over offsets 1..``window``. A packaged model's table is
    read from the results' :data:`~pe_lib.pretrained_pes.POSITION_TABLES` where it is there, else from its
    packages."""
    names = ape_variants(variants, runner.profile.variants)
    loaded = pes.load_models(models, stored=runner.store.root.parent / pes.POSITION_TABLES)
    real = [m for m in loaded if m.matrix is not None]
    grams = {m.name: pes.gram(m.matrix, length) for m in real}
    project = variant_grams(runner, names, length)
    rows = pes.indicator_rows({**grams, **project}, window)
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("model")
    table.insert(0, "kind", ["real" if n in grams else "this project" for n in table.index])
    provenance = pd.DataFrame(
        {m.info.title: {"architecture": m.info.architecture, "tensor": m.info.tensor,
                        "positions (rows dropped)": f"{m.info.positions} ({m.info.offset})",
                        "position ids": m.info.offset_note, "from": "; ".join(map(short_sha256, m.info.provenance))}
         for m in real}
    ).T.rename_axis("model")
    reasons: dict[str, list[str]] = {}  # one reason, the models it skipped
    for m in loaded:
        if m.skipped:
            reasons.setdefault(m.reason, []).append(m.name)
    cited = {"length": length, "window": window, "n_real": len(real), "n_project": len(project),
             "project_positions": min((g.shape[0] for g in project.values()), default=0),
             "skipped_text": "; ".join(f"{', '.join(names)} ({reason})" for reason, names in reasons.items()) or "none",
             **{f"{key}_{group}_{stat}": value for column, key in CITED_COLUMNS
                for group, members in (("real", list(grams)), ("project", list(project)))
                for stat, value in pes.extremes(rows, members, column).items()},
             "symmetry_min": float(table["symmetry"].min()) if len(table) else math.nan}
    return RealModels(real, grams, project, table, provenance, cited)


def ape_variants(requested: Sequence[str], profile_variants: Sequence[str]) -> list[str]:
    """This project's variants to compare: ``requested`` (each must have an APE) or, when empty,
    those of ``profile_variants`` that have one. ValueError naming the valid ones otherwise."""
    with_ape = [v for v in resolve_variants([], profile_variants) if parse_variant(v).absolute]
    if not requested:
        return with_ape
    names = resolve_variants(requested, profile_variants)
    wrong = [v for v in names if not parse_variant(v).absolute]
    if wrong:
        raise ValueError(f"variant(s) {wrong} have no absolute position embedding to compare; "
                         f"valid (the profile's with an APE): {', '.join(with_ape)}")
    return names


def variant_grams(runner: Results, variants: Sequence[str], length: int, state: str = "trained") -> dict[str, np.ndarray]:
    """``p_x . p_y`` of this project's variants over their first ``min(length, seq_len)``
    positions, from the runner's analysis artifacts (array ``<state>.ape``; computed if missing)."""
    return {name: runner.analysis(name).arrays[f"{state}.ape"][:length, :length] for name in variants}
