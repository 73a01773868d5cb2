"""Offline analogues of GLUE and SQuAD, built from real human-written (and mostly human-labelled) text.

Every builder returns rows already in the task's canonical schema (``sentence1``, optional
``sentence2``, ``label``; or the SQuAD schema), split train/validation/test by a grouping key
(movie, document, chapter, context) with a fixed seed, so no group straddles two splits.
"""
from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from pe_lib.data import readers
from pe_lib.data.cleaning import split_sentences
from pe_lib.data.corpus import packaged_documents, split_documents
from pe_lib.data.sources import source_dir

Row = dict[str, Any]
SPLITS = ("train", "validation", "test")
HELD_OUT_FRACTION = 0.1
PROSE_SOURCES = ("wikipedia", "austen", "web")
CONTEXT_ENTRIES = 5


@dataclass(frozen=True)
class Built:
    """The rows of a built task per split, and what a reader of its card must know."""

    splits: dict[str, list[Row]]
    notes: str


@dataclass(frozen=True)
class Builder:
    """A builder function and the packaged sources it reads (their sha256 enter the artefact key)."""

    build: Callable[[str | os.PathLike[str] | None, int], Built]
    sources: tuple[str, ...]


def split_by_group(rows: Sequence[Row], groups: Sequence[Hashable], seed: int,
                   held_out: float = HELD_OUT_FRACTION) -> dict[str, list[Row]]:
    """Train/validation/test by group: ``held_out`` of the groups each to validation and test, shuffled."""
    unique = sorted(set(groups), key=str)
    if len(unique) < 3:
        raise ValueError(f"need at least 3 groups to split train/validation/test, got {len(unique)}")
    rng = random.Random(seed)
    rng.shuffle(unique)
    n_held = max(1, round(len(unique) * held_out))
    where = {g: "test" for g in unique[:n_held]} | {g: "validation" for g in unique[n_held:2 * n_held]}
    out: dict[str, list[Row]] = {split: [] for split in SPLITS}
    for row, group in zip(rows, groups, strict=True):
        out[where.get(group, "train")].append(row)
    for split in SPLITS:
        rng.shuffle(out[split])
    return out


def _dedupe(rows: list[Row], key: Callable[[Row], str]) -> list[Row]:
    seen: set[str] = set()
    kept = []
    for row in rows:
        k = key(row)
        if k not in seen:
            seen.add(k)
            kept.append(row)
    return kept


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def build_sentiment(cache_dir: str | os.PathLike[str] | None, seed: int) -> Built:
    """SST-2-like: Rotten Tomatoes critic snippets, fresh = 1 / rotten = 0; split by movie."""
    raw = readers.read_rotten_tomatoes(source_dir("rotten-tomatoes", cache_dir))
    labels_of: dict[str, set[str]] = {}
    for r in raw:
        labels_of.setdefault(_norm(r["text"]), set()).add(r["category"])
    rows = _dedupe([r for r in raw if len(labels_of[_norm(r["text"])]) == 1], lambda r: _norm(r["text"]))
    data = [{"sentence1": r["text"], "label": int(r["category"] == "fresh")} for r in rows]
    return Built(split_by_group(data, [r["movie"] for r in rows], seed),
                 "Labels are the critics' own fresh/rotten verdicts; duplicate snippets and snippets with "
                 "conflicting labels are dropped; splits are by movie.")


def build_regression(cache_dir: str | os.PathLike[str] | None, seed: int) -> Built:
    """STS-B-like regression: VADER snippets with their mean human sentiment score in [-4, 4]."""
    rows = _dedupe(readers.read_vader(source_dir("vader", cache_dir)), lambda r: _norm(str(r["text"])))
    data = [{"sentence1": r["text"], "label": float(r["score"])} for r in rows]
    groups = [str(r["id"]).split("_")[0] for r in rows]  # amazon/nyt ids are <document>_<sentence>
    return Built(split_by_group(data, groups, seed),
                 "Label = mean of ~20 human ratings on [-4, 4] (movie reviews, tweets, Amazon reviews, NYT "
                 "editorials); single sentences, so there is no sentence2; splits are by source document.")


def build_paraphrase(cache_dir: str | os.PathLike[str] | None, seed: int) -> Built:
    """MRPC-like: KJV vs WEB renderings of one verse (1) or of a neighbouring verse (0); split by chapter."""
    kjv = readers.read_sword(source_dir("kjv", cache_dir))
    web = {v.ref: v for v in readers.read_sword(source_dir("web", cache_dir))}
    rng = random.Random(seed)
    data: list[Row] = []
    groups: list[str] = []
    for i, verse in enumerate(kjv):
        other = web.get(verse.ref)
        if other is None or min(len(verse.text.split()), len(other.text.split())) < 4:
            continue
        label = int(rng.random() < 0.5)
        if not label:
            neighbours = [kjv[j].ref for j in (i + 1, i - 1) if 0 <= j < len(kjv) and kjv[j].chapter == verse.chapter]
            candidates = [web[r] for r in neighbours if r in web and _norm(web[r].text) != _norm(other.text)]
            if not candidates:
                continue
            other = candidates[0]
        pair = [verse.text, other.text]
        if rng.random() < 0.5:
            pair.reverse()
        data.append({"sentence1": pair[0], "sentence2": pair[1], "label": label})
        groups.append(verse.chapter)
    return Built(split_by_group(data, groups, seed),
                 "Positives: the King James and World English Bible renderings of the same verse (real, "
                 "independent translations). Negatives: a verse paired with the other translation of the "
                 "next (or previous) verse of the same chapter, a hard negative on the same topic. Pair "
                 "order is random; splits are by chapter.")


