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
  :data:`DEFAULT_BETA_CAP` (``beta_cap``): post-processing of released values, which keeps the
  next round's sensitivity public and bounded where the noise makes K~_AA nearly singular.
  ``r`` = ``release_share`` (default :data:`DEFAULT_RELEASE_SHARE`; 0 when s = 1).
* Composition.  s eps_t + r epsilon = epsilon; every round's scores depend on earlier rounds
  only through released values (the chosen terms and the noisy taus), so basic composition
  gives pure epsilon-DP for everything released (the ordered selection and the noisy values).

``epsilon = inf``: forward selection in tau space without noise (each round's fit solved
exactly by least squares, no floor and no cap; ties at random).  It is not least squares on
the data: rank statistics trade the fit's scale for precision (benchmarks/README.md, "real
data at everyday budgets").

Cost: round t computes K(x_j, x_{a_{t-1}}) for every term j, one O(n log n) Kendall count per
term (:func:`kendall_numerators`, exact in integers), s passes in all.

References
----------
Dick, Gillenwater and Joseph (2023), Better private linear regression through better private
feature selection (Kendall's statistic in private selection).
Pati, Rezaiifar and Krishnaprasad (1993), Orthogonal matching pursuit.
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
#: Radius of the L1 ball that the released fit is scaled into (finite epsilon; 1 and 2 measured alike).
DEFAULT_BETA_CAP = 1.0
#: Smallest eigenvalue of the released tau matrix of the chosen terms (finite epsilon).
EIGENVALUE_FLOOR = 0.05
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


@dataclass
class ForwardRelease:
    """What one call releases (the order, the noisy taus) and the public values derived from them."""

    order: list = field(default_factory=list)
    noisy: dict = field(default_factory=dict)  # (a, b) with b a term index or "y" -> noisy K
    betas: list = field(default_factory=list)  # the public beta before each round
    sensitivities: list = field(default_factory=list)  # Delta_t of each round
    epsilon_round: float = math.inf
    laplace_scale: float = 0.0


def forward_select(table: TauTable, s, epsilon, rng, release_share=DEFAULT_RELEASE_SHARE,
                   beta_cap=DEFAULT_BETA_CAP, on_round=None) -> ForwardRelease:
    """The mechanism of the module docstring on a :class:`TauTable`; the release."""
    finite = not math.isinf(epsilon)
    share = release_share if s > 1 else 0.0
    m = released_count(s)
    out = ForwardRelease()
    out.epsilon_round = (1.0 - share) * epsilon / s if finite else math.inf
    out.laplace_scale = statistic_sensitivity(table.n_input) * m / (share * epsilon) if finite and m else 0.0
    beta = np.zeros(0)
    for t in range(s):
        if on_round is not None:
            on_round(t)
        chosen = out.order
        delta = round_sensitivity(table.n_input, beta)
        out.betas.append(beta.copy())
        out.sensitivities.append(delta)
        g = np.abs(table.gradient(chosen, beta))
        a = report_noisy_max(g, out.epsilon_round, delta, rng, exclude=chosen or None)
        out.order.append(int(a))
        if t == s - 1:
            break
        # release K(x_a, x_l) for l in A + [a] and K(x_a, y), then refit
        row = table.with_term(a)
        for l in out.order:
            out.noisy[(a, l)] = float(row[l]) + (float(rng.laplace(out.laplace_scale)) if finite else 0.0)
        out.noisy[(a, "y")] = float(table.with_response[a]) + (float(rng.laplace(out.laplace_scale))
                                                               if finite else 0.0)
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
    """Exact log P(the released order | the released taus) on these data: the product of the
    rounds' softmaxes at the released betas (the audits add the Laplace densities)."""
    total, chosen = 0.0, []
    for a, beta, delta in zip(release.order, release.betas, release.sensitivities):
        g = np.abs(table.gradient(chosen, beta))
        total += float(noisy_max_log_probabilities(g, release.epsilon_round, delta, exclude=chosen or None)[a])
        chosen.append(a)
    return total


def curator_summary(terms, table: TauTable, release: ForwardRelease, s, epsilon, options) -> dict:
    """Non-private forward selection (same statistics, no noise), round gaps and noise scales."""
    out = {"private_selection_order": [terms[j] for j in release.order]}
    if light_curator_active():
        return out
    greedy, gaps, beta = [], [], np.zeros(0)
    for t in range(s):
        g = np.abs(table.gradient(greedy, beta))
        g[greedy] = -np.inf
        order = np.argsort(-g, kind="stable")
        gaps.append(float(g[order[0]] - g[order[1]]) if g.size - len(greedy) > 1 else math.inf)
        greedy.append(int(order[0]))
        if t < s - 1:
            K_AA = np.array([[table.with_term(a)[b] for b in greedy] for a in greedy])
            beta = fit_in_tau_space(K_AA, table.with_response[greedy], finite=False)
    out.update({
        "non_private_selection": [terms[j] for j in greedy],
        "round_score_gaps": [f"{g:.4g}" for g in gaps],
        "released_taus_without_noise": {
            f"{terms[a]}, {'y' if b == 'y' else terms[b]}": float(table.with_response[a] if b == "y"
                                                                 else table.with_term(a)[b])
            for (a, b) in release.noisy},
    })
    if not math.isinf(epsilon):
        out["noise_scale_per_round"] = [gumbel_scale(release.epsilon_round, d) for d in release.sensitivities]
        out["laplace_scale"] = release.laplace_scale
        out["probability_of_non_private_set"] = non_private_set_probability(table, greedy, s, epsilon, options)
    return out


def non_private_set_probability(table: TauTable, greedy, s, epsilon, options):
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
    hits = sum(sorted(forward_select(table, s, epsilon, rng, options["release_share"],
                                     options["beta_cap"]).order) == want for _ in range(CURATOR_DRAWS))
    return hits / CURATOR_DRAWS


def run(task) -> MethodOutcome:
    frame = task.data  # unclipped model frame: ranks need no bounds
    s = task.size
    n_input = task.n_input if task.n_input is not None else frame.X.shape[0]
    progress = Progress("kendall_forward: rounds", s, "rounds", enabled=task.verbose, start=task.deadline.start)

    def on_round(t):
        task.deadline.check("kendall_forward: the selection rounds", reached=f"{t} of {s} rounds done",
                            advice="a smaller s or fewer candidate terms")
        progress.update(t)

    table = TauTable(np.asarray(frame.X, dtype=np.float64), np.asarray(frame.y, dtype=np.float64), n_input)
    opts = task.options
    release = forward_select(table, s, task.epsilon, task.rng, opts["release_share"], opts["beta_cap"], on_round)
    progress.update(s)
    terms = task.terms
    released_taus = {f"{terms[a]}, {'y' if b == 'y' else terms[b]}": v for (a, b), v in release.noisy.items()}
    finite = not math.isinf(task.epsilon)
    share = opts["release_share"] if s > 1 else 0.0
    entry = LedgerEntry(
        mechanism="forward selection on Kendall's tau: s rounds of report-noisy-max (Gumbel) on the gradient in "
                  "tau space, Laplace taus of the chosen terms for the fit between rounds",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        released={"support": [terms[j] for j in sorted(release.order)], "taus": released_taus},
        details={"s": s, "epsilon_per_round": release.epsilon_round if finite else math.inf,
                 "epsilon_taus": share * task.epsilon if finite else math.inf,
                 "taus_released": released_count(s),
                 "statistic": "Kendall's tau-a with the input row count N in the denominator, ties 0",
                 "sensitivity": "4 / N per tau; (4 / N)(1 + ||beta||_1) per round, beta public",
                 "composition": "basic over the s rounds and the released taus"},
    )
    curator = curator_summary(terms, table, release, s, task.epsilon, opts)
    curator["non_private_scores"] = {"meaning": "|K(x_j, y)|, round-1 score (non-private)",
                                     "scores": leading_scores(terms, np.abs(table.with_response), release.order,
                                                              max(2 * s, 20))}
    return MethodOutcome(support=np.sort(np.asarray(release.order, dtype=np.int64)), entries=[entry],
                         curator=curator, released={"taus": released_taus})


class KendallForwardMethod(SelectionMethod):
    """Forward selection on Kendall's tau with private partial fits: rank-based, needs no bounds."""

    name = "kendall_forward"
    title = "forward selection on Kendall's tau (gradient in tau space, Laplace partial fits, Gumbel rounds)"
    size_argument = "s"
    auto_size_refusal = ("no criterion for the number of rank-correlated terms is standard, and the forward rounds "
                         "release no score for a size")
    neighbours = REPLACE_ONE
    uses = ()
    sign_policy = SIGNS_FROM_LEAST_SQUARES
    options = (
        Real("release_share", default=DEFAULT_RELEASE_SHARE, low=0.0, high=1.0, low_open=True, high_open=True,
             doc="share of epsilon for the released taus of the chosen terms (the partial fits), in (0, 1)"),
        Real("beta_cap", default=DEFAULT_BETA_CAP, low=0.0, low_open=True,
             doc="radius of the L1 ball the released fit is scaled into (finite epsilon); it enters the next "
                 "rounds' sensitivity (4 / N)(1 + ||beta||_1)"),
    )

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
        if gaps and scales and len(gaps) == len(scales):
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
