"""The data record beside the results: the stored results (``Results``, which only read) form the
same keys from it as the pipeline that computed them, and a chapter runs on it with an empty data
cache and no apt-get."""
import json
import os
import shutil
import stat

import dataclasses

import numpy as np
import pytest
from transformers import BertTokenizer

import pe_lib.data
from book.conftest import WORDS, fake_task
from pe_book.chapters import classification, common
from pe_book.experiments.profiles import SMOKE
from pe_book.experiments.runner import Runner
from pe_book.experiments.results import Results
from pe_book.experiments.stored_data import RECORD, record_data
from pe_lib.training.finetune import FinetuneConfig
from pe_lib.training.mlm import MLMData
from pe_lib.training.pretrain_config import PretrainConfig

TASKS = ["sst2"]


class DataRead(AssertionError):
    """Raised by every data loader here: a test that sees it read data it should not."""


def refuse(*args, **kwargs):
    raise DataRead("the data was read")


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    """A runner on a complete store of one tiny model (``none``, fine-tuned on sst2), computed from
    data given directly and the fixture task, with its data record (pe-book run's)."""
    root = tmp_path_factory.mktemp("stored-data")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ":", ".", "?", *WORDS]) + "\n")
    tokenizer = BertTokenizer(vocab=str(vocab))
    blocks = np.random.default_rng(0).integers(8, len(tokenizer), size=(16, 16))
    profile = dataclasses.replace(
        SMOKE, name="test", variants=("none",), tasks=tuple(TASKS), seeds=(0,), seeds_by_task={},
        model=dict(SMOKE.model, hidden_size=16, intermediate_size=32, num_hidden_layers=1),
        pretrain=PretrainConfig(steps=2, batch_size=4, log_every=1, eval_every=2, eval_batches=1, checkpoint_every=2,
                                precision="fp32"),
        finetune=FinetuneConfig(epochs=1, batch_size=8, lr=1e-3, max_seq_len=24, precision="fp32"),
        seq_len=16, probe={"length": 8, "n_words": 3}, extrapolation_multipliers=(1,), extrapolation_tokens=64)
    runner = Runner(profile, root / "results", root / "work", root / "cache", progress=False, tokenizer=tokenizer,
                    data=MLMData.for_tokenizer(tokenizer, blocks[:8], blocks[8:]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pe_lib.data, "load_task", fake_task)
        runner.run()
        record_data(runner, TASKS)
    return runner


@pytest.fixture
def recorded(computed, tmp_path, monkeypatch):
    """A copy of the computed store (data record included); then every data loader refuses, the
    data cache is an empty folder and ``apt-get`` exits 1."""
    shutil.copytree(computed.store.root.parent, tmp_path / "results")
    for loader in ("load_task", "load_corpus", "load_tokenizer"):
        monkeypatch.setattr(pe_lib.data, loader, refuse)
    shim = tmp_path / "bin" / "apt-get"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\nexit 1\n")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PE_LIB_CACHE", str(tmp_path / "empty-cache"))
    return tmp_path / "results"


def test_the_stored_results_form_the_pipelines_keys_from_the_record(computed, recorded, tmp_path):
    reader = Results(computed.profile, recorded, tmp_path / "work2", tmp_path / "empty-cache", progress=False)
    planned = reader.plan()
    assert [a.folder.relative_to(recorded) for a in planned] == [
        a.folder.relative_to(computed.store.root.parent) for a in computed.plan()]
    assert all(a.stored for a in planned)
    assert not (tmp_path / "empty-cache" / "prepared").exists()


def test_a_chapter_runs_from_the_record_with_no_data(computed, recorded, monkeypatch):
    monkeypatch.setattr(common, "get_profile", lambda name: computed.profile)
    stored = common.open_results("test", str(recorded))
    assert classification.compute(stored).cited
    table = common.data_used({"profile": "test"}, stored, TASKS)
    assert table.loc["data: task sst2", "value"] == "fixture"
    assert table.loc["data: pretraining text", "value"].startswith("text given directly")


def test_a_record_of_other_data_settings_is_not_read(computed, recorded, tmp_path):
    other = dataclasses.replace(computed.profile, seq_len=computed.profile.seq_len * 2)
    with pytest.raises(DataRead):
        Results(other, recorded, tmp_path / "work2", tmp_path / "empty-cache", progress=False).plan()


def test_a_damaged_record_is_named_and_not_read(computed, recorded, tmp_path):
    facts = recorded / "test" / RECORD / "data.json"
    facts.write_text(json.dumps({**json.loads(facts.read_text()), "data": {}}))
    with pytest.warns(UserWarning, match="damaged data record"), pytest.raises(DataRead):
        Results(computed.profile, recorded, tmp_path / "work2", tmp_path / "empty-cache", progress=False).plan()


@pytest.mark.parametrize("cap, reads", [(None, False), (10_000, False), (8, True)], ids=["no-cap", "cap-above", "cap-binding"])
def test_another_profiles_record_beside_it_gives_a_task_of_the_same_rows(computed, recorded, tmp_path, cap, reads):
    """A cap at or above the task's 16 training examples leaves the recorded rows, hence the recorded fingerprint."""
    other = dataclasses.replace(computed.profile, name="other", task_max_train=cap)
    reader = Results(other, recorded, tmp_path / "work2", tmp_path / "empty-cache", progress=False)
    assert reader.data_fingerprint() == computed.data_fingerprint()
    if reads:
        with pytest.raises(DataRead):
            reader.task_fingerprint("sst2")
    else:
        assert reader.task_fingerprint("sst2") == computed.task_fingerprint("sst2")
        assert len(reader.task("sst2").splits["train"]) == 16


def test_a_record_the_data_contradicts_is_named_stale(computed, tmp_path, monkeypatch):
    """`run --dry-run --check` (check-keys, on freshly prepared data) names a record whose fingerprints
    are not the data's: a book would find artifacts that this data's keys no longer name."""
    from pe_book.experiments.stored_data import record_differences

    monkeypatch.setattr(pe_lib.data, "load_task", fake_task)
    assert record_differences(computed) == []
    other_blocks = np.random.default_rng(1).integers(8, len(computed.tokenizer), size=(16, 16))
    other = Runner(computed.profile, computed.store.root.parent, tmp_path / "work", tmp_path / "cache", progress=False,
                   tokenizer=computed.tokenizer, data=MLMData.for_tokenizer(computed.tokenizer, other_blocks[:8], other_blocks[8:]))
    assert record_differences(other) == ["the pretraining data"]
