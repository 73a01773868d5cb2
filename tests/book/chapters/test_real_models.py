import pytest

from pe_book.chapters.real_models import ape_variants


def test_ape_variants_default_and_refusal():
    profile = ["none", "ape-learned", "rope", "ape-sin+rpe-learned", "rpe-learned"]
    assert ape_variants([], profile) == ["ape-learned", "ape-sin+rpe-learned"]
    assert ape_variants(["ape-sin"], profile) == ["ape-sin"]
    with pytest.raises(ValueError, match="no absolute position embedding.*valid.*ape-learned"):
        ape_variants(["rope"], profile)
