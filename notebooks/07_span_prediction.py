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
import math
import warnings

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import book, tables
from pe_book.chapters import common
from pe_lib.positions import resolve_variants
from pe_lib import parse_variant
from pe_book.experiments import baselines

book.record_names(globals())

# %% [markdown]
# ## Parameters

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to show; empty: the profile's
results: str = "results"  # folder of the artifact store
tasks: list[str] = []  # span tasks (squad, squad_v2); empty: the profile's
seeds: list[int] = []  # fine-tuning seeds; empty: the profile's
split: str = "test"  # split whose scores are shown: test or validation

# %% tags=["hide-input"]
params = book.check_notebook_parameters(globals())
if split not in ("test", "validation"):
    raise ValueError(f"split must be 'test' or 'validation', got {split!r}")
runner = common.open_runner(profile, results)
names = resolve_variants(variants, runner.profile.variants)
specs = common.chapter_tasks(tasks, runner.profile.tasks, span=True)
task_names = list(specs)
seed_list = list(seeds or runner.profile.seeds)
book.glue("profile_name", profile)
book.glue("n_seeds", len(seed_list))
book.glue("split", split)
common.data_used(params, runner, specs)

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
finetuned, origin, packaged = common.finetuned_with_origins(runner, names, specs, seed_list, split)
book.glue("packaged_tasks", ", ".join(packaged) if packaged else "none")
book.glue("hub_tasks", ", ".join(t for t in task_names if t not in packaged) or "none")
origin.style.set_table_attributes('class="dataframe"')

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
kinds = {t: "span" for t in task_names}
SHORT = {"exact_match": "EM", "f1": "F1"}
records = tables.score_records(finetuned, kinds, split)
per_seed = tables.per_seed_by_metric(records, SHORT).join(
    tables.per_seed_scores(records, {"average": task_names})[["average"]])
summary = tables.summarise(per_seed)
RULES = [baselines.LABELS[name] for name in baselines.SPAN_RULES]
CONSTANT = baselines.LABELS["constant"]
baseline_records = tables.score_records(baselines.baseline_payloads(runner, task_names), kinds, split)
baseline_summary = tables.summarise(tables.per_seed_by_metric(baseline_records, SHORT).join(
    tables.per_seed_scores(baseline_records, {"average": task_names})[["average"]]))
book.glue("spread_note", f"each variant was fine-tuned with {len(seed_list)} seeds" if len(seed_list) > 1
          else "with one seed per variant, as here, the spread is undefined and only the mean is shown")
tables.style_summary(pd.concat([summary, baseline_summary]), exclude=RULES)

# %% tags=["hide-input"]
best = tables.best_per_column(summary)
means = summary.xs("mean", axis=1, level=1)
average = means["average"].dropna().sort_values(ascending=False)
book.glue("best_average", tables.best_text(best["average"], len(summary)))
book.glue("best_average_value", average.iloc[0] if len(average) else math.nan)
book.glue("worst_average", str(average.index[-1]) if len(average) else "none")
book.glue("worst_average_value", average.iloc[-1] if len(average) else math.nan)
floor = baseline_summary.xs("mean", axis=1, level=1)
book.glue("baseline_average", floor.loc[CONSTANT, "average"])
best_rule = floor["average"].idxmax()
book.glue("best_rule", best_rule.removeprefix("baseline: "))
book.glue("best_rule_average", floor.loc[best_rule, "average"])
book.glue("above_rules", f"{int((average > floor['average'].max()).sum())} of {len(average)}")
unbeaten = [f"{c} ({floor[c].idxmax().removeprefix('baseline: ')}, {floor[c].max():.1f})"
            for c in per_seed.columns if c != "average" and not (means[c] > floor[c].max()).any()]
book.glue("rules_unbeaten", "; ".join(unbeaten) if unbeaten else "none")
book.glue("v2_note", baselines.null_threshold_note(finetuned, means, floor.loc[CONSTANT]))
book.glue("ape_learned_average", average.get("ape-learned", math.nan))
book.glue("none_average", average.get("none", math.nan))
book.glue("none_rank", f"{list(average.index).index('none') + 1} of {len(average)}" if "none" in average.index
          else "not run")
rpe_models = [v for v in average.index if parse_variant(v).has_offset_table]
if "ape-learned" in average.index and rpe_models:
    book.glue("rpe_above_ape", f"{int((average[rpe_models] > average['ape-learned']).sum())} of {len(rpe_models)}")
else:
    book.glue("rpe_above_ape", "none (variants not run)")
book.glue("per_task_best", "; ".join(f"{c}: {tables.best_text(best[c], len(summary))}"
                                     for c in per_seed.columns if c != "average"))

sns.set_theme(style="whitegrid", context="notebook")
long = per_seed.reset_index().melt(id_vars=["variant", "pretrain_seed", "seed"], var_name="column", value_name="score")
order = list(average.index) + [v for v in names if v not in average.index]
columns = list(per_seed.columns)
fig, axes = plt.subplots(1, len(columns), figsize=(2.6 * len(columns) + 2, 0.32 * len(names) + 1.8),
                         sharey=True, constrained_layout=True, squeeze=False)
for ax, column in zip(axes.flat, columns):
    sns.pointplot(long[long["column"] == column], x="score", y="variant", order=order, errorbar="sd",
                  linestyle="none", ax=ax, color="C2", markersize=4)
    ax.axvline(floor.loc[CONSTANT, column], color="grey", ls="--", lw=0.8)
    ax.axvline(floor[column].max(), color="C3", ls=":", lw=1.0)
    ax.set(title=column, xlabel="score (%)", ylabel="")
book.glue("fig_scores", fig)
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
# average. Columns on which no variant beats the best rule (the rule and its score):
# {glue:text}`rules_unbeaten`. {glue:text}`v2_note` Fully learnable APE averages
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
