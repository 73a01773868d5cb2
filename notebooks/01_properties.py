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
# (properties)=
# # Three properties of position embeddings
#
# {cite:t}`wang2021position` describe a position embedding by a proximity $\phi(x, y)$ between
# positions $x$ and $y$ (for example the dot product of their position vectors) and ask which of
# three properties it has:
#
# 1. **monotonicity**: the farther apart, the less similar,
#    $m > n \iff \phi(x, x + m) < \phi(x, x + n)$;
# 2. **translation invariance**: only the offset matters,
#    $\phi(x_1, x_1 + m) = \phi(x_2, x_2 + m)$;
# 3. **symmetry**: $\phi(x, y) = \phi(y, x)$.
#
# This chapter states, for every position embedding in `pe_lib`, which properties hold by
# construction, then measures them on small randomly initialised BERT models. A randomly
# initialised model has learned nothing, so the measurements show what each embedding *imposes*
# before training, and the same measurements after pretraining.

# %% tags=["hide-cell"]
import matplotlib.pyplot as plt

from pe_book import plots
from pe_book.chapters import common, properties
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# The defaults build small models that run in seconds; `pe-book book --profile cpu` uses
# BERT-base-sized layers. Rerun this chapter with other values through papermill, e.g.
# `papermill book/01_properties.ipynb out.ipynb -p seed 1`.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile whose pretrained models are measured at the end
results: str = "results"  # folder of the artifact store
variants: list[str] = [
    "none", "ape-learned", "ape-sin", "ape-sin-learned", "rpe-learned", "rpe-sin", "rpe-sin-learned",
    "alibi", "t5-bias", "rope", "ape-learned+rpe-learned", "ape-sin-learned+rpe-sin-learned",
]  # position embeddings to measure (see `pe-book variants --all`)
hidden_size: int = 64  # hidden size of the models
num_heads: int = 4  # attention heads (a relative vector has hidden_size / num_heads dimensions)
num_layers: int = 2  # layers (only the first layer's attention is probed)
length: int = 32  # positions (and offsets -length/2..length/2 for relative vectors)
n_words: int = 50  # random words averaged in identical-word probing
window: int = 8  # offsets 1..window for local monotonicity
seed: int = 0  # seed of the random initialisation and of the probing words

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = properties.compute(stored, variants, hidden_size, num_heads, num_layers, length, n_words, window, seed)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.param_table(params)

# %% [markdown]
# ## In theory
#
# For an absolute embedding (APE) $\phi(x, y) = \langle p_x, p_y \rangle$; for a relative one the
# proximity is the position term that the offset $x - y$ adds to the attention score of query $x$
# and key $y$. The table below summarises the argument of {cite:t}`wang2021position`, extended to
# three relative schemes they did not study ("local": only over a range of offsets).
#
# * A dot product is symmetric, so every APE is; only the sinusoidal ones are translation
#   invariant, because $\langle p_x, p_y \rangle = \psi(x - y)$ depends on the offset only, and
#   they are monotone only over a limited range of offsets ({ref}`sinusoid`). Fully learnable APE
#   {cite}`gehring2017convolutional,devlin2019bert` has none of this by construction.
# * A relative embedding is translation invariant by definition. Fully learnable RPE
#   {cite}`shaw2018self,huang2020improve` keeps separate vectors for $x - y$ and $y - x$, so it need
#   not be symmetric. Sinusoidal RPE {cite}`wei2019nezha` is locally monotone like sinusoidal APE;
#   built from $|x - y|$, as the paper reads it (and `pe_lib` does by default), it is symmetric.
# * ALiBi {cite}`press2022train` subtracts $\text{slope} \cdot |x - y|$: monotone, invariant and
#   symmetric. The T5 bias {cite}`raffel2020exploring` learns one scalar per bucket of $y - x$,
#   with separate buckets for each direction. RoPE {cite}`su2021roformer` rotates queries and keys
#   so that their score depends on $x - y$ only, but $q^\top R_{x-y} k \ne q^\top R_{y-x} k$ unless
#   $q = k$; its "long-term decay" bounds the score, without making it monotone.
#
# An APE combined with an RPE adds their position terms: the sum inherits a property only when
# both parts have it (translation invariance is lost with any APE). TUPE {cite}`ke2021rethinking`,
# probing studies {cite}`wang2020position` and the locality and symmetry indicators of
# {cite:t}`chen2023locality` look at the same questions from other angles.

# %% tags=["hide-input"]
properties.THEORY

# %% [markdown]
# ## Measured at initialisation
#
# For each variant the next cell builds a {glue:text}`hidden_size`-wide PEBert model (seed
# {glue:text}`seed`, dropout off) and computes three proximity matrices with
# `pe_lib.probing.proximity`:
#
# * the dot products of the absolute position vectors ($\phi[x, y] = p_x \cdot p_y$, APE
#   variants);
# * the dot products of the relative offset vectors of the first layer ($r_a \cdot r_b$ for
#   offsets $a, b$, `rpe-*` variants), the two kinds of maps of the paper's figure;
# * **identical-word probing** {cite}`wang2021position`: every token of a
#   {glue:text}`length`-token input is the same word, so the first layer's attention can only
#   depend on position; averaged over {glue:text}`n_words` random words and over heads. This is
#   the one measurement that every variant, absolute or relative, has.
#
# On each matrix, `pe_lib.properties.indicators` scores monotonicity (a rank correlation between
# distance and proximity, in $[-1, 1]$; locally over offsets up to {glue:text}`window`),
# translation invariance (the share of the variance explained by the offset, in $[0, 1]$) and
# symmetry (the correlation of $\phi[x, y]$ with $\phi[y, x]$); `chen_locality` and
# `chen_symmetry` are the attention indicators of {cite:t}`chen2023locality`.

