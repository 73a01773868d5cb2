r"""When a pretraining leaves the plateau of the model without position (``none``).

A masked-language model that cannot see word order can only learn which words go together: its
validation loss falls to a **plateau**, the loss of ``none`` at each evaluation step :math:`t`,

.. math::  L_\mathrm{none}(t) = \text{the mean over none's pretraining seeds of their validation loss at } t.

A model that learns to use position goes below it. Its **escape step** is the first evaluation
step :math:`t` at which its validation loss is below :math:`L_\mathrm{none}(t) - m` and stays below
(at :math:`L_\mathrm{none}(t') - m`) at every later evaluation step up to its budget, so that a
transient dip or a loss spike does not count as leaving (nor as returning: a model that leaves and
stays out has its step). A model still on the plateau at its last evaluation **did not leave**
within its budget: it gets ``None``, never a number (a budget is not an escape step).

The **margin** :math:`m` comes from none's own seeds:

.. math::  m = \max\bigl(\text{floor},\; k \cdot \max_t s(t)\bigr),

where :math:`s(t)` is the standard deviation (ddof 1) between none's seeds at step :math:`t`,
:math:`k` = :data:`K` and the floor :data:`FLOOR` (nats) holds where none has one seed (the spread
is unknown) or where its seeds agree by chance. With :math:`n` seeds a seed of none is at most
:math:`(n-1)/\sqrt n \cdot s(t)` from their mean, below :math:`3\,s(t)` for up to 11 seeds, so at
:math:`k = 3` none's own seeds never leave their plateau: the margin is wider than what separates
two models that cannot see order.

Per variant over its pretraining seeds (:func:`summary`): how many seeds left and, where every
seed left, the mean escape step with an interval: a two-sided ``1 - alpha`` t interval over the
seeds (:math:`n - 1` df) with three seeds or more, clipped to the steps evaluated (an escape step
lies between the first evaluation and the budget, so clipping loses no coverage); with two seeds
the range (smallest to largest, no stated level); with one seed none. Where some seed did not
leave, the mean of the others would be biased towards early escapes, and none is given.

Everything here works on plain data: curves as ``{step: validation loss}`` per ``(variant, seed)``.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pe_lib.positions import parse_variant

#: The margin is ``K`` times the largest standard deviation between none's seeds ...
K = 3.0
#: ... and never less than ``FLOOR`` nats.
FLOOR = 0.05
#: The level of the t intervals of :func:`summary`.
ALPHA = 0.05
#: The families of variants, in the order of the chapter's panels (:func:`family`).
NONE, APE, RPE, APE_RELATIVE, MODERN, UNTIED = ("none", "APE only", "RPE only", "APE + relative",
                                                "RoPE, ALiBi, T5 bias", "untied [CLS]")
FAMILIES = (NONE, APE, RPE, APE_RELATIVE, MODERN, UNTIED)
#: The families whose models add a relative term (every family but none and APE only).
RELATIVE_FAMILIES = (RPE, APE_RELATIVE, MODERN, UNTIED)


def family(variant: str) -> str:
    """The family of a variant (one of :data:`FAMILIES`): none; APE only; RPE only (the paper's
    tables of offset vectors); an APE with any relative term; RoPE, ALiBi or T5's bias alone; and
    the variants whose [CLS] is untied from the relative bias."""
    parsed = parse_variant(variant)
    if parsed.untie_cls:
        return UNTIED
    if parsed.relative is None:
        return APE if parsed.absolute is not None else NONE
    if parsed.absolute is not None:
        return APE_RELATIVE
    return RPE if parsed.has_offset_table else MODERN


def validation_curve(records: Sequence[Mapping]) -> dict[int, float]:
    """``{step: loss}`` of the validation records of a pretraining curve (its ``curve`` records:
    ``step``, ``split``, ``loss``)."""
    return {int(r["step"]): float(r["loss"]) for r in records if r["split"] == "validation"}


@dataclass(frozen=True)
class Plateau:
    """None's plateau: its mean validation ``loss`` at each evaluation ``steps`` (those every seed
    of none has), the standard deviation ``sd`` between its ``seeds`` there (NaN with one seed),
    and the margin's multiple ``k`` and ``floor``."""
    steps: tuple[int, ...]
    loss: tuple[float, ...]
    sd: tuple[float, ...]
    seeds: int
    k: float = K
    floor: float = FLOOR

    @property
    def sd_max(self) -> float:
        """The largest standard deviation between none's seeds over the steps (NaN with one seed)."""
        known = [s for s in self.sd if not math.isnan(s)]
        return max(known) if known else math.nan

    @property
    def margin(self) -> float:
        """How far below the plateau a loss must be to have left it: ``k`` times :attr:`sd_max`, at
        least :attr:`floor` (the floor alone where the spread is unknown)."""
        return self.floor if math.isnan(self.sd_max) else max(self.floor, self.k * self.sd_max)

    @property
    def from_floor(self) -> bool:
        """Whether the margin is the floor (none's spread is unknown or smaller)."""
        return self.margin == self.floor

    def line(self) -> dict[int, float]:
        """``{step: loss}`` of the plateau."""
        return dict(zip(self.steps, self.loss))


