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
# The verdicts below are computed for profile **{glue:text}`profile_name`**: {glue:text}`scale_text`.
# They hold at this scale: "supported at this scale" and "contradicted at this scale" say what
# these models show, not what BERT-base shows. The smoke profile is tiny (a few dozen pretraining steps, a few
# hundred fine-tuning examples, one seed of each kind): its pretraining variance is unknown, so
# every verdict is "not decidable"; it exercises the code and means nothing scientifically. The cpu profile (`pe-book book --profile cpu`) is this project's
# reproduction; even there the models are far smaller than the paper's BERT-base and the tasks are
# offline analogues where the hub is out of reach.
# ```

# %% tags=["hide-cell"]
import math
import warnings

import matplotlib.pyplot as plt
import seaborn as sns
from IPython.display import display

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import tables
from pe_book.chapters import common, findings, paper_verdicts, trend
from pe_book.publishing import notebook
from pe_book.verdicts import intervals

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `alpha` is the significance level of the verdicts: the familywise error rate of each claim's
# comparisons, and the level of the correlation verdicts; `layer` the probed layer whose
# indicators are correlated with the scores (0: the first, as in the paper). `trend_profile` and
# `trend_reference` name the runs that follow the key effects across budgets (chapter {ref}`scale`).

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to include; empty: the profile's
results: str = "results"  # folder of the artifact store
seeds: list[int] = []  # fine-tuning seeds; empty: the profile's
split: str = "test"  # split whose scores are used: test or validation
layer: int = 0  # probed layer whose indicators are correlated with the scores
alpha: float = 0.05  # significance level of the verdicts (familywise per claim) and of the correlations
trend_profile: str = ""  # the runs of the key effects' trend with scale ("trend"); empty: not in this book
trend_reference: str = ""  # the profile whose seeds lend each trend run its variance ("cpu")

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = findings.compute(stored, variants, seeds, split, layer, alpha)
notebook.glue("profile_name", profile)
notebook.glue_all(result.cited)
common.data_used(params, stored, stored.profile.tasks)

# %% [markdown]
# ## The answer
#
# The paper's claims and their verdicts at this scale (the effect of a claim of several
# comparisons runs from its smallest to its largest); how each verdict is reached, and every
# comparison behind it, follow below.

