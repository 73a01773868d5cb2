"""Tests for pe_lib.sinusoid."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_lib.sinusoid import (
    frequencies,
    integer_monotonic_range,
    monotonic_range,
    psi,
    psi_prime,
    sinusoid_table,
)

# Pinned values (float64, brentq to 1e-12). Both agree with a dense-grid
# check below; the continuous range is ~6 (not ~50) because the w_0 = 1 term
# gives psi a small bump just before 2*pi; sampled at integer offsets psi
# keeps decreasing up to 43 for D = 768.
PINNED_RANGE = {
    (768, 0): 6.165740849234159,
    (64, 0): 5.0535060519064,
    (768, 1): 6.315415573330846,
    (64, 1): 6.738958627784246,
}
PINNED_INTEGER_RANGE = {(768, 0): 43, (64, 0): 5, (768, 1): 44, (64, 1): 7}


def test_frequencies_conventions():
    w0 = frequencies(8)
    np.testing.assert_allclose(w0, [1.0, 10000**-0.25, 10000**-0.5, 10000**-0.75])
    w1 = frequencies(8, first_index=1)
    np.testing.assert_allclose(w1, [10000**-0.25, 10000**-0.5, 10000**-0.75, 1e-4])
    assert frequencies(768).shape == (384,)
    assert np.all(np.diff(frequencies(768)) < 0)


@pytest.mark.parametrize(
    "kwargs", [{"dim": 7}, {"dim": 0}, {"dim": 8, "base": 1.0}, {"dim": 8, "first_index": 2}]
)
def test_frequencies_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        frequencies(**kwargs)


def test_psi_direct_sum_and_shapes():
    w = frequencies(64)
    m = np.array([[0.0, 1.5], [-3.0, 40.0]])
    expected = np.vectorize(lambda t: sum(np.cos(wi * t) for wi in w))(m)
    np.testing.assert_allclose(psi(m, 64), expected, rtol=1e-12)
    assert psi(m, 64).shape == m.shape
    assert psi(0.0, 64) == pytest.approx(32.0)
    np.testing.assert_allclose(psi(m, 64), psi(-m, 64))  # even


def test_freqs_override_dim():
    w = np.array([0.3, 0.02, 1.7])
    m = np.linspace(-5, 5, 11)
    np.testing.assert_allclose(psi(m, dim=768, freqs=w), np.cos(np.outer(m, w)).sum(1))
    np.testing.assert_allclose(psi_prime(m, freqs=w), -(np.sin(np.outer(m, w)) @ w))


def test_psi_needs_dim_or_freqs():
    with pytest.raises(ValueError):
        psi(1.0)


def test_psi_prime_is_derivative_of_psi():
    m = np.linspace(-30, 80, 57)
    h = 1e-5
    numeric = (psi(m + h, 128) - psi(m - h, 128)) / (2 * h)
    np.testing.assert_allclose(psi_prime(m, 128), numeric, atol=1e-6)


@pytest.mark.parametrize("dim", [64, 768])
def test_table_gram_is_psi_of_offset(dim):
    x = np.arange(50, dtype=float)
    for w in (frequencies(dim), np.random.default_rng(0).uniform(0, 2, dim // 2)):
        table = sinusoid_table(x, w)
        assert table.shape == (50, dim)
        np.testing.assert_allclose(table @ table.T, psi(np.subtract.outer(x, x), freqs=w), atol=1e-9)


@pytest.mark.parametrize("dim,first_index", sorted(PINNED_RANGE))
def test_monotonic_range_pinned_and_checked_on_dense_grid(dim, first_index):
    r = monotonic_range(dim, first_index=first_index)
    assert r == pytest.approx(PINNED_RANGE[dim, first_index], rel=1e-6)
    # Independent check: psi on a 1e-3 grid falls strictly up to r, then rises.
    grid = np.arange(0.0, r + 0.3, 1e-3)
    steps = np.diff(psi(grid, dim, first_index=first_index))
    before = grid[1:] <= r
    assert np.all(steps[before] < 0)
    assert np.any(steps[~before] > 0)
    assert abs(psi_prime(r, dim, first_index=first_index)) < 1e-9


@pytest.mark.parametrize("dim,first_index", sorted(PINNED_INTEGER_RANGE))
def test_integer_monotonic_range_pinned(dim, first_index):
    M = integer_monotonic_range(dim, first_index=first_index)
    assert M == PINNED_INTEGER_RANGE[dim, first_index]
    values = psi(np.arange(M + 2), dim, first_index=first_index)
    assert np.all(np.diff(values[: M + 1]) < 0)
    assert values[M + 1] >= values[M]


def test_monotonic_range_accepts_learned_freqs():
    assert monotonic_range(freqs=frequencies(64)) == pytest.approx(monotonic_range(64), rel=1e-12)
    assert monotonic_range(freqs=[0.0, 1.0, 0.0]) == pytest.approx(np.pi, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(0.05, 20.0))
def test_monotonic_range_scales_inversely_with_frequencies(scale):
    # psi(m; c w) = psi(c m; w), so the range shrinks by c.
    w = frequencies(32)
    assert monotonic_range(freqs=scale * w) == pytest.approx(monotonic_range(freqs=w) / scale, rel=1e-8)


def test_monotonic_range_errors():
    with pytest.raises(ValueError, match="constant"):
        monotonic_range(freqs=[0.0, 0.0])
    with pytest.raises(ValueError, match="max_offset"):
        monotonic_range(64, max_offset=2.0)
    with pytest.raises(ValueError):
        monotonic_range(freqs=[[1.0]])
