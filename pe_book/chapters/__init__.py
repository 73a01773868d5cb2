"""One module per chapter of the book: what the chapter computes, as tested functions; the notebook
holds the prose, calls them, plots and glues the numbers its text cites."""
