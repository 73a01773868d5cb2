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
# (span-prediction)=
# # Fine-tuning: span prediction
#
# In extractive question answering (SQuAD v1.1, and v2.0 with unanswerable questions) the model
# points at the start and the end of the answer in the context, a decision about positions. Here
# {cite:t}`wang2021position` find the opposite of their classification result: almost every model
# with a relative position embedding beats BERT's fully learnable APE clearly, the best models on
# both SQuAD versions use the fully learnable RPE of {cite:t}`shaw2018self`, and without any
# position embedding span prediction drops sharply. Relative embeddings are translation invariant,
# so a pattern learned at one place of the context applies at every other.
#
# This chapter reads this project's fine-tuning artifacts on the span tasks of the profile and
# reports exact match (EM) and F1 per variant, with their spread over seeds.

# %% tags=["hide-cell"]
import warnings

import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import plots, tables
from pe_book.chapters import common, span_prediction
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's
results: str = "results"  # folder of the artifact store
tasks: list[str] = []  # span tasks (squad, squad_v2, cloze, cloze_v2); empty: the profile's
seeds: list[int] = []  # fine-tuning seeds; empty: the profile's
split: str = "test"  # split whose scores are shown: test or validation

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = span_prediction.compute(stored, variants, tasks, seeds, split)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored, result.tasks)

# %% [markdown]
# ## The tasks
#
# Where the data of each task came from is recorded in its artifacts (`hub:` the original SQuAD
# from the HuggingFace hub, whose validation split serves as test split; `packaged:` an offline
# analogue shipped with `pe_lib`). Offline analogues in this run: {glue:text}`packaged_tasks`;
# original data sets: {glue:text}`hub_tasks`. The analogues keep SQuAD's format and scoring
# (contexts, questions, answer spans; v2.0 adds questions whose answer is not in the context) but
# not its data, so their scores compare variants of this run with each other, not with published
# SQuAD numbers.

# %% tags=["hide-input"]
result.origin.style.set_table_attributes('class="dataframe"')

# %% [markdown]
# ## Scores
#
# EM and F1 follow the official SQuAD evaluation (answers normalised, best over the gold answers;
# an unanswerable question scores 1 only for an empty answer). "average" is the mean of the
# columns, per seed. Cells give the mean over seeds ± the standard deviation over seeds;
# {glue:text}`spread_note`. The best mean of each column is in bold and marked ▲ (no mark where
# every variant ties). On SQuAD v2.0 a model answers "no answer" when its null ([CLS]) score beats
# its best span by more than a threshold, chosen, as the official v2.0 evaluation does, to
# maximise F1 on the validation split, then applied to the test split (shown with
# `split="validation"`, the v2.0 scores are optimistic: the threshold was chosen on those questions).
#
# The last three rows are baselines, not variants: fixed rules scored with the same code on the
# same questions (`pe_book.experiments.baselines`). **baseline: best constant** always answers "no
# answer" (the only constant that scores: the share of unanswerable questions on v2.0, 0 on
# v1.1); **baseline: first sentence** answers the first sentence of the context; **baseline:
# question overlap** answers the sentence of the context that shares the most words with the
# question (the sliding-window baseline of the SQuAD paper, one sentence at a time). A sentence is
# rarely an exact answer (EM near 0), but it earns F1 for the words it shares with the answer.

# %% tags=["hide-input"]
tables.style_summary(result.table, exclude=span_prediction.RULES)

# %% tags=["hide-input"]
floor, columns = result.floor, list(result.per_seed.columns)
fig = plots.score_panels(result.per_seed, columns, result.order(),
                         [(floor.loc[span_prediction.CONSTANT], plots.BASELINE_STYLE),
                          (floor[columns].max(), plots.RULE_STYLE)], color="C2")
notebook.glue("fig_scores", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_scores
# :alt: Dot plots of EM and F1 of every variant on each SQuAD version and their average
# :name: fig-span-scores
#
# Span-prediction scores on the {glue:text}`split` split (percent; dots: mean over seeds, bars:
# ± one standard deviation when there is more than one seed), variants sorted by their average.
# Dashed grey: always answering "no answer"; dotted red: the best of the fixed rules.
# ```
#
# ## What this run shows
#
# The best average is {glue:text}`best_average` ({glue:text}`best_average_value:.1f`), the lowest
# {glue:text}`worst_average` ({glue:text}`worst_average_value:.1f`); always answering "no answer"
# averages {glue:text}`baseline_average:.1f`, the best fixed rule ({glue:text}`best_rule`)
# {glue:text}`best_rule_average:.1f`, and {glue:text}`above_rules` variants beat every rule on
# average, in the mean (a verdict asks for more: beating every order-free rule, and `none`,
# beyond the interval of the seeds, which {ref}`findings` tests; a rule that reads word order,
# such as neighbour match, is a reference there, not a bar). Columns on which no variant beats
# the best rule in the mean (the rule and its score): {glue:text}`rules_unbeaten`. {glue:text}`v2_note` Fully learnable APE averages
# {glue:text}`ape_learned_average:.1f`, and {glue:text}`rpe_above_ape` models with an RPE (a
# table of offset vectors, `rpe-*`) score higher (the paper: almost all, clearly). Without
# position embedding the average is {glue:text}`none_average:.1f`, rank
# {glue:text}`none_rank` (the paper: a sharp drop). Best per column:
# {glue:text}`per_task_best`. {ref}`findings` decides, claim by claim, whether the differences
# exceed the spread over seeds.
#
# ```{admonition} The smoke and cpu profiles
# :class: warning
# Under the smoke profile the models barely learn to point at spans: scores sit near the "no
# answer" baseline and differences between variants are noise. The cpu profile is the
# reproduction.
# ```
