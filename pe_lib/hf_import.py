"""Import HuggingFace BERT-family checkpoints into ``PEBertModel``.

``from_hf_bert`` maps BERT's parameter names onto pe_lib's (query/key/value are fused into one
``qkv`` projection) and checks that nothing is left over, so the imported model reproduces HF's
``BertModel`` outputs (parity is tested to 1e-5 on a random BERT and 1e-4 on all-MiniLM-L6-v2).

Absolute checkpoints import as ``ape-learned``. Checkpoints saved by transformers v4 with
``position_embedding_type`` ``relative_key`` / ``relative_key_query`` import as ``rpe-learned``
(same offset convention, ``rpe_max_distance = max_position_embeddings - 1``, ``rpe_key_query`` for
the latter); transformers 5 silently loads those as absolute and drops the per-layer
``distance_embedding`` weights, so they are read from config.json and the weights file directly
(parity with transformers 4.57.6 is tested on the fixtures in tests/fixtures/).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

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

#: transformers v4 relative position types -> whether the key-side term is added (``rpe_key_query``).
_RELATIVE_TYPES = {"relative_key": False, "relative_key_query": True}

#: The per-layer v4 relative table -> pe_lib's ``LearnedRPE`` table of layer {i}.
_DISTANCE_RENAME = ("encoder.layer.{i}.attention.self.distance_embedding.weight", "relative.{i}.weight")

#: Weight files tried in order (safetensors first).
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def position_type(config: BertConfig) -> str:
    """The checkpoint's ``position_embedding_type`` (``"absolute"`` when unset)."""
    return getattr(config, "position_embedding_type", "absolute") or "absolute"


def pe_config_from_bert(config: BertConfig, **overrides) -> PEBertConfig:
    """A PEBertConfig with the same architecture as a BertConfig.

    ``absolute`` -> ``ape-learned``; v4 ``relative_key(_query)`` -> ``rpe-learned`` with
    ``rpe_max_distance = max_position_embeddings - 1`` (v4's table has ``2 * max_position - 1`` rows).
    """
    kind = position_type(config)
    fields = {name: getattr(config, name) for name in _SHARED_FIELDS}
    if kind == "absolute":
        pe = {"position_embedding": "ape-learned"}
    elif kind in _RELATIVE_TYPES:
        pe = {"position_embedding": "rpe-learned", "rpe_max_distance": config.max_position_embeddings - 1,
              "rpe_key_query": _RELATIVE_TYPES[kind]}
    else:
        raise ValueError(
            f"from_hf_bert: position_embedding_type={kind!r} is not supported; "
            f"only 'absolute', 'relative_key' and 'relative_key_query' checkpoints import"
        )
    return PEBertConfig(**fields, **{**pe, **overrides})


def convert_state_dict(
    hf_state: dict[str, torch.Tensor], n_layers: int, relative: bool = False
) -> dict[str, torch.Tensor]:
    """Rename a BERT state dict to pe_lib's names; fuse q, k, v into ``qkv``. Unknown keys are an error.

    ``relative``: a v4 ``relative_key(_query)`` checkpoint; its ``distance_embedding`` tables become
    ``relative.{i}.weight`` and its absolute position table (saved but unused by v4) is dropped.
    """
    state = {re.sub(r"^bert\.", "", k): v for k, v in hf_state.items()}
    state = {k: v for k, v in state.items() if not k.endswith("position_ids") and not k.startswith("cls.")}
    if relative:
        state.pop("embeddings.position_embeddings.weight", None)
    out: dict[str, torch.Tensor] = {}
    for i in range(n_layers):
        prefix = f"encoder.layer.{i}.attention.self."
        for part in ("weight", "bias"):
            qkv = [state.pop(f"{prefix}{name}.{part}") for name in ("query", "key", "value")]
            out[f"layers.{i}.attention.qkv.{part}"] = torch.cat(qkv, dim=0)  # (3H, H) or (3H,)
        for src, dst in _RENAMES.items():
            if "{i}" in src:
                out[dst.format(i=i)] = state.pop(src.format(i=i))
        if relative:
            src, dst = _DISTANCE_RENAME
            out[dst.format(i=i)] = state.pop(src.format(i=i))
    for src, dst in _RENAMES.items():
        if "{i}" not in src and src in state:
            out[dst] = state.pop(src)
    if state:
        raise ValueError(f"from_hf_bert: unexpected parameters in the checkpoint: {sorted(state)[:5]}")
    return out


