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
import pandas as pd
import seaborn as sns

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import book, claims, tables
from pe_book.chapters import common
from pe_lib.positions import resolve_variants
from pe_book.experiments.baselines import best_constant_scores

book.record_names(globals())

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
tasks: list[str] = []  # tasks; empty: the profile's (sentence-level ones form the classification average)
seeds: list[int] = []  # fine-tuning seeds; empty: the profile's
split: str = "test"  # split whose scores are shown: test or validation

# %% tags=["hide-input"]
params = book.check_notebook_parameters(globals())
if split not in ("test", "validation"):
    raise ValueError(f"split must be 'test' or 'validation', got {split!r}")
runner = common.open_runner(profile, results)
names = resolve_variants(variants, runner.profile.variants)
pairs = claims.untying_pairs(names)
if not pairs:
    raise ValueError(f"no '+untie-cls' variant with its tied counterpart among {names}; "
                     "add e.g. 'rpe-learned' and 'rpe-learned+untie-cls' to variants")
reference = resolve_variants([reference], [])[0]
compared = list(dict.fromkeys([reference, *pairs.values(), *pairs]))
all_tasks = list(tasks or runner.profile.tasks)
groups = {"classification": common.chapter_tasks([], all_tasks, span=False),
          "span": common.chapter_tasks([], all_tasks, span=True)}
seed_list = list(seeds or runner.profile.seeds)
book.glue("profile_name", profile)
book.glue("reference", reference)
book.glue("n_seeds", len(seed_list))
book.glue("seed_design", common.seed_design(runner.profile.with_overrides(seeds=tuple(seed_list)), compared))
book.glue("pairs_text", "; ".join(f"{u} against {t}" for u, t in pairs.items()))
common.data_used(params, runner, all_tasks)

# %% [markdown]
# ## Scores
#
# The compared variants are {glue:text}`pairs_text`, each also against {glue:text}`reference`.
# Scores are in percent, each task's score the mean of its metrics, "classification" the mean
# over the sentence-level tasks and "span" over SQuAD v1.1/v2.0 analogues, per run; cells give
# the mean over the pretrained models ± the standard deviation of single runs (as in
# {ref}`classification`), with {glue:text}`seed_design`.

# %% tags=["hide-input"]
per_seed_parts = []
for group, specs in groups.items():
    if not specs:
        continue
    finetuned, _, _ = common.finetuned_with_origins(runner, compared, specs, seed_list, split)
    records = tables.score_records(finetuned, {t: s.meta.kind for t, s in specs.items()}, split)
    per_seed_parts.append(tables.per_seed_scores(records, {group: list(specs)}))
per_seed = pd.concat(per_seed_parts, axis=1)
baselines = best_constant_scores(runner, [t for specs in groups.values() for t in specs],
                                 {group: list(specs) for group, specs in groups.items() if specs}, split)
summary = tables.summarise(per_seed).reindex(compared)
tables.style_summary(summary)

# %% [markdown]
# ## Does untying close the gap?
#
# For each untied variant: the gap before untying ({glue:text}`reference` minus the tied RPE),
# after (minus the untied one), the share of the gap that untying closed, the gain of untying
# (untied minus tied) with its interval, and two verdicts under the rule of {ref}`findings`:
# *untying helps* (the untied variant beats the tied one) and *reference still ahead* (the
# reference beats the untied variant). The two comparisons of a pair are one family: intervals
# from both pretraining and fine-tuning seeds, Holm's correction over the two, Bonferroni
# intervals. Untying **narrows** the gap when both are supported, **closes** it when it helps and
# no remaining gap is detected, **reverses** it when the untied variant is shown ahead of the
# reference, and **widens** it when the untied variant is shown behind the tied one.

# %% tags=["hide-input"]
gap_tables = {group: claims.cls_gap(per_seed, reference, pairs, group, baselines)
              for group in ("classification", "span") if group in per_seed.columns}
gap = pd.concat(gap_tables, names=["average"])
(gap.style.format({c: "{:.1f}" for c in gap.columns if gap[c].dtype.kind == "f" and c != "share closed"}
                  | {"share closed": "{:.0%}"}, na_rep="—").set_table_attributes('class="dataframe"'))

# %% tags=["hide-input"]
classification = gap_tables["classification"]
book.glue("cls_conclusions", "; ".join(f"{u}: {row['conclusion']}" for u, row in classification.iterrows()))
book.glue("cls_gap_before", "; ".join(f"{row['gap before']:+.1f} points for {row['tied']}"
                                      for _, row in classification.iterrows()))
book.glue("cls_gap_after", "; ".join(f"{row['gap after']:+.1f} for {u}" for u, row in classification.iterrows()))
span_text = ("; ".join(f"{row['untied score'] - row['tied score']:+.1f} points for {u} ({row['untying helps']})"
                       for u, row in gap_tables["span"].iterrows()) if "span" in gap_tables else "not run")
book.glue("span_change", span_text)

sns.set_theme(style="whitegrid", context="notebook")
columns = [c for c in ("classification", "span") if c in per_seed.columns]
long = per_seed[columns].reset_index().melt(id_vars=["variant", "pretrain_seed", "seed"], var_name="average", value_name="score")
fig, axes = plt.subplots(1, len(columns), figsize=(4.2 * len(columns) + 1.5, 0.45 * len(compared) + 1.6),
                         sharey=True, constrained_layout=True, squeeze=False)
for ax, column in zip(axes.flat, columns):
    part = long[long["average"] == column]
    sns.pointplot(part, x="score", y="variant", order=compared, errorbar="sd", linestyle="none", ax=ax,
                  color="C0", markersize=5)
    ax.axvline(summary.loc[reference, (column, "mean")], color="C3", ls="--", lw=0.9)
    ax.set(title=f"{column} average", xlabel="score (%)", ylabel="")
book.glue("fig_cls_gap", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_cls_gap
# :alt: Dot plots of the classification and span averages of the reference, the tied RPEs and the untied RPEs
# :name: fig-cls-gap
#
# Classification and span-prediction averages (percent; dots: mean over seeds, bars: ± one
# standard deviation) of the reference, the paper's learnable RPEs, and the same RPEs with [CLS]
# untied. Dashed: the reference's mean.
# ```
#
# On classification, the gap before untying was {glue:text}`cls_gap_before`, after it
# {glue:text}`cls_gap_after` (positive: the reference ahead). Verdicts:
# {glue:text}`cls_conclusions`. Untying was not meant for span prediction, whose answer is read
# from word positions, not from [CLS]; there it changed the average by {glue:text}`span_change`.
#
# ## What pretraining made of the [CLS] bias
#
# The learned $\theta_2$ (how much each word attends to [CLS], whatever its position) per layer
# and head after pretraining (one per layer for the RPEs, whose modules are per layer).

# %% tags=["hide-input"]
rows = []
for untied in pairs:
    theta = runner.ensure_analysis(untied).arrays["trained.untie_theta"].astype(float)  # (L, h)
    rows += [{"variant": untied, "layer": layer, "head": head, "theta_2 (words -> [CLS])": value}
             for layer, values in enumerate(theta) for head, value in enumerate(values)]
thetas = pd.DataFrame(rows).set_index(["variant", "layer", "head"])
book.glue("theta2_mean", float(thetas["theta_2 (words -> [CLS])"].mean()))
book.glue("theta2_range", f"{thetas.iloc[:, 0].min():+.3f} to {thetas.iloc[:, 0].max():+.3f}")
thetas.style.format("{:+.3f}").set_table_attributes('class="dataframe"')

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
