"""The KJV/WEB builders of issue 36 (order pairs, cloze spans) on the fake Bibles, and their parts on
hand-made verses."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from pe_lib.data import builders
from pe_lib.data.builders import BUILDERS, WordKinds
from pe_lib.data.sources import SourceUnavailable
from pe_lib.data.tasks import load_task


def words(text: str) -> Counter[str]:
    return Counter(re.findall(r"[A-Za-z]+", text))


@pytest.fixture(scope="module")
def built(fake_cache_template: Path) -> dict[str, builders.Built]:
    """Each new builder's output on the fake sources (read-only; the builders only read the sources)."""
    return {name: BUILDERS[name].build(fake_cache_template, 0) for name in ("order-pairs", "cloze", "cloze-v2")}


@pytest.fixture(scope="module")
def web_of(fake_cache_template: Path) -> dict[str, tuple[str, str]]:
    """KJV verse text -> (WEB rendering, chapter)."""
    verses, _ = builders._aligned_verses(fake_cache_template)
    return {kjv.text: (web.text, kjv.chapter) for kjv, web in verses}


def rows(built: builders.Built) -> list[dict]:
    return [row for split in builders.SPLITS for row in built.splits[split]]


@pytest.mark.parametrize("name", ["order-pairs", "cloze", "cloze-v2"])
def test_same_seed_same_rows_other_seed_other_rows(fake_cache_template: Path, built: dict, name: str) -> None:
    again = BUILDERS[name].build(fake_cache_template, 0)
    assert again.splits == built[name].splits
    assert BUILDERS[name].build(fake_cache_template, 1).splits != built[name].splits


def test_order_pairs_have_the_same_words_whichever_the_label(built: dict, web_of: dict) -> None:
    data = rows(built["order-pairs"])
    assert len(data) > 100
    for row in data:
        web, _ = web_of[row["sentence1"]]
        assert words(row["sentence2"]) == words(web)  # a swap moves words, never changes them
        assert row["label"] == int(row["sentence2"] == web)  # label 1: the rendering itself; 0: a swap of it


def test_order_pair_labels_are_balanced(built: dict) -> None:
    for split in builders.SPLITS:
        labels = [row["label"] for row in built["order-pairs"].splits[split]]
        assert 0.35 < sum(labels) / len(labels) < 0.65, split
    share = sum(row["label"] for row in rows(built["order-pairs"])) / len(rows(built["order-pairs"]))
    assert 0.45 < share < 0.55


def test_order_pairs_split_by_chapter(built: dict, web_of: dict) -> None:
    chapters = {split: {web_of[row["sentence1"]][1] for row in built["order-pairs"].splits[split]}
                for split in builders.SPLITS}
    assert all(chapters.values())
    assert not chapters["train"] & chapters["validation"] and not chapters["train"] & chapters["test"]
    assert not chapters["validation"] & chapters["test"]


@pytest.mark.parametrize("name", ["cloze", "cloze-v2"])
def test_cloze_answers_sit_at_answer_start_and_are_blanked_in_the_question(built: dict, name: str) -> None:
    answered = 0
    for row in rows(built[name]):
        assert len(re.findall(r"(?<!\w)_(?!\w)", row["question"])) == 1
        for text, start in zip(row["answers"]["text"], row["answers"]["answer_start"], strict=True):
            assert row["context"][start:start + len(text)] == text
            assert text not in re.findall(r"[A-Za-z]+", row["question"])  # the blanked word is not asked
            answered += 1
    assert answered > 100


def test_cloze_v1_always_answers_and_v2_about_half_never(built: dict, web_of: dict) -> None:
    assert all(row["answers"]["text"] for row in rows(built["cloze"]))
    v2 = rows(built["cloze-v2"])
    unanswerable = [row for row in v2 if not row["answers"]["text"]]
    assert 0.4 < len(unanswerable) / len(v2) < 0.6
    for row in unanswerable:  # the asked verse is of the same chapter, but outside the passage
        chapter = row["title"]
        assert any(chapter == c and w not in row["context"] for w, c in web_of.values())


@pytest.mark.parametrize("name", ["cloze", "cloze-v2"])
def test_cloze_splits_are_disjoint_by_chapter(built: dict, name: str) -> None:
    chapters = {split: {row["title"] for row in built[name].splits[split]} for split in builders.SPLITS}
    assert all(chapters.values())
    assert not chapters["train"] & chapters["validation"] and not chapters["train"] & chapters["test"]
    assert not chapters["validation"] & chapters["test"]


