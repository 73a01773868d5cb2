"""Geometry of position vectors: what a Gram matrix ``G = V V^T`` of position (or offset)
vectors says about them. Pure numpy, for the chapters and for :mod:`pe_lib.pretrained_pes`.

* :func:`cosine`: the cosine similarities of the vectors;
* :func:`ape_locality`: how much brighter the diagonal of an APE's ``P P^T`` is;
* :func:`map_similarity`: whether two sets of vectors share their pattern of similarities;
* :func:`rpe_bands`: the paper's reading of the offset vectors' ``R R^T``.
"""
from __future__ import annotations

import math

import numpy as np


def cosine(gram: np.ndarray) -> np.ndarray:
    """Cosine similarities from a Gram matrix ``G = V V^T`` (zero-norm rows give 0)."""
    gram = np.asarray(gram, dtype=np.float64)
    norms = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    scale = np.outer(norms, norms)
    return np.divide(gram, scale, out=np.zeros_like(gram), where=scale > 0)


def ape_locality(gram: np.ndarray, window: int = 8) -> dict[str, float]:
    """How much brighter the diagonal of ``P P^T`` is: mean cosine of position vectors at
    distance ``1..window`` ("near"), at distance above ``n / 2`` ("far"), and their difference
    ("contrast"; 0 when nearby positions are no more alike than distant ones)."""
    c = cosine(gram)
    n = c.shape[0]
    distance = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    near = float(c[(distance >= 1) & (distance <= window)].mean())
    far = float(c[distance > n / 2].mean())
    return {"near": near, "far": far, "contrast": near - far}


def map_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of the off-diagonal cosine similarities of two Gram matrices of the
    same size: 1 when the two sets of vectors have the same pattern of similarities."""
    ca, cb = cosine(a), cosine(b)
    if ca.shape != cb.shape:
        raise ValueError(f"maps of different sizes: {ca.shape} and {cb.shape}")
    off = ~np.eye(ca.shape[0], dtype=bool)
    x, y = ca[off], cb[off]
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def rpe_bands(gram: np.ndarray, small: int = 2) -> dict[str, float]:
    """The paper's reading of the offset-vector dot products ``R R^T`` (rows: offsets ``-k..k``).

    * ``norm_ratio``: mean squared norm of the vectors with ``|a| <= small`` over that of the
      vectors with ``|a| > k / 2`` (bright bands at small offsets: above 1);
    * ``small_cosine``: mean cosine between distinct offsets with ``|a| <= small`` (low: small
      offsets are told apart);
    * ``large_cosine``: mean cosine between distinct offsets with ``|a| > k / 2`` (high: the
      large offsets look alike).
    """
    gram = np.asarray(gram, dtype=np.float64)
    k = (gram.shape[0] - 1) // 2
    offsets = np.abs(np.arange(-k, k + 1))
    c = cosine(gram)
    sq = np.diag(gram)
    small_set, large_set = offsets <= small, offsets > k / 2

    def mean_off_diagonal(mask):
        block = c[np.ix_(mask, mask)]
        m = block.shape[0]
        return float((block.sum() - np.trace(block)) / (m * m - m)) if m > 1 else math.nan

    large_norm = sq[large_set].mean()
    return {"norm_ratio": float(sq[small_set].mean() / large_norm) if large_norm > 0 else math.nan,
            "small_cosine": mean_off_diagonal(small_set), "large_cosine": mean_off_diagonal(large_set)}
