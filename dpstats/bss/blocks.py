"""Exact minimisation over a mistakes block by Schur-complement branch and bound.

Block i of the mistakes mechanism (spec 01, section 1.6) holds the supports
S = (S0 \\ D) + B with D an i-subset of the anchor S0 and B an i-subset of the columns
outside S0.  For a fixed D, put T = S0 \\ D (forced columns included) and, for any
mu >= 0, lam' = lam + mu.  Two exact facts give a lower bound on every R(T + B):

1. Weak duality for the ball:  R(S) >= R_{lam'}(S) - mu r^2, where R_{lam'} is the
   ridge value with penalty lam' and no ball (mu is a Lagrange multiplier of
   ||b||^2 <= r^2; equality at the support's own optimal multiplier).
2. Block elimination (Schur complement):  R_{lam'}(T + B) = R_{lam'}(T) - Delta(B),
   Delta(B) = u_B' Sch_B^{-1} u_B, with u = X'(y - X_T b_T) the residual correlations at T
   and Sch = G + lam' I - G_{.T} (G_TT + lam' I)^{-1} G_{T.} (a principal submatrix of one
   matrix for all B).

So a support with Delta(B) <= h_D = R_{lam'}(T) - mu r^2 - (incumbent - slack) cannot beat
the incumbent by more than ``slack``.  Delta is bounded without enumerating B:
with v_j^2 = u_j^2 / Sch_jj (the exact gain of one column) and M = the unit-diagonal
scaling of Sch, Delta(B) <= |v_B|^2 / lambda_min(M_B), and lambda_min(M_B) >= gamma, a
bound valid for every |B| = i inside a candidate set C: the larger of lambda_min(M_C)
(Cauchy interlacing) and the Gershgorin bound 1 - (i - 1) max_{j != k in C} |M_jk|.
Along a branch P (columns already chosen), the chain rule
Delta(P + Q) = Delta(P) + Delta(Q | P) and the same argument on the conditional Schur
complement (whose smallest eigenvalue is at least that of M_{P+Q}, hence >= gamma, and
whose diagonal is <= 1) give Delta(Q | P) <= (sum of the |Q| largest exact conditional
one-column gains) / gamma, with gamma = 1 when one column is left (then it is exact).
Columns that cannot reach h_D are dropped from C (Sch >= lam' I bounds the gains by
u_j^2 / lam' first), which raises gamma; branches below h_D are pruned.  Every leaf B
left has Delta(B) > h_D and is evaluated exactly with the true objective.

The result is the exact block minimum up to ``slack`` (no MILP, no solver tolerance);
when the search would exceed ``max_nodes`` it gives up (returns None) and the caller
falls back to the outer-approximation MILP.

References
----------
Seed 000, section 2.1.2 (the blocks); Horn and Johnson, Matrix Analysis, Theorems 4.3.28
(interlacing) and 6.1.1 (Gershgorin); Boyd and Vandenberghe, Convex Optimization, 5.2
(weak duality).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np


@dataclass
class BlockResult:
    """Exact minimiser of one block (candidate indices), its value and a lower bound."""

    support: tuple
    value: float
    lower_bound: float
    nodes: int
    leaves: int
    dropped_sets: int
    pruned_sets: int


class _TooLarge(Exception):
    pass


def _gamma(M, i):
    """A lower bound on lambda_min(M_B) for every i-subset B of M's index set."""
    m = M.shape[0]
    if m <= 1 or i <= 1:
        return 1.0
    off = np.abs(M - np.diag(np.diag(M)))
    gersh = 1.0 - (i - 1) * float(off.max())
    # rows' (i - 1) largest off-diagonal entries: a sharper Gershgorin bound
    k = min(i - 1, m - 1)
    top = -np.partition(-off, k - 1, axis=1)[:, :k].sum(axis=1) if k > 0 else np.zeros(m)
    gersh = max(gersh, 1.0 - float(top.max()))
    eig = float(np.linalg.eigvalsh(M)[0]) if m <= 3000 else 0.0
    return max(gersh, eig, 1e-12)


def _gram_block(source, cols):
    """G[cols, cols] without forming more of G than needed (matrix-free: X_C'X_C)."""
    if getattr(source, "G", None) is not None:
        return source.G[np.ix_(cols, cols)]
    Xc = source.X[:, cols]
    return Xc.T @ Xc