def _checkpoint_file(path: str | os.PathLike, name: str) -> Path | None:
    """``name`` inside a local folder, or downloaded from a hub id (online only); None when absent."""
    if Path(path).is_dir():
        file = Path(path) / name
        return file if file.is_file() else None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return Path(hf_hub_download(str(path), name))
    except EntryNotFoundError:
        return None


def read_raw_config(path: str | os.PathLike) -> dict:
    """config.json of a local folder or hub id, as saved (no transformers-5 defaults applied)."""
    file = _checkpoint_file(path, "config.json")
    if file is None:
        raise ValueError(f"from_hf_bert: no config.json in {str(path)!r}")
    return json.loads(file.read_text())


def read_raw_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Every tensor of the checkpoint's weights file (``model.safetensors``, else ``pytorch_model.bin``).

    Only the backbone is kept: for a ``BertFor*`` checkpoint (keys under ``bert.``) the heads are dropped,
    as loading it into a ``BertModel`` would.
    """
    for name in _WEIGHT_FILES:
        file = _checkpoint_file(path, name)
        if file is None:
            continue
        if name.endswith(".safetensors"):
            from safetensors.torch import load_file

            state = load_file(str(file))
        else:
            state = torch.load(file, map_location="cpu", weights_only=True)
        if any(k.startswith("bert.") for k in state):
            state = {k: v for k, v in state.items() if k.startswith("bert.")}
        return state
    raise ValueError(f"from_hf_bert: no {' or '.join(_WEIGHT_FILES)} in {str(path)!r} (sharded checkpoints are not supported)")


def from_hf_bert(model_or_path: PreTrainedModel | str | os.PathLike, **config_overrides) -> PEBertModel:
    """Import a BERT-family checkpoint as a ``PEBertModel``.

    ``model_or_path``: a loaded HF ``BertModel`` (or any ``BertFor*``), a local folder, or a hub id
    (e.g. ``"bert-base-uncased"``, online only). Absolute checkpoints give ``ape-learned`` (weights read
    with safetensors by transformers); transformers-v4 ``relative_key(_query)`` checkpoints give
    ``rpe-learned`` and must be passed as a folder or hub id, because transformers 5 drops their
    ``distance_embedding`` weights on load: their config.json and weights file are read directly.
    Remote code is never trusted. The pooler is kept when the checkpoint has one.
    """
    if isinstance(model_or_path, PreTrainedModel):
        hf_config = model_or_path.config
        if isinstance(hf_config, BertConfig) and position_type(hf_config) in _RELATIVE_TYPES:
            raise ValueError(
                f"from_hf_bert: position_embedding_type={position_type(hf_config)!r} cannot be imported from a "
                f"loaded model object: transformers 5 loads relative checkpoints as absolute and drops their "
                f"distance_embedding weights. Pass the checkpoint's folder or hub id to from_hf_bert instead."
            )
        return _from_loaded(model_or_path, **config_overrides)
    raw = read_raw_config(model_or_path)
    if raw.get("model_type") == "bert" and raw.get("position_embedding_type") in _RELATIVE_TYPES:
        return _from_raw_relative(model_or_path, raw, **config_overrides)
    return _from_loaded(AutoModel.from_pretrained(model_or_path, trust_remote_code=False), **config_overrides)


def _build(config: PEBertConfig, hf_state: dict[str, torch.Tensor], relative: bool) -> PEBertModel:
    """A PEBertModel holding ``hf_state`` (pooler kept when present), in eval mode."""
    has_pooler = any(k.split(".")[-3:-1] == ["pooler", "dense"] for k in hf_state)
    model = PEBertModel(config, add_pooling_layer=has_pooler)
    model.load_state_dict(convert_state_dict(hf_state, config.num_hidden_layers, relative), strict=True)
    return model.eval()


def _from_loaded(hf: PreTrainedModel, **config_overrides) -> PEBertModel:
    """Import a model object loaded by transformers (absolute positions)."""
    if not isinstance(hf.config, BertConfig):
        raise ValueError(
            f"from_hf_bert: expected a BERT checkpoint, got model_type={hf.config.model_type!r}"
        )
    config = pe_config_from_bert(hf.config, **config_overrides)
    return _build(config, hf.state_dict(), relative=False)


def _from_raw_relative(path: str | os.PathLike, raw: dict, **config_overrides) -> PEBertModel:
    """Import a v4 ``relative_key(_query)`` checkpoint from its raw config.json and weights file."""
    config = pe_config_from_bert(BertConfig(**raw), **config_overrides)
    return _build(config, read_raw_state_dict(path), relative=True)
