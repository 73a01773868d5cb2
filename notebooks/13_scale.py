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
# (scale)=
# # The scale study: when do position embeddings start to matter?
#
# The paper's models are BERT-base pretrained for days; this project's cpu models see a few million
# tokens. At that scale a model may not use word order at all, and then no chapter can tell one
# position embedding from another: every verdict would be "not decidable". This chapter asks at
# which pretraining budget the differences appear. It pretrains `none`, `ape-learned`,
# `rpe-learned` and `ape-sin-learned` (two pretraining seeds for the first three) with one recipe
# for all, keeps each model at 1x, 2x, 4x, 8x and 16x of the first cpu budget (4.1 million tokens),
# and evaluates each kept model like a finished one: validation loss, the learned APE's
# dot-product map, and fine-tuning on the sentence-level tasks. Three criteria, computed below from
# the data, choose the cpu profile's budget:
#
# - **(a)** `ape-learned` beats `none` on validation MLM loss beyond the pretraining-seed spread;
# - **(b)** the learned APE's trained dot-product map shows the diagonal;
# - **(c)** the best variant's classification average beats the best constant predictor by at
#   least 10 points (the bag-of-words baseline beside it).

# %% tags=["hide-cell"]
import warnings

import matplotlib.pyplot as plt
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import plots
from pe_book.chapters import common, scale, scale_text, trend
from pe_book.publishing import notebook
from pe_book.verdicts import intervals

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `profile` chooses the artifacts (its folder of `results/`): the study is the profile `scale`; any
# other profile shows the budgets its runs keep (the smoke profile keeps one). `variants` and
# `tasks` restrict the study (empty: the study's four variants that the profile has, and the
# profile's sentence-level tasks). `cpu` names the profile whose budget the study chose: the cpu
# run of that time, `cpu-glue`, whose models, recipe and budget the published `cpu` run keeps.
# `trend_profile` names the runs of the last section (the trend of the key effects with scale) and
# `trend_reference` the profile whose seeds lend them their variance. The chapter reads what is
# stored and computes no model: a study still running shows what it has finished.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile; the study itself is "scale"
variants: list[str] = []  # empty: none, ape-learned, rpe-learned, ape-sin-learned (those the profile has)
tasks: list[str] = []  # sentence-level tasks of the classification average; empty: the profile's
results: str = "results"  # folder of the artifact store
screen: str = "studies/recipe_screen"  # folder of the recipe screen's results
finetune_screen: str = "studies/finetune_screen/results.jsonl"  # the fine-tuning screen's results (1x models)
finetune_screen_cpu: str = "studies/finetune_screen/results-cpu.jsonl"  # its second part (the cpu profile's models)
finetune_screen_epochs: list[str] = ["studies/finetune_screen/results-cpu-cola.jsonl",
                                     "studies/finetune_screen/results-cpu-squad_v2.jsonl"]  # its third (epochs)
cpu: str = "cpu-glue"  # the profile whose budget the study chose (priced, compared and checked below)
trend_profile: str = ""  # the runs of the key effects' trend with scale ("trend"); empty: not in this book
trend_reference: str = ""  # the profile whose seeds lend each trend run its variance ("cpu")
alpha: float = 0.05  # level of the trend's intervals (pointwise in the figure, familywise per claim in the table)

# %% tags=["hide-cell"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
cpu_stored = common.open_results(cpu, results)
study = scale.compute(stored, variants, tasks, cpu=cpu_stored)
notebook.glue("profile_name", profile)
notebook.glue_all(study.cited)
common.data_used(params, stored, study.tasks)
notebook.glue("budgets", ", ".join(f"{t:,}" for t in study.budget_tokens))

# %% [markdown]
# ## The recipe, and what was tried
#
# The first cpu run (BERT's recipe: post-LN, peak learning rate $10^{-3}$ with linear decay,
# dropout 0.1, 15% masking, sequences of 128) left every model in a bag-of-words regime: its
# learned APE's map had no diagonal, and no variant beat `none`. A screen of recipes, one recipe
# for all variants of a run, looked for the cause before spending hours. The tables list every run
# of the screen as recorded (`studies/recipe_screen/`, with the script that ran it), its recipe
# first, then what each of its variants reached; the unigram
# column is the loss of a unigram model on the same masked tokens, the yardstick of "has learned
# nothing about context".

