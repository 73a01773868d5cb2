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
# (findings)=
# # Findings: the paper's claims against this run
#
# This chapter brings the previous ones together. It asks whether the properties measured by
# identical-word probing ({ref}`probing`) go with good fine-tuning scores ({ref}`classification`,
# {ref}`span-prediction`), and it sets each claim of {cite:t}`wang2021position` beside what this
# run shows, with a verdict that a statistical test computes from the numbers and their
# variation over pretraining and fine-tuning seeds.
#
# ```{admonition} Read the verdicts with the profile in mind
# :class: warning
# The verdicts below are computed for profile **{glue:text}`profile_name`** with
# {glue:text}`seed_design`. The smoke profile is tiny (a few dozen pretraining steps, a few
# hundred fine-tuning examples, one seed of each kind): its pretraining variance is unknown, so
# every verdict is "not decidable"; it exercises the code and means nothing scientifically. The cpu profile (`pe-lib book --profile cpu`) is this project's
# reproduction; even there the models are far smaller than the paper's BERT-base and the tasks are
# offline analogues where the hub is out of reach.
# ```

# %% tags=["hide-cell"]
import math
import warnings

import matplotlib.pyplot as plt
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import book, tables
from pe_book.chapters import common, findings

book.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `alpha` is the significance level of the verdicts: the familywise error rate of each claim's
# comparisons, and the level of the correlation verdicts; `layer` the probed layer whose
# indicators are correlated with the scores (0: the first, as in the paper).

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to include; empty: the profile's
results: str = "results"  # folder of the artifact store
seeds: list[int] = []  # fine-tuning seeds; empty: the profile's
split: str = "test"  # split whose scores are used: test or validation
layer: int = 0  # probed layer whose indicators are correlated with the scores
alpha: float = 0.05  # significance level of the verdicts (familywise per claim) and of the correlations

# %% tags=["hide-input"]
params = book.check_notebook_parameters(globals())
runner = common.open_runner(profile, results)
result = findings.compute(runner, variants, seeds, split, layer, alpha)
book.glue("profile_name", profile)
book.glue_all(result.cited)
common.data_used(params, runner, runner.profile.tasks)

# %% [markdown]
# ## Do the indicators predict the scores?
#
# For every variant but "none" (its probing map is constant, so its indicators say nothing about
# a position embedding), {numref}`fig-indicators-scores` plots each indicator of the first
# layer's identical-word attention after pretraining against the mean classification score
# (average over {glue:text}`classification_tasks`) and the mean span score (average over
# {glue:text}`span_tasks`), both from the {glue:text}`split` split and averaged over seeds. The
# table gives Spearman's rank correlation $\rho$ across the variants with its two-sided p-value.

# %% tags=["hide-input"]
points, correlation = result.points(), result.correlation
columns = list(tables.PROBE_INDICATORS)
score_columns = list(result.scores.columns)
panels = [(score, indicator) for score in score_columns for indicator in columns]
ncols = 3
nrows = math.ceil(len(panels) / ncols)
sns.set_theme(style="whitegrid", context="notebook")
fig, axes = plt.subplots(nrows, ncols, figsize=(10, 2.9 * nrows), constrained_layout=True, squeeze=False)
hue_order = ["absolute", "relative", "APE + relative"]
for ax, (score, indicator) in zip(axes.flat, panels):
    sns.scatterplot(points, x=indicator, y=score, hue="kind", hue_order=hue_order, ax=ax, s=35, legend=False)
    rho = correlation.loc[(indicator, score), "rho"]
    ax.set_title(f"{score}: ρ = {rho:.2f}" if not math.isnan(rho) else f"{score}: ρ undefined", fontsize=9)
    ax.set_xlabel(tables.LABELS[indicator], fontsize=9)
    ax.set_ylabel(f"{score} score (%)", fontsize=9)
    ax.tick_params(labelsize=8)
for ax in axes.flat[len(panels):]:
    ax.set_axis_off()
