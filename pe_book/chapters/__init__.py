"""One module per chapter of the book: what the chapter computes, as tested functions; the notebook
holds the prose, calls them, plots and glues the numbers its text cites. No chapter imports another:
what several share lives in chapter-neutral modules (``common``, ``paper_verdicts``, ``paper_figure``,
``escapes``, ``run_scale``); a chapter may have parts of its own (``scale_text``, chapter 13's words)."""
