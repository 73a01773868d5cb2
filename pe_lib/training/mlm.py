"""The masked-language-model objective (Devlin et al. 2019): token blocks, batches, masks and the
validation loss.

15% of the non-special tokens are selected; of those 80% become [MASK], 10% a random token, 10%
stay; the loss is the cross-entropy at the selected positions. Everything random is a pure function
of integers: the batch rows of a step come from a per-epoch permutation seeded by ``(seed, epoch)``,
and the masks from a generator seeded by :func:`step_seed`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from pe_lib.errors import InputError
from pe_lib.training.optim import autocast
from pe_lib.training.pretrain_config import PretrainConfig


@dataclass
class MLMData:
    """Fixed-length token blocks for MLM: rows of ``[CLS] ... [SEP]`` token ids."""

    train: np.ndarray  # (N, n) integer token ids
    validation: np.ndarray  # (M, n)
    vocab_size: int
    mask_id: int
    special_ids: tuple[int, ...]  # never selected for masking, never drawn as random replacements

    def __post_init__(self):
        for name in ("train", "validation"):
            rows = getattr(self, name)
            if rows.ndim != 2 or len(rows) == 0:
                raise InputError(f"MLMData.{name} must be a non-empty (rows, seq_len) array, got shape {rows.shape}")
        if int(self.train.max()) >= self.vocab_size:
            raise InputError(f"token id {int(self.train.max())} >= vocab_size {self.vocab_size}: tokenizer and model disagree")

    @property
    def seq_len(self) -> int:
        return self.train.shape[1]

    @classmethod
    def for_tokenizer(cls, tokenizer, train: np.ndarray, validation: np.ndarray) -> MLMData:
        """Blocks made with a HF tokenizer: its size, [MASK] and special tokens."""
        return cls(train, validation, len(tokenizer), tokenizer.mask_token_id, tuple(tokenizer.all_special_ids))


def make_blocks(token_ids: np.ndarray, seq_len: int, cls_id: int, sep_id: int) -> np.ndarray:
    """Cut a token stream into rows ``[CLS] t_1 .. t_{n-2} [SEP]`` (the ragged tail is dropped)."""
    body = seq_len - 2
    n_rows = len(token_ids) // body
    if n_rows == 0:
        raise InputError(f"only {len(token_ids)} tokens: not enough for one block of {seq_len}; give a longer corpus")
    rows = np.asarray(token_ids[: n_rows * body]).reshape(n_rows, body)  # (N, n-2)
    cls = np.full((n_rows, 1), cls_id, dtype=rows.dtype)
    sep = np.full((n_rows, 1), sep_id, dtype=rows.dtype)
    return np.concatenate([cls, rows, sep], axis=1)  # (N, n)


def text_blocks(tokenizer, lines, seq_len: int, max_tokens: int | None = None) -> np.ndarray:
    """``[CLS] ... [SEP]`` blocks of ``seq_len`` tokens from lines of text (at most ``max_tokens``
    tokens of them: :func:`pe_lib.data.tokenizer.tokenize`)."""
    from pe_lib.data.tokenizer import tokenize

    return make_blocks(tokenize(tokenizer, lines, max_tokens), seq_len, tokenizer.cls_token_id, tokenizer.sep_token_id)


def step_seed(*parts: int) -> int:
    """A 63-bit seed derived from non-negative integers such as (seed, step, rank, purpose)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def batch_rows(n_rows: int, batch_size: int, step: int, seed: int) -> np.ndarray:
    """Row indices of global batch ``step``: consecutive slices of a per-epoch seeded permutation."""
    per_epoch = n_rows // batch_size
    if per_epoch == 0:
        raise InputError(f"{n_rows} training rows are fewer than one batch of {batch_size}; "
                         "give a longer corpus or a smaller batch size")
    epoch, i = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(n_rows)
    return order[i * batch_size : (i + 1) * batch_size]


def mask_tokens(ids: torch.Tensor, data: MLMData, prob: float, generator: torch.Generator):
    """BERT's 80/10/10 masking: returns ``(inputs, labels)``, labels -100 where not selected."""
    special = torch.isin(ids, torch.tensor(data.special_ids))  # (B, n)
    selected = (torch.rand(ids.shape, generator=generator) < prob) & ~special  # (B, n)
    if not selected.any():  # keep the loss defined on tiny batches
        selected[0, 1] = True
    labels = torch.where(selected, ids, torch.full_like(ids, -100))  # (B, n)
    choice = torch.rand(ids.shape, generator=generator)  # (B, n)
    allowed = torch.tensor(sorted(set(range(data.vocab_size)) - set(data.special_ids)))
    random_tokens = allowed[torch.randint(len(allowed), ids.shape, generator=generator)]  # (B, n)
    inputs = torch.where(selected & (choice < 0.8), torch.full_like(ids, data.mask_id), ids)
    inputs = torch.where(selected & (choice >= 0.8) & (choice < 0.9), random_tokens, inputs)  # (B, n)
    return inputs, labels


@torch.no_grad()
def evaluate(model, data: MLMData, cfg: PretrainConfig, device, bf16: bool) -> float:
    """Validation MLM loss on fixed rows with fixed masks, drawn from seed 0 whatever the run's
    seed: comparable across runs, pretraining seeds and variants."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for i in range(min(cfg.eval_batches, math.ceil(len(data.validation) / cfg.batch_size))):
        ids = torch.as_tensor(data.validation[i * cfg.batch_size : (i + 1) * cfg.batch_size], dtype=torch.long)
        inputs, labels = mask_tokens(ids, data, cfg.mask_prob, torch.Generator().manual_seed(step_seed(0, i, 0, 2)))
        with autocast(device, bf16):
            loss = model(input_ids=inputs.to(device), labels=labels.to(device), masked_only=True).loss
        n = int((labels != -100).sum())
        total, count = total + float(loss) * n, count + n
    model.train(was_training)
    return total / count
