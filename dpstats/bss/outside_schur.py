"""The outside columns' Schur complement at an anchor and at its subsets (the size bounds' gains).

For an anchor A (forced columns first) and the columns O outside it, Sch(T) = G_OO + lam I -
G_OT (G_TT + lam I)^-1 G_TO at a subset T of A.  Removing columns from T only enlarges Sch(T) in the
positive semidefinite order (x'G_OT (G_TT + lam I)^-1 G_TO x is a maximum over coefficients on T), so
quantities at A bound every T inside it: d_b = Sch_bb(A) <= Sch_bb(T), and a Gershgorin bound gamma_j
on the smallest eigenvalue of D^-1/2 Sch_BB(A) D^-1/2 for every j-set B (D = diag(d)) bounds
what j outside columns add at any T: Delta(B | T) <= (sum over B of u_b(T)^2 / d_b) / gamma_j
(:mod:`dpstats.bss.size_bounds`).  Entries carry their rounding bounds (Higham, Accuracy and
Stability of Numerical Algorithms, 3.1; Horn and Johnson, Matrix Analysis, 6.1.1 and 7.7).
"""
from __future__ import annotations

import math

import numpy as np

from .coherence import coherence_gamma, column_coherence

_U = np.finfo(np.float64).eps

#: The most outside columns whose Schur complement at the anchor is formed for gamma_j (|O|^2 entries);
#: beyond, gamma_j comes from the columns' coherences (:func:`~dpstats.bss.coherence.column_coherence`).
MAX_SCHUR_COLUMNS = 2000


