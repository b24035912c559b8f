"""Bounds on the best value of smaller sizes from one certified support's columns.

What for.  The model-size stage (:mod:`dpstats.bss.model_size`, "Sizes certified as needed") draws
the size first and certifies a size's best support only while the bounds on the sizes' values
leave it a chance.  Where the true size is large and the signal strong, the smaller sizes are
undersized problems (which true terms to leave out), whose certificates cost the engine many times
the full-size one: every choice of the left-out terms scores within a few units of the best.  Their
values are nearly known from the larger size's certified support A (m candidate columns) alone.
This module bounds them from A, the engine's certified best support (the largest size certified
first), with no certificate of their own.

The argument, for a size k < m.  Every support S of k candidates (the forced columns added) holds
j = |S \\ A| columns outside A and k - j of A, for some j = 0..k; write S = T + B, T the forced
columns and the k - j of A, B the j outside ones.

* j = 0: S is a k-subset of A.  Each is evaluated exactly (C(m, k) of them).  The smallest value
  E0 is the value of a support, so also an upper bound on v(k), the size's best value.
* j >= 1: the ball only raises R and lam is the source's ridge, so R(T + B) >= R_lam(T + B) =
  R_lam(T) - Delta(B | T), where Delta(B | T) = u_B' Sch_BB^-1 u_B, u = c - G b_T the outside
  columns' correlations with T's ridge residual and Sch the Schur complement of G + lam I at T.
  For one column Delta({b} | T) = u_b^2 / Sch_bb exactly; for several, Delta <= |u_B|^2 /
  lambda_min(Sch_BB) <= (the j largest u_b^2) / f, with f <= lambda_min of Sch over all outside
  columns for every T inside A (the block search's floor, :meth:`~dpstats.bss.blocks.BlockSearch.
  floor`: removing columns from T only enlarges Sch).  LB_j = the smallest such bound over the
  (k - j)-subsets of A.
* every support with j or more outside columns leaves out at least m - k + j columns of A, and the
  full model's bound (:meth:`~dpstats.bss.full_model_bound.FullModelBound.removal`) covers all of
  them at once.

So v(k) >= min(E0, LB_1, ..., LB_J, FM(m - k + J + 1)) for any J; J grows while the full model's
tail bound lies below the minimum so far and the work budget lasts.  Where the signal is strong, LB_1
already exceeds E0 (one more true term left out costs more than an outside column wins back), and
the lower bound meets the upper one: the size's value is then known to within the engine's
tolerance without its own certificate.

Rounding.  Each ridge fit comes from a solve with residual rho: its value is lowered by |rho|^2 /
lam, each u_b widened by |G_bT| |rho| / lam, each Sch_bb lowered by |G_Tb| times its solve's
residual over lam and never taken below max(lam, f); every quantity further by 64 t u times its
terms' magnitudes (t the fit's columns).  The caller lowers the bounds by the evaluation error.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

_U = np.finfo(np.float64).eps

#: Work per call: supports scored exactly (j = 0) and (subset x outside column) products (j >= 1).
MAX_EXACT_SUPPORTS = 50_000
MAX_PRODUCTS = 200_000_000
#: Entries of one batch of the fits' (subsets x columns x outside columns) arrays.
_BATCH_ENTRIES = 1 << 22


def size_bounds(source, anchor_full, offset, sizes, floor, full=None):
    """{k: (lower, upper)} on the best value over supports of k candidate columns, for the k in
    ``sizes`` with 1 <= k < m (module docstring), from the anchor's columns ``anchor_full`` (full
    indices, the ``offset`` forced ones first).  ``floor``: a lower bound on the smallest eigenvalue
    of the Schur complement over the outside columns at the whole anchor (at least the ridge);
    ``full``: the anchor's :class:`~dpstats.bss.full_model_bound.FullModelBound` at mu = 0, or None.
    ``upper`` is inf where the k-subsets of the anchor were too many to score; ``lower`` is -inf where
    nothing could be said.  Values are the objective's R, not yet lowered by its evaluation error."""
    anchor_full = np.asarray(anchor_full, dtype=np.int64)
    forced, A = anchor_full[:offset], anchor_full[offset:]
    m = A.size
    mask = np.ones(source.n_columns, dtype=bool)
    mask[anchor_full] = False
    mask[:offset] = False
    O = np.nonzero(mask)[0]
    products = [0]
    out = {}
    for k in sorted({int(k) for k in sizes if 1 <= int(k) < m}, reverse=True):
        out[k] = _one_size(source, forced, A, O, k, floor, full, products)
    return out


