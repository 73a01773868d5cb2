"""The corpus (packaged and hub paths) and the tokenizers, on the fake sources."""
from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from transformers import AutoTokenizer, BertTokenizer

from pe_lib.data import corpus as corpus_module
from pe_lib.data.corpus import (load_corpus, packaged_corpus, split_documents, wikitext_documents)
from pe_lib.data.readers import Document
from pe_lib.data.tokenizer import SPECIAL_TOKENS, load_tokenizer, tokenize, train_wordpiece


def _docs(n: int) -> list[Document]:
    return [Document("s", f"d{i}", (f"paragraph of document {i} with words",)) for i in range(n)]


def test_split_is_deterministic_and_by_document() -> None:
    train, validation = split_documents(_docs(400))
    again_train, again_validation = split_documents(list(reversed(_docs(400))))
    assert {d.doc_id for d in validation} == {d.doc_id for d in again_validation}
    assert 5 <= len(validation) <= 40 and len(train) + len(validation) == 400
    with pytest.raises(ValueError, match="empty"):
        split_documents(_docs(1))


def test_packaged_corpus_files_card_and_reuse(fake_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = packaged_corpus(fake_cache, min_words=1000)
    card = json.loads((corpus.folder / "card.json").read_text())
    assert (corpus.folder / "card.md").read_text().startswith("# Corpus (packaged)")
    train_words = sum(len(line.split()) for line in corpus.lines("train"))
    assert card["train"]["words"] == train_words > 0 and card["validation"]["words"] > 0
    assert card["total_words"] == sum(v["train"]["words"] + v["validation"]["words"] for v in card["sources"].values())
    assert card["sources"]["wordnet"]["licence"].startswith("WordNet")
    docs = list(corpus.documents("validation"))
    assert len(docs) == card["validation"]["documents"]
    monkeypatch.setattr(corpus_module, "packaged_documents", lambda *a, **k: pytest.fail("rebuilt"))
    assert packaged_corpus(fake_cache, min_words=1000).folder == corpus.folder


def test_packaged_corpus_key_follows_source_versions(fake_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = packaged_corpus(fake_cache, min_words=1000).folder
    monkeypatch.setattr(corpus_module, "BUILD_VERSION", corpus_module.BUILD_VERSION + 1)
    assert packaged_corpus(fake_cache, min_words=1000).folder != first


def test_too_small_corpus_is_refused(fake_cache: Path) -> None:
    with pytest.raises(ValueError, match="fewer than"):
        packaged_corpus(fake_cache, min_words=10**9)


def test_wikitext_conversion() -> None:
    lines = ["", " = Valkyria = \n", "", " Senjō no Valkyria 3 is a game . \n", " = = Gameplay = = \n",
             " It plays well . \n", " = Tower Building = \n", " The tower is tall . \n"]
    docs = wikitext_documents(lines)
    assert [(d.doc_id, d.paragraphs) for d in docs] == [
        ("Valkyria", ("Senjō no Valkyria 3 is a game .", "It plays well .")),
        ("Tower Building", ("The tower is tall .",))]


def test_hub_corpus_path_with_local_dataset(fake_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = [" = A = ", " first article line . ", " = B = ", " second article line . "]
    local = datasets.DatasetDict(train=datasets.Dataset.from_dict({"text": text * 3}),
                                 validation=datasets.Dataset.from_dict({"text": text}),
                                 test=datasets.Dataset.from_dict({"text": text}))
    seen: list[tuple[str, str]] = []
    monkeypatch.setattr(datasets, "load_dataset", lambda hub_id, config, revision=None: seen.append((hub_id, config)) or local)
    corpus = load_corpus(source="hub", cache_dir=fake_cache)
    assert seen == [("Salesforce/wikitext", "wikitext-103-raw-v1")]
    assert corpus.origin == "hub:Salesforce/wikitext (wikitext-103-raw-v1)"
    assert list(corpus.lines("validation")) == ["first article line .", "second article line ."]
    assert corpus.card["validation"]["documents"] == 2


def test_auto_offline_uses_packaged(fake_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("hub called while offline"))
    monkeypatch.setattr(corpus_module, "MIN_PACKAGED_WORDS", 1000)
    assert load_corpus(cache_dir=fake_cache).origin == "packaged"


def test_auto_falls_back_with_a_warning_when_the_hub_fails(fake_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE")

    def unreachable(*args: object, **kwargs: object) -> None:
        raise ConnectionError("hub unreachable")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    monkeypatch.setattr(corpus_module, "MIN_PACKAGED_WORDS", 1000)
    with pytest.warns(UserWarning, match="hub source Salesforce/wikitext .*ConnectionError"):
        assert load_corpus(cache_dir=fake_cache).origin == "packaged"


def test_train_wordpiece_special_tokens_first() -> None:
    lines = ["the quick brown fox jumps over the lazy dog"] * 50 + ["positional embeddings in bert"] * 50
    tok = train_wordpiece(lines, vocab_size=120)
    assert [tok.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        train_wordpiece(lines, vocab_size=3)


def test_tokenize_concatenates_lines_and_stops_at_the_cap(tmp_path: Path) -> None:
    (tmp_path / "vocab.txt").write_text("\n".join([*SPECIAL_TOKENS, "the", "cat", "sat"]) + "\n")
    tok = BertTokenizer(vocab=str(tmp_path / "vocab.txt"))
    lines = ["the cat", "sat", "the cat sat"]
    assert tokenize(tok, lines, batch=2).tolist() == [5, 6, 7, 5, 6, 7]
    assert tokenize(tok, lines, max_tokens=4, batch=2).tolist() == [5, 6, 7, 5]
    read = []
    tokenize(tok, (read.append(line) or line for line in lines), max_tokens=2, batch=2)
    assert read == ["the cat", "sat"], "no line past the batch that reaches the cap"


def test_prepared_tokenizer_reloads_as_hf_fast_tokenizer(prepared_cache: Path) -> None:
    tok = load_tokenizer("wordpiece", vocab_size=300, source="packaged", cache_dir=prepared_cache)
    assert isinstance(tok, BertTokenizer) and tok.is_fast and len(tok) == 300
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id) == (0, 1, 2, 3, 4)
    folder = Path(tok.name_or_path)
    auto = AutoTokenizer.from_pretrained(folder)
    text = "The Quiet River crossed the distant garden."
    assert auto(text).input_ids == tok(text).input_ids
    assert tok(text).input_ids[0] == 2 and tok(text).input_ids[-1] == 3
    assert tok.decode(tok(text).input_ids, skip_special_tokens=True) == text.lower()
    card = json.loads((folder / "card.json").read_text())
    assert card["corpus_tokens"]["train"] > card["corpus_words"]["train"] > 0


def test_bert_base_uncased_vocab_from_package(fake_cache: Path) -> None:
    tok = load_tokenizer("bert-base-uncased", source="packaged", cache_dir=fake_cache)
    assert len(tok) == 11 and tok.pad_token_id == 0
    assert tok.convert_ids_to_tokens(tok("The rivers").input_ids) == ["[CLS]", "the", "river", "##s", "[SEP]"]


def test_unknown_tokenizer_kind(fake_cache: Path) -> None:
    with pytest.raises(ValueError, match="valid kinds: wordpiece, bert-base-uncased"):
        load_tokenizer("gpt2", cache_dir=fake_cache)


_TRAIN_IN_A_FRESH_PROCESS = """
import sys
from pe_lib.data import corpus as corpus_module
from pe_lib.data.tokenizer import prepare_wordpiece
corpus_module.MIN_PACKAGED_WORDS = 1000
folder = prepare_wordpiece(corpus_module.packaged_corpus(sys.argv[1]), 300, sys.argv[1])
print(folder)
"""


def test_tokenizer_files_are_identical_across_processes(fake_cache_template: Path, tmp_path: Path) -> None:
    """Two processes (two Rust hash seeds) train on the same corpus and write byte-identical files.
    The fake corpus has many characters of equal frequency, the ties the trainer orders at random."""
    import shutil
    import subprocess
    import sys

    folders = []
    for run in ("a", "b"):
        cache = tmp_path / run
        shutil.copytree(fake_cache_template, cache)
        out = subprocess.run([sys.executable, "-c", _TRAIN_IN_A_FRESH_PROCESS, str(cache)], capture_output=True,
                             text=True, check=True)
        folders.append(Path(out.stdout.strip().splitlines()[-1]))
    assert folders[0].name == folders[1].name
    names = sorted(p.name for p in folders[0].iterdir())
    assert names == sorted(p.name for p in folders[1].iterdir()) and "vocab.txt" in names
    for name in names:
        assert (folders[0] / name).read_bytes() == (folders[1] / name).read_bytes(), name


def test_wordpiece_breaks_ties_by_symbol() -> None:
    """Pairs of equal count merge smallest first; a pair below min_frequency never merges."""
    from collections import Counter

    from pe_lib.data.wordpiece import train_vocabulary

    vocab = train_vocabulary(Counter({"ab": 3, "cd": 3, "ef": 1}), 20, SPECIAL_TOKENS)
    assert vocab == [*SPECIAL_TOKENS, "##b", "##d", "##f", "a", "c", "e", "ab", "cd"]
    assert train_vocabulary(Counter({"ab": 3, "cd": 3}), 10, SPECIAL_TOKENS)[-1] == "ab"
