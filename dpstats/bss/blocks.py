"""Exact search of a mistakes block by Schur-complement branch and bound.

Block i of the mistakes mechanism (:mod:`dpstats.bss.mistakes`) holds the supports
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

So a support with Delta(B) <= h_D = R_{lam'}(T) - mu r^2 - threshold has R >= threshold.
Delta is bounded without enumerating B: with d_j = Sch_jj, v_j^2 = u_j^2 / d_j (the exact
gain of one column) and M = the unit-diagonal scaling of Sch, Delta(B) <= |v_B|^2 /
lambda_min(M_B), and lambda_min(M_B) >= gamma, a bound valid for every |B| = i inside a
candidate set C: the larger of lambda_min(M_C) (Cauchy interlacing) and the Gershgorin
bound 1 - max_j (sum of the i - 1 largest |M_jk|, k in C).  Along a branch P (columns
already chosen), the chain rule Delta(P + Q) = Delta(P) + Delta(Q | P) and the same argument
on the conditional Schur complement (whose smallest eigenvalue is at least that of
M_{P+Q}, hence >= gamma, and whose diagonal is <= 1) give
Delta(Q | P) <= (sum of the |Q| largest exact conditional one-column gains) / gamma, with
gamma = 1 when one column is left (then it is exact).  A second bound needs no gamma:
Sch >= lam' I, and so does every Schur complement of it (Sch - lam' I >= 0), so
Delta(Q | P) <= |u~_Q|^2 / lam' with u~ the conditional residual correlations, that is the
sum over Q of the conditional gains times kappa_j = (conditional diagonal)_j / lam'.
lam' can be replaced by any floor f with Sch >= f I for every T the search meets: T only
loses anchor columns, which enlarges Sch, so f = lambda_min of Sch at the whole anchor
serves (:meth:`BlockSearch.floor`, one eigenvalue per anchor when G is at hand).  With
that floor the search uses the ridge bound and Gershgorin's gamma, and computes no
eigenvalue per removed set; without it (matrix-free), also gamma when that is usable and
not worse than every 1 / kappa (with fewer rows than candidates M_C is singular up to the
ridge, and the ridge bound is the one that works).

Every one of these bounds keeps the box |b_j| <= r that the ball implies: a separable bound
sum_j v_j^2 / a_j is the maximum of sum_j (2 v_j t_j - a_j t_j^2) over free t, and over
|t_j| <= r (in the scale of each bound) each term is at most v_j^2 / a_j, and only
2 |v_j| r - a_j r^2 when |v_j| > a_j r (:func:`box_gain`); the weak-duality step keeps the box
because every support's coefficients lie in the ball.  With a small ridge the unconstrained
terms grow like 1 / lam' where the box keeps them linear in |v_j|.

The *ball bound* keeps the ball itself on the new coefficients: maximising over b_P freely
and over |b_Q| <= r (every support's coefficients lie in the ball), with Sch_{Q|P} >= f I
(f the floor above), Delta(Q | P) <= max over |t| <= r of 2 u~_Q't - f |t|^2 = g(|u~_Q|),
g(x) = x^2 / f up to x = f r and 2 x r - f r^2 beyond (the box bound's one-dimensional
form along u~_Q).  Where u~ is large against f r (a ridge near 0) the separable bounds
grow like 2 r sum |u~_j| and this one like 2 r |u~_Q|, up to sqrt(|Q|) smaller; g is
increasing, so the test g(|u~_Q|) <= need is one on the sum of u~_j^2 (:func:`ball_need`).

The *subset floor* replaces the floor's single eigenvalue, over every outside column at once, by one
over every i-set of them: with d_b <= Sch_bb at the whole anchor and gamma_i <= lambda_min of the scaled
Sch_BB there for every i-set B (:mod:`dpstats.bss.subset_eigen`), Sch_{Q|P} >= gamma_i diag(d_Q) at every
node with |P + Q| = i (:meth:`BlockSearch.subset_floor`), so Delta(Q | P) <= sum over Q of u~_q^2 /
(gamma_i d_q), in the box, and the ball bound may use gamma_i min d as its floor.  Where each column has a
few correlated neighbours (AR(1) designs), gamma_i for small i stays well above the floor, which falls
with the number of columns (benchmarks/README.md, "Subset floors in the block search"); the search over
i-sets costs about as much as a few thousand nodes, so it is formed once the anchor's blocks have spent
that many (``BlockSearchSettings.subset_floor_after_nodes``).

Columns that cannot reach h_D are dropped from C before any |C| x |C| matrix is formed,
by two screens valid for every B containing the column:

* Sch >= lam' I (or the floor above), so Delta(B) <= |u_B|^2 / lam' (in the box, and
  g(|u_B|) in the ball);
* Delta(B) <= |v_B|^2 / gamma_0 with a Gershgorin gamma_0 that needs no block of G:
  |Sch_jk| <= |G_jk| + w_j w_k (Cauchy-Schwarz in the (G_TT + lam' I)^{-1} inner product,
  w_j^2 = G_jT (G_TT + lam' I)^{-1} G_Tj = G_jj + lam' - d_j), and the i - 1 largest
  |G_jk| / sqrt((G_jj + lam)(G_kk + lam)) of every row, over partners k outside the
  anchor, come from one pass over X'X per anchor
  (:func:`~dpstats.bss.coherence.column_coherence`, cached).  The first screen alone is loose
  when G_jj >> lam' (about 50x at n = 10^4 with lam = 100); the second is near-exact for
  weakly correlated columns.

When C is still larger than ``BlockSearchSettings.max_columns`` (at p = 10^4, removing two true columns can
leave two neighbours that carry most of the gain, and then every third column stays a
candidate), the search runs with gamma_0 and forms a column of M only when a branch picks
that column (one X'x_j product), so no |C| x |C| matrix is formed.  With the Gram matrix at
hand the limit is far lower for superset tests and for the removed sets' searches of a block
whose searches stay shallow (``prefix_test_max_columns``, ``gram_max_columns``): a column is then
one slice of G, and such searches end within a few nodes.

Before any of this, a removed set D (and a prefix of it, the whole block first) may be decided
without T's Schur complement at all, by the fit on every column with D's coefficients set to
zero (:mod:`dpstats.bss.full_model_bound`, :meth:`BlockSearch.leaves_per_set`).

Branches below h_D are pruned.  Every leaf B left has Delta(B) > h_D and is evaluated
exactly with the true objective.  Two queries use the search:

* :func:`minimise_block`: the block minimum, threshold = incumbent - slack (the mistakes
  mechanism's S^(i));
* :func:`block_supports_below`: every support of the block with R < threshold (the top-R
  certificate: threshold = v_R - slack, see :mod:`dpstats.bss.engine`).

Neither needs a MILP or a solver tolerance.  When the search would exceed
``BlockSearchSettings.max_nodes`` nodes, it gives up (returns None) and the caller falls back
to the outer-approximation MILP.

References
----------
Prastakos, Behdin and Mazumder (2025), section 2.1.2 (the blocks); Horn and Johnson,
Matrix Analysis, Theorems 4.3.28
(interlacing) and 6.1.1 (Gershgorin); Boyd and Vandenberghe, Convex Optimization, 5.2
(weak duality); Higham, Accuracy and Stability of Numerical Algorithms, 3.1 (the rounding
bound of a dot product used as the margin of :func:`~dpstats.bss.coherence.column_coherence`).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from math import comb

import numpy as np

from .coherence import coherence_gamma, coherence_missing, column_coherence
from .objective import HINT_MIN_SIZE, eigenvalue_floor, smallest_eigenvalue
from .outside_schur import MAX_SCHUR_COLUMNS, OutsideSchur


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
    #: of the pruned removed sets, those the model with every column decided (BlockSearch.full_bound)
    full_pruned_sets: int = 0


@dataclass
class BlockEnumeration:
    """Every support of one block with R below ``threshold``, evaluated exactly.

    Supports of the block not listed have R >= threshold.
    """

    supports: list
    values: np.ndarray
    threshold: float
    nodes: int
    leaves: int
    pruned_sets: int
    #: removed sets visited, and of the pruned ones those the model with every column decided
    sets: int = 0
    full_pruned_sets: int = 0


class _TooLarge(Exception):
    pass


class _Found(Exception):
    """One leaf is enough (a removal prefix that cannot be skipped)."""


#: Memory for the columns of M the large-candidate-set search keeps (:meth:`BlockSearch.lazy_matrix`).
LAZY_CACHE_BYTES = 256 * 2**20


#: :func:`block_gamma` looks at this many rows before the whole matrix.
GERSHGORIN_SAMPLE = 8


def block_gamma(M, i, eigen=True, hints=None):
    """A lower bound on lambda_min(M_B) for every i-subset B of M's index set (Gershgorin,
    and with ``eigen`` also lambda_min(M) by interlacing).  ``hints``: a dict whose "eig"
    holds the last eigenvalue computed in this search on a matrix of at least HINT_MIN_SIZE
    rows, for :func:`~dpstats.bss.objective.eigenvalue_floor` to try first (the nodes'
    matrices differ little); a bound certified from the hint is not stored (it lies below
    the hint), nor a small matrix's eigenvalue (interlacing puts it above the large ones')."""
    m = M.shape[0]
    if m <= 1 or i <= 1:
        return 1.0
    # Gershgorin on M_B: row j's off-diagonal sum inside B is at most the sum of its (i - 1)
    # largest |M_jk| (at least as sharp as 1 - (i - 1) max |M_jk|)
    k = min(i - 1, m - 1)
    # A few rows first: when one of them already reaches 1, the bound is <= 0 (unusable, the
    # result below is the same) and the pass over all m^2 entries is skipped.
    rows = np.unique(np.linspace(0, m - 1, num=min(m, GERSHGORIN_SAMPLE)).astype(np.int64))
    sample = np.abs(M[rows])
    sample[np.arange(rows.size), rows] = 0.0
    if float(np.partition(sample, m - k, axis=1)[:, m - k:].sum(axis=1).max()) >= 1.0:
        gersh = 0.0
    else:
        off = np.abs(M)
        np.fill_diagonal(off, 0.0)
        top = np.partition(off, m - k, axis=1)[:, m - k:].sum(axis=1)
        gersh = 1.0 - float(top.max())
    eig = 0.0
    if eigen and m <= 3000:
        eig, computed = eigenvalue_floor(M, hint=None if hints is None else hints.get("eig"))
        if hints is not None and computed and m >= HINT_MIN_SIZE:
            hints["eig"] = eig
    return max(gersh, eig, 1e-12)


def _square_block(M, idx):
    """M[idx, idx] as a new array: the rows, then their columns (the same numbers as
    M[np.ix_(idx, idx)], in less time at a few hundred indices: benchmarks/README.md, "The block
    search's matrices and later-gain sums")."""
    return M[idx][:, idx]


def _gram_block(source, cols):
    """G[cols, cols] without forming more of G than needed (matrix-free: X_C'X_C, centred
    when the source profiles the intercept out)."""
    if source.G is not None:
        return _square_block(source.G, cols)
    Xc = source.X[:, cols]
    out = Xc.T @ Xc
    means = source.means
    if means is not None:
        out -= source.n * np.outer(means[cols], means[cols])
    return out


def box_gain(v, a, cap):
    """max over |t| <= cap of 2 v t - a t^2 (a > 0), elementwise: v^2 / a, or 2 |v| cap - a cap^2
    when the unconstrained maximiser v / a lies outside the box (never more than v^2 / a).

    Written as (v^2 - e^2) / a with e = max(|v| - a cap, 0): the same value, no branch.
    """
    e = np.maximum(np.abs(v) - a * cap, 0.0)
    return (v * v - e * e) / a


def ball_need(need, floor, cap):
    """The largest S with box_gain(sqrt(S), floor, cap) <= need (-1 when need < 0).

    The ball bound of a set Q (module docstring) is g(|u_Q|) with g(x) = box_gain(x, floor,
    cap), increasing in x >= 0; so it is at most ``need`` exactly when |u_Q|^2 <= S, and the
    pruning tests compare sums of u_j^2 with S (separable, like the other bounds).
    """
    if need < 0:
        return -1.0
    if need <= floor * cap * cap:  # the quadratic branch: x^2 / floor
        return need * floor
    x = (need + floor * cap * cap) / (2.0 * cap)  # the linear branch: 2 x cap - floor cap^2
    return x * x


def _top_sum(x, k):
    if k <= 0 or x.size == 0:
        return 0.0
    if x.size <= k:
        return float(x.sum())
    return float(-np.partition(-x, k - 1)[:k].sum())


#: :func:`_later_top_sums` computes the exact sum every this many positions.  (Wider steps
#: make fewer partitions per node but looser bounds and many more nodes: measured slower.)
SUFFIX_STEP = 16


def _later_top_sums(x, k, count):
    """U[t] >= the sum of the k largest of x[t + 1:], for t = 0..count - 1.

    Exact at every multiple of :data:`SUFFIX_STEP`; in between, the value at the last
    multiple (a suffix only loses elements, so its top-k sum does not increase): the
    branch-and-bound's inner loop.
    """
    step = SUFFIX_STEP
    if k <= 0:
        return np.zeros(count)
    if k == 1:  # exact, vectorised: the maximum of each later suffix
        later = np.append(np.maximum.accumulate(x[::-1])[::-1][1:], 0.0)
        return later[:count].copy()
    exact = _top_sums_after(x, k, np.arange(0, count, step))
    return np.repeat(exact, step)[:count]


#: :func:`_top_sums_after` partitions each suffix on its own up to this many starts (below it
#: one sort for all of them measured slower, at 60 and 400 columns).
FEW_STARTS = 5


def _top_sums_after(x, k, starts):
    """The sum of the k largest of x[t + 1:] for each t of ``starts`` (exact; 0 for an empty suffix).

    Up to :data:`FEW_STARTS` starts, each suffix is partitioned on its own; beyond, one sort of
    x serves them all: in x's descending order, the elements of the suffix after t are those
    with an index above t, and the first k of them are its k largest.  (A partition per start
    costs a Python call and a pass each: the search's inner loop.)
    """
    starts = np.asarray(starts, dtype=np.int64)
    if k <= 0 or x.size == 0 or starts.size == 0:
        return np.zeros(starts.size)
    if starts.size <= FEW_STARTS:
        return np.array([_top_sum(x[t + 1:], k) for t in starts])
    order = np.argsort(-x, kind="stable")
    later = order[None, :] > starts[:, None]
    later &= np.cumsum(later, axis=1) <= k
    return np.where(later, x[order][None, :], 0.0).sum(axis=1)


def bordered_inverse(Minv, b, d):
    """The inverse of [[M, a], [a', 1]] from Minv = M^{-1}, b = M^{-1} a and d = 1 - a'b > 0.

    Block inversion (the Schur complement of M is the scalar d):
    [[M^{-1} + b b' / d, -b / d], [-b' / d, 1 / d]].  ``Minv`` and ``b`` are None for an
    empty M (the result is [[1 / d]]).
    """
    m = 0 if Minv is None else Minv.shape[0]
    out = np.empty((m + 1, m + 1))
    inv_d = 1.0 / d
    if m:
        out[:m, :m] = Minv + np.outer(b, b) * inv_d
        out[:m, m] = out[m, :m] = -b * inv_d
    out[m, m] = inv_d
    return out


def schur_scaling(source, ridge, lam, cols, GC, K, Z=None):
    """(d, f, e) of the columns ``cols`` for the Schur complement at T (module docstring).

    d_j = Sch_jj = G_jj + lam' - w_j^2, f_j = sqrt((G_jj + ridge) / d_j), e_j = w_j / sqrt(d_j),
    with GC = G[cols, T] and K = G_TT + lam' I (both None when T is empty); ``Z``: K^-1 GC' when the
    caller has it.
    """
    gjj = np.asarray(source.diag, dtype=np.float64)[cols]
    if GC is not None and Z is None:
        Z = np.linalg.solve(K, GC.T)
    w2 = np.einsum("ij,ji->i", GC, Z) if GC is not None else np.zeros(cols.size)
    d = np.maximum(gjj + lam - w2, lam)  # Sch >= lam' I
    w2 = np.maximum(gjj + lam - d, 0.0)
    return d, np.sqrt((gjj + float(ridge)) / d), np.sqrt(w2 / d)


#: The subset floor's search schedule (:meth:`BlockSearch.subset_floor`, :mod:`dpstats.bss.subset_eigen`):
#: targets 1, 2 and 3 steps of 0.05 below the size before, 10,000 nodes a target and 100,000 in all, cheaper
#: than the size bounds' schedule (benchmarks/README.md, "Subset floors in the block search").
SUBSET_FLOOR_SCHEDULE = {"step": 0.05, "steps": (1, 2, 3), "node_budget": 10_000, "total_budget": 100_000}
#: gamma_i is searched for and used only above this multiple of floor / max d (:meth:`BlockSearch.subset_floor`).
SUBSET_FLOOR_WORTH = 1.5


# ---------------------------------------------------------------- the search
@dataclass(frozen=True)
class BlockSearchSettings:
    """The block search's declared budgets and switches: public, fixed before the data.

    They change how much work the search does, never what it certifies (a search that
    would exceed ``max_nodes`` gives up and the caller's next route answers).  Tests and
    measurements declare other values here (``EngineSettings(block_search=...)``, or the
    ``settings=`` of :func:`minimise_block` and :func:`block_supports_below`).

    max_nodes
        Nodes per block before the search gives up.
    max_columns
        Above this many candidate columns a node's Schur-complement matrix is formed lazily
        (module docstring); with the Gram matrix at hand the two limits below apply first.
    coherence_above
        Above this many columns left by the first screen, the coherence screen is used.
    check_every
        The search asks ``check_time`` (the call's deadline) once per this many nodes.
    floor_max_columns
        The spectral floor (:meth:`BlockSearch.floor`) is computed when the anchor leaves
        at most this many outside columns and G is at hand (one eigenvalue of an |O| x |O|
        matrix per anchor).
    coherence_new_rows
        A matrix-free source computes the coherence profile of at most this many new
        columns per search step (each costs a pass X'x_j); beyond, the step goes without it.
    prefix_test_from, prefix_test_nodes, prefix_test_min_nodes
        A removal prefix is tested (superset bound, :meth:`BlockSearch.leaves_per_set`)
        when at least ``prefix_test_from`` removed sets D extend it; a test that needs more
        nodes than its budget (at most ``prefix_test_nodes``, at least
        ``prefix_test_min_nodes``: :meth:`BlockSearch.try_prefix`) is abandoned (the
        prefix's children are tested instead, each with a larger margin: one more strong
        column dropped).
    force_bound
        None: the branch bounds are chosen per search; "ridge" / "eigen" / "ball" force one
        (each bound alone must keep the search exact).
    prefix_test_max_columns, gram_max_columns, gram_lazy_below_nodes
        With the Gram matrix at hand, a superset test (``prefix_test_max_columns``) over more
        candidate columns than this forms its Schur-complement columns lazily, as above
        ``max_columns``, and so does the search of one removed set (``gram_max_columns``) once
        the block's earlier searches averaged fewer than ``gram_lazy_below_nodes`` nodes: a test
        is abandoned after its node budget and shallow searches end within a few nodes, so the
        |C| x |C| matrix and its eigenvalue bound cost more than they save (at (n, p) = (2000,
        1000) the failing tests, then the removed sets' searches, were most of a top-100 list's
        far search), while deep searches (strongly correlated columns) need that bound
        (benchmarks/README.md, "bench_block_cut_bounds.py").
    full_model_bound
        Bound each removal prefix (the whole block first) by the model with every column
        (:mod:`dpstats.bss.full_model_bound`) where the Gram matrix is at hand, there are more rows
        than columns and at most ``floor_max_columns`` columns (one Cholesky factor per ridge).
    subset_floor_after_nodes
        Once the anchor's blocks have spent this many nodes, the search bounds what i outside
        columns add by gamma_i over every i-set of them (:meth:`BlockSearch.subset_floor`; it costs
        a search over the i-sets, which the shallow searches of weakly correlated designs never
        repay); None: never.
    """

    max_nodes: int = 200_000
    max_columns: int = 3000
    coherence_above: int = 64
    check_every: int = 256
    floor_max_columns: int = 2000
    coherence_new_rows: int = 1024
    prefix_test_from: int = 4
    prefix_test_nodes: int = 256
    prefix_test_min_nodes: int = 32
    force_bound: str | None = None
    full_model_bound: bool = True
    prefix_test_max_columns: int = 256
    gram_max_columns: int = 256
    gram_lazy_below_nodes: int = 64
    subset_floor_after_nodes: int | None = 2000


#: The block search's settings where none are declared.
DEFAULT_BLOCK_SETTINGS = BlockSearchSettings()


class BlockReduction:
    """The reduced problem of one block, for :class:`BlockSearch` (its subclass, which holds the
    state these read: the source, the anchor, the depth i, the ridges, the radius and the floor).

    Two concerns of the search live here, apart from its branch and bound: which columns a
    block with a large enough gain may hold (the box, ball and coherence screens), and the scaled
    Schur complement M over them with its eigenvalue bound gamma, formed at once or column by
    column (module docstring)."""

    def _screen(self, T, GOT, K, u_all, h):
        """Candidate columns for B (full indices): those some B with Delta(B) > h may hold."""
        i, O = self.i, self.O
        u = u_all[O]
        uu = box_gain(u, self.floor(), self.radius)  # Sch >= floor I, |b_j| <= r
        if i > O.size or _top_sum(uu, i) <= h:  # Sch >= lam' I: the outer-approximation cut at T
            return O[:0]
        keep = uu + _top_sum(uu, i - 1) > h
        sub = self.subset_floor() if self.settings.force_bound is None else None
        if sub is not None:
            # Sch_B(T) >= gamma_i D_B (subset_floor): Delta(B) <= sum over B of u_b^2 / (gamma_i d_b), in the box
            us = box_gain(u, sub[0] * sub[1][O], self.radius)
            if _top_sum(us, i) <= h:
                return O[:0]
            keep &= us + _top_sum(us, i - 1) > h
        if self.settings.force_bound in (None, "ball"):
            # the same floor with the ball |b_B| <= r: Delta(B) <= g(|u_B|) (module docstring)
            u2, h2 = u * u, ball_need(h, self.ball_floor(sub, O), self.radius)
            if _top_sum(u2, i) <= h2:
                return O[:0]
            keep &= u2 + _top_sum(u2, i - 1) > h2
        C = np.nonzero(keep)[0]
        if C.size < i:
            return O[:0]
        if i == 1:
            # one column: Delta({j}) = v_j^2 exactly, no coherence needed
            C = C[self._single_gains(C, T, GOT, K, u) > h]
        elif C.size > self.settings.coherence_above:
            C = self._coherence_screen(C, T, GOT, K, u, h)
        return O[C]

    def dense_matrix(self, T, GOT, K, u_all, C, h):
        """(gamma, v, columns, M-column accessor) with M over C formed at once (|C| <= max_columns)."""
        i, lam, src = self.i, self.lam, self.source
        # Order the columns by their one-column gains before forming M, so that M is formed once,
        # in the search's order (any order keeps the search exact; this one finds strong
        # columns first).  The diagonal here, G_jj + lam' - w_j^2, is the Schur complement's.
        d0 = np.asarray(src.diag, dtype=np.float64)[C] + lam
        if T.size:
            GC = GOT[C]
            Wt = np.linalg.solve(K, GC.T)
            d0 -= np.einsum("ij,ji->i", GC, Wt)
        uc0 = u_all[C]
        order = np.argsort(-(uc0 * uc0 / np.maximum(d0, lam)), kind="stable")
        C = C[order]
        Sch = _gram_block(src, C)
        if T.size:
            Sch -= GC[order] @ Wt[:, order]
        Sch[np.diag_indices_from(Sch)] += lam
        d = np.diag(Sch).copy()
        uc = uc0[order]
        sq = np.sqrt(d)
        inv = 1.0 / sq
        Sch *= inv[:, None]
        Sch *= inv[None, :]
        M = Sch
        keep = np.arange(C.size)
        # No eigenvalue per removed set (i) with a spectral floor above lam': the ridge bound is
        # then about as strong as lambda_min(M_C) (both see the same singular directions);
        # (ii) with fewer rows than columns: Sch - lam' I = X_C' W X_C is singular, so
        # lambda_min(M_C) lies between lam' / max(d) and lam' / min(d) and cannot beat the
        # ridge bound's lam' / d_j (the search then uses the ridge bound alone: use_eigen in
        # _branch_and_bound).  The free bound lam' / max(d) (M >= lam' D^{-1}) always holds.
        eigen = self.floor() <= self.lam and not self._rank_deficient(C.size)
        dmax = float(d.max())
        gamma = max(block_gamma(M, i, eigen, hints=self._eig_hints), self.lam / dmax if dmax > 0 else 0.0)
        vs_c, box = uc * inv, self.radius * sq  # scaled gains and the box |b_j| <= r in M's scale
        while True:
            vk = box_gain(vs_c[keep], gamma, box[keep])  # M_B >= gamma I
            new = keep[vk + _top_sum(vk, i - 1) > h]
            if new.size < i:
                return None
            if new.size == keep.size:
                break
            keep = new
            gamma = max(gamma, block_gamma(_square_block(M, keep), i, eigen))
        Ms = M if keep.size == C.size else _square_block(M, keep)
        return (gamma, vs_c[keep], C[keep], lambda j: Ms[:, j], d[keep] / self.floor(), sq[keep],
                lambda rows, cols: Ms[rows][:, cols])  # rows or cols may be slices

    def lazy_matrix(self, T, GOT, K, u_all, C, h):
        """As :meth:`dense_matrix` for a large C: gamma_0 from the coherence profile, and a
        column of M computed only when the search picks that column (one X'x_j product),
        so no |C| x |C| matrix is formed."""
        i, lam, src = self.i, self.lam, self.source
        GC = GOT[C] if T.size else None
        Z = np.linalg.solve(K, GC.T) if GC is not None else None  # K^-1 G_TC: every column of M below reads it
        d, f, e = schur_scaling(src, self.ridge, lam, C, GC, K, Z)
        ntop = self._coherence_rows(C)
        # gamma <= 0 (or no profile): unusable, the ridge bound alone decides
        gamma = coherence_gamma(f, e, ntop, i) if ntop is not None else 0.0
        uc = u_all[C]
        v2 = uc * uc / d
        order = np.argsort(-v2, kind="stable")
        cols, sq = C[order], np.sqrt(d[order])
        GCo = None if GC is None else GC[order]
        Zo = None if Z is None else Z[:, order]
        # Columns of M computed so far, least recently used dropped first: a long search visits
        # many columns, and |C| x |C| of them is what this path exists to avoid (at p = 5 x 10^4
        # an unbounded cache reached 24 GB).
        cache = OrderedDict()
        keep = max(16, LAZY_CACHE_BYTES // (8 * max(cols.size, 1)))

        def mcol(j):
            if j in cache:
                cache.move_to_end(j)
                return cache[j]
            c = int(cols[j])
            col = src.cross(np.array([c]))[cols, 0]
            if GCo is not None:
                col = col - GCo @ Zo[:, j]
            col[j] = d[order][j]  # Sch_jj = d_j exactly (M_jj = 1)
            cache[j] = col / (sq * sq[j])
            if len(cache) > keep:
                cache.popitem(last=False)
            return cache[j]

        return gamma, uc[order] / sq, cols, mcol, d[order] / self.floor(), sq, None  # no blocks of M: |C| is large

    def _single_gains(self, C, T, GOT, K, u):
        cols = self.O[C]
        d, _, _ = schur_scaling(self.source, self.ridge, self.lam, cols, GOT[cols] if T.size else None, K)
        return box_gain(u[C], d, self.radius)  # exact one-column gain, the box |b_j| <= r kept

    def _coherence_rows(self, cols):
        """Per column of ``cols``, the sum of its i - 1 largest coherences (or None: too costly).

        One profile for every block of this anchor (depth s - 1, the largest i - 1 needed).
        A matrix-free source pays n p per new column, so when more than ``settings.coherence_new_rows``
        columns are not yet profiled the caller goes without (the ridge bound still holds).
        """
        src, i = self.source, self.i
        depth = max(self.anchor_full.size - self.offset - 1, i - 1)
        if (src.G is None
                and coherence_missing(src, self.ridge, depth, self.anchor_full, cols) > self.settings.coherence_new_rows):
            return None
        prof = column_coherence(src, self.ridge, depth, exclude=self.anchor_full, rows=cols)
        return prof[cols, :i - 1].sum(axis=1)

    def _coherence_screen(self, C, T, GOT, K, u, h):
        """Drop columns by |v_B|^2 / gamma_0 (module docstring), C as positions in O."""
        i, src = self.i, self.source
        cols = self.O[C]
        d, f, e = schur_scaling(src, self.ridge, self.lam, cols, GOT[cols] if T.size else None, K)
        sq = np.sqrt(d)
        vs_c, box = u[C] / sq, self.radius * sq
        ntop = self._coherence_rows(cols)
        if ntop is None:
            return C
        keep = np.arange(C.size)
        while keep.size >= i:
            gamma = coherence_gamma(f[keep], e[keep], ntop[keep], i)
            if gamma <= 0:
                break
            vk = box_gain(vs_c[keep], gamma, box[keep])
            new = keep[vk + _top_sum(vk, i - 1) > h]
            if new.size == keep.size:
                break
            keep = new
        return C[keep]


class BlockSearch(BlockReduction):
    """Branch and bound over one block; yields, per removed set D, the leaves to evaluate."""

    def __init__(self, source, anchor_full, offset, i, mu, settings, check_time=None,
                 pruned_prefixes=None, prefix_budgets=None, nodes_before=0):
        self.source = source
        self.nodes_before = int(nodes_before)  # nodes the anchor's earlier blocks spent
        # prefixes pruned in larger blocks of this anchor (:meth:`leaves_per_set`); a private
        # dict when the caller keeps none
        self.pruned_prefixes = {} if pruned_prefixes is None else pruned_prefixes
        self.anchor_full = np.asarray(anchor_full, dtype=np.int64)
        self.offset = int(offset)
        self.i = int(i)
        # the objective's ridge and radius are the source's (fixed when it was built)
        self.ridge = float(source.ridge)
        self.lam = self.ridge + float(mu)
        self.shift = float(mu) * float(source.radius) ** 2
        self.radius = float(source.radius)  # |b_j| <= r on the ball: the box of box_gain
        self.settings = settings
        self.max_nodes = int(settings.max_nodes)
        self.max_columns = int(settings.max_columns)
        mask = np.ones(source.n_columns, dtype=bool)
        mask[self.anchor_full] = False
        mask[:self.offset] = False
        self.O = np.nonzero(mask)[0]
        self.nodes = self.leaves = self.pruned = self.sets = 0
        self.full_pruned = 0  # removed sets decided by the full model's bound (:meth:`full_bound`)
        self._searches = self._search_nodes = 0  # removed sets' searches so far and their nodes
        self.check_time = check_time
        self._floor = None
        self._full = False  # the full model's bound: not asked yet (None: not available)
        self._subset = False  # the subset floor (:meth:`subset_floor`): not computed yet
        self._eig_hints = {}  # the last node's lambda_min bound (:func:`block_gamma`)
        # prefix length -> the superset test's node budget (:meth:`try_prefix`), shared like
        # pruned_prefixes by the blocks of one anchor
        self.prefix_budgets = {} if prefix_budgets is None else prefix_budgets

    def floor(self):
        """A lower bound on the spectrum of Sch for every T inside the anchor (over O).

        lam' always (Sch >= lam' I).  Sharper: removing columns from T only enlarges Sch
        (x'G_OT (G_TT + lam' I)^{-1} G_TO x is a maximum over coefficients on T, which a
        larger T can only raise), so lambda_min of Sch at T = the whole anchor bounds them
        all.  Computed once per (anchor, lam') with a rounding margin, from the Gram matrix,
        when |O| <= ``settings.floor_max_columns``; otherwise lam'.
        """
        if self._floor is not None:
            return self._floor
        self._floor = self.lam
        src, O, A = self.source, self.O, self.anchor_full
        G = src.G
        if G is None or O.size == 0 or O.size > self.settings.floor_max_columns or self._rank_deficient(O.size):
            return self._floor
        key = (tuple(int(j) for j in A), self.lam)
        cache = src._floor_cache
        if cache is not None and cache[0] == key:
            self._floor = cache[1]
            return self._floor
        GOA = G[O][:, A]
        Sch = _square_block(G, O) + self.lam * np.eye(O.size)
        Sch -= GOA @ np.linalg.solve(_square_block(G, A) + self.lam * np.eye(A.size), GOA.T)
        scale = float(np.max(np.diag(Sch)))
        eig = smallest_eigenvalue(Sch / scale) * scale  # margin: 64 m^2 u ||Sch|| (m = |O|)
        self._floor = max(self.lam, eig)
        src._floor_cache = (key, self._floor)
        return self._floor

    def subset_floor(self):
        """(gamma_i, d) with Sch_B(T) >= gamma_i diag(d_B) for every i-set B of the outside columns and
        every T inside the anchor (d over all columns, zero off O), or None (not yet worth its cost, or
        not available: matrix-free, too many outside columns, i < 3, or no gain over the floor).

        At the anchor A, :class:`~dpstats.bss.outside_schur.OutsideSchur` gives lower bounds d_b on
        Sch_bb(A) and gamma_i <= lambda_min(D^-1/2 Sch_BB(A) D^-1/2) for every i-set B (a search over the
        i-sets, :mod:`dpstats.bss.subset_eigen`).  Sch(T) >= Sch(A) for T inside A (:meth:`floor`), so
        Sch_BB(T) >= gamma_i D_B; and a Schur complement is monotone in the positive semidefinite order,
        so at a node P of the search Sch_{Q|P}(T) >= (gamma_i D_{P+Q}) / (gamma_i D_P) = gamma_i D_Q for
        |P + Q| = i.  The bound Delta(Q | P) <= sum over Q of u~_q^2 / (gamma_i d_q) (in the box) then
        holds beside the floor's: gamma_i over i-sets is far above the smallest eigenvalue over all
        outside columns where each column has a few correlated neighbours.
        """
        if self._subset is not False:
            return self._subset
        after = self.settings.subset_floor_after_nodes
        src, O, A = self.source, self.O, self.anchor_full
        if (after is None or self.i < 3 or src.G is None or O.size < self.i or self._rank_deficient(O.size)
                or O.size > min(MAX_SCHUR_COLUMNS, self.settings.floor_max_columns)):
            self._subset = None
            return None
        if self.nodes_before + self.nodes < after:
            return None  # asked again later
        key = (tuple(int(j) for j in A), self.lam)
        cache = src._outside_schur_cache
        if cache is None or cache[0] != key:
            G = src.G
            G_OA = G[O][:, A]
            schur = OutsideSchur(src, A, O, self.lam, self.floor(), _square_block(G, A), G_OA,
                                 np.linalg.norm(G_OA, axis=1), max(A.size - self.offset - 1, 1),
                                 check_time=self.check_time, subset_schedule=SUBSET_FLOOR_SCHEDULE)
            cache = (key, schur)
            src._outside_schur_cache = cache
        schur = cache[1]
        d = np.zeros(src.n_columns)
        d[O] = schur.anchor_diagonal()
        # at floor / max d, gamma_i d_b is at most the floor for every b; a little above, the bound's third
        # term costs more per node than it prunes
        worth = SUBSET_FLOOR_WORTH * self.floor() / float(d[O].max())
        gamma = float(schur.searched_gamma(self.i, minimum=worth))
        self._subset = (gamma, d) if gamma > worth else None
        return self._subset

    def ball_floor(self, sub, cols):
        """The floor of the ball bound over candidates ``cols``: Sch_{Q|P} >= gamma_i min d I as well."""
        if sub is None or cols.size == 0:
            return self.floor()
        return max(self.floor(), sub[0] * float(sub[1][cols].min()))

    def _rank_deficient(self, columns):
        """True when the design has fewer rows than ``columns``: then Sch - lam' I =
        X_C' W X_C (W = I minus the ridge hat matrix of T, positive definite) over that many
        columns is singular, and the smallest eigenvalue of Sch is lam' itself."""
        return self.source.n < columns

    def full_bound(self):
        """The :class:`~dpstats.bss.full_model_bound.FullModelBound` of this anchor and lam', or None
        (switched off, matrix-free, fewer rows than columns, or more than ``floor_max_columns``)."""
        if self._full is False:
            self._full = None
            src = self.source
            if self.settings.full_model_bound and src.G is not None and src.n_columns <= self.settings.floor_max_columns:
                from .full_model_bound import full_model_bound

                self._full = full_model_bound(src, self.anchor_full[self.offset:], self.lam, self.shift)
        return self._full

    def schur_at(self, T, threshold):
        """(GOT, K, u_all, h) of the Schur complement at T for this threshold."""
        src, lam = self.source, self.lam
        c = src.c
        GOT = src.cross(T) if T.size else np.zeros((src.n_columns, 0))
        if T.size:
            K = GOT[T] + lam * np.eye(T.size)
            bT = np.linalg.solve(K, c[T])
            R0 = src.yy - float(c[T] @ bT)
            u_all = c - GOT @ bT
        else:
            K, R0, u_all = None, src.yy, c.copy()
        return GOT, K, u_all, R0 - self.shift - threshold

    def leaves_at(self, T, threshold, first_only=False, budget=None):
        """Every B (|B| = i, outside the anchor) the bounds cannot place at R(T + B) >= threshold.

        ``first_only``: a yes/no question; the list is non-empty (not necessarily a leaf) when
        some B may be below the threshold or the search passed ``budget`` nodes.
        """
        GOT, K, u_all, h = self.schur_at(T, threshold)
        C = self._screen(T, GOT, K, u_all, h)
        if C.size < self.i:
            return []
        return self._branch_and_bound(T, GOT, K, u_all, C, h, first_only=first_only,
                                      budget=budget if first_only else None)

    def try_prefix(self, T, threshold, depth):
        """True when the superset test at T (a removal prefix of length ``depth``) prunes it.

        The test's node budget adapts per prefix length, between ``settings.prefix_test_min_nodes``
        and ``settings.prefix_test_nodes``: halved after a test that used it all without deciding, doubled
        after one that pruned with at least half of it.  A test that gives up costs its whole
        budget and decides nothing (the prefix's children are then visited, as without the
        test), so where tests at a length keep giving up they should give up early; where
        they prune late they are worth their nodes.  Only the work changes: a pruned prefix
        is pruned by the bounds whatever the budget.  A matrix-free source keeps the largest
        budget: there every removed set the children add costs passes over X for its
        columns, and adapting measured slower (bench_public case 7).
        """
        if self.source.G is None:
            return not self.leaves_at(T, threshold, first_only=True, budget=self.settings.prefix_test_nodes)
        budget = self.prefix_budgets.get(depth, self.settings.prefix_test_nodes)
        start = self.nodes
        found = self.leaves_at(T, threshold, first_only=True, budget=budget)
        used = self.nodes - start
        if found and found[-1] is None:
            self.prefix_budgets[depth] = max(min(self.settings.prefix_test_min_nodes, self.settings.prefix_test_nodes), budget // 2)
        elif not found and 2 * used >= budget:
            self.prefix_budgets[depth] = min(self.settings.prefix_test_nodes, 2 * budget)
        return not found

    def leaves_per_set(self, threshold):
        """Yield (candidate supports with a bound below threshold()) for each removed set D.

        The removed sets D (i-subsets of the movable anchor columns) are visited as the
        leaves of the tree of their ordered prefixes.  A prefix D' with many extensions is
        tested first by the *superset bound*: every support of the block with D containing
        D' is (S0 minus D) + B, a subset of (S0 minus D') + B, and R does not increase when
        columns are added (the ridge-and-ball problem of the larger support has the smaller
        support's solutions among its feasible points).  So when no B with |B| = i passes
        the search at T' = S0 minus D' (every R(T' + B) >= threshold by the two facts of the
        module docstring), every support under D' is >= threshold and the subtree is
        skipped: one search instead of C(|S0| - 1 - max D', i - |D'|).  With s = 20 most
        blocks are decided at |D'| = 1, since dropping a strong column costs more than any i
        outside columns can recover.  The empty prefix is not tested: it would need R(S0 + B)
        >= threshold, and S0 + B is never worse than S0, whose value is usually below the
        thresholds used (the anchor is the best or a locally best support).

        Before that, every prefix (the empty one, the whole block, first) is tested by the
        model with every column (:meth:`full_bound`, :mod:`dpstats.bss.full_model_bound`):
        a few operations per prefix, which count the i - |D'| removals still to come, where
        the superset test counts only D'.  It is not recorded in ``pruned_prefixes`` (a
        smaller block completes the prefix with fewer removals).

        ``pruned_prefixes`` (shared by the blocks of one anchor, searched from the largest i
        down, at thresholds that never rise) maps a prefix D' to the largest block size i whose
        test pruned it.  That test showed R(T' + B) >= threshold for every |B| = i, so also
        for every smaller B (T' + B' lies inside some T' + B, and R does not increase when
        columns are added), and at every lower threshold: D' needs no test in blocks i' <= i,
        as a prefix or, when |D'| = i', as a removed set.
        """
        i, offset = self.i, self.offset
        forced, movable = self.anchor_full[:offset], self.anchor_full[offset:]
        m = movable.size
        if i > m:
            return
        known = self.pruned_prefixes
        full = self.full_bound()
        # The tree runs over the anchor's columns in this order: the costliest to drop from the
        # full model first when that bound is at hand (a prefix of strong columns has a large
        # bound and is decided near the root), else as given.  Prefixes are keyed in ``known`` by
        # the set of columns they remove, which is what a superset test decides.
        order = np.argsort(-full.cost, kind="stable") if full is not None else np.arange(m)
        stack = [()]
        while stack:
            prefix = stack.pop()
            last = prefix[-1] if prefix else -1
            removed = order[list(prefix)]
            below = comb(m - last - 1, i - len(prefix))  # removed sets D extending this prefix
            if full is not None and full.prefix(removed, order[last + 1:], i) >= threshold():
                # dropping these anchor columns (and the cheapest completion) costs the model with
                # every column more than the threshold leaves: no support under the prefix is below it
                self.sets += below
                self.pruned += below
                self.full_pruned += below
                continue
            key = tuple(sorted(int(k) for k in removed))
            if len(prefix) == i:
                self.sets += 1
                if known.get(key, 0) >= i:
                    self.pruned += 1
                    continue
                T = np.concatenate([forced, np.delete(movable, removed)])
                found = self.leaves_at(T, threshold())
                if not found:
                    self.pruned += 1
                    continue
                self.leaves += len(found)
                yield np.array(found, dtype=np.int64)
                continue
            if prefix and below >= self.settings.prefix_test_from:
                pruned = known.get(key, 0) >= i
                if not pruned:
                    T = np.concatenate([forced, np.delete(movable, removed)])
                    pruned = self.try_prefix(T, threshold(), len(prefix))
                    if pruned:
                        known[key] = i
                if pruned:
                    self.sets += below
                    self.pruned += below
                    continue
            # children in reverse so that the stack pops them in lexicographic order
            for k in range(m - (i - len(prefix)), last, -1):
                stack.append(prefix + (k,))

    def _branch_and_bound(self, T, GOT, K, u_all, C, h, first_only=False, budget=None):
        i, offset = self.i, self.offset
        last_node = None if budget is None else self.nodes + int(budget)
        limit = self.max_columns
        if self.source.G is not None:
            # A superset test stops after its budget, and where this block's searches so far ended
            # within a few nodes each, forming M over a large C at once costs more than the nodes
            # it would speed up; deep searches keep M's eigenvalue bound (BlockSearchSettings).
            if first_only:
                limit = min(limit, self.settings.prefix_test_max_columns)
            elif self._searches and self._search_nodes < self.settings.gram_lazy_below_nodes * self._searches:
                limit = min(limit, self.settings.gram_max_columns)
        start_nodes = self.nodes
        prep = (self.dense_matrix if C.size <= limit else self.lazy_matrix)(T, GOT, K, u_all, C, h)
        if prep is None:
            return []
        gamma, vs, cols, mcol, kappa, sq, rect = prep
        box = self.radius * sq  # |b_j| <= r in M's scale
        floor = self.floor()
        sub = self.subset_floor() if self.settings.force_bound is None else None
        phi = None if sub is None else sub[0] * sub[1][cols]  # Sch_{Q|P} >= gamma_i D_Q (subset_floor)
        ball_floor = self.ball_floor(sub, cols)
        # Bounds on Delta(Q | P) the branches use (module docstring): the ridge one, sum(gains *
        # kappa), always; the eigenvalue one, sum(gains) / gamma, too unless gamma is unusable
        # or no better for any column (fewer rows than candidates makes M_C singular up to the
        # ridge, so gamma is about the smallest 1 / kappa anyway).
        use_eigen = gamma > 0 and 1.0 / gamma < float(kappa.max(initial=0.0))
        use_ridge = use_ball = True
        force = self.settings.force_bound
        if force is not None:  # tests: each bound alone must keep the search exact
            use_eigen = force == "eigen" and gamma > 0
            use_ball = force == "ball"
            use_ridge = not (use_eigen or use_ball)

        def block(start, P):
            # M[q, P] for q = start, start + 1, ...: one slice of the dense matrix when at hand
            if rect is not None:
                return rect(slice(start, None), P)
            return np.column_stack([mcol(j)[start:] for j in P])

        base = T[offset:]
        found = []

        def pair_leaves(P, q, starts, vt, dt, AMi, A, W, u2, need):
            # Two picks left: the exact conditional gain of every pair (first pick among the
            # surviving starts, second any later column) at once, 2 x 2 inverses, instead of a
            # node per first pick; a pair is a leaf when the smaller of that gain and its
            # separable bounds (W) exceeds the need.
            Mab = rect(q[starts], slice(int(q[0]), None))  # q = q[0], q[0] + 1, ...
            if AMi is not None:
                Mab = Mab - AMi[starts] @ A.T  # M conditional on P
            va, da = vt[starts][:, None], dt[starts][:, None]
            vb, db = vt[None, :], dt[None, :]
            dd = da * db
            den = dd - Mab * Mab
            num = va * va * db - 2.0 * va * vb * Mab + vb * vb * da
            with np.errstate(divide="ignore", invalid="ignore"):
                bound = np.where(den > 1e-12 * dd, num / den, np.inf)
            for w in W:
                bound = np.minimum(bound, w[starts][:, None] + w[None, :])
            bound[np.arange(q.size)[None, :] <= starts[:, None]] = -np.inf  # second pick later
            hits = np.nonzero(bound > need)
            if u2 is not None and hits[0].size:  # the ball bound of each pair left, g(|u~_pair|)
                ball = box_gain(np.sqrt(u2[starts[hits[0]]] + u2[hits[1]]), ball_floor, self.radius)
                hits = (hits[0][ball > need], hits[1][ball > need])
            for ia, ib in zip(*hits):
                sup = np.concatenate([base, cols[P], [cols[q[starts[ia]]], cols[q[ib]]]]) - offset
                found.append(np.sort(sup))
                if first_only:
                    raise _Found

        def branch(P, start, Minv_P, delta_P):
            self.nodes += 1
            if self.nodes > self.max_nodes:
                raise _TooLarge
            if last_node is not None and self.nodes > last_node:
                found.append(None)  # undecided: the caller treats it as not pruned
                raise _Found
            if self.check_time is not None and self.nodes % self.settings.check_every == 0:
                self.check_time()
            k = i - len(P)
            q = np.arange(start, vs.size)  # candidates for the next picks (later in the order)
            if q.size < k:
                return
            if P:
                A = block(start, P)
                AMi = A @ Minv_P
                vt = vs[q] - AMi @ vs[P]
                dt = 1.0 - np.einsum("ij,ij->i", AMi, A)
            else:
                vt, dt = vs[q], np.ones(q.size)
            dt = np.maximum(dt, 1e-300)
            if k == 1:
                g = box_gain(vt, dt, box[q])  # exact conditional gain of one more column, in the box
                for t in np.nonzero(delta_P + g > h)[0]:
                    sup = np.concatenate([base, cols[P], [cols[q[t]]]]) - offset
                    found.append(np.sort(sup))
                    if first_only:
                        raise _Found
                return
            # per-column terms of the bounds, Delta(Q | P) <= sum over Q of each row of W
            need = h - delta_P
            # (M_{Q|P} >= gamma I; Sch_{Q|P} >= floor I; each column's coefficient in the box)
            W = (([box_gain(vt, gamma, box[q])] if use_eigen else [])
                 + ([box_gain(vt * sq[q], floor, self.radius)] if use_ridge else [])
                 + ([box_gain(vt * sq[q], phi[q], self.radius)] if phi is not None else []))
            # (Sch_{Q|P} >= floor I and |b_Q| <= r together: Delta(Q | P) <= g(|u~_Q|), a test on
            # the sum of u~_j^2 over Q against ball_need(need))
            u2 = np.square(vt * sq[q]) if use_ball else None
            terms = [(w, need) for w in W] + ([(u2, ball_need(need, ball_floor, self.radius))] if use_ball else [])
            if any(_top_sum(w, k) <= nd for w, nd in terms):
                return
            # a branch starting at q[t] uses only later columns: bound its picks.  First with
            # the k - 1 largest terms of all later columns together (one partition), then, for
            # the starts that survive, with their own later columns.
            count = q.size - (k - 1)
            alive = np.ones(count, dtype=bool)
            for w, nd in terms:
                alive &= w[:count] + _top_sum(w[1:], k - 1) > nd
            starts = np.nonzero(alive)[0]
            for w, nd in terms:
                if starts.size * SUFFIX_STEP < count:  # few starts: their exact sums are cheaper
                    later = _top_sums_after(w, k - 1, starts)
                else:
                    later = _later_top_sums(w, k - 1, count)[starts]
                starts = starts[w[starts] + later > nd]
            if k == 2 and rect is not None:
                pair_leaves(P, q, starts, vt, dt, AMi if P else None, A if P else None, W, u2, need)
                return
            for t in starts:
                j = int(q[t])
                # no inverse per node: M_{P+j}^{-1} borders M_P^{-1} (row t of AMi is M_P^{-1} M_{P,j},
                # dt[t] the conditional diagonal), and Delta(P + j) = Delta(P) + vt[t]^2 / dt[t]
                # (the chain rule of the module docstring)
                Minv2 = bordered_inverse(Minv_P, AMi[t] if P else None, dt[t])
                branch(P + [j], j + 1, Minv2, delta_P + vt[t] * vt[t] / dt[t])


        try:
            branch([], 0, None, 0.0)
        except _Found:
            pass
        if not first_only:
            self._searches += 1
            self._search_nodes += self.nodes - start_nodes
        return found


def _evaluate_in_chunks(evaluate, sups, chunk=256):
    # a matrix-free evaluation forms X_U'X_U over the union U of the supports' columns
    return np.concatenate([np.asarray(evaluate(sups[k:k + chunk]), dtype=np.float64)
                           for k in range(0, sups.shape[0], chunk)])


def minimise_block(source, anchor_full, offset, i, incumbent, slack, evaluate, *, mu=0.0, settings=None,
                   check_time=None, nodes_before=0):
    """Certified minimum of R over supports with exactly ``i`` columns outside the anchor.

    Parameters
    ----------
    source : GramSource or MatrixFreeSource (the objective's ridge and radius are its own)
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
    settings : BlockSearchSettings, optional
        Budgets and switches (default :data:`DEFAULT_BLOCK_SETTINGS`).
    check_time : callable, optional
        Called every few hundred nodes; raises when the call's time is up.

    Returns
    -------
    BlockResult, or None when the search would exceed ``settings.max_nodes`` nodes.
    """
    search = BlockSearch(source, anchor_full, offset, i, mu, settings or DEFAULT_BLOCK_SETTINGS, check_time,
                         nodes_before=nodes_before)
    inc_sup, inc_val = tuple(incumbent[0]), float(incumbent[1])
    lower = np.inf
    smallest = [np.inf]  # the smallest threshold read (the incumbent only falls)

    def threshold():
        smallest[0] = min(smallest[0], inc_val - slack)
        return inc_val - slack

    try:
        for sups in search.leaves_per_set(threshold):
            vals = _evaluate_in_chunks(evaluate, sups)
            k = int(np.argmin(vals))
            if vals[k] < inc_val:
                inc_sup, inc_val = tuple(int(j) for j in sups[k]), float(vals[k])
            lower = min(lower, float(vals.min()))
    except _TooLarge:
        return None
    lower = min(lower, inc_val, smallest[0])
    return BlockResult(inc_sup, inc_val, lower, search.nodes, search.leaves, search.sets, search.pruned,
                       search.full_pruned)


def block_supports_below(source, anchor_full, offset, i, threshold, evaluate, *, mu=0.0, settings=None,
                         check_time=None, pruned_prefixes=None, prefix_budgets=None, nodes_before=0):
    """Every support of block i with R < ``threshold``, evaluated exactly (or None).

    The top-R certificate (:mod:`dpstats.bss.engine`) with threshold = v_R - slack: supports of
    the block that are not returned have R >= threshold.  ``threshold`` may be a number or a
    callable read afresh per removed set (the list's v_R - slack as it falls); then the result's
    ``threshold`` is the smallest value read, and the guarantee holds for it.  Arguments as in
    :func:`minimise_block`; returns a :class:`BlockEnumeration` (which may list supports
    at or above the threshold too), or None when the search is too large.

    ``pruned_prefixes``: one dict shared by the calls for the blocks of one anchor and ball
    multiplier, made from the largest i down at thresholds that never rise (the removal
    prefixes a larger block pruned are pruned here too: :meth:`BlockSearch.leaves_per_set`).
    ``prefix_budgets``: a dict shared the same way, the superset tests' node budgets per
    prefix length (:meth:`BlockSearch.try_prefix`; they change the work, not the result).
    """
    search = BlockSearch(source, anchor_full, offset, i, mu, settings or DEFAULT_BLOCK_SETTINGS, check_time,
                          pruned_prefixes, prefix_budgets, nodes_before)
    current = threshold if callable(threshold) else (lambda: threshold)
    used = [float(current())]

    def thr():
        # never above an earlier threshold of this block (the prefixes pruned so far are pruned
        # at any lower one); a support left out at a threshold has R >= the smallest one read
        used[-1] = min(used[-1], float(current()))
        return used[-1]

    sups_all, vals_all = [], []
    try:
        for sups in search.leaves_per_set(thr):
            sups_all.extend(tuple(int(j) for j in row) for row in sups)
            vals_all.append(_evaluate_in_chunks(evaluate, sups))
    except _TooLarge:
        return None
    vals = np.concatenate(vals_all) if vals_all else np.empty(0)
    return BlockEnumeration(sups_all, vals, used[-1], search.nodes, search.leaves, search.pruned, search.sets,
                            search.full_pruned)
