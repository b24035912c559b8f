"""The pool of outer-approximation cuts: linear under-estimators of R at binary z.

A cut at a support S is ``eta >= const + coef . z`` (:mod:`dpstats.bss.engine`, module
docstring); the loss-specific cut comes from the source (``source.cut_at``), whose value at S
is a certified upper bound on R(S) and whose cut is a valid under-estimator of g everywhere.
So one pool serves every query on the same data: the MILP master
(:mod:`dpstats.bss.milp_master`) adds to its model the cuts it has not seen yet.

Cuts are added at every expanded support (:mod:`dpstats.bss.candidates`), at the MILP's
solutions and their best neighbours, and at the supports a route asks for.  The first local
optimum's best neighbours are *deferred*: added only when a MILP is first built, because the
block and dual-bound routes certify most queries without one and a hinge cut costs a solve.
"""
from __future__ import annotations

import numpy as np


class CutPool:
    """Cuts in insertion order, one per support, and the value each cut certified.

    ``values`` is the candidates' memo of exact values (shared with
    :class:`dpstats.bss.candidates.Candidates`): a cut's value enters it when the support has
    none yet.
    """

    def __init__(self, problem, values, stats):
        self.problem = problem
        self.values = values
        self.stats = stats
        self._at: dict = {}  # support -> its position in the pool (insertion order)
        self.const: list = []
        self.coef: list = []
        self.deferred: list = []
        # whether the source was asked for curvature cuts (once, before the first MILP)
        self._curvature_asked = False

    def __len__(self):
        return len(self.const)

    def __contains__(self, support):
        return support in self._at

    def terms(self, support, full, cross):
        """(const, coef) of the cut at ``support``; its certified value enters the memo."""
        value, const, grad_c = self.problem.source.cut_at(full, cross=cross)
        self.values.setdefault(support, float(value))
        return const, grad_c

    def cut(self, support):
        """(const, coef): the cut at a candidate support, eta >= const + coef . z."""
        support = tuple(sorted(support))
        full = self.problem.full(np.array(support))
        return self.terms(support, full, self.problem.source.cross(full))

    def add(self, support, full=None, cross=None) -> bool:
        """A cut at ``support`` unless the pool has one; True when it was added."""
        support = tuple(sorted(support))
        if support in self._at:
            return False
        if full is None:
            full = self.problem.full(np.array(support))
            cross = self.problem.source.cross(full)
        const, coef = self.terms(support, full, cross)
        self._at[support] = len(self.const)
        self.const.append(const)
        self.coef.append(coef)
        self.stats.cuts += 1
        return True

    def lower_bounds(self, sizes, chunk=256) -> dict:
        """{k: a lower bound on R over every support of k candidates} for k in ``sizes`` (any k, not only the
        engine's s): each cut is a global under-estimator, its minimum over |z| = k is const plus its k
        smallest slopes, and the best cut's is kept (-inf on an empty pool).  Floating point as computed:
        the caller widens it (:meth:`OuterApproximationEngine.lower_bounds`).  Cuts are read ``chunk`` at a
        time (a pool of thousands of cuts at p = 5000 would otherwise be copied whole)."""
        sizes = sorted({int(k) for k in sizes})
        best = {k: -np.inf for k in sizes}
        if not sizes or not self.const:
            return best
        top = sizes[-1]
        for start in range(0, len(self.const), chunk):
            coef = np.asarray(self.coef[start:start + chunk], dtype=np.float64)
            const = np.asarray(self.const[start:start + chunk], dtype=np.float64)
            sums = _smallest_sums(coef, min(top, coef.shape[1]))  # sums[:, k]: the k smallest slopes
            for k in sizes:
                best[k] = max(best[k], float(np.max(const + sums[:, min(k, sums.shape[1] - 1)])))
        return best

    def block_lower_bounds(self, anchor, blocks, chunk=256) -> dict:
        """{i: a lower bound on R over the supports with exactly i mistakes from ``anchor``} for i in
        ``blocks``: such a support keeps s - i of the anchor's columns and takes i others, so a cut's
        minimum over the block is const plus the s - i smallest slopes inside the anchor and the i
        smallest outside; the best cut's is kept (-inf on an empty pool).  Floating point as computed
        (the caller widens it)."""
        blocks = sorted({int(i) for i in blocks})
        best = {i: -np.inf for i in blocks}
        if not blocks or not self.const:
            return best
        anchor = np.asarray(sorted(anchor), dtype=np.int64)
        s, top = anchor.size, blocks[-1]
        inside = np.zeros(len(self.coef[0]), dtype=bool)
        inside[anchor] = True
        for start in range(0, len(self.const), chunk):
            coef = np.asarray(self.coef[start:start + chunk], dtype=np.float64)
            const = np.asarray(self.const[start:start + chunk], dtype=np.float64)
            kept = _smallest_sums(coef[:, inside], s)  # kept[:, k]: the k smallest slopes inside, k = 0..s
            taken = _smallest_sums(coef[:, ~inside], top)  # taken[:, k]: the k smallest outside
            for i in blocks:
                best[i] = max(best[i], float(np.max(const + kept[:, s - i] + taken[:, i])))
        return best

    def add_deferred(self):
        """The deferred cuts (the first local optimum's neighbours), before the first MILP."""
        for support in self.deferred:
            self.add(support)
        self.deferred = []

    def use_curvature(self):
        """Before the first MILP: cuts with the data's curvature where the source offers them.

        The MILP's LP bound is what a small ridge makes weak (cut slopes -(X_j'a)^2 / lam);
        a source with ``curvature_cuts`` can replace lam by lam + d_j with d from the data's
        smallest eigenvalue (:meth:`dpstats.bss.gram._SquaredLossMethods.use_curvature`),
        the tangent of a stronger relaxation with the same values at every support.  The
        pool is then recomputed at the same supports; the values do not change.  Asked only
        here because the eigenvalue costs about as much as a few p x p products and the block
        routes certify most queries without a MILP.
        """
        if self._curvature_asked:
            return
        self._curvature_asked = True
        source = self.problem.source
        if not source.capabilities.curvature_cuts or not source.use_curvature():
            return
        for support, k in self._at.items():
            full = self.problem.full(np.array(support))
            self.const[k], self.coef[k] = self.terms(support, full, source.cross(full))


def _smallest_sums(coef, k):
    """(rows, k + 1): column j the sum of each row's j smallest entries (j = 0..k, k <= the row length)."""
    if k < coef.shape[1]:
        coef = np.partition(coef, k - 1, axis=1)[:, :k] if k > 0 else coef[:, :0]
    sums = np.cumsum(np.sort(coef, axis=1), axis=1)
    return np.hstack([np.zeros((coef.shape[0], 1)), sums])
