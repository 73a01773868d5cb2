"""Import HuggingFace BERT-family checkpoints into pe_lib's PEBert classes.

``from_hf_bert`` maps BERT's parameter names onto pe_lib's (query/key/value are fused into one
``qkv`` projection) and checks that nothing is left over. The checkpoint's weights choose the class,
for a loaded model object and for a folder or hub id alike (the weights file is read directly, so the
heads survive): an MLM head (``cls.predictions.*`` of ``BertForMaskedLM`` or ``BertForPreTraining``)
gives ``PEBertForMaskedLM`` (its decoder tied to the word embeddings when the checkpoint's is),
``classifier`` with a pooler ``PEBertForSequenceClassification`` (``num_labels``, ``id2label`` and
``problem_type`` from the HF config), ``qa_outputs`` ``PEBertForQuestionAnswering``, and a bare
encoder ``PEBertModel`` (pooler kept when present). Weights that the class has no place for (NSP's
``cls.seq_relationship``, ``BertForPreTraining``'s pooler, ...) are dropped with one warning that names
them. The imported model reproduces HF's outputs (parity is tested to 1e-5 on random BERTs, heads
included, and 1e-4 on all-MiniLM-L6-v2).

Absolute checkpoints import as ``ape-learned``. Checkpoints saved by transformers v4 with
``position_embedding_type`` ``relative_key`` / ``relative_key_query`` import as ``rpe-learned``
(same offset convention, ``rpe_max_distance = max_position_embeddings - 1``, ``rpe_key_query`` for
the latter); transformers 5 silently loads those as absolute and drops the per-layer
``distance_embedding`` weights, so they are read from config.json and the weights file directly
(parity with transformers 4.57.6 is tested on the fixtures in tests/fixtures/).

``position_embedding=...`` imports the checkpoint under another variant, e.g. to continue MLM
pretraining with a new position embedding: the checkpoint's position tables that the variant does not
use are not loaded, the variant's own learned tables start from their initialisation, and every other
weight (head included) is loaded.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import torch
from transformers import BertConfig, PreTrainedModel

from pe_lib.config import PEBertConfig
from pe_lib.model import (PEBertForMaskedLM, PEBertForQuestionAnswering, PEBertForSequenceClassification, PEBertModel,
                          PEBertPreTrainedModel)

#: BertConfig fields copied verbatim into PEBertConfig.
_SHARED_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
    "type_vocab_size", "initializer_range", "layer_norm_eps", "pad_token_id",
)

#: BertConfig fields of a sequence classifier, copied into its PEBertConfig (``num_labels`` follows
#: ``id2label``).
_CLASSIFIER_FIELDS = ("id2label", "label2id", "problem_type", "classifier_dropout")

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

#: The encoder's names in a BertModel; in a ``BertFor*`` they sit under ``bert.``, beside the heads.
_ENCODER_PREFIXES = ("embeddings.", "encoder.", "pooler.")

#: PEBert class -> the names (encoder ones without ``bert.``) that all mark its head; the first match wins.
#: ``classifier`` without a pooler is BertForTokenClassification's, which has no PEBert counterpart.
_HEAD_MARKERS = {
    PEBertForMaskedLM: ("cls.predictions.transform.dense.weight",),
    PEBertForQuestionAnswering: ("qa_outputs.weight",),
    PEBertForSequenceClassification: ("classifier.weight", "pooler.dense.weight"),
}

#: PEBert class -> its head's HF names -> pe_lib names. HF's MLM output bias is one tensor saved under
#: either name or both; ``cls.predictions.bias`` comes last so that it wins. The decoder is ``_DECODER``.
_HEAD_RENAMES = {
    PEBertForMaskedLM: {
        "cls.predictions.transform.dense.weight": "head.dense.weight",
        "cls.predictions.transform.dense.bias": "head.dense.bias",
        "cls.predictions.transform.LayerNorm.weight": "head.norm.weight",
        "cls.predictions.transform.LayerNorm.bias": "head.norm.bias",
        "cls.predictions.decoder.bias": "head.bias",
        "cls.predictions.bias": "head.bias",
    },
    PEBertForQuestionAnswering: {name: name for name in ("qa_outputs.weight", "qa_outputs.bias")},
    PEBertForSequenceClassification: {name: name for name in ("classifier.weight", "classifier.bias")},
}

#: The MLM decoder's HF name; transformers 5 does not save it when it is tied to the word embeddings.
_DECODER = "cls.predictions.decoder.weight"

#: pe_lib's position tables, in a PEBertModel or under ``bert.``: the weights a new variant may lack or add.
_POSITION_KEY = re.compile(r"^(bert\.)?(embeddings\.position\.|relative\.)")

#: transformers v4 relative position types -> whether the key-side term is added (``rpe_key_query``).
_RELATIVE_TYPES = {"relative_key": False, "relative_key_query": True}

#: The per-layer v4 relative table -> pe_lib's ``LearnedRPE`` table of layer {i}.
_DISTANCE_RENAME = ("encoder.layer.{i}.attention.self.distance_embedding.weight", "relative.{i}.weight")

#: Weight files tried in order (safetensors first).
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def position_type(config: BertConfig) -> str:
    """The checkpoint's ``position_embedding_type`` (``"absolute"`` when unset)."""
    return getattr(config, "position_embedding_type", "absolute") or "absolute"


