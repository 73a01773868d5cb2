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
# (sinusoid)=
# # Sinusoidal position embeddings: where are they monotone?
#
# The fixed sinusoidal position embedding of {cite:t}`vaswani2017attention` maps position $x$ to
#
# $$
# p_x = \bigl[\sin(w_1 x), \dots, \sin(w_{D/2} x),\ \cos(w_1 x), \dots, \cos(w_{D/2} x)\bigr]
# $$
#
# with frequencies $w_i = \mathrm{base}^{-2i/D}$ and $\mathrm{base} = 10000$. Since
# $\sin a \sin b + \cos a \cos b = \cos(a - b)$, the dot product of two position vectors depends
# on the offset $m = x - y$ only {cite}`wang2021position`:
#
# $$
# \langle p_x, p_y \rangle = \psi(x - y), \qquad \psi(m) = \sum_{i=1}^{D/2} \cos(w_i m),
# $$
#
# $$
# \psi'(m) = -\sum_{i=1}^{D/2} w_i \sin(w_i m).
# $$
#
# So the sinusoidal embedding is translation invariant and, $\psi$ being even, symmetric. It is
# monotone (the farther apart, the less similar) exactly where $\psi$ decreases, i.e. where
# $\psi'(m) < 0$. The same holds for the sinusoidal *relative* embedding of NEZHA
# {cite}`wei2019nezha`, whose vectors have the size of one attention head ($D = 64$ in BERT-base)
# rather than the hidden size ($D = 768$). This chapter computes where $\psi$ is monotone, with
# `pe_lib.sinusoid`, and how that range depends on the frequencies, which the paper's *learnable*
# sinusoidal embeddings train.
#
# The code cells below are short: the formulas live in `pe_lib.sinusoid`, documented and tested
# there. Every number in the text is computed by this notebook.

# %% tags=["hide-cell"]
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from pe_book import plots
from pe_book.chapters import common, sinusoid
from pe_book.publishing import notebook
from pe_lib.sinusoid import psi, psi_prime

notebook.record_names(globals())

# %% [markdown]
# ## Parameters
#
# The next cell holds the chapter's parameters; `papermill` can change them
# (`papermill book/02_sinusoid.ipynb out.ipynb -p base 500.0`), and the cell after it rejects an
# unknown name or a value of the wrong type.

# %% tags=["parameters"]
profile: str = "smoke"  # results profile whose learned frequencies are shown at the end
results: str = "results"  # folder of the artifact store
pretrained: bool = True  # False: skip the last section (it needs the profile's pretrained models)
ape_dim: int = 768  # size of an absolute position vector (BERT-base hidden size)
head_dim: int = 64  # size of a relative position vector (one BERT-base attention head)
base: float = 10000.0  # base of the frequencies, w_i is base^(-2i/D)
max_offset: int = 128  # largest offset m in the plots
n_bases: int = 41  # number of bases in the sweep, log-spaced from 10 to 10^6

# %% tags=["hide-input"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results) if pretrained else None
result = sinusoid.compute(stored, ape_dim, head_dim, base, n_bases)
notebook.glue("profile_name", profile)
notebook.glue("max_offset", max_offset)
notebook.glue_all(result.cited)
dims = result.dims
common.param_table(params)

# %% [markdown]
# ## $\psi$ and $\psi'$
#
# {numref}`fig-psi` plots $\psi(m)$, divided by its maximum $\psi(0) = D/2$, and $\psi'(m)$ for
# $D$ = {glue:text}`ape_dim` and $D$ = {glue:text}`head_dim`, base {glue:text}`base:g`. The dots
# mark integer offsets, the only ones positions can have.

# %% tags=["hide-input"]
m = np.linspace(0, max_offset, 40 * max_offset + 1)
ints = np.arange(max_offset + 1)
sns.set_theme(style="whitegrid", context="notebook")
fig, (ax_psi, ax_der) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
for (label, dim), color in zip(dims.items(), sns.color_palette("deep")):
    name = f"{label}, D = {dim}"
    ax_psi.plot(m, psi(m, dim, base) / (dim / 2), color=color, lw=1, label=name)
    ax_psi.plot(ints, psi(ints, dim, base) / (dim / 2), "o", color=color, ms=2)
    ax_der.plot(m, psi_prime(m, dim, base) / (dim / 2), color=color, lw=1, label=name)
