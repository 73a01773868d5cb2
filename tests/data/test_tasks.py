"""Tasks: packaged analogues on fake sources, and the hub path fed local datasets in the hub schema."""
from __future__ import annotations

import json
import re
from pathlib import Path

import datasets
import numpy as np
import pytest

from pe_lib.data import tasks as tasks_module
from pe_lib.data.sources import SourceUnavailable, get_source
from pe_lib.data.tasks import TASKS, features_for, load_task, prepare_task, squad_features

GLUE_COLUMNS = {"cola": ("sentence",), "sst2": ("sentence",), "mrpc": ("sentence1", "sentence2"),
                "stsb": ("sentence1", "sentence2"), "qnli": ("question", "sentence"), "rte": ("sentence1", "sentence2")}


def glue_like(config: str, n: int, labelled: bool = True) -> datasets.Dataset:
    """A split in the hub's GLUE schema (text columns, ``label`` as ClassLabel or float, ``idx``)."""
    columns = {c: [f"{c} number {i} of {config}" for i in range(n)] for c in GLUE_COLUMNS[config]}
    if config == "stsb":
        label_feature = datasets.Value("float32")
        labels = [float(i % 6) if labelled else -1.0 for i in range(n)]
    else:
        names = list(TASKS[config].meta.label_names)
        label_feature = datasets.ClassLabel(names=names)
        labels = [i % 2 for i in range(n)] if labelled else [-1] * n
    features = datasets.Features({c: datasets.Value("string") for c in columns}
                                 | {"label": label_feature, "idx": datasets.Value("int32")})
    return datasets.Dataset.from_dict(columns | {"label": labels, "idx": list(range(n))}, features=features)


def squad_like(n_titles: int, per_title: int, negatives: bool = False) -> datasets.Dataset:
    rows = []
    for t in range(n_titles):
        context = f"Article {t} says that the capital of land {t} is City{t}."
        for q in range(per_title):
            answerable = not (negatives and q % 2)
            rows.append({"id": f"{t}-{q}", "title": f"Title_{t}", "context": context, "question": f"Capital {q}?",
                         "answers": {"text": [f"City{t}"] if answerable else [],
                                     "answer_start": [context.index(f"City{t}")] if answerable else []}})
    hub_features = datasets.Features({
        "id": datasets.Value("string"), "title": datasets.Value("string"), "context": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answers": datasets.Sequence({"text": datasets.Value("string"), "answer_start": datasets.Value("int32")})})
    return datasets.Dataset.from_list(rows, features=hub_features)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str | None]]:
    """Stub ``datasets.load_dataset`` with local datasets in each hub dataset's own schema; every
    load must ask for the source's pinned revision."""
    calls: list[tuple[str, str | None]] = []

    def load_dataset(hub_id: str, config: str | None = None, revision: str | None = None) -> datasets.DatasetDict:
        assert revision is not None and re.fullmatch(r"[0-9a-f]{40}", revision), (hub_id, revision)
        calls.append((hub_id, config))
        if hub_id == "nyu-mll/glue":
            assert config is not None
            return datasets.DatasetDict(train=glue_like(config, 40), validation=glue_like(config, 12),
                                        test=glue_like(config, 10, labelled=False))
        negatives = hub_id.endswith("_v2")
        return datasets.DatasetDict(train=squad_like(20, 4, negatives), validation=squad_like(3, 4, negatives))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


@pytest.mark.parametrize("name", ["cola", "sst2", "mrpc", "stsb", "qnli", "rte"])
def test_hub_glue_conversion(hub: list[tuple[str, str | None]], tmp_path: Path, name: str) -> None:
    task = load_task(name, source="hub", cache_dir=tmp_path, max_train=None)
    assert hub == [("nyu-mll/glue", name)]
    assert task.origin == f"hub:nyu-mll/glue ({name})"
    assert task.card["revision"] == get_source(f"glue-{name}").revision
    paired = len(GLUE_COLUMNS[name]) == 2
    for split in ("train", "validation", "test"):
        assert task.splits[split].features == features_for(task.meta, paired)
    assert [len(task.splits[s]) for s in ("train", "validation", "test")] == [36, 4, 12]
    assert task.text_columns == (("sentence1", "sentence2") if paired else ("sentence1",))
    assert task.card["splits"]["test"]["examples"] == 12


