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
# (probing)=
# # Identical-word probing after pretraining
#
# Dot products of position vectors ({ref}`dot-products`) exist only for embeddings that have
# vectors; RoPE, ALiBi and the T5 bias have none, and even for an APE what reaches attention has
# passed through LayerNorm together with the word embedding. {cite:t}`wang2021position` therefore
# also probe attention directly, with **identical-word probing**: every token of the input is the
# same word, so whatever varies in the first layer's attention map can only come from positions.
# The map is averaged over many random words and over the heads. This chapter shows the maps of
# every pretrained model and scores them with the property indicators of `pe_lib.properties`
# (chapter {ref}`properties`) and with the locality and symmetry indicators of
# {cite:t}`chen2023locality`, at initialisation and after pretraining. Other probes of what
# position embeddings learn are discussed by {cite:t}`wang2020position`.

# %% tags=["hide-cell"]
import warnings

import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import plots, tables
from pe_book.chapters import common, probing
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `layer` is the probed layer (0: the first, as in the paper); the probe itself (length, number of
# words) is fixed by the profile, since it is part of the artifacts.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's
results: str = "results"  # folder of the artifact store
layer: int = 0  # layer whose attention is shown (0: the first)

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = probing.compute(stored, variants, layer)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored)

# %% tags=["hide-input"]
for state, maps in result.maps.items():
    fig = plots.heatmaps(maps, ncols=3, size=2.8, title_size=12)
    notebook.glue(f"fig_probe_{state}", fig)
    plt.close(fig)

# %% [markdown]
# ## The maps
#
# Every input is one word repeated {glue:text}`probe_length` times (no [CLS] or [SEP]); the maps
# average the attention probabilities of layer {glue:text}`layer_number` over
# {glue:text}`probe_words` random words and over the heads.
#
# ```{glue:figure} fig_probe_trained
# :alt: Grid of heatmaps of first-layer attention under identical-word probing, one per variant
# :name: fig-probe-trained
#
# Attention of layer {glue:text}`layer_number` under identical-word probing after pretraining,
# profile {glue:text}`profile_name` (rows: query positions, columns: key positions; each panel has
# its own colour scale, bright: more attention).
# ```
#
# ```{glue:figure} fig_probe_init
# :alt: The same grid of attention heatmaps at initialisation
# :name: fig-probe-init
#
# The maps of {numref}`fig-probe-trained` at initialisation.
# ```
#
# ## The indicators
#
# The first table gives the indicators of each map after pretraining: monotonicity over all
# offsets and locally (offsets 1 to 8), translation invariance, symmetry (chapter
# {ref}`properties` defines them), and the locality and symmetry of {cite:t}`chen2023locality`.
# "n/a": undefined (a constant map has no monotone trend). The second gives the change from
# initialisation: pretraining is what the paper's claims are about, and an indicator that does not
# move was fixed by the embedding's construction.
#
# Maps and indicators are those of pretraining seed 0 of each variant. {glue:text}`seed_note`

# %% tags=["hide-input"]
if result.cited["seed_variants"]:
    seed_note = (f"{result.cited['seed_variants']} variants have more pretraining seeds; between their seeds the "
                 f"indicators of layer {result.cited['layer_number']} differ by up to "
                 f"{result.cited['seed_spread_max']:.2f} (the {result.cited['seed_spread_indicator']} of "
                 f"{result.cited['seed_spread_variant']}), so a difference between variants smaller than that may be "
                 "a difference between seeds.")
else:
    seed_note = "Every variant has one pretraining seed here, so the spread over seeds is not measured."
notebook.glue("seed_note", seed_note)

# %% tags=["hide-input"]
SHORT = {k: v.replace("translation invariance", "translation inv.") for k, v in tables.LABELS.items()}
(result.trained.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a")
 .set_caption("Indicators after pretraining").set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
(result.delta.rename(columns=SHORT).style.format("{:+.3f}", na_rep="n/a")
 .background_gradient(cmap="RdBu", vmin=-0.5, vmax=0.5)
 .set_caption("Change from initialisation (after minus before)").set_table_attributes('class="dataframe"'))

# %% [markdown]
# What the tables show for profile {glue:text}`profile_name`:
#
# * **Translation invariance** follows the kind of embedding: every purely relative variant scores
#   at least {glue:text}`rel_ti_min:.2f`, every purely absolute one at most
#   {glue:text}`abs_ti_max:.2f`: {glue:text}`ti_separated` the theory of chapter {ref}`properties`
#   expects (a relative embedding depends on the offset by construction; an absolute one mixes
#   with the word embedding before attention).
# * **Monotonicity**: the highest local monotonicity after pretraining is
#   {glue:text}`top_local`'s ({glue:text}`top_local_value:.2f`); local monotonicity rose during
#   pretraining for {glue:text}`local_rose` variants. ALiBi's distance penalty makes it monotone by
#   construction ({glue:text}`alibi_mono:.2f` over all offsets).
# * **Symmetry**: the fully learnable RPE scores {glue:text}`rpel_sym:.2f`
#   ({glue:text}`rpel_sym_init:.2f` at initialisation), the T5 bias {glue:text}`t5_sym:.2f`, the
#   direction-blind sinusoidal RPE {glue:text}`rpes_sym:.2f` (not exactly 1: each row of
#   attention is normalised on its own, and rows near the ends see fewer keys on one side). The
#   paper argues that an RPE with separate vectors for $i - j$ and $j - i$ is asymmetric; the
#   first two values against the third test that.
# * Without position embedding, every token attends alike to identical words: the map is constant
#   (translation invariance {glue:text}`none_ti:.2f`, monotonicity undefined).
#
# Across all indicators and variants the mean absolute change from initialisation is
# {glue:text}`mean_abs_change:.3f`; the largest change is {glue:text}`most_moved`'s
# ({glue:text}`most_moved_value:.3f`). How these indicators relate to the fine-tuning scores is
# the subject of {ref}`findings`.
#
# ```{admonition} The smoke and cpu profiles
# :class: note
# Under the smoke profile the models are trained for a few dozen steps and probed with few words:
# the maps after pretraining are close to those at initialisation and carry sampling noise. The
# cpu profile is the reproduction.
# ```
