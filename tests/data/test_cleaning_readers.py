"""Markup cleaning and the per-source readers, on small fake copies of each source."""
from __future__ import annotations

from pathlib import Path

from pe_lib.data import readers
from pe_lib.data.cleaning import clean_wiki, is_prose, split_sentences, strip_osis


def test_clean_wiki_keeps_prose_only() -> None:
    markup = ("{{Infobox person|name=X}}\n'''Ada Lovelace''' was an English [[mathematician|mathematician and "
              "writer]], chiefly known for her work.<ref>Cite {{x}}</ref> [[File:Ada.jpg|thumb|A [[portrait]]]]\n"
              "{| class=wikitable\n| a || b\n|}\n== Life ==\nShe was the only legitimate child of the poet Lord "
              "Byron and his wife.<!-- hidden -->\n== References ==\n* Some reference that is long enough here.")
    assert clean_wiki(markup) == [
        "Ada Lovelace was an English mathematician and writer, chiefly known for her work.",
        "She was the only legitimate child of the poet Lord Byron and his wife.",
    ]


def test_strip_osis_and_sentences() -> None:
    osis = '<w lemma="strong:H1">In</w> the beginning<note placement="foot">a note</note> ¶ was <b>light</b>.'
    assert strip_osis(osis) == "In the beginning was light."
    assert split_sentences('He came. "Who?" she asked! It was Mr. Darcy.') == [
        "He came.", '"Who?" she asked!', "It was Mr.", "Darcy."]
    assert is_prose("one two three four five") and not is_prose("1 2 3 4 5 6") and not is_prose("too short")


def test_readers_on_fake_sources(fake_cache: Path) -> None:
    src = fake_cache / "sources"
    wiki = readers.read_wikipedia(src / "wikipedia")
    assert len(wiki) == 60 and wiki[0].doc_id == "Topic 0"  # redirect and talk page dropped
    assert all("[[" not in p and "{{" not in p for d in wiki for p in d.paragraphs)
    austen = readers.read_austen(src / "austen")
    assert {d.doc_id.split("/")[0] for d in austen} == {"emma", "persuasion"}
    assert all(not p.upper().startswith("CHAPTER") for d in austen for p in d.paragraphs)
    synsets = readers.read_wordnet(src / "wordnet")
    assert synsets[0].lexname == "noun.animal" and synsets[0].words == ("nounword5x0", "nounword5x0 alias")
    assert synsets[0].examples == ("the nounword5x0 was here",) and not synsets[0].definition.endswith(";")
    kjv = readers.read_sword(src / "kjv")
    web = readers.read_sword(src / "web")
    assert len(kjv) == len(web) == 3 * 20 * 8 and kjv[0].ref == "Bk0.1.1" and kjv[-1].ref == "Bk2.20.8"
    assert kjv[0].text.startswith("Behold, the") and "note" not in kjv[0].text
    assert web[0].text == kjv[0].text.replace("Behold, the", "The", 1)
    rt = readers.read_rotten_tomatoes(src / "rotten-tomatoes")
    assert {r["category"] for r in rt} == {"fresh", "rotten"}
    vader = readers.read_vader(src / "vader")
    assert {r["domain"] for r in vader} == {"movies", "amazon"} and all(-4 <= float(r["score"]) <= 4 for r in vader)
    assert vader[0]["id"] == "amazon:1_1"  # the BOM is stripped


def test_wordnet_documents_group_by_lexicographer_file(fake_cache: Path) -> None:
    synsets = readers.read_wordnet(fake_cache / "sources" / "wordnet")
    docs = readers.wordnet_documents(synsets, per_document=100)
    assert all(len(d.paragraphs) <= 100 for d in docs)
    assert sum(len(d.paragraphs) for d in docs) == len(synsets)
    assert docs[0].paragraphs[0][0].isupper() and docs[0].paragraphs[0].endswith(".")