def plateau(none_curves: Sequence[Mapping[int, float]], k: float = K, floor: float = FLOOR) -> Plateau:
    """None's plateau from its seeds' validation curves (``{step: loss}`` each), at the steps all
    of them evaluated."""
    if not none_curves:
        raise ValueError("the plateau needs at least one validation curve of none")
    if k < 0 or floor < 0:
        raise ValueError(f"k and floor must not be negative, got k={k}, floor={floor}")
    steps = sorted(set.intersection(*(set(c) for c in none_curves)))
    if not steps:
        raise ValueError("none's seeds share no evaluation step")
    losses = np.array([[c[s] for s in steps] for c in none_curves])
    sd = losses.std(axis=0, ddof=1) if len(none_curves) > 1 else np.full(len(steps), math.nan)
    return Plateau(tuple(steps), tuple(map(float, losses.mean(axis=0))), tuple(map(float, sd)), len(none_curves),
                   k, floor)


def escape_step(curve: Mapping[int, float], base: Plateau) -> int | None:
    """The first evaluation step of ``curve`` (``{step: validation loss}``) from which its loss is
    below the plateau by more than the margin at every later step it shares with the plateau;
    None when its last shared step is not (it did not leave within its budget) or it shares none."""
    line = base.line()
    steps = sorted(s for s in curve if s in line)
    escape = None
    for step in reversed(steps):
        if curve[step] < line[step] - base.margin:
            escape = step
        else:
            break
    return escape


def escapes(curves: Mapping[tuple[str, int], Mapping[int, float]], base: Plateau) -> pd.DataFrame:
    """Per pretraining (rows ``(variant, seed)``, in the order of ``curves``): its ``family``, its
    ``escape`` step (None: did not leave) and its ``budget`` (its last evaluation step)."""
    index = pd.MultiIndex.from_tuples(list(curves), names=["variant", "seed"])
    return pd.DataFrame({"family": [family(v) for v, _ in curves],
                         "escape": pd.Series([escape_step(c, base) for c in curves.values()], index=index, dtype=object),
                         "budget": [max(c) if c else None for c in curves.values()]}, index=index)


def escape_text(step: int | None) -> str:
    """An escape step as a table shows it: "4,500", or "did not leave"."""
    return "did not leave" if step is None else f"{step:,}"