handles = [plt.Line2D([], [], marker="o", ls="", color=c) for c in sns.color_palette(n_colors=len(hue_order))]
fig.legend(handles, hue_order, loc="outside lower center", ncols=len(hue_order), fontsize=9)
book.glue("fig_scatter", fig)
plt.close(fig)
(correlation.rename(index=tables.LABELS, level=0).style.format({"rho": "{:+.2f}", "p": "{:.3f}"}, na_rep="n/a")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ```{glue:figure} fig_scatter
# :alt: Scatter plots of probing indicators against classification and span scores, one point per variant
# :name: fig-indicators-scores
#
# Each indicator of first-layer identical-word attention after pretraining (horizontal) against
# the mean classification score (top two rows) and the mean span score (bottom two rows), one
# point per variant (no PE left out), profile {glue:text}`profile_name`. Titles: Spearman's
# $\rho$ across the variants.
# ```
#
# ## Against the baselines
#
# A comparison between position embeddings means something only where the models have learned
# the task. The table below sets the best variant of each column (chosen on the
# validation split, scored on the {glue:text}`split` split) against the baselines of chapters
# {ref}`classification` and {ref}`span-prediction`: the best constant predictor, the bag of
# words (a logistic or ridge regression on word counts, which knows nothing of order) and, for
# spans, fixed rules. The variant's interval comes from the same pooled variance as the claims'
# tests below, Bonferroni-corrected over the baselines of its column; a baseline is one
# deterministic fit on the same examples, taken as exact. On the classification average,
# {glue:text}`classification_baselines_text`. On the span average,
# {glue:text}`span_baselines_text`. In the table, "difference" is the variant's mean minus the
# baseline's score (percentage points), "low" and "high" bound the variant's mean.

# %% tags=["hide-input"]
(result.against_baselines.assign(baseline=result.against_baselines["baseline"].str.removeprefix("baseline: "))
 .style.format({"mean": "{:.1f}", "low": "{:.1f}", "high": "{:.1f}", "baseline score": "{:.1f}",
                "difference": "{:+.1f}"}, na_rep="n/a").hide(axis="index")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ## The paper's claims, one by one
#
# **The rule** (`pe_book.stats`, whose docstring has the details). Each claim about
# scores is reduced to comparisons "variant A scores higher than variant B on a column" (a task
# or an average) and a quantifier.
#
# *Two sources of variance.* A variant is pretrained with one or more pretraining seeds and every
# pretrained model is fine-tuned with each fine-tuning seed ({glue:text}`seed_design`). A
# variant's score is the mean of its pretrained models' means, and its uncertainty comes from
# both sources: with $P$ pretraining and $F$ fine-tuning seeds its variance is
# $\sigma^2_{pre}/P + \sigma^2_{ft}/(PF) = \tau^2/P$, where $\tau^2$ is the variance of one
# pretrained model's mean score. The pretrained model is therefore the unit of the test (its
# fine-tuning runs are repeated measurements of it, not independent models). $\tau^2$ is
# estimated per column from the variants with at least two pretraining seeds, pooled over them
# (assuming the variance is alike across variants), and a variant with one pretraining seed
# borrows it; the comparison table says which did. Where no variant has two pretraining seeds,
# the pretraining variance is unknown and no verdict is given, rather than pretending it is zero.
#
# *One comparison.* Its effect is the difference of the two variant means (percentage points),
# with a t interval whose degrees of freedom are those of the pooled estimate. With three
# pretraining seeds per variant a (two-stage) bootstrap would resample three clusters and give
# intervals too narrow to trust; the t interval is exact under the nested normal model.
#
# *A claim.* Its comparisons are one family: p-values are corrected with Holm's method, and the
# intervals shown are Bonferroni's at level $1 - \alpha/K$ for a claim of $K$ comparisons
# (simultaneous, slightly wider than what Holm's decisions use), $\alpha$ =
# {glue:text}`alpha`. A comparison is *decided* when its Holm-corrected p is below $\alpha$,
# in the sign of its effect. A claim with quantifier
#
# * **all** ("the best", "every") is *supported* when every comparison is decided as claimed and
#   *contradicted* when any is decided against;
# * **most** ("almost every", "relatively better") is *supported* when more than half are
#   decided as claimed and *contradicted* when at least half are decided against;
# * **any** ("does not always help") is *supported* when at least one is decided as claimed and
#   *contradicted* when all are decided against;
#
# and *not decidable at this scale* otherwise. Any wrong verdict needs at least one wrong
# decision among the claim's comparisons, which Holm's correction keeps below $\alpha$: with no
# true difference and 3 x 3 seeds, simulated verdicts come out wrong in at most 5% of runs for
# every quantifier (about 2.5% for one comparison each way; the test
# `tests/experiments/test_stats.py` states the rates), where the previous rule ("difference
# beyond the larger seed standard deviation") gave up to a third. For an undecided claim the
# table gives the **minimum detectable effect** (MDE): the true difference that each of its
# comparisons would detect with 80% power at the corrected level, with these seeds, and what
# twice the fine-tuning seeds or twice the pretraining seeds would make of it.
#
# *At chance.* A column on which no variant beats the best constant predictor (chapters
# {ref}`classification` and {ref}`span-prediction`) beyond its interval says nothing about
# position embeddings: its comparisons are never decided, and a claim resting on such columns is
# "not decidable: models at chance on this task", never "contradicted".
#
# *Choosing the best without peeking.* "The best models on each SQuAD version use fully
# learnable RPE" compares the best variant with fully learnable RPE with every variant without
# it; that best variant is chosen on the validation split and the comparison tested on the
# {glue:text}`split` split, so that the choice does not favour the claim.
#
# A claim that an indicator helps (or hurts) is *supported* when Spearman's $\rho$ across
# variants has the claimed sign with $p <$ {glue:text}`alpha`, *contradicted* when it has the
# other sign with $p <$ {glue:text}`alpha`, and *not decidable* otherwise.
#
# The variance components behind the tests, per column (percentage points squared; "sd of one
# run" is the standard deviation of a single pretraining-plus-fine-tuning run, the unit in which
# the simulated effects above are measured):

# %% tags=["hide-input"]
(result.variance.style.format({"tau2": "{:.2f}", "fine-tuning": "{:.2f}", "pretraining": "{:.2f}",
                              "sd of one run": "{:.2f}"}, na_rep="unknown").set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
SHOWN = {"claim": "claim", "verdict": "verdict", "quantifier": "quantifier", "comparisons": "n",
         "in claimed direction": "sign as claimed", "decided as claimed": "decided: for",
         "decided against": "decided: against", "effects": "effects [interval]", "mean difference": "mean diff.",
         "MDE": "MDE",
         "MDE 2x fine-tuning seeds": "MDE, 2x fine-tuning seeds", "MDE 2x pretraining seeds": "MDE, 2x pretraining seeds"}
(result.verdicts[list(SHOWN)].rename(columns=SHOWN)
 .style.format({c: "{:+.2f}" if c == "mean diff." else "{:.1f}" for c in list(SHOWN.values())[-4:]}, na_rep="n/a")
 .set_properties(subset=["claim"], **{"text-align": "left", "min-width": "16em"})
 .set_properties(subset=["verdict"], **{"text-align": "left", "min-width": "9em", "font-weight": "bold"})
 .set_properties(subset=["effects [interval]"], **{"min-width": "11em"})
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# The table gives, for each claim about scores, its verdict, its quantifier, how many comparisons
# it has ($n$), how many go in the claimed direction at all, how many are decided either way
# after Holm's correction, the smallest and the largest effect in the claimed direction with
# their Bonferroni intervals ("effects", a single one for a claim of one comparison), the mean
# difference over its comparisons ("mean diff."; both in percentage points of the task scores
# of chapters {ref}`classification` and {ref}`span-prediction`), and for an undecided claim its MDE (largest over its comparisons) now
# and with twice the seeds of either kind. The MDEs of the undecided claims range
# {glue:text}`mde_text`. The next table gives the claims about indicators, with Spearman's $\rho$
# across the $n$ variants and its p-value.

# %% tags=["hide-input"]
(result.indicator_verdicts[["claim", "rho", "p", "n", "verdict"]].rename(columns={"rho": "ρ"})
 .style.format({"ρ": "{:+.2f}", "p": "{:.3f}"}, na_rep="n/a")
 .set_properties(subset=["claim"], **{"text-align": "left"}).set_table_attributes('class="dataframe"'))

# %% [markdown]
# Of the {glue:text}`n_claims` verdicts, {glue:text}`n_supported` are "supported",
# {glue:text}`n_contradicted` "contradicted", {glue:text}`n_not_decidable` "not decidable" and
# {glue:text}`n_not_tested` "not tested" (for profile {glue:text}`profile_name`, with
# {glue:text}`seed_design`).
#
# Two of the paper's statements are not tested as claims here. That an APE handles the unshiftable
# [CLS] token better is an explanation, not a measurement; TUPE {cite}`ke2021rethinking` tests it
# by untying [CLS] from positions. That relative embeddings are asymmetric is a property of the
# embeddings, measured in {ref}`probing`. The properties themselves, and where sinusoidal
# embeddings are monotone, are in {ref}`properties` and {ref}`sinusoid`; the locality and symmetry
# indicators of {cite:t}`chen2023locality` are in the correlation table above.
#
# ### What the undecided claims would need
#
# A claim is not decided for one of three reasons, and each asks for something else. Where every
# variant is at chance on the claim's tasks, the models have not learned the task, and more seeds
# of the same models cannot help: it takes models that learn it, more pretraining (chapter
# {ref}`scale` measures what each budget gives) or more fine-tuning data. Where no variant has two
# pretraining seeds, the pretraining variance is unknown. Otherwise the effects are smaller than
# the seeds can resolve, and the table gives the pretraining seeds a variant (each model fine-tuned
# with as many seeds as here) at which the claim would be decided if the differences observed were
# the true ones, at this run's variance (an optimistic figure: an undecided difference is as
# likely to be inflated as not). In short: {glue:text}`needs_text`.

# %% tags=["hide-input"]
(result.needs.style.format({"mean difference": "{:+.2f}", "MDE": "{:.1f}", "seeds needed": "{:.0f}"}, na_rep="n/a")
 .set_properties(subset=["claim", "needs"], **{"text-align": "left", "min-width": "14em"})
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ### Every comparison
#
# The comparisons behind each verdict: the effect (expected higher minus expected lower,
# percentage points) with its Bonferroni interval ("low", "high"), the p-value and Holm's
# corrected p within the claim, the outcome, the MDE, and where the variance came from.

# %% tags=["hide-input"]
(result.details.style.format({"difference": "{:+.2f}", "low": "{:+.2f}", "high": "{:+.2f}", "p": "{:.3f}",
                              "p (Holm)": "{:.3f}", "MDE": "{:.1f}"}, na_rep="n/a").hide(axis="index")
 .set_table_attributes('class="dataframe"'))