def position_fields(config: BertConfig) -> dict:
    """The PEBertConfig fields of the checkpoint's own position embedding.

    ``absolute`` -> ``ape-learned``; v4 ``relative_key(_query)`` -> ``rpe-learned`` with
    ``rpe_max_distance = max_position_embeddings - 1`` (v4's table has ``2 * max_position - 1`` rows).
    """
    kind = position_type(config)
    if kind == "absolute":
        return {"position_embedding": "ape-learned"}
    if kind in _RELATIVE_TYPES:
        return {"position_embedding": "rpe-learned", "rpe_max_distance": config.max_position_embeddings - 1,
                "rpe_key_query": _RELATIVE_TYPES[kind]}
    raise ValueError(
        f"from_hf_bert: position_embedding_type={kind!r} is not supported; "
        f"only 'absolute', 'relative_key' and 'relative_key_query' checkpoints import"
    )


def head_fields(config: BertConfig, cls: type[PEBertPreTrainedModel]) -> dict:
    """The BertConfig fields that ``cls``'s head needs: an MLM decoder's tie, a classifier's labels."""
    if cls is PEBertForMaskedLM:
        return {"tie_word_embeddings": config.tie_word_embeddings}
    if cls is PEBertForSequenceClassification:
        return {name: getattr(config, name) for name in _CLASSIFIER_FIELDS}
    return {}


def pe_config_from_bert(
    config: BertConfig, cls: type[PEBertPreTrainedModel] = PEBertModel, **overrides
) -> PEBertConfig:
    """A PEBertConfig with a BertConfig's architecture and ``cls``'s head fields; ``overrides`` win."""
    fields = {name: getattr(config, name) for name in _SHARED_FIELDS}
    return PEBertConfig(**{**fields, **head_fields(config, cls), **position_fields(config), **overrides})


