"""Import HuggingFace BERT-family checkpoints (absolute positions) into ``PEBertModel``.

``from_hf_bert`` maps BERT's parameter names onto pe_lib's (query/key/value are fused into one
``qkv`` projection) and checks that nothing is left over, so the imported model reproduces HF's
``BertModel`` outputs (parity is tested to 1e-5 on a random BERT and 1e-4 on all-MiniLM-L6-v2).
"""
from __future__ import annotations

import os
import re

import torch
from transformers import AutoModel, BertConfig, PreTrainedModel

from pe_lib.model import PEBertConfig, PEBertModel

#: BertConfig fields copied verbatim into PEBertConfig.
_SHARED_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
    "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "initializer_range", "layer_norm_eps", "pad_token_id",
)

#: HF BERT name (after the "bert." prefix) -> pe_lib name; {i} is the layer index.
_RENAMES = {
    "embeddings.word_embeddings.weight": "embeddings.word.weight",
    "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
    "embeddings.position_embeddings.weight": "embeddings.position.weight",
    "embeddings.LayerNorm.weight": "embeddings.norm.weight",
    "embeddings.LayerNorm.bias": "embeddings.norm.bias",
    "encoder.layer.{i}.attention.output.dense.weight": "layers.{i}.attention.out.weight",
    "encoder.layer.{i}.attention.output.dense.bias": "layers.{i}.attention.out.bias",
    "encoder.layer.{i}.attention.output.LayerNorm.weight": "layers.{i}.attention_norm.weight",
    "encoder.layer.{i}.attention.output.LayerNorm.bias": "layers.{i}.attention_norm.bias",
    "encoder.layer.{i}.intermediate.dense.weight": "layers.{i}.ffn_in.weight",
    "encoder.layer.{i}.intermediate.dense.bias": "layers.{i}.ffn_in.bias",
    "encoder.layer.{i}.output.dense.weight": "layers.{i}.ffn_out.weight",
    "encoder.layer.{i}.output.dense.bias": "layers.{i}.ffn_out.bias",
    "encoder.layer.{i}.output.LayerNorm.weight": "layers.{i}.ffn_norm.weight",
    "encoder.layer.{i}.output.LayerNorm.bias": "layers.{i}.ffn_norm.bias",
    "pooler.dense.weight": "pooler.weight",
    "pooler.dense.bias": "pooler.bias",
}


def pe_config_from_bert(config: BertConfig, **overrides) -> PEBertConfig:
    """A PEBertConfig with the same architecture as a BertConfig, variant ``ape-learned``."""
    kind = getattr(config, "position_embedding_type", "absolute") or "absolute"
    if kind != "absolute":
        raise ValueError(
            f"from_hf_bert: position_embedding_type={kind!r} is not supported; only 'absolute' checkpoints import"
        )
    fields = {name: getattr(config, name) for name in _SHARED_FIELDS}
    return PEBertConfig(**fields, **{"position_embedding": "ape-learned", **overrides})


def convert_state_dict(hf_state: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    """Rename a BERT state dict to pe_lib's names; fuse q, k, v into ``qkv``. Unknown keys are an error."""
    state = {re.sub(r"^bert\.", "", k): v for k, v in hf_state.items()}
    state = {k: v for k, v in state.items() if not k.endswith("position_ids") and not k.startswith("cls.")}
    out: dict[str, torch.Tensor] = {}
    for i in range(n_layers):
        prefix = f"encoder.layer.{i}.attention.self."
        for part in ("weight", "bias"):
            qkv = [state.pop(f"{prefix}{name}.{part}") for name in ("query", "key", "value")]
            out[f"layers.{i}.attention.qkv.{part}"] = torch.cat(qkv, dim=0)  # (3H, H) or (3H,)
        for src, dst in _RENAMES.items():
            if "{i}" in src:
                out[dst.format(i=i)] = state.pop(src.format(i=i))
    for src, dst in _RENAMES.items():
        if "{i}" not in src and src in state:
            out[dst] = state.pop(src)
    if state:
        raise ValueError(f"from_hf_bert: unexpected parameters in the checkpoint: {sorted(state)[:5]}")
    return out


def from_hf_bert(model_or_path: PreTrainedModel | str | os.PathLike, **config_overrides) -> PEBertModel:
    """Import a BERT-family checkpoint with absolute positions as a ``PEBertModel`` (``ape-learned``).

    ``model_or_path``: a loaded HF ``BertModel`` (or any ``BertFor*``), a local folder, or a hub id
    (e.g. ``"bert-base-uncased"``, online only). Weights are read with safetensors by transformers;
    remote code is never trusted. The pooler is kept when the checkpoint has one.
    """
    if isinstance(model_or_path, PreTrainedModel):
        hf = model_or_path
    else:
        hf = AutoModel.from_pretrained(model_or_path, trust_remote_code=False)
    if not isinstance(hf.config, BertConfig):
        raise ValueError(f"from_hf_bert: expected a BERT checkpoint, got model_type={hf.config.model_type!r}")
    config = pe_config_from_bert(hf.config, **config_overrides)
    hf_state = hf.state_dict()
    has_pooler = any(k.split(".")[-3:-1] == ["pooler", "dense"] for k in hf_state)
    model = PEBertModel(config, add_pooling_layer=has_pooler)
    model.load_state_dict(convert_state_dict(hf_state, config.num_hidden_layers), strict=True)
    return model.eval()
