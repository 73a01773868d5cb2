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
# run shows, with a verdict that code computes from the numbers and their spread over seeds.
#
# ```{admonition} Read the verdicts with the profile in mind
# :class: warning
# The verdicts below are computed for profile **{glue:text}`profile_name`** with
# {glue:text}`n_seeds` fine-tuning seed(s). The smoke profile is tiny (a few dozen pretraining
# steps, a few hundred fine-tuning examples, one seed): its verdicts exercise the code and mean
# nothing scientifically. The cpu profile (`pe-lib book --profile cpu`) is this project's
# reproduction; even there the models are far smaller than the paper's BERT-base and the tasks are
# offline analogues where the hub is out of reach.
# ```

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

from pe_lib import book, parse_variant, report
from pe_lib.data.tasks import get_task

book.record_names(globals())

# %% [markdown]
# ## Parameters
#
# `alpha` is the significance level of the correlation verdicts; `layer` the probed layer whose
# indicators are correlated with the scores (0: the first, as in the paper).

# %% tags=["parameters"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
variants: list[str] = []  # position embeddings to include; empty: the profile's
results: str = "results"  # folder of the artifact store
seeds: list[int] = []  # fine-tuning seeds; empty: the profile's
split: str = "test"  # split whose scores are used: test or validation
layer: int = 0  # probed layer whose indicators are correlated with the scores
alpha: float = 0.05  # significance level of the correlation verdicts

# %%
params = book.check_notebook_parameters(globals())
if split not in ("test", "validation"):
    raise ValueError(f"split must be 'test' or 'validation', got {split!r}")
if not 0 < alpha < 1:
    raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
runner = report.open_runner(profile, results)
names = report.resolve_variants(variants, runner.profile.variants)
specs = {t: get_task(t) for t in runner.profile.tasks}
classification_tasks = [t for t, s in specs.items() if s.meta.kind != "span"]
span_tasks = [t for t, s in specs.items() if s.meta.kind == "span"]
seed_list = list(seeds or runner.profile.seeds)
book.glue("profile_name", profile)
book.glue("n_seeds", len(seed_list))
book.glue("n_variants", len(names))
book.glue("split", split)
book.glue("alpha", alpha)
book.glue("classification_tasks", ", ".join(classification_tasks) or "none")
book.glue("span_tasks", ", ".join(span_tasks) or "none")
pd.DataFrame({"value": params})

# %%
payloads = {name: runner.ensure_analysis(name).payload for name in names}
finetuned = {(v, t, s): runner.ensure_finetuned(v, t, s).payload
             for v in names for t in specs for s in seed_list}
records = report.score_records(finetuned, {t: s.meta.kind for t, s in specs.items()}, split)
groups = {"classification": classification_tasks, "span": span_tasks}
per_seed = report.per_seed_scores(records, {k: v for k, v in groups.items() if v})
scores = per_seed[[k for k, v in groups.items() if v]].groupby(level="variant", sort=False).mean()
indicators = report.indicator_table(payloads, "trained", "probe", layer)
correlation = report.correlations(indicators, scores)

# %% [markdown]
# ## Do the indicators predict the scores?
#
# For every variant but "none" (its probing map is constant, so its indicators say nothing about
# a position embedding), {numref}`fig-indicators-scores` plots each indicator of the first
# layer's identical-word attention after pretraining against the mean classification score
# (average over {glue:text}`classification_tasks`) and the mean span score (average over
# {glue:text}`span_tasks`), both from the {glue:text}`split` split and averaged over seeds. The
# table gives Spearman's rank correlation $\rho$ across the variants with its two-sided p-value.

# %%
def kind(variant):
    p = parse_variant(variant)
    if p.absolute and p.relative:
        return "APE + relative"
    return "absolute" if p.absolute else "relative" if p.relative else "none"


points = indicators.join(scores, how="inner").drop(index="none", errors="ignore")
points["kind"] = [kind(v) for v in points.index]
columns = list(report.PROBE_INDICATORS)
score_columns = list(scores.columns)
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
    ax.set_xlabel(report.LABELS[indicator], fontsize=9)
    ax.set_ylabel(f"{score} score (%)", fontsize=9)
    ax.tick_params(labelsize=8)
for ax in axes.flat[len(panels):]:
    ax.set_axis_off()
