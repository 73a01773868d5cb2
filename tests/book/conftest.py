"""A tiny fixture store for the chapters' compute functions and the README headline: five
variants of a 2-layer model of hidden size 16, pretrained for 4 steps on random blocks, fine-tuned
on a sentence task and a span task (two seeds each), with their analyses, extrapolations and
baselines; computed once per session."""
import dataclasses

import numpy as np
import pytest
from datasets import Dataset, DatasetDict
from transformers import BertTokenizer

import pe_lib.data
from pe_book.experiments.profiles import SMOKE
from pe_book.experiments.runner import Runner
from pe_lib.data.tasks import TASKS, Task
from pe_lib.training.finetune import FinetuneConfig
from pe_lib.training.mlm import MLMData
from pe_lib.training.pretrain_config import PretrainConfig

WORDS = "good bad film plot the was a cat dog sat on mat which word means".split()
VARIANTS = ("none", "ape-learned", "ape-sin-learned", "rpe-learned", "rpe-learned+untie-cls")
CONTEXT = "cat: a dog sat. dog: a cat sat on the mat. mat: the film."


def sentiment(n: int, offset: int = 0) -> Dataset:
    return Dataset.from_list([{"sentence1": f"the film was {'good' if (i + offset) % 2 else 'bad'}", "label": (i + offset) % 2}
                              for i in range(n)])


def spans(n: int, offset: int = 0) -> Dataset:
    return Dataset.from_list([{"id": f"q{i + offset}", "title": "t", "context": CONTEXT, "question": "which word means a cat sat on the mat?",
                               "answers": {"text": ["dog"], "answer_start": [16]}} for i in range(n)])


def fake_task(name, source, cache_dir, max_train):
    make = spans if TASKS[name].meta.kind == "span" else sentiment
    return Task(TASKS[name].meta, DatasetDict({"train": make(16), "validation": make(4, 16), "test": make(4, 20)}), "fixture")


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """A :class:`Runner` on a complete tiny store (``runner.run()`` done); its profile is ``"test"``."""
    root = tmp_path_factory.mktemp("chapters")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ":", ".", "?", *WORDS]) + "\n")
    tokenizer = BertTokenizer(vocab=str(vocab))
    rng = np.random.default_rng(0)
    blocks = rng.integers(8, len(tokenizer), size=(16, 16))
    blocks[:, 0], blocks[:, -1] = tokenizer.cls_token_id, tokenizer.sep_token_id
    profile = dataclasses.replace(
        SMOKE, name="test", variants=VARIANTS, tasks=("sst2", "squad"), seeds=(0, 1),
        model=dict(SMOKE.model, hidden_size=16, intermediate_size=32),
        pretrain=PretrainConfig(steps=4, batch_size=4, log_every=1, eval_every=2, eval_batches=1, checkpoint_every=2,
                                precision="fp32"),
        finetune=FinetuneConfig(epochs=1, batch_size=8, lr=1e-3, max_seq_len=24, doc_stride=4, max_question_len=12,
                                precision="fp32"),
        seq_len=16, probe={"length": 8, "n_words": 3},
    )
    runner = Runner(profile, root / "results", root / "work", root / "cache", progress=False, tokenizer=tokenizer,
                    data=MLMData.for_tokenizer(tokenizer, blocks[:8], blocks[8:]))
    with pytest.MonkeyPatch.context() as patch:  # the runner keeps the tasks it loaded
        patch.setattr(pe_lib.data, "load_task", fake_task)
        runner.run()
    return runner
