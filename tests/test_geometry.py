import numpy as np
import pytest

from pe_lib import geometry


def test_cosine_and_ape_locality():
    n = 20
    x = np.arange(n)[:, None] * np.array([[0.3, 0.05]])
    vectors = np.concatenate([np.sin(x), np.cos(x)], axis=1)  # smooth: neighbours alike
    local = geometry.ape_locality(vectors @ vectors.T, window=2)
    assert np.allclose(np.diag(geometry.cosine(vectors @ vectors.T)), 1.0)
    assert local["near"] > local["far"] and local["contrast"] == pytest.approx(local["near"] - local["far"])
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(n, 256))
    assert abs(geometry.ape_locality(noise @ noise.T)["contrast"]) < 0.1


def test_rpe_bands_reads_bright_small_offsets_and_alike_large_ones():
    k, d = 8, 16
    rng = np.random.default_rng(0)
    common = rng.normal(size=d)
    rows = []
    for a in range(-k, k + 1):
        rows.append(3 * rng.normal(size=d) if abs(a) <= 2 else 0.3 * (common + 0.1 * rng.normal(size=d)))
    table = np.array(rows)
    bands = geometry.rpe_bands(table @ table.T)
    assert bands["norm_ratio"] > 10 and bands["large_cosine"] > 0.9 and abs(bands["small_cosine"]) < 0.5


def test_map_similarity():
    rng = np.random.default_rng(1)
    v = rng.normal(size=(10, 4))
    w = rng.normal(size=(10, 4))
    assert geometry.map_similarity(v @ v.T, 3 * (v @ v.T)) == pytest.approx(1.0)
    assert abs(geometry.map_similarity(v @ v.T, w @ w.T)) < 0.9
    with pytest.raises(ValueError):
        geometry.map_similarity(v @ v.T, np.eye(3))
