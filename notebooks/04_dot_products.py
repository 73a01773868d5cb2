# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# (dot-products)=
# # Dot products between position vectors
#
# The figure of {cite:t}`wang2021position` that shows what pretraining made of the position
# embeddings is a set of heatmaps of dot products: for an absolute embedding (APE), $p_x \cdot p_y$
# over positions $x, y$; for a fully learnable relative embedding (RPE, {cite:t}`shaw2018self`),
# $r_a \cdot r_b$ between the vectors of offsets $a, b$. Its panels are (a) fully learnable APE,
# (b) fully learnable APE combined with fully learnable RPE (its APE part), (c) learnable
# sinusoidal APE, (d) learnable sinusoidal APE with fully learnable RPE (APE part), and (e), (f)
# the offset vectors of the fully learnable RPE, alone and combined with fully learnable APE. The
# paper observes that
#
# * the APE maps are brightest along the diagonal: nearby positions have similar vectors, most of
#   all for the learnable sinusoidal APE;
# * adding an RPE changes the APE's picture little;
# * the fully learnable RPE shows bright horizontal and vertical bands at small $|a|$ (it tells
#   small offsets sharply apart) and dark, similar vectors for large $|a|$.
#
# This chapter draws the same maps from this project's pretrained models, before and after
# pretraining, for those panels and for every other variant that has an APE or a table of offset
# vectors, and puts numbers on the three observations.

# %% tags=["hide-cell"]
import math
import warnings

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_lib import geometry, parse_variant
from pe_book import book
from pe_book.chapters import common
from pe_lib.positions import resolve_variants

book.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `profile` chooses the artifacts; `variants` restricts the chapter to some position embeddings
# (empty: all of the profile's); `window` is the largest distance counted as "near" below.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's
results: str = "results"  # folder of the artifact store
window: int = 8  # distances 1..window are "near" in the diagonal contrast
small_offset: int = 2  # largest absolute offset counted as small in the RPE band measures

# %% tags=["hide-input"]
params = book.check_notebook_parameters(globals())
runner = common.open_runner(profile, results)
names = resolve_variants(variants, runner.profile.variants)
book.glue("profile_name", profile)
book.glue("window", window)
book.glue("small_offset", small_offset)
common.data_used(params, runner)

# %% tags=["hide-input"]
PANELS = [("a", "ape-learned", "ape"), ("b", "ape-learned+rpe-learned", "ape"), ("c", "ape-sin-learned", "ape"),
          ("d", "ape-sin-learned+rpe-learned", "ape"), ("e", "rpe-learned", "rpe"),
          ("f", "ape-learned+rpe-learned", "rpe")]
shown = [n for n in names if parse_variant(n).absolute or parse_variant(n).has_offset_table]
analyses = {name: runner.ensure_analysis(name) for name in shown}
missing = sorted({v for _, v, _ in PANELS if v not in analyses})
book.glue("panels_missing", ", ".join(missing) if missing else "none")
seq_len = runner.profile.seq_len
book.glue("seq_len", seq_len)
k = (analyses[next(n for n in shown if parse_variant(n).has_offset_table)].arrays["trained.rpe"].shape[0] - 1) // 2 \
    if any(parse_variant(n).has_offset_table for n in shown) else 0
book.glue("max_offset", k)


def draw(ax, matrix, title, kind):
    """One heatmap; relative maps are labelled by offset."""
    sns.heatmap(matrix.astype(float), ax=ax, cmap="viridis", square=True, cbar=False,
                xticklabels=False, yticklabels=False)
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


def paper_figure(state):
    fig, axes = plt.subplots(2, 3, figsize=(10, 7), constrained_layout=True)
    for ax, (letter, variant, kind) in zip(axes.flat, PANELS):
        if variant in analyses:
            draw(ax, analyses[variant].arrays[f"{state}.{kind}"], f"({letter}) {variant}\n{kind.upper()}", kind)
        else:
            ax.set_axis_off()
            ax.text(0.5, 0.5, f"({letter}) {variant}\nnot in this run", ha="center", va="center", fontsize=9)
    return fig


