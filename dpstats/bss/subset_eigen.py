"""A lower bound on the smallest eigenvalue of every j x j principal submatrix of a unit-diagonal matrix.

What for.  The size bounds (:mod:`dpstats.bss.size_bounds`) bound what j columns outside an anchor add by
(the sum of their scaled one-column gains) / gamma_j, gamma_j <= lambda_min(C_B) for every j-set B of the
outside columns, C their unit-diagonal scaled Schur complement.  Gershgorin's gamma_j (1 - the largest sum
of j - 1 off-diagonal |C_ab| of a row) loses most where each column has a few strongly correlated
neighbours: it charges each neighbour at full weight, where the eigenvalue of a set of correlated
neighbours falls far less (measured on an AR(1) design in benchmarks/README.md).  This module shows
lambda_min(C_B) >= g for every j-set by a branch and bound over the sets, and keeps the largest g it
shows within a node budget.

The bound at a node.  A node is a set P (|P| < j) with the columns its extensions may still take
("allowed"); every extension is P + Q with Q an r-subset of the allowed columns, r = j - |P|.  Write
C_{P+Q} = [[C_P, X], [X', C_Q]] with lambda_min(C_P) >= alpha (computed), lambda_min(C_Q) >= delta_r (a
bound for every r-set: 1 for r = 1, the exact 1 - max |C_ab| for r = 2, else the larger of Gershgorin's and
the one shown before for r) and |X|_2 <= |X|_F <= xi, xi^2 = the sum over Q of |C_Pq|^2.  For a unit
vector (x, y), x'C_P x + y'C_Q y + 2 x'X y >= alpha |x|^2 + delta |y|^2 - 2 xi |x||y|, so

    lambda_min(C_{P+Q}) >= (alpha + delta) / 2 - sqrt(((alpha - delta) / 2)^2 + xi^2)

(the smallest eigenvalue of [[alpha, -xi], [-xi, delta]]), decreasing in xi^2.  With the allowed columns
sorted by |C_Pq|^2, descending, the extensions avoiding the first h of them have xi^2 <= the sum of the
next r; the node takes the smallest h for which the bound reaches g, and branches on those h columns:
child i holds P + {q_i} and may take only the columns after q_i in that order (the extensions holding q_i
and none of q_1..q_i-1), so the children cover every extension that the bound did not, each once.  The
root's children are the single columns b, each allowed the columns after it.  A node whose own
lambda_min(C_P) is below g ends the search (every superset is below g too, by Cauchy interlacing).

Targets.  The node bound needs delta_r above g, so the sizes are bounded in turn, each a few steps of
TARGET_STEP below the size before it (or below a set the search found under an earlier target); a bound
shown for j holds for every smaller size too (interlacing).  The nodes of one search and of all searches on one matrix are capped:
a target not shown in time leaves the bound as it was, never wrong.

Rounding.  C is given as computed with its unit diagonal exact (the caller bounds the rest).  Each
computed eigenvalue is lowered by 64 |P| u |C_P|_F (a backward stable symmetric eigensolver: Higham,
Accuracy and Stability of Numerical Algorithms, Sec. 3.1 and Golub and Van Loan 8.1), each xi^2 raised by
64 j u of itself and each bound lowered by 64 u (1 + |alpha| + |delta|).
"""
from __future__ import annotations

import math

import numpy as np

_U = np.finfo(np.float64).eps

#: Nodes one search may take before its target counts as not shown, and all searches of one matrix.
NODE_BUDGET = 20_000
TOTAL_NODE_BUDGET = 150_000
#: The targets tried for j: these multiples of TARGET_STEP below the bound for j - 1 (and below a set found
#: under an earlier target), until one is shown.
TARGET_STEP = 0.04
TARGET_STEPS = (1, 2, 4)
#: A node ranks its allowed columns' largest RANKED + r weights first (and all only when needed).
RANKED = 8
#: Nodes of one depth ranked together, and at most so many that their |P| rows of n squared entries hold
#: CHUNK_ENTRIES numbers (about 16 MB).
DEPTH_CHUNK = 256
CHUNK_ENTRIES = 2**21
#: The largest j - 1 bounded (each row's largest off-diagonal entries kept for Gershgorin's bound).
MAX_DEPTH = 16


