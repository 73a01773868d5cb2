"""Per-seed score tables for the verdicts' tests."""
from __future__ import annotations

import pandas as pd

from pe_book.verdicts.mixed_model import LEVELS


def seed_table(scores: dict[str, list[list[float]]], column: str = "classification") -> pd.DataFrame:
    """Per-seed table from ``variant -> [[fine-tuning scores] per pretraining seed]``."""
    rows = [(v, p, s, x) for v, models in scores.items() for p, runs in enumerate(models) for s, x in enumerate(runs)]
    return pd.DataFrame(rows, columns=[*LEVELS, column]).set_index(list(LEVELS))
