r"""Length extrapolation: the MLM loss of a pretrained model on inputs longer than it was trained on.

What is computed
----------------
A fixed stream of ``T`` validation tokens :math:`t_1 .. t_T` (the validation rows of the
pretraining data without their [CLS]/[SEP], i.e. the validation text in order) is masked **once**
with the pretraining rule (:func:`pe_lib.training.mlm.mask_tokens`: 15% of the tokens
selected, of those 80% [MASK], 10% a random token, 10% kept), from a generator seeded by
``step_seed(seed, 0, 0, 3)`` (pretraining uses purposes 0-2). The same tokens are therefore
selected, and replaced the same way, at every length.

For each length ``L`` the masked stream is cut into rows ``[CLS] t_{k(L-2)+1} .. t_{(k+1)(L-2)}
[SEP]`` (:func:`pe_lib.training.mlm.make_blocks`, the ragged tail dropped). Only the selected
tokens among the first

.. math::  P = \min_L \lfloor T / (L-2) \rfloor (L-2)

stream positions are scored, so every length scores exactly the same set ``S`` of tokens; tokens
past ``P`` are context only. With :math:`\mathrm{pos}_L(s)` the position of stream token ``s`` in
its row at length ``L`` (``1 .. L-2``, [CLS] being 0):

.. math::

    \mathrm{loss}(L) = \frac{1}{|S|} \sum_{s \in S} -\log p_L(t_s \mid \text{row of } s),
    \qquad \mathrm{perplexity}(L) = e^{\mathrm{loss}(L)}

    \mathrm{loss}_b(L) = \text{the same mean over } \{s \in S : b\,w \le \mathrm{pos}_L(s) < (b+1)\,w\}

for position buckets of width ``w`` (default: a quarter of the pretraining length ``n``), and
``inside`` / ``beyond``: the mean over tokens at positions ``< n`` / ``>= n``. Since the tokens are
the same at every length, each of these means also has a paired **change** against the reference
length :math:`L_0` (the first length, 1x in the profiles), which removes what the tokens themselves
contribute:

.. math::  \mathrm{change}_A(L) = \frac{1}{|A|} \sum_{s \in A} \big(\ell_L(s) - \ell_{L_0}(s)\big)

with :math:`\ell_L(s)` the loss of token ``s`` at length ``L``. Each mean over a set ``A`` comes with
its standard error :math:`\sqrt{\hat\sigma^2_A / |A|}` (:math:`\hat\sigma^2_A`: the sample variance
of the per-token values; tokens treated as independent, which ignores tokens sharing a row).

A variant whose absolute PE has fewer than ``L`` positions (fully learnable APE with
``max_position_embeddings < L``) cannot encode the input; its record is
``{"status": "cannot run", "reason": <the error's line>}`` instead of a loss. Only that error is
caught; any other error propagates.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from pe_lib.errors import PositionOutOfRange
from pe_lib.training.mlm import MLMData, make_blocks, mask_tokens, step_seed
from pe_lib.training.optim import autocast

OK, CANNOT_RUN = "ok", "cannot run"
MASK_PURPOSE = 3  # step_seed purpose of the extrapolation masks (pretraining: 0 train, 1 dropout, 2 eval)
BATCH_TOKENS = 8192  # tokens per forward pass (rows = BATCH_TOKENS // L, at least 1)
BUCKETS_PER_LENGTH = 4  # default bucket width: pretraining length / 4


# ----------------------------------------------------------------------------- data


def validation_stream(data: MLMData, tokens: int, longest: int) -> np.ndarray:
    """The first ``tokens`` validation tokens as one stream (rows without [CLS]/[SEP]); a
    ValueError when there are fewer than one row of the ``longest`` length needs."""
    stream = data.validation[:, 1:-1].reshape(-1)  # (M * (n-2),)
    if len(stream) < longest - 2:
        raise ValueError(f"only {len(stream)} validation tokens: not enough for one row of {longest} tokens; "
                         "use shorter lengths or more validation text")
    return stream[:tokens]  # (T,)


def mask_stream(stream: np.ndarray, data: MLMData, prob: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(inputs, labels)`` of the stream with pretraining's masking rule (labels -100 where not
    selected), drawn once from ``step_seed(seed, 0, 0, MASK_PURPOSE)``."""
    generator = torch.Generator().manual_seed(step_seed(seed, 0, 0, MASK_PURPOSE))
    ids = torch.as_tensor(stream, dtype=torch.long)[None]  # (1, T)
    inputs, labels = mask_tokens(ids, data, prob, generator)  # (1, T), (1, T)
    return inputs[0].numpy(), labels[0].numpy()


