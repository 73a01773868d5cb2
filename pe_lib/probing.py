"""Identical-word probing (Wang et al. 2021): feed a sequence in which every token is the same word,
so that attention can depend on position only, and average the attention map over heads and many
random words.

    A^l = mean_{w in W} mean_h softmax(s^{l,h}(w, w, ..., w))       an (n, n) matrix, rows = queries
"""
from __future__ import annotations

import numpy as np
import torch

from pe_lib.model import PEBertModel


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
