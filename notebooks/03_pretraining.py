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
# This chapter reads the pretraining artifacts of one profile (`pe-book run` computes them, the
# chapter computes what is missing) and shows the training and validation loss of every variant,
# the final validation loss, and what the run cost.

# %% tags=["hide-cell"]
import math
import warnings

import matplotlib.pyplot as plt
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import notebook
from pe_book.chapters import common, pretraining

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `profile` chooses the artifacts (its folder of `results/`); `variants` restricts the chapter to some
# position embeddings (empty: all of the profile's). Rerun with, e.g.,
# `papermill book/03_pretraining.ipynb out.ipynb -p profile cpu`.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's (see `pe-book variants --all`)
results: str = "results"  # folder of the artifact store

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
runner = common.open_runner(profile, results)
result = pretraining.compute(runner, variants)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, runner)

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