handles = [plt.Line2D([], [], marker="o", ls="", color=c) for c in sns.color_palette(n_colors=len(hue_order))]
fig.legend(handles, hue_order, loc="outside lower center", ncols=len(hue_order), fontsize=9)
book.glue("fig_scatter", fig)
plt.close(fig)
(correlation.rename(index=report.LABELS, level=0).style.format({"rho": "{:+.2f}", "p": "{:.3f}"}, na_rep="n/a")
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
# ## The paper's claims, one by one
#
# **The rule.** Each claim about scores is reduced to comparisons "variant A scores higher than
# variant B on a column" (a task or an average) and a quantifier (`pe_lib.report`, where the rule
# is also the docstring). For a comparison, $d$ is the difference of the mean scores over seeds
# and $s$ the larger of the two standard deviations over seeds; the comparison goes *as claimed*
# when $d > s$, *against* when $d < -s$, and is *within the spread* otherwise, or when there is
# only one seed ($s$ undefined). A claim with quantifier
#
# * **all** ("the best", "every") is *supported* when every comparison goes as claimed and
#   *contradicted* when any goes against;
# * **most** ("almost every", "relatively better") is *supported* when more than half go as
#   claimed and *contradicted* when at least half go against;
# * **any** ("does not always help") is *supported* when at least one goes as claimed and
#   *contradicted* when all go against;
#
# and *inconclusive* otherwise: "differences within the spread", or "one seed: no spread" when
# the spread cannot be measured. A claim whose variants were not run is "not tested". A claim that
# an indicator helps (or hurts) is *supported* when Spearman's $\rho$ across variants has the
# claimed sign with $p <$ {glue:text}`alpha`, *contradicted* when it has the other sign with
# $p <$ {glue:text}`alpha`, and *inconclusive* otherwise. The "best models on SQuAD use fully
# learnable RPE" claim compares the best variant with fully learnable RPE, on each SQuAD version,
# with every variant without it.

# %%
claims = report.paper_claims(span_tasks=span_tasks, per_seed=per_seed)
verdicts = report.assess_claims(claims, per_seed)
indicator_verdicts = report.assess_indicator_claims(correlation, score_columns, alpha)
SHOWN = {"claim": "claim", "verdict": "verdict", "quantifier": "quantifier", "comparisons": "n",
         "in claimed direction": "sign as claimed", "beyond spread, as claimed": "beyond spread: for",
         "beyond spread, against": "beyond spread: against", "mean difference": "mean diff."}
all_verdicts = list(verdicts["verdict"]) + list(indicator_verdicts["verdict"])
count = {label: sum(v.startswith(label) for v in all_verdicts)
         for label in ("supported", "contradicted", "inconclusive", "not tested")}
for label, n in count.items():
    book.glue(f"n_{label.replace(' ', '_')}", n)
book.glue("n_claims", len(all_verdicts))
(verdicts[list(SHOWN)].rename(columns=SHOWN).style.format({"mean diff.": "{:+.2f}"}, na_rep="n/a")
 .set_properties(subset=["claim"], **{"text-align": "left", "min-width": "16em"})
 .set_properties(subset=["verdict"], **{"text-align": "left", "min-width": "9em", "font-weight": "bold"})
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# The table gives, for each claim about scores, its verdict, its quantifier, how many comparisons
# it has ($n$), how many go in the claimed direction at all, how many beyond the spread either
# way, and the mean difference in the claimed direction ("mean diff.", in percentage points of the
# task scores of chapters {ref}`classification` and {ref}`span-prediction`). The next table gives the
# claims about indicators, with Spearman's $\rho$ across the $n$ variants and its p-value.

# %%
(indicator_verdicts[["claim", "rho", "p", "n", "verdict"]].rename(columns={"rho": "ρ"})
 .style.format({"ρ": "{:+.2f}", "p": "{:.3f}"}, na_rep="n/a")
 .set_properties(subset=["claim"], **{"text-align": "left"}).set_table_attributes('class="dataframe"'))

# %% [markdown]
# Of the {glue:text}`n_claims` verdicts, {glue:text}`n_supported` are "supported",
# {glue:text}`n_contradicted` "contradicted", {glue:text}`n_inconclusive` "inconclusive" and
# {glue:text}`n_not_tested` "not tested" (for profile {glue:text}`profile_name`, with
# {glue:text}`n_seeds` seed(s)).
#
# Two of the paper's statements are not tested as claims here. That an APE handles the unshiftable
# [CLS] token better is an explanation, not a measurement; TUPE {cite}`ke2021rethinking` tests it
# by untying [CLS] from positions. That relative embeddings are asymmetric is a property of the
# embeddings, measured in {ref}`probing`. The properties themselves, and where sinusoidal
# embeddings are monotone, are in {ref}`properties` and {ref}`sinusoid`; the locality and symmetry
# indicators of {cite:t}`chen2023locality` are in the correlation table above.
#
# ### Every comparison
#
# The comparisons behind each verdict: difference of the means (expected higher minus expected
# lower, percentage points), spread (larger standard deviation over seeds; n/a with one seed) and
# outcome.

# %%
details = report.comparison_table(claims, per_seed)
details.style.format({"difference": "{:+.2f}", "spread": "{:.2f}"}, na_rep="n/a").hide(axis="index") \
    .set_table_attributes('class="dataframe"')
