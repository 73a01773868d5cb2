"""pe-book: the reproduction of "On Position Embeddings in BERT" built on :mod:`pe_lib`.

``experiments`` (profiles, the artifact store, the runner), ``stats`` (comparisons and verdicts),
the chapters' computations, the book's building, checking and publishing, the benchmark and the
``pe-book`` command line. Nothing in :mod:`pe_lib` imports from here.
"""
