"""``method="mcmc"``: Metropolis-Hastings best subset selection (Roy and Tewari 2023).

The baseline that Prastakos, Behdin and Mazumder (2025) compare top-R and mistakes
against (their "closest competitor").  It exists for comparison: its guarantee is
approximate.

The chain
---------
State: a support S of s candidate terms (a forced intercept is in every support and is
never swapped).  One step proposes swapping a uniform member of S with a uniform
non-member; the proposal is symmetric (q(S -> S') = 1 / (s (p - s)) both ways), so the
Metropolis-Hastings acceptance probability is

    min(1, exp(-epsilon (R(S') - R(S)) / (2 Delta)))

with the package's objective R (:mod:`dpstats.bss.objective`) and its sensitivity
Delta = (b_y + b_x r sqrt(s'))^2.  The swap graph on s-subsets (a Johnson graph) is
connected and has triangles once p >= 3, so the chain is irreducible and aperiodic and
its stationary distribution is the exponential mechanism of ``method="exponential"``
(P(S) proportional to exp(-epsilon R(S) / (2 Delta))).  The start is a uniformly random
support: the Lasso and marginal-correlation starts of Prastakos, Behdin and Mazumder's
reference code are computed
from the data without budget and are not offered.

Privacy statement
-----------------
Only the law of the *stationary* chain is epsilon-DP.  If the law after ``n_iter`` steps
were within total-variation distance d of it on every data set, the release would be
(epsilon, (1 + e^epsilon) d)-DP (P_D(E) <= pi_D(E) + d <= e^epsilon (P_D'(E) + d) + d).
Roy and Tewari bound the mixing time only under conditions on the design and signal that
hold with high probability, which the package does not (and cannot privately) verify, and
no d is computed for the data at hand.  The ledger therefore records epsilon with the
caveat that the guarantee is approximate, depends on mixing, and is **not certified**;
use ``top_r`` (pure epsilon-DP) when a guarantee is needed.  ``epsilon=inf`` is refused:
a chain that accepts only improvements is a greedy local search, not the best subset
(``top_r`` with ``epsilon=inf`` is the exact best subset).

Incremental objective
---------------------
Each chain keeps A = G_S + lam I (s' x s', in chain order) and c_S.  A swap replaces one
row and column of A and one entry of c_S from the precomputed G = X'X, c = X'y, and the
small system is refactorised -- never re-gathered from the n x s design.  A single chain
(what ``dp_select`` runs) takes the value from a Cholesky solve, R = yy - c_S' A^{-1} c_S,
while the ball is inactive, and otherwise from the eigendecomposition and the ball
multiplier's Newton solve of :class:`~dpstats.bss.objective.RidgeBallObjective`; many
independent chains run in lockstep on batched eigendecompositions (the sampling tests),
and the curator's total-variation diagnostic runs the same chain on a table of every
support's value when C(p, s) is small.  ``benchmarks/bench_mcmc.py`` times a step against
re-solving each proposal with ``RidgeBallObjective.values`` (numbers in
benchmarks/README.md).

Default ``n_iter``
------------------
5000: the default ``mcmc_iter`` of the experiment code of Prastakos, Behdin and Mazumder
(2025), whose experiments tune the iteration count so that MCMC's runtime matches top-R's
(their section 5 and Appendix D: "the number of MCMC iterations ... chosen such that the
average runtimes ... were comparable").  Steps here are cheap (benchmarks/README.md), so a
runtime-matched comparison with top-R can afford a larger ``n_iter``.

Deviation from the reference code: its chain scores supports by an l1-constrained least
squares with its own scaling; here the target is the package's objective and Delta
(:mod:`dpstats.bss.objective`), so the chain targets exactly ``method="exponential"``.

References
----------
Roy and Tewari (2023), On the computational complexity of private high-dimensional
model selection via the exponential mechanism, arXiv:2310.07852.
Prastakos, Behdin and Mazumder (2025), Differentially private high-dimensional variable
selection via integer programming, sections 1 and 5 (MCMC as the competitor; "50
independent Markov chains from random initialization").  Metropolis et al. (1953);
Hastings (1970).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg.lapack import dposv as _dposv
from scipy.special import comb

from ..errors import InvalidArgumentError
from ..mechanisms.exponential import exponential_log_probabilities
from ..method_options import Integer
from .. import conditions
from ..methods import SIGNS_FROM_SELECTION_FIT, MethodOutcome, SelectionMethod
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..privacy.progress import Progress
from .exhaustive import enumerate_supports
from .intercept import INTERCEPT_OPTIONS
from .objective import (RidgeBallObjective, ball_multipliers, spectral_parts, squared_loss_sensitivity,
                        values_from_spectral)

#: Default chain length: the authors' reference code's ``mcmc_iter`` (see the module docstring).
DEFAULT_N_ITER = 5000
#: Independent chains for the curator's total-variation diagnostic (0 turns it off).
DEFAULT_TV_CHAINS = 200
#: The diagnostic needs the exact exponential mechanism, so only up to this many supports.
TV_MAX_SUPPORTS = 5000
# Random draws are taken in chunks of this many steps (one RNG call per chunk, not per step).
_DRAW_CHUNK = 4096

APPROXIMATE_CAVEAT = ("approximate: the exponential-mechanism guarantee holds only in the limit of a mixed "
                      "chain; not certified")
CALL_CAVEAT = ("method='mcmc' is approximate: its privacy guarantee depends on Markov-chain mixing and is not "
               "certified (Roy and Tewari 2023); use method='top_r' for a certified epsilon-DP selection")


# --------------------------------------------------------------------------------------
# Objective values from small Gram blocks (the incremental update)
# --------------------------------------------------------------------------------------

def block_values(objective: RidgeBallObjective, A, c_block) -> np.ndarray:
    """R(S) for a batch of supports given A = G_S + lam I (K, s', s') and c_S (K, s').

    The same computation as :meth:`RidgeBallObjective.values` after its gather step:
    eigendecomposition, minimum-norm treatment of zero eigenvalues (``_spectral``), the
    ball multiplier by the monotone Newton solve (:func:`ball_multipliers`), and the value
    yy - sum_j w_j^2 (e_j + 2 mu) / (e_j + mu)^2.  Row/column order of A is irrelevant.
    """
    e, w, _ = spectral_parts(A, c_block)
    return values_from_spectral(objective.stats.yy, e, w, ball_multipliers(e, w, objective.radius))


class _GramScorer:
    """Chains' A = G_S + lam I and c_S, updated by one row/column per accepted swap."""

    def __init__(self, objective: RidgeBallObjective, members):
        self.objective = objective
        stats = objective.stats
        self.G, self.c = stats.G, stats.c
        self.ridge = objective.ridge
        self.candidates = stats.candidates
        self.offset = stats.forced.size
        self.full = objective.full_support(self.candidates[members])  # (K, s') in chain order
        K, size = self.full.shape
        self.A = self.G[self.full[:, :, None], self.full[:, None, :]] + self.ridge * np.eye(size)
        self.cb = self.c[self.full]
        self.rows = np.arange(K)
        self.values = block_values(objective, self.A, self.cb) if size else np.full(K, stats.yy)

    def propose(self, position, slot, incoming):
        """Values after putting candidate ``incoming`` at member slot ``position``."""
        rows = self.rows
        pos = position + self.offset
        col = self.candidates[incoming]
        row = self.G[col[:, None], self.full]
        row[rows, pos] = self.G[col, col] + self.ridge
        A = self.A.copy()
        A[rows, pos, :] = row
        A[rows, :, pos] = row
        cb = self.cb.copy()
        cb[rows, pos] = self.c[col]
        self._pending = (A, cb, pos, col)
        return block_values(self.objective, A, cb)

    def accept(self, mask, new_values):
        A, cb, pos, col = self._pending
        idx = np.nonzero(mask)[0]
        self.A[idx] = A[idx]
        self.cb[idx] = cb[idx]
        self.full[idx, pos[idx]] = col[idx]
        self.values[idx] = new_values[idx]


class _SupportRanker:
    """Lexicographic rank of a support among all s-subsets, in :func:`table_order_supports` order.

    The rank is that of the smaller side (members when s <= p - s, else non-members), so
    the binomial table stays small: C(a, b) for a < p and b <= m = min(s, p - s) <= p / 2
    is at most C(p, m), the number of supports.
    """

    def __init__(self, p, s):
        self.p, self.s = p, s
        self.use_complement = s > p - s
        self.m = p - s if self.use_complement else s
        a = np.arange(p)[:, None]
        b = np.arange(self.m + 1)[None, :]
        self.binom = np.rint(comb(a, b)).astype(np.int64)
        self.total = int(comb(p, self.m, exact=True))

    def rank(self, members, nonmembers):
        side = np.sort(nonmembers if self.use_complement else members, axis=1)
        # Rank of c_0 < ... < c_{m-1} in lexicographic order: C(p, m) - 1 - sum_k C(p - 1 - c_k, m - k).
        return self.total - 1 - np.sum(self.binom[self.p - 1 - side, self.m - np.arange(self.m)], axis=1)

    def rank_supports(self, supports):
        supports = np.asarray(supports, dtype=np.int64)
        inside = np.zeros((supports.shape[0], self.p), dtype=bool)
        inside[np.arange(supports.shape[0])[:, None], supports] = True
        outside = np.nonzero(~inside)[1].reshape(supports.shape[0], self.p - self.s)
        return self.rank(supports, outside)


class _TableScorer:
    """Chains scored from a precomputed table of every support's R (small C(p, s) only)."""

    def __init__(self, table_values, p, s, members, nonmembers):
        self.table = np.asarray(table_values, dtype=np.float64)
        self.ranker = _SupportRanker(p, s)
        self.members, self.nonmembers = members, nonmembers  # the kernel's arrays, updated in place
        self.rows = np.arange(members.shape[0])
        self.values = self.table[self.ranker.rank(members, nonmembers)]

    def propose(self, position, slot, incoming):
        rows = self.rows
        members, nonmembers = self.members.copy(), self.nonmembers.copy()
        nonmembers[rows, slot] = members[rows, position]
        members[rows, position] = incoming
        return self.table[self.ranker.rank(members, nonmembers)]

    def accept(self, mask, new_values):
        self.values[mask] = new_values[mask]


def table_order_supports(p, s):
    """Member supports (candidate indices) in the order :class:`_TableScorer` ranks them."""
    if s > p - s:
        small = enumerate_supports(p, p - s)
        full = np.ones((small.shape[0], p), dtype=bool)
        full[np.arange(small.shape[0])[:, None], small] = False
        return np.nonzero(full)[1].reshape(small.shape[0], s)
    return enumerate_supports(p, s)


# --------------------------------------------------------------------------------------
# The chains
# --------------------------------------------------------------------------------------

@dataclass
class ChainRun:
    """Independent Metropolis-Hastings chains after ``n_iter`` steps.

    Attributes
    ----------
    supports : ndarray (K, s)
        Final states, sorted candidate indices.
    values : ndarray (K,)
        R at the final states.
    start_supports : ndarray (K, s)
        The uniformly random starts, sorted.
    n_accepted : ndarray (K,)
        Accepted swaps per chain.
    n_iter : int
    value_trace : ndarray (n_iter + 1, K) or None
        R of the current state after each step (row 0: the start).
    support_trace : ndarray (n_iter + 1, K, s) or None
        The current state (sorted) after each step.
    n_distinct : ndarray (K,) or None
        Distinct supports each chain visited (start included).
    """

    supports: np.ndarray
    values: np.ndarray
    start_supports: np.ndarray
    n_accepted: np.ndarray
    n_iter: int
    value_trace: np.ndarray | None = None
    support_trace: np.ndarray | None = None
    n_distinct: np.ndarray | None = None

    @property
    def acceptance_rate(self) -> np.ndarray:
        return self.n_accepted / max(self.n_iter, 1)


def _check_chain_arguments(p, s, n_iter, n_chains):
    for name, value in (("p", p), ("s", s), ("n_iter", n_iter), ("n_chains", n_chains)):
        Integer(name, minimum=1, argument=True).check(value)
    if s > p:
        raise InvalidArgumentError(f"s={s} exceeds the number of candidate terms ({p}).")


def _uniform_starts(p, s, n_chains, rng):
    """Uniform s-subsets per chain: the first s of a uniform permutation (members) and the rest."""
    perms = np.argsort(rng.uniform((n_chains, p)), axis=1, kind="stable")
    return perms[:, :s].copy(), perms[:, s:].copy()


def _draw_pairs(rng, high, shape, exact):
    """Uniform proposal indices in [0, high): exact integers, or floor(U high) for diagnostics.

    ``RandomSource.integers`` is exact but, on the OS source, one ``secrets`` call per draw
    (about 1 microsecond); the curator's TV diagnostic needs 10^6 of them, so it uses
    floor(U high) instead, whose bias (below high / 2^53 per value) no 200-chain estimate
    can see.  The released chain always uses exact integers.
    """
    if exact:
        return np.asarray(rng.integers(high, size=shape), dtype=np.int64)
    return np.minimum(np.floor(rng.uniform(shape) * high).astype(np.int64), high - 1)


def _run_kernel(scorer, members, nonmembers, scale, n_iter, rng, trace, record_supports, track_distinct,
                exact_integers=True, on_chunk=None):
    K, s = members.shape
    n_out = nonmembers.shape[1]
    rows = np.arange(K)
    n_accepted = np.zeros(K, dtype=np.int64)
    value_trace = np.empty((n_iter + 1, K)) if trace else None
    support_trace = np.empty((n_iter + 1, K, s), dtype=np.int64) if record_supports else None
    distinct = [{np.sort(members[k]).tobytes()} for k in range(K)] if track_distinct else None
    if trace:
        value_trace[0] = scorer.values
    if record_supports:
        support_trace[0] = np.sort(members, axis=1)
    if n_out == 0:  # s = p: a single support, nothing to propose
        if trace:
            value_trace[1:] = scorer.values
        if record_supports:
            support_trace[1:] = support_trace[0]
        return n_accepted, value_trace, support_trace, distinct
    step = 0
    while step < n_iter:
        if on_chunk is not None:
            on_chunk(step)
        chunk = min(_DRAW_CHUNK, n_iter - step)
        # One uniform pair (member slot, non-member slot) per chain and step: the swap proposal.
        pairs = _draw_pairs(rng, s * n_out, (chunk, K), exact_integers)
        log_u = np.log(rng.uniform((chunk, K)))
        for t in range(chunk):
            position, slot = np.divmod(pairs[t], n_out)
            incoming = nonmembers[rows, slot]
            proposed = scorer.propose(position, slot, incoming)
            # Metropolis-Hastings with a symmetric proposal: accept with min(1, exp(-scale * dR)).
            accept = log_u[t] < -scale * (proposed - scorer.values)
            if accept.any():
                scorer.accept(accept, proposed)
                idx = np.nonzero(accept)[0]
                outgoing = members[idx, position[idx]]
                members[idx, position[idx]] = incoming[idx]
                nonmembers[idx, slot[idx]] = outgoing
                n_accepted += accept
                if track_distinct:
                    for k in idx:
                        distinct[k].add(np.sort(members[k]).tobytes())
            if trace:
                value_trace[step + t + 1] = scorer.values
            if record_supports:
                support_trace[step + t + 1] = np.sort(members, axis=1)
        step += chunk
    return n_accepted, value_trace, support_trace, distinct


def _run_single_gram(objective, members, nonmembers, scale, n_iter, rng, trace, record_supports, track_distinct,
                     on_chunk=None):
    """One chain on the sufficient statistics with per-step work in Python scalars.

    The same chain, draws and update as ``_run_kernel`` with a :class:`_GramScorer`, tuned
    for K = 1, where numpy's per-call overhead dominates an s' x s' problem: the swapped
    row/column is written into a copy of A, and the value comes from a Cholesky solve
    (LAPACK ``dposv``, about 1 microsecond at s' = 8) while the ball is inactive,
    R = yy - c_S' A^{-1} c_S; when the ball is active (or A is not safely positive
    definite) it falls back to :func:`block_values`.
    """
    stats = objective.stats
    G, c, yy, ridge = stats.G, stats.c, float(stats.yy), objective.ridge
    r2 = objective.radius ** 2
    candidates = stats.candidates
    offset = stats.forced.size
    s = members.shape[1]
    n_out = nonmembers.shape[1]
    members = [int(j) for j in members[0]]
    nonmembers = [int(j) for j in nonmembers[0]]
    full = objective.full_support(candidates[np.array(members)])
    size = full.size
    A = G[np.ix_(full, full)] + ridge * np.eye(size)
    cb = c[full].copy()
    # With lam well above the eigenvalue cut-off of RidgeBallObjective (1e-12 of the largest,
    # which is at most trace(A)), no direction is dropped there, so the Cholesky value is the same.
    cholesky_ok = ridge > 1e-9 * size * (float(np.max(np.diag(G))) + ridge)

    def value_of(A, cb):
        if cholesky_ok:
            _, x, info = _dposv(A, cb)
            if info == 0 and float(x @ x) <= r2:
                return yy - float(cb @ x)
        return float(block_values(objective, A[None], cb[None])[0])

    value = value_of(A, cb)
    n_accepted = 0
    value_trace = np.empty((n_iter + 1, 1)) if trace else None
    support_trace = np.empty((n_iter + 1, 1, s), dtype=np.int64) if record_supports else None
    distinct = {tuple(sorted(members))} if track_distinct else None
    if trace:
        value_trace[:] = value  # overwritten step by step below; constant if nothing can move
    current = sorted(members)
    if record_supports:
        support_trace[:] = current  # overwritten step by step below; constant if nothing can move
    step = 0
    while n_out and step < n_iter:
        if on_chunk is not None:
            on_chunk(step)
        chunk = min(_DRAW_CHUNK, n_iter - step)
        pairs = np.asarray(rng.integers(s * n_out, size=(chunk, 1)), dtype=np.int64)[:, 0].tolist()
        log_u = np.log(rng.uniform((chunk, 1)))[:, 0].tolist()
        for t in range(chunk):
            position, slot = divmod(pairs[t], n_out)
            incoming = nonmembers[slot]
            col = int(candidates[incoming])
            pos = position + offset
            row = G[col].take(full)
            row[pos] = G[col, col] + ridge
            A_new = A.copy()
            A_new[pos, :] = row
            A_new[:, pos] = row
            cb_new = cb.copy()
            cb_new[pos] = c[col]
            proposed = value_of(A_new, cb_new)
            if log_u[t] < -scale * (proposed - value):
                A, cb, value = A_new, cb_new, proposed
                full[pos] = col
                nonmembers[slot] = members[position]
                members[position] = incoming
                n_accepted += 1
                current = sorted(members)
                if track_distinct:
                    distinct.add(tuple(current))
            if trace:
                value_trace[step + t + 1] = value
            if record_supports:
                support_trace[step + t + 1, 0] = current
        step += chunk
    final = (np.array([members], dtype=np.int64), np.array([nonmembers], dtype=np.int64))
    return final, value, np.array([n_accepted]), value_trace, support_trace, None if distinct is None else [distinct]


def run_chains(objective: RidgeBallObjective, s, epsilon, sensitivity, n_iter, rng, n_chains=1, *,
               trace=False, record_supports=False, track_distinct=False, on_chunk=None) -> ChainRun:
    """Run ``n_chains`` independent swap chains of ``n_iter`` steps on the sufficient statistics.

    Parameters
    ----------
    objective : RidgeBallObjective
        The objective on the clipped data's sufficient statistics.
    s : int
        Support size (candidate terms; a forced intercept is added by ``objective``).
    epsilon : float
        Finite, > 0.
    sensitivity : float
        Delta of the objective.
    n_iter, n_chains : int
    rng : RandomSource
        Every draw (starts, proposals, acceptances) comes from it.
    trace, record_supports, track_distinct : bool
        Keep the value trace, the support trace, and count distinct supports visited.
    on_chunk : callable, optional
        Called with the number of steps done before each chunk of steps (the call's
        deadline and progress).

    Returns
    -------
    ChainRun
    """
    p = objective.stats.candidates.size
    _check_chain_arguments(p, s, n_iter, n_chains)
    if not (0 < float(epsilon) < math.inf):
        raise InvalidArgumentError(f"epsilon must be finite and > 0 for an MCMC chain; got {epsilon!r}.")
    members, nonmembers = _uniform_starts(p, s, n_chains, rng)
    start = np.sort(members, axis=1)
    scale = float(epsilon) / (2.0 * float(sensitivity))
    if n_chains == 1:
        (members, _), value, n_acc, vt, st, distinct = _run_single_gram(
            objective, members, nonmembers, scale, n_iter, rng, trace, record_supports, track_distinct, on_chunk)
        values = np.array([value])
    else:
        scorer = _GramScorer(objective, members)
        n_acc, vt, st, distinct = _run_kernel(scorer, members, nonmembers, scale, n_iter, rng,
                                              trace, record_supports, track_distinct, on_chunk=on_chunk)
        values = scorer.values.copy()
    return ChainRun(supports=np.sort(members, axis=1), values=values, start_supports=start,
                    n_accepted=n_acc, n_iter=n_iter, value_trace=vt, support_trace=st,
                    n_distinct=None if distinct is None else np.array([len(d) for d in distinct]))


def run_chains_on_table(table_values, p, s, epsilon, sensitivity, n_iter, rng, n_chains=1, *,
                        exact_integers=True) -> ChainRun:
    """The same chains scored from a table of every support's R, in :func:`table_order_supports` order.

    Used for the curator's total-variation diagnostic when C(p, s) is small: it is the same
    Markov chain (same proposal, same acceptance rule and, with ``exact_integers``, the same
    draws from ``rng`` in the same order as :func:`run_chains`), with each step a table
    look-up instead of a solve.
    """
    _check_chain_arguments(p, s, n_iter, n_chains)
    if len(table_values) != math.comb(p, s):
        raise InvalidArgumentError(
            f"table_values must hold C({p}, {s}) = {math.comb(p, s)} values; got {len(table_values)}.")
    members, nonmembers = _uniform_starts(p, s, n_chains, rng)
    start = np.sort(members, axis=1)
    scorer = _TableScorer(table_values, p, s, members, nonmembers)
    scale = float(epsilon) / (2.0 * float(sensitivity))
    n_acc, _, _, _ = _run_kernel(scorer, members, nonmembers, scale, n_iter, rng, False, False, False,
                                 exact_integers=exact_integers)
    return ChainRun(supports=np.sort(members, axis=1), values=scorer.values.copy(), start_supports=start,
                    n_accepted=n_acc, n_iter=n_iter)


def total_variation(counts, probabilities) -> float:
    """0.5 * sum |counts / sum(counts) - probabilities|."""
    counts = np.asarray(counts, dtype=np.float64)
    return 0.5 * float(np.sum(np.abs(counts / counts.sum() - probabilities)))


def final_state_tv(objective, s, epsilon, sensitivity, n_iter, n_chains, rng):
    """Curator diagnostic: TV between the final-state law of ``n_chains`` chains and the exact mechanism.

    Returns (tv_chains, tv_exact_draws, probabilities, table_supports): the second number is
    the TV that ``n_chains`` *exact* draws from the exponential mechanism achieve on the
    same draw count -- the sampling-noise floor the first should be compared with.
    """
    p = objective.stats.candidates.size
    supports = table_order_supports(p, s)
    values = objective.values(objective.full_support(objective.stats.candidates[supports]))
    probs = np.exp(exponential_log_probabilities(values, epsilon, sensitivity))
    chains = run_chains_on_table(values, p, s, epsilon, sensitivity, n_iter, rng, n_chains, exact_integers=False)
    ranks = _SupportRanker(p, s).rank_supports(chains.supports)
    tv_chain = total_variation(np.bincount(ranks, minlength=values.size), probs)
    # The noise floor: the same number of exact draws (inverse CDF on the exact law).
    cumulative = np.cumsum(probs)
    exact_draws = np.minimum(np.searchsorted(cumulative, rng.uniform(n_chains) * cumulative[-1], side="right"),
                             values.size - 1)
    tv_exact = total_variation(np.bincount(exact_draws, minlength=values.size), probs)
    return tv_chain, tv_exact, probs, supports


# --------------------------------------------------------------------------------------
# The method
# --------------------------------------------------------------------------------------

def check_options(options, context):
    """The validated options of ``method="mcmc"`` (see :class:`MCMCMethod`)."""
    return METHOD.validate_options(dict(options), context)


def _curator(task, objective, chain: ChainRun, delta, s, n_iter, tv_chains):
    terms = task.terms
    trace = chain.value_trace[:, 0]
    best_step = int(np.argmin(trace))
    out = {
        "method_detail": (f"one Metropolis-Hastings chain of {n_iter:,} swap steps from a uniformly random support "
                          "(guarantee approximate, depends on mixing)"),
        "acceptance_rate": float(chain.acceptance_rate[0]),
        "accepted_swaps": int(chain.n_accepted[0]),
        "distinct_supports_visited": int(chain.n_distinct[0]),
        "start_support": [terms[j] for j in chain.start_supports[0]],
        "objective_start": float(trace[0]),
        "objective_final": float(trace[-1]),
        "objective_min_visited": float(trace[best_step]),
        "step_first_reaching_min": best_step,
        "objective_mean_last_half": float(np.mean(trace[len(trace) // 2:])),
        "sensitivity": delta,
    }
    out["sigma2_hat_at_min_visited"] = float(trace[best_step]) / max(task.stats.n - s, 1)
    n_supports = int(comb(len(terms), s, exact=True))
    if tv_chains > 0 and n_supports <= TV_MAX_SUPPORTS and len(terms) > s:
        tv, floor, probs, supports = final_state_tv(objective, s, task.epsilon, delta, n_iter, tv_chains, task.rng)
        out["tv_final_state_vs_exponential"] = tv
        out["tv_of_exact_draws_same_count"] = floor
        out["tv_chains"] = tv_chains
        best = int(np.argmax(probs))
        out["exponential_probability_of_mode"] = float(probs[best])
        out["exponential_mode"] = [terms[j] for j in supports[best]]
        out["exponential_probability_of_output"] = float(probs[_SupportRanker(len(terms), s).rank_supports(
            chain.supports)[0]])
    elif tv_chains > 0:
        out["tv_final_state_vs_exponential"] = (f"not computed: C({len(terms)}, {s}) = {n_supports:,} supports "
                                                f"exceeds {TV_MAX_SUPPORTS:,}")
    return out


def run(task) -> MethodOutcome:
    s = task.size
    n_iter = task.options["n_iter"]
    objective = RidgeBallObjective(task.stats, task.ridge, task.radius)
    delta = squared_loss_sensitivity(task.data, task.radius, s)
    progress = Progress("mcmc: running the chain", n_iter, "steps", enabled=task.verbose, start=task.deadline.start)

    def on_chunk(done):
        task.deadline.check("mcmc: running the chain", reached=f"{done:,} of {n_iter:,} steps",
                            advice="a smaller n_iter")
        progress.update(done)

    chain = run_chains(objective, s, task.epsilon, delta, n_iter, task.rng, 1, trace=True, track_distinct=True,
                       on_chunk=on_chunk)
    progress.update(n_iter)
    chosen = chain.supports[0]
    entry = LedgerEntry(
        mechanism="Metropolis-Hastings chain targeting the exponential mechanism over supports (approximate)",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        caveats=(APPROXIMATE_CAVEAT,
                 f"{n_iter} swap steps from a uniformly random start; mixing is assumed, not checked "
                 "(Roy and Tewari 2023)"),
        released={"support": [task.terms[j] for j in chosen]},
        details={"n_iter": n_iter, "sensitivity": delta, "s": s, "start": "uniformly random support",
                 "proposal": "swap a uniform member with a uniform non-member", "ridge": task.ridge,
                 "radius": task.radius, "loss": "least squares", "certified": False},
    )
    curator = _curator(task, objective, chain, delta, s, n_iter, task.options["tv_chains"])
    return MethodOutcome(support=np.sort(chosen), entries=[entry], curator=curator, caveats=[CALL_CAVEAT])


class MCMCMethod(SelectionMethod):
    """Metropolis-Hastings best subset selection (approximate DP, not certified)."""

    name = "mcmc"
    title = "Metropolis-Hastings best subset selection (approximate, Roy and Tewari 2023)"
    size_argument = "s"
    supports_dask = True
    sign_policy = SIGNS_FROM_SELECTION_FIT
    allows_infinite_epsilon = False
    infinite_epsilon_message = (
        "epsilon=inf is not available for method='mcmc': a chain that only accepts improvements is a greedy "
        "local search, not the best subset. Use method='top_r' with epsilon=inf for the exact (non-private) "
        "best subset.")
    options = (
        Integer("n_iter", default=DEFAULT_N_ITER, minimum=1, doc="steps of the chain"),
        Integer("tv_chains", default=DEFAULT_TV_CHAINS, minimum=0,
                doc="chains for the curator's total-variation diagnostic (small p only; 0: none)"),
    ) + INTERCEPT_OPTIONS

    def condition_rows(self, curator, ctx):
        return conditions.mcmc_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        return conditions.best_support_probability(
            curator, p, size, "exact for the chain's target; the chain itself only approximately",
            key="exponential_probability_of_mode")

    run = staticmethod(run)


METHOD = MCMCMethod()
