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
# (performance)=
# # Performance
#
# The scientific reach of the cpu profile is bounded by how many tokens a 2-core CPU pushes through
# pretraining. This chapter reports the project's benchmark (`make bench`, `pe-book bench`),
# whose every figure is a ratio of measurements taken side by side in one run, on one machine:
# pe_lib's training step against HuggingFace's `BertForMaskedLM` with the same configuration, every
# position embedding against `ape-learned`, the relative-attention term against the naive
# $(n, n, d)$ einsum of transformers v4 {cite}`huang2020improve`, and the model FLOPs utilisation
# (MFU) against the matmul peak that the benchmark measures on the same machine. The chapter only
# reads the benchmark's JSON output; `make bench` writes it anew.

# %% tags=["hide-cell"]
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pe_book import plots
from pe_book.chapters import common, performance
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% [markdown]
# ## Parameters

# %% tags=["parameters"]
bench_json: str = "results/bench.json"  # output of `make bench` (pe-book bench --json ...)

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
result = performance.compute(bench_json)
notebook.glue_all(result.cited)
common.param_table(params)

# %% [markdown]
# The numbers below were measured on {glue:text}`bench_created` on a {glue:text}`machine_cpu` with
# {glue:text}`machine_cores` cores ({glue:text}`machine_threads` torch threads), torch
# {glue:text}`torch_version`, transformers {glue:text}`transformers_version`, code at commit
# {glue:text}`bench_commit`.
#
# ## Against HuggingFace BERT
#
# The configuration is {glue:text}`bench_config`; 15% of the tokens of a batch are masked.
# Where pe_lib saves work: vocabulary logits only at the masked
# positions, one fused q/k/v projection, and a dropout mask drawn from 16-bit random integers, two
# from every 32-bit random word (half the random draws of `F.dropout`; the drop rate is $p$ rounded
# to a multiple of $2^{-16}$).

# %% tags=["hide-input"]
table = result.hf.rename(columns={"pe_lib_tok_s": "pe_lib tokens/s", "hf_tok_s": "HF tokens/s", "speedup": "speedup (x)"})
table.style.format({"pe_lib tokens/s": "{:,.0f}", "HF tokens/s": "{:,.0f}", "speedup (x)": "{:.2f}"}).hide(axis="index")

# %% [markdown]
# At 128 tokens pe_lib trains {glue:text}`speedup_128_fp32:.2f` times as fast as HuggingFace's
# BERT in fp32 and {glue:text}`speedup_128_bf16:.2f` times as fast with bf16 autocast.
#
# ## Every position embedding against `ape-learned`

# %% tags=["hide-input"]
variants = result.variants
sns.set_theme(style="whitegrid", context="notebook")
fig, ax = plt.subplots(figsize=(10, 4), constrained_layout=True)
lengths = variants["seq"].nunique()  # one shade per length, the lightest still visible on white
sns.barplot(variants, x="variant", y="relative_to_ape_learned", hue="seq", ax=ax,
            palette=sns.color_palette("Blues", lengths + 1)[1:])
