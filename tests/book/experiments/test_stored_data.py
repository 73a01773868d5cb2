"""The data record beside the results: the stored results (``Results``, which only read) form the
same keys from it as the pipeline that computed them, and a chapter runs on it with an empty data
cache and no apt-get."""
import json
import os
import shutil
import stat
from pathlib import Path

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
from pe_book.experiments.stored_data import RECORD, record_data, recorded_tasks
from pe_lib.training.finetune import FinetuneConfig
from pe_lib.training.mlm import MLMData
from pe_lib.training.pretrain_config import PretrainConfig

TASKS = ["sst2"]
ROOT = Path(__file__).resolve().parents[3]


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


def test_a_records_tasks_are_the_profiles_then_its_recorded_tasks(computed):
    profile = dataclasses.replace(computed.profile, tasks=("sst2", "cola"), recorded_tasks=("cola", "squad"))
    assert recorded_tasks(profile) == ["sst2", "cola", "squad"]
    assert recorded_tasks(computed.profile) == ["sst2"]


def test_a_task_recorded_beside_a_profiles_own_gives_another_profile_its_rows(computed, recorded, tmp_path, monkeypatch):
    """A profile's recorded task (one a chapter reads under its recipe, not one it runs) is read from
    its record by another profile of the same caps, with no data; without it, that task's data is read."""
    other = dataclasses.replace(computed.profile, name="other", tasks=("sst2", "cola"))
    with pytest.raises(DataRead):
        Results(other, recorded, tmp_path / "work2", tmp_path / "empty-cache", progress=False).task_fingerprint("cola")
    with_cola = dataclasses.replace(computed.profile, recorded_tasks=("cola",))
    monkeypatch.setattr(pe_lib.data, "load_task", fake_task)
    writer = Runner(with_cola, recorded, tmp_path / "work", tmp_path / "cache", progress=False,
                    tokenizer=computed.tokenizer, data=computed._data)
    record_data(writer, recorded_tasks(with_cola))
    expected = writer.task_fingerprint("cola")
    monkeypatch.setattr(pe_lib.data, "load_task", refuse)
    reader = Results(other, recorded, tmp_path / "work2", tmp_path / "empty-cache", progress=False)
    assert reader.task_fingerprint("cola") == expected and reader.task_fingerprint("sst2") == computed.task_fingerprint("sst2")
    assert len(reader.task("cola").splits["train"]) == 16


def test_the_committed_records_hold_what_chapter_13_prices(tmp_path, monkeypatch):
    """Chapter 13 prices the cpu-glue profile under the scale study's recipe at each budget (its
    tasks under the study's caps: squad at 10,000 examples, which cpu-glue's own record, at 2,000,
    does not give): the committed records give all of it with an empty data cache and no loader."""
    from pe_book.chapters import scale
    from pe_book.experiments.profiles import CPU_GLUE, SCALE

    for loader in ("load_task", "load_corpus", "load_tokenizer"):
        monkeypatch.setattr(pe_lib.data, loader, refuse)
    study = Results(SCALE, ROOT / "results", tmp_path / "work", tmp_path / "empty-cache", progress=False)
    table = scale.cpu_costs(study, CPU_GLUE)
    assert list(table["steps"]) == list(SCALE.pretrain.budgets)
    assert (table["total (h)"] > 0).all()