@pytest.mark.parametrize("name", ["squad", "squad_v2"])
def test_hub_squad_conversion(hub: list[tuple[str, str | None]], tmp_path: Path, name: str) -> None:
    task = load_task(name, source="hub", cache_dir=tmp_path, max_train=None)
    assert all(task.splits[s].features == squad_features() for s in ("train", "validation", "test"))
    train_titles, dev_titles = set(task.splits["train"]["title"]), set(task.splits["validation"]["title"])
    assert dev_titles and not train_titles & dev_titles  # validation is carved out by article
    assert len(task.splits["test"]) == 12
    stats = task.card["splits"]["train"]
    assert (stats["unanswerable"] > 0) == (name == "squad_v2")


@pytest.mark.parametrize("name", ["cola", "sst2", "mrpc", "stsb", "squad", "squad_v2"])
def test_hub_and_packaged_share_one_schema(hub: list[tuple[str, str | None]], prepared_cache: Path, name: str) -> None:
    from_hub = load_task(name, source="hub", cache_dir=prepared_cache).splits["train"].features
    packaged = load_task(name, source="packaged", cache_dir=prepared_cache).splits["train"].features
    if name == "stsb":  # VADER snippets are single sentences: no sentence2, same label type
        assert {k: v for k, v in from_hub.items() if k != "sentence2"} == packaged
    else:
        assert from_hub == packaged


def test_packaged_tasks_have_three_nonempty_splits_and_cards(prepared_cache: Path) -> None:
    for name, spec in TASKS.items():
        if spec.packaged is None:
            continue
        task = load_task(name, source="packaged", cache_dir=prepared_cache, max_train=None)
        assert task.origin == f"packaged:{spec.packaged}"
        sizes = {s: len(task.splits[s]) for s in ("train", "validation", "test")}
        assert all(sizes.values()), (name, sizes)
        assert task.card["splits"]["train"]["examples"] == sizes["train"]
        assert task.card["sources"] and task.card["notes"]
        folder = tasks_module.packaged_folder(name, prepared_cache)
        assert (folder / "card.md").read_text().startswith(f"# Task {name}")


def test_word_order_card_says_labels_are_constructed(prepared_cache: Path) -> None:
    task = load_task("cola", source="packaged", cache_dir=prepared_cache)
    assert "CONSTRUCTED" in task.card["notes"]
    assert set(task.splits["train"]["label"]) == {0, 1}


def test_span_answers_point_into_context(prepared_cache: Path) -> None:
    for name in ("squad", "squad_v2"):
        rows = load_task(name, source="packaged", cache_dir=prepared_cache, max_train=None).splits["train"]
        unanswerable = 0
        for row in rows:
            gloss = row["question"].removeprefix("Which word means: ").removesuffix("?")
            if not row["answers"]["text"]:
                unanswerable += 1
                assert f": {gloss}." not in row["context"]
                continue
            start, text = row["answers"]["answer_start"][0], row["answers"]["text"][0]
            assert row["context"][start:start + len(text)] == text
            assert row["context"][start + len(text):].startswith(f": {gloss}.")
        assert (unanswerable > 0) == (name == "squad_v2")


def test_packaged_build_is_deterministic(prepared_cache: Path, fake_cache: Path) -> None:
    first = prepare_task("mrpc", prepared_cache)
    second = prepare_task("mrpc", fake_cache)
    assert first.name == second.name
    assert (first / "train.jsonl").read_text() == (second / "train.jsonl").read_text()
    rows = [json.loads(line) for line in (first / "train.jsonl").read_text().splitlines()]
    assert {r["label"] for r in rows} == {0, 1}


