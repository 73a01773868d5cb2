r"""Quantitative indicators of the three properties of position embeddings.

Wang et al. (ICLR 2021) name three properties of a proximity function
``phi(x, y)`` between positions ``x`` and ``y``:

1. monotonicity: ``m > n  <=>  phi(x, x+m) < phi(x, x+n)``;
2. translation invariance: ``phi(x1, x1+m) = phi(x2, x2+m)``;
3. symmetry: ``phi(x, y) = phi(y, x)``.

The paper's exact indicator formulas are not known; :func:`indicators` defines
one number per property, on an ``(n, n)`` proximity matrix ``phi`` with
``phi[x, y] = phi(x, y)``: e.g. ``P @ P.T`` for an absolute position embedding
``P``, or a first-layer attention map from identical-word probing (rows are
queries, columns keys). Every indicator is invariant to ``phi -> a * phi + b``
for any ``a > 0`` and any ``b``.

:func:`chen_locality` and :func:`chen_symmetry` reimplement the two attention
indicators of Chen, Varoquaux and Suchanek, "The Locality and Symmetry of
Positional Encodings" (EMNLP Findings 2023), for comparison.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

MIN_OFFSETS = 3  # fewest offsets per anchor for a rank correlation


def _as_matrix(phi: ArrayLike, name: str = "phi", min_size: int = 3) -> np.ndarray:
    """Validate a square, finite, at least ``min_size``-by-``min_size`` matrix."""
    a = np.asarray(phi)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be a square 2-D matrix, got shape {a.shape}")
    if a.shape[0] < min_size:
        raise ValueError(f"{name} must be at least {min_size}x{min_size}, got {a.shape}")
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise ValueError(f"{name} must be real-valued, got dtype {a.dtype}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


# --------------------------------------------------------------------------
# Indicators of Wang et al.'s three properties
# --------------------------------------------------------------------------


def _unit_scaled(a: np.ndarray) -> np.ndarray:
    """``a / max|a|`` in float64, so that squares neither underflow nor overflow."""
    a = a.astype(np.float64)
    peak = np.max(np.abs(a))
    return a / peak if peak > 0 else a


def _spearman_with_offset(values: np.ndarray) -> float:
    """Spearman correlation between offsets 1..k and ``values``; NaN if ``values`` is constant."""
    from scipy.stats import rankdata  # here, not at the top: scipy.stats adds a second to every command's start

    if np.ptp(values) == 0:
        return np.nan
    k = values.size
    x = np.arange(k) - (k - 1) / 2  # centred ranks of the offsets (no ties)
    y = rankdata(values)
    y -= y.mean()
    return float(np.clip(x @ y / np.sqrt((x @ x) * (y @ y)), -1.0, 1.0))


def _directional_monotonicity(phi: np.ndarray, window: int | None, backward: bool) -> float:
    """Mean over anchors of ``-rho_S(m, phi[x, x -+ m])``; NaN if no anchor qualifies."""
    scores = []
    for x in range(phi.shape[0]):
        # values[m - 1] = phi[x, x - m] (backward) or phi[x, x + m] (forward)
        values = (phi[x, :x][::-1] if backward else phi[x, x + 1 :])[:window]
        if values.size >= MIN_OFFSETS:
            rho = _spearman_with_offset(values)
            if not np.isnan(rho):
                scores.append(-rho)
    return float(np.mean(scores)) if scores else np.nan


def monotonicity(phi: ArrayLike, window: int | None = None) -> dict[str, float]:
    r"""Rank-correlation indicator of monotonicity, in ``[-1, 1]``.

    For an anchor ``x`` with ``k`` forward offsets ``m = 1..k``,
    ``k = n - 1 - x`` (or ``min(n - 1 - x, w)`` with a window ``w``),

    .. math:: \mathrm{mono}^{\to}(x) = -\rho_S\bigl(m,\ \phi[x, x+m]\bigr)_{m=1..k},

    with :math:`\rho_S` Spearman's rank correlation (average ranks for ties);
    backwards likewise with ``phi[x, x-m]``, ``m = 1..x``. Then

    .. math::

        \mathrm{mono}^{\to} = \operatorname{mean}_x \mathrm{mono}^{\to}(x), \quad
        \mathrm{mono}^{\leftarrow} = \operatorname{mean}_x \mathrm{mono}^{\leftarrow}(x), \quad
        \mathrm{mono} = (\mathrm{mono}^{\to} + \mathrm{mono}^{\leftarrow}) / 2.

    ``1`` means proximity strictly decreases with distance on every row, ``-1``
    that it strictly increases, ``0`` no monotone trend. The main diagonal
    ``phi[x, x]`` is not used. Anchors with fewer than 3 offsets are skipped,
    and so are anchors whose values are all equal (Spearman is undefined
    there). A direction with no anchor left is NaN; ``mono`` is the mean of the
    directions that are not NaN (NaN if neither is). Being rank-based, the
    indicator is invariant to any strictly increasing transform of ``phi``.

    Parameters
    ----------
    phi : array_like
        ``(n, n)`` proximity matrix, ``n >= 3``.
    window : int, optional
        Use only offsets ``m <= window`` (local monotonicity); ``>= 3``.

    Returns
    -------
    dict
        ``{"forward": ..., "backward": ..., "mean": ...}``.
    """
    a = _as_matrix(phi)
    if window is not None and (int(window) != window or window < MIN_OFFSETS):
        raise ValueError(f"window must be an integer >= {MIN_OFFSETS}, got {window!r}")
    w = None if window is None else int(window)
    forward = _directional_monotonicity(a, w, backward=False)
    backward = _directional_monotonicity(a, w, backward=True)
    both = [v for v in (forward, backward) if not np.isnan(v)]
    return {"forward": forward, "backward": backward, "mean": float(np.mean(both)) if both else np.nan}


def translation_invariance(phi: ArrayLike) -> float:
    r"""Share of the variance of ``phi`` explained by the offset ``y - x``, in ``[0, 1]``.

    With diagonals :math:`D_m = \{\phi[x, x+m]\}` for ``m = -(n-1), ..., n-1``
    (the main diagonal ``m = 0`` included), of length :math:`|D_m| = n - |m|`,

    .. math::

        \mathrm{TI} = 1 - \frac{\sum_m |D_m| \operatorname{Var}(D_m) / n^2}
                               {\operatorname{Var}(\phi)}
                    = 1 - \frac{\mathrm{SS}_\text{within offsets}}{\mathrm{SS}_\text{total}},

    the correlation ratio :math:`\eta^2` of a one-way analysis of variance of
    the entries of ``phi`` grouped by offset (population variances,
    :math:`\sum_m |D_m| = n^2`). A Toeplitz ``phi`` (``phi[x, y]`` a function
    of ``y - x`` only) scores 1. The main diagonal is included, so for
    ``phi = P P^T`` unequal norms :math:`\|p_x\|^2` count against
    translation invariance; conversely a random Gaussian ``P`` (``n x D``)
    scores about ``D / (n + D)``, all of it from the contrast between the
    diagonal (``~D``) and the rest (``~0``). Entries that are i.i.d. noise score about
    ``2/n`` (``2n - 1`` groups among ``n^2`` entries; the two corner diagonals
    of length 1 have zero variance by construction), not exactly 0. A constant
    ``phi`` scores 1. Invariant to ``phi -> a phi + b``, ``a != 0``.

    Parameters
    ----------
    phi : array_like
        ``(n, n)`` proximity matrix, ``n >= 3``.

    Returns
    -------
    float
    """
    a = _as_matrix(phi)
    if np.ptp(a) == 0:
        return 1.0
    a = _unit_scaled(a)
    n = a.shape[0]
    total = np.var(a - a[0, 0])
    # Shift each diagonal by one of its own entries so that a constant
    # diagonal has exactly zero variance.
    within = sum(
        d.size * np.var(d - d[0]) for d in (np.diagonal(a, m) for m in range(-(n - 1), n))
    )
    return float(np.clip(1.0 - within / (n * n) / total, 0.0, 1.0))


def symmetry(phi: ArrayLike) -> float:
    r"""Pearson correlation between ``phi[x, y]`` and ``phi[y, x]``, in ``[-1, 1]``.

    .. math:: \mathrm{sym} = \operatorname{corr}\bigl(\phi[x, y],\ \phi[y, x]\bigr)_{x < y}

    over the ``n(n-1)/2`` strictly-upper-triangular pairs (the diagonal is
    trivially symmetric and left out). ``1`` for a symmetric matrix, ``-1``
    when the upper triangle mirrors the lower one reversed (e.g. a purely
    antisymmetric ``phi``). If the two triangles are identical the result is 1
    (even when constant); otherwise, if either triangle is constant, the
    correlation is undefined and the result is NaN. Invariant to
    ``phi -> a phi + b``, ``a > 0``.

    Parameters
    ----------
    phi : array_like
        ``(n, n)`` proximity matrix, ``n >= 3``.

    Returns
    -------
    float
    """
    a = _unit_scaled(_as_matrix(phi))
    rows, cols = np.triu_indices(a.shape[0], k=1)
    upper, lower = a[rows, cols], a[cols, rows]
    if np.array_equal(upper, lower):
        return 1.0
    if np.ptp(upper) == 0 or np.ptp(lower) == 0:
        return np.nan
    upper = upper - upper.mean()
    lower = lower - lower.mean()
    r = upper @ lower / np.sqrt((upper @ upper) * (lower @ lower))
    return float(np.clip(r, -1.0, 1.0))


def indicators(phi: ArrayLike, window: int | None = None) -> dict[str, float]:
    r"""The three property indicators of a proximity matrix.

    Parameters
    ----------
    phi : array_like
        ``(n, n)`` proximity matrix (``phi[x, y]``, rows = queries for
        attention), real, finite, ``n >= 3``.
    window : int, optional
        Also report local monotonicity over offsets ``1..window`` (``>= 3``).

    Returns
    -------
    dict
        ``monotonicity`` (in [-1, 1], see :func:`monotonicity`), with its
        parts ``monotonicity_forward`` and ``monotonicity_backward``;
        ``translation_invariance`` (in [0, 1], :func:`translation_invariance`);
        ``symmetry`` (in [-1, 1], :func:`symmetry`); and, when ``window`` is
        given, ``monotonicity_local`` with ``monotonicity_local_forward`` and
        ``monotonicity_local_backward``. All are invariant to
        ``phi -> a phi + b`` with ``a > 0``.

    Raises
    ------
    ValueError
        If ``phi`` is not a finite real square matrix of size at least 3, or
        ``window`` is not an integer >= 3.
    """
    a = _as_matrix(phi)
    mono = monotonicity(a)
    out = {
        "monotonicity": mono["mean"],
        "monotonicity_forward": mono["forward"],
        "monotonicity_backward": mono["backward"],
        "translation_invariance": translation_invariance(a),
        "symmetry": symmetry(a),
    }
    if window is not None:
        local = monotonicity(a, window)
        out["monotonicity_local"] = local["mean"]
        out["monotonicity_local_forward"] = local["forward"]
        out["monotonicity_local_backward"] = local["backward"]
    return out


# --------------------------------------------------------------------------
# Chen, Varoquaux & Suchanek (EMNLP Findings 2023)
# --------------------------------------------------------------------------


def chen_locality(A: ArrayLike) -> float:
    r"""Locality of an attention matrix (Chen et al. 2023), in ``[0, 1]`` for row-stochastic ``A``.

    .. math:: \mathrm{Loc}(A) = \frac{1}{n} \sum_{i=1}^{n} \sum_{j=1}^{n} \frac{A_{ij}}{2^{|i-j|}}

    as in ``matrix_locality`` of ``locality_symmetry/calculate.py`` in
    https://github.com/tigerchen52/locality_symmetry (commit 4294121): each row
    ``i`` (query) weights the attention on key ``j`` by ``2^{-|i-j|}`` (the
    diagonal by 1), sums, and the row sums are averaged. 1 iff every query
    attends only to itself; a uniform row scores at most ``3/n``. Rows are not
    checked to sum to 1 (neither does the reference).

    Parameters
    ----------
    A : array_like
        ``(n, n)`` attention matrix, rows = queries, ``n >= 1``.

    Returns
    -------
    float
    """
    a = _as_matrix(A, "A", min_size=1).astype(np.float64)
    idx = np.arange(a.shape[0])
    weights = np.exp2(-np.abs(idx[:, None] - idx[None, :]).astype(np.float64))
    return float((a * weights).sum(axis=1).mean())


def _minmax_like_sklearn(v: np.ndarray) -> np.ndarray:
    """``sklearn.preprocessing.MinMaxScaler().fit_transform`` of one column.

    scikit-learn (>= 1.0, ``_handle_zeros_in_scale``) replaces a range below
    ``10 * eps(dtype)`` by 1, so a (near-)constant column maps to ``v - min(v)``.
    """
    lo = v.min()
    span = v.max() - lo
    if span < 10 * np.finfo(v.dtype).eps:
        span = v.dtype.type(1)
    return (v - lo) / span


def chen_symmetry(A: ArrayLike) -> float:
    r"""Left/right symmetry of an attention matrix (Chen et al. 2023), in ``[0, 1]``.

    Unlike :func:`symmetry` (``phi = phi^T``), this asks whether each query
    attends equally to the keys ``k`` positions to its left and to its right,
    ``A[i, i-k] = A[i, i+k]``; the two notions agree on Toeplitz matrices
    (``c(-m) = c(m)`` either way) but not in general: a random ``S + S^T``
    is transpose-symmetric yet scores about 0.6 here.

    For each query ``i`` with ``K_i = min(i, n-1-i) >= 1`` keys on both sides
    (0-based; the first and last rows are skipped), take the mirrored
    differences and min-max normalise them within the row,

    .. math::

        d_{ik} = |A_{i,i-k} - A_{i,i+k}|, \quad k = 1..K_i, \qquad
        \tilde d_{ik} = \frac{d_{ik} - \min_k d_{ik}}{\max_k d_{ik} - \min_k d_{ik}},

    then pool all ``N = sum_i K_i`` normalised values (each pair counts once,
    so rows near the middle weigh more) and

    .. math:: \mathrm{Sym}(A) = 1 - \frac{1}{N} \sum_i \sum_{k=1}^{K_i} \tilde d_{ik}.

    This is ``cal_matrix_symmetry`` of ``locality_symmetry/calculate.py`` in
    https://github.com/tigerchen52/locality_symmetry (commit 4294121), which
    normalises each row with scikit-learn's ``MinMaxScaler``: a row whose
    differences span less than ``10 * eps`` of the dtype (always the case for
    ``K_i = 1``, e.g. the only row of a 3x3 matrix) is shifted to its minimum
    and not rescaled, so it contributes (about) 0. Consequences: an ``A``
    with every row mirror-symmetric about its diagonal entry scores 1; and because each row with ``K_i >= 2`` and
    unequal differences is stretched to span [0, 1], the score measures how
    the asymmetry is *spread* over offsets, not its size (an ``A`` symmetric
    up to tiny noise scores about 0.5; so does a causal, lower-triangular one). Arithmetic is done in the input's
    floating dtype (float64 for other dtypes) as in the reference, since the
    threshold depends on it.

    Parameters
    ----------
    A : array_like
        ``(n, n)`` attention matrix, rows = queries, ``n >= 3`` (the
        reference divides by zero for ``n < 3``).

    Returns
    -------
    float
    """
    a = _as_matrix(A, "A")
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(np.float64)
    n = a.shape[0]
    normalised = []
    for i in range(1, n - 1):
        k = np.arange(1, min(i, n - 1 - i) + 1)
        normalised.append(_minmax_like_sklearn(np.abs(a[i, i - k] - a[i, i + k])))
    return float(1 - np.concatenate(normalised).mean())
