"""A deterministic WordPiece vocabulary trainer: the same corpus gives the same vocabulary on every
machine and every run.

``tokenizers``' ``WordPieceTrainer`` (a BPE trainer underneath) breaks ties between symbols and
pairs of equal frequency in the order of a Rust hash map, seeded afresh in every process: on the
same corpus it numbered about 210 tokens differently on every run, and on a small corpus it even
chose different merges (``##gh`` in one run, ``##ght`` in the next). Every artifact keyed on the
vocabulary was then orphaned on the next machine. This trainer does the same thing, BPE merges
over words with the continuing-subword prefix ``##``, with every tie broken by the symbols
themselves:

1. words: the corpus normalised and pre-tokenised exactly as the tokenizer will see it, counted;
2. alphabet: every character, ``c`` at the start of a word and ``##c`` inside one;
3. merges: repeatedly the most frequent adjacent pair ``(a, b)`` (ties: the smallest pair in
   code-point order) becomes the symbol ``a + b`` without ``b``'s prefix, until the vocabulary is
   full or no pair occurs ``min_frequency`` times.

The vocabulary is ``special tokens + sorted alphabet + merged symbols in merge order``.
"""
from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

PREFIX = "##"


def word_counts(lines: Iterable[str], normalizer, pre_tokenizer) -> Counter[str]:
    """How often each pre-tokenised word occurs (``normalizer`` and ``pre_tokenizer`` are the
    ``tokenizers`` components the trained tokenizer uses)."""
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(line)))
    return counts


def _join(a: str, b: str) -> str:
    return a + b[len(PREFIX):] if b.startswith(PREFIX) else a + b


def train_vocabulary(counts: Counter[str], vocab_size: int, special_tokens: Sequence[str],
                     min_frequency: int = 2) -> list[str]:
    """The WordPiece vocabulary of at most ``vocab_size`` tokens learnt from ``counts`` (see the
    module docstring); deterministic for given counts."""
    words = [[w[0]] + [PREFIX + c for c in w[1:]] for w in sorted(counts)]  # symbols of each word
    freq = [counts[w] for w in sorted(counts)]
    vocab = list(special_tokens) + sorted({s for symbols in words for s in symbols}.difference(special_tokens))
    known = set(vocab)
    pairs: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[int]] = defaultdict(set)
    for i, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += freq[i]
            where[pair].add(i)
    heap = [(-n, pair) for pair, n in pairs.items()]
    heapq.heapify(heap)
    while len(vocab) < vocab_size and heap:
        negative, pair = heapq.heappop(heap)
        if pairs.get(pair, 0) != -negative:  # a stale entry: the count changed since it was pushed
            continue
        if -negative < min_frequency:
            break
        merged = _join(*pair)
        if merged not in known:
            vocab.append(merged)
            known.add(merged)
        changed: set[tuple[str, str]] = set()
        for i in sorted(where.pop(pair)):
            symbols = words[i]
            for old in zip(symbols, symbols[1:]):
                pairs[old] -= freq[i]
                changed.add(old)
            words[i] = symbols = _merge(symbols, pair, merged)
            for new in zip(symbols, symbols[1:]):
                pairs[new] += freq[i]
                where[new].add(i)
                changed.add(new)
        del pairs[pair]
        for p in changed:
            if p != pair and pairs[p] > 0:
                heapq.heappush(heap, (-pairs[p], p))
    return vocab


def _merge(symbols: list[str], pair: tuple[str, str], merged: str) -> list[str]:
    """``symbols`` with every non-overlapping occurrence of ``pair`` (left to right) replaced by ``merged``."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out