def test_max_train_caps_the_train_split(prepared_cache: Path) -> None:
    task = load_task("mrpc", source="packaged", cache_dir=prepared_cache, max_train=10)
    assert len(task.splits["train"]) == 10 and task.card["max_train"] == 10
    assert task.card["splits"]["train"]["examples"] == 10


def test_auto_offline_uses_packaged_and_hub_failure_falls_back(prepared_cache: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("hub called while offline"))
    assert load_task("sst2", cache_dir=prepared_cache).origin == "packaged:sentiment"
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE")

    def unreachable(*args: object, **kwargs: object) -> None:
        raise ConnectionError("no route")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.warns(UserWarning, match="nyu-mll/glue"):
        assert load_task("sst2", cache_dir=prepared_cache).origin == "packaged:sentiment"


def test_hub_only_task_offline_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match="qnli.*no packaged offline analogue.*nyu-mll/glue"):
        load_task("qnli", cache_dir=tmp_path)


def test_forced_hub_failure_names_what_was_tried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(*args: object, **kwargs: object) -> None:
        raise ConnectionError("no route")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.raises(SourceUnavailable, match=r"rajpurkar/squad .*ConnectionError.*source='packaged'"):
        load_task("squad", source="hub", cache_dir=tmp_path)


def test_bad_names_list_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="valid tasks: cola, sst2"):
        load_task("mnli-mismatched", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="auto, hub, packaged"):
        load_task("sst2", source="internet", cache_dir=tmp_path)


def test_empty_hub_split_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = datasets.DatasetDict(train=glue_like("rte", 20), validation=glue_like("rte", 0))
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: empty)
    with pytest.raises(ValueError, match="empty split.*test"):
        load_task("rte", source="hub", cache_dir=tmp_path)


def test_after_one_hub_failure_auto_stops_waiting_for_the_hub(prepared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    calls = []

    def unreachable(*args: object, **kwargs: object) -> None:
        calls.append(args)
        raise ConnectionError("no route")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.warns(UserWarning, match="rest of this process"):
        load_task("sst2", cache_dir=prepared_cache)
    assert load_task("sst2", cache_dir=prepared_cache).origin == "packaged:sentiment"
    assert len(calls) == 1


@pytest.mark.parametrize("name", ["cola", "sst2", "mrpc", "stsb"])
def test_packaged_labels_keep_their_values_and_order(prepared_cache: Path, name: str) -> None:
    task = load_task(name, source="packaged", cache_dir=prepared_cache, max_train=None)
    folder = tasks_module.packaged_folder(name, prepared_cache)
    for split in ("train", "validation", "test"):
        rows = [json.loads(line) for line in (folder / f"{split}.jsonl").read_text().splitlines()]
        expected = [r["label"] for r in rows]  # the JSON values, in order (scores as float32 stores them)
        if task.meta.is_regression:
            expected = [float(np.float32(x)) for x in expected]
        assert task.splits[split]["label"] == expected
    feature = task.splits["train"].features["label"]
    if task.meta.is_regression:
        assert feature == datasets.Value("float32")
    else:  # named classes: "positive", not LABEL_1
        assert isinstance(feature, datasets.ClassLabel) and feature.names == list(task.meta.label_names)
        assert feature.int2str(1) == task.meta.label_names[1]


def test_hub_labels_keep_their_values_and_order(hub: list[tuple[str, str | None]], tmp_path: Path) -> None:
    task = load_task("sst2", source="hub", cache_dir=tmp_path, max_train=None)
    assert task.splits["test"]["label"] == [i % 2 for i in range(12)]  # the hub validation split, as served
    assert task.splits["train"].features["label"].names == ["negative", "positive"]


def test_hub_datasets_are_pinned_to_a_commit() -> None:
    for name in ("wikitext-103", "glue-cola", "glue-rte", "squad", "squad_v2"):
        assert re.fullmatch(r"[0-9a-f]{40}", get_source(name).revision or ""), name
