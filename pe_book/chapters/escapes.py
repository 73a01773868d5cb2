"""When each pretraining left the validation-loss plateau of ``none`` (:mod:`pe_book.plateau`), as
chapters 3 (pretraining) and 8 (findings) show it: the validation curves read from the runner, the
escapes and what the prose cites of them. Shared by chapters; no chapter of its own."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_book import plateau
from pe_book.chapters import common


@dataclass
class Escapes:
    """When each pretraining left ``none``'s plateau (:mod:`pe_book.plateau`): the plateau
    (``none_plateau``), the ``table`` of escape steps per (variant, pretraining seed)
    (:func:`pe_book.plateau.escapes`), its ``summary`` per variant and every validation curve
    (``curves``, long: variant, pretraining seed, family, step, loss)."""
    none_plateau: plateau.Plateau
    table: pd.DataFrame
    summary: pd.DataFrame
    curves: pd.DataFrame

    def shown(self) -> pd.DataFrame:
        """The summary as the book shows it (:func:`pe_book.plateau.shown`)."""
        return plateau.shown(self.summary)


def validation_curves(runner, names: Sequence[str]) -> dict[tuple[str, int], dict[int, float]]:
    """``{step: validation loss}`` of every pretraining seed of ``none`` (the plateau's reference,
    also where it is not among ``names``) and of ``names``."""
    return {(v, p): plateau.validation_curve(runner.pretrained(v, p).payload["curve"])
            for v in ["none", *(n for n in names if n != "none")] for p in runner.profile.pretrain_seeds_for(v)}


def stored_validation_curves(runner) -> dict[tuple[str, int], dict[int, float]]:
    """The same for every variant of ``runner``'s profile, of the pretrainings its store holds
    (never computes: the trend's long runs are shown where they are stored)."""
    found = {}
    for v in runner.profile.variants:
        for p in runner.profile.pretrain_seeds_for(v):
            artifact = runner.stored(runner.pretrain_place(v, p))
            if artifact is not None:
                found[(v, p)] = plateau.validation_curve(artifact.payload["curve"])
    return found


def escapes_of(curves: Mapping[tuple[str, int], Mapping[int, float]]) -> Escapes:
    """:class:`Escapes` of validation ``curves`` per (variant, pretraining seed), none's among them
    (they make the plateau)."""
    none = [c for (v, _), c in curves.items() if v == "none"]
    if not none:
        raise ValueError("the plateau is none's: curves of none are needed")
    base = plateau.plateau(none)
    table = plateau.escapes(curves, base).rename_axis(["variant", "pretraining seed"])
    long = pd.DataFrame([{"variant": v, "pretraining seed": p, "family": plateau.family(v), "step": s, "loss": x}
                         for (v, p), c in curves.items() for s, x in sorted(c.items())],
                        columns=["variant", "pretraining seed", "family", "step", "loss"])
    return Escapes(base, table, plateau.summary(table, first_step=min(base.steps)), long)


def escape_cited(found: Escapes) -> dict:
    """What the prose of chapters 3 and 8 cites of :class:`Escapes`: the margin and what set it,
    the budget (the last evaluation step), and for the families with a relative term and for the
    APE-only ones how many pretrainings there are and left, their first and last escape step (as
    text, :func:`pe_book.plateau.escape_text`; "" where none left) and the variant of the last."""
    base = found.none_plateau
    cited = {"plateau_margin": base.margin, "plateau_k": base.k, "plateau_floor": base.floor,
             "plateau_sd_max": base.sd_max, "plateau_k_sd": base.k * base.sd_max, "plateau_none_seeds": base.seeds,
             "plateau_from_floor": base.from_floor, "plateau_steps": len(base.steps),
             "plateau_first_step": min(base.steps), "plateau_level": f"{1 - plateau.ALPHA:.0%}",
             "plateau_every": int(np.diff(base.steps).min()) if len(base.steps) > 1 else min(base.steps),
             "escape_budget": int(found.table["budget"].max()), "escape_n": len(found.table)}
    for key, families in (("relative", plateau.RELATIVE_FAMILIES), ("ape", (plateau.APE,))):
        steps = plateau.family_steps(found.table, families)
        cited.update({f"{key}_n": steps["n"], f"{key}_left": steps["left"], f"{key}_last_variant": steps["last_variant"],
                      **{f"{key}_{end}": plateau.escape_text(steps[end]) if steps["left"] else "" for end in ("first", "last")}})
    cited["plateau_margin_text"] = margin_text(base)
    cited["plateau_text"] = f"{_family_text(cited, 'relative', RELATIVE_MODELS)}; {_family_text(cited, 'ape', APE_MODELS)}"
    return cited


#: The models of the families with a relative term, and of the APE-only family, in the prose.
RELATIVE_MODELS = "model with a relative term (RPE, RoPE, ALiBi or T5 bias, with or without an APE)"
APE_MODELS = "model with an APE alone"


def margin_text(base: plateau.Plateau) -> str:
    """The margin of none's plateau and what set it, in words."""
    if base.seeds < 2:
        return f"the floor, {base.floor:g} nats (none has one seed, so the spread between its seeds is unknown)"
    spread = (f"{base.k:g} times the largest standard deviation between none's {base.seeds} seeds at any step "
              f"({base.sd_max:.4f} nats), {base.k * base.sd_max:.3f} nats")
    return f"{base.margin:.3f} nats: " + (f"its floor of {base.floor:g} nats, which is larger than {spread}" if base.from_floor
                                          else f"{spread}, which is larger than its floor of {base.floor:g} nats")


def _family_text(cited: Mapping, key: str, label: str) -> str:
    """When the pretrainings of ``key`` ("relative" or "ape" in :func:`escape_cited`) left the plateau, in words."""
    n, left, budget = cited[f"{key}_n"], cited[f"{key}_left"], cited["escape_budget"]
    if not n:
        return f"no {label} was pretrained"
    if not left:
        return f"no {label} left it within {budget:,} steps ({common.plural(n, 'pretraining')})"
    first, last = cited[f"{key}_first"], cited[f"{key}_last"]
    if left == n:
        who, count = f"every {label} left it", f"all {n} pretrainings" if n > 1 else "one pretraining"
    else:
        who, count = f"{left} of the {n} pretrainings of a {label} left it", "the others did not"
    if first == last:
        return f"{who} at step {last} ({count})"
    return f"{who} between step {first} and step {last} ({count}; {cited[f'{key}_last_variant']} last)"
