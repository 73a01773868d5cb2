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
# (classification)=
# # Fine-tuning: sentence classification and regression
#
# {cite:t}`wang2021position` fine-tune every pretrained model on GLUE with the HuggingFace code
# and report the mean of five runs. Among single position embeddings, the fully learnable APE of
# BERT {cite}`devlin2019bert` is best overall; among the APE+RPE combinations, fully learnable APE
# with learnable sinusoidal RPE does relatively well; combining an APE with an RPE does not always
# help. Their explanation: an APE can give the [CLS] token, whose output classifies the sentence,
# a position of its own, which a relative embedding cannot, an argument TUPE
# {cite}`ke2021rethinking` builds on.
#
# This chapter reads this project's fine-tuning artifacts on the sentence-level tasks of the
# profile, reports their scores per variant with their spread over seeds, and says where the data
# came from: without internet access the tasks are packaged offline analogues of the GLUE tasks.

# %% tags=["hide-cell"]
import warnings

import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import plots, tables
from pe_book.chapters import classification, common
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `tasks` and `seeds` restrict the chapter (empty: the profile's sentence-level tasks and seeds);
# `split` chooses the scored split (`test`; `validation` is the one a user would tune on).

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's
results: str = "results"  # folder of the artifact store
tasks: list[str] = []  # classification / regression tasks; empty: the profile's
seeds: list[int] = []  # fine-tuning seeds; empty: the profile's
split: str = "test"  # split whose scores are shown: test or validation

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = classification.compute(stored, variants, tasks, seeds, split)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored, result.tasks)

# %% [markdown]
# ## The tasks
#
# The table says, for each task, what it is in the paper, where the data of this run came from
# (recorded in each artifact: `hub:` the original data set from the HuggingFace hub,
# `packaged:` an offline analogue built by `pe_lib.data` from public sources shipped with the
# package), and how many examples were used. Offline analogues in this run:
# {glue:text}`packaged_tasks`; original data sets: {glue:text}`hub_tasks`. An analogue keeps the
# task's form (one sentence or a pair, the labels, the metric) but not its data: its scores are not
# comparable with published GLUE numbers, only across the variants of this run. On the hub data,
# the test split is GLUE's validation split (GLUE's test labels are hidden) and the validation
# split is carved from the training data.

# %% tags=["hide-input"]
result.origin.style.set_table_attributes('class="dataframe"')

# %% [markdown]
# ## Scores
#
# Each task's score is the mean of its metrics in percent (the GLUE convention for MRPC and STS-B;
# an undefined correlation, from a constant prediction, counts as 0); "average" is the mean over
# the tasks, computed per seed. Cells give the mean over seeds ± the standard deviation over
# seeds; {glue:text}`spread_note`. The best mean of each column is in bold and marked ▲ (no mark
# where every variant ties). The last two rows are baselines, not variants, trained and scored on
# the same examples as the models (`pe_book.experiments.baselines`):
#
# * **baseline: best constant** ignores its input. For each metric it predicts the constant that
#   scores best on the *validation* split (so the choice never sees the test labels), and its
#   test score is shown: for F1 on a paraphrase task that is "always paraphrase", for accuracy the
#   validation majority; every constant has Matthews correlation 0, and for regression (the mean
#   training label) correlation 0. A variant that does not clear it is at chance.
# * **baseline: bag of words** is a logistic regression (ridge regression for regression) on the
#   words of the sentence, for a pair on the words of each sentence and the words they share,
#   its regularisation chosen on the validation split. It sees words but no order: a variant that
#   does not clear it has not shown that it uses the position of the words.

# %% tags=["hide-input"]
tables.style_summary(result.table, exclude=[classification.CONSTANT, classification.BOW])

# %% tags=["hide-input"]
floor = result.floor
fig = plots.score_panels(result.per_seed, result.tasks + ["average"], result.order(),
                         [(floor.loc[classification.CONSTANT], plots.BASELINE_STYLE),
                          (floor.loc[classification.BOW], plots.RULE_STYLE)])
notebook.glue("fig_scores", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_scores
# :alt: Dot plots of the task scores of every variant, one panel per task and one for the average
# :name: fig-cls-scores
#
# Task scores on the {glue:text}`split` split (percent; dots: mean over seeds, bars: ± one
# standard deviation when there is more than one seed), variants sorted by their average. Dashed
# grey: the best constant; dotted red: the bag-of-words baseline.
# ```
#
# ## What this run shows
#
# On the {glue:text}`split` split, the best average is {glue:text}`best_average`
# ({glue:text}`best_average_value:.1f`), the lowest {glue:text}`worst_average`
# ({glue:text}`worst_average_value:.1f`); the best constant averages
# {glue:text}`baseline_average:.1f`, and {glue:text}`above_baseline` variants beat it; the bag of
# words averages {glue:text}`bow_average:.1f`, and {glue:text}`above_bow` variants beat it. Tasks
# on which no variant's mean beats the best constant: {glue:text}`at_chance`; on which none beats
# the bag of words: {glue:text}`below_bow` ({ref}`findings` decides, with the spread over seeds,
# which claims a task at chance leaves undecidable). Fully
# learnable APE ranks {glue:text}`ape_learned_rank` on average;
# {glue:text}`best_single_and_combination` (the paper: fully learnable APE, and fully learnable
# APE + learnable sinusoidal RPE). Best per
# task: {glue:text}`per_task_best`. Whether the differences exceed the spread over seeds, claim by
# claim, is decided in {ref}`findings`.
#
# The per-metric means over seeds (before averaging a task's metrics; MCC: Matthews correlation)
# are below, with the baselines in the last rows.

# %% tags=["hide-input"]
METRICS = {"matthews_correlation": "MCC", "accuracy": "acc.", "f1": "F1", "pearson": "Pearson",
           "spearmanr": "Spearman"}
(tables.metric_means(result.records).rename(columns=METRICS, level=1).style.format("{:.1f}", na_rep="—")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ```{admonition} The smoke and cpu profiles
# :class: warning
# Under the smoke profile the models are pretrained for a few dozen steps and fine-tuned for one
# epoch on a few hundred examples, with one seed: most scores sit near the best constant and
# differences between variants are noise. The cpu profile (three seeds) is the reproduction.
# ```
