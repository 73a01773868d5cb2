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
# (intro)=
# # On position embeddings in BERT, reproduced
#
# This book reproduces, with open code and data, the ICLR 2021 paper
# *On Position Embeddings in BERT* by {cite:t}`wang2021position`, at a small scale:
# {glue:text}`scale_text` (profile {glue:text}`profile_name`).
#
# ## The answer
#
# Of the paper's {glue:text}`n_claims` claims on fine-tuning scores, at this scale:
# {glue:text}`verdict_counts`. Each verdict comes from the rule of the findings chapter
# ({ref}`findings`), which compares every pair a claim names over all seeds, with intervals.

# %% tags=["hide-cell"]
import warnings

import matplotlib.pyplot as plt

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm in a notebook without widgets

from pe_book import plots
from pe_book.chapters import common, intro
from pe_book.publishing import notebook

notebook.record_names(globals())

# %% tags=["parameters", "remove-cell"]
profile: str = "smoke"  # results profile (smoke, cpu or gpu)
results: str = "results"  # folder of the artifact store

# %% tags=["remove-cell"]
params = notebook.check_notebook_parameters(globals())
stored = common.open_results(profile, results)
result = intro.compute(stored)
notebook.glue_all(result.cited)
fig = plots.position_maps(result.panels, ncols=3, size=(10 / 3, 3.5))
notebook.glue("fig_headline", fig)
plt.close(fig)

# %% tags=["hide-input"]
(result.verdicts.style.hide(axis="index").set_caption("The paper's claims and this run's verdicts")
 .set_table_attributes('class="dataframe"'))

# %% [markdown]
# The evidence: {ref}`classification` and {ref}`span-prediction` give the scores of every
# variant, {ref}`findings` every comparison behind each verdict, and {ref}`scale` what a larger
# run would change. An effect is a difference of scores in points, with its interval.
#
# ```{glue:figure} fig_headline
# :alt: Six heatmaps of dot products between position vectors after pretraining
# :name: fig-headline
#
# The paper's figure redrawn from this run's pretrained models (pretraining seed 0): dot products
# between absolute position vectors, (a)-(d), and between relative offset vectors, (e), (f)
# ({ref}`dot-products`).
# ```
#
# ## What the paper asks
#
# The paper asks what a good position embedding for a BERT-style encoder {cite}`devlin2019bert`
# is, and answers with three properties of the proximity $\phi(x, y)$ between positions $x$ and $y$:
#
# * **monotonicity**: $m > n \iff \phi(x, x + m) < \phi(x, x + n)$, the farther apart, the less similar;
# * **translation invariance**: $\phi(x_1, x_1 + m) = \phi(x_2, x_2 + m)$, only the offset matters;
# * **symmetry**: $\phi(x, y) = \phi(y, x)$.
#
# It studies six basic position embeddings and their combinations: fully learnable absolute
# embeddings {cite}`gehring2017convolutional`, fixed sinusoidal ones {cite}`vaswani2017attention`,
# *learnable* sinusoidal ones (new in the paper), fully learnable relative embeddings
# {cite}`shaw2018self`, fixed sinusoidal relative ones {cite}`wei2019nezha` and learnable sinusoidal
# relative ones. This reproduction adds the relative schemes that came after: RoPE
# {cite}`su2021roformer`, ALiBi {cite}`press2022train`, the T5 bias {cite}`raffel2020exploring`
# and the key-query variant of {cite:t}`huang2020improve`, and it places the paper among related
# analyses {cite}`ke2021rethinking,wang2020position,chen2023locality`.
#
# ## Chapters
#
# ```{tableofcontents}
# ```
#
# Every chapter is a notebook in `notebooks/` (a plain Python file in jupytext's percent format)
# holding the prose, one call to the chapter's computation in `pe_book.chapters`, and the plots.
# The models, formulas and indicators live in the `pe_lib` package, the chapters' computations in
# `pe_book`, where they are tested. Every number in the text is computed when the book is built.
#
# Chapter 1 and the first sections of chapter 2 need no training (chapter 2's last section reads the
# profile's pretrained models). Chapters 3 to 8 read the artifacts of one *profile*
# (a folder of `results/`: pretrained models' curves, analyses of their position embeddings,
# fine-tuning scores, each with its provenance), which `pe-book run --profile P` computes and
# `pe-book book` computes first when they are missing: pretraining ({ref}`pretraining`), the dot
# products of the paper's figure ({ref}`dot-products`), identical-word probing ({ref}`probing`),
# classification ({ref}`classification`) and span prediction ({ref}`span-prediction`), and the
# paper's claims set beside this run's numbers with computed verdicts ({ref}`findings`).
#
# ## Building the book
#
# ```bash
# make book                        # = pe-book book --profile cpu --stored-only (the committed results)
# make book PROFILE=smoke          # = pe-book book --profile smoke (computes its tiny results first)
# .venv/bin/pe-book book --profile cpu                 # computes whatever the cpu results lack first
# .venv/bin/pe-book book --only 02_sinusoid --no-html
# ```
#
# `pe-book book` executes each notebook with [papermill](https://papermill.readthedocs.io) into
# `book/NN_topic.ipynb`, then renders the HTML with Jupyter Book 1 into `book/_build/html`
# (open `book/_build/html/index.html`). The build needs no internet connection; a notebook that
# fails stops it with one line naming the notebook and the cell. The profile chooses the notebooks'
# parameter values: `cpu` (the reproduction, and this book, read from the committed
# `results/cpu-next/`, the folder the run was computed in; computing them anew takes many hours on two cores, and
# {ref}`the scale chapter <scale>` keeps the account) or `smoke` (the notebooks' own defaults; tiny
# models whose results only show that the pipeline runs, minutes in all). `make check-book` opens
# every page in a headless browser and checks figures, mathematics, links, raw values and widths.
#
# ## Rerunning a chapter
#
# Each executed notebook keeps its `parameters` cell, so papermill can rerun it with other values.
# These read the committed cpu results and train nothing:
#
# ```bash
# papermill book/01_properties.ipynb out.ipynb -p profile cpu -p seed 1
# papermill book/02_sinusoid.ipynb out.ipynb -p profile cpu -p base 500.0 -p head_dim 128
# papermill book/04_dot_products.ipynb out.ipynb -p profile cpu -y '{variants: [ape-learned, rpe-learned]}'
# ```
#
# A rerun starts from the notebook's defaults (the `smoke` profile) plus the values you pass:
# papermill replaces the parameters injected by the previous run. So pass `-p profile cpu` again
# (without it a chapter reads the smoke profile's tiny models, which `pe-book run --profile smoke`
# computes in minutes; chapter 2 with
# `-p pretrained False` reads no model at all), and for chapters 1 and 2 the other values that
# `pe_book.publishing.book.BOOK_PROFILES["cpu"]` lists; or open the chapter's Colab notebook, which carries
# them. A notebook rejects an unknown parameter, or a value of the wrong type, in the cell after
# its parameters, naming the valid ones (papermill alone would only warn). Values of variants a
# rerun leaves out read "not run". A rerun's notebook keeps the book's glue markup in its text;
# `pe-book book --page out.ipynb` renders it as one HTML page, with the values filled in, its
# figures and citations, and prints the page's path. On Google Colab, the launch button of a
# chapter opens its notebook, whose first cell installs `pe_lib`.
#
# ## References
#
# See {doc}`references`.