ax.axhline(1.0, color="grey", lw=0.8)
ax.set(xlabel="", ylabel="step time / ape-learned's")
ax.tick_params(axis="x", rotation=45)
ax.legend(title="tokens")
notebook.glue("fig_variants", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_variants
# :alt: Bar chart of each variant's training-step time relative to ape-learned, at two lengths
# :name: fig-variant-speed
#
# Training-step time of every position embedding relative to `ape-learned` (bf16), measured in
# turns within one run.
# ```
#
# The slowest variant at 128 tokens is {glue:text}`worst_variant_128`
# ({glue:text}`worst_ratio_128:.2f` times `ape-learned`'s step time), at 512 tokens
# {glue:text}`worst_variant_512` ({glue:text}`worst_ratio_512:.2f` times).
#
# ## The relative-attention term alone
#
# pe_lib scores each query against the $2k+1$ offset vectors and gathers by the clipped offset;
# transformers v4 materialises an $(n, n, d)$ tensor of offset vectors. Both compute the same term
# (tested to $10^{-5}$); each measurement runs in its own process, so that its peak memory is its own.

# %% tags=["hide-input"]
relative = result.relative
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
for ax, (key, label) in zip(axes, (("s", "seconds (forward + backward)"), ("peak_mib", "peak memory (MiB)"))):
    ax.plot(relative["seq"], relative[f"pe_lib_{key}"], marker="o", label="pe_lib (gather)")
    ax.plot(relative["seq"], relative[f"naive_{key}"], marker="s", label="naive einsum (HF v4)")
    ax.set(xscale="log", yscale="log", xlabel="sequence length", ylabel=label)
    plots.log_ticks(ax, relative["seq"])
    ax.legend()
notebook.glue("fig_relative", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_relative
# :alt: Time and peak memory of the relative-attention term against sequence length, two lines each
# :name: fig-relative
#
# The relative-attention term ($q \cdot r_{i-j}$ and $k \cdot r_{i-j}$, 4 heads of 64 dimensions,
# clipping distance 128): time of forward and backward (left) and peak memory (right).
# ```
#
# At {glue:text}`relative_seq` tokens pe_lib needs {glue:text}`relative_memory_ratio:.2f` times the
# naive einsum's peak memory and {glue:text}`relative_time_ratio:.2f` times its time.
#
# ## Model FLOPs utilisation
#
# Model FLOPs count the matmuls a training step needs (forward and backward: three times the
# forward's): $2(4H^2 + 2HI)$ per token and layer for the projections, $4nH$ for $q \cdot k$ and
# attention $\cdot v$, and the MLM head on the masked 15% only. The peak is the best rate of a large
# square matmul in the same dtype on the same machine.

# %% tags=["hide-input"]
mfu = result.mfu
mfu.assign(mfu=100 * mfu["mfu"]).rename(columns={
    "mfu": "MFU (%)", "tokens_per_s": "tokens/s", "achieved_tflops": "achieved TFLOP/s", "peak_tflops": "peak TFLOP/s",
    "hidden": "hidden size"}).style.format({"tokens/s": "{:,.0f}", "achieved TFLOP/s": "{:.3f}", "peak TFLOP/s": "{:.3f}",
                                            "MFU (%)": "{:.1f}"}).hide(axis="index")

# %% [markdown]
# The cpu profile's model reaches {glue:text}`mfu_bf16:.1f`% of the bf16 matmul peak
# ({glue:text}`tokens_per_s_bf16:,.0f` tokens/s) and {glue:text}`mfu_fp32:.1f`% of the fp32 peak.
# Its matrices are small (hidden size {glue:text}`mfu_hidden`), so a step is many small matmuls plus element-wise work
# that the peak measurement does not have.
#
# ## The smoke pipeline

# %% tags=["hide-input"]
stages = {name.removesuffix("_s").replace("_", " "): seconds for name, seconds in result.smoke.items()}
pd.DataFrame({"seconds": stages}).style.format("{:,.1f}")

# %% [markdown]
# `pe-book run --profile smoke` (all of the profile's variants and tasks, fresh results and work
# folders, the data cache reused) took {glue:text}`smoke_minutes:.1f` minutes end to end; the
# table splits it by stage.
#
# ## What bounds the speed-up over HuggingFace
#
# Where a training step's time goes ({glue:text}`profile_seq` tokens, the configuration of the comparison above), from
# torch's profiler: the share of the forward and backward operators' time by category. Shares,
# not times, because the profiler's own overhead inflates every operator. Beside them, pe_lib's
# *matmul floor*: the time that exactly the matmuls of its step take when each shape runs alone
# (forward, and both backward products of every projection, q.k and attention.v per head, the
# sparse MLM head). No pe_lib step can be faster than its floor with these matmul kernels, so
# HuggingFace's step time divided by the floor is the largest speed-up within reach.

# %% tags=["hide-input"]
profile = result.profile
if len(profile):
    shares = pd.DataFrame(list(profile["shares"])).mul(100).set_index(profile["model"] + " " + profile["dtype"])
    fig, ax = plt.subplots(figsize=(8, 2.8), constrained_layout=True)
    shares.plot.barh(stacked=True, ax=ax, colormap="tab20c", width=0.7)
    ax.set(xlabel="share of forward + backward operator time (%)", ylabel="")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    notebook.glue("fig_profile", fig)
    plt.close(fig)
FLOOR = {"step_ms": "pe_lib step (ms)", "matmul_floor_ms": "matmul floor (ms)",
         "max_speedup": "largest speed-up (x)", "hf_step_ms": "HF step (ms)"}
result.floor.rename(columns=FLOOR).style.format(
    {"pe_lib step (ms)": "{:,.1f}", "matmul floor (ms)": "{:,.1f}", "largest speed-up (x)": "{:.2f}",
     "HF step (ms)": "{:,.1f}"}, na_rep="n/a")

# %% [markdown]
# ```{glue:figure} fig_profile
# :alt: Stacked bars of the shares of matmuls, copies and casts, dropout's random numbers and other operators in a training step
# :name: fig-profile
#
# Where the forward and backward time of a training step goes, pe_lib and HuggingFace, fp32 and
# bf16 (128 tokens, batch 32).
# ```
#
# In fp32 a 2x speed-up needs a pe_lib step of at most {glue:text}`hf_half_ms_fp32:.0f` ms; its
# matmuls alone take {glue:text}`floor_ms_fp32:.0f` ms ({glue:text}`matmul_share_fp32:.0f`% of
# its measured {glue:text}`step_ms_fp32:.0f` ms step), so at most {glue:text}`max_speedup_fp32:.2f`x
# is within reach with these kernels. In bf16 the floor is {glue:text}`floor_ms_bf16:.0f` ms
# against {glue:text}`hf_half_ms_bf16:.0f` ms for 2x (at most {glue:text}`max_speedup_bf16:.2f`x).
# What remains above the floor is element-wise work (norms, softmax, GELU, residual adds, dropout
# and its random numbers, dtype casts under autocast), which eager PyTorch runs one operator at a
# time.
#
# ## Fine-tuning against pretraining
#
# A run's fine-tunings cost hours too. The benchmark times a whole fine-tuning of the cpu
# profile's model with the cpu profile's recipe on each of its tasks (sst2, cola, cloze and
# cloze_v2), on {glue:text}`finetune_percent:.0f`% of the profile's training examples of a task,
# and the pretraining step of the same model ({glue:text}`finetune_rounds` steps just before
# and just after each fine-tuning). A fine-tuning's rate is its non-padding training tokens over its
# whole wall time (the model loaded, features, training, evaluation on the validation and test
# splits): the rate that makes a run's hours. *before* trains on batches of a plain permutation and
# builds the task's features in every fine-tuning (fine-tuning code version 1's batches); *after*
# groups the training batches by length (mega-batches of 50 batches, each sorted by length, as
# HuggingFace's `group_by_length`), evaluates in order of length and reuses the task's features,
# built once per task as the runner does for every seed and model. Measured on
# {glue:text}`finetune_created` on a {glue:text}`finetune_machine`, code at commit
# {glue:text}`finetune_commit`. {glue:text}`finetune_note`

# %% tags=["hide-input"]
finetune = result.finetune
if "ratio" in finetune:
    display = finetune.style.format({"fine-tuning tokens/s": "{:,.0f}", "pretraining tokens/s": "{:,.0f}",
                                     "ratio": "{:.2f}", "padding": "{:.0%}", "seconds": "{:.1f}"}).hide(axis="index")
else:
    display = finetune
display

# %% tags=["hide-input"]
if len(result.finetune_time):
    fig, ax = plt.subplots(figsize=(9, 4.4), constrained_layout=True)
    result.finetune_time.iloc[::-1].plot.barh(stacked=True, ax=ax, colormap="tab20c", width=0.7)
    ax.set(xlabel="seconds", ylabel="")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4, frameon=False)
    notebook.glue("fig_finetune", fig)
    plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_finetune
# :alt: Stacked bars of the seconds of each phase of a fine-tuning, per task kind, before and after
# :name: fig-finetune
#
# Where a fine-tuning's time goes: loading the model, building the features, collating batches,
# forward and backward, the optimiser (gradient clipping, AdamW, the schedule), the rest of the
# training loop, and evaluation.
# ```
#
# After the change the slowest task fine-tunes at {glue:text}`finetune_worst_ratio:.2f` times the
# pretraining step's tokens/s (sst2 {glue:text}`finetune_ratio_sentence_before:.2f` before,
# {glue:text}`finetune_ratio_sentence_after:.2f` after; cola
# {glue:text}`finetune_ratio_word_order_before:.2f` and {glue:text}`finetune_ratio_word_order_after:.2f`;
# cloze {glue:text}`finetune_ratio_span_before:.2f` and {glue:text}`finetune_ratio_span_after:.2f`;
# cloze_v2 {glue:text}`finetune_ratio_span_v2_before:.2f` and {glue:text}`finetune_ratio_span_v2_after:.2f`).
# Padding took {glue:text}`finetune_padding_sentence_before:.0f`% of sst2's training tokens before
# and {glue:text}`finetune_padding_sentence_after:.0f`% after (cola
# {glue:text}`finetune_padding_word_order_before:.0f`% and {glue:text}`finetune_padding_word_order_after:.0f`%,
# cloze {glue:text}`finetune_padding_span_before:.0f`% and {glue:text}`finetune_padding_span_after:.0f`%,
# cloze_v2 {glue:text}`finetune_padding_span_v2_before:.0f`% and {glue:text}`finetune_padding_span_v2_after:.0f`%).
# Evaluation, where a span task's answers are decoded window by window in Python, takes
# {glue:text}`finetune_evaluation_span_after:.0f`% of cloze's fine-tuning time after the change
# and {glue:text}`finetune_evaluation_sentence_after:.0f`% of sst2's: both splits' scores are used
# (validation chooses, test reports), so both are evaluated.
#
# ## Targets

# %% tags=["hide-input"]
result.targets.assign(met=result.targets["met"].map({True: "yes", False: "no"})).style.format(
    {"measured": "{:.3f}", "short by": "{:.1%}"}, na_rep="—").hide(axis="index")

# %% [markdown]
# Each target is checked on the worst matching measurement; "short by" is how far a missed one is
# from its threshold. Throughput against HuggingFace is bounded by the encoder's matmuls, which
# both implementations share (see the matmul floor above): pe_lib removes the dense vocabulary
# projection and some element-wise work, not the encoder's FLOPs.
