"""``method="kendall_forward"``: forward selection on Kendall's tau, with private partial fits.

Why this method
---------------
DP-Kendall (Dick, Gillenwater and Joseph 2023) needs no ranges and its statistics are precise at
everyday budgets, but its rule (a term's |tau| with the response minus its mean |tau| with the
terms already chosen) is not least squares: on 23 real data sets its own choice at epsilon = inf
explained 0.86 of the least-squares best support's R^2, so no budget takes it further.
Forward selection (orthogonal matching pursuit; Pati, Rezaiifar and Krishnaprasad 1993) scores a
term by the gradient of least squares at the fit of the terms chosen so far, which accounts for
what those terms already explain.  Here it runs in the space of Kendall's tau: the fit of the
chosen terms is solved from their tau matrix, whose few entries are released with Laplace noise,
and every term's gradient is then a linear combination of its own taus, with a sensitivity that
the released fit makes public.  This combination is dpstats' own (no paper states it); its
pieces are standard (Kendall's statistic, report-noisy-max, Laplace releases, basic composition).

Privacy statement
-----------------
Neighbours: replace one record; the input row count N is public (a record that becomes
incomplete under ``na_action="omit"`` is such a change).  No bounds and no clipping: ranks only.

* Statistic.  For two columns u, v of the rows used,

      K(u, v) = sum over pairs i < j of sign(u_i - u_j) sign(v_i - v_j) / (N (N - 1) / 2),

  Kendall's tau-a with the public denominator; a pair tied in u or in v counts 0 (no
  tie-break, so the statistic and the rule at epsilon = inf do not depend on the random source).
  Replacing a record changes the (at most N - 1) pair terms that involve it by at most 2 each,
  and omitting it removes them (each at most 1 in absolute value), so

      |K(D) - K(D')| <= 2 (N - 1) / (N (N - 1) / 2) = 4 / N            (:func:`statistic_sensitivity`)

  for every pair of columns (brute-forced, and attained, in the tests).
* Rounds t = 1..s.  With A the terms chosen so far and beta (one coefficient per term of A)
  *public* (computed from released values only),

      g_j = K(x_j, y) - sum_{l in A} beta_l K(x_j, x_l),      j not in A,

  the gradient of least squares in tau space at beta.  Each g_j moves by at most
  (4 / N)(1 + ||beta||_1) (:func:`round_sensitivity`).  Round t is report-noisy-max on |g_j|
  with Gumbel noise of scale 2 Delta_t / eps_t (:mod:`dpstats.mechanisms.gumbel`; |g| is not
  monotone), eps_t = (1 - r) epsilon / s.
* Releases.  After round t < s, the values K(x_{a_t}, x_l) for l in A and l = a_t (the
  diagonal included) and K(x_{a_t}, y): t + 1 values, m = (s - 1)(s + 2) / 2 over the call,
  each with Laplace noise of scale (4 / N) m / (r epsilon) (epsilon r / m each).  From them
  beta solves the normal equations in tau space, K~_AA beta = K~_Ay, with K~_AA's eigenvalues
  below :data:`EIGENVALUE_FLOOR` raised to it and beta then scaled into the L1 ball of radius
  ``beta_cap`` (:func:`resolved_beta_cap`): post-processing of released values, which keeps the
  next round's sensitivity public and bounded where the noise makes K~_AA nearly singular.
  ``r`` = ``release_share`` (default :data:`DEFAULT_RELEASE_SHARE`; 0 when s = 1).
* Composition.  s eps_t + r epsilon = epsilon; every round's scores depend on earlier rounds
  only through released values (the chosen terms and the noisy taus), so basic composition
  gives pure epsilon-DP for everything released (the ordered selection and the noisy values).

Sizes that follow the data (``s="auto"``)
-----------------------------------------
Up to s_max rounds (default min(p, 10)); every round from the second adds one candidate, *stop*,
to its report-noisy-max, with the public score (:func:`stop_level`)

    null_sd(N) sqrt(log N + 2 log r)  +  beta_t (log r + log(1 / alpha)),     r = p - t terms left,

null_sd(N) = sqrt(2 (2N + 5) / (9 N (N - 1))) the null standard deviation of tau-a between continuous
columns (Kendall 1938), beta_t = 2 Delta_t / eps_t the round's Gumbel scale, alpha =
:data:`DEFAULT_STOP_ALPHA`.  The first part is the extended BIC's level (Chen and Chen 2008): a null
term's |g| passes it with probability about 2 / sqrt(N) over the r left; the second keeps the r
noisy null scores below the stop with probability about 1 / (1 + alpha) when only null terms are
left.  A round that draws *stop* ends the call; the chosen terms are released with their number.

* Privacy.  The stop's score is a constant of public inputs (N, r, eps_t and Delta_t, which depends on
  the public beta only), so each round is report-noisy-max over p - t + 1 scores of sensitivity at
  most Delta_t, eps_t-DP as before.  Round t's share of epsilon is fixed in advance:
  w_t = ratio^t / sum_u ratio^u (ratio :data:`DEFAULT_ROUND_RATIO`), of which ``release_share`` pays
  for the t + 2 taus released after it (none after the last round) and the rest for its selection.
  Rounds after a stop never run, so the privacy loss of every outcome is at most the sum of the
  shares of the rounds it ran: at most epsilon (basic composition with a data-dependent stopping time
  over a schedule fixed in advance; the bound holds outcome by outcome).
* Cost in epsilon.  The rounds share epsilon over s_max rounds instead of s, and the last true term
  must clear the stop level as well as beat the null terms, so recovering a support needs several
  times the epsilon of ``s`` known (measured in benchmarks/README.md, "kendall_forward with
  s='auto'"); below that the call stops early and its released terms are mostly true ones, the
  failure a size rule should have.  The level is conservative where the best terms are 0/1
  indicators (their tau-a is small), so at epsilon = inf it keeps fewer terms than BIC on such data.

``epsilon = inf``: forward selection in tau space without noise (each round's fit solved
exactly by least squares, no floor and no cap; ties at random); with ``s="auto"`` it stops at the
first round whose best |g| is below the first part of the stop level.  It is not least squares on
the data: rank statistics trade the fit's scale for precision (benchmarks/README.md, "real
data at everyday budgets").

Cost: round t computes K(x_j, x_{a_{t-1}}) for every term j, one O(n log n) Kendall count per
term (:func:`kendall_numerators`, exact in integers), s passes in all.

References
----------
Dick, Gillenwater and Joseph (2023), Better private linear regression through better private
feature selection (Kendall's statistic in private selection).
Pati, Rezaiifar and Krishnaprasad (1993), Orthogonal matching pursuit.
Kendall (1938), A new measure of rank correlation (the null variance of tau).
Chen and Chen (2008), Extended Bayesian information criteria for model selection with large model spaces.
McSherry and Talwar (2007); Durfee and Rogers (2019) (report-noisy-max with Gumbel noise).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..mechanisms.gumbel import gumbel_scale, noisy_max_log_probabilities, report_noisy_max
from ..method_options import Real
from ..methods import SIGNS_FROM_LEAST_SQUARES, MethodOutcome, SelectionMethod, leading_scores
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..privacy.progress import Progress
from ..light_curator import light_curator_active
from .kendall_statistic import count_inversions

#: Share of epsilon for the released taus (measured on 23 real data sets at s = 3, epsilon 2 and 5:
#: 0.1, 0.2 and 0.35 within 0.01 of each other; 0.2 led by a little).
DEFAULT_RELEASE_SHARE = 0.2
#: Radius of the L1 ball that the released fit is scaled into (finite epsilon; 1 and 2 measured alike at s = 3).
DEFAULT_BETA_CAP = 1.0
#: Smallest eigenvalue of the released tau matrix of the chosen terms (finite epsilon).
EIGENVALUE_FLOOR = 0.05
#: s="auto": round t's share of epsilon is proportional to this ratio^t (module docstring, "Sizes that follow the
#: data"; 0.6, 0.7 and 0.8 measured, benchmarks/README.md).
DEFAULT_ROUND_RATIO = 0.7
#: s="auto": the stop level's allowance for the Gumbel noise of the r scores left is beta (log r + log(1 / alpha)).
DEFAULT_STOP_ALPHA = 0.3
#: Curator: draws of the Monte Carlo estimate of P(the non-private set), and the most values its
#: passes over the terms may sort (each term chosen in a draw before the last round costs one pass).
CURATOR_DRAWS = 400
CURATOR_PASS_LIMIT = 1 << 23


def statistic_sensitivity(n_input) -> float:
    """Delta of every K(u, v): 4 / N with N the input row count (module docstring)."""
    return 4.0 / float(n_input)


def round_sensitivity(n_input, beta) -> float:
    """Delta of the round scores g_j at a public beta: (4 / N)(1 + ||beta||_1)."""
    return statistic_sensitivity(n_input) * (1.0 + float(np.abs(np.asarray(beta, dtype=np.float64)).sum()))


def released_count(s) -> int:
    """m: the number of taus released over a call of size s, (s - 1)(s + 2) / 2."""
    return (s - 1) * (s + 2) // 2


def _dense_ranks(values) -> np.ndarray:
    """0-based dense ranks (equal values share a rank)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size, dtype=np.int64)
    ranks[order] = np.concatenate([[0], np.cumsum(values[order][1:] != values[order][:-1])])
    return ranks


