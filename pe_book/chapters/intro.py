"""The book's opening page (00): the answer first. The paper's claims with their verdicts at this
run's scale (from :func:`pe_book.chapters.findings.compute`, the findings chapter's rule), in a
narrow table, the scale in one sentence, and the paper's figure redrawn from the pretrained models."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pe_book.chapters import dot_products, findings

#: Simulated runs of the rule's operating characteristics: the intro shows none of them.
RUNS = 100


@dataclass
class Intro:
    """``verdicts`` (one row per claim: :data:`pe_book.chapters.findings.NARROW_COLUMNS`), the
    ``panels`` of the paper's figure after pretraining
    (:meth:`pe_book.chapters.dot_products.DotProducts.panels`) and ``cited``."""
    verdicts: pd.DataFrame
    panels: list
    cited: dict


def compute(runner) -> Intro:
    """The verdicts and the figure of ``runner``'s profile (what the store lacks is computed)."""
    result = findings.compute(runner, runs=RUNS)
    narrow = findings.narrow_verdicts(result.verdicts)
    counts = narrow[findings.NARROW_COLUMNS["verdict"]].str.extract(r"^(not \w+|\w+)")[0].value_counts()
    cited = {"scale_text": result.cited.get("scale_text", ""), "n_claims": len(narrow),
             "verdict_counts": ", ".join(f"{n} {word}" for word, n in counts.items()) or "none",
             "profile_name": runner.profile.name}
    return Intro(narrow, dot_products.compute(runner).panels("trained"), cited)
