"""Helpers shared by the tests (importable as ``support`` because tests/ is on sys.path)."""


def tiny_config(variant: str = "ape-learned", **overrides):
    """A 2-layer, 32-wide PEBertConfig for fast tests."""
    from pe_lib import PEBertConfig

    fields = dict(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=24, rpe_max_distance=6, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        position_embedding=variant,
    )
    fields.update(overrides)
    return PEBertConfig(**fields)