for state in ("trained", "init"):
    fig = paper_figure(state)
    book.glue(f"fig_paper_{state}", fig)
    plt.close(fig)

# %% [markdown]
# ## The paper's figure
#
# {numref}`fig-paper-trained` is the paper's figure redrawn from the models of profile
# {glue:text}`profile_name` after pretraining, {numref}`fig-paper-init` the same panels at
# initialisation (the same random seed as pretraining). Panels whose variant was not run are left
# empty (here: {glue:text}`panels_missing`).
#
# ```{glue:figure} fig_paper_trained
# :alt: Six heatmaps of dot products between position vectors after pretraining
# :name: fig-paper-trained
#
# Dot products between position vectors after pretraining, profile {glue:text}`profile_name`.
# (a)-(d): $p_x \cdot p_y$ of the absolute embedding over the first {glue:text}`seq_len`
# positions; (e), (f): $r_a \cdot r_b$ between the first layer's relative vectors of offsets
# $a, b \in [-${glue:text}`max_offset`$, ${glue:text}`max_offset`$]$ ($a = i - j$, query minus
# key position). Each panel has its own colour scale (bright: large).
# ```
#
# ```{glue:figure} fig_paper_init
# :alt: The same six heatmaps at initialisation
# :name: fig-paper-init
#
# The panels of {numref}`fig-paper-trained` at initialisation, before any pretraining.
# ```

# %% tags=["hide-input"]
ape_rows, rpe_rows = {}, {}
for name, artifact in analyses.items():
    payload, arrays = artifact.payload, artifact.arrays
    if "trained.ape" in arrays:
        ape_rows[name] = {**payload["trained"]["ape"],
                          **{f"{key} cosine": v for key, v in geometry.ape_locality(arrays["trained.ape"], window).items()},
                          "contrast at init": geometry.ape_locality(arrays["init.ape"], window)["contrast"]}
    if "trained.rpe" in arrays:
        bands = geometry.rpe_bands(arrays["trained.rpe"], small_offset)
        rpe_rows[name] = {**payload["trained"]["rpe"], **bands,
                          "norm_ratio at init": geometry.rpe_bands(arrays["init.rpe"], small_offset)["norm_ratio"]}
ape_table = pd.DataFrame.from_dict(ape_rows, orient="index").rename_axis("variant")
rpe_table = pd.DataFrame.from_dict(rpe_rows, orient="index").rename_axis("variant")
COLUMNS = ["monotonicity", "monotonicity_local", "translation_invariance"]  # a Gram matrix is symmetric
ape_table = ape_table[COLUMNS + ["near cosine", "far cosine", "contrast cosine", "contrast at init"]] if len(ape_table) else ape_table
rpe_table = rpe_table[COLUMNS + ["norm_ratio", "norm_ratio at init", "small_cosine", "large_cosine"]] if len(rpe_table) else rpe_table
SHORT = {"monotonicity": "mono.", "monotonicity_local": "local mono.", "translation_invariance": "transl. inv.",
         "near cosine": "near cos.", "far cosine": "far cos.", "contrast cosine": "contrast",
         "contrast at init": "contrast (init)", "norm_ratio": "norm ratio", "norm_ratio at init": "norm ratio (init)",
         "small_cosine": "small-offset cos.", "large_cosine": "large-offset cos."}


def value(table, variant, column):
    return float(table.loc[variant, column]) if variant in table.index else math.nan


# the paper's observations, measured
apes = ape_table["contrast cosine"].dropna() if len(ape_table) else pd.Series(dtype=float)
top = str(apes.idxmax()) if len(apes) else "none"
book.glue("top_contrast_variant", top)
book.glue("top_contrast", apes.max() if len(apes) else math.nan)
book.glue("top_agrees", "agrees with" if top == "ape-sin-learned" else "differs from")
for variant, key in [("ape-learned", "apel"), ("ape-sin-learned", "apesl"), ("ape-sin", "apes"),
                     ("ape-learned+rpe-learned", "apel_rpel"), ("ape-sin-learned+rpe-learned", "apesl_rpel")]:
    book.glue(f"{key}_contrast", value(ape_table, variant, "contrast cosine"))
    book.glue(f"{key}_contrast_init", value(ape_table, variant, "contrast at init"))
