"""Fixtures shared by the fault tests."""
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from transformers import BertTokenizer

from pe_book.experiments.profiles import SMOKE
from pe_book.experiments.runner import Runner
from pe_lib.training.pretrain_config import PretrainConfig

WORDS = "good bad film plot the was a cat dog sat".split()


@pytest.fixture
def runner(tmp_path, monkeypatch):
    """A tiny runner whose token blocks come from a fixed corpus (so they are cached on disk)."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(WORDS, 14)) for _ in range(40)]
    monkeypatch.setattr(Runner, "corpus", SimpleNamespace(folder=tmp_path / "corpus-test", origin="test", lines=lambda split: lines))
    profile = dataclasses.replace(
        SMOKE, name="test", variants=("ape-learned",), model=dict(SMOKE.model, hidden_size=16, intermediate_size=32),
        pretrain=PretrainConfig(steps=2, batch_size=4, log_every=1, eval_every=2, eval_batches=1, checkpoint_every=2,
                                precision="fp32"),
        seq_len=16, corpus_tokens=None)
    return lambda **fields: Runner(dataclasses.replace(profile, **fields), tmp_path / "results", tmp_path / "work",
                                   progress=False, tokenizer=BertTokenizer(vocab=str(vocab)))