def split_state(hf_state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(encoder, heads) of a BERT state dict: the encoder under BertModel's names (``bert.`` removed), the
    heads under their own; ``position_ids`` buffers are dropped."""
    encoder, heads = {}, {}
    for key, value in hf_state.items():
        name = re.sub(r"^bert\.", "", key)
        if name.endswith("position_ids"):
            continue
        if name.startswith(_ENCODER_PREFIXES):
            encoder[name] = value
        else:
            heads[key] = value
    return encoder, heads


def head_class(names: set[str]) -> type[PEBertPreTrainedModel]:
    """The PEBert class of a checkpoint with these names (see split_state): the first of ``_HEAD_MARKERS``
    whose marker names are all present, else ``PEBertModel``."""
    return next((cls for cls, marker in _HEAD_MARKERS.items() if set(marker) <= names), PEBertModel)


def convert_state_dict(
    encoder: dict[str, torch.Tensor], n_layers: int, relative: bool = False
) -> dict[str, torch.Tensor]:
    """Rename a BertModel state dict (see split_state) to pe_lib's names; fuse q, k, v into ``qkv``.
    Unknown keys are an error.

    ``relative``: a v4 ``relative_key(_query)`` checkpoint; its ``distance_embedding`` tables become
    ``relative.{i}.weight`` and its absolute position table (saved but unused by v4) is dropped.
    """
    state = dict(encoder)
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


def convert_head(
    cls: type[PEBertPreTrainedModel], heads: dict[str, torch.Tensor], word: torch.Tensor, tied: bool
) -> dict[str, torch.Tensor]:
    """``cls``'s head under pe_lib's names, popped from ``heads`` (what stays there has no place in ``cls``).

    ``word``: the word embeddings, which a tied MLM decoder (``tied``) must equal; an untied one is the
    checkpoint's own.
    """
    out = {dst: heads.pop(src) for src, dst in _HEAD_RENAMES.get(cls, {}).items() if src in heads}
    if cls is PEBertForMaskedLM:
        decoder = heads.pop(_DECODER, word if tied else None)  # (V, H)
        if tied and not torch.equal(decoder, word):
            raise ValueError("from_hf_bert: tie_word_embeddings is set but the checkpoint's MLM decoder "
                             "differs from its word embeddings")
        if decoder is not None:
            out["head.decoder.weight"] = decoder
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


def legacy_name(key: str) -> str:
    """``key`` with old (TF-converted) checkpoints' LayerNorm ``gamma`` / ``beta`` renamed, as transformers
    does."""
    key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
    return re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)


def read_raw_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Every tensor of the checkpoint's weights file (``model.safetensors``, else ``pytorch_model.bin`` read
    with ``torch.load(weights_only=True)``), heads included, under transformers' current names."""
    for name in _WEIGHT_FILES:
        file = _checkpoint_file(path, name)
        if file is None:
            continue
        if name.endswith(".safetensors"):
            from safetensors.torch import load_file

            state = load_file(str(file))
        else:
            state = torch.load(file, map_location="cpu", weights_only=True)
        return {legacy_name(k): v for k, v in state.items()}
    raise ValueError(f"from_hf_bert: no {' or '.join(_WEIGHT_FILES)} in {str(path)!r} "
                     f"(sharded checkpoints are not supported)")


def from_hf_bert(
    model_or_path: PreTrainedModel | str | os.PathLike, **config_overrides
) -> PEBertPreTrainedModel:
    """Import a BERT-family checkpoint as the PEBert class that its weights call for, in eval mode.

    ``model_or_path``: a loaded HF ``BertModel`` or ``BertFor*``, a local folder, or a hub id (e.g.
    ``"bert-base-uncased"``, online only). A folder's config.json and weights file (safetensors, else
    ``torch.load(weights_only=True)``) are read directly, so its heads survive; remote code is never
    trusted. ``BertForMaskedLM`` and ``BertForPreTraining`` give ``PEBertForMaskedLM`` (decoder tied to the
    word embeddings when the checkpoint's is), ``BertForSequenceClassification``
    ``PEBertForSequenceClassification`` (labels and ``problem_type`` from the HF config),
    ``BertForQuestionAnswering`` ``PEBertForQuestionAnswering``, ``BertModel`` ``PEBertModel`` (pooler kept
    when present); weights without a place in that class (NSP's ``cls.seq_relationship`` and pooler, ...)
    are dropped with one warning. Absolute checkpoints give ``ape-learned``; transformers-v4
    ``relative_key(_query)`` checkpoints give ``rpe-learned`` and must be passed as a folder or hub id,
    because transformers 5 drops their ``distance_embedding`` weights on load.

    ``config_overrides``: PEBertConfig fields. With another ``position_embedding`` the checkpoint's position
    tables that the variant does not use are not loaded and the variant's own learned ones are initialised;
    everything else, head included, is loaded.
    """
    if isinstance(model_or_path, PreTrainedModel):
        hf_config = model_or_path.config
        if not isinstance(hf_config, BertConfig):
            raise _not_bert(hf_config.model_type)
        if position_type(hf_config) in _RELATIVE_TYPES:
            raise ValueError(
                f"from_hf_bert: position_embedding_type={position_type(hf_config)!r} cannot be imported "
                f"from a loaded model object: transformers 5 loads relative checkpoints as absolute and "
                f"drops their distance_embedding weights. Pass the checkpoint's folder or hub id to "
                f"from_hf_bert instead."
            )
        return _import(hf_config, model_or_path.state_dict(), relative=False, **config_overrides)
    raw = read_raw_config(model_or_path)
    if raw.get("model_type") != "bert":
        raise _not_bert(raw.get("model_type"))
    hf_config = BertConfig(**raw)
    relative = position_type(hf_config) in _RELATIVE_TYPES
    return _import(hf_config, read_raw_state_dict(model_or_path), relative, **config_overrides)


def _not_bert(model_type: str | None) -> ValueError:
    """The error for a checkpoint whose ``model_type`` is not ``bert``."""
    return ValueError(f"from_hf_bert: expected a BERT checkpoint, got model_type={model_type!r}")


def _import(
    hf_config: BertConfig, hf_state: dict[str, torch.Tensor], relative: bool, **config_overrides
) -> PEBertPreTrainedModel:
    """The PEBert model that ``hf_state``'s names call for, holding its weights, in eval mode."""
    encoder, heads = split_state(hf_state)
    cls = head_class(encoder.keys() | heads.keys())
    config = pe_config_from_bert(hf_config, cls, **config_overrides)
    has_pooler = "pooler.dense.weight" in encoder
    model = PEBertModel(config, add_pooling_layer=has_pooler) if cls is PEBertModel else cls(config)
    if model.base_model.pooler is None:  # BertForPreTraining's pooler feeds NSP, which has no counterpart
        heads |= {name: encoder.pop(name) for name in list(encoder) if name.startswith("pooler.")}
    state = convert_state_dict(encoder, config.num_hidden_layers, relative)
    head = convert_head(cls, heads, state["embeddings.word.weight"], config.tie_word_embeddings)
    if heads:
        warnings.warn(f"from_hf_bert: {cls.__name__} has no place for the checkpoint's "
                      f"{', '.join(sorted(heads))}; these weights are dropped", stacklevel=3)
    prefix = "" if cls is PEBertModel else f"{cls.base_model_prefix}."
    new_variant = config.position_embedding != position_fields(hf_config)["position_embedding"]
    load_weights(model, {prefix + name: value for name, value in state.items()} | head, new_variant)
    return model.eval()


def load_weights(model: PEBertPreTrainedModel, state: dict[str, torch.Tensor], new_variant: bool) -> None:
    """Load ``state`` (pe_lib's names) into ``model``: every weight must match, except that under a new
    position embedding (``new_variant``) the checkpoint's position tables that ``model`` lacks are not
    loaded and ``model``'s own keep their initialisation."""
    if new_variant:
        used = model.state_dict().keys()
        state = {name: value for name, value in state.items()
                 if name in used or not _POSITION_KEY.match(name)}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [name for name in missing if not (new_variant and _POSITION_KEY.match(name))]
    if missing or unexpected:
        raise ValueError(f"from_hf_bert: {type(model).__name__} does not match the checkpoint: "
                         f"missing {missing[:5]}, unexpected {unexpected[:5]}")
