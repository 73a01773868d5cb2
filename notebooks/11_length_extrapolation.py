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
# (extrapolation)=
# # Length extrapolation
#
# Every model of this book is pretrained on inputs of one length. Can it read longer ones? The
# answer depends on the position embedding, and it is where absolute and relative embeddings
# differ most plainly:
#
# * a **fully learnable APE** {cite}`gehring2017convolutional,devlin2019bert` has one vector per
#   position up to `max_position_embeddings`. Beyond that the model cannot encode the input at
#   all; between the pretraining length and that maximum the vectors exist but were never trained;
# * a **sinusoidal APE** {cite}`vaswani2017attention` is defined at every position, and
#   $\langle p_x, p_y\rangle = \sum_i \cos(w_i (x - y))$ depends only on the offset
#   ({ref}`sinusoid`): its dot products are translation invariant, which is why Vaswani et al.
#   hoped it would "extrapolate to sequence lengths longer than the ones encountered during
#   training". The vectors themselves, added to the word embeddings, are not invariant, and the
#   model has only seen the first positions;
# * an **RPE** {cite}`shaw2018self,wei2019nezha` depends only on the offset $i - j$, clipped to
#   $[-k, k]$, so a longer input brings no offset the model has not seen. {cite:t}`wang2021position`
#   argue that translation invariance is one of the properties that help; here it is put to a
#   test it should pass by construction;
# * **ALiBi** {cite}`press2022train` ("train short, test long") claims that a fixed linear
#   distance penalty lets a language model extrapolate; **T5's bias** {cite}`raffel2020exploring`
#   puts all long offsets into one bucket; **RoPE** {cite}`su2021roformer` rotates queries and
#   keys by angles the model has seen only up to the pretraining length.
#
# This chapter measures it: the masked-language-model loss of every pretrained model of the
# profile on the same validation text cut into inputs of 1, 2 and 4 times the pretraining length.
# ALiBi's claim is about left-to-right language models; these are bidirectional masked language
# models, a different setting.

# %% tags=["hide-cell"]
import warnings

import matplotlib.pyplot as plt
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book.chapters import common, length_extrapolation
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `profile` chooses the artifacts (its folder of `results/`); `variants` restricts the chapter to some
# position embeddings (empty: all of the profile's). The lengths and the number of validation
# tokens are fields of the profile (`extrapolation_multipliers`, `extrapolation_tokens`).

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's
results: str = "results"  # folder of the artifact store

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = length_extrapolation.compute(stored, variants)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored)

# %% [markdown]
# ## How the loss is measured
#
# The first {glue:text}`stream_tokens` tokens of the validation text are masked once with the
# pretraining rule ({glue:text}`mask_percent:g`% of the tokens chosen, of those 80% replaced by
# [MASK], 10% by a random token, 10% kept; seed {glue:text}`seed`) and then cut into
# `[CLS] ... [SEP]` inputs of
# {glue:text}`lengths` tokens (the pretraining length is {glue:text}`train_length`; learned
# absolute embeddings have {glue:text}`max_positions` positions). At every length the same
# {glue:text}`scored_tokens` masked tokens are scored, so the lengths differ only in how much
# context each token sees and at which position it sits. The loss is the mean cross-entropy over
# those tokens (nats; perplexity $= e^{\text{loss}}$), computed in {glue:text}`precision` like the
# pretraining; `pe_lib.extrapolation` gives the equations. Computing it took
# {glue:text}`wall_s:.1f` s for all {glue:text}`n_variants` variants.
#
# ## Loss at each length
#
# The table and figures are of pretraining seed 0 of each variant. {glue:text}`seed_note`

# %% tags=["hide-input"]
if result.cited["seed_variants"]:
    seed_note = (f"{result.cited['seed_variants']} variants have more pretraining seeds; between their seeds the loss "
                 f"at one length differs by up to {result.cited['seed_spread_max']:.3f} nats "
                 f"({result.cited['seed_spread_variant']} at {result.cited['seed_spread_length']} the pretraining "
                 "length), so a difference between variants smaller than that may be a difference between seeds.")
else:
    seed_note = "Every variant has one pretraining seed here, so the spread over seeds is not measured."
notebook.glue("seed_note", seed_note)
shown = result.shown()
formats = {c: "{:,.1f}" if c.startswith("perplexity") else "{:+.3f}" if c.startswith("change") else "{:.3f}"
           for c in shown.columns}
shown.style.format(formats, na_rep="cannot run").set_table_attributes('class="dataframe"')

# %% [markdown]
# A cell reads **cannot run** where the model cannot encode an input of that length: its learned
# absolute embedding has no vector for the last positions. The error each such model raised is
# listed below (the table is empty when every variant ran at every length).

# %% tags=["hide-input"]
result.cannot_run.style.hide(axis="index").set_table_attributes('class="dataframe"')

# %% [markdown]
# Of the {glue:text}`n_all_lengths` variants that ran at every length, the change of the loss
# from 1x to {glue:text}`longest` is smallest for **{glue:text}`least_change_variant`**
# ({glue:text}`least_change:+.3f` nats) and largest for **{glue:text}`most_change_variant`**
# ({glue:text}`most_change:+.3f`). BERT without position embedding, whose loss can change only
# through the longer context, changed by {glue:text}`none_change`: the yardstick for what a
# position embedding adds. Ranked by their change (1: the smallest; then the change in nats):
# ALiBi {glue:text}`rank_alibi`, sinusoidal APE {glue:text}`rank_ape_sin`, fully learnable RPE
# {glue:text}`rank_rpe_learned`, RoPE {glue:text}`rank_rope`, T5's bias {glue:text}`rank_t5_bias`.
# Fully learnable APE, at {glue:text}`second` the pretraining length, where its positions past
# the pretraining length were never trained, changed by {glue:text}`ape_learned_2x_change`;
# {glue:text}`n_cannot_run` variants
# ({glue:text}`cannot_run_list`) cannot run at every length. At the pretraining length the
# lowest loss is {glue:text}`best_1x`'s ({glue:text}`best_1x_loss:.3f`).
# {numref}`fig-extrapolation-lengths` draws the table.

