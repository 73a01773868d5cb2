"""Tokenizers: a WordPiece vocabulary trained on the corpus, or the bert-base-uncased vocabulary.

Both load as a transformers ``BertTokenizer`` (the fast, ``tokenizers``-backed class in
transformers 5) with the BERT special tokens ``[PAD]=0, [UNK], [CLS], [SEP], [MASK]`` and
lower-casing. A trained tokenizer is saved with ``save_pretrained`` under
``<cache>/prepared/tokenizer-wordpiece<size>-<key>/``, keyed by the corpus and library versions,
so ``BertTokenizer.from_pretrained(folder)`` (or ``AutoTokenizer``) reloads it anywhere.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import tokenizers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
from tqdm.auto import tqdm
from transformers import BertTokenizer

from pe_lib.data.cache import cache_root, content_key, read_json
from pe_lib.data.cards import write_card
from pe_lib.data.corpus import Corpus, load_corpus
from pe_lib.data.hub import check_source_choice, hub_or_packaged
from pe_lib.data.sources import get_source, source_dir
from pe_lib.data.wordpiece import train_vocabulary, word_counts
from pe_lib.io import manifested_dir, verified

DEFAULT_VOCAB_SIZE = 8192
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
KINDS = ("wordpiece", "bert-base-uncased")
BUILD_VERSION = 2  # 2: pe_lib.data.wordpiece's deterministic trainer
_BATCH = 2048


def _batches(lines: Iterable[str], size: int = _BATCH) -> Iterator[list[str]]:
    iterator = iter(lines)
    while batch := list(islice(iterator, size)):
        yield batch


def train_wordpiece(lines: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE, min_frequency: int = 2,
                    progress: bool = True) -> Tokenizer:
    """A lower-casing BERT WordPiece tokenizer trained on ``lines`` (special tokens take ids 0-4).

    The vocabulary comes from :func:`pe_lib.data.wordpiece.train_vocabulary`, which breaks every
    tie by the symbols themselves: the same lines give the same files on every machine and run
    (``tokenizers``' own trainer does not, see that module)."""
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size must exceed {len(SPECIAL_TOKENS)}, got {vocab_size}")
    normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=None, clean_text=True,
                                            handle_chinese_chars=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    counts = word_counts(tqdm(lines, desc="counting words", unit="line", disable=not progress), normalizer, pre_tokenizer)
    vocab = train_vocabulary(counts, vocab_size, SPECIAL_TOKENS, min_frequency)
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def as_bert_tokenizer(vocab_path: Path) -> BertTokenizer:
    """A transformers BertTokenizer over a ``vocab.txt`` (``vocab=`` is the argument transformers 5 honours)."""
    tok = BertTokenizer(vocab=str(vocab_path), do_lower_case=True)
    if len(tok) < len(SPECIAL_TOKENS) or tok.unk_token_id is None or tok.pad_token_id is None:
        raise ValueError(f"{vocab_path} is not a BERT vocabulary (len {len(tok)})")
    return tok


def count_tokens(tok: BertTokenizer, lines: Iterable[str]) -> int:
    """Number of WordPiece tokens (no special tokens) in ``lines``."""
    backend: Tokenizer = tok.backend_tokenizer
    return sum(len(enc.ids) for batch in _batches(lines)
               for enc in backend.encode_batch(batch, add_special_tokens=False))


def tokenize(tok: BertTokenizer, lines: Iterable[str], max_tokens: int | None = None, batch: int = 1000) -> np.ndarray:
    """Concatenated token ids (int32, no special tokens) of ``lines``, encoded ``batch`` lines at a
    time; with ``max_tokens``, the first ``max_tokens`` of them (no line is read past the batch
    that reaches them)."""
    pieces, total = [], 0
    for chunk in _batches(lines, batch):
        encoded = tok(chunk, add_special_tokens=False)["input_ids"]
        pieces.append(np.fromiter((t for ids in encoded for t in ids), dtype=np.int32))
        total += len(pieces[-1])
        if max_tokens is not None and total >= max_tokens:
            break
    ids = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    return ids[:max_tokens] if max_tokens is not None else ids


def _wordpiece_folder(corpus: Corpus, vocab_size: int, root: Path) -> Path:
    key = content_key({"corpus": corpus.folder.name, "vocab_size": vocab_size, "tokenizers": tokenizers.__version__,
                       "version": BUILD_VERSION})
    return root / "prepared" / f"tokenizer-wordpiece{vocab_size}-{key}"


def prepare_wordpiece(corpus: Corpus, vocab_size: int = DEFAULT_VOCAB_SIZE,
                      cache_dir: str | os.PathLike[str] | None = None, progress: bool = True) -> Path:
    """Train (once) and save a WordPiece tokenizer on the corpus train split; return its folder."""
    root = cache_root(cache_dir)
    folder = _wordpiece_folder(corpus, vocab_size, root)
    if verified(folder, "prepared tokenizer"):  # absent, or corrupt (reported): built again
        return folder
    trained = train_wordpiece(corpus.lines("train"), vocab_size, progress=progress)
    with manifested_dir(folder, "prepared tokenizer") as work:
        vocab = sorted(trained.get_vocab().items(), key=lambda item: item[1])
        (work / "vocab.txt").write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")
        tok = as_bert_tokenizer(work / "vocab.txt")
        tok.save_pretrained(work)
        tokens = {split: count_tokens(tok, tqdm(corpus.lines(split), desc=f"counting {split} tokens", unit="line",
                                                disable=not progress))
                  for split in ("train", "validation")}
        write_card(work, tokenizer_card("wordpiece", tok, corpus, tokens), title=f"WordPiece tokenizer ({vocab_size})")
    return folder


def tokenizer_card(kind: str, tok: BertTokenizer, corpus: Corpus | None, tokens: dict[str, int]) -> dict[str, Any]:
    """Vocabulary, special-token ids and the corpus size in tokens."""
    card: dict[str, Any] = {
        "kind": kind, "vocab_size": len(tok), "lowercase": True,
        "special_tokens": {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS},
        "tokenizers_version": tokenizers.__version__,
    }
    if corpus is not None:
        words = {s: corpus.card[s]["words"] for s in ("train", "validation")}
        card |= {"origin": f"trained on the {corpus.origin} corpus",
                 "trained_on": f"{corpus.folder.name} (train split)",
                 "corpus_tokens": tokens, "corpus_words": words,
                 "tokens_per_word": round(sum(tokens.values()) / max(1, sum(words.values())), 4)}
    return card


def _bert_base_uncased(source: str, cache_dir: str | os.PathLike[str] | None) -> BertTokenizer:
    src = get_source("bert-vocab")

    def packaged() -> BertTokenizer:
        return as_bert_tokenizer(source_dir(src.name, cache_dir) / src.members[0])

    def hub() -> BertTokenizer:
        return BertTokenizer.from_pretrained(get_source("bert-base-uncased").hub_id)

    tok, _ = hub_or_packaged("tokenizer bert-base-uncased", get_source("bert-base-uncased"), hub, packaged, source)
    return tok


def load_tokenizer(kind: str = "wordpiece", vocab_size: int = DEFAULT_VOCAB_SIZE, source: str = "auto",
                   cache_dir: str | os.PathLike[str] | None = None, corpus: Corpus | None = None,
                   progress: bool = True) -> BertTokenizer:
    """A BERT tokenizer: ``wordpiece`` (trained on the corpus, ``vocab_size`` entries) or ``bert-base-uncased``.

    ``source`` picks the corpus (wordpiece) or the vocabulary (bert-base-uncased): hub first with
    ``auto``, or forced with ``hub`` / ``packaged``. Pass ``corpus`` to train on a given corpus;
    ``progress=False`` hides the progress bars of preparing the corpus and training the tokenizer.
    """
    check_source_choice(source)
    if kind == "bert-base-uncased":
        return _bert_base_uncased(source, cache_dir)
    if kind != "wordpiece":
        raise ValueError(f"unknown tokenizer kind {kind!r}; valid kinds: {', '.join(KINDS)}")
    corpus = corpus if corpus is not None else load_corpus(source, cache_dir, progress=progress)
    folder = prepare_wordpiece(corpus, vocab_size, cache_dir, progress=progress)
    return BertTokenizer.from_pretrained(folder)


def tokenizer_info(folder: Path) -> dict[str, Any]:
    """The data card of a prepared tokenizer folder."""
    return read_json(folder / "card.json")
