import dataclasses
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from pe_book.chapters import real_models
from pe_lib import pretrained_pes as pes
from pe_book.chapters.real_models import ape_variants


def test_ape_variants_default_and_refusal():
    profile = ["none", "ape-learned", "rope", "ape-sin+rpe-learned", "rpe-learned"]
    assert ape_variants([], profile) == ["ape-learned", "ape-sin+rpe-learned"]
    assert ape_variants(["ape-sin"], profile) == ["ape-sin"]
    with pytest.raises(ValueError, match="no absolute position embedding.*valid.*ape-learned"):
        ape_variants(["rope"], profile)


def test_a_provenance_line_shows_the_first_12_digits_of_each_sha256():
    digest = "0123456789ab" + "c" * 52
    line = f"gt-x==0.1.0 (x.whl, sha256 {digest}); y (sha256 {digest})"
    assert real_models.short_sha256(line) == "gt-x==0.1.0 (x.whl, sha256 0123456789ab…); y (sha256 0123456789ab…)"
    assert real_models.short_sha256("sha256 0123") == "sha256 0123"


def test_the_packaged_models_are_read_from_the_results_position_tables(tmp_path, monkeypatch):
    """The chapter reads each packaged model's table from <results>/position-tables (the committed
    copy here), with an empty data cache and no package read."""
    def refuse(cache_dir):
        raise AssertionError("a package was read")

    for name in pes.packaged_names():
        monkeypatch.setitem(pes.PACKAGED_MODELS, name, dataclasses.replace(pes.PACKAGED_MODELS[name], reader=refuse))
    monkeypatch.setenv("PE_LIB_CACHE", str(tmp_path / "empty-cache"))
    shutil.copytree(Path(__file__).resolve().parents[3] / "results" / pes.POSITION_TABLES,
                    tmp_path / "results" / pes.POSITION_TABLES)
    runner = SimpleNamespace(profile=SimpleNamespace(variants=("none",)), store=SimpleNamespace(root=tmp_path / "results" / "cpu"))
    result = real_models.compute(runner, pes.packaged_names(), length=16, window=3)
    assert [m.name for m in result.real] == pes.packaged_names() and result.cited["skipped_text"] == "none"
    assert result.provenance.loc["sentence-transformers/all-mpnet-base-v2", "positions (rows dropped)"] == "512 (2)"
    assert not list((tmp_path / "empty-cache").rglob("pe-matrix-*"))  # nothing cached
    shutil.rmtree(tmp_path / "results" / pes.POSITION_TABLES)
    with pytest.raises(AssertionError, match="a package was read"):
        real_models.compute(runner, pes.packaged_names()[:1], length=16, window=3)