def _tied_pairs(ranks) -> int:
    counts = np.bincount(ranks)
    return int((counts * (counts - 1) // 2).sum())


_BLOCK_COLUMNS = 256  # columns per call of the inversion counter (a block holds n x this many positions)


def dense_rank_columns(X) -> np.ndarray:
    """The 0-based dense ranks of every column of X (int32 when n allows: half of X's memory)."""
    X = np.asarray(X, dtype=np.float64)
    dtype = np.int32 if X.shape[0] < 2 ** 31 else np.int64
    out = np.empty(X.shape, dtype=dtype)
    for j in range(X.shape[1]):
        out[:, j] = _dense_ranks(X[:, j])
    return out


def kendall_numerators(X, v, ranks=None) -> np.ndarray:
    """sum_{i<j} sign(x_i - x_j) sign(v_i - v_j) for every column x of X: concordant minus discordant
    pairs, ties 0, exact in integers.

    With P pairs, T_x / T_v the pairs tied in x / v and T_xv those tied in both, the numerator is
    P - T_x - T_v + T_xv - 2 D, D the discordant pairs (the identity behind scipy's tau-b).  D is the
    number of strict inversions of x listed in the order of (v, x): pairs tied in v are listed with x
    increasing and pairs tied in x are not inversions, so ranking the listing with ties broken by
    position gives a permutation with exactly D inversions, which the compiled counter of
    :mod:`dpstats.screening.kendall_statistic` counts (Knight 1966), many columns at once.
    ``ranks``: :func:`dense_rank_columns` of X, when already computed."""
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    out = np.zeros(p, dtype=np.float64)
    if n < 2 or p == 0:
        return out
    pairs = n * (n - 1) // 2
    rv = _dense_ranks(np.asarray(v, dtype=np.float64))
    tied_v = _tied_pairs(rv)
    positions = np.arange(n, dtype=np.intp)
    for lo in range(0, p, _BLOCK_COLUMNS):
        cols = range(lo, min(p, lo + _BLOCK_COLUMNS))
        listing = np.empty((len(cols), n), dtype=np.intp)
        ties = np.empty(len(cols), dtype=np.int64)
        for row, j in enumerate(cols):
            rx = _dense_ranks(X[:, j]) if ranks is None else ranks[:, j].astype(np.int64)
            key = rv * n + rx
            order = np.argsort(key, kind="stable")
            sorted_key = key[order]
            runs = np.diff(np.flatnonzero(np.concatenate([[True], sorted_key[1:] != sorted_key[:-1], [True]])))
            ties[row] = _tied_pairs(rx) - int((runs * (runs - 1) // 2).sum())  # T_x - T_xv
            listing[row, np.argsort(rx[order], kind="stable")] = positions
        discordant = count_inversions(listing)
        out[lo:lo + len(cols)] = pairs - tied_v - ties - 2 * discordant
    return out


def kendall_numerator(u, v) -> float:
    """:func:`kendall_numerators` of one column."""
    return float(kendall_numerators(np.asarray(u, dtype=np.float64)[:, None], v)[0])


def kendall_column(X, v, n_input, ranks=None) -> np.ndarray:
    """K(x_j, v) for every column j of X."""
    return kendall_numerators(X, v, ranks) / (n_input * (n_input - 1) / 2.0)


class TauTable:
    """K(x_j, y) for every term and K(x_j, x_l) for every term j and each chosen l (cached)."""

    def __init__(self, X, y, n_input):
        self.X, self.n_input = X, int(n_input)
        self.ranks = dense_rank_columns(X)
        self.with_response = kendall_column(X, y, self.n_input, self.ranks)
        self._with_term: dict[int, np.ndarray] = {}

    @property
    def d(self) -> int:
        return self.X.shape[1]

    def with_term(self, l) -> np.ndarray:
        if l not in self._with_term:
            self._with_term[l] = kendall_column(self.X, self.X[:, l], self.n_input, self.ranks)
        return self._with_term[l]

    def gradient(self, chosen, beta) -> np.ndarray:
        """g_j = K(x_j, y) - sum_l beta_l K(x_j, x_l) for every term (the chosen ones included)."""
        g = self.with_response.copy()
        for l, b in zip(chosen, beta):
            g -= b * self.with_term(l)
        return g


def auto_beta_cap(s_max) -> float:
    """``s="auto"``'s default ``beta_cap``: sqrt(s_max / 3), at least 1 (:data:`DEFAULT_BETA_CAP` at s_max <= 3).

    Why it grows: the stop compares the next term's |g| with a level, so the fit must leave the terms already
    explained near 0; an L1 norm of 1 shrinks the fit of many terms (the tau-space fit of s terms of similar
    weight has an L1 norm near sqrt(s) times its L2 norm), their gradients stay large and the rounds go past the
    true size (benchmarks/README.md, "kendall_forward with s='auto'")."""
    return max(DEFAULT_BETA_CAP, math.sqrt(int(s_max) / 3.0))


def resolved_beta_cap(beta_cap, s_max=None) -> float:
    """The cap of a call: ``beta_cap`` when given, else :data:`DEFAULT_BETA_CAP` (s given) or
    :func:`auto_beta_cap` (``s="auto"``, ``s_max`` given).  Public inputs only."""
    if beta_cap is not None:
        return float(beta_cap)
    return DEFAULT_BETA_CAP if s_max is None else auto_beta_cap(s_max)


def fit_in_tau_space(K_AA, K_Ay, finite, cap=DEFAULT_BETA_CAP) -> np.ndarray:
    """beta with K_AA beta = K_Ay: exact least squares at epsilon = inf; at finite epsilon the
    eigenvalues raised to :data:`EIGENVALUE_FLOOR` and beta scaled into the L1 ball of radius ``cap``."""
    K_AA = np.atleast_2d(np.asarray(K_AA, dtype=np.float64))
    K_Ay = np.asarray(K_Ay, dtype=np.float64)
    if not finite:
        return np.linalg.lstsq(K_AA, K_Ay, rcond=None)[0]
    sym = (K_AA + K_AA.T) / 2.0
    w, V = np.linalg.eigh(sym)
    beta = (V / np.maximum(w, EIGENVALUE_FLOOR)) @ (V.T @ K_Ay)
    norm = float(np.abs(beta).sum())
    if not np.isfinite(norm):  # pragma: no cover - the floor keeps the solve finite
        return np.zeros_like(K_Ay)
    return beta * (cap / norm) if norm > cap else beta


@dataclass(frozen=True)
class RoundBudget:
    """The public per-round settings of one call: the epsilon of each round's report-noisy-max, the
    Laplace scale of the taus released after it, and whether rounds after the first may stop
    (``s="auto"``, module docstring "Sizes that follow the data").  Public inputs only."""

    select: tuple  # epsilon of round t's report-noisy-max (inf at epsilon = inf)
    laplace: tuple  # Laplace scale of the taus released after round t (0: none, or epsilon = inf)
    stops: bool = False  # rounds t >= 1 offer the stop candidate
    alpha: float = 0.0  # the stop level's noise allowance (stops only)

    @property
    def rounds(self) -> int:
        return len(self.select)


def fixed_budget(s, epsilon, n_input, release_share=DEFAULT_RELEASE_SHARE) -> RoundBudget:
    """s rounds of (1 - r) epsilon / s each; the m = (s - 1)(s + 2) / 2 taus at scale (4 / N) m / (r epsilon)."""
    if math.isinf(epsilon):
        return RoundBudget(select=(math.inf,) * s, laplace=(0.0,) * s)
    share = release_share if s > 1 else 0.0
    m = released_count(s)
    scale = statistic_sensitivity(n_input) * m / (share * epsilon) if m else 0.0
    return RoundBudget(select=((1.0 - share) * epsilon / s,) * s, laplace=(scale,) * (s - 1) + (0.0,))


def round_weights(s_max, ratio=DEFAULT_ROUND_RATIO) -> np.ndarray:
    """Round t's share of epsilon when the size is chosen: ratio^t / sum_u ratio^u, t = 0..s_max - 1."""
    w = float(ratio) ** np.arange(int(s_max), dtype=np.float64)
    return w / w.sum()


def stopping_budget(s_max, epsilon, n_input, release_share=DEFAULT_RELEASE_SHARE, ratio=DEFAULT_ROUND_RATIO,
                    alpha=DEFAULT_STOP_ALPHA) -> RoundBudget:
    """``s="auto"``: round t gets w_t epsilon (:func:`round_weights`); before the last round a share r of it
    pays for the t + 2 taus released after it (scale (4 / N)(t + 2) / (r w_t epsilon)), the rest selects."""
    if math.isinf(epsilon):
        return RoundBudget(select=(math.inf,) * s_max, laplace=(0.0,) * s_max, stops=True, alpha=alpha)
    select, laplace = [], []
    for t, w in enumerate(round_weights(s_max, ratio)):
        e_t = float(w) * epsilon
        if t < s_max - 1:
            select.append((1.0 - release_share) * e_t)
            laplace.append(statistic_sensitivity(n_input) * (t + 2) / (release_share * e_t))
        else:
            select.append(e_t)
            laplace.append(0.0)
    return RoundBudget(select=tuple(select), laplace=tuple(laplace), stops=True, alpha=alpha)


def null_sd(n_input) -> float:
    """The standard deviation of Kendall's tau-a between two independent continuous columns of N rows,
    sqrt(2 (2N + 5) / (9 N (N - 1))) (Kendall 1938); N below 2 is read as 2."""
    n = max(float(n_input), 2.0)
    return math.sqrt(2.0 * (2.0 * n + 5.0) / (9.0 * n * (n - 1.0)))


def stop_level(n_input, remaining, epsilon_t, delta_t, alpha=DEFAULT_STOP_ALPHA) -> float:
    """The stop candidate's score in a round with ``remaining`` terms left (public inputs only):

        null_sd(N) sqrt(log N + 2 log r)  +  beta_t (log r + log(1 / alpha)),   beta_t = 2 Delta_t / eps_t,

    the first part the level a null term's |g| passes with probability about 2 / sqrt(N) over the r
    terms left (extended BIC, Chen and Chen 2008), the second the Gumbel noise of the r scores (0 at
    epsilon = inf)."""
    n, r = max(float(n_input), 2.0), max(int(remaining), 1)
    level = null_sd(n) * math.sqrt(math.log(n) + 2.0 * math.log(r))
    if not math.isinf(epsilon_t):
        level += gumbel_scale(epsilon_t, delta_t) * (math.log(r) + math.log(1.0 / alpha))
    return level


@dataclass
class ForwardRelease:
    """What one call releases (the order, the noisy taus) and the public values derived from them."""

    order: list = field(default_factory=list)
    noisy: dict = field(default_factory=dict)  # (a, b) with b a term index or "y" -> noisy K
    betas: list = field(default_factory=list)  # the public beta before each round
    sensitivities: list = field(default_factory=list)  # Delta_t of each round
    stop_levels: list = field(default_factory=list)  # each round's stop candidate (None: the round cannot stop)
    stopped: bool = False  # the last round drew the stop candidate (s="auto")
    budget: RoundBudget | None = None

    @property
    def rounds(self) -> int:
        """Rounds run: one per chosen term, and the round that stopped."""
        return len(self.betas)


def forward_select(table: TauTable, s, epsilon, rng, release_share=DEFAULT_RELEASE_SHARE,
                   beta_cap=DEFAULT_BETA_CAP, on_round=None, budget: RoundBudget | None = None) -> ForwardRelease:
    """The mechanism of the module docstring on a :class:`TauTable`; the release.  ``budget``: the rounds'
    settings (default :func:`fixed_budget` of s; :func:`stopping_budget` for ``s="auto"``, s then s_max)."""
    finite = not math.isinf(epsilon)
    budget = fixed_budget(s, epsilon, table.n_input, release_share) if budget is None else budget
    out = ForwardRelease(budget=budget)
    beta = np.zeros(0)
    d = table.d
    for t in range(budget.rounds):
        if on_round is not None:
            on_round(t)
        chosen = out.order
        delta = round_sensitivity(table.n_input, beta)
        out.betas.append(beta.copy())
        out.sensitivities.append(delta)
        scores = np.abs(table.gradient(chosen, beta))
        level = (stop_level(table.n_input, d - t, budget.select[t], delta, budget.alpha)
                 if budget.stops and t > 0 else None)
        out.stop_levels.append(level)
        if level is not None:
            scores = np.append(scores, level)  # index d: stop (a constant score, sensitivity 0)
        a = report_noisy_max(scores, budget.select[t], delta, rng, exclude=chosen or None)
        if a == d:
            out.stopped = True
            break
        out.order.append(int(a))
        if t == budget.rounds - 1:
            break
        # release K(x_a, x_l) for l in A + [a] and K(x_a, y), then refit
        row = table.with_term(a)
        b = budget.laplace[t]
        for l in out.order:
            out.noisy[(a, l)] = float(row[l]) + (float(rng.laplace(b)) if finite else 0.0)
        out.noisy[(a, "y")] = float(table.with_response[a]) + (float(rng.laplace(b)) if finite else 0.0)
        beta = fit_in_tau_space(released_matrix(out), [out.noisy[(l, "y")] for l in out.order], finite, beta_cap)
    return out


def released_matrix(release: ForwardRelease) -> np.ndarray:
    """The released (noisy) K of the chosen terms, symmetric, in the order chosen."""
    A = release.order
    M = np.empty((len(A), len(A)))
    for i, a in enumerate(A):
        for j, b in enumerate(A):
            key = (a, b) if (a, b) in release.noisy else (b, a)
            M[i, j] = release.noisy[key]
    return M


def order_log_probability(table: TauTable, release: ForwardRelease) -> float:
    """Exact log P(the released order, and the stop when there is one | the released taus) on these data:
    the product of the rounds' softmaxes at the released betas, the stop candidate included where a round
    offers it (the audits add the Laplace densities)."""
    total, chosen, d = 0.0, [], table.d
    events = list(release.order) + ([d] if release.stopped else [])
    for t, (a, beta, delta) in enumerate(zip(events, release.betas, release.sensitivities)):
        scores = np.abs(table.gradient(chosen, beta))
        if release.stop_levels and release.stop_levels[t] is not None:
            scores = np.append(scores, release.stop_levels[t])
        total += float(noisy_max_log_probabilities(scores, release.budget.select[t], delta,
                                                   exclude=chosen or None)[a])
        chosen.append(a)
    return total


def non_private_path(table: TauTable, budget: RoundBudget, beta_cap=DEFAULT_BETA_CAP):
    """Curator only: the rounds without noise (``budget`` at epsilon = inf, ties at the first index): the order,
    each round's gap between its best and second candidate (the stop level a candidate
    where the round offers it) and the sensitivity each round would have at its fit scaled into the L1 ball."""
    order, gaps, deltas, beta, d = [], [], [], np.zeros(0), table.d
    for t in range(budget.rounds):
        scores = np.abs(table.gradient(order, beta))
        scores[order] = -np.inf
        if budget.stops and t > 0:
            scores = np.append(scores, stop_level(table.n_input, d - t, math.inf, 0.0, budget.alpha))
        ranked = np.argsort(-scores, kind="stable")
        live = int(np.isfinite(scores).sum())
        gaps.append(float(scores[ranked[0]] - scores[ranked[1]]) if live > 1 else math.inf)
        norm = float(np.abs(beta).sum())
        deltas.append(round_sensitivity(table.n_input, beta * (beta_cap / norm) if norm > beta_cap else beta))
        if ranked[0] == d:  # the stop
            break
        order.append(int(ranked[0]))
        if t < budget.rounds - 1:
            K_AA = np.array([[table.with_term(a)[b] for b in order] for a in order])
            beta = fit_in_tau_space(K_AA, table.with_response[order], finite=False)
    return order, gaps, deltas


def curator_summary(terms, table: TauTable, release: ForwardRelease, epsilon, options, budget_at, cap) -> dict:
    """Non-private forward selection (same statistics, no noise; with its stop rule under ``s="auto"``), round
    gaps and noise scales.  ``budget_at(epsilon)``: the call's :class:`RoundBudget` at an epsilon; ``cap``: its
    resolved ``beta_cap``."""
    out = {"private_selection_order": [terms[j] for j in release.order]}
    if light_curator_active():
        return out
    budget = release.budget
    greedy, gaps, deltas = non_private_path(table, budget_at(math.inf), cap)
    out.update({
        "non_private_selection": [terms[j] for j in greedy],
        "round_score_gaps": [f"{g:.4g}" for g in gaps],
        "released_taus_without_noise": {
            f"{terms[a]}, {'y' if b == 'y' else terms[b]}": float(table.with_response[a] if b == "y"
                                                                 else table.with_term(a)[b])
            for (a, b) in release.noisy},
    })
    if budget.stops:
        out["non_private_size"] = len(greedy)
        out["stop_levels_of_the_rounds"] = [None if v is None else f"{v:.4g}" for v in release.stop_levels]
    if not math.isinf(epsilon):
        out["noise_scale_per_round"] = [gumbel_scale(e, d) for e, d in zip(budget.select, deltas)]
        out["laplace_scale"] = budget.laplace[0] if not budget.stops else list(budget.laplace[:-1])
        out["probability_of_non_private_set"] = non_private_set_probability(table, greedy, epsilon, options,
                                                                            budget, cap)
    return out


def non_private_set_probability(table: TauTable, greedy, epsilon, options, budget: RoundBudget, cap):
    """Curator only: P(the released set = the non-private one), Monte Carlo over :data:`CURATOR_DRAWS`
    runs of the mechanism on these statistics (a fixed seed of its own, not the call's source).  The
    draws may choose any term before the last round, so they are run only when a pass over the terms
    for every term sorts at most :data:`CURATOR_PASS_LIMIT` values (else a note says so)."""
    from ..privacy.randomness import RandomSource

    if table.d ** 2 * table.X.shape[0] > CURATOR_PASS_LIMIT:
        return ("not computed: a pass over the terms for every term would sort more than "
                "dpstats.screening.kendall_forward.CURATOR_PASS_LIMIT values")
    rng = RandomSource(20261202)
    want = sorted(greedy)
    hits = sum(sorted(forward_select(table, budget.rounds, epsilon, rng, options["release_share"], cap,
                                     budget=budget).order) == want for _ in range(CURATOR_DRAWS))
    return hits / CURATOR_DRAWS


def run(task, s_max=None) -> MethodOutcome:
    """The method's call: s = ``task.size`` rounds, or with ``s_max`` (``s="auto"``) up to s_max rounds that may
    stop from the second on."""
    frame = task.data  # unclipped model frame: ranks need no bounds
    auto = s_max is not None
    s = s_max if auto else task.size
    n_input = task.n_input if task.n_input is not None else frame.X.shape[0]
    progress = Progress("kendall_forward: rounds", s, "rounds", enabled=task.verbose, start=task.deadline.start)

    def on_round(t):
        task.deadline.check("kendall_forward: the selection rounds", reached=f"{t} of {s} rounds done",
                            advice="a smaller s or fewer candidate terms" if not auto else
                            "a smaller s_max or fewer candidate terms")
        progress.update(t)

    table = TauTable(np.asarray(frame.X, dtype=np.float64), np.asarray(frame.y, dtype=np.float64), n_input)
    opts = task.options

    def budget_at(eps):
        if auto:
            return stopping_budget(s, eps, n_input, opts["release_share"])
        return fixed_budget(s, eps, n_input, opts["release_share"])

    budget = budget_at(task.epsilon)
    cap = resolved_beta_cap(opts["beta_cap"], s if auto else None)
    release = forward_select(table, s, task.epsilon, task.rng, opts["release_share"], cap, on_round, budget=budget)
    progress.update(s)
    terms = task.terms
    released_taus = {f"{terms[a]}, {'y' if b == 'y' else terms[b]}": v for (a, b), v in release.noisy.items()}
    finite = not math.isinf(task.epsilon)
    support = [terms[j] for j in sorted(release.order)]
    common = {"statistic": "Kendall's tau-a with the input row count N in the denominator, ties 0",
              "sensitivity": "4 / N per tau; (4 / N)(1 + ||beta||_1) per round, beta public"}
    if auto:
        entry = LedgerEntry(
            mechanism="forward selection on Kendall's tau with a stop: up to s_max rounds of report-noisy-max "
                      "(Gumbel) on the gradient in tau space, each round from the second offering a stop at a "
                      "public level; Laplace taus of the chosen terms for the fit between rounds",
            epsilon=task.epsilon,
            neighbours=REPLACE_ONE,
            released={"support": support, "s_selected": len(release.order), "taus": released_taus},
            details={"s_max": s, "rounds_run": release.rounds,
                     "epsilon_of_the_rounds": [float(e) for e in budget.select] if finite else math.inf,
                     "laplace_scale_of_the_taus_after_each_round": list(budget.laplace[:-1]) if finite else 0.0,
                     "round_ratio": DEFAULT_ROUND_RATIO, "release_share": opts["release_share"], "beta_cap": cap,
                     "stop_level": "null_sd(N) sqrt(log N + 2 log r) + (2 Delta_t / eps_t)(log r + log(1 / "
                                   f"{budget.alpha:g})), r the terms left (public)",
                     **common,
                     "composition": "basic over the rounds: round t spends its share of epsilon only if it runs, "
                                    "so the total is at most epsilon"},
        )
    else:
        share = opts["release_share"] if s > 1 else 0.0
        entry = LedgerEntry(
            mechanism="forward selection on Kendall's tau: s rounds of report-noisy-max (Gumbel) on the gradient in "
                      "tau space, Laplace taus of the chosen terms for the fit between rounds",
            epsilon=task.epsilon,
            neighbours=REPLACE_ONE,
            released={"support": support, "taus": released_taus},
            details={"s": s, "epsilon_per_round": budget.select[0] if finite else math.inf,
                     "epsilon_taus": share * task.epsilon if finite else math.inf,
                     "taus_released": released_count(s), **common,
                     "composition": "basic over the s rounds and the released taus"},
        )
    curator = curator_summary(terms, table, release, task.epsilon, opts, budget_at, cap)
    curator["non_private_scores"] = {"meaning": "|K(x_j, y)|, round-1 score (non-private)",
                                     "scores": leading_scores(terms, np.abs(table.with_response), release.order,
                                                              max(2 * s, 20))}
    released = {"taus": released_taus}
    if auto:
        released["s_selected"] = len(release.order)
    return MethodOutcome(support=np.sort(np.asarray(release.order, dtype=np.int64)), entries=[entry],
                         curator=curator, released=released)


@dataclass
class StoppingSize:
    """``s="auto"`` for ``kendall_forward``: up to ``s_max`` forward rounds, each from the second offering a stop
    (module docstring, "Sizes that follow the data").  The same protocol as
    :class:`dpstats.bss.model_size.AutoSize` (public values only)."""

    method: object
    s_max: int | None = None
    p: int | None = None
    options: dict = field(default_factory=dict)

    @classmethod
    def check(cls, meth, s_max, given):
        """Before the charge: s_max a positive integer; the best-subset size options do not apply."""
        from ..errors import InvalidArgumentError
        from ..method_options import Integer

        if given:
            raise InvalidArgumentError(
                f"s='auto' for method {meth.name!r} stops its forward rounds at a public level (see "
                f"dpstats.screening.kendall_forward); the size options {sorted(given)} apply to the best-subset "
                "methods only. Leave them out, or give s_max= alone.")
        if s_max is not None:
            s_max = Integer("s_max", minimum=1).check(s_max)
        return cls(method=meth, s_max=s_max)

    def resolve(self, p, options, n_rows=None):
        from ..bss.model_size import DEFAULT_S_MAX
        from ..errors import InvalidArgumentError

        if self.s_max is None:
            self.s_max = min(p, DEFAULT_S_MAX)
        if self.s_max > p:
            raise InvalidArgumentError(f"s_max={self.s_max} exceeds the number of candidate terms ({p}).")
        self.p, self.options = p, options
        return self.s_max

    def check_size(self, meth, options):
        pass

    def run(self, meth, task) -> MethodOutcome:
        return run(task, s_max=self.s_max)

    def condition_rows(self, curator, epsilon):
        from ..conditions import condition_rows as method_condition_rows

        return method_condition_rows(self.method, curator, p=self.p, size=self.s_max, epsilon=epsilon,
                                     options=self.options)

    def given_options(self):
        return {}

    def public_items(self):
        return {"s_max": self.s_max, "short_rule": "forward rounds that stop at a public level",
                "round_ratio": DEFAULT_ROUND_RATIO, "stop_alpha": DEFAULT_STOP_ALPHA}


class KendallForwardMethod(SelectionMethod):
    """Forward selection on Kendall's tau with private partial fits: rank-based, needs no bounds."""

    name = "kendall_forward"
    title = "forward selection on Kendall's tau (gradient in tau space, Laplace partial fits, Gumbel rounds)"
    size_argument = "s"
    auto_size_kind = "own"
    neighbours = REPLACE_ONE
    uses = ()
    sign_policy = SIGNS_FROM_LEAST_SQUARES
    options = (
        Real("release_share", default=DEFAULT_RELEASE_SHARE, low=0.0, high=1.0, low_open=True, high_open=True,
             doc="share of epsilon for the released taus of the chosen terms (the partial fits), in (0, 1)"),
        Real("beta_cap", default=None, low=0.0, low_open=True, allow_none=True,
             doc="radius of the L1 ball the released fit is scaled into (finite epsilon); it enters the next "
                 "rounds' sensitivity (4 / N)(1 + ||beta||_1) (default: 1 with s given, sqrt(s_max / 3) and at "
                 "least 1 with s='auto')"),
    )

    def auto_size_settings(self, s_max, given):
        """``s="auto"``: :class:`StoppingSize` (checked before the charge)."""
        return StoppingSize.check(self, s_max, given)

    def condition_rows(self, curator, ctx):
        from .. import conditions as C

        if math.isinf(ctx.epsilon):
            return C._infinite_epsilon_rows()
        rows = [C.row(C.PRIVACY, "bounded statistics: each Kendall tau moves by at most 4 / N when a record is "
                      "replaced or omitted (N the input rows)", "ranks only: no clipping needed",
                      "sensitivity 4 / N; rounds (4 / N)(1 + ||beta||_1)", C.HOLDS,
                      "dpstats.screening.kendall_forward (brute-forced in the tests)", note="by construction",
                      required=True)]
        gaps = [float(g) for g in curator.get("round_score_gaps", ())]
        scales = [float(b) for b in curator.get("noise_scale_per_round", ())]
        if gaps and scales and len(gaps) <= len(scales):  # s="auto": the rounds run
            ratio = min(g / b for g, b in zip(gaps, scales))
            need = math.log(max(ctx.p - 1, 2))
            rows.append(C.row(C.RECOVERY, "each round's best gradient leads the second by enough Gumbel noise scales",
                              f"smallest round gap = {ratio:.3g} noise scales", f">= log(p - 1) = {need:.3g}",
                              C.HOLDS if ratio >= need else C.FAILS,
                              "report-noisy-max (McSherry and Talwar 2007)",
                              note="the gaps of the non-private rounds; the private rounds use noisy fits"))
        return rows

    def recovery_probability(self, curator, p, size):
        """Curator only: P(the non-private set), Monte Carlo (the rounds' fits depend on the Laplace taus, so
        the law of the order has no closed form)."""
        value = curator.get("probability_of_non_private_set")
        return (value if isinstance(value, float) else None, "the non-private forward selection (as a set)",
                f"Monte Carlo, {CURATOR_DRAWS} draws", 1.0 / math.comb(p, size) if size <= p else None)

    run = staticmethod(run)


METHOD = KendallForwardMethod()
