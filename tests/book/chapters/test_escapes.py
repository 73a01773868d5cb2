"""pe_book.chapters.escapes: when each pretraining left none's plateau, and what the prose cites of it."""
from __future__ import annotations

import math

import pytest

from pe_book.chapters import escapes


def test_escapes_of_made_up_curves_and_what_the_prose_cites():
    curves = {("none", 0): {500: 6.0, 1000: 5.9, 1500: 5.8}, ("none", 1): {500: 6.1, 1000: 5.9, 1500: 5.8},
              ("ape-learned", 0): {500: 6.0, 1000: 5.9, 1500: 5.0},
              ("ape-learned", 1): {500: 6.0, 1000: 5.86, 1500: 5.78},  # within the margin to the end
              ("rpe-learned", 0): {500: 5.5, 1000: 5.0, 1500: 4.5}, ("alibi", 0): {500: 6.0, 1000: 5.5, 1500: 5.2}}
    found = escapes.escapes_of(curves)
    sd = math.sqrt(0.005)  # none's seeds 0.1 apart at step 500, equal elsewhere
    assert found.none_plateau.margin == pytest.approx(3 * sd) and not found.none_plateau.from_floor
    assert found.table["escape"].tolist() == [None, None, 1500, None, 500, 1000]
    assert list(found.summary.loc["ape-learned", ["left", "seeds"]]) == [1, 2]
    assert set(found.curves.columns) == {"variant", "pretraining seed", "family", "step", "loss"} and len(found.curves) == 18
    cited = escapes.escape_cited(found)
    assert (cited["relative_n"], cited["relative_left"], cited["relative_first"], cited["relative_last"]) == (2, 2, "500", "1,000")
    assert (cited["ape_n"], cited["ape_left"], cited["ape_first"], cited["ape_last"]) == (2, 1, "1,500", "1,500")
    assert cited["relative_last_variant"] == "alibi" and cited["escape_budget"] == 1500 and cited["plateau_every"] == 500
    assert "every model with a relative term" in cited["plateau_text"]
    assert "left it between step 500 and step 1,000 (all 2 pretrainings; alibi last)" in cited["plateau_text"]
    assert "1 of the 2 pretrainings of a model with an APE alone left it at step 1,500 (the others did not)" in cited["plateau_text"]
    assert cited["plateau_margin_text"].startswith(f"{3 * sd:.3f} nats: 3 times the largest standard deviation")
    with pytest.raises(ValueError, match="curves of none"):
        escapes.escapes_of({("ape-learned", 0): {500: 6.0}})