# %% [markdown]
# ### Identical-word probing
#
# The table below gives the indicators of the first layer's attention under identical-word
# probing ({glue:text}`length` positions, {glue:text}`n_words` words, seed {glue:text}`seed`;
# "n/a": undefined, a constant map has no monotone trend), and {numref}`fig-probe` shows the
# maps.

# %% tags=["hide-input"]
SHORT = {"monotonicity_local": "local monotonicity", "translation_invariance": "translation inv.",
         "Chen locality": "Chen loc.", "Chen symmetry": "Chen sym."}
result.probe_table.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a").set_table_attributes('class="dataframe"')

# %% tags=["hide-input"]
fig = plots.heatmaps(result.probes, ncols=3)
notebook.glue("fig_probe", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_probe
# :alt: Heatmaps of first-layer identical-word attention, one per position embedding
# :name: fig-probe
#
# First-layer attention under identical-word probing at initialisation (rows: queries, columns:
# keys; each panel has its own colour scale).
# ```
#
# In this run, the measurements agree with the theory where the embedding fixes the answer
# before any training:
#
# * without position embedding every query attends uniformly to identical words; the map is
#   constant, so it is trivially translation invariant ({glue:text}`none_ti:.2f`) and has no
#   monotone trend (n/a);
# * ALiBi's fixed distance penalty makes attention fall with distance in every row: monotonicity
#   {glue:text}`alibi_mono:.2f`;
# * every purely relative variant scores at least {glue:text}`rel_ti_min:.2f` in translation
#   invariance, every purely absolute one at most {glue:text}`abs_ti_max:.2f`: the absolute
#   vector passes through LayerNorm together with the word embedding, and what reaches the
#   attention is no longer a function of the offset alone;
# * the direction-blind sinusoidal RPE is symmetric ({glue:text}`rpe_sin_sym:.2f`); the randomly
#   initialised learnable RPE ({glue:text}`rpe_learned_sym:.2f`) and T5 bias
#   ({glue:text}`t5_sym:.2f`) are not, since nothing ties $x - y$ to $y - x$.
#
# The fixed and the learnable sinusoidal variants start from the same frequencies, so their rows
# coincide here; they can only differ after pretraining.
#
# ### Dot products of position vectors
#
# {numref}`fig-gram` shows the maps of the paper's figure at initialisation, and the table below
# the indicators of $p_x \cdot p_y$ for the absolute embeddings.

# %% tags=["hide-input"]
result.gram_table.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a").set_table_attributes('class="dataframe"')

# %% tags=["hide-input"]
maps = {f"APE {k}": v for k, v in result.ape_grams.items() if "+" not in k}
maps.update({f"RPE {k}": v for k, v in result.rpe_grams.items() if "+" not in k})
fig = plots.heatmaps(maps, ncols=3, size=3.0, title_height=0.2)
notebook.glue("fig_gram", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_gram
# :alt: Heatmaps of dot products between position vectors at initialisation
# :name: fig-gram
#
# Dot products between position vectors at initialisation: $p_x \cdot p_y$ for absolute
# embeddings over {glue:text}`length` positions, $r_a \cdot r_b$ for the relative offset vectors
# of the first layer (offsets from $-$length/2 to length/2). Each panel has its own colour scale.
# ```
#
# The sinusoidal APE is exactly translation invariant ({glue:text}`ape_sin_gram_ti:.3f`): its
# map depends on $x - y$ only. The randomly initialised learnable APE scores
# {glue:text}`ape_learned_gram_ti:.3f`, close to what independent Gaussian vectors give,
# $D / (n + D)$ = {glue:text}`random_gram_ti:.3f`, all of it from the large diagonal. A Gram
# matrix is symmetric by construction, which is why symmetry is measured on attention above.
#
# ## After pretraining
#
# The same indicators for the pretrained models of profile {glue:text}`profile_name` (those of the
# variants above that the profile trains), measured by the pipeline on identical-word attention of
# the first layer (probe length and number of words fixed by the profile) and on the dot products
# of the absolute position vectors. {ref}`probing` and {ref}`dot-products` show the maps.

# %% tags=["hide-input"]
result.trained_probe.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a").set_table_attributes('class="dataframe"')

# %% [markdown]
# Identical-word attention after {glue:text}`trained_steps` pretraining steps, for the
# {glue:text}`n_trained` variants of this chapter that the profile trains (first layer).

# %% tags=["hide-input"]
result.trained_ape.rename(columns=SHORT).style.format("{:.3f}", na_rep="n/a").set_table_attributes('class="dataframe"')

# %% [markdown]
# Dot products $p_x \cdot p_y$ of the pretrained absolute embeddings. Fixed sinusoidal APE keeps
# translation invariance {glue:text}`trained_ape_sin_ti:.3f` whatever training does; the learnable
# APE, whose table starts from {glue:text}`trained_init` in profile {glue:text}`profile_name`'s
# recipe (not from the random vectors above), now scores {glue:text}`trained_ape_learned_ti:.3f`
# on translation invariance and {glue:text}`trained_ape_learned_mono:.3f` on monotonicity. How far
# a profile's models move from their initialisation depends on how long they are trained: the smoke
# profile's few steps barely move them; the cpu profile is the reproduction.