# %% tags=["hide-input"]
screened = scale.recipe_screen(screen)
notebook.glue("screen_runs", screened["run"].nunique())
recipes = common.yes_no_columns(screened[["run", *scale.SCREEN_SETTINGS.values()]].drop_duplicates("run"))
(recipes.style.format({"peak lr": "{:g}", "warm-up": "{:g}", "masking": "{:.2f}", "dropout": "{:g}",
                       "position init std": "{:g}", "position lr x": "{:g}", "sinusoid scale": "{:g}"}, na_rep="—")
 .format(common.breakable, subset=["run"]).hide(axis="index").set_caption("The recipe of each run")
 .set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
(screened.drop(columns=list(scale.SCREEN_SETTINGS.values()))
 .style.format({"tokens (M)": "{:.2f}", "validation loss": "{:.3f}", "unigram loss": "{:.3f}",
                "APE monotonicity": "{:+.3f}", "APE local monotonicity": "{:+.3f}"}, na_rep="—")
 .format(common.breakable, subset=["run"]).hide(axis="index").set_caption("What each variant of a run reached")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# What the {glue:text}`screen_runs` runs show, read from the tables:
#
# - Under BERT's recipe `rope` and `none` reach the same loss at 1 M tokens (`base_1M_rerun_none_rope`):
#   the recipe itself lets no variant use position at this budget.
# - Pre-LN makes a peak learning rate of $3 \cdot 10^{-3}$ trainable; with post-LN the same recipe
#   leaves `none` at the unigram loss (`s64_postln_1M`).
# - A learned APE initialised like the word embeddings is noise added to every input: with it,
#   `ape-learned` stays near the unigram loss (`ks_preln_lr3e-3_do0_m30`); initialised at zero it
#   follows `none` (`ks_peinit0`). A ten times larger learning rate for the table does not help
#   (`s64_pelr10_1M`).
# - Position is worth much on this corpus once the recipe allows it: `rope` is far below `none`
#   from 1 M tokens on, while even a fixed sinusoidal APE, whose map is a perfect diagonal, is not
#   yet below `none` at 2 M tokens (`s64_preln_2M_sin_rope` against `s64_preln_peinit0_2M`).
#
# The study's profile `scale` therefore uses one recipe for every variant: a pre-LN encoder (a
# departure from BERT's post-LN, stated wherever its numbers appear), sequences of 64 tokens, a
# peak learning rate of $3 \cdot 10^{-3}$, no dropout, 30% masking, learned position tables
# initialised at zero, and an anytime schedule (warm-up, then the rate falls as $1/\sqrt{t}$),
# under which the model kept after $t$ steps of a long run is exactly the model of a run of $t$
# steps, and a finished run of $t$ steps is the beginning of every longer run: the study's runs
# beyond 4x continue the cpu profile's runs of the same variant and seed from their last
# checkpoint, where the work folder kept them (`pe-book adopt --profile scale --from cpu`; the
# result of each such model names the run it began from). This page shows profile
# **{glue:text}`profile_name`**, whose models have the {glue:text}`layer_norm`-LN encoder,
# sequences of {glue:text}`seq_len` tokens, peak learning rate {glue:text}`lr:g`, dropout
# {glue:text}`dropout:g`, masking rate {glue:text}`mask_prob:g`, position tables initialised with
# standard deviation {glue:text}`position_init_std:g`, the {glue:text}`schedule` schedule and
# precision {glue:text}`precision`; its runs keep models at {glue:text}`budgets` tokens.
#
# ## Fine-tuning: how many examples
#
# The first 1x models, fine-tuned like the first cpu profile (2 epochs, peak learning rate
# $3 \cdot 10^{-4}$, 1,500 training examples), were at the best constant predictor on the
# sentiment and paraphrase analogues, where a bag-of-words model is far above it. A screen on the
# 1x models of `none` and `ape-learned` (pretraining seed 0, fine-tuning seed 0;
# `studies/finetune_screen/`) tried more epochs, other learning rates, and all training examples.
# The table gives each run's test score (the mean of the task's metrics, in percent).

# %% tags=["hide-input"]
first_screen = scale.finetune_screen(finetune_screen)
notebook.glue("screen_best", scale_text.best_runs(first_screen))
scale_text.styled_screen(first_screen)

# %% [markdown]
# No recipe on 1,500 examples lifts the models much above chance; all the examples do (best:
# {glue:text}`screen_best`). The study therefore fine-tunes on up to 10,000 examples of each task
# (cola has 2,751), with one fine-tuning seed per pretrained model to keep its cost near two hours;
# the spread over pretraining seeds is measured.
#
# The cpu profile first fine-tuned on 4,000 examples a sentence task, to fit its 10 hours. Its
# first 4x models were then at the best constant predictor on sst2 and mrpc. A second screen, on
# those models (`python studies/finetune_screen/run.py cpu`), set 4,000 examples beside one epoch
# over 10,000 and over all of them, at about the cost of two epochs over 5,000 and over all. Two
# epochs over 10,000 are the study's own fine-tunings of the same models (the study's 4x models are
# bit-identical to the cpu profile's, below); the screen was stopped before its last rows, which
# the table leaves empty.

# %% tags=["hide-input"]
screen_cpu = scale.cpu_finetune_screen(finetune_screen_cpu, stored, cpu_stored.profile.pretrain.steps)
notebook.glue("screen_cpu_best", scale_text.best_runs(screen_cpu))
scale_text.styled_screen(screen_cpu)

# %% [markdown]
# Two epochs over 4,000 examples leave both models near the best constant predictor on sst2 and
# mrpc. One epoch over 10,000 stays below the study's two epochs over 10,000 on every task, and one
# epoch over all of mrpc's examples only draws level with them, at a higher cost (the wall times
# are in the file; best per task: {glue:text}`screen_cpu_best`). So the cpu profile fine-tunes
# like the study, on up to 10,000 examples.
#
# Two tasks stayed at the constant predictor with every one of those recipes: cola, the word-order
# task (2,751 training examples: 172 steps in 2 epochs, where the other sentence tasks get 625),
# and squad_v2 (every model answers "no answer"). A third screen gave the absolute PEs' models
# more epochs on both (`python studies/finetune_screen/run.py cpu-cola` and `cpu-squad_v2`):

# %% tags=["hide-input"]
screen_epochs = scale.epochs_screen(finetune_screen_epochs, cpu_stored)
notebook.glue("screen_epochs_best", scale_text.best_runs(screen_epochs))
scale_text.styled_screen(screen_epochs)

# %% [markdown]
# More epochs move the absolute PEs off the constant on cola (best: {glue:text}`screen_epochs_best`;
# with 400 test sentences a Matthews correlation has a standard error near 5 points), so the cpu
# profile fine-tunes cola for 10 epochs; 5 epochs change nothing on squad_v2, which keeps 2 and is
# reported at chance.
#
# ## What is stored
#
# The study is {glue:text}`stored` of {glue:text}`planned` artifacts complete (variants
# {glue:text}`study_variants`; classification average over {glue:text}`study_tasks`). It is
# computed in chunks (`scripts/run_in_chunks.sh scale SECONDS`), budget by budget, each chunk
# committing what it finished; every figure and table below shows what is stored. The table gives
# each stored model: its pretraining seed and budget, its validation loss, its learned APE's
# indicators where it has one, and its classification average on the validation and the test
# split (mean over its fine-tuning seeds).

# %% tags=["hide-input"]
notebook.glue("study_variants", ", ".join(study.variants))
notebook.glue("study_tasks", ", ".join(study.tasks))
shown = study.models.drop(columns="created")
(shown.style.format({"tokens": "{:,.0f}", "validation_loss": "{:.3f}", "monotonicity": "{:+.3f}",
                     "monotonicity_local": "{:+.3f}", "classification_validation": "{:.1f}",
                     "classification_test": "{:.1f}"}, na_rep="—")
 .relabel_index([scale.LABELS.get(c, c) for c in shown.columns], axis="columns")
 .hide(axis="index").set_table_attributes('class="dataframe"'))

# %% [markdown]
# ## Loss, the diagonal and the tasks against tokens

# %% tags=["hide-input"]
sns.set_theme(style="whitegrid", context="notebook")
names = study.variants
palette = dict(zip(names, sns.color_palette("tab10", len(names))))
fig, grid = plt.subplots(2, 2, figsize=(10, 7.5), constrained_layout=True)
axes = [grid[0, 0], grid[0, 1], grid[1, 0]]
grid[1, 1].set_axis_off()
for variant, part in study.models.groupby("variant", sort=False):
    mean = part.groupby("tokens").mean(numeric_only=True)
    axes[0].plot(mean.index, mean["validation_loss"], marker="o", color=palette[variant], label=variant)
    axes[0].scatter(part["tokens"], part["validation_loss"], s=12, color=palette[variant], alpha=0.5)
    axes[2].plot(mean.index, mean["classification_test"], marker="o", color=palette[variant], label=variant)
axes[0].axhline(study.unigram_loss, color="C3", ls=":", lw=1.0, label="unigram")
axes[0].set(title="validation MLM loss", ylabel="nats")
ape = study.models[study.models["variant"] == "ape-learned"]
for column, style in (("monotonicity", "-"), ("monotonicity_local", "--")):
    axes[1].plot(ape["tokens"], ape[column], ls="", marker="o", color=palette.get("ape-learned", "C1"), alpha=0.5)
    mean = ape.groupby("tokens")[column].mean()
    axes[1].plot(mean.index, mean.values, ls=style, color=palette.get("ape-learned", "C1"), label=column.replace("_", " "))
axes[1].axhline(scale.DIAGONAL_THRESHOLD, color="grey", ls=":", lw=1.0, label="criterion (b)")
axes[1].set(title="learned APE: P P^T indicators", ylabel="indicator")
axes[2].axhline(study.constant, color="grey", ls="--", lw=1.0, label="best constant")
axes[2].axhline(study.constant + scale.CHANCE_MARGIN, color="grey", ls=":", lw=1.0, label="criterion (c)")
axes[2].axhline(study.bag_of_words, color="C5", ls="-.", lw=1.0, label="bag of words")
axes[2].set(title="classification average (test)", ylabel="score (%)")
for ax in axes:
    ax.set_xscale("log")
    ax.set_xlim(min(study.budget_tokens) / 1.5, max(study.budget_tokens) * 1.5)  # every kept budget, stored or not
    plots.log_ticks(ax, study.budget_tokens, lambda tokens: f"{tokens / 1e6:.3g}M")
    ax.set_xlabel("pretraining tokens")
    ax.legend(fontsize="small")
notebook.glue("fig_scale", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_scale
# :alt: Validation loss, learned-APE indicators and classification average against pretraining tokens, log axes
# :name: fig-scale
#
# Against pretraining tokens (log axis), lines the mean over pretraining seeds, dots the seeds.
# Top left: validation MLM loss; dotted: the unigram model ({glue:text}`unigram_loss:.3f`). Top right: the
# monotonicity (solid) and local monotonicity (dashed) of the learned APE's $P P^\top$; dotted: the
# threshold {glue:text}`threshold` of criterion (b). Bottom: classification average on the test
# split (mean over fine-tuning seeds); dashed: the best constant predictor
# ({glue:text}`constant:.1f`), dotted: 10 points above it, dash-dotted: bag of words
# ({glue:text}`bag_of_words:.1f`).
# ```
#
# ## The criteria at each budget

# %% tags=["hide-input"]
smallest = study.smallest_budget
notebook.glue("smallest_budget", "none of the stored budgets" if smallest is None else scale_text.million_tokens(smallest))
scale_text.shown_criteria(study.criteria)

# %% [markdown]
# One row per kept budget. (a) passes when every `ape-learned` seed's loss is below every `none`
# seed's (it needs two seeds of each, else "not decidable"). With no true difference this happens
# by chance with probability $n_a!\,n_b!/(n_a+n_b)!$, the column "(a) by chance": 1/6 with two
# seeds each, so a pass at one budget is weak evidence alone; a pass that persists over the larger
# budgets, or more seeds, is what the cpu profile's choice rests on; (b) when the mean over seeds of both
# indicators of the learned APE is at least {glue:text}`threshold` (i.i.d. Gaussian tables of this
# shape score 0.00 ± 0.04, never above 0.09 in 40 draws; a fixed sinusoid about 1); (c) when the
# variant with the best validation average scores at least {glue:text}`margin` points above the
# best constant predictor on the test split; beside it, that average minus the bag-of-words
# baseline's ({glue:text}`bag_of_words:.1f`, a model that knows nothing of word order). All
# three first hold at **{glue:text}`smallest_budget`**.

# %% [markdown]
# ## What the cpu profile would cost
#
# The cpu profile is to run every variant of the paper, with three pretraining seeds for `none`,
# `ape-learned` and `rpe-learned` and three fine-tuning seeds everywhere, in at most
# {glue:text}`cpu_hours` hours on this 2-core machine. The table prices it as the study's recipe at
# each of the study's budgets (before the choice: in the study's precision, fine-tuned on as many
# examples as the study), at the rates the study's own artifacts measured (`pe-book run --dry-run --estimate-from scale` gives the same for
# any profile); what the study already holds under the same key (its models, which `pe-book adopt`
# takes, and their analyses) costs nothing. Tasks the study never fine-tuned on (the span tasks)
# have no measured rate and are counted, not priced. The largest budget whose priced part fits:
# {glue:text}`cpu_affordable`.

# %% tags=["hide-input"]
notebook.glue("cpu_affordable", scale_text.affordable_text(scale.largest_affordable(study.cpu_costs)))
study.cpu_costs.style.format({"tokens": "{:,.0f}", "pretraining (h)": "{:.1f}", "fine-tuning (h)": "{:.1f}",
                              "total (h)": "{:.1f}"}).hide(axis="index").set_table_attributes('class="dataframe"')

# %% tags=["hide-cell"]
choice = study.cpu_choice
notebook.glue("cpu_name", cpu_stored.profile.name)
notebook.glue("cpu_tokens", f"{scale_text.million_tokens(choice.tokens)} ({choice.steps:,} steps)")
notebook.glue("cpu_standing", scale_text.standing_text(choice.tokens, study.smallest_budget))
notebook.glue("cpu_recipe", scale_text.departures_text(choice.departures))
notebook.glue("cpu_seeds", common.seed_design(cpu_stored.profile, list(cpu_stored.profile.variants)))
for key in ("a", "b", "c"):
    notebook.glue(f"cpu_study_{key}", "not a budget the study stores" if choice.study_verdicts is None
                  else scale_text.criterion_verdict(choice.study_verdicts[key]))
    notebook.glue(f"cpu_own_{key}", "nothing stored yet" if choice.own_verdicts is None
                  else scale_text.criterion_verdict(choice.own_verdicts[key]))
notebook.glue("cpu_spending", scale_text.spending_text(study.cpu_spending))
notebook.glue("cpu_below", scale_text.below_text(choice.unmet_below))
notebook.glue("cpu_shared", scale_text.shared_text(choice.shared))

# %% [markdown]
# ## The cpu profile's budget
#
# The study chose the budget of the cpu run of its time, fine-tuned on the analogues of six GLUE
# and SQuAD tasks: the profile `cpu-glue`, shown in this section. The published run, the profile
# `cpu`, keeps that run's models, recipe and budget and replaces its tasks with a suite that tests
# position ({ref}`findings`). The criteria below are computed on `cpu-glue`'s models and tasks.
#
# Profile {glue:text}`cpu_name` pretrains every model for {glue:text}`cpu_tokens`:
# {glue:text}`cpu_standing`. It is the study's recipe stopped at that budget (an anytime schedule:
# the same learning rate at every step as the study's runs), except for: {glue:text}`cpu_recipe`.
# The study's verdicts at that budget, and the same criteria computed on the cpu profile's own
# models ({glue:text}`cpu_seeds`; with no true difference criterion (a) would pass by chance with
# probability {glue:text}`cpu_a_chance:.3f`):
#
# | criterion | the study at this budget | the cpu profile's own models |
# |---|---|---|
# | (a) `ape-learned` below `none`, beyond the seed spread | {glue:text}`cpu_study_a` | {glue:text}`cpu_own_a` |
# | (b) the learned APE's map shows the diagonal | {glue:text}`cpu_study_b` | {glue:text}`cpu_own_b` |
# | (c) best classification average 10 points above the best constant | {glue:text}`cpu_study_c` | {glue:text}`cpu_own_c` |
#
# The profile was to take at most {glue:text}`cpu_hours` hours on this 2-core machine. Its run:
# {glue:text}`cpu_spending`. It is chosen over the hours because nothing within them decides:
# below its budget, {glue:text}`cpu_below`; and fine-tuning on fewer examples leaves its models at
# chance (the screen above). The run goes in chunks over several sessions, each committing what it finished.
#
# The cpu profile's own numbers behind its verdicts are below. Where the cpu profile trained a model
# the study also kept at this budget (the same variant and pretraining seed), the two are two
# independent runs of one recipe, in the same precision, often on different machines and
# sessions: {glue:text}`cpu_shared`.

# %% tags=["hide-input"]
scale_text.shown_criteria(study.cpu_criteria)

# %% tags=["hide-cell"]
trended = trend.read(trend_profile, trend_reference, results, alpha)
notebook.glue("trend_status", scale_text.trend_status(trended, trend_profile))
notebook.glue("trend_interval", intervals.interval_label(1 - alpha))  # the level of each pointwise interval
if trended is None:
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.set_axis_off()
    ax.text(0.5, 0.5, "the trend runs are not part of this book", ha="center", va="center")
else:
    fig = plots.effect_trends(trended.effects, trended.columns, trended.budgets)
notebook.glue("fig_trend", fig)
plt.close(fig)

# %% [markdown]
# ## The trend of the key effects with scale
#
# One budget cannot say whether a difference between position embeddings is the start of the
# paper's or an accident of a small model. The profile `trend` therefore pretrains the three
# variants the claims compare most, `none`, `ape-learned` and `rpe-learned`, with the cpu run's
# recipe and tasks (one pretraining seed each), keeps each model at every budget of the study, and
# fine-tunes each kept model once on each task. Its 4x models are the reference run's first models:
# the same key, read from its store, not trained again. Here: {glue:text}`trend_status`.
#
# A single run has no variance of its own, so each is given the variance of one run of its variant
# in the reference profile at its budget (pretraining plus fine-tuning variance, from its seeds:
# `pe_book.chapters.trend`), assumed the same at every budget; a difference of two runs adds both.
# The figure gives, per task and per group of tasks, the differences `rpe-learned − ape-learned`
# and `ape-learned − none` against pretraining tokens, each with its pointwise
# {glue:text}`trend_interval`.
#
# ```{glue:figure} fig_trend
# :alt: The differences rpe-learned minus ape-learned and ape-learned minus none, per task, against pretraining tokens on a log axis
# :name: fig-trend
#
# The key effects against pretraining tokens (log axis), one panel per task and group of tasks
# (test split, percentage points): each point one run of each variant, error bars the interval
# from the borrowed variance (none where that variance is unknown); grey: no difference.
# ```
#
# Per claim of {ref}`findings`, the table gives the trend of each of its comparisons that these
# variants allow: the effect at the smallest and the largest stored budget, its least-squares
# slope per doubling of the budget with a Bonferroni interval over the claim's comparisons, and its
# direction. An effect *flips* when its intervals at the smallest and the largest budget exclude
# zero on opposite sides; else it *grows* or *shrinks* when the slope's interval excludes zero and
# the effect is larger or smaller in size at the largest budget; else no trend is detected, and
# "detectable" is the slope that would have been seen with 80% power. Budgets are treated as
# independent, which overstates the slope's error (snapshots of one run share its pretraining
# noise). Every number holds for the small models of this chapter at the budgets above, far below
# the paper's BERT-base.

# %% tags=["hide-input"]
if trended is not None:
    display(trend.style_claims(trended.claims, budgets=True))

# %% tags=["hide-cell"]
notebook.glue("trend_learned_text", trended.cited["trend_learned_text"] if trended is not None
              else "not measured (the trend runs are not part of this book)")

# %% [markdown]
# Would more pretraining make the columns testable that no model learned at the reference's
# budget ({ref}`findings`)? The table applies the gate of the findings, every order-free baseline
# (a rule that reads word order is no bar) and, on the tasks that need word order, `none`, to the
# single runs at each budget: the best of the three variants (chosen on the validation split), its
# test score and the lower end ("low") of its {glue:text}`trend_interval` from the
# borrowed variance of one run, the best order-free baseline of the column, and the gap to `none`
# with its low. A single run learned a column beyond every order-free baseline at:
# {glue:text}`trend_learned_text`. Where a run's score passes the bar but its
# interval reaches below it, one run's variance (borrowed from the reference's seeds) is too wide
# to decide; more pretraining seeds at that budget would narrow it.

# %% tags=["hide-input"]
if trended is not None:
    display(trended.learned.assign(tokens=[f"{t / 1e6:.3g}M" for t in trended.learned["tokens"]],
                                   learned=trended.learned["learned"].map({True: "yes", False: "no"}))
            .style.format({"score": "{:.1f}", "low": "{:.1f}", "baseline score": "{:.1f}", "gap to none": "{:+.1f}",
                           "its low": "{:+.1f}"}, na_rep="n/a").hide(axis="index")
            .set_table_attributes('class="dataframe"'))
