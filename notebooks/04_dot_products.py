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
import warnings

import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import plots
from pe_book.chapters import common, dot_products
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `profile` chooses the artifacts; `variants` restricts the chapter to some position embeddings
# (empty: all of the profile's); `window` is the largest distance counted as "near" below.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's
results: str = "results"  # folder of the artifact store
window: int = 8  # distances 1..window are "near": the diagonal contrast and local monotonicity
small_offset: int = 2  # largest absolute offset counted as small in the RPE band measures

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = dot_products.compute(stored, variants, window, small_offset)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored)

# %% tags=["hide-input"]
for state in ("trained", "init"):
    fig = plots.position_maps(result.panels(state), ncols=3, size=(10 / 3, 3.5))
    notebook.glue(f"fig_paper_{state}", fig)
    plt.close(fig)

# %% [markdown]
# ## The paper's figure
#
# {numref}`fig-paper-trained` is the paper's figure redrawn from the models of profile
# {glue:text}`profile_name` after pretraining (pretraining seed 0 of each variant: the maps of one
# model, not an average over seeds), {numref}`fig-paper-init` the same panels at initialisation
# (the same random seed as pretraining). In this recipe the learned tables start from
# {glue:text}`learned_init`; a panel whose map is constant says so instead of showing one flat
# colour. Panels whose variant was not run say "not in this run" (here: {glue:text}`panels_missing`).
#
# ```{glue:figure} fig_paper_trained
# :alt: Six heatmaps of dot products between position vectors after pretraining
# :name: fig-paper-trained
#
# Dot products between position vectors after pretraining, profile {glue:text}`profile_name`.
# (a)-(d): $p_x \cdot p_y$ of the absolute embedding over the first {glue:text}`seq_len`
# positions; (e), (f): $r_a \cdot r_b$ between the first layer's relative vectors of offsets
# $a, b \in [-${glue:text}`max_offset`$, ${glue:text}`max_offset`$]$ ($a = i - j$, query minus
# key position). Each panel has its own colour scale (bright: large), spanning the 2nd to 98th
# percentile of its values, so a few extreme entries (one long vector) do not darken the rest.
# ```
#
# ```{glue:figure} fig_paper_init
# :alt: The same six heatmaps at initialisation
# :name: fig-paper-init
#
# The panels of {numref}`fig-paper-trained` at initialisation, before any pretraining.
# ```

# %% tags=["hide-input"]
SHORT = {"monotonicity": "mono.", "monotonicity_local": "local mono.", "translation_invariance": "transl. inv.",
         "near cosine": "near cos.", "far cosine": "far cos.", "contrast cosine": "contrast",
         "contrast at init": "contrast (init)", "norm_ratio": "norm ratio", "norm_ratio at init": "norm ratio (init)",
         "small_cosine": "small-offset cos.", "large_cosine": "large-offset cos."}

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
(result.ape_table.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a")
 .set_caption("APE: indicators of p_x · p_y after pretraining")
 .set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
(result.rpe_table.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a")
 .set_caption("RPE: indicators of r_a · r_b after pretraining (first layer)")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# **Diagonal brightness.** After pretraining, the diagonal contrast of fully learnable APE is
# {glue:text}`apel_contrast:.3f` ({glue:text}`apel_contrast_init_text`), that of
# learnable sinusoidal APE {glue:text}`apesl_contrast:.3f` ({glue:text}`apesl_contrast_init_text`)
# and that of fixed sinusoidal APE {glue:text}`apes_contrast:.3f`. The largest
# among the absolute embeddings of this run is {glue:text}`top_contrast_variant`'s
# ({glue:text}`top_contrast:.3f`), which {glue:text}`top_agrees` the paper's observation that the
# learnable sinusoidal APE has the brightest diagonal. A sinusoidal APE starts with a bright
# diagonal (its $\psi(x - y)$ decreases near 0, chapter {ref}`sinusoid`); a fully learnable one
# starts from {glue:text}`learned_init`, so whatever diagonal it shows was learned.
#
# **Adding an RPE.** The cosine maps of the APE alone and of the APE combined with fully learnable
# RPE correlate at {glue:text}`apesl_similarity_trained:.3f` for learnable sinusoidal APE (the two
# start from the same frequencies: {glue:text}`apesl_similarity_init_text`) and at
# {glue:text}`apel_similarity_trained:.3f` for fully learnable APE
# ({glue:text}`apel_similarity_init_text`; only a pattern that both models learned can raise it).
# With RPE, the diagonal contrasts are {glue:text}`apel_rpel_contrast:.3f` (fully learnable APE)
# and {glue:text}`apesl_rpel_contrast:.3f` (learnable sinusoidal APE), to compare with
# {glue:text}`apel_contrast:.3f` and {glue:text}`apesl_contrast:.3f` without: {glue:text}`rpe_effect`.
#
# **Bands of the fully learnable RPE.** The norm ratio of the fully learnable RPE is
# {glue:text}`rpel_norm_ratio:.2f` after pretraining ({glue:text}`rpel_norm_ratio_init_text`) and
# {glue:text}`apel_rpel_norm_ratio:.2f` with fully learnable APE
# ({glue:text}`apel_rpel_norm_ratio_init_text`); the large offsets have a mean
# cosine of {glue:text}`rpel_large_cos:.3f` (alone) and {glue:text}`apel_rpel_large_cos:.3f`
# (combined), the small ones {glue:text}`rpel_small_cos:.3f` and
# {glue:text}`apel_rpel_small_cos:.3f`. The paper's bands correspond to a norm ratio well above 1
# and its "dark, similar" large offsets to a large-offset cosine near 1. Random initial vectors
# would give a ratio near 1 and cosines near 0, and zero vectors no ratio at all, so whatever
# ratio and cosines the tables show after pretraining were learned. Offsets beyond $\pm k$ share the vector of $\pm k$ (clipping,
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
fig = plots.position_maps(result.others(), ncols=3, empty="no other variant with an APE or an offset table in this run")
notebook.glue("fig_others", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_others
# :alt: Heatmaps of dot products of position vectors for the remaining variants
# :name: fig-others
#
# Dot products between position vectors after pretraining for the {glue:text}`n_others` maps of
# profile {glue:text}`profile_name` not in {numref}`fig-paper-trained`: APE maps over positions,
# RPE maps over offsets (first layer). Each panel has its own colour scale, spanning the 2nd to
# 98th percentile of its values.
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
