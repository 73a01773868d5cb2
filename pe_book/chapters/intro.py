"""The book's opening page (00): the answer first. The paper's claims with their verdicts at this
run's scale (:func:`pe_book.chapters.paper_verdicts.paper_verdicts`, the findings chapter's rule),
in a narrow table, the scale in one sentence, and the paper's figure redrawn from the pretrained
models (:mod:`pe_book.chapters.paper_figure`)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pe_book.chapters.paper_figure import figure_panels
from pe_book.chapters.paper_verdicts import NARROW_COLUMNS, narrow_verdicts, paper_verdicts
from pe_book.chapters.run_scale import scale_text


@dataclass
class Intro:
    """``verdicts`` (one row per claim: :data:`pe_book.chapters.paper_verdicts.NARROW_COLUMNS`), the
    ``panels`` of the paper's figure after pretraining
    (:func:`pe_book.chapters.paper_figure.figure_panels`) and ``cited``."""
    verdicts: pd.DataFrame
    panels: list
    cited: dict


def compute(runner) -> Intro:
    """The verdicts and the figure of ``runner``'s profile."""
    run = paper_verdicts(runner)
    narrow = narrow_verdicts(run.verdicts)
    counts = narrow[NARROW_COLUMNS["verdict"]].str.extract(r"^(not \w+|\w+)")[0].value_counts()
    cited = {"scale_text": scale_text(runner, run.names, run.finetuned, run.profile), "n_claims": len(narrow),
             "verdict_counts": ", ".join(f"{n} {word}" for word, n in counts.items()) or "none",
             "profile_name": runner.profile.name}
    return Intro(narrow, figure_panels(runner, "trained"), cited)
