"""A first support by iterative hard thresholding on the ridge objective.

Prastakos, Behdin and Mazumder (2025), Appendix B.2: a few iterations of projected
gradient descent on
||y - X b||^2 + lam ||b||^2, keeping the s largest candidate coefficients (forced
columns always kept) and projecting onto the ball ||b|| <= r, give a good first support
for the outer-approximation engine.  Its quality only affects speed: the engine
certifies whatever it returns.

References
----------
Blumensath and Davies (2009), Iterative hard thresholding for compressed sensing.
Prastakos, Behdin and Mazumder (2025), Differentially private high-dimensional variable
selection via integer programming, Appendix B.2.
"""
from __future__ import annotations

import numpy as np


def _largest_eigenvalue(matvec, dim, iterations=30):
    v = np.ones(dim) / np.sqrt(dim)
    lam = 0.0
    for _ in range(iterations):
        w = matvec(v)
        norm = np.linalg.norm(w)
        if norm == 0:
            return 0.0
        lam = float(v @ w)
        v = w / norm
    return max(lam, float(np.linalg.norm(matvec(v))))


def iht_support(source, s, iterations=50):
    """Candidate support (full column indices, forced first) after ``iterations`` IHT steps.

    Parameters
    ----------
    source : GramSource, MatrixFreeSource or HingeSource
        Its ``ridge`` and ``radius`` are lam and r of the objective.
    s : int
        Number of candidate columns to keep.
    """
    ridge, radius = source.ridge, source.radius
    p = source.n_columns
    forced = np.array([0] if source.intercept else [], dtype=np.int64)
    cand_mask = np.ones(p, dtype=bool)
    cand_mask[forced] = False
    lipschitz = 2.0 * (_largest_eigenvalue(source.matvec, p) + ridge)
    step = 1.0 / max(lipschitz, 1e-300)
    b = np.zeros(p)
    keep = None
    for _ in range(iterations):
        grad = 2.0 * (source.matvec(b) - source.c) + 2.0 * ridge * b
        b = b - step * grad
        score = np.where(cand_mask, np.abs(b), -np.inf)
        keep = np.argpartition(-score, s - 1)[:s] if s < cand_mask.sum() else np.nonzero(cand_mask)[0]
        mask = np.zeros(p, dtype=bool)
        mask[keep] = True
        mask[forced] = True
        b = np.where(mask, b, 0.0)
        norm = np.linalg.norm(b)
        if norm > radius:
            b *= radius / norm
    if keep is None or not np.any(b[keep]):
        score = np.where(cand_mask, np.abs(source.c), -np.inf)
        keep = np.argsort(-score, kind="stable")[:s]
    return np.concatenate([forced, np.sort(keep)])
