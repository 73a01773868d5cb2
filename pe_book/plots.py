"""Figures the chapters share: heatmap grids of matrices, dot plots of scores over seeds, small
multiples of lines, and log axes ticked at the measured points."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

#: Reference lines of score panels: a baseline's score per column, and how its line is drawn.
BASELINE_STYLE = {"color": "grey", "ls": "--", "lw": 0.8}
RULE_STYLE = {"color": "C3", "ls": ":", "lw": 1.0}


def score_panels(per_seed: pd.DataFrame, columns: Sequence[str], order: Sequence[str],
                 lines: Sequence[tuple[Mapping[str, float], Mapping]] = (), color: str = "C0",
                 title: str = "{}", row_height: float = 0.32, width: float = 2.6, ncols: int = 3):
    """One panel per score column, ``ncols`` to a row (the figure stays readable at the width of
    the text): the runs' mean per variant (rows in ``order``) with ± one standard deviation over
    all its runs, and a vertical line per ``lines`` entry (column -> value, line style).
    ``per_seed``: scores indexed ``(variant, pretrain_seed, seed)``."""
    sns.set_theme(style="whitegrid", context="notebook")
    long = per_seed[list(columns)].reset_index().melt(id_vars=["variant", "pretrain_seed", "seed"],
                                                      var_name="column", value_name="score")
    ncols = min(ncols, len(columns))
    nrows = math.ceil(len(columns) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols + 2, nrows * (row_height * len(order) + 1.8)),
                             sharey=True, constrained_layout=True, squeeze=False)
    for ax in axes.flat[len(columns):]:
        ax.set_axis_off()
    for ax, column in zip(axes.flat, columns):
        sns.pointplot(long[long["column"] == column], x="score", y="variant", order=list(order), errorbar="sd",
                      linestyle="none", ax=ax, color=color, markersize=4)
        for values, style in lines:
            ax.axvline(values[column], **style)
        ax.set(title=title.format(column), xlabel="score (%)", ylabel="")
    return fig


#: Colour bars of heatmap panels: slim, beside each panel (every panel has its own scale).
COLORBAR = {"shrink": 0.75, "pad": 0.02, "aspect": 25}


def constant_value(matrix) -> float | None:
    """The one value of a matrix whose entries are all equal (e.g. a table that starts at zero), else None."""
    values = np.asarray(matrix, dtype=float)
    return float(values.flat[0]) if values.size and np.all(values == values.flat[0]) else None


def constant_panel(ax, title: str, value: float, fontsize: float = 9) -> None:
    """A panel that says its map is constant, instead of one flat colour that reads as a blank."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, f"{title}\nevery entry {value:g}", ha="center", va="center", fontsize=fontsize)


def heatmaps(maps: Mapping[str, object], ncols: int | None = None, size: float = 3.0, title_size: float = 13,
             title_height: float = 0.0, robust: bool = False, axis_labels: tuple[str, str] | None = None):
    """A grid of square heatmaps without ticks, each with its own colour bar, one per
    ``name: matrix`` of ``maps`` (at least one panel), ``ncols`` per row (default: all in one
    row). ``robust``: colours span the 2nd-98th percentiles, so that one extreme entry does not
    darken the rest; ``axis_labels``: (x, y) labels of every panel. A constant matrix is a panel
    that says so."""
    ncols = ncols or max(1, len(maps))
    nrows = max(1, math.ceil(len(maps) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols * 1.15, size * nrows + title_height),
                             constrained_layout=True, squeeze=False)
    for ax, (name, matrix) in zip(axes.flat, maps.items()):
        if (value := constant_value(matrix)) is not None:
            constant_panel(ax, name, value, title_size)
            continue
        sns.heatmap(matrix, ax=ax, cmap="viridis", robust=robust, square=True, cbar=True, cbar_kws=COLORBAR,
                    xticklabels=False, yticklabels=False)
        ax.collections[0].colorbar.ax.tick_params(labelsize=9)
        ax.set_title(name, fontsize=title_size)
        if axis_labels:
            ax.set_xlabel(axis_labels[0], fontsize=9)
            ax.set_ylabel(axis_labels[1], fontsize=9)
    for ax in axes.flat[len(maps):]:
        ax.set_axis_off()
    return fig


def line_facets(lines: Mapping[str, tuple[object, object]], ncols: int = 3, xlabel: str = "", ylabel: str = "",
                reference: float | None = None, panel: tuple[float, float] = (3.0, 2.0)):
    """Small multiples: one panel per ``name: (x, y)`` of ``lines`` (``ncols`` per row, a shared x
    axis, each its own y scale), so that many lines are told apart by their titles, not by
    colours; ``reference``: a grey horizontal line at that value in every panel."""
    nrows = max(1, math.ceil(len(lines) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows + 0.4), sharex=True,
                             constrained_layout=True, squeeze=False)
    for ax, (name, (x, y)) in zip(axes.flat, lines.items()):
        if reference is not None:
            ax.axhline(reference, color="grey", lw=0.8)
        ax.plot(x, y, marker=".", lw=0.8, ms=3)
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in axes.flat[len(lines):]:
        ax.set_axis_off()
    fig.supxlabel(xlabel, fontsize=10)
    fig.supylabel(ylabel, fontsize=10)
    return fig