class SubsetEigenFloor:
    """Lower bounds on min over j-sets B of lambda_min(C_B), j = 1, 2, ... (module docstring).

    ``C``: a symmetric matrix with unit diagonal (as computed; the caller accounts for its rounding);
    ``check_time``: called between batches of nodes (the engine's clock), or None; ``node_budget`` and
    ``total_budget``: the nodes of one search and of all; ``step`` and ``steps``: the targets of :meth:`best`."""

    def __init__(self, C, check_time=None, node_budget=NODE_BUDGET, total_budget=TOTAL_NODE_BUDGET,
                 step=TARGET_STEP, steps=TARGET_STEPS):
        C = np.array(C, dtype=np.float64)
        np.fill_diagonal(C, 1.0)
        self.C, self.n = C, C.shape[0]
        self.squares = C * C
        np.fill_diagonal(self.squares, 0.0)
        self.check_time, self.node_budget, self.total_budget = check_time, int(node_budget), int(total_budget)
        self.step, self.steps = float(step), tuple(steps)
        off = np.abs(C)
        np.fill_diagonal(off, 0.0)
        keep = min(MAX_DEPTH, max(self.n - 1, 0))
        if keep < off.shape[1]:
            off = np.partition(off, off.shape[1] - keep, axis=1)[:, off.shape[1] - keep:]
        self._sorted_rows = -np.sort(-off, axis=1)  # each row's MAX_DEPTH largest |C_ab|, descending
        self._shown = {}  # j -> the largest target shown for every j-set
        self._tried = set()  # the j whose targets :meth:`best` has tried
        self.nodes = 0  # nodes visited over every search (the total budget; for the benchmarks)

    def gershgorin(self, j):
        """1 - the largest sum of j - 1 off-diagonal |C_ab| of a row (valid for every j-set)."""
        if j <= 1:
            return 1.0
        if j - 1 > self._sorted_rows.shape[1]:
            return -math.inf
        top = float(self._sorted_rows[:, :j - 1].sum(axis=1).max(initial=0.0))
        return 1.0 - top * (1.0 + 4 * j * _U) - 64 * j * _U

    def floor(self, j):
        """The best lower bound known on lambda_min(C_B) for every j-set B, without searching: Gershgorin's
        (exact at j = 2), or a target shown for j or for a larger size (Cauchy interlacing: every j-set
        lies inside a larger one); -inf where j > n."""
        j = int(j)
        if j > self.n:
            return -math.inf
        shown = max((v for k, v in self._shown.items() if k >= j), default=-math.inf)
        return max(self.gershgorin(j), shown)

    def best(self, j, minimum=-math.inf):
        """floor(j) after the search has tried its targets for j (once per j, within the node budgets):
        ``steps`` multiples of ``step`` (TARGET_STEPS, TARGET_STEP by default) below the bound for j - 1
        (itself searched first: the node bound needs every smaller size's bound above the target), lowered
        again below any set the search finds under a target; the first target shown is kept.  Targets at or
        below ``minimum`` are not tried (a bound that low is of no use to the caller), nor any when no target
        for j can clear it: each size's target lies at least one step below the size before's, down from the
        exact bound for pairs."""
        j = int(j)
        if j < 3 or j > self.n or j > MAX_DEPTH + 1:
            return self.floor(j)
        if self.floor(2) - (j - 2) * self.step * min(self.steps) <= minimum:
            return self.floor(j)
        if j not in self._tried:
            self._tried.add(j)
            base = self.best(j - 1, minimum)
            for steps in self.steps:
                target = base - steps * self.step
                if not target > max(self.floor(j), minimum) or self.nodes >= self.total_budget:
                    break
                shown, below = self.shows(j, target)
                if shown:
                    self._shown[j] = target
                    break
                if below is not None:
                    base = min(base, below + self.step)
        return self.floor(j)

    def shows(self, j, target):
        """(True, None) when every j-set B has lambda_min(C_B) >= ``target`` (module docstring); else
        (False, a set's smallest eigenvalue found below it, or None when the node budget ran out)."""
        n = self.n
        remainder = {r: self.floor(r) for r in range(1, j)}
        budget = min(self.node_budget, self.total_budget - self.nodes)
        # The tree is searched one depth at a time, all nodes of a depth together (module docstring,
        # "Search order").  A node is P (a row of ``members``), alpha = lambda_min(C_P) lowered by its
        # rounding margin, and the columns left out of its allowed set besides those up to P's first
        # (a row of ``left_out``, -1 padded): the columns its ancestors ranked before their child's pick.
        members = np.arange(n, dtype=np.int64)[:, None]
        alphas = np.ones(n)
        left_out = np.empty((n, 0), dtype=np.int64)
        visited = 0
        while members.shape[0]:
            if visited + members.shape[0] > budget:
                self.nodes += visited
                return False, None
            visited += members.shape[0]
            if self.check_time is not None:
                self.check_time()
            low = np.nonzero(~(alphas >= target))[0]
            if low.size:
                self.nodes += visited
                return False, float(alphas[low[0]])
            r = j - members.shape[1]
            if r == 0:
                break
            parents, picks, firsts = [], [], []
            chunk = max(1, min(DEPTH_CHUNK, CHUNK_ENTRIES // (members.shape[1] * n)))
            for a in range(0, members.shape[0], chunk):
                rows = slice(a, a + chunk)
                h, ranked_cols = self._branches(members[rows], alphas[rows], left_out[rows], r, remainder[r], target)
                for k in np.nonzero(h)[0]:
                    parents.append(np.full(h[k], a + k))
                    picks.append(ranked_cols[k, :h[k]])
                    firsts.append(np.arange(h[k]))
            if not parents:
                break
            parents, picks, firsts = np.concatenate(parents), np.concatenate(picks), np.concatenate(firsts)
            if visited + parents.size > budget:
                self.nodes += visited
                return False, None
            # child i of a node holds P + {q_i} and leaves out its earlier siblings' picks q_1..q_i-1 as well
            # (one node's children are consecutive, in rank order: the first sits at ``start``)
            width = int(firsts.max(initial=0))
            start = np.searchsorted(parents, parents, side="left")
            ranks = np.arange(width)[None, :]
            earlier = np.where(ranks < firsts[:, None], picks[np.minimum(start[:, None] + ranks, picks.size - 1)], -1)
            members = np.concatenate([members[parents], picks[:, None]], axis=1)
            left_out = np.concatenate([left_out[parents], earlier], axis=1)
            alphas = self._alphas(members)
        self.nodes += visited
        return True, None

    def _alphas(self, members):
        """lambda_min(C_P) of each row P, lowered by the rounding margin 64 |P| u |C_P|_F, in one call."""
        blocks = self.C[members[:, :, None], members[:, None, :]]
        norms = np.sqrt(np.einsum("kab,kab->k", blocks, blocks))
        return np.linalg.eigvalsh(blocks)[:, 0] - 64 * members.shape[1] * _U * norms

    def _branches(self, members, alphas, left_out, r, delta, target):
        """Per node, h (how many children the node bound needs) and its allowed columns in rank order
        (the first h at least): the columns after P's first, not in P nor left out, ranked by their weight
        sum over P of C_Pq^2, descending (ties by index)."""
        n = self.n
        lift = 1.0 + 64 * (members.shape[1] + r) * _U
        rows = np.arange(members.shape[0])[:, None]
        allowed = np.arange(n)[None, :] > members[:, :1]
        allowed[rows, members] = False
        if left_out.shape[1]:
            marked = np.where(left_out >= 0, left_out, members[:, :1])  # -1 padding: P's first, already out
            allowed[rows, marked] = False
        weight = self.squares[members].sum(axis=1) * lift
        count = allowed.sum(axis=1)
        keyed = np.where(allowed, weight, -1.0)  # weights are >= 0: left-out columns rank last
        a = alphas[:, None]
        # the node bound needs only the first h + r ranks, and h is small: rank the largest RANKED first,
        # and all of a row's columns only where that does not reach the target
        h = np.zeros(members.shape[0], dtype=np.int64)
        order = np.empty((members.shape[0], 0), dtype=np.int64)
        todo = np.nonzero(count >= r)[0]
        width = min(n, RANKED + r)
        while todo.size:
            part = keyed[todo]
            if width < n:
                top = np.argpartition(-part, width - 1, axis=1)[:, :width]
                sub = np.argsort(-np.take_along_axis(part, top, axis=1), axis=1, kind="stable")
                cols = np.take_along_axis(top, sub, axis=1)
            else:
                cols = np.argsort(-part, axis=1, kind="stable")
            ranked = np.maximum(np.take_along_axis(part, cols, axis=1), 0.0)
            sums = np.concatenate((np.zeros((todo.size, 1)), np.cumsum(ranked, axis=1)), axis=1)
            xi2 = sums[:, r:] - sums[:, :-r]  # the extensions avoiding the first h, h = 0..width - r
            at = a[todo]
            bound = (0.5 * (at + delta) - np.sqrt(0.25 * (at - delta) ** 2 + xi2)
                     - 64 * _U * (1.0 + np.abs(at) + abs(delta)))
            last = count[todo] - r  # the largest h with r allowed columns after the first h
            reach = (bound >= target) & (np.arange(xi2.shape[1])[None, :] <= last[:, None])
            found = reach.any(axis=1)
            # without a reach among these ranks: every rank is a branch when all allowed columns were
            # ranked, else the row is ranked in full
            settled = found | (last < xi2.shape[1])
            h[todo[settled]] = np.where(found, reach.argmax(axis=1), last + 1)[settled]
            if order.shape[1] < cols.shape[1]:
                order = np.concatenate([order, np.zeros((order.shape[0], cols.shape[1] - order.shape[1]), dtype=np.int64)], axis=1)
            order[todo[settled], :cols.shape[1]] = cols[settled]
            todo = todo[~settled]
            width = n
        return h, order