def _subsets(columns, t):
    """Every t-subset of ``columns`` as the rows of a (C(m, t), t) array (one empty row at t = 0)."""
    rows = list(itertools.combinations(columns, t))
    return np.array(rows, dtype=np.int64).reshape(len(rows), t)


def _one_size(source, forced, A, O, k, floor, full, products):
    m = A.size
    tail = (lambda d: full.removal(d)) if full is not None else (lambda d: -math.inf)
    if math.comb(m, k) > MAX_EXACT_SUPPORTS:
        return tail(m - k), math.inf
    subsets = _subsets(A, k)
    supports = np.hstack([np.broadcast_to(forced, (subsets.shape[0], forced.size)), subsets])
    upper = float(np.min(source.values(supports)))
    lower = upper
    for j in range(1, k + 1):
        rest = tail(m - k + j)  # every support with j or more outside columns
        if rest >= lower:
            return lower, upper
        work = math.comb(m, k - j) * (forced.size + k - j + 1) * max(O.size, 1)
        if O.size < j or products[0] + work > MAX_PRODUCTS:
            return (min(lower, rest) if O.size >= j else lower), upper
        products[0] += work
        lower = min(lower, _added_columns_bound(source, forced, A, O, k - j, j, floor))
    return lower, upper


def _added_columns_bound(source, forced, A, O, t, j, floor):
    """min over the t-subsets T of A (forced columns added) of R_lam(T) - (the gain bound of j outside
    columns at T), certified against rounding (module docstring)."""
    G, c, yy, lam = source.G, source.c, float(source.yy), float(source.ridge)
    floor = max(float(floor), lam)
    subsets = _subsets(A, t)
    T_all = np.hstack([np.broadcast_to(forced, (subsets.shape[0], forced.size)), subsets])
    width = T_all.shape[1]
    c_O, d_O = c[O], source.diag[O]
    best = math.inf
    per = max(1, _BATCH_ENTRIES // max(1, width * max(O.size, 1)))
    for start in range(0, T_all.shape[0], per):
        T = T_all[start:start + per]
        N = T.shape[0]
        if width == 0:
            value = np.full(N, yy)
            u_up = np.broadcast_to(np.abs(c_O), (N, O.size))
            sch = np.broadcast_to(d_O + lam, (N, O.size))
        else:
            K = G[T[:, :, None], T[:, None, :]] + lam * np.eye(width)
            cT = c[T]
            GTO = G[T[:, :, None], O[None, None, :]]  # (N, t, |O|)
            b = np.linalg.solve(K, cT[..., None])[..., 0]
            Kb = np.einsum("nij,nj->ni", K, b)
            res_b = np.linalg.norm(cT - Kb, axis=1)
            cb = np.einsum("ni,ni->n", cT, b)
            bKb = np.einsum("ni,ni->n", b, Kb)
            value = (yy - 2.0 * cb + bKb - res_b ** 2 / lam
                     - 64 * width * _U * (abs(yy) + 2.0 * np.abs(cb) + np.abs(bKb) + np.abs(cT) @ np.ones(width)
                                          * np.abs(b).max(axis=1)))
            Gb = np.einsum("nio,ni->no", GTO, b)
            col_norm = np.linalg.norm(GTO, axis=1)  # |G_Tb| per outside column
            u_up = (np.abs(c_O[None, :] - Gb) + col_norm * (res_b / lam)[:, None]
                    + 64 * width * _U * (np.abs(c_O)[None, :] + np.einsum("nio,ni->no", np.abs(GTO), np.abs(b))))
            if j == 1:
                Z = np.linalg.solve(K, GTO)  # K^-1 G_TO
                quad = np.einsum("nio,nio->no", GTO, Z)
                res_Z = np.linalg.norm(np.einsum("nij,njo->nio", K, Z) - GTO, axis=1)
                sch = (d_O[None, :] + lam - quad - col_norm * res_Z / lam
                       - 64 * width * _U * (d_O[None, :] + np.abs(quad)))
                sch = np.maximum(sch, floor)
            else:
                sch = None
        if j == 1:
            gain = np.max(u_up * u_up / sch, axis=1)
        else:
            sq = u_up * u_up
            gain = np.partition(sq, sq.shape[1] - j, axis=1)[:, sq.shape[1] - j:].sum(axis=1) / floor
        bound = value - gain * (1.0 + 64 * _U)
        bound = np.where(np.isfinite(bound), bound, -math.inf)
        best = min(best, float(bound.min()))
    return best
