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
# (cls-untying)=
# # The [CLS] hypothesis: untying [CLS] from positions
#
# On classification, the fully learnable APE of BERT beats the relative embeddings in
# {cite:t}`wang2021position`, and the paper's explanation is the [CLS] token: its output
# classifies the sentence, it always sits at position 0, and an APE can give it a vector of its
# own, while a relative embedding relates it to each word only by the offset, exactly as if it
# were the first word of the sentence. TUPE {cite}`ke2021rethinking` makes the same diagnosis and
# *unties* [CLS]: the positional part of its attention scores is replaced by learned constants.
#
# If the explanation is right, untying [CLS] should close (some of) the gap between a relative
# embedding and fully learnable APE on classification. This chapter tests it. The variants
# `rpe-learned+untie-cls` and `rpe-sin-learned+untie-cls` are the paper's learnable RPEs with
# TUPE's untying, pretrained and fine-tuned exactly like every other variant of the profile.
#
# ## What untying does
#
# A score-bias relative embedding adds $b_{ij}$ to the attention score of query $i$ and key $j$
# (for the fully learnable RPE of {cite:t}`shaw2018self`, $b_{ij} = q_i \cdot r_{i-j} / \sqrt{d}$).
# With [CLS] at position 0, untying resets its row and column (`pe_lib.positions.UntiedCLS`):
#
# $$
# b'_{0j} = \theta_1 \;\; (\text{every } j), \qquad b'_{i0} = \theta_2 \;\; (i > 0), \qquad
# b'_{ij} = b_{ij} \;\; \text{otherwise},
# $$
#
# with learned scalars per head. TUPE's $\theta_1$ is the same along the whole row, which the
# softmax over that row ignores, so it is fixed at 0 here; $\theta_2$ is learned, starting at 0.
# [CLS] then attends to the words without regard to where they are, and each word attends to
# [CLS] in the same way wherever it is; the test `test_untied_cls_sees_no_word_order` checks the
# first property.

# %% tags=["hide-cell"]
import warnings

import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import plots, tables
from pe_book.chapters import cls_untying, common
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `reference` is the variant whose lead is to be explained (fully learnable APE); every
# `+untie-cls` variant of `variants` is compared with it and with its tied counterpart.
# `tasks` and `seeds` restrict the chapter (empty: the profile's); `split` chooses the scored split.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # variants to read; empty: the profile's
results: str = "results"  # folder of the artifact store
reference: str = "ape-learned"  # the variant whose lead on classification is to be explained
tasks: list[str] = []  # tasks; empty: the profile's (grouped into score columns as in the findings chapter)
seeds: list[int] = []  # fine-tuning seeds; empty: the profile's
split: str = "test"  # split whose scores are shown: test or validation

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = cls_untying.compute(stored, variants, reference, tasks, seeds, split)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored, result.tasks)

# %% [markdown]
# ## Scores
#
# The compared variants are {glue:text}`pairs_text`, each also against {glue:text}`reference`.
# Scores are in percent, each task's score the mean of its metrics, and each column the mean
# over its tasks, per run, in the columns of {ref}`findings` (tasks that need word order apart
# from those that do not): {glue:text}`groups_text`. Cells give the mean over the pretrained
# models ± the standard deviation of single runs (as in {ref}`classification`), with
# {glue:text}`seed_design`.
#
# A verdict rests only on a column the models learned, by the gate of {ref}`findings`: the best
# variant (of the variants read that have a pretraining variance of their own) beats every
# order-free baseline of each of the column's tasks beyond its interval and, where the tasks need
# word order, the `none` variant; a rule that reads word order is a reference there, never a
# bar. Here {glue:text}`testable_text`; on the other columns both verdicts read "not testable at
# this scale".

# %% tags=["hide-input"]
tables.style_summary(result.summary)

# %% [markdown]
# ## Does untying close the gap?
#
# For each untied variant and column: the gap before untying ({glue:text}`reference` minus the tied RPE),
# after (minus the untied one), the share of the gap that untying closed, the gain of untying
# (untied minus tied) with its interval, and two verdicts under the rule of {ref}`findings`:
# *untying helps* (the untied variant beats the tied one) and *reference still ahead* (the
# reference beats the untied variant). The two comparisons of a pair are one family: intervals
# from both pretraining and fine-tuning seeds, Holm's correction over the two, Bonferroni
# intervals ("its level" names each one's). Untying **narrows** the gap when both are supported,
# **closes** it when it helps and no remaining gap is detected, **reverses** it when the untied
# variant is shown ahead of the reference, and **widens** it when the untied variant is shown
# behind the tied one. The intervals
# use the variance of {ref}`findings`, pooled over every variant read.

# %% tags=["hide-input"]
gap = result.gaps
split = list(gap.columns).index("share closed") + 1  # the scores and the gap, then the gain and the verdicts
(gap.iloc[:, :split].style.format({c: "{:.1f}" for c in gap.columns[:split] if gap[c].dtype.kind == "f"}
                                  | {"share closed": "{:.0%}"}, na_rep="—").set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
(common.with_intervals(cls_untying.verdicts_shown(gap.iloc[:, split:]), "gain low", "gain high", "its interval", digits=1)
 .rename(columns={"gain level": "its level"}).style.format({"gain": "{:+.1f}"}, na_rep="—").set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
columns = list(result.groups)
reference_line = {c: result.summary.loc[result.reference, (c, "mean")] for c in columns}
fig = plots.score_panels(result.per_seed, columns, result.compared, [(reference_line, {"color": "C3", "ls": "--", "lw": 0.9})],
                         title="{}", row_height=0.45, width=3.4, ncols=2)
notebook.glue("fig_cls_gap", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_cls_gap
# :alt: Dot plots of each score column's average for the reference, the tied RPEs and the untied RPEs
# :name: fig-cls-gap
#
# The average of each score column (percent; dots: mean over seeds, bars: ± one standard
# deviation) of the reference, the paper's learnable RPEs, and the same RPEs with [CLS] untied.
# Dashed: the reference's mean.
# ```
#
# On classification the gap before untying was, {glue:text}`cls_gap_before`; after it,
# {glue:text}`cls_gap_after` (positive: the reference ahead). Verdicts:
# {glue:text}`cls_conclusions`. Untying was not meant for span prediction, whose answer is read
# from word positions, not from [CLS]; there it changed the average by {glue:text}`span_change`.
#
# ## What pretraining made of the [CLS] bias
#
# The learned $\theta_2$ (how much each word attends to [CLS], whatever its position) per layer
# and head after pretraining (one per layer for the RPEs, whose modules are per layer).

# %% tags=["hide-input"]
result.thetas.style.format("{:+.3f}").set_table_attributes('class="dataframe"')

# %% [markdown]
# Over variants, layers and heads, $\theta_2$ ranges from {glue:text}`theta2_range` (mean
# {glue:text}`theta2_mean:+.3f`): a positive $\theta_2$ raises the attention every word pays to
# [CLS] above what a zero bias would give it, a negative one lowers it.
#
# ```{admonition} The smoke and cpu profiles
# :class: warning
# Under the smoke profile the models are pretrained for a few dozen steps, with one pretraining
# and one fine-tuning seed, and fine-tuned on a few hundred examples: the pretraining variance is
# unknown, so the verdicts are "not decidable" by design, and $\theta_2$ has barely moved from 0.
# The cpu profile, with its pretraining and fine-tuning seeds, is the test.
# ```
