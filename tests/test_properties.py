"""Tests for pe_lib.properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import spearmanr

from pe_lib.properties import (
    chen_locality,
    chen_symmetry,
    indicators,
    monotonicity,
    symmetry,
    translation_invariance,
)
from pe_lib.sinusoid import frequencies, sinusoid_table

KEYS = {"monotonicity", "translation_invariance", "symmetry"}

sizes = st.integers(3, 12)
finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


def toeplitz(values_by_offset: np.ndarray, n: int) -> np.ndarray:
    """phi[x, y] = values_by_offset[y - x + n - 1]."""
    x = np.arange(n)
    return values_by_offset[np.subtract.outer(x, x).T + n - 1]


@st.composite
def integer_matrices(draw):
    n = draw(sizes)
    return draw(arrays(np.int64, (n, n), elements=st.integers(-50, 50))).astype(float)


# --------------------------------------------------------------------------
# Wang et al.'s three indicators
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [64, 768])
def test_sinusoidal_ape_is_translation_invariant_and_symmetric(dim):
    table = sinusoid_table(np.arange(128), frequencies(dim))
    out = indicators(table @ table.T)
    assert KEYS <= out.keys()
    assert out["translation_invariance"] == pytest.approx(1.0, abs=1e-6)
    assert out["symmetry"] == pytest.approx(1.0, abs=1e-6)


def test_sinusoidal_ape_is_locally_monotone():
    table = sinusoid_table(np.arange(128), frequencies(64))
    out = indicators(table @ table.T, window=5)  # integer_monotonic_range(64) == 5
    assert out["monotonicity_local"] == pytest.approx(1.0)
    assert out["monotonicity"] < 0.95


def test_random_gaussian_pe_has_no_monotonicity():
    P = np.random.default_rng(0).standard_normal((128, 64))
    assert abs(indicators(P @ P.T)["monotonicity"]) < 0.1


def test_iid_matrix_has_low_translation_invariance():
    phi = np.random.default_rng(1).standard_normal((128, 128))
    assert translation_invariance(phi) < 0.05  # expected about 2 / n


def test_decreasing_toeplitz_scores_one_everywhere():
    n = 40
    phi = toeplitz(np.exp(-0.3 * np.abs(np.arange(-(n - 1), n))), n)
    out = indicators(phi, window=4)
    for key in ("monotonicity", "monotonicity_forward", "monotonicity_backward", "monotonicity_local"):
        assert out[key] == pytest.approx(1.0)
    assert out["translation_invariance"] == pytest.approx(1.0, abs=1e-6)
    assert out["symmetry"] == pytest.approx(1.0, abs=1e-6)


def test_directions_are_reported_separately():
    x = np.arange(10.0)
    phi = np.subtract.outer(x, x).T  # phi[x, y] = y - x: grows forward, falls backward
    mono = monotonicity(phi)
    assert mono["forward"] == pytest.approx(-1.0)
    assert mono["backward"] == pytest.approx(1.0)
    assert mono["mean"] == pytest.approx(0.0)
    assert symmetry(phi) == pytest.approx(-1.0)  # antisymmetric
    assert translation_invariance(phi) == pytest.approx(1.0)


def test_monotonicity_matches_scipy_spearman():
    rng = np.random.default_rng(2)
    phi = rng.integers(0, 5, (15, 15)).astype(float)  # many ties
    phi[3, 4:] = 1.0  # a constant forward row is skipped
    expected = {}
    for name, rows in {
        "forward": [phi[x, x + 1 :] for x in range(15)],
        "backward": [phi[x, :x][::-1] for x in range(15)],
    }.items():
        rhos = [-spearmanr(np.arange(r.size), r)[0] for r in rows if r.size >= 3 and np.ptp(r) > 0]
        expected[name] = np.mean(rhos)
    mono = monotonicity(phi)
    assert mono["forward"] == pytest.approx(expected["forward"], abs=1e-12)
    assert mono["backward"] == pytest.approx(expected["backward"], abs=1e-12)


def test_degenerate_cases_are_documented_values():
    out = indicators(np.ones((5, 5)))
    assert np.isnan(out["monotonicity"])  # every row constant
    assert out["translation_invariance"] == 1.0
    assert out["symmetry"] == 1.0
    assert np.isnan(indicators(np.arange(9.0).reshape(3, 3))["monotonicity"])  # < 3 offsets
    upper_only = np.triu(np.ones((4, 4)), 1)
    assert np.isnan(symmetry(upper_only + np.diag([1.0, 2, 3, 4])))  # constant triangles, unequal


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros(5),
        np.zeros((3, 4)),
        np.zeros((2, 2)),
        np.zeros((4, 4, 4)),
        np.array([[0.0, 1, 2], [1, np.nan, 0], [2, 0, 1]]),
        np.array([[0.0, 1, 2], [1, np.inf, 0], [2, 0, 1]]),
        np.full((3, 3), 1j),
        [["a", "b", "c"]] * 3,
    ],
)
def test_bad_input_raises(bad):
    for fn in (indicators, monotonicity, translation_invariance, symmetry):
        with pytest.raises(ValueError):
            fn(bad)


@pytest.mark.parametrize("window", [2, 0, 3.5])
def test_bad_window_raises(window):
    with pytest.raises(ValueError, match="window"):
        indicators(np.eye(5), window=window)


@settings(max_examples=60, deadline=None)
@given(phi=integer_matrices(), scale=st.floats(1e-3, 1e3), shift=st.floats(-1e3, 1e3))
def test_invariant_to_positive_affine_maps(phi, scale, shift):
    before = indicators(phi, window=3)
    after = indicators(scale * phi + shift, window=3)
    assert before.keys() == after.keys()
    for key in before:
        np.testing.assert_allclose(after[key], before[key], atol=1e-9, err_msg=key)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=sizes)
def test_any_toeplitz_has_translation_invariance_one(data, n):
    values = data.draw(arrays(np.float64, 2 * n - 1, elements=finite))
    assert translation_invariance(toeplitz(values, n)) == pytest.approx(1.0, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=sizes)
def test_any_symmetric_matrix_has_symmetry_one(data, n):
    half = data.draw(arrays(np.float64, (n, n), elements=finite))
    assert symmetry(half + half.T) == pytest.approx(1.0, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(phi=integer_matrices())
def test_indicators_stay_in_range(phi):
    out = indicators(phi)
    assert np.isnan(out["monotonicity"]) or -1 <= out["monotonicity"] <= 1
    assert 0 <= out["translation_invariance"] <= 1
    assert np.isnan(out["symmetry"]) or -1 <= out["symmetry"] <= 1


# --------------------------------------------------------------------------
# Chen et al. (2023): checked against a loop transcription of their algorithm
# (locality_symmetry/calculate.py in tigerchen52/locality_symmetry)
# --------------------------------------------------------------------------


def reference_locality(M):
    length = len(M)
    row_sums = []
    for index in range(length):
        row_sums.append(sum(M[index][i] / 2 ** abs(i - index) for i in range(length)))
    return sum(row_sums) / len(row_sums)


def reference_minmax_column(v):
    """MinMaxScaler().fit_transform(v.reshape(-1, 1)) of scikit-learn >= 1.0."""
    data_range = v.max() - v.min()
    if data_range < 10 * np.finfo(v.dtype).eps:
        data_range = 1.0
    scale = 1.0 / data_range
    return v * scale - v.min() * scale


def reference_symmetry(M, minmax=reference_minmax_column):
    seq_length = len(M)
    pooled = []
    for index in range(seq_length):
        left, right = M[index][0:index], M[index][index + 1 : seq_length]
        k = min(len(left), len(right))
        if k == 0:
            continue
        left_seq, right_seq = left[-k:], list(reversed(right[:k]))
        diffs = np.array([abs(left_seq[j] - right_seq[j]) for j in range(k)])
        pooled.extend(minmax(diffs))
    return 1 - sum(pooled) / len(pooled)


def random_attention(rng, n, dtype=np.float64):
    logits = rng.standard_normal((n, n)) * rng.uniform(0.1, 3)
    A = np.exp(logits - logits.max(1, keepdims=True))
    return (A / A.sum(1, keepdims=True)).astype(dtype)


@pytest.mark.parametrize("n", [3, 4, 5, 8, 17, 64])
def test_chen_indicators_match_reference_transcription(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        A = random_attention(rng, n)
        assert chen_locality(A) == pytest.approx(reference_locality(A), rel=1e-12)
        assert chen_symmetry(A) == pytest.approx(reference_symmetry(A), rel=1e-12)


def test_chen_symmetry_matches_sklearn_scaler():
    preprocessing = pytest.importorskip("sklearn.preprocessing")

    def sklearn_minmax(v):
        return preprocessing.MinMaxScaler().fit_transform(v.reshape(-1, 1))[:, 0]

    rng = np.random.default_rng(7)
    for n, dtype in [(9, np.float64), (30, np.float64), (30, np.float32)]:
        A = random_attention(rng, n, dtype)
        A[n // 2] = np.round(A[n // 2], 3)  # ties and a near-constant row
        expected = reference_symmetry(A, minmax=sklearn_minmax)
        assert chen_symmetry(A) == pytest.approx(expected, rel=1e-6)
    tiny = np.eye(5) + 1e-17 * np.random.default_rng(8).standard_normal((5, 5))
    assert chen_symmetry(tiny) == pytest.approx(reference_symmetry(tiny, minmax=sklearn_minmax))


def test_chen_locality_sanity():
    n = 32
    assert chen_locality(np.eye(n)) == pytest.approx(1.0)
    uniform = np.full((n, n), 1.0 / n)
    assert chen_locality(uniform) < 3.0 / n
    x = np.arange(n)
    local = np.exp(-2.0 * np.abs(np.subtract.outer(x, x)))
    local /= local.sum(1, keepdims=True)
    assert chen_locality(local) > 0.8 > chen_locality(random_attention(np.random.default_rng(0), n))


def mirror_symmetric_rows(rng, n):
    """A[i, j] = f_i(|i - j|) with a random f_i per row, rows normalised."""
    x = np.arange(n)
    profiles = rng.uniform(size=(n, n))
    A = profiles[x[:, None], np.abs(np.subtract.outer(x, x))]
    return A / A.sum(1, keepdims=True)


def test_chen_symmetry_sanity():
    rng = np.random.default_rng(3)
    mirror = mirror_symmetric_rows(rng, 20)
    assert chen_symmetry(mirror) == 1.0  # the top of its [0, 1] range
    # Transpose symmetry is a different notion: S + S^T is not at the top.
    S = rng.uniform(size=(20, 20))
    assert chen_symmetry(S + S.T) < 0.9
    assert 0.0 <= chen_symmetry(random_attention(rng, 20)) < 1.0
    # Row-wise min-max scaling: asymmetry of any size counts the same.
    noisy = mirror + 1e-9 * rng.standard_normal((20, 20))
    assert chen_symmetry(noisy) < 0.9
    assert chen_symmetry(np.arange(9.0).reshape(3, 3)) == 1.0  # one pair: normalised to 0


@pytest.mark.parametrize("bad", [np.zeros((3, 4)), np.zeros((2, 2)), np.full((3, 3), np.nan)])
def test_chen_symmetry_bad_input(bad):
    with pytest.raises(ValueError):
        chen_symmetry(bad)


def test_chen_locality_bad_input():
    with pytest.raises(ValueError):
        chen_locality(np.zeros((3, 4)))


def test_the_indicators_are_pure_numpy():
    """properties.py reads matrices, never a model: no torch, no other pe_lib module."""
    import ast
    from pathlib import Path

    import pe_lib.properties

    tree = ast.parse(Path(pe_lib.properties.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and (m.startswith(("torch", "pe_lib", "transformers")))}, imported
