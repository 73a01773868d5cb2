"""The configuration of a pe-bert model (:class:`PEBertConfig`, HF's ``PretrainedConfig``) and the
checks of its values, apart from the model (:mod:`pe_lib.model`) as HF keeps ``configuration_bert``
apart from ``modeling_bert``."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from transformers import PretrainedConfig

from pe_lib.errors import InputError
from pe_lib.positions import parse_variant


#: Where each layer normalises: BERT's "post" (after the residual sum) or "pre" (before each sublayer).
LAYER_NORMS = ("post", "pre")
#: Config fields that count something: an integer of at least 1 and at most :data:`LARGEST_SIZE`.
SIZE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
               "max_position_embeddings", "type_vocab_size", "rpe_max_distance")
#: The largest size a config may give (2^24, over 60 times the largest vocabulary of a published model):
#: a table of more rows would not fit in memory.
LARGEST_SIZE = 2**24


def wrong_value(key: str, value, default) -> str | None:
    """What ``value`` of config field ``key`` should be, in words, when it is not that (its type
    differs from the ``default``'s, a size of :data:`SIZE_FIELDS` is below 1 or above
    :data:`LARGEST_SIZE`, a probability lies outside [0, 1]); else None (None is allowed where the
    default is not a size: HF configs leave token ids unset so)."""
    if key in SIZE_FIELDS and isinstance(default, int):
        if type(value) is not int or value < 1:
            return f"an integer of at least 1 like {default!r}"
        return f"an integer of at most {LARGEST_SIZE:,} like {default!r}" if value > LARGEST_SIZE else None
    if value is None or default is None:
        return None
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"true or false like {str(default).lower()}"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, int) and not (number and float(value).is_integer()):
        return f"an integer like {default!r}" if number else f"a number like {default!r}"
    if isinstance(default, int) and type(value) is not int:
        return f"an integer like {default!r}"
    if isinstance(default, float) and not (number and math.isfinite(value)):
        return f"a number like {default!r}"
    if key.endswith("_prob") and not 0 <= value <= 1:
        return f"a probability between 0 and 1 like {default!r}"
    if isinstance(default, str) and not isinstance(value, str):
        return f"a string like {default!r}"
    return None


class PEBertConfig(PretrainedConfig):
    """BERT's configuration plus ``position_embedding`` (a variant name, see ``pe_lib.positions``)
    and the knobs of the position embeddings. Defaults are BERT-base's."""

    model_type = "pe-bert"

    def __init__(
        self,
        vocab_size: int = 30522,
        hidden_size: int = 768,
        num_hidden_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_size: int = 3072,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        pad_token_id: int = 0,
        position_embedding: str = "ape-learned",
        rpe_max_distance: int = 128,
        rpe_key_query: bool = False,
        rpe_sin_direction_blind: bool = True,
        sinusoid_base: float = 10000.0,
        ape_sin_scale: float | None = None,
        rope_base: float = 10000.0,
        t5_num_buckets: int = 32,
        t5_max_distance: int = 128,
        classifier_dropout: float | None = None,
        layer_norm: str = "post",
        position_init_std: float | None = None,
        **kwargs,
    ):
        self.position_embedding = parse_variant(position_embedding).name  # validates, canonical order
        if hidden_size % num_attention_heads:
            raise InputError(f"hidden_size {hidden_size} is not a multiple of num_attention_heads "
                             f"{num_attention_heads}: num_attention_heads must divide {hidden_size}")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.rpe_max_distance = rpe_max_distance
        self.rpe_key_query = rpe_key_query
        self.rpe_sin_direction_blind = rpe_sin_direction_blind
        self.sinusoid_base = sinusoid_base
        self.ape_sin_scale = initializer_range * math.sqrt(2) if ape_sin_scale is None else ape_sin_scale
        self.rope_base = rope_base
        self.t5_num_buckets = t5_num_buckets
        self.t5_max_distance = t5_max_distance
        self.classifier_dropout = classifier_dropout
        if layer_norm not in LAYER_NORMS:
            raise ValueError(f"layer_norm must be one of {', '.join(LAYER_NORMS)}, got {layer_norm!r}")
        self.layer_norm = layer_norm
        # init std of the learned position tables (APE, RPE, T5 buckets); None: initializer_range
        self.position_init_std = position_init_std
        kwargs.setdefault("tie_word_embeddings", True)
        super().__init__(pad_token_id=pad_token_id, **kwargs)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


def check_config_values(values: Mapping[str, Any], where: str = "") -> None:
    """Refuse, in one :class:`InputError` naming the field (``where`` + its name) and what it must be,
    the first of ``values`` (PEBertConfig fields) that the model would fail on, or train on without a
    word: a wrongly typed value, a size or probability out of range (:func:`wrong_value`), and what
    PEBertConfig itself refuses (a hidden_size that num_attention_heads does not divide)."""
    defaults = PEBertConfig()
    for key, value in values.items():
        problem = wrong_value(key, value, getattr(defaults, key, None))
        if problem:
            raise InputError(f"{where}{key} is {value!r}, expected {problem}")
    PEBertConfig(**values)
