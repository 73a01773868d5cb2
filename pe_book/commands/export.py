"""``pe-book export``: a profile's stored scores as one tidy table, CSV and Parquet
(:func:`pe_book.results_data.score_table`): variant, pretraining seed, fine-tuning seed, budget,
task, split, metric, value, key. Reads the committed results through their checksums; computes
nothing."""
from __future__ import annotations

import io
from pathlib import Path

from pe_book.commands.common import PUBLISHED_PROFILE


def configure(parser) -> None:
    from pe_book.experiments.profiles import PROFILES

    parser.add_argument("--profile", default=PUBLISHED_PROFILE, choices=sorted(PROFILES),
                        help=f"the profile whose scores are exported (default: {PUBLISHED_PROFILE})")
    parser.add_argument("--results", default="results", help="the results folder that holds it (default: results/)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the table's path without suffix; .csv and .parquet are written (default: <profile>-scores)")


def run(args) -> int:
    from pe_book.results_data import score_table
    from pe_lib.io import atomic_write_bytes, atomic_write_text

    table = score_table(args.profile, args.results)
    stem = args.out if args.out is not None else Path(f"{args.profile}-scores")
    atomic_write_text(stem.with_suffix(".csv"), table.to_csv(index=False))
    parquet = io.BytesIO()
    table.to_parquet(parquet, index=False)
    atomic_write_bytes(stem.with_suffix(".parquet"), parquet.getvalue())
    models = table[table.task == "mlm"]
    print(f"{len(table)} scores of {models.variant.nunique()} variants ({len(models)} pretrained models) of profile "
          f"{args.profile}: {stem.with_suffix('.csv')}, {stem.with_suffix('.parquet')}")
    return 0
