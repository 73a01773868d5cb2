import numpy as np
import pytest

from pe_lib import PEBertForMaskedLM, PEBertModel
from pe_lib.probing import analyse_positions, identical_word_attention
from pe_lib.probing import proximity
from pe_lib.properties import indicators


def test_without_positions_identical_words_get_uniform_attention(make_config):
    attention = identical_word_attention(PEBertModel(make_config("none")), length=12, n_words=5)
    np.testing.assert_allclose(attention, np.full((12, 12), 1 / 12), atol=1e-6)


def test_alibi_probe_is_monotone_and_symmetric(make_config):
    attention = identical_word_attention(PEBertForMaskedLM(make_config("alibi")), length=16, n_words=3, layer=1)
    np.testing.assert_allclose(attention.sum(axis=1), 1.0, atol=1e-6)
    scores = indicators(attention)
    assert scores["monotonicity"] > 0.99
    assert scores["symmetry"] > 0.9


def test_probe_is_deterministic_and_restores_training_mode(make_config):
    model = PEBertModel(make_config("ape-learned")).train()
    a = identical_word_attention(model, length=8, n_words=4, seed=3)
    b = identical_word_attention(model, length=8, n_words=4, seed=3)
    np.testing.assert_array_equal(a, b)
    assert model.training


def test_sinusoidal_ape_proximity_is_translation_invariant_and_symmetric(make_config):
    phi = proximity(PEBertModel(make_config("ape-sin", max_position_embeddings=64)), "ape")
    assert phi.shape == (64, 64)
    scores = indicators(phi)
    assert scores["translation_invariance"] == pytest.approx(1, abs=1e-6)
    assert scores["symmetry"] == pytest.approx(1, abs=1e-6)


def test_rpe_proximity_is_over_offsets(make_config):
    model = PEBertModel(make_config("ape-learned+rpe-learned", rpe_max_distance=6))
    assert proximity(model, "rpe", layer=1).shape == (13, 13)
    assert proximity(model, "rpe", length=8).shape == (9, 9)


@pytest.mark.parametrize(
    "variant, kind, message",
    [("rpe-learned", "ape", "no absolute"), ("ape-learned+rope", "rpe", "no relative offset vectors"),
     ("ape-learned", "dots", "valid: ape, rpe, probe")],
)
def test_proximity_refuses_what_the_model_does_not_have(variant, kind, message, make_config):
    with pytest.raises(ValueError, match=message):
        proximity(PEBertModel(make_config(variant)), kind)


def test_probe_refuses_bad_layer(make_config):
    with pytest.raises(ValueError, match="layer must be in 0..1"):
        identical_word_attention(PEBertModel(make_config("rope")), layer=2)


def test_analysis_gives_each_map_of_a_model_with_its_indicators(make_config):
    model = PEBertForMaskedLM(make_config("ape-sin-learned+rpe-sin-learned+untie-cls", rpe_max_distance=6))
    payload, arrays = analyse_positions(model, seq_len=8, probe={"length": 8, "n_words": 3}, window=3)
    assert arrays["ape"].shape == (8, 8) and arrays["rpe"].shape == (13, 13) and arrays["probe"].shape == (2, 8, 8)
    assert arrays["rpe_freqs"].shape[0] == 2 and arrays["untie_theta"].ndim == 2 and "ape_freqs" in arrays
    assert payload["ape"] == indicators(arrays["ape"], window=3)
    assert len(payload["probe"]) == 2 and {"chen_locality", "chen_symmetry"} <= set(payload["probe"][0])
    assert payload["variant"] == "ape-sin-learned+rpe-sin-learned+untie-cls"
    none, arrays = analyse_positions(PEBertForMaskedLM(make_config("none")), 8, {"length": 8, "n_words": 3}, 3)
    assert set(none) == {"probe", "variant"} and set(arrays) == {"probe"}
