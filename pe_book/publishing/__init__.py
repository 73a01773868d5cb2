"""Publishing the book: what the notebooks call, the build, its checks, Colab and the README.

The layer above the chapters (``tests/test_layers.py``): these modules may import the chapters, the
experiments and the verdicts; nothing below imports them.

- :mod:`~pe_book.publishing.notebook`: what the notebooks call, their typed parameters (checked)
  and ``glue``; the repository's notebook and book folders;
- :mod:`~pe_book.publishing.book`: execute the notebooks with papermill and build the Jupyter Book
  (``pe-book book``), a single rerun page, the glued values of a build;
- :mod:`~pe_book.publishing.sphinx_glue`: the book's Sphinx extension (``_config.yml``), a glued
  "not run" shown as it is;
- :mod:`~pe_book.publishing.book_check`: every page of the built book checked in headless Chromium
  (``pe-book check-book``);
- :mod:`~pe_book.publishing.publish`: the repository's URL (one setting), the book's configuration,
  the Colab notebooks, the publishing check (``pe-book publish``);
- :mod:`~pe_book.publishing.headline`: the README's headline figure and table from a profile's
  stored results (``pe-book publish readme``).
"""
