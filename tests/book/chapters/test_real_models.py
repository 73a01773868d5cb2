import pytest

from pe_book.chapters import real_models
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
