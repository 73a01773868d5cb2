"""pe_book.chapters.run_scale: the size of a run's models."""
from __future__ import annotations

from pe_book.chapters import run_scale


def test_count_parameters_matches_a_real_model():
    from pe_lib import PEBertConfig, PEBertForMaskedLM

    config = {"vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 32, "max_position_embeddings": 16, "position_embedding": "ape-learned+rpe-learned"}
    real = PEBertForMaskedLM(PEBertConfig(**config))
    assert run_scale.count_parameters(config) == sum(p.numel() for p in real.parameters())