def minimise_block(source, anchor_full, offset, i, ridge, radius, incumbent, slack, evaluate, *, mu=0.0,
                   max_nodes=200000, max_columns=3000):
    """Certified minimum of R over supports with exactly ``i`` columns outside the anchor.

    Parameters
    ----------
    source : GramSource or MatrixFreeSource
    anchor_full : full column indices of S0 (forced columns first)
    offset : number of forced columns
    i : int
        Mistakes (>= 1).
    incumbent : (candidate support tuple, exact value), a member of the block
    slack : float
        Supports are discarded when their lower bound is >= incumbent - slack.
    evaluate : callable(2-D array of candidate supports) -> exact values
    mu : float
        Ball multiplier used in the weak-duality bound (any mu >= 0 is valid).

    Returns
    -------
    BlockResult, or None when the search would exceed ``max_nodes`` nodes or a candidate
    set has more than ``max_columns`` columns.
    """
    anchor_full = np.asarray(anchor_full, dtype=np.int64)
    movable = anchor_full[offset:]
    p_full = source.n_columns
    mask = np.ones(p_full, dtype=bool)
    mask[anchor_full] = False
    mask[:offset] = False
    O = np.nonzero(mask)[0]
    inc_sup, inc_val = tuple(incumbent[0]), float(incumbent[1])
    lam = float(ridge) + float(mu)
    shift = float(mu) * float(radius) ** 2
    c = source.c
    nodes = leaves = pruned = 0
    lower = np.inf
    n_sets = 0
    try:
        for D in combinations(range(movable.size), i):
            n_sets += 1
            T = np.concatenate([anchor_full[:offset], np.delete(movable, D)])
            GOT = source.cross(T) if T.size else np.zeros((p_full, 0))
            if T.size:
                K = GOT[T] + lam * np.eye(T.size)
                bT = np.linalg.solve(K, c[T])
                R0 = source.yy - float(c[T] @ bT)
                u_all = c - GOT @ bT
            else:
                K, R0, u_all = None, source.yy, c.copy()
            thr = inc_val - slack
            h = R0 - shift - thr
            lower = min(lower, thr)
            u = u_all[O]
            uu = u * u / lam
            if i > O.size:
                pruned += 1
                continue
            top = np.sort(uu)[::-1][:i]
            if top.sum() <= h:  # Sch >= lam' I: no B reaches h (the outer-approximation cut at T)
                pruned += 1
                continue
            rest = top[:i - 1].sum()
            C = O[uu + rest > h]
            if C.size < i:
                pruned += 1
                continue
            if C.size > max_columns:
                raise _TooLarge
            GCC = _gram_block(source, C)
            Sch = GCC + lam * np.eye(C.size)
            if T.size:
                W = np.linalg.solve(K, GOT[C].T)
                Sch -= GOT[C] @ W
            d = np.diag(Sch).copy()
            uc = u_all[C]
            v2 = uc * uc / d
            sq = np.sqrt(d)
            M = Sch / np.outer(sq, sq)
            keep = np.arange(C.size)
            gamma = _gamma(M, i)
            while True:
                vk = v2[keep]
                rest = np.sort(vk)[::-1][:i - 1].sum()
                new = keep[vk + rest > gamma * h]
                if new.size < i:
                    keep = new
                    break
                if new.size == keep.size:
                    break
                keep = new
                gamma = max(gamma, _gamma(M[np.ix_(keep, keep)], i))
            if keep.size < i:
                pruned += 1
                continue
            order = keep[np.argsort(-v2[keep], kind="stable")]
            Ms = M[np.ix_(order, order)]
            vs = uc[order] / sq[order]
            cols = C[order]
            found = []  # (candidate support tuple, exact schur Delta)

            def branch(P, start, Minv_P, delta_P):
                nonlocal nodes
                nodes += 1
                if nodes > max_nodes:
                    raise _TooLarge
                k = i - len(P)
                q = np.arange(start, vs.size)  # candidates for the next picks (later in the order)
                if q.size < k:
                    return
                if P:
                    A = Ms[np.ix_(q, P)]  # (|q|, |P|)
                    AMi = A @ Minv_P
                    vt = vs[q] - AMi @ vs[P]
                    dt = 1.0 - np.einsum("ij,ij->i", AMi, A)
                else:
                    AMi = None
                    vt, dt = vs[q], np.ones(q.size)
                dt = np.maximum(dt, 1e-300)
                g = vt * vt / dt  # exact conditional gain of one more column
                if k == 1:
                    hit = np.nonzero(delta_P + g > h)[0]
                    for t in hit:
                        found.append((tuple(sorted(int(x) - offset for x in
                                                   np.concatenate([T[offset:], cols[P], [cols[q[t]]]]))),
                                      delta_P + float(g[t])))
                    return
                topk = np.sort(g)[::-1][:k].sum()
                if delta_P + topk / gamma <= h:
                    return
                for t in range(q.size - (k - 1)):
                    # a branch starting at q[t] uses only later columns: bound its picks
                    gt = g[t:]
                    if delta_P + (g[t] + np.sort(gt[1:])[::-1][:k - 1].sum()) / gamma <= h:
                        continue
                    j = int(q[t])
                    P2 = P + [j]
                    Minv2 = np.linalg.inv(Ms[np.ix_(P2, P2)])
                    delta2 = float(vs[P2] @ Minv2 @ vs[P2])
                    branch(P2, j + 1, Minv2, delta2)

            branch([], 0, None, 0.0)
            if found:
                leaves += len(found)
                sups = np.array([f[0] for f in found], dtype=np.int64)
                vals = np.asarray(evaluate(sups), dtype=np.float64)
                k = int(np.argmin(vals))
                if vals[k] < inc_val:
                    inc_sup, inc_val = tuple(int(j) for j in sups[k]), float(vals[k])
                lower = min(lower, float(vals.min()))
    except _TooLarge:
        return None
    return BlockResult(inc_sup, inc_val, min(lower, inc_val), nodes, leaves, n_sets, pruned)