def summary(table: pd.DataFrame, alpha: float = ALPHA, first_step: int | None = None) -> pd.DataFrame:
    """Per variant of an :func:`escapes` table (in its order): ``family``, ``seeds``, ``left`` (how
    many seeds left the plateau), ``steps`` (each seed's escape step, in seed order), and where
    every seed left the ``mean`` escape step with ``low`` and ``high`` and the ``interval`` kind
    (see the module: a ``1 - alpha`` t interval from three seeds, clipped to ``first_step`` (the
    first evaluation step; default: the smallest escape step of the table) and the budget; the
    range with two; none with one)."""
    from scipy.stats import t as student

    escaped = [s for s in table["escape"] if s is not None]
    first = first_step if first_step is not None else (min(escaped) if escaped else 0)
    rows = []
    for variant, part in table.groupby(level="variant", sort=False):
        steps = list(part["escape"])
        left = [s for s in steps if s is not None]
        row = {"variant": variant, "family": part["family"].iloc[0], "seeds": len(steps), "left": len(left),
               "steps": ", ".join(escape_text(s) for s in steps), "mean": math.nan, "low": math.nan,
               "high": math.nan, "interval": "none"}
        if left and len(left) == len(steps):
            values = np.array(left, dtype=float)
            row["mean"] = float(values.mean())
            if len(values) >= 3:
                half = student.ppf(1 - alpha / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
                budget = float(part["budget"].max())
                row.update(low=max(float(first), row["mean"] - half), high=min(budget, row["mean"] + half),
                           interval=f"{1 - alpha:.0%} t")
            elif len(values) == 2:
                row.update(low=float(values.min()), high=float(values.max()), interval="range")
        elif not left:
            row["interval"] = "did not leave"
        else:
            row["interval"] = "not every seed left"
        rows.append(row)
    columns = ["variant", "family", "seeds", "left", "steps", "mean", "low", "high", "interval"]
    return pd.DataFrame(rows, columns=columns).set_index("variant")


def family_steps(table: pd.DataFrame, families: Sequence[str]) -> dict:
    """What the prose says of the seeds of ``families`` in an :func:`escapes` table: how many
    pretrainings (``n``) and how many ``left``; the ``first`` and ``last`` escape step among those
    that left, and the variant of the last (``last_variant``); NaN and "" where none left."""
    part = table[table["family"].isin(families)]
    left = part[part["escape"].map(lambda s: s is not None)]
    if not len(left):
        return {"n": len(part), "left": 0, "first": math.nan, "last": math.nan, "last_variant": ""}
    steps = left["escape"].astype(int)
    return {"n": len(part), "left": len(left), "first": int(steps.min()), "last": int(steps.max()),
            "last_variant": str(steps.idxmax()[0])}


def rank_correlation(table: pd.DataFrame, scores: pd.DataFrame, families: Sequence[str] = (APE,)) -> pd.DataFrame:
    """Spearman's rank correlation between the escape step of every pretraining of ``families`` in
    an :func:`escapes` table and each column of ``scores`` (rows ``(variant, seed)``: one number
    per pretrained model, e.g. its mean over fine-tuning seeds). A pretraining that did not leave
    ranks after every one that did (tied with the others that did not): it left later, if ever.
    Rows: the score columns; columns ``rho``, ``p`` (two-sided), ``n`` (pretrainings with both);
    rho NaN with fewer than three, or where either side is constant."""
    from scipy.stats import spearmanr

    part = table[table["family"].isin(families)]
    later = max([int(b) for b in part["budget"] if b is not None] + [0]) + 1
    step = part["escape"].map(lambda s: later if s is None else int(s)).astype(float).rename("escape")
    rows = {}
    for column in scores.columns:
        joined = pd.concat([step, scores[column]], axis=1, join="inner").dropna()
        n = len(joined)
        if n >= 3 and joined.iloc[:, 0].nunique() > 1 and joined.iloc[:, 1].nunique() > 1:
            rho, p = spearmanr(joined.iloc[:, 0], joined.iloc[:, 1])
        else:
            rho, p = math.nan, math.nan
        rows[column] = {"rho": float(rho), "p": float(p), "n": n}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["rho", "p", "n"]).rename_axis("score")


def mean_text(row: Mapping) -> str:
    """A :func:`summary` row's mean escape step with its interval, as the table shows it:
    "5,500 [4,258, 6,742] (95% t)", "750 (range 500 to 1,000)", "500 (every seed)" where the seeds
    agree, "500 (one seed)", "did not leave", or "2 of 3 left" where some seed did not."""
    if row["left"] == 0:
        return "did not leave"
    if row["left"] < row["seeds"]:
        return f"{row['left']} of {row['seeds']} left"
    mean = f"{row['mean']:,.0f}"
    if row["seeds"] > 1 and row["low"] == row["high"]:
        return f"{mean} (every seed)"
    if row["interval"] == "range":
        return f"{mean} (range {row['low']:,.0f} to {row['high']:,.0f})"
    if row["seeds"] == 1:
        return f"{mean} (one seed)"
    return f"{mean} [{row['low']:,.0f}, {row['high']:,.0f}] ({row['interval']})"


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`summary` table as the book shows it: family, seeds, each seed's escape step and
    the mean [interval] (:func:`mean_text`)."""
    return pd.DataFrame({"family": table["family"], "seeds": table["seeds"], "escape step per seed": table["steps"],
                         "mean [interval]": [mean_text(row) for _, row in table.iterrows()]}, index=table.index)
