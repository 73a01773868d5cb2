"""``pe-book data`` (``pe_book.commands.data``) through the project's CLI dispatcher, and one check of a real
prepared cache if present. The fake sources are those of the data tests (``tests/data/conftest.py``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from data.conftest import _fresh_hub_memory, _offline, fake_cache, fake_cache_template, prepared_cache  # noqa: F401 (fixtures)
from pe_book import cli
from pe_lib.data import corpus as corpus_module
from pe_lib.data.cache import default_cache_dir


def test_list_shows_states_sizes_and_prepared(prepared_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["data", "--list", "--cache", str(prepared_cache)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
    assert "cached" in rows["wordnet"] and "MiB" in rows["wordnet"] and "apt: wordnet-base=1:3.0-37" in rows["wordnet"]
    assert " hub " in rows["squad"]
    assert "corpus-packaged-" in out and "task-squad_v2-" in out and "tokenizer-wordpiece300-" in out


def test_list_marks_missing_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["data", "--list", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "missing" in next(line for line in out.splitlines() if line.startswith("vader"))
    assert "prepared artefacts: none" in out


def test_prepare_only_some_targets(fake_cache: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_module, "MIN_PACKAGED_WORDS", 1000)
    assert cli.main(["data", "--cache", str(fake_cache), "--only", "sst2", "qnli", "corpus", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["tasks"]) == {"sst2", "qnli"} and summary["tasks"]["qnli"].startswith("skipped")
    assert summary["corpus"]["words"]["train"] > 0 and "tokenizer" not in summary


def test_errors_are_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["data", "--cache", str(tmp_path), "--only", "imagenet"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("pe-book data: error: unknown target") and "\n" not in err and "wordnet" in err


def test_real_prepared_corpus_if_present() -> None:
    """Integration: the corpus that `pe-book data` prepared in the default cache (skipped when absent)."""
    prepared = sorted((default_cache_dir() / "prepared").glob("corpus-packaged-*/card.json"))
    if not prepared:
        pytest.skip("no packaged corpus prepared in the default cache (run `pe-book data`)")
    card = json.loads(prepared[-1].read_text())
    assert card["total_words"] >= corpus_module.MIN_PACKAGED_WORDS
    assert set(card["sources"]) == set(corpus_module.CORPUS_SOURCES)


def test_position_tables_are_written_into_the_folder_given(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from pe_lib import pretrained_pes as pes

    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    toy = pes.PackagedModel("toy", "org/toy", "BERT, 1 layer", ("vader",), "pos (test)", 0, "", lambda cache_dir: table)
    monkeypatch.setattr(pes, "PACKAGED_MODELS", {"toy": toy})
    assert cli.main(["data", "--position-tables", str(tmp_path / "tables"), "--cache", str(tmp_path / "cache")]) == 0
    (folder,) = (tmp_path / "tables").iterdir()
    assert capsys.readouterr().out.split() == [str(folder)] and folder.name.startswith("pe-matrix-toy-")
    assert np.array_equal(pes.read_position_table("toy", tmp_path / "empty", stored=tmp_path / "tables"), table)