# %% tags=["hide-input"]
(paper_verdicts.narrow_verdicts(result.verdicts).style.hide(axis="index")
 .set_properties(subset=[paper_verdicts.NARROW_COLUMNS["claim"]], **{"text-align": "left"})
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ## Do the indicators predict the scores?
#
# For every variant but "none" (its probing map is constant, so its indicators say nothing about
# a position embedding), {numref}`fig-indicators-scores` plots each indicator of the first
# layer's identical-word attention after pretraining against the mean score of each score column
# ({glue:text}`groups_text`): tasks whose label depends on word order and tasks whose label does
# not are averaged apart, so that an order-free task never dilutes what position does. Scores are
# from the {glue:text}`split` split and averaged over seeds. The table gives Spearman's rank
# correlation $\rho$ across the variants with its two-sided p-value.

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
notebook.glue("fig_scatter", fig)
plt.close(fig)
(correlation.rename(index=tables.LABELS, level=0).style.format({"rho": "{:+.2f}", "p": "{:.3f}"}, na_rep="n/a")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ```{glue:figure} fig_scatter
# :alt: Scatter plots of probing indicators against classification and span scores, one point per variant
# :name: fig-indicators-scores
#
# Each indicator of first-layer identical-word attention after pretraining (horizontal) against
# the mean score of each score column (two rows per column, in the order {glue:text}`groups_text`), one
# point per variant (no PE left out), profile {glue:text}`profile_name`. Titles: Spearman's
# $\rho$ across the variants.
# ```
#
# ## Which columns the models learned
#
# A comparison between position embeddings means something only where the models have learned
# the task beyond what needs no word order. A column (a task or a group) is **testable** when its
# best variant, chosen on the validation split among the variants with at least
# {glue:text}`gate_seeds` pretraining seeds (a variant with fewer has no pretraining variance of
# its own, and its interval would borrow the others'), beats **every order-free** baseline of
# each of its tasks beyond its interval on the {glue:text}`split` split ("low" is the lower end of
# the variant's two-sided {glue:text}`gate_interval`): the best constant, the bag of words, and
# for spans every fixed rule that ignores word order. "baseline" names the best of them (a group's
# bar is the mean of its tasks' bars). On a column whose tasks need word order the best variant
# must also beat the `none` variant (the control: a model fine-tuned like the others that cannot
# see word order, and on a span task often better than every order-free rule) beyond the interval
# of their difference ("gap to none", with "its low" the lower end of that interval). A group is
# testable only when each of its tasks is. A rule that reads word order ("neighbour match" on the
# cloze tasks) is a cheap model that uses positions, not an order-free baseline: it never gates,
# and the table shows it as a "reference", with where the best variant's interval stands against
# it ("above", "below" or "within the interval"; the table below shows it). Verdicts rest only on testable columns
# (`pe_book.verdicts.testability` holds the rule, and chapter {ref}`cls-untying` passes the same gate):
# {glue:text}`testable_text`.

# %% tags=["hide-input"]
GATE_LOW = f"low ({result.cited['gate_interval']})"  # the level of the gate's intervals, from the code that computed them
(result.testable.assign(testable=[common.yes_no(row["testable"]) + (f": {row['reason']}" if row["reason"] else "")
                                  for _, row in result.testable.iterrows()])
 .drop(columns=["tasks", "control", "reason", "high", "level", "reference", "reference score", "against reference"])
 .rename(columns={"low": GATE_LOW, "gap": "gap to none", "gap low": "its low"})
 .style.format({"mean": "{:.1f}", GATE_LOW: "{:.1f}", "baseline score": "{:.1f}", "gap to none": "{:+.1f}",
                "its low": "{:+.1f}"}, na_rep="n/a")
 .set_properties(subset=["testable"], **{"text-align": "left"}).set_table_attributes('class="dataframe"'))

# %% [markdown]
# ## Against the baselines
#
# The table below sets the best variant of each column (the gate's: chosen on the validation
# split among the variants with at least {glue:text}`gate_seeds` pretraining seeds, scored on the
# {glue:text}`split` split) against every baseline of chapters {ref}`classification` and
# {ref}`span-prediction`, each averaged over a group's tasks: the best constant predictor, the bag
# of words (a logistic or ridge regression on word counts, which knows nothing of order) and for
# spans the fixed rules. "role" tells the order-free baselines (the gate's bars) from the rules
# that read word order, shown as references. The variant's interval comes from the same variance
# as the claims' tests below, Bonferroni-corrected over the distinct baselines of its column (each
# counted once; the text above names each column's level); a baseline is one deterministic fit on the same
# examples, taken as exact. {glue:text}`baselines_text` In the table, "difference" is the
# variant's mean minus the baseline's score (percentage points), "low" and "high" bound the
# variant's mean, within the values a score can take (0 to 100; -100 to 100 for a correlation).

# %% tags=["hide-input"]
against = result.against_baselines
(against.assign(baseline=against["baseline"].str.removeprefix("baseline: "))
 .drop(columns=["over", "level"])
 .style.format({"mean": "{:.1f}", "low": "{:.1f}", "high": "{:.1f}", "baseline score": "{:.1f}",
                "difference": "{:+.1f}"}, na_rep="n/a").hide(axis="index")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# ## The paper's claims, one by one
#
# **The rule** (`pe_book.verdicts`, whose docstring has the details). Each claim about
# scores is reduced to comparisons "variant A scores higher than variant B on a column" (a task
# or an average) and a quantifier.
#
# *Two sources of variance.* A variant is pretrained with one or more pretraining seeds and every
# pretrained model is fine-tuned with each fine-tuning seed ({glue:text}`seed_design`). A
# variant's score is the mean of its pretrained models' means, and its uncertainty comes from
# both sources: with $P$ pretraining and $F$ fine-tuning seeds its variance is
# $\sigma^2_{pre}/P + \sigma^2_{ft}/(PF) = \tau^2/P$, where $\tau^2$ is the variance of one
# pretrained model's mean score. The pretrained model is therefore the unit of the test (its
# fine-tuning runs are repeated measurements of it, not independent models). The pretraining
# component is estimated per column from the variants with at least two pretraining seeds,
# pooled over them (assuming it is alike across variants), and a variant with one pretraining
# seed borrows it; the comparison table says which did. $\tau^2$ is never taken below the floor
# the model itself implies, $\sigma^2_{ft}/F$: with few pretraining seeds the pooled mean
# square can fall below it, which would make every interval too narrow. The fine-tuning
# component is pooled over all variants unless Bartlett's test rejects equal variances at level
# $\alpha$; then each variant keeps its own. Where no variant has two pretraining seeds, the
# pretraining variance is unknown and no verdict is given, rather than pretending it is zero.
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
# decision among the claim's comparisons, which Holm's correction keeps below $\alpha$; the
# section below measures each claim's false-verdict rate and power on simulated runs of this
# design. For an undecided claim the
# table gives the **minimum detectable effect** (MDE): the true difference that each of its
# comparisons would detect with 80% power at the corrected level, with these seeds, and what
# twice the fine-tuning seeds or twice the pretraining seeds would make of it.
#
# *Only where the models learned.* A comparison on a column that is not testable (above) keeps
# its effect and interval in the tables but enters no decision: it leaves the claim's family,
# and a claim resting only on such columns is "not testable at this scale: no model beats
# <baseline> on <column>", never "contradicted". The paper's GLUE-average claims are tested on
# the order-sensitive classification column, its SQuAD-average claims on the span column.
#
# *Choosing the best without peeking.* "The best models on each span task use fully
# learnable RPE" compares the best variant with fully learnable RPE with every variant without
# it; that best variant is chosen on the validation split and the comparison tested on the
# {glue:text}`split` split, so that the choice does not favour the claim.
#
# A claim that an indicator helps (or hurts) is *supported* when Spearman's $\rho$ across
# variants has the claimed sign with a Holm-corrected $p <$ {glue:text}`alpha` (the indicator
# claims on all testable columns are one family), *contradicted* when it has the other sign
# with a corrected $p <$ {glue:text}`alpha`, and *not decidable* otherwise.
#
# The variance components behind the tests, a column per score column (percentage points squared): the pooled
# between-pretraining-seed mean square ("between", with its df), its floor (the pooled fine-tuning
# variance over the fine-tuning seeds a model has), $\tau^2$ (the larger of the two), the
# fine-tuning and pretraining components, the standard deviation of a single
# pretraining-plus-fine-tuning run, Bartlett's p for equal fine-tuning variances across the
# variants, and the range of the variants' own fine-tuning variances:

# %% tags=["hide-input", "hide-output"]
findings.variance_shown(result.variance).style.set_table_attributes('class="dataframe"')

# %% [markdown]
# *Paired by seed index?* Every variant's pretraining seed $s$ trains on the same batches with the
# same masks, so the scores of one seed index could share an effect $b_s$ across variants
# ($y_{vs} = \mu_v + b_s + e_{vs}$), which a comparison at the same seeds would cancel. A two-way
# analysis of variance of each pretrained model's mean (variants by seed index, over the variants
# that share their seed indices) estimates it: pairing removes at most
# {glue:text}`pairing_saved_max` of a difference's variance (on {glue:text}`pairing_saved_column`),
# so the tests treat the variants' seeds as independent, as above. The components per column
# (percentage points squared):

# %% tags=["hide-input"]
(result.pairing.rename(columns={"seed_index": "seed index", "saved": "share saved by pairing"})
 .style.format({"seed index": "{:.1f}", "residual": "{:.1f}", "share saved by pairing": "{:.0%}",
                "variants": "{:.0f}", "seeds": "{:.0f}"}, na_rep="n/a"))

# %% tags=["hide-input"]
SHOWN = {"claim": "claim", "verdict": "verdict", "not testable on": "not testable on",
         "effects": "effects [interval]", "mean difference": "mean diff."}
(result.verdicts[list(SHOWN)].rename(columns=SHOWN)
 .style.format({"mean diff.": "{:+.2f}"}, na_rep="n/a")
 .set_properties(subset=["claim"], **{"text-align": "left", "min-width": "13em"})
 .set_properties(subset=["verdict"], **{"text-align": "left", "min-width": "8em", "font-weight": "bold"})
 .set_properties(subset=["effects [interval]"], **{"min-width": "10em"})
 .set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
COUNTED = {"quantifier": "quantifier", "comparisons": "n", "in claimed direction": "sign as claimed",
           "decided as claimed": "decided: for", "decided against": "decided: against", "MDE": "MDE",
           "MDE 2x fine-tuning seeds": "MDE, 2x fine-tuning seeds", "MDE 2x pretraining seeds": "MDE, 2x pretraining seeds"}
(result.verdicts[list(COUNTED)].rename(columns=COUNTED)
 .style.format({c: "{:.1f}" for c in list(COUNTED.values())[-3:]}, na_rep="n/a")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# The first table gives, for each claim about scores, its verdict, the columns it does not rest
# on (not testable), the smallest and the largest effect in the claimed direction with their
# Bonferroni intervals ("effects", a single one for a claim of one comparison, then the intervals'
# level and the number of testable comparisons it is corrected over) and the mean
# difference over its comparisons ("mean diff."; both in percentage points of the task scores of
# chapters {ref}`classification` and {ref}`span-prediction`). The second gives its quantifier, how
# many comparisons it has ($n$), how many go in the claimed direction at all, how many are decided
# either way after Holm's correction, and for an undecided claim its MDE (largest over its
# comparisons) now and with twice the seeds of either kind. The MDEs of the undecided claims range
# {glue:text}`mde_text`. The next table gives the claims about indicators, with Spearman's $\rho$
# across the $n$ variants, its p-value and Holm's corrected p over the family.

# %% tags=["hide-input"]
(result.indicator_verdicts[["claim", "rho", "p", "p (Holm)", "n", "verdict"]].rename(columns={"rho": "ρ"})
 .style.format({"ρ": "{:+.2f}", "p": "{:.3f}", "p (Holm)": "{:.3f}"}, na_rep="n/a")
 .set_properties(subset=["claim"], **{"text-align": "left"}).set_table_attributes('class="dataframe"'))

# %% [markdown]
# Of the {glue:text}`n_claims` verdicts, {glue:text}`n_supported` are "supported",
# {glue:text}`n_contradicted` "contradicted", {glue:text}`n_not_decidable` "not decidable",
# {glue:text}`n_not_testable` "not testable" and {glue:text}`n_not_tested` "not tested" (for
# profile {glue:text}`profile_name`, at the scale stated above).
#
# ### How often the rule errs, and what it can find
#
# The rule's error rates are measured, not assumed. For each claim, {glue:text}`n_runs` runs are
# simulated with this run's design (its variants, pretraining and fine-tuning seeds) and the
# variance components estimated above on the claim's testable columns, and each simulated run
# is judged by the same code as the real one (`pe_book.verdicts.power.operating_characteristics`). With no
# true difference between any variants, every verdict is wrong ("false verdicts"); with every
# comparison of the claim truly holding by a planted effect, "power" is the share of runs in which
# the claim is supported and "contradicted" the share in which it is wrongly contradicted. The
# rates are conditional on the columns being testable ("n/a": no testable column, or an unknown
# pretraining variance). In short: {glue:text}`operating_text`.

# %% tags=["hide-input"]
(result.operating.drop(columns="quantifier")
 .style.format({c: "{:.1%}" for c in result.operating.columns if c not in ("claim", "quantifier")}, na_rep="n/a")
 .set_properties(subset=["claim"], **{"text-align": "left", "min-width": "12em"})
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# Two of the paper's statements are not tested as claims here. That an APE handles the unshiftable
# [CLS] token better is an explanation, not a measurement; TUPE {cite}`ke2021rethinking` tests it
# by untying [CLS] from positions. That relative embeddings are asymmetric is a property of the
# embeddings, measured in {ref}`probing`. The properties themselves, and where sinusoidal
# embeddings are monotone, are in {ref}`properties` and {ref}`sinusoid`; the locality and symmetry
# indicators of {cite:t}`chen2023locality` are in the correlation table above.
#
# ### What the undecided claims would need
#
# A claim is not decided for one of three reasons, and each asks for something else. Where no
# model beats the order-free baselines of the claim's columns, either the best variant is below
# one in the mean, and the models have not learned what the claim is about: more seeds of the same
# models cannot help, it takes models that learn it, more pretraining (chapter {ref}`scale`
# measures what each budget gives) or more fine-tuning data. Or it is above every order-free
# baseline in the mean but its interval reaches below one ("within reach"): more pretraining seeds narrow that
# interval. Where no variant has two
# pretraining seeds, the pretraining variance is unknown. Otherwise the effects are smaller than
# the seeds can resolve, and the table gives the pretraining seeds a variant (each model fine-tuned
# with as many seeds as here) at which the claim would be decided if the differences observed were
# the true ones, at this run's variance (an optimistic figure: an undecided difference is as
# likely to be inflated as not). In short: {glue:text}`needs_text`.

# %% tags=["hide-input"]
(result.needs.drop(columns="within reach").style.format({"mean difference": "{:+.2f}", "MDE": "{:.1f}", "seeds needed": "{:.0f}"}, na_rep="n/a")
 .set_properties(subset=["claim", "needs"], **{"text-align": "left", "min-width": "10em"})
 .set_table_attributes('class="dataframe"'))

# %% tags=["hide-cell"]
trended = trend.read(trend_profile, trend_reference, results, alpha)


def trend_counts(t):
    """How the claims' effects move with the budget (t: a trend.Trend, or None: not in this book), in words."""
    if t is None:
        return "The trend runs are not part of this book (the parameter `trend_profile` is empty)."
    counts = t.claims["direction"].value_counts()
    found = ", ".join(f"{n} {direction}" for direction, n in counts.items()) or "none"
    return (f"Of the {len(t.claims)} comparisons of the claims that profile {trend_profile} follows "
            f"({t.cited['trend_runs']} of its {t.cited['trend_planned']} fine-tunings stored, budgets "
            f"{t.cited['trend_budgets']} tokens, on its own tasks): {found}.")


notebook.glue("trend_counts", trend_counts(trended))
notebook.glue("trend_learned_text", trended.cited["trend_learned_text"] if trended is not None
              else "not measured (the trend runs are not part of this book)")

# %% [markdown]
# ### With scale
#
# These verdicts hold at one budget. Whether an effect shrinks, grows or flips as the models see
# more text is measured in {ref}`scale` (its last section, with the rule): one run of `none`,
# `ape-learned` and `rpe-learned` at each of five budgets, each run's variance borrowed from a
# run with seeds. {glue:text}`trend_counts` Per claim and comparison: the effect at the smallest
# and the largest budget (first, last), its slope (change per doubling of the pretraining tokens,
# percentage points) with a Bonferroni interval over the claim's comparisons, and, where no trend
# is detected, the slope that would have been seen with 80% power (detectable). A trend is read
# on every column the claim names, learned or not: on a column that no model learned at this
# budget it tells whether the effect moves as the models see more text, and is no verdict on the
# claim. Held to this chapter's gate at each budget ({ref}`scale`), the trend's single runs
# learned {glue:text}`trend_learned_text`.

# %% tags=["hide-input"]
if trended is not None:
    display(trend.style_claims(trended.claims))

# %% [markdown]
# ### Every comparison
#
# The comparisons behind each verdict, one table a claim: the effect (expected higher minus
# expected lower, percentage points) with its Bonferroni interval (the column's heading gives its
# level), Holm's corrected p within the claim (which decides), the outcome, the MDE, and where the
# variance came from. Every score they come from, one row a value (variant, seeds, budget, task,
# split, metric, key), is the table {download}`scores.csv <_static/scores.csv>` (`pe-book export`).

# %% tags=["hide-input", "hide-output"]
for claim_id, rows in common.with_intervals(result.details, "low", "high").groupby("claim id", sort=False):
    level = intervals.interval_label(rows["level"].iloc[0], rows["over"].iloc[0])
    display(rows.drop(columns=["claim id", "p", "level", "over"])
            .rename(columns={"expected higher": "higher", "expected lower": "lower", "interval": level})
            .style.format({"difference": "{:+.2f}", "p (Holm)": "{:.3f}", "MDE": "{:.1f}"}, na_rep="n/a")
            .hide(axis="index").set_caption(claim_id).set_table_attributes('class="dataframe"'))

# %% [markdown]
# ## When the models learn position
#
# Chapter {ref}`pretraining` measures when each pretraining leaves the plateau of the model
# without position embedding: the first evaluation step from which its validation loss stays more
# than {glue:text}`plateau_margin:.3f` nats below none's (a margin set from none's own seeds; the
# rule is in `pe_book.plateau`). Of the models pretrained for {glue:text}`escape_budget:,.0f` steps
# here, {glue:text}`plateau_text`. The models whose scores the claims compare have therefore not
# all been learning position for the same number of steps, and an APE model's pretraining seed
# decides when it starts: its scores may record when that seed escaped as much as what its
# position embedding can do.
#
# The first table sets the escape step of each of the {glue:text}`ape_n` pretrainings of an APE
# alone beside its scores (the mean over its fine-tuning seeds, {glue:text}`split` split, per task
# and per group of several tasks); the second gives Spearman's $\rho$ between the escape step and
# each score column over those pretrainings (a pretraining that did not leave ranks after every
# one that did), with Holm's correction over the {glue:text}`escape_rho_columns` columns.
# {glue:text}`escape_rho_text`

# %% tags=["hide-input"]
def escape_rho_text(relation, alpha):
    """Spearman's rho between the APE-only pretrainings' escape steps and their scores, in words."""
    table = relation.correlation.dropna(subset=["rho"])
    if not len(table):
        return ("No rank correlation is defined here: it needs three APE-only pretrainings or more, with escape steps "
                "and scores that vary.")
    each = "; ".join(f"{column} ρ = {row['rho']:+.2f} (p = {row['p']:.2f})" for column, row in table.iterrows())
    decided = table[table["p (Holm)"] < alpha]
    start = f"Over the {relation.cited['escape_rho_n']} pretrainings: {each}."
    if len(decided):
        found = ", ".join(f"{column} (ρ = {row['rho']:+.2f}: {'later' if row['rho'] < 0 else 'earlier'} escapes, lower "
                          f"scores; Holm p = {row['p (Holm)']:.3f})" for column, row in decided.iterrows())
        return f"{start} After Holm's correction the escape step goes with the score on {found}, at level {alpha:g}."
    return (f"{start} No correlation is decided at level {alpha:g} after Holm's correction: at this number of pretrainings the "
            "spread of the APE models' scores between seeds is not shown to follow when each seed escaped (so few "
            "pretrainings can detect only a strong rank correlation).")


notebook.glue("escape_rho_text", escape_rho_text(result.plateau, alpha))
display(result.plateau.per_model.rename(columns={"escape": "escape step"})
        .style.format({c: "{:.1f}" for c in result.plateau.per_model.columns if c != "escape"}, na_rep="n/a")
        .set_table_attributes('class="dataframe"'))
(result.plateau.correlation.rename(columns={"rho": "ρ"})
 .style.format({"ρ": "{:+.2f}", "p": "{:.3f}", "p (Holm)": "{:.3f}"}, na_rep="n/a")
 .set_table_attributes('class="dataframe"'))
