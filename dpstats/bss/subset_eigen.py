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
#: The largest j - 1 bounded (each row's largest off-diagonal entries kept for Gershgorin's bound).
MAX_DEPTH = 16


class SubsetEigenFloor:
    """Lower bounds on min over j-sets B of lambda_min(C_B), j = 1, 2, ... (module docstring).

    ``C``: a symmetric matrix with unit diagonal (as computed; the caller accounts for its rounding);
    ``check_time``: called between batches of nodes (the engine's clock), or None."""

    def __init__(self, C, check_time=None, node_budget=NODE_BUDGET, total_budget=TOTAL_NODE_BUDGET):
        C = np.array(C, dtype=np.float64)
        np.fill_diagonal(C, 1.0)
        self.C, self.n = C, C.shape[0]
        self.squares = C * C
        np.fill_diagonal(self.squares, 0.0)
        self.check_time, self.node_budget, self.total_budget = check_time, int(node_budget), int(total_budget)
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

    def best(self, j):
        """floor(j) after the search has tried its targets for j (once per j, within the node budgets):
        TARGET_STEPS multiples of TARGET_STEP below the bound for j - 1 (itself searched first: the node
        bound needs every smaller size's bound above the target), lowered again below any set the search
        finds under a target; the first target shown is kept."""
        j = int(j)
        if j < 3 or j > self.n or j > MAX_DEPTH + 1:
            return self.floor(j)
        if j not in self._tried:
            self._tried.add(j)
            base = self.best(j - 1)
            for steps in TARGET_STEPS:
                target = base - steps * TARGET_STEP
                if not target > self.floor(j) or self.nodes >= self.total_budget:
                    break
                shown, below = self.shows(j, target)
                if shown:
                    self._shown[j] = target
                    break
                if below is not None:
                    base = min(base, below + TARGET_STEP)
        return self.floor(j)

    def shows(self, j, target):
        """(True, None) when every j-set B has lambda_min(C_B) >= ``target`` (module docstring); else
        (False, a set's smallest eigenvalue found below it, or None when the node budget ran out)."""
        C, squares, n = self.C, self.squares, self.n
        remainder = {r: self.floor(r) for r in range(1, j)}
        budget = min(self.node_budget, self.total_budget - self.nodes)
        stack = [((b,), np.arange(b + 1, n)) for b in range(n - 1, -1, -1)]
        visited = 0
        while stack:
            P, allowed = stack.pop()
            visited += 1
            if visited > budget:
                self.nodes += visited
                return False, None
            if visited % 256 == 0 and self.check_time is not None:
                self.check_time()
            if len(P) == 1:
                alpha = 1.0
            else:
                block = C[np.ix_(P, P)]
                alpha = float(np.linalg.eigvalsh(block)[0]) - 64 * len(P) * _U * float(np.linalg.norm(block))
                if not alpha >= target:
                    self.nodes += visited
                    return False, alpha
            r = j - len(P)
            if r == 0 or allowed.size < r:
                continue
            delta = remainder[r]
            weight = squares[list(P)][:, allowed].sum(axis=0) * (1.0 + 64 * j * _U)
            order = np.argsort(-weight, kind="stable")
            ranked = weight[order]
            sums = np.concatenate(([0.0], np.cumsum(ranked)))
            xi2 = sums[r:] - sums[:-r]  # xi^2 of the extensions avoiding the first h, h = 0..|allowed| - r
            bound = (0.5 * (alpha + delta) - np.sqrt(0.25 * (alpha - delta) ** 2 + xi2)
                     - 64 * _U * (1.0 + abs(alpha) + abs(delta)))
            reach = np.nonzero(bound >= target)[0]
            h = int(reach[0]) if reach.size else allowed.size - r + 1
            for i in range(h - 1, -1, -1):  # the first child popped first
                stack.append((P + (int(allowed[order[i]]),), allowed[order[i + 1:]]))
        self.nodes += visited
        return True, None