def effect_trends(effects: pd.DataFrame, columns: Sequence[str], budgets: Sequence[int], ncols: int = 3,
                  panel: tuple[float, float] = (3.3, 2.6)):
    """One panel per score column: each effect (``effects`` rows: ``effect``, ``column``,
    ``tokens``, ``difference``, ``low``, ``high``) against pretraining tokens on a log axis ticked
    at ``budgets``, with its interval as error bars where known and a grey line at zero; a
    column with no effect stored says so in its panel."""
    sns.set_theme(style="whitegrid", context="notebook")
    names = list(dict.fromkeys(effects["effect"])) if not effects.empty else []
    nrows = max(1, math.ceil(len(columns) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows + 0.6),
                             constrained_layout=True, squeeze=False)
    for ax in axes.flat[len(columns):]:
        ax.set_axis_off()
    for ax, column in zip(axes.flat, columns):
        shown = effects[effects["column"] == column] if names else effects
        ax.axhline(0.0, color="grey", lw=0.8)
        for i, name in enumerate(names):
            rows = shown[shown["effect"] == name].sort_values("tokens")
            errors = np.vstack([rows["difference"] - rows["low"], rows["high"] - rows["difference"]])
            ax.errorbar(rows["tokens"] * (1.04 ** (i - (len(names) - 1) / 2)), rows["difference"],
                        yerr=None if np.isnan(errors).all() else errors, marker="o", ms=4, lw=1.0, capsize=2,
                        color=f"C{i}", label=name)
        if shown.empty:
            ax.text(0.5, 0.5, "nothing stored", ha="center", va="center", transform=ax.transAxes, fontsize=9)
        ax.set_xscale("log")
        ax.set_xlim(min(budgets) / 1.5, max(budgets) * 1.5)
        log_ticks(ax, budgets, lambda tokens: f"{tokens / 1e6:.3g}M")
        ax.set_title(column, fontsize=10)
        ax.tick_params(labelsize=8)
    if names:
        fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside upper center", ncols=len(names), fontsize=9)
    fig.supxlabel("pretraining tokens", fontsize=10)
    fig.supylabel("difference (points)", fontsize=10)
    return fig


def log_ticks(ax, values, label=lambda value: f"{value:g}", axis: str = "x") -> None:
    """Tick a log ``axis`` of ``ax`` at ``values`` only (the measured points), each labelled by
    ``label``, with no minor labels (which overlap on a short log axis)."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(sorted(set(values))))
    target.set_major_formatter(FuncFormatter(lambda value, _: label(value)))
    target.set_minor_formatter(NullFormatter())


def position_map(ax, matrix, title: str, kind: str) -> None:
    """One dot-product map on ``ax``: absolute maps (``kind`` ``"ape"``) by position, relative
    ones (``"rpe"``) labelled by offset from -k to k. Its colours span the 2nd to 98th percentile
    of its values (robust), so a few extreme entries (one long vector) do not darken the rest."""
    sns.heatmap(matrix.astype(float), ax=ax, cmap="viridis", square=True, cbar=True, cbar_kws=COLORBAR, robust=True,
                xticklabels=False, yticklabels=False)
    ax.collections[0].colorbar.ax.tick_params(labelsize=7)
    ax.set_title(title, fontsize=9)
    n = matrix.shape[0]
    if kind == "rpe":
        half = (n - 1) // 2
        ticks = [0.5, half + 0.5, n - 0.5]
        ax.set_xticks(ticks, [f"{-half}", "0", f"{half}"], fontsize=7)
        ax.set_yticks(ticks, [f"{-half}", "0", f"{half}"], fontsize=7)
        ax.set_xlabel("offset b", fontsize=8)
        ax.set_ylabel("offset a", fontsize=8)
    else:
        ax.set_xlabel("position y", fontsize=8)
        ax.set_ylabel("position x", fontsize=8)


def position_maps(maps: Sequence[tuple[str, object, str]], ncols: int, size: tuple[float, float] = (3.2, 3.4),
                  missing: str = "not in this run", empty: str = "nothing to show"):
    """A grid of :func:`position_map` panels, one per ``(title, matrix, kind)``; a panel whose
    matrix is None says ``missing``, one whose entries are all equal says so, and an empty grid
    says ``empty``."""
    nrows = max(1, math.ceil(len(maps) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), constrained_layout=True,
                             squeeze=False)
    for ax, (title, matrix, kind) in zip(axes.flat, maps):
        if matrix is None:
            ax.set_axis_off()
            ax.text(0.5, 0.5, f"{title}\n{missing}", ha="center", va="center", fontsize=9)
        elif (value := constant_value(matrix)) is not None:
            constant_panel(ax, title, value)
        else:
            position_map(ax, matrix, title, kind)
    for ax in axes.flat[len(maps):]:
        ax.set_axis_off()
    if not maps:
        axes.flat[0].text(0.5, 0.5, empty, ha="center")
    return fig
