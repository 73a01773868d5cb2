r"""Closed-form analysis of sinusoidal position embeddings.

A sinusoidal position embedding of dimension ``D`` maps position ``x`` to

    p_x = [sin(w_1 x), ..., sin(w_{D/2} x), cos(w_1 x), ..., cos(w_{D/2} x)]

(Vaswani et al. 2017 interleave sines and cosines; concatenating the two halves
is a permutation of the coordinates and changes no dot product). Because
``sin(a) sin(b) + cos(a) cos(b) = cos(a - b)``, the dot product of two position
vectors depends only on the offset ``m = x - y``:

    <p_x, p_y> = psi(x - y),        psi(m) = \sum_i cos(w_i m).

So sinusoidal position embeddings are translation invariant and symmetric
(``psi`` is even), and they are monotone exactly where ``psi`` decreases, i.e.
where ``psi'(m) = -\sum_i w_i sin(w_i m)`` is negative (Wang et al., ICLR 2021).

Two readings of "monotone range" are provided. :func:`monotonic_range` treats
the offset as real: the first positive zero of ``psi'``, about 6 for the
standard frequencies (6.1657 for ``D = 768``), because the fastest term
``cos(m)`` gives ``psi`` a small bump just before ``2 pi``.
:func:`integer_monotonic_range` samples ``psi`` at integer offsets, as
positions are: ``psi(0) > psi(1) > ... > psi(M)`` holds up to ``M = 43`` for
``D = 768``, close to the "about 50" of the seed summary of the paper.

Frequency convention
--------------------
Vaswani et al. use ``w_i = base^(-2i/D)`` for ``i = 0, ..., D/2 - 1``, so the
fastest frequency is exactly 1. The paper writes the sum as ``i = 1, ..., D/2``
with the same formula, which shifts every exponent by one step: frequencies
run from ``base^(-2/D)`` down to ``base^(-1)``. Both are available through
``first_index`` (0 = Vaswani, the default, and what BERT-style code uses;
1 = the paper's indexing). Every function that takes ``dim`` also accepts an
explicit ``freqs`` array, which overrides ``dim``/``base``/``first_index`` so
that frequencies learned by a model can be analysed the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq

DEFAULT_BASE = 10000.0

# Grid step of the sign-change scan in monotonic_range, in radians of the
# fastest frequency (about 1/125 of its period), and grid points per chunk.
_SCAN_STEP_RADIANS = 0.05
_SCAN_CHUNK = 4096


def frequencies(dim: int, base: float = DEFAULT_BASE, first_index: int = 0) -> np.ndarray:
    r"""Frequencies of a sinusoidal position embedding.

    .. math:: w_i = \mathrm{base}^{-2i/D}, \quad i = s, s+1, \ldots, s + D/2 - 1,

    where ``s = first_index`` (0: Vaswani et al. 2017; 1: the sum
    ``i = 1..D/2`` as written in Wang et al. 2021).

    Parameters
    ----------
    dim : int
        Embedding dimension ``D``; must be a positive even integer.
    base : float
        The base of the geometric progression (10000 in both papers); > 1.
    first_index : {0, 1}
        The first index ``s`` of the sum.

    Returns
    -------
    numpy.ndarray
        Shape ``(D/2,)``, strictly decreasing, float64.
    """
    if int(dim) != dim or dim <= 0 or dim % 2:
        raise ValueError(f"dim must be a positive even integer, got {dim!r}")
    if not base > 1:
        raise ValueError(f"base must be > 1, got {base!r}")
    if first_index not in (0, 1):
        raise ValueError(f"first_index must be 0 or 1, got {first_index!r}")
    i = np.arange(first_index, first_index + dim // 2, dtype=np.float64)
    return np.power(float(base), -2.0 * i / dim)


def _resolve_freqs(
    dim: int | None, base: float, freqs: ArrayLike | None, first_index: int
) -> np.ndarray:
    """Return ``freqs`` as a validated 1-D float array, or build them from ``dim``."""
    if freqs is None:
        if dim is None:
            raise ValueError("pass either dim or freqs")
        return frequencies(dim, base, first_index)
    w = np.asarray(freqs, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"freqs must be a non-empty 1-D array, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("freqs must be finite")
    return w


def psi(
    m: ArrayLike,
    dim: int | None = None,
    base: float = DEFAULT_BASE,
    freqs: ArrayLike | None = None,
    first_index: int = 0,
) -> np.ndarray:
    r"""Dot product of two sinusoidal position vectors at offset ``m``.

    .. math:: \psi(m) = \sum_i \cos(w_i m) = \langle p_x, p_{x+m} \rangle.

    ``psi(0) = D/2`` and ``psi`` is even.

    Parameters
    ----------
    m : array_like
        Offsets (any shape; need not be integers).
    dim, base, first_index
        Define the frequencies through :func:`frequencies`.
    freqs : array_like, optional
        Explicit frequencies ``w_i``; overrides ``dim``, ``base`` and ``first_index``.

    Returns
    -------
    numpy.ndarray
        Same shape as ``m``.
    """
    w = _resolve_freqs(dim, base, freqs, first_index)
    m = np.asarray(m, dtype=np.float64)
    return np.cos(np.multiply.outer(m, w)).sum(axis=-1)


def psi_prime(
    m: ArrayLike,
    dim: int | None = None,
    base: float = DEFAULT_BASE,
    freqs: ArrayLike | None = None,
    first_index: int = 0,
) -> np.ndarray:
    r"""Derivative of :func:`psi` with respect to the offset.

    .. math:: \psi'(m) = -\sum_i w_i \sin(w_i m).

    Parameters and return value as for :func:`psi`.
    """
    w = _resolve_freqs(dim, base, freqs, first_index)
    m = np.asarray(m, dtype=np.float64)
    return -(np.sin(np.multiply.outer(m, w)) @ w)


def _nonzero_freqs(
    dim: int | None, base: float, freqs: ArrayLike | None, first_index: int
) -> np.ndarray:
    """``|w_i|`` without the zero frequencies (which contribute a constant to ``psi``)."""
    w = np.abs(_resolve_freqs(dim, base, freqs, first_index))
    w = w[w > 0]
    if w.size == 0:
        raise ValueError("psi is constant: all frequencies are zero")
    return w


def _first_nonnegative(
    f: Callable[[np.ndarray], np.ndarray], step: float, limit: float
) -> float:
    """First grid point ``m = k * step`` (k = 1, 2, ...) with ``f(m) >= 0``, up to ``limit``."""
    start = 0
    while start * step < limit:
        grid = step * np.arange(start + 1, start + _SCAN_CHUNK + 1)
        grid = grid[grid <= limit]
        hits = np.flatnonzero(f(grid) >= 0)
        if hits.size:
            return float(grid[hits[0]])
        start += _SCAN_CHUNK
    raise ValueError(f"psi keeps decreasing up to offset {limit:g}; raise max_offset")


def monotonic_range(
    dim: int | None = None,
    base: float = DEFAULT_BASE,
    freqs: ArrayLike | None = None,
    first_index: int = 0,
    max_offset: float | None = None,
) -> float:
    r"""Largest real ``M`` such that ``psi`` is strictly decreasing on ``[0, M]``.

    Since ``psi'(0) = 0`` and ``psi'(m) = -m \sum_i w_i^2 + O(m^3) < 0`` for small
    ``m > 0``, this is the first positive zero of ``psi'``:

    .. math:: M = \min\{ m > 0 : \psi'(m) = 0 \}.

    This treats the offset as a real number. For the sinusoidal APE with
    ``w_0 = 1`` the term ``cos(m)`` makes ``psi'`` briefly positive just before
    ``m = 2 pi``, so ``M`` is about 6 whatever ``D`` is (6.1657 for ``D = 768``),
    although ``psi`` sampled at *integer* offsets keeps decreasing much longer;
    see :func:`integer_monotonic_range` for that reading.

    Algorithm: scan ``psi'`` on the grid ``m_k = k h`` with
    ``h = 0.05 / max_i |w_i|`` (1/125 of the period of the fastest frequency;
    ``psi'(h) < 0`` because every ``w_i h <= 0.05``) for the first grid point
    where ``psi' >= 0``, then refine the bracket ``[m_k - h, m_k]`` with
    :func:`scipy.optimize.brentq` (``xtol = 1e-12``). Two zeros closer together
    than ``h`` (a near-tangency) would be missed.

    Parameters
    ----------
    dim, base, freqs, first_index
        As for :func:`psi`.
    max_offset : float, optional
        Give up beyond this offset. Default: ``2 pi / min_i |w_i|`` over the
        non-zero frequencies (one period of the slowest one).

    Returns
    -------
    float
        ``M``, in units of positions.

    Raises
    ------
    ValueError
        If all frequencies are zero, or ``psi'`` has no zero up to ``max_offset``.
    """
    w = _nonzero_freqs(dim, base, freqs, first_index)
    step = _SCAN_STEP_RADIANS / w.max()
    limit = 2 * np.pi / w.min() if max_offset is None else float(max_offset)

    def deriv(m: ArrayLike) -> np.ndarray:
        return psi_prime(m, freqs=w)

    hi = _first_nonnegative(deriv, step, limit)
    return float(brentq(deriv, hi - step, hi, xtol=1e-12, rtol=4 * np.finfo(float).eps))


def integer_monotonic_range(
    dim: int | None = None,
    base: float = DEFAULT_BASE,
    freqs: ArrayLike | None = None,
    first_index: int = 0,
    max_offset: float | None = None,
) -> int:
    r"""Largest integer ``M`` with ``psi(0) > psi(1) > ... > psi(M)``.

    Positions are integers, so this is the range of offsets over which the
    sinusoidal embedding is monotone in the sense of the paper's property 1
    (``phi(x, x+m) < phi(x, x+n)`` for integers ``m > n``). Each step is
    computed in the cancellation-free form

    .. math:: \psi(m) - \psi(m-1) = -2 \sum_i \sin(w_i (m - 1/2)) \sin(w_i / 2).

    For ``D = 768`` this gives ``M = 43`` (the seed's "about 50"), while the
    continuous :func:`monotonic_range` is about 6.17: between integers ``psi``
    has small bumps that integer sampling steps over.

    Parameters and errors as for :func:`monotonic_range`.

    Returns
    -------
    int
        ``M >= 0`` (``M = 0`` when already ``psi(1) >= psi(0)``).
    """
    w = _nonzero_freqs(dim, base, freqs, first_index)
    limit = 2 * np.pi / w.min() if max_offset is None else float(max_offset)

    def increment(m: np.ndarray) -> np.ndarray:
        return -2 * (np.sin(np.multiply.outer(m - 0.5, w)) @ np.sin(w / 2))

    return int(_first_nonnegative(increment, 1.0, limit)) - 1


def sinusoid_table(positions: ArrayLike, freqs: ArrayLike) -> np.ndarray:
    r"""Sinusoidal position vectors for the given positions.

    Row ``r`` is

    .. math:: p_{x_r} = [\sin(w_1 x_r), \ldots, \sin(w_K x_r),
                          \cos(w_1 x_r), \ldots, \cos(w_K x_r)],

    so ``table @ table.T == psi(x_r - x_s)`` for every pair of rows.

    Parameters
    ----------
    positions : array_like
        1-D positions ``x_r``.
    freqs : array_like
        1-D frequencies ``w_i`` (e.g. ``frequencies(D)``, or learned ones).

    Returns
    -------
    numpy.ndarray
        Shape ``(len(positions), 2 * len(freqs))``.
    """
    w = _resolve_freqs(None, DEFAULT_BASE, freqs, 0)
    x = np.asarray(positions, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"positions must be 1-D, got shape {x.shape}")
    angles = np.multiply.outer(x, w)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