for variant, key in [("rpe-learned", "rpel"), ("ape-learned+rpe-learned", "apel_rpel")]:
    book.glue(f"{key}_norm_ratio", value(rpe_table, variant, "norm_ratio"))
    book.glue(f"{key}_norm_ratio_init", value(rpe_table, variant, "norm_ratio at init"))
    book.glue(f"{key}_small_cos", value(rpe_table, variant, "small_cosine"))
    book.glue(f"{key}_large_cos", value(rpe_table, variant, "large_cosine"))
for alone, combined, key in [("ape-learned", "ape-learned+rpe-learned", "apel"),
                             ("ape-sin-learned", "ape-sin-learned+rpe-learned", "apesl")]:
    for state in ("init", "trained"):
        both = alone in analyses and combined in analyses
        book.glue(f"{key}_similarity_{state}", geometry.map_similarity(
            analyses[alone].arrays[f"{state}.ape"], analyses[combined].arrays[f"{state}.ape"]) if both else math.nan)

# %% [markdown]
# ## The observations, measured
#
# Three numbers summarise each map (`pe_lib.geometry`); they are computed from the cosine
# similarities of the vectors, so that a few long vectors do not dominate:
#
# * **diagonal contrast** (APE): the mean cosine of position vectors at distance 1 to
#   {glue:text}`window`, minus that at distances above half the length. It is 0 when nearby
#   positions are no more alike than distant ones;
# * **norm ratio** (RPE): the mean squared norm of the vectors of offsets
#   $|a| \le$ {glue:text}`small_offset` over that of offsets $|a| > k/2$; above 1 the small
#   offsets stand out as bright bands;
# * **large-offset cosine** (RPE): the mean cosine between distinct offsets with $|a| > k/2$;
#   near 1 the large offsets all look alike.
#
# The tables also give the monotonicity (over all distances and over distances 1 to 8) and the
# translation invariance of each map, as defined in `pe_lib.properties` (chapter
# {ref}`properties`). Symmetry is left out: a Gram matrix is symmetric by construction
# ($r_a \cdot r_b = r_b \cdot r_a$ too), so the asymmetry of a relative embedding shows in
# attention ({ref}`probing`), not here.