class OutsideSchur:
    """Diagonal lower bounds and gamma_j of the outside columns' Schur complement (module docstring).

    ``full``: the anchor's full column indices; ``O``: the outside columns; ``lam``: the ridge (plus
    the ball multiplier); ``floor``: a lower bound on the smallest eigenvalue of Sch(A); ``G_AA``,
    ``G_OA``, ``row_norm`` (= |G_bA| per outside column): blocks of the Gram matrix; ``depth``: the
    largest j - 1 asked; ``subset_schedule``: keyword arguments of the search's
    :class:`~dpstats.bss.subset_eigen.SubsetEigenFloor` (its targets and budgets)."""

    def __init__(self, source, full, O, lam, floor, G_AA, G_OA, row_norm, depth, check_time=None,
                 subset_schedule=None):
        self.source, self.full, self.O = source, full, O
        self.lam, self.floor, self.depth = float(lam), float(floor), int(depth)
        self.G_AA, self.G_OA, self.row_norm = G_AA, G_OA, row_norm
        self.d_O = source.diag[O]
        self.check_time = check_time
        self.subset_schedule = dict(subset_schedule or {})
        self._diag_A = None  # lower bounds on Sch_bb at the whole anchor (d_b)
        self._gammas = {}  # j -> gamma_j (<= 0: unusable)
        self._schur_rows = None  # the scaled |Sch_ab(A)| rows' largest entries (:meth:`scaled_rows`)
        self._scaled = None  # the computed scaled Sch(A) (:meth:`_form_scaled`)
        self._error_rows = None  # each row's largest error bounds of its entries, descending
        self._subsets = None  # the SubsetEigenFloor of the computed scaled Sch(A), or False: not usable

    def diagonal(self, T):
        """Lower bounds on Sch_bb(T) = G_bb + lam - G_bT K_T^-1 G_Tb for every outside column b, never
        below the floor (which holds for every T inside the anchor)."""
        width, lam = T.shape[1], self.lam
        K = self.G_AA[T[:, :, None], T[:, None, :]] + lam * np.eye(width)
        GTO = np.transpose(self.G_OA[:, T], (1, 2, 0))  # (N, t, |O|)
        Z = np.linalg.solve(K, GTO)
        quad = np.einsum("nio,nio->no", GTO, Z)
        res_Z = np.linalg.norm(np.einsum("nij,njo->nio", K, Z) - GTO, axis=1)
        sch = (self.d_O[None, :] + lam - quad - self.row_norm[None, :] * res_Z / lam
               - 64 * width * _U * (self.d_O[None, :] + np.abs(quad)))
        return np.maximum(sch, self.floor)

    def anchor_diagonal(self):
        """d_b: lower bounds on Sch_bb at the whole anchor, at most Sch_bb(T) for every T inside it."""
        if self._diag_A is None:
            self._diag_A = self.diagonal(np.arange(self.full.size)[None, :])[0]
        return self._diag_A

    def gamma(self, j):
        """gamma_j of the scaled bound (module docstring): 1 for j = 1; for j >= 2 from the scaled Schur
        complement at the anchor, or (more than MAX_SCHUR_COLUMNS outside columns) from the outside
        columns' coherences (one pass over G per anchor, shared with the block search)."""
        if j <= 1:
            return 1.0
        if j not in self._gammas:
            if self.O.size <= MAX_SCHUR_COLUMNS:
                rows = self.scaled_rows()
                if j - 1 > rows.shape[1]:
                    return -math.inf
                self._gammas[j] = 1.0 - float(rows[:, :j - 1].sum(axis=1).max(initial=0.0)) - 64 * j * _U
                return self._gammas[j]
            src, O = self.source, self.O
            d = self.anchor_diagonal()
            ridge = float(src.ridge)
            gjj = np.asarray(src.diag, dtype=np.float64)[O]
            f = np.sqrt((gjj + ridge) / d) * (1.0 + 4 * _U)
            e = np.sqrt(np.maximum(gjj + self.lam - d, 0.0) / d) * (1.0 + 4 * _U)
            # the block search asks m - 1 (the depth given): one pass over G serves both
            N = column_coherence(src, ridge, self.depth, exclude=self.full)[O]
            ntop = N[:, :j - 1].sum(axis=1) if j - 1 <= N.shape[1] else np.full(O.size, np.inf)
            self._gammas[j] = coherence_gamma(f, e, ntop, j) - 64 * j * _U
        return self._gammas[j]

    def searched_gamma(self, j, minimum=-math.inf):
        """gamma_j raised as far as the search over j-sets of
        :mod:`dpstats.bss.subset_eigen` on the computed scaled Schur complement at the anchor shows (once per
        j; later calls of :meth:`gamma` return the raised value).  The search's bound is on the computed matrix with
        its diagonal taken as 1 (the exact diagonal Sch_bb(A) / d_b is at least 1, and lowering a diagonal
        lowers every eigenvalue), less the largest sum of j - 1 entries' error bounds of a row (Weyl's
        inequality with Gershgorin's bound on the error's norm).  Up to MAX_SCHUR_COLUMNS outside columns
        and j >= 3; else :meth:`gamma`.  A value at or below ``minimum`` is not searched for."""
        from .subset_eigen import SubsetEigenFloor

        plain = self.gamma(j)
        if j < 3 or self.O.size > MAX_SCHUR_COLUMNS:
            return plain
        self._form_scaled()
        if self._subsets is None:
            C = self._scaled
            usable = bool(np.all(np.isfinite(C)) and np.all(np.isfinite(self._error_rows)))
            self._subsets = (SubsetEigenFloor(C, check_time=self.check_time, **self.subset_schedule)
                             if usable else False)
        if self._subsets is False or j - 1 > self._error_rows.shape[1]:
            return plain
        lift = float(self._error_rows[:, :j - 1].sum(axis=1).max(initial=0.0)) * (1.0 + 4 * j * _U) + 64 * j * _U
        searched = self._subsets.best(j, minimum + lift) - lift
        if searched > plain:
            self._gammas[j] = searched
        return self._gammas.get(j, plain)

    def scaled_rows(self):
        """Per outside column b, the depth largest upper bounds on |Sch_ab(A)| / sqrt(d_a d_b),
        a != b (descending): Sch(A) = G_OO + lam I - G_OA K_A^-1 G_AO from one solve, each entry raised by
        its rounding bound (|G_aA| |K_A^-1 R_b| <= |G_aA| |R_b| / lam for the solve's residual R, and
        64 |A| u times the magnitudes of the product, Higham 3.1)."""
        self._form_scaled()
        return self._schur_rows

    def _form_scaled(self):
        # once per anchor: C = D^-1/2 Sch(A) D^-1/2 as computed (kept for the search), E >= |C_exact - C|
        # off the diagonal (of E each row's depth largest entries are kept), and from both the upper
        # bounds |C| + E of scaled_rows
        if self._scaled is not None:
            return
        O, A, lam = self.O, self.full, self.lam
        G = self.source.G
        K = self.G_AA + lam * np.eye(A.size)
        Z = np.linalg.solve(K, self.G_OA.T)  # |A| x |O|
        residual = np.linalg.norm(K @ Z - self.G_OA.T, axis=0)
        S = G[np.ix_(O, O)] - self.G_OA @ Z
        err = (np.outer(self.row_norm, residual / lam)
               + 64 * max(A.size, 1) * _U * (np.outer(self.row_norm, np.linalg.norm(Z, axis=0)) + np.abs(S)))
        root = np.sqrt(self.anchor_diagonal())
        base = np.outer(root, root)
        C = S / base
        # the scaling's own rounding (the roots, their product and the division): a few units of C
        E = (err / base + 16 * _U * np.abs(C)) * (1.0 + 8 * _U)
        np.fill_diagonal(E, 0.0)
        self._error_rows = _largest_per_row(E, self.depth)
        M = (np.abs(C) + E) * (1.0 + 8 * _U)
        np.fill_diagonal(M, 0.0)
        self._schur_rows = _largest_per_row(M, self.depth)
        self._scaled = C


def _largest_per_row(M, depth):
    """Each row's ``depth`` largest entries (at most the row's length less one), descending."""
    keep = min(depth, max(M.shape[1] - 1, 0))
    if keep < M.shape[1]:
        M = np.partition(M, M.shape[1] - keep, axis=1)[:, M.shape[1] - keep:]
    return -np.sort(-M, axis=1)
