"""Reading a model's position embeddings as proximity matrices (the inputs of
:mod:`pe_lib.properties`, which is pure numpy).

Identical-word probing (Wang et al. 2021): feed a sequence in which every token is the same word,
so that attention can depend on position only, and average the attention map over heads and many
random words.

    A^l = mean_{w in W} mean_h softmax(s^{l,h}(w, w, ..., w))       an (n, n) matrix, rows = queries

:func:`proximity` gives that map, or the dot products of a PEBert model's absolute position or
relative offset vectors; :func:`analyse_positions` gives all of a model's maps with their
indicators; :func:`absolute_position_matrix` reads the position table of any HuggingFace model.
"""
from __future__ import annotations

import numpy as np
import torch

from pe_lib.model import PEBertModel
from pe_lib.positions import parse_variant
from pe_lib.properties import chen_locality, chen_symmetry, indicators

#: Offsets 1..ANALYSIS_WINDOW of the local monotonicity of stored analyses (the ``window`` that
#: :func:`analyse_positions` is given; a reader with another window recomputes it from the stored
#: maps). Stored analyses depend on it without keying it: a change of it goes with a bump of their
#: code version.
ANALYSIS_WINDOW = 8


def base_encoder(model) -> PEBertModel:
    """The ``PEBertModel`` inside any PEBert* head model (or the model itself)."""
    encoder = getattr(model, "bert", model)
    if not isinstance(encoder, PEBertModel):
        raise TypeError(f"expected a PEBertModel or a PEBert* model, got {type(model).__name__}")
    return encoder


@torch.no_grad()
def identical_word_attention(
    model,
    length: int = 64,
    n_words: int = 100,
    layer: int = 0,
    seed: int = 0,
    exclude_ids: tuple[int, ...] = (0, 1, 2, 3, 4),
    batch_size: int = 32,
) -> np.ndarray:
    """Attention of layer ``layer`` on ``n_words`` random words, each repeated ``length`` times,
    averaged over words and heads: an (length, length) float64 array whose rows sum to 1.

    Words are drawn uniformly (seeded) from the vocabulary minus ``exclude_ids`` (by default the
    first five ids, where BERT-style vocabularies keep [PAD], [UNK], [CLS], [SEP], [MASK]).
    """
    encoder = base_encoder(model)
    n_layers = encoder.config.num_hidden_layers
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer must be in 0..{n_layers - 1}, got {layer}")
    if length < 1 or n_words < 1:
        raise ValueError(f"length and n_words must be positive, got length={length}, n_words={n_words}")
    allowed = np.setdiff1d(np.arange(encoder.config.vocab_size), np.asarray(exclude_ids))
    words = np.random.default_rng(seed).choice(allowed, size=n_words, replace=n_words > allowed.size)
    was_training = encoder.training
    encoder.eval()
    total = torch.zeros(length, length, dtype=torch.float64)
    for start in range(0, n_words, batch_size):
        chunk = torch.as_tensor(words[start : start + batch_size])  # (b,)
        ids = chunk[:, None].expand(-1, length).contiguous()  # (b, n)
        probs = encoder(ids, output_attentions=True).attentions[layer]  # (b, h, n, n)
        total += probs.double().mean(dim=1).sum(dim=0)  # (n, n)
    encoder.train(was_training)
    return (total / n_words).numpy()


# --------------------------------------------------------------------------
# Proximity matrices of a model's position embeddings
# --------------------------------------------------------------------------

PROXIMITY_KINDS = ("ape", "rpe", "probe")