# %% tags=["hide-input"]
(ape_table.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a")
 .set_caption("APE: indicators of p_x · p_y after pretraining")
 .set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
(rpe_table.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a")
 .set_caption("RPE: indicators of r_a · r_b after pretraining (first layer)")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# **Diagonal brightness.** After pretraining, the diagonal contrast of fully learnable APE is
# {glue:text}`apel_contrast:.3f` ({glue:text}`apel_contrast_init:.3f` at initialisation), that of
# learnable sinusoidal APE {glue:text}`apesl_contrast:.3f` ({glue:text}`apesl_contrast_init:.3f`
# at initialisation) and that of fixed sinusoidal APE {glue:text}`apes_contrast:.3f`. The largest
# among the absolute embeddings of this run is {glue:text}`top_contrast_variant`'s
# ({glue:text}`top_contrast:.3f`), which {glue:text}`top_agrees` the paper's observation that the
# learnable sinusoidal APE has the brightest diagonal. A sinusoidal APE starts with a bright
# diagonal (its $\psi(x - y)$ decreases near 0, chapter {ref}`sinusoid`); a fully learnable one
# starts from random vectors, so whatever diagonal it shows was learned.
#
# **Adding an RPE.** The cosine maps of the APE alone and of the APE combined with fully learnable
# RPE correlate at {glue:text}`apesl_similarity_trained:.3f` for learnable sinusoidal APE (the two
# start from the same frequencies: {glue:text}`apesl_similarity_init:.3f` at initialisation) and
# at {glue:text}`apel_similarity_trained:.3f` for fully learnable APE (the two models draw
# different random vectors: {glue:text}`apel_similarity_init:.3f` at initialisation, so only a
# pattern that both learned can raise it). With RPE, the diagonal contrasts are
# {glue:text}`apel_rpel_contrast:.3f` (fully learnable APE) and {glue:text}`apesl_rpel_contrast:.3f`
# (learnable sinusoidal APE), to compare with {glue:text}`apel_contrast:.3f` and
# {glue:text}`apesl_contrast:.3f` without: close values mean that the RPE changed the APE's
# picture little, as the paper reports.
#
# **Bands of the fully learnable RPE.** The norm ratio of the fully learnable RPE is
# {glue:text}`rpel_norm_ratio:.2f` after pretraining ({glue:text}`rpel_norm_ratio_init:.2f` at
# initialisation) and {glue:text}`apel_rpel_norm_ratio:.2f` with fully learnable APE
# ({glue:text}`apel_rpel_norm_ratio_init:.2f` at initialisation); the large offsets have a mean
# cosine of {glue:text}`rpel_large_cos:.3f` (alone) and {glue:text}`apel_rpel_large_cos:.3f`
# (combined), the small ones {glue:text}`rpel_small_cos:.3f` and
# {glue:text}`apel_rpel_small_cos:.3f`. The paper's bands correspond to a norm ratio well above 1
# and its "dark, similar" large offsets to a large-offset cosine near 1; random initial vectors
# give a ratio near 1 and cosines near 0, so the distance from the initial values is what
# pretraining did. Offsets beyond $\pm k$ share the vector of $\pm k$ (clipping,
# {cite:t}`shaw2018self`), which by itself makes far positions alike in attention.
#
# ## Every other variant
#
# {numref}`fig-others` shows the maps of the variants outside the paper's figure: the fixed
# sinusoidal APE {cite}`vaswani2017attention`, the sinusoidal RPEs (fixed, as in NEZHA
# {cite}`wei2019nezha`, and learnable) and the remaining combinations. RoPE, ALiBi and the T5 bias
# {cite}`su2021roformer,press2022train,raffel2020exploring` have neither absolute vectors nor a
# table of offset vectors; their position signal is only visible in attention ({ref}`probing`).

# %% tags=["hide-input"]
in_paper = {(v, kind) for _, v, kind in PANELS}
others = [(name, kind) for name in analyses for kind in ("ape", "rpe")
          if f"trained.{kind}" in analyses[name].arrays and (name, kind) not in in_paper]
book.glue("n_others", len(others))
ncols = 4
nrows = max(1, math.ceil(len(others) / ncols))
fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.4 * nrows), constrained_layout=True, squeeze=False)
for ax, (name, kind) in zip(axes.flat, others):
    draw(ax, analyses[name].arrays[f"trained.{kind}"], f"{name}\n{kind.upper()}", kind)
for ax in axes.flat[len(others):]:
    ax.set_axis_off()
if not others:
    axes.flat[0].text(0.5, 0.5, "no other variant with an APE or an offset table in this run", ha="center")
book.glue("fig_others", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_others
# :alt: Heatmaps of dot products of position vectors for the remaining variants
# :name: fig-others
#
# Dot products between position vectors after pretraining for the {glue:text}`n_others` maps of
# profile {glue:text}`profile_name` not in {numref}`fig-paper-trained`: APE maps over positions,
# RPE maps over offsets (first layer). Each panel has its own colour scale.
# ```
#
# The fixed sinusoidal maps do not change with training; they are the reference the learnable
# ones start from. A direction-blind sinusoidal RPE (the reading of the paper, `pe_lib`'s default)
# has $r_a = r_{-a}$, which shows as a map symmetric about both diagonals.
#
# ```{admonition} The smoke and cpu profiles
# :class: note
# Under the smoke profile the models are trained for a few dozen steps, so the maps after
# pretraining are close to those at initialisation and the comparisons above test the pipeline,
# not the paper. The cpu profile is the reproduction.
# ```