ax_der.axhline(0, color="black", lw=0.8)
ax_psi.set(xlabel="offset m", ylabel=r"$\psi(m) / (D/2)$", title=r"$\psi$: dot product at offset m")
ax_der.set(xlabel="offset m", ylabel=r"$\psi'(m) / (D/2)$", title=r"$\psi'$: its slope")
ax_psi.legend()
notebook.glue("fig_psi", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_psi
# :alt: Plots of psi(m) and its derivative for two embedding sizes
# :name: fig-psi
#
# $\psi(m)/(D/2)$ (left) and $\psi'(m)/(D/2)$ (right) of the sinusoidal embedding for
# $D$ = {glue:text}`ape_dim` (absolute) and $D$ = {glue:text}`head_dim` (relative, one head),
# base {glue:text}`base:g`. Dots: integer offsets.
# ```
#
# ## The monotonic range
#
# Two readings of "$\psi$ is monotone on $[0, M]$" give very different $M$:
#
# * **real offsets**: the first zero of $\psi'$ after 0 (`monotonic_range`). The fastest
#   frequency is $w_0 = 1$, and its term $\cos(m)$ gives $\psi$ a small bump just before
#   $m = 2\pi$, whatever $D$ is;
# * **integer offsets**: the largest $M$ with $\psi(0) > \psi(1) > \dots > \psi(M)$
#   (`integer_monotonic_range`). Positions are integers, so this is the paper's property 1
#   taken literally; sampling at integers steps over the bumps between them.
#
# The paper writes the sum from $i = 1$ to $D/2$ with $w_i = \mathrm{base}^{-2i/D}$, which
# shifts every exponent by one step compared with the code of {cite:t}`vaswani2017attention`
# ($i = 0, \dots, D/2 - 1$, so $w_0 = 1$); the table gives both.

# %% tags=["hide-input"]
result.ranges.style.format({"real offsets: M": "{:.3f}"}).hide(axis="index").set_table_attributes('class="dataframe"')

# %% [markdown]
# For $D$ = {glue:text}`ape_dim`, $\psi'$ first changes sign at $m$ =
# {glue:text}`ape_range_real:.2f`, but at integer offsets $\psi$ keeps decreasing up to
# $M$ = {glue:text}`ape_range_int` ({glue:text}`ape_range_int_paper` with the paper's indexing).
# The summary of the paper we work from says the sinusoidal APE is monotone "for $m$ between 0
# and about 50": that matches the integer reading, not the real one
# ({glue:text}`ape_range_real:.1f`). For one
# head, $D$ = {glue:text}`head_dim`, the integer range is only {glue:text}`head_range_int`
# ({glue:text}`head_range_int_paper` with the paper's indexing): the sinusoidal RPE of
# {cite:t}`wei2019nezha` tells apart only the first few offsets by monotone similarity.
#
# ## How the range depends on the frequencies
#
# The learnable sinusoidal embeddings of {cite:t}`wang2021position` keep the form of $p_x$ and
# train the $w_i$, so they can move this range. {numref}`fig-range` shows two simple families of
# frequencies: (a) a different base, and (b) every $w_i$ multiplied by the same factor $c$. In
# (b), $\psi_c(m) = \psi(c m)$, so the real-offset range is exactly $M/c$; the integer range
# follows only roughly.

# %% tags=["hide-input"]
bases, scales, sweep = result.bases, result.scales, result.sweep
fig, (ax_base, ax_scale) = plt.subplots(
    1, 2, figsize=(10, 3.8), constrained_layout=True, sharey=True
)
for (label, dim), color in zip(dims.items(), sns.color_palette("deep")):
    for ax, x, key in [(ax_base, bases, "base"), (ax_scale, scales, "scale")]:
        real, integer = sweep[label, key].T
        ax.plot(x, integer, "o-", color=color, ms=3, lw=1, label=f"D = {dim}, integers")
        ax.plot(x, real, "--", color=color, lw=1, label=f"D = {dim}, reals")
ax_base.axvline(base, color="grey", lw=0.8)
ax_scale.axvline(1.0, color="grey", lw=0.8)
ax_base.set(xscale="log", yscale="log", xlabel="base", ylabel="monotonic range M",
            title="(a) frequencies base$^{-2i/D}$")
ax_scale.set(xscale="log", xlabel="factor c", title=r"(b) frequencies $c \cdot w_i$")
ax_base.legend(fontsize="small")
notebook.glue("fig_range", fig)
plt.close(fig)

# %% [markdown]
# ```{glue:figure} fig_range
# :alt: Monotonic range of psi against the base and against a frequency scale
# :name: fig-range
#
# Monotonic range of $\psi$ (log scale) for $D$ = {glue:text}`ape_dim` and
# $D$ = {glue:text}`head_dim`: solid, integer offsets; dashed, real offsets. (a) as a function of
# the base; (b) with all frequencies multiplied by $c$. Grey: base {glue:text}`base:g`, $c = 1$.
# ```
#
# Halving every frequency of the $D$ = {glue:text}`ape_dim` embedding multiplies the real-offset
# range by {glue:text}`half_ratio:.3f` and gives an integer range of
# {glue:text}`half_range_int`. Over the bases of (a), the integer range of the absolute embedding
# is largest, {glue:text}`best_base_range`, at base {glue:text}`best_base:,.0f`: it is not a
# monotone function of the base, because what matters is how the frequencies fall between
# integers, not only how slow the slowest one is.
#
# ## After pretraining: what did the learnable frequencies become?
#
# The learnable sinusoidal embeddings of profile {glue:text}`profile_name` start from the
# frequencies above and are trained with the rest of the model (without weight decay). The
# learnable RPE has one set of frequencies per layer; the plots show the first layer's.

# %% tags=["hide-input"]
learned = result.learned
fig = plots.line_facets({name: (np.arange(len(init)), trained / init) for name, (init, trained) in learned.items()},
                        ncols=3, xlabel="frequency index i", ylabel="learned / initial frequency", reference=1.0)
notebook.glue("fig_learned", fig)
plt.close(fig)
change = result.cited["max_relative_change"]  # NaN without pretrained models: glued as "not run"
notebook.glue("max_relative_change_text", common.number_text(change) if np.isfinite(change) else change)
result.learned_table.style.format({"median |w - w0| / w0": common.number_text, "range w0 (real)": "{:.3f}",
                                   "range w (real)": "{:.3f}"})

# %% [markdown]
# ```{glue:figure} fig_learned
# :alt: Ratio of learned to initial frequency against the frequency index, one panel per embedding
# :name: fig-learned-freqs
#
# Learned frequencies of the {glue:text}`n_learned` learnable sinusoidal embeddings of profile
# {glue:text}`profile_name`, relative to their initial values $w_i = 10000^{-2i/D}$, one panel
# per embedding, each with its own vertical scale; grey: no change.
# ```
#
# The table gives the median relative change of the frequencies (at most
# {glue:text}`max_relative_change_text` here) and the monotonic ranges of $\psi$ before and after
# training, on integer and on real offsets. A profile trained for few steps barely moves the
# frequencies; the cpu profile shows what pretraining makes of them.