def proximity(model, kind: str = "ape", length: int | None = None, layer: int = 0, **probe_options) -> np.ndarray:
    r"""The proximity matrix ``phi`` of a PEBert model's position embedding.

    * ``"ape"``: dot products of absolute position vectors, :math:`\phi[x, y] = p_x \cdot p_y`
      over positions ``0..length-1`` (default: ``max_position_embeddings``).
    * ``"rpe"``: dot products of relative offset vectors of layer ``layer``,
      :math:`\phi[a, b] = r_{m_a} \cdot r_{m_b}` over offsets ``m = -k..k`` (row ``a`` is offset
      ``a - k``; ``k`` = ``rpe_max_distance``, or ``length // 2`` when given, at most ``k``).
    * ``"probe"``: the identical-word attention map of layer ``layer``
      (:func:`pe_lib.probing.identical_word_attention`, rows are queries), default length 64;
      ``probe_options`` go to that function (``n_words``, ``seed``, ...).

    Returns a float64 ``(n, n)`` array. Raises ValueError if the model has no PE of that kind.
    """
    if kind not in PROXIMITY_KINDS:
        raise ValueError(f"unknown proximity kind {kind!r}; valid: {', '.join(PROXIMITY_KINDS)}")
    encoder = base_encoder(model)
    variant = encoder.config.position_embedding
    if kind == "probe":
        return identical_word_attention(encoder, length=length or 64, layer=layer, **probe_options)
    if kind == "ape":
        ape = encoder.embeddings.position
        if ape is None:
            raise ValueError(f"variant {variant!r} has no absolute position embedding (kind='ape')")
        return ape_gram(encoder, length or ape.max_positions or encoder.config.max_position_embeddings)
    rpe = encoder.relative_for(layer)
    if rpe is None or not rpe.has_offset_table:
        raise ValueError(f"variant {variant!r} has no relative offset vectors (kind='rpe' needs rpe-*)")
    return rpe_gram(encoder, rpe.max_distance if length is None else min(rpe.max_distance, length // 2), layer)


@torch.no_grad()
def ape_gram(encoder: PEBertModel, n: int) -> np.ndarray:
    r""":math:`p_x \cdot p_y` over positions ``0..n-1``: float64 ``(n, n)``; refuses ``n`` beyond the APE's maximum."""
    vectors = encoder.embeddings.position(torch.arange(n)[None])[0]  # (n, H)
    return (vectors @ vectors.T).double().numpy()  # (n, n)


@torch.no_grad()
def rpe_gram(encoder: PEBertModel, k: int, layer: int = 0) -> np.ndarray:
    r""":math:`r_a \cdot r_b` over offsets ``-k..k`` of layer ``layer``'s offset table (row ``a`` is offset
    ``a - k``): float64 ``(2k+1, 2k+1)``."""
    vectors = encoder.relative_for(layer).table(k)  # (2k+1, d)
    return (vectors @ vectors.T).double().numpy()  # (2k+1, 2k+1)


def analyse_positions(model, seq_len: int, probe: dict, window: int) -> tuple[dict, dict[str, np.ndarray]]:
    """Indicators (JSON) and matrices (arrays) of a PEBert model's position embeddings over
    ``seq_len`` positions: the APE's gram (``ape``) and the first layer's relative offsets' (``rpe``,
    offsets up to ``seq_len - 1``), each with :func:`pe_lib.properties.indicators` (local
    monotonicity over offsets ``1..window``) and the learned frequencies where they are learned;
    TUPE's [CLS] bias per relative module (``untie_theta``); the identical-word attention of every
    layer (``probe``: ``probe`` gives :func:`identical_word_attention`'s options) with the
    indicators and Chen et al.'s locality and symmetry."""
    encoder = base_encoder(model)
    variant = parse_variant(encoder.config.position_embedding)
    layers = range(encoder.config.num_hidden_layers)
    payload: dict = {}
    arrays: dict[str, np.ndarray] = {}
    with torch.no_grad():
        ape = encoder.embeddings.position
        if ape is not None:
            arrays["ape"] = ape_gram(encoder, seq_len)  # (n, n)
            payload["ape"] = indicators(arrays["ape"], window=window)
            if hasattr(ape, "freqs"):
                arrays["ape_freqs"] = ape.freqs.double().numpy()
        rpe = encoder.relative_for(0)
        if rpe is not None and rpe.has_offset_table:
            arrays["rpe"] = rpe_gram(encoder, min(rpe.max_distance, seq_len - 1))  # (2k+1, 2k+1)
            payload["rpe"] = indicators(arrays["rpe"], window=window)
            if hasattr(rpe, "freqs"):
                arrays["rpe_freqs"] = np.stack([encoder.relative_for(i).freqs.double().numpy() for i in layers])
        if variant.untie_cls:  # TUPE's words -> [CLS] bias, one (h,) per relative module
            modules = dict.fromkeys(encoder.relative_for(i) for i in layers)
            arrays["untie_theta"] = np.stack([m.untie.theta.double().numpy() for m in modules])  # (L or 1, h)
    attention = [identical_word_attention(encoder, layer=layer, **probe) for layer in layers]  # L x (n, n)
    arrays["probe"] = np.stack(attention)  # (L, n, n)
    payload["probe"] = [{**indicators(a, window=window), "chen_locality": chen_locality(a), "chen_symmetry": chen_symmetry(a)}
                        for a in attention]
    payload["variant"] = variant.name
    return payload, arrays


#: Parameter-name endings of absolute position-embedding matrices in HuggingFace models
#: (BERT/RoBERTa/MPNet/ELECTRA..., GPT-2, BART/OPT-style learned positions).
_APE_PARAMETER_ENDINGS = ("position_embeddings.weight", "wpe.weight", "embed_positions.weight")
#: model types whose position ids start at padding_idx + 1 (the first rows are never used).
_OFFSET_POSITIONS = {"roberta": 2, "xlm-roberta": 2, "camembert": 2, "mpnet": 2, "longformer": 2, "opt": 2}


def absolute_position_matrix(model) -> tuple[str, np.ndarray]:
    """The absolute position-embedding matrix of any HuggingFace model: ``(parameter name, P)`` with
    one row per usable position (RoBERTa-style offsets dropped). ValueError naming what the model
    has instead when it has none (e.g. rotary or relative positions)."""
    matrices = [(name, p) for name, p in model.named_parameters()
                if name.endswith(_APE_PARAMETER_ENDINGS) and p.ndim == 2]
    config = model.config
    if not matrices:
        hints = sorted({k for k in config.to_dict() if any(s in k for s in ("position", "rope", "rotary", "relative"))})
        found = ", ".join(f"{k}={getattr(config, k)!r}" for k in hints) or "no position settings in its config"
        raise ValueError(f"{config.model_type!r} model has no absolute position-embedding matrix (found: {found})")
    name, weight = matrices[0]
    offset = _OFFSET_POSITIONS.get(config.model_type, 0)
    return name, weight.detach().double().numpy()[offset:]
