"""Prepared data (corpus, tokenizer, task files) carries a sha256 manifest: a damaged file is
reported by name and the folder rebuilt; a full disk is one clear error leaving no temporary."""
import errno
import warnings
from pathlib import Path

import pytest

from pe_lib.data import corpus as corpus_module
from pe_lib.data.corpus import packaged_corpus
from pe_lib.data.tasks import load_task, packaged_folder
from pe_lib.data.tokenizer import load_tokenizer
from pe_lib.errors import DiskFullError


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.fixture
def small_corpus(monkeypatch):
    monkeypatch.setattr(corpus_module, "MIN_PACKAGED_WORDS", 1000)


def test_a_truncated_task_file_is_reported_and_rebuilt(fake_cache, small_corpus):
    first = load_task("sst2", "packaged", fake_cache, max_train=None)
    train = packaged_folder("sst2", fake_cache) / "train.jsonl"
    truncate(train)
    with pytest.warns(UserWarning, match=rf"ignoring corrupt prepared task 'sst2': {train} fails its sha256 check"):
        again = load_task("sst2", "packaged", fake_cache, max_train=None)
    assert again.splits["train"].to_list() == first.splits["train"].to_list()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_task("sst2", "packaged", fake_cache, max_train=None)


def test_a_damaged_corpus_and_tokenizer_are_reported_and_rebuilt(fake_cache, small_corpus):
    corpus = packaged_corpus(fake_cache)
    text = corpus.path("train").read_text()
    tok = load_tokenizer("wordpiece", 300, "packaged", fake_cache)
    corpus.path("train").write_text(text.replace("e", "o", 1))  # one changed letter
    with pytest.warns(UserWarning, match=rf"ignoring corrupt prepared corpus: {corpus.path('train')} fails its sha256"):
        assert packaged_corpus(fake_cache).path("train").read_text() == text
    vocab = Path(tok.name_or_path) / "vocab.txt"
    truncate(vocab)
    with pytest.warns(UserWarning, match=rf"ignoring corrupt prepared tokenizer: {vocab} fails its sha256"):
        assert load_tokenizer("wordpiece", 300, "packaged", fake_cache).get_vocab() == tok.get_vocab()


def test_a_full_disk_while_preparing_the_corpus(fake_cache, small_corpus, monkeypatch):
    def full(path, docs):
        path.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(corpus_module, "_write_split", full)
    with pytest.raises(DiskFullError, match=rf"^disk full while writing prepared corpus {fake_cache}/prepared/corpus-packaged-\w+; "
                                            "nothing half-written was kept"):
        packaged_corpus(fake_cache)
    assert [p.name for p in (fake_cache / "prepared").iterdir()] == []
