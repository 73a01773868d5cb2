"""pe_book.chapters.paper_figure: the paper's figure, as chapter 04 draws it and the intro repeats it."""
from __future__ import annotations

import numpy as np

from pe_book.chapters import dot_products, paper_figure


def test_the_intros_figure_is_chapter_04s_after_pretraining(store):
    ours = paper_figure.figure_panels(store, "trained")
    chapter = dot_products.compute(store).panels("trained")
    assert [title for title, _, _ in ours] == [title for title, _, _ in chapter]
    for (_, mine, kind), (_, theirs, _) in zip(ours, chapter):
        assert (mine is None and theirs is None) or np.array_equal(mine, theirs), kind


def test_panels_name_each_panel_and_leave_a_missing_map_empty():
    maps = {("ape-learned", "trained", "ape"): np.eye(3)}
    shown = paper_figure.panels(maps, "trained")
    assert [title.split("\n")[0] for title, _, _ in shown] == [f"({letter}) {variant}"
                                                              for letter, variant, _ in paper_figure.PANELS]
    assert shown[0][1] is maps[("ape-learned", "trained", "ape")] and all(m is None for _, m, _ in shown[1:])