def test_cloze_context_holds_the_asked_verse_and_fits_its_length(built: dict, web_of: dict) -> None:
    for row in rows(built["cloze"]):
        assert len(row["context"].split()) <= builders.CONTEXT_WORDS
        assert 6 <= len(row["question"].split()) <= builders.MAX_QUESTION_WORDS


def test_word_kinds() -> None:
    kinds = WordKinds(frozenset({"god", "behold", "gate"}),
                      {"gate": frozenset({"noun"}), "son": frozenset({"noun"}), "go": frozenset({"noun", "verb"}),
                       "he": frozenset({"noun"}), "box": frozenset({"noun"})})
    assert kinds.kind("David") == "name"
    assert kinds.kind("God") is None and kinds.kind("Behold") is None  # also written in lower case
    assert kinds.kind("I") is None  # one letter
    assert kinds.kind("gate") == "noun" and kinds.kind("go") is None  # a noun and nothing else
    assert kinds.kind("he") is None  # a function word, whatever WordNet says
    assert kinds.kind("sons") == "plural noun" and kinds.kind("boxes") == "plural noun"
    assert kinds.kind("walked") is None


def test_swaps_change_who_does_what_not_the_order_of_a_list() -> None:
    kinds = WordKinds(frozenset(), {})
    text = "Eliezer, Ishijah, and Malchiah went up."  # a list: no swap of it changes its meaning
    assert builders._swappable(text, builders._shared_words(text, text, kinds)) == []
    text = "Elijah found Elisha the son of Shaphat."
    pairs = builders._swappable(text, builders._shared_words(text, text, kinds))
    assert {(a.group(), b.group()) for a, b in pairs} == {("Elijah", "Elisha"), ("Elijah", "Shaphat"),
                                                         ("Elisha", "Shaphat")}
    first, second = pairs[0]
    assert builders._swap(text, first, second) == "Elisha found Elijah the son of Shaphat."


def test_shared_words_occur_once_in_each_rendering() -> None:
    kinds = WordKinds(frozenset(), {"gate": frozenset({"noun"}), "city": frozenset({"noun"})})
    kjv, web = "And Abram came to the gate of the city, the gate.", "Abram came to the city gate."
    assert set(builders._shared_words(kjv, web, kinds)) == {"Abram", "city"}  # "gate" twice in the KJV


def test_cloze_task_has_no_hub_source(prepared_cache: Path) -> None:
    with pytest.raises(SourceUnavailable) as caught:
        load_task("cloze", source="hub", cache_dir=prepared_cache)
    message = str(caught.value)
    assert "\n" not in message and "'packaged'" in message and "'auto'" in message
    assert load_task("cloze", source="packaged", cache_dir=prepared_cache).origin.startswith("packaged")


@pytest.mark.parametrize("name", ["paws", "cloze", "cloze_v2", "cola", "sst2"])
def test_cards_of_the_position_suite_say_what_the_task_tests(prepared_cache: Path, name: str) -> None:
    card = load_task(name, source="packaged", cache_dir=prepared_cache).card
    assert set(card["about"]) == {"tests", "without positions", "cheap baselines"}
    assert all(len(text) > 40 for text in card["about"].values())
    assert card["splits"]["train"]["examples"] > 0  # its size


def test_word_order_pairs_are_minimal_pairs_split_by_document(fake_cache_template: Path) -> None:
    built = BUILDERS["word-order-pairs"].build(fake_cache_template, 0)
    for split in builders.SPLITS:
        by_words: dict[tuple[str, ...], list[int]] = {}
        for row in built.splits[split]:
            by_words.setdefault(tuple(sorted(row["sentence1"].split())), []).append(row["label"])
        # every sentence twice, as written (1) and swapped (0): the same words either way
        assert all(sorted(labels) == [0, 1] for labels in by_words.values()), split
    assert sum(len(built.splits[s]) for s in builders.SPLITS) > 0


def test_word_order_pairs_gives_test_its_larger_share_of_documents() -> None:
    rows = [{"i": i} for i in range(100)]
    groups = [i // 2 for i in range(100)]  # 50 documents of 2 rows
    split = builders.split_by_group(rows, groups, 0, test_share=builders.PAIR_TEST_SHARE)
    assert (len(split["test"]), len(split["validation"])) == (40, 10)
    # the default keeps validation and test at the same share, as the earlier tasks were built
    assert len(builders.split_by_group(rows, groups, 0)["test"]) == 10
