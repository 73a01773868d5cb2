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
import sys

if "google.colab" in sys.modules:  # on Colab: install pe_lib from the repository first
    import subprocess

    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "pe-lib @ git+https://github.com/pe-book/pe-lib"],
        check=True,
    )

import math
import warnings

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_lib import book, report

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

# %%
params = book.check_notebook_parameters(globals())
if split not in ("test", "validation"):
    raise ValueError(f"split must be 'test' or 'validation', got {split!r}")
runner = report.open_runner(profile, results)
names = report.resolve_variants(variants, runner.profile.variants)
specs = report.chapter_tasks(tasks, runner.profile.tasks, span=True)
task_names = list(specs)
seed_list = list(seeds or runner.profile.seeds)
book.glue("profile_name", profile)
book.glue("n_seeds", len(seed_list))
book.glue("split", split)
pd.DataFrame({"value": params})

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

# %%
finetuned, origin, packaged = report.finetuned_with_origins(runner, names, specs, seed_list, split)
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
# every variant ties). The last row
# always answers "no answer": it scores the share of unanswerable questions on v2.0 and 0 on v1.1.

# %%
kinds = {t: "span" for t in task_names}
SHORT = {"exact_match": "EM", "f1": "F1"}
records = report.score_records(finetuned, kinds, split)
per_seed = report.per_seed_by_metric(records, SHORT).join(
    report.per_seed_scores(records, {"average": task_names})[["average"]])
summary = report.summarise(per_seed)
BASELINE = "baseline (no answer)"
baseline = {(BASELINE, t, 0): {split: report.no_answer_baseline(runner.task(t).splits[split]["answers"])}
            for t in task_names}
baseline_records = report.score_records(baseline, kinds, split)
baseline_summary = report.summarise(report.per_seed_by_metric(baseline_records, SHORT).join(
    report.per_seed_scores(baseline_records, {"average": task_names})[["average"]]))
book.glue("spread_note", f"each variant was fine-tuned with {len(seed_list)} seeds" if len(seed_list) > 1
          else "with one seed per variant, as here, the spread is undefined and only the mean is shown")
report.style_summary(pd.concat([summary, baseline_summary]), exclude=[BASELINE])

# %%
best = report.best_per_column(summary)
means = summary.xs("mean", axis=1, level=1)
average = means["average"].dropna().sort_values(ascending=False)
book.glue("best_average", report.best_text(best["average"], len(summary)))
book.glue("best_average_value", average.iloc[0] if len(average) else math.nan)
book.glue("worst_average", str(average.index[-1]) if len(average) else "none")
book.glue("worst_average_value", average.iloc[-1] if len(average) else math.nan)
book.glue("baseline_average", baseline_summary.loc[BASELINE, ("average", "mean")])
book.glue("ape_learned_average", average.get("ape-learned", math.nan))
book.glue("none_average", average.get("none", math.nan))
book.glue("none_rank", f"{list(average.index).index('none') + 1} of {len(average)}" if "none" in average.index
          else "not run")
rpe_models = [v for v in average.index if report.has_offset_table(v)]
if "ape-learned" in average.index and rpe_models:
    book.glue("rpe_above_ape", f"{int((average[rpe_models] > average['ape-learned']).sum())} of {len(rpe_models)}")
else:
    book.glue("rpe_above_ape", "none (variants not run)")
book.glue("per_task_best", "; ".join(f"{c}: {report.best_text(best[c], len(summary))}"
                                     for c in per_seed.columns if c != "average"))

sns.set_theme(style="whitegrid", context="notebook")
long = per_seed.reset_index().melt(id_vars=["variant", "seed"], var_name="column", value_name="score")
order = list(average.index) + [v for v in names if v not in average.index]
columns = list(per_seed.columns)
fig, axes = plt.subplots(1, len(columns), figsize=(2.6 * len(columns) + 2, 0.32 * len(names) + 1.8),
                         sharey=True, constrained_layout=True, squeeze=False)
for ax, column in zip(axes.flat, columns):
    sns.pointplot(long[long["column"] == column], x="score", y="variant", order=order, errorbar="sd",
                  linestyle="none", ax=ax, color="C2", markersize=4)
    ax.axvline(baseline_summary.loc[BASELINE, (column, "mean")], color="grey", ls="--", lw=0.8)
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
# Dashed: always answering "no answer".
# ```
#
# ## What this run shows
#
# The best average is {glue:text}`best_average` ({glue:text}`best_average_value:.1f`), the lowest
# {glue:text}`worst_average` ({glue:text}`worst_average_value:.1f`); always answering "no answer"
# averages {glue:text}`baseline_average:.1f`. Fully learnable APE averages
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