# %% tags=["hide-input"]
table, multipliers = result.table, result.multipliers
sns.set_theme(style="whitegrid", context="notebook")
palette = dict(zip(result.names, sns.color_palette("tab20", len(result.names))))
long = table["loss"].reset_index().melt(id_vars="variant", var_name="length", value_name="loss")
long["multiplier"] = long["length"].str.rstrip("x").astype(float)
long["change"] = long["loss"] - long["variant"].map(table[("loss", "1x")])
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), constrained_layout=True)
for ax, column, label in zip(axes, ("loss", "change"), ("MLM loss (nats)", "loss - loss at 1x (nats)")):
    sns.lineplot(long.dropna(subset=[column]), x="multiplier", y=column, hue="variant", palette=palette, marker="o",
                 markersize=5, ax=ax, legend=column == "change")
    ax.set(xscale="log", xticks=[float(m.rstrip("x")) for m in multipliers], xticklabels=multipliers,
           xlabel="input length / pretraining length", ylabel=label)
    ax.minorticks_off()
axes[1].axhline(0, color="grey", lw=0.8, ls="--")
axes[1].legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.01, 0.5))
notebook.glue("fig_lengths", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_lengths
# :alt: MLM loss against input length (1x, 2x, 4x the pretraining length), one line per variant
# :name: fig-extrapolation-lengths
#
# Masked-language-model loss of every variant of profile {glue:text}`profile_name` on inputs of
# 1x, 2x and 4x the pretraining length ({glue:text}`lengths` tokens), the same scored tokens at
# every length. Left: the loss; right: its change from 1x. A line that stops early belongs to a
# variant that cannot run at the longer lengths.
# ```
#
# ## Where the loss grows
#
# An input of {glue:text}`longest` the pretraining length holds tokens at positions the model has
# seen in pretraining and tokens beyond them. {numref}`fig-extrapolation-positions` shows, at the
# longest length and in buckets of {glue:text}`bucket` positions, the loss (left) and its change
# against the same tokens at 1x (right). The change compares each token with itself, so what
# the tokens themselves contribute cancels out and only the effect of the longer input and of
# the position remains; bands are ± one standard error (tokens counted as independent).

# %% tags=["hide-input"]
buckets, family = result.buckets, length_extrapolation.family
panels = [f for f in length_extrapolation.FAMILIES if f in set(map(family, buckets["variant"]))]
fig, axes = plt.subplots(max(1, len(panels)), 2, figsize=(10, 3.2 * max(1, len(panels)) + 0.5), sharex=True,
                         sharey="col", constrained_layout=True, squeeze=False)
for row, panel in enumerate(panels):
    for column, (value, label) in enumerate((("loss", "MLM loss (nats)"), ("change", "loss - same tokens at 1x (nats)"))):
        ax = axes[row, column]
        for variant, part in buckets[buckets["variant"].map(family) == panel].groupby("variant", sort=False):
            spread = part["se" if value == "loss" else "change_se"]
            ax.plot(part["centre"], part[value], marker="o", markersize=3, color=palette[variant], label=variant)
            ax.fill_between(part["centre"], part[value] - spread, part[value] + spread, color=palette[variant],
                            alpha=0.2, lw=0)
        ax.axvline(result.train_length - 0.5, color="grey", lw=0.8, ls="--")
        if value == "change":
            ax.axhline(0, color="grey", lw=0.8)
        ax.set(title=panel, xlabel="position in the input" if row == len(panels) - 1 else "", ylabel=label)
    axes[row, 0].legend(fontsize="small", loc="best")
notebook.glue("fig_positions", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_positions
# :alt: Loss and its change against 1x by position at the longest input length, one row per family of position embeddings
# :name: fig-extrapolation-positions
#
# Left: loss by position bucket ({glue:text}`bucket` positions wide) at {glue:text}`longest` the
# pretraining length, one line per variant that can run there, a row per kind of position
# embedding. Right: the change of the same tokens' loss against 1x. Bands: ± one standard error.
# Dashed: the pretraining length ({glue:text}`train_length`); to its right lie positions no model
# saw in pretraining.
# ```
#
# The table sums this up at the longest length: the loss of the tokens inside the pretraining
# length and beyond it, and the change of each group against the same tokens at 1x. The tokens
# that moved beyond the pretraining length changed most for {glue:text}`largest_jump_variant`
# ({glue:text}`largest_jump:+.3f` nats) and least for {glue:text}`smallest_jump_variant`
# ({glue:text}`smallest_jump:+.3f`), over the {glue:text}`n_split` variants that ran there;
# without position embedding the change was {glue:text}`none_jump`. Tokens inside also see
# more context than in pretraining (to their right), so their change need not be zero either.

# %% tags=["hide-input"]
(result.split.sort_values("change beyond").style.format("{:.3f}", subset=["loss inside", "loss beyond"])
 .format("{:+.3f}", subset=["change inside", "change beyond"]).format("{:.3f}", subset=["change beyond se"])
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ```{admonition} The smoke profile
# :class: warning
# Under the smoke profile the models are pretrained for a few dozen steps on short inputs and stay
# close to a unigram guess, so their loss barely depends on the context or on positions: the
# differences between variants and lengths above are noise and mean nothing. They show that the
# measurement runs end to end, including the variants that cannot run. The cpu profile
# (`pe-book book --profile cpu`) is the reproduction.
# ```
