"""The accelerator cards ``pe-book run --dry-run --card`` prices a profile on
(:func:`pe_book.experiments.costs.card_estimate`); importing it imports nothing heavy, so the
command line lists the cards at once."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Card:
    """An accelerator as its data sheet gives it: its name, dense bf16 peak and memory."""
    name: str
    bf16_tflops: float  # dense (no structured sparsity)
    memory_gib: float


#: The cards ``pe-book run --card`` prices a profile on (vendors' data sheets, SXM where both exist).
CARDS = {"h100": Card("NVIDIA H100 SXM", 989.0, 80.0), "h200": Card("NVIDIA H200 SXM", 989.0, 141.0),
         "a100": Card("NVIDIA A100 SXM 80GB", 312.0, 80.0), "a100-40gb": Card("NVIDIA A100 40GB", 312.0, 40.0),
         "l4": Card("NVIDIA L4", 121.0, 24.0)}
#: The share of a card's peak that a pretraining is assumed to reach where ``results/bench.json``
#: measured none on that card (BERT-base in bf16 reaches 30-50% on current cards).
ASSUMED_MFU = 0.35
