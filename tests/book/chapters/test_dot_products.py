"""pe_book.chapters.dot_products: the words the chapter's prose cites follow its numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd

from pe_book.chapters import dot_products


def test_at_init_text_says_undefined_for_zero_tables_and_not_run_without_a_map():
    assert dot_products.at_init_text(0.2761, np.ones((3, 3))) == "0.276 at initialisation"
    assert dot_products.at_init_text(float("nan"), np.zeros((3, 3))).startswith("undefined at initialisation")
    assert dot_products.at_init_text(float("nan"), None) == "not run"


def _result(contrasts: dict) -> dot_products.DotProducts:
    table = pd.DataFrame({"contrast cosine": contrasts})
    return dot_products.DotProducts({}, table, pd.DataFrame(), {})


def test_rpe_effect_agrees_with_the_paper_only_when_the_contrasts_are_close():
    close = _result({"ape-learned": 0.62, "ape-learned+rpe-learned": 0.60, "ape-sin-learned": 0.71,
                     "ape-sin-learned+rpe-learned": 0.75})
    assert "changed the APE's picture little, as the paper reports" in dot_products._rpe_effect(close, 0.1)["rpe_effect"]
    far = _result({"ape-learned": 0.627, "ape-learned+rpe-learned": 0.027, "ape-sin-learned": 0.717,
                   "ape-sin-learned+rpe-learned": 0.285})
    text = dot_products._rpe_effect(far, 0.1)["rpe_effect"]
    assert "lowered it by 0.600 for fully learnable APE" in text and "unlike what the paper reports" in text
    assert "cannot be made" in dot_products._rpe_effect(_result({"rope": 0.1}), 0.1)["rpe_effect"]
