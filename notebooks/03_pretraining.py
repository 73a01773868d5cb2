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
# (pretraining)=
# # Pretraining one model per position embedding
#
# {cite:t}`wang2021position` pretrain one BERT-base-sized encoder {cite}`devlin2019bert` per
# position embedding with the masked-language-model objective, then fine-tune each on GLUE and
# SQuAD. Their corpus, number of steps, batch size and learning rates are not known. This project
# defines its own *profiles* (`pe_book.experiments.profiles`): every model of a profile has the
# same size, data, optimiser and number of steps, and differs from the others only in its position
# embedding, so that differences between them can be put on the position embedding.
#
# This chapter reads the pretraining artifacts of one profile (`pe-book run` computes them; a
# missing one stops it with its name) and shows the training and validation loss of every variant,
# the final validation loss, and what the run cost.

# %% tags=["hide-cell"]
import math
import warnings

import matplotlib.pyplot as plt
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

import numpy as np

from pe_book import plateau
from pe_book.chapters import common, pretraining
from pe_book.chapters.escapes import margin_text
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `profile` chooses the artifacts (its folder of `results/`); `variants` restricts the chapter to some
# position embeddings (empty: all of the profile's); `trend_profile` names the longer runs of the
# scale trend (chapter {ref}`scale`), shown beside the others where they are stored. Rerun with, e.g.,
# `papermill book/03_pretraining.ipynb out.ipynb -p profile cpu`.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's (see `pe-book variants --all`)
results: str = "results"  # folder of the artifact store
trend_profile: str = ""  # the longer runs of the scale trend ("trend"); empty: not shown

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = pretraining.compute(stored, variants, common.open_results(trend_profile, results) if trend_profile else None)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored)

# %% [markdown]
# ## The setup
#
# Profile **{glue:text}`profile_name`**: {glue:text}`profile_description`. Every one of its
# {glue:text}`n_variants` models has hidden size {glue:text}`setup_hidden_size`,
# {glue:text}`setup_layers` layers of {glue:text}`setup_heads` attention heads and feed-forward
# size {glue:text}`setup_intermediate_size`, over a vocabulary of {glue:text}`setup_vocab_size`
# word pieces: {glue:text}`params_min:.2f` to {glue:text}`params_max:.2f` million parameters
# depending on the position embedding (BERT-base has about 110 million). Each is trained for
# {glue:text}`setup_steps` steps of {glue:text}`setup_batch_size` sequences of
# {glue:text}`setup_seq_len` tokens, i.e. {glue:text}`setup_tokens_m:.2f` million tokens, with
# peak learning rate {glue:text}`setup_lr:g` after {glue:text}`setup_warmup_steps` warm-up steps
# (precision: {glue:text}`precision`). On the machines that trained them
# ({glue:text}`machines`; torch {glue:text}`torch_version`, code at commit
# {glue:text}`git_commit`) the models processed
# {glue:text}`setup_tokens_per_s:,.0f` tokens per second on average, and pretraining took
# {glue:text}`setup_wall_min:.1f` minutes in all. The table lists these values; the full
# configuration and provenance of each number are in its artifact (in the profile's folder of `results/`).

# %% tags=["hide-input"]
result.setup_table()

# %% [markdown]
# ## Loss curves
#
# {numref}`fig-curves` shows the masked-language-model loss during training (the mean over the
# last logging interval) and on held-out validation blocks, for every variant, beside two
# baselines: the uniform guess over the vocabulary, and a **unigram model** that predicts every
# masked token from the token frequencies of the training blocks (add-one smoothing), scored on
# exactly the masked validation tokens of the models' validation loss
# (`pe_book.experiments.baselines`). A model at the unigram loss has learned which words are
# frequent and nothing about their context.

# %% tags=["hide-input"]
curves, names = result.curves, result.names
sns.set_theme(style="whitegrid", context="notebook")
palette = dict(zip(names, sns.color_palette("tab20", len(names))))
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), constrained_layout=True, sharey=True)
for ax, split in zip(axes, ("train", "validation")):
    part = curves[curves["split"] == split]
    sns.lineplot(part, x="step", y="loss", hue="variant", palette=palette, ax=ax, marker="o",
                 markersize=4, legend=split == "validation")
    ax.set(title=f"{split} loss", xlabel="step", ylabel="MLM loss (nats)")