def _swap_adjacent(words: list[str], rng: random.Random) -> list[str] | None:
    """Swap two adjacent inner words that differ (first and last word stay), or None if impossible."""
    spots = [i for i in range(1, len(words) - 2) if words[i].lower() != words[i + 1].lower()]
    if not spots:
        return None
    i = rng.choice(spots)
    return [*words[:i], words[i + 1], words[i], *words[i + 2:]]


def build_word_order(cache_dir: str | os.PathLike[str] | None, seed: int, min_words: int = 6,
                     max_words: int = 30) -> Built:
    """CoLA-like: held-out corpus sentences, as written (1) or with two adjacent words swapped (0)."""
    _, held_out = split_documents(packaged_documents(PROSE_SOURCES, cache_dir))
    rng = random.Random(seed)
    data: list[Row] = []
    groups: list[str] = []
    seen: set[str] = set()
    for doc in held_out:
        for paragraph in doc.paragraphs:
            for sentence in split_sentences(paragraph):
                words = sentence.split()
                if not (min_words <= len(words) <= max_words and sentence[0].isupper()
                        and sentence.endswith((".", "!", "?")) and sentence not in seen):
                    continue
                seen.add(sentence)
                label = int(rng.random() < 0.5)
                if not label:
                    swapped = _swap_adjacent(words, rng)
                    if swapped is None:
                        continue
                    sentence = " ".join(swapped)
                data.append({"sentence1": sentence, "label": label})
                groups.append(f"{doc.source}/{doc.doc_id}")
    return Built(split_by_group(data, groups, seed),
                 "CONSTRUCTED LABELS: sentences come from documents held out of the pretraining corpus "
                 "(its validation split); label 1 = the sentence as written, label 0 = the same kind of "
                 "sentence with two adjacent inner words swapped. Acceptability is therefore word-order "
                 "well-formedness, not CoLA's expert judgements. Splits are by document.")


def _entry(synset: readers.Synset) -> tuple[str, str]:
    return synset.words[0], synset.definition


def _contexts(synsets: list[readers.Synset]) -> list[list[readers.Synset]]:
    """Consecutive synsets of one lexicographer file, ``CONTEXT_ENTRIES`` at a time, distinct words and glosses."""
    contexts: list[list[readers.Synset]] = []
    current: list[readers.Synset] = []
    for synset in synsets:
        word, definition = _entry(synset)
        clash = any(_entry(s)[0].lower() == word.lower() or _entry(s)[1] == definition for s in current)
        if current and (synset.lexname != current[0].lexname or clash):
            current = []
        if len(definition.split()) >= 3:
            current.append(synset)
        if len(current) == CONTEXT_ENTRIES:
            contexts.append(current)
            current = []
    return contexts


def _span_row(context_synsets: list[readers.Synset], asked: readers.Synset, answerable: bool) -> Row:
    starts: dict[str, int] = {}
    parts: list[str] = []
    offset = 0
    for synset in context_synsets:
        word, definition = _entry(synset)
        starts[synset.key] = offset
        text = f"{word}: {definition}."
        parts.append(text)
        offset += len(text) + 1
    word, definition = _entry(asked)
    answers = {"text": [word], "answer_start": [starts[asked.key]]} if answerable else {"text": [], "answer_start": []}
    return {"id": f"wordnet-{context_synsets[0].key}-{asked.key}", "title": context_synsets[0].lexname,
            "context": " ".join(parts), "question": f"Which word means: {definition}?", "answers": answers}


def build_spans(cache_dir: str | os.PathLike[str] | None, seed: int, with_negatives: bool) -> Built:
    """SQuAD-format spans from WordNet: a context of five "word: gloss." entries; which word has this gloss?

    With ``with_negatives`` (SQuAD 2.0 style) half of the questions ask for a gloss of the next
    context of the same lexicographer file, absent from this one: the answer is "no answer".
    """
    contexts = _contexts(readers.read_wordnet(source_dir("wordnet", cache_dir)))
    rng = random.Random(seed)
    data: list[Row] = []
    for i, context in enumerate(contexts):
        asked = rng.choice(context)
        following = contexts[i + 1] if i + 1 < len(contexts) else []
        if with_negatives and following and following[0].lexname == context[0].lexname and rng.random() < 0.5:
            data.append(_span_row(context, rng.choice(following), answerable=False))
        else:
            data.append(_span_row(context, asked, answerable=True))
    kind = "v2 (with unanswerable questions)" if with_negatives else "v1.1"
    return Built(split_by_group(data, [row["id"] for row in data], seed),
                 f"SQuAD {kind} format. Context: five consecutive WordNet synsets of one lexicographer file as "
                 "'headword: gloss.'; question: 'Which word means: <gloss>?'; answer: the headword span. "
                 + ("Unanswerable questions ask for a gloss from the next context of the same file. " if with_negatives
                    else "") + "Each context is used once, so splits are by context.")


BUILDERS: dict[str, Builder] = {
    "sentiment": Builder(build_sentiment, ("rotten-tomatoes",)),
    "regression": Builder(build_regression, ("vader",)),
    "paraphrase": Builder(build_paraphrase, ("kjv", "web")),
    "word-order": Builder(build_word_order, PROSE_SOURCES),
    "spans": Builder(lambda cache_dir, seed: build_spans(cache_dir, seed, with_negatives=False), ("wordnet",)),
    "spans-v2": Builder(lambda cache_dir, seed: build_spans(cache_dir, seed, with_negatives=True), ("wordnet",)),
}
