"""The paper's figure: learned dot products of absolute position vectors and of relative offset
vectors, six panels, as chapter 04 (dot products) draws them and the intro and the README repeat
them after pretraining. Shared by chapters; no chapter of its own."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

#: The paper's figure: (panel letter, variant, map kind).
PANELS = (("a", "ape-learned", "ape"), ("b", "ape-learned+rpe-learned", "ape"), ("c", "ape-sin-learned", "ape"),
          ("d", "ape-sin-learned+rpe-learned", "ape"), ("e", "rpe-learned", "rpe"),
          ("f", "ape-learned+rpe-learned", "rpe"))


def panels(maps: Mapping[tuple[str, str, str], np.ndarray], state: str) -> list[tuple[str, np.ndarray | None, str]]:
    """The paper's figure in ``state`` from stored ``maps`` (``(variant, "init" | "trained", "ape" |
    "rpe") -> matrix``): ``(title, matrix or None when not run, kind)`` per panel."""
    return [(f"({letter}) {variant}\n{kind.upper()}", maps.get((variant, state, kind)), kind)
            for letter, variant, kind in PANELS]


def maps_of(analyses: Mapping) -> dict[tuple[str, str, str], np.ndarray]:
    """The maps of stored analyses (``analyses``: variant -> its analysis artifact) as
    ``(variant, "init" | "trained", "ape" | "rpe") -> matrix``, for each kind the variant has."""
    return {(name, state, kind): a.arrays[f"{state}.{kind}"] for name, a in analyses.items()
            for kind in ("ape", "rpe") for state in ("init", "trained") if f"trained.{kind}" in a.arrays}


def figure_panels(runner, state: str = "trained") -> list[tuple[str, np.ndarray | None, str]]:
    """:func:`panels` of ``runner``'s profile, from the analyses of the figure's variants that the
    profile has (a variant it lacks is a panel "not run")."""
    shown = [v for v in dict.fromkeys(v for _, v, _ in PANELS) if v in runner.profile.variants]
    return panels(maps_of({name: runner.analysis(name) for name in shown}), state)