for ax in axes:
    ax.axhline(math.log(result.setup["vocab_size"]), color="grey", lw=0.8, ls="--")
    ax.axhline(result.unigram_loss, color="C3", lw=1.0, ls=":")
axes[1].legend(fontsize="x-small", ncol=1, loc="center left", bbox_to_anchor=(1.01, 0.5))
notebook.glue("fig_curves", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_curves
# :alt: Training and validation MLM loss against step, one line per position embedding
# :name: fig-curves
#
# Masked-language-model loss of every variant of profile {glue:text}`profile_name`: training
# (left, mean over each logging interval) and validation (right). Dashed grey: $\ln V$ =
# {glue:text}`log_vocab:.2f`, the loss of a uniform guess over the vocabulary; dotted red: the
# unigram model's validation loss ({glue:text}`unigram_loss:.2f`; the training curves are on other
# tokens and show it only as a guide).
# ```
#
# ## Final validation loss

# %% tags=["hide-input"]
if result.cited["seed_variants"]:
    seed_note = (f"Between the seeds of a variant the final validation loss differs by up to "
                 f"{result.cited['seed_spread_max']:.3f} nats ({result.cited['seed_spread_variant']}; each variant's own "
                 "spread is in the table): a gap between two variants smaller than their spreads may be a difference "
                 "between seeds.")
else:
    seed_note = "Every variant has one pretraining seed here, so the spread over seeds is not measured."
notebook.glue("seed_note", seed_note)
(result.final.style.format({"validation loss": "{:.3f}", "perplexity": "{:,.0f}", "tokens/s": "{:,.0f}",
                           "wall (s)": "{:.1f}", "parameters": "{:,.0f}", "seeds": "{:.0f}", "seed spread": "{:.3f}"},
                          na_rep="—")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# The curves above and the first five columns are those of pretraining seed 0 of each variant;
# *seeds* is how many models of the variant the profile pretrains (each from its own seed) and
# *seed spread* the range of their final validation losses (largest minus smallest).
# {glue:text}`seed_note`
#
# The table lists the variants from the lowest final validation loss to the highest, with the
# unigram model as the row **baseline: unigram** (scored on the same
# {glue:text}`unigram_tokens` masked validation tokens): {glue:text}`below_unigram` variants have
# a lower loss; the best variant is {glue:text}`unigram_margin:.3f` nats below it (negative:
# above it). The lowest is
# {glue:text}`best_variant`'s ({glue:text}`best_loss:.3f`), the highest
# {glue:text}`worst_variant`'s ({glue:text}`worst_loss:.3f`), a range of
# {glue:text}`loss_range:.3f` nats. BERT without any position embedding
# {glue:text}`none_standing`: a masked word can often be guessed
# from the bag of the other words, so the language-model loss alone says little about how well a
# position embedding serves the tasks of the next chapters. ALiBi {glue:text}`alibi_standing`.
# It was made for causal language models, whose mask tells a
# word which words come before it; in a bidirectional encoder its bias $-m\,|j - i|$ is symmetric
# (chapter 1): it tells a word how far another word is, never on which side. That may be why it
# trails the best variant; this book does not test it.
#
# ```{admonition} How far these models are from the paper's
# :class: warning
# The paper's models are BERT-base-sized and pretrained for far longer; here each model of profile
# {glue:text}`profile_name` sees {glue:text}`setup_tokens_m:.2f` million tokens. Under the smoke
# profile the models stay close to the uniform guess ({glue:text}`log_vocab:.2f` nats): they only
# show that the pipeline runs end to end. The cpu profile (`pe-book book --profile cpu`) is this
# project's reproduction.
# ```

# %% [markdown]
# ## When each model leaves none's plateau
#
# Without a position embedding a masked-language model can only learn which words go together,
# and its validation loss settles on a **plateau**: that of `none`. A model that learns to use
# word order goes below it. The plateau is the mean validation loss of none's
# {glue:text}`plateau_none_seeds` pretraining seeds at each evaluation step, and a model has
# **left** it at the first evaluation step from which its validation loss stays more than a
# margin below the plateau, at every later evaluation (a dip that comes back, or a loss spike,
# does not count). The margin is {glue:text}`plateau_margin_text`. A model still within the
# margin at its last evaluation **did not leave** within its budget of {glue:text}`escape_budget:,.0f`
# steps, and gets no step. The models are evaluated every {glue:text}`plateau_every:,.0f` steps, the
# first time at step {glue:text}`plateau_first_step:,.0f`: a step says when, to within that interval.
# The rule and its reasons are in `pe_book.plateau`.
#
# Of the models pretrained for {glue:text}`escape_budget:,.0f` steps here, {glue:text}`plateau_text`.
# The table gives each variant's escape step per pretraining seed (in seed order) and their mean
# with an interval: a t interval over the seeds ({glue:text}`plateau_level`, clipped to the steps
# evaluated) with three seeds or more, the range (smallest to largest) with two, none with one;
# where some seed did not leave, only how many did. {numref}`fig-plateau` shows every seed's
# curve, and chapter {ref}`findings` sets the APE models' escape steps beside their fine-tuning
# scores.

# %% tags=["hide-input"]
c = result.cited
result.escapes.shown()

# %% tags=["hide-input"]
escapes = result.escapes
families = [f for f in plateau.FAMILIES if f in set(escapes.curves["family"])]
panels = [(f, escapes) for f in families] + ([("trend", result.trend)] if result.trend is not None else [])
ncols = 3
fig, axes = plt.subplots(math.ceil(len(panels) / ncols), ncols, figsize=(11, 3.2 * math.ceil(len(panels) / ncols)),
                         constrained_layout=True, sharey=True, squeeze=False)
for ax, (family, found) in zip(axes.flat, panels):
    base = found.none_plateau
    steps, loss = np.array(base.steps), np.array(base.loss)
    ax.fill_between(steps, loss - base.margin, loss + base.margin, color="grey", alpha=0.35, lw=0)
    ax.plot(steps, loss, color="black", lw=0.8)
    part = found.curves if family == "trend" else found.curves[found.curves["family"] == family]
    for i, (variant, runs) in enumerate(part.groupby("variant", sort=False)):
        for j, (seed, run) in enumerate(runs.groupby("pretraining seed")):
            ax.plot(run["step"], run["loss"], color=f"C{i}", lw=1, ls=("-", "--", ":", "-.")[j % 4],
                    label=variant if j == 0 else None)
            step = found.table.loc[(variant, seed), "escape"]
            if step is not None:
                ax.plot(step, run.set_index("step")["loss"][step], "o", color=f"C{i}", ms=4)
    ax.set_title(f"profile {trend_profile}: {c['trend_budget']:,} steps" if family == "trend" else family, fontsize=10)
    ax.set_xlabel("step", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=7, loc="upper right")
for ax in axes[:, 0]:
    ax.set_ylabel("validation MLM loss (nats)", fontsize=9)
for ax in axes.flat[len(panels):]:
    ax.set_axis_off()
notebook.glue("fig_plateau", fig)
plt.close(fig)


def trend_text(found):
    """When the trend profile's runs left their none's plateau, in words (found: their Escapes, or None)."""
    if not trend_profile:
        return "The longer runs of the scale trend are not shown here (the parameter `trend_profile` is empty)."
    if found is None:
        return f"Profile {trend_profile} stores no pretraining of none yet, so its runs are not shown."
    rows = found.table[found.table["family"] != plateau.NONE]
    runs = "; ".join(f"{v} (seed {p}) " + (f"left it at step {s:,}" if s is not None else f"did not leave it within {b:,} steps")
                     for (v, p), s, b in zip(rows.index, rows["escape"], rows["budget"]))
    return (f"The last panel shows profile {trend_profile}'s runs of {c['trend_budget']:,} steps over the plateau of "
            f"its own none, whose margin is {margin_text(found.none_plateau)}: {runs}.")


notebook.glue("trend_plateau_text", trend_text(result.trend))

# %% [markdown]
# ```{glue:figure} fig_plateau
# :alt: Validation loss against step for every pretraining seed, one panel per family of position embedding, over none's plateau
# :name: fig-plateau
#
# Validation MLM loss of every pretraining seed of profile {glue:text}`profile_name`, one panel
# per family of position embedding (a colour per variant, a line style per seed), over none's
# plateau (black: the mean of none's seeds; grey band: the plateau plus and minus the margin of
# {glue:text}`plateau_margin:.3f` nats). A dot marks where a seed left the plateau: below the
# band, and below it at every later evaluation. {glue:text}`trend_plateau_text`
# ```