def scored_prefix(n_tokens: int, lengths: Sequence[int]) -> int:
    """``P = min_L floor(T / (L-2)) (L-2)``: stream positions that every length puts in a full row."""
    return min((n_tokens // (length - 2)) * (length - 2) for length in lengths)


# ----------------------------------------------------------------------------- evaluation


@torch.no_grad()
def token_losses(model, inputs: np.ndarray, labels: np.ndarray, length: int, cls_id: int, sep_id: int,
                 bf16: bool = False, batch_tokens: int = BATCH_TOKENS) -> tuple[np.ndarray, np.ndarray]:
    """Cross-entropy and position of every scored token when the masked stream is cut into rows of
    ``length``, in stream order (the same order at every length); rows without a scored token
    are skipped."""
    device = next(model.parameters()).device
    rows = torch.as_tensor(make_blocks(inputs, length, cls_id, sep_id), dtype=torch.long)  # (N, L)
    targets = torch.as_tensor(make_blocks(labels, length, -100, -100), dtype=torch.long)  # (N, L)
    keep = (targets != -100).any(dim=1)  # (N,)
    rows, targets = rows[keep], targets[keep]  # (N', L)
    losses, positions = [], []
    per_batch = max(1, batch_tokens // length)
    for start in range(0, len(rows), per_batch):
        ids = rows[start : start + per_batch].to(device)  # (b, L)
        target = targets[start : start + per_batch].to(device)  # (b, L)
        selected = target != -100  # (b, L)
        with autocast(device, bf16):
            logits = model(input_ids=ids, labels=target, masked_only=True).logits  # (m, V), in the order of target[selected]
        losses.append(F.cross_entropy(logits.float(), target[selected], reduction="none").double().cpu())  # (m,)
        positions.append(selected.nonzero()[:, 1].cpu())  # (m,)
    return torch.cat(losses).numpy(), torch.cat(positions).numpy()  # (|S|,), (|S|,)


def mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """Mean and standard error ``sqrt(var / n)`` (sample variance, ``ddof=1``; NaN for one value)."""
    se = math.sqrt(values.var(ddof=1) / len(values)) if len(values) > 1 else math.nan
    return float(values.mean()), se


def loss_summary(losses: np.ndarray, positions: np.ndarray, reference: np.ndarray | None, train_length: int,
              bucket: int, length: int) -> dict:
    """Loss, perplexity, inside/beyond the pretraining length and per-bucket losses of one length
    from :func:`token_losses`; each part also has ``change``: the mean of ``loss - reference`` over
    the same tokens (``reference``: their losses at the reference length), with its standard error."""
    def part(where: np.ndarray) -> dict | None:
        if not where.any():
            return None
        loss, se = mean_and_se(losses[where])
        found = {"loss": loss, "se": se, "count": int(where.sum())}
        if reference is not None:
            found["change"], found["change_se"] = mean_and_se(losses[where] - reference[where])
        return found

    overall = part(np.ones(len(losses), dtype=bool))
    empty = {"loss": None, "se": None, "count": 0}
    buckets = [{"start": lo, "end": min(lo + bucket, length),
                **(part((positions >= lo) & (positions < lo + bucket)) or empty)} for lo in range(0, length, bucket)]
    return {**{k: v for k, v in overall.items() if k != "count"}, "perplexity": math.exp(overall["loss"]),
            "tokens": overall["count"], "inside": part(positions < train_length),
            "beyond": part(positions >= train_length), "buckets": buckets}


def length_extrapolation(model, data: MLMData, lengths: Sequence[int], tokens: int, *, seed: int = 0,
                         mask_prob: float = 0.15, train_length: int | None = None, bucket: int | None = None,
                         bf16: bool = False, batch_tokens: int = BATCH_TOKENS) -> dict:
    """MLM loss of ``model`` at each of ``lengths`` on the first ``tokens`` validation tokens of
    ``data`` (module docstring). ``train_length`` defaults to the rows' length (the pretraining
    length), ``bucket`` to a quarter of it; changes are relative to the first length (the
    reference, 1x in the profiles). Returns ``{"records": [one per length], ...}``; a record is
    ``{"length", "multiplier", "status": "ok", "loss", "se", "change", "change_se", "perplexity",
    "tokens", "inside", "beyond", "buckets"}`` or ``{"length", "multiplier", "status": "cannot run",
    "reason"}``."""
    train_length = train_length or data.validation.shape[1]
    bucket = bucket or max(1, train_length // BUCKETS_PER_LENGTH)
    if not lengths or min(lengths) < 3:
        raise ValueError(f"lengths must be a non-empty list of integers >= 3 ([CLS], a token, [SEP]), got {list(lengths)}")
    cls_id, sep_id = int(data.validation[0, 0]), int(data.validation[0, -1])
    stream = validation_stream(data, tokens, max(lengths))  # (T,)
    inputs, labels = mask_stream(stream, data, mask_prob, seed)  # (T,), (T,)
    labels[scored_prefix(len(stream), lengths):] = -100  # the same scored tokens at every length
    was_training = model.training
    model.eval()
    records, reference = [], None
    for i, length in enumerate(lengths):
        head = {"length": int(length), "multiplier": length / train_length}
        try:
            losses, positions = token_losses(model, inputs, labels, length, cls_id, sep_id, bf16, batch_tokens)
        except PositionOutOfRange as error:  # an absolute PE with too few positions
            records.append({**head, "status": CANNOT_RUN, "reason": str(error).splitlines()[0]})
            continue
        reference = losses if i == 0 else reference
        records.append({**head, "status": OK, **loss_summary(losses, positions, reference, train_length, bucket, length)})
    model.train(was_training)
    return {"records": records, "train_length": train_length, "bucket": bucket, "reference_length": int(lengths[0]),
            "stream_tokens": len(stream), "scored_tokens": int((labels != -100).sum()),
            "precision": "bf16" if bf16 else "fp32"}
