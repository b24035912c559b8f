"""``method="bh_ols"``: private Benjamini-Hochberg on least-squares tests of beta_j = 0 given the other terms.

Why this method
---------------
``method="bh"`` tests marginal independence (Kendall's test of each term against the response).
In a linear model with correlated terms a term with beta_j = 0 that is correlated with a true term
is associated with the response, so ``bh`` rejects it and the share of terms with beta_j = 0 among
the released ones is not controlled (0.22 at rho 0.5 and 0.44 at rho 0.8 for
``plan(method="bh", n=2000, p=30, s=5, r2=0.5, epsilon=2, fdr=0.1)``).  This method tests the
*conditional* hypotheses of least squares instead, at the price of releasing second moments.

Hypotheses
----------
For each candidate term j, H0_j: beta_j = 0 in the least-squares regression of the response on the
k candidates (with the formula's intercept).  When k >= p every term is a candidate and this is
beta_j = 0 in the full linear model.  When k < p the candidates are peeled on half of the rows (as
``bh`` does) and tested on the other half; their H0_j is then the full model's beta_j = 0 when the
peel kept every term with beta != 0 (the screening property of Wasserman and Roeder 2009); a null
term correlated with a true term that the peel missed has a non-zero coefficient in the candidates'
regression and may be rejected.

Mechanism
---------
Terms and response are clipped to their public ranges and mapped to [-1, 1]
(:class:`dpstats.privacy.bounds.TermRanges`; the affine map leaves every t statistic of least
squares unchanged).

1. Peel (only when k < p): the input rows are split by a uniformly random permutation (independent
   of the data) into a peel half A of floor(n / 2) input rows and a test half B of the rest; on
   half A, with all of epsilon, ``peel="forward"`` (the default) runs k rounds of forward selection
   on Kendall's tau (:mod:`dpstats.screening.kendall_forward`, whose privacy statement it inherits,
   with N = n_A), and ``peel="marginal"`` k rounds of report-noisy-max on |Kendall's S_j| (Gumbel,
   epsilon / k each, sensitivity 2 (n_A - 1); :mod:`dpstats.fdr.bh`).  The forward peel is the
   default because the tests need the true terms among the candidates (below): with correlated
   terms the marginal peel takes null terms next to true ones and misses others
   (benchmarks/README.md, "bench_fdr.py --conditional").
2. Release: the upper triangle of the augmented Gram matrix G = sum v v' of the rows
   v = (1, x_C, y) of the test rows (half B, or every row when k >= p), C the candidates, plus
   i.i.d. Laplace noise of scale Delta_1 / epsilon per entry, Delta_1 = m (m + 1) / 2 with
   m = k + 2 (:mod:`dpstats.estimation.adassp`, which brute-forces it; replace one record, and add
   or remove one).  With ``delta > 0``: Gaussian noise of standard deviation Delta_2 / mu instead,
   Delta_2 = m, mu the largest mu-GDP level that is (epsilon, delta)-DP (Dong, Roth and Su 2022):
   noise growing like k rather than k^2.  Unlike the estimator no smallest eigenvalue is released:
   the tests need no ridge.
3. Tests (post-processing): theta_c = A_bar^-1 c~ (A~ and c~ the released design block and Z'y,
   A_bar = A~ with its eigenvalues raised to the noise's standard deviation), and for each
   candidate a parametric bootstrap of |theta_c,j| under theta_j = 0 that re-releases noisy
   statistics from the restricted fit (:func:`ols_tests`): the p-value is the share of draws at
   least as extreme.
4. BH at level ``fdr`` over the k candidates; the sign of each released term is the sign of its
   theta_c (post-processing).

``epsilon = inf``: the top k by |S_j| on half A (ties at random), then least squares on the test
rows with statsmodels' t-test p-values and BH; with k >= p, BH over the OLS p-values of all terms
on all rows (statsmodels' ``OLS`` and ``multipletests(method="fdr_bh")``).

Privacy statement
-----------------
Neighbours: replace one record, the input row count n public.  Step 1 is epsilon-DP on half A
(:mod:`dpstats.screening.kendall_forward` or :mod:`dpstats.fdr.bh`); step 2 is epsilon-DP on the rows it reads (Laplace mechanism with the l1
sensitivity Delta_1 of the Gram matrix's upper triangle); steps 3 and 4 are post-processing.  With
the split a record lies in one half, so the two steps compose in parallel (McSherry 2009): epsilon
in all, one ledger entry.  Without it (k >= p) only step 2 runs, on all rows, with epsilon.  Pure
epsilon (up to the floating-point delta of docs/privacy.md) with the default ``delta=0``; with
``delta > 0`` the Gram step is (epsilon, delta)-DP and so is the whole (the peel is pure).

False discovery rate
--------------------
BH needs valid p-values for the true nulls.  These are valid as far as the parametric bootstrap
is: the sampling error Z'u is drawn as Gaussian (covariance sigma^2 A_bar, sigma^2 from the noisy
statistics) and the privacy noise from its own law, around a null fit of the noisy statistics.
That is asymptotic (large n), and it needs least squares' own assumptions (a linear mean, errors
with constant variance, independent rows).  Measured, the null p-values are at or below their
level (benchmarks/README.md).  The candidates' t statistics are
dependent; BH's control under the dependence of two-sided t tests is not proven (it holds under
positive regression dependence, Benjamini and Yekutieli 2001); under any dependence the bound is
fdr (1 + 1/2 + ... + 1/k).  benchmarks/README.md measures the FDR on correlated designs.

The price: the Gram matrix has (k + 2)(k + 3) / 2 entries and its l1 sensitivity grows like k^2,
so the noise per entry grows like k^2 / epsilon: keep k close to the number of terms you expect to
matter.  ``bh`` (marginal tests) is far cheaper and controls the FDR of *marginal* discoveries.

References
----------
Benjamini and Hochberg (1995); Benjamini and Yekutieli (2001); Dwork, Su and Zhang (2021),
Differentially private false discovery rate control, Journal of Privacy and Confidentiality 11(2);
Wang (2018), Revisiting differentially private linear regression (AdaSSP's sufficient
statistics); Wasserman and Roeder (2009), High-dimensional variable selection, Annals of
Statistics 37(5A) (screen on one half, test on the other).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._lazy import lazy_module
from ..errors import InvalidArgumentError
from ..estimation import adassp, bootstrap, intervals
from ..estimation.gaussian_dp import gdp_mu
from ..light_curator import light_curator_active
from ..mechanisms.gumbel import peel
from ..mechanisms.private_bh import bh_rejections, by_factor
from ..method_options import Choice, Integer, Real
from ..methods import MethodOutcome, SelectionMethod, SignPolicy
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..privacy.randomness import RandomSource
from ..screening.kendall_forward import TauTable, forward_select
from ..screening.kendall_statistic import TieBreak
from .bh import DEFAULT_FDR, half_sizes, kendall_s, non_private_curator, split_labels, statistic_sensitivity

st = lazy_module("scipy.stats")  # imported on first use (dpstats._lazy)

#: Default number of bootstrap draws behind each p-value (the smallest p-value is 1 / (draws + 1)).
DEFAULT_DRAWS = 2000

#: How the candidates are peeled on half A when k < p (module docstring, step 1).
PEELS = ("forward", "marginal")
DEFAULT_PEEL = "forward"


def peel_candidates(XA, yA, rows, n_peel, k, epsilon, rng, how):
    """(candidates in peel order, the peel's non-private order (curator), public details): step 1 on the
    rows of half A (``rows``: their input positions; ``n_peel``: the half's public input row count)."""
    p = XA.shape[1]
    if how == "marginal":
        scores = np.abs(kendall_s(XA, yA, TieBreak.draw(rng).subset(rows)))
        delta = statistic_sensitivity(n_peel)
        chosen = [int(j) for j in peel(scores, p, k, epsilon, delta, rng)]
        exact = [int(j) for j in np.argsort(-scores, kind="stable")[:k]]
        return chosen, exact, {"peel": "marginal: report-noisy-max on |Kendall's S|", "sensitivity_peel": delta,
                               "epsilon_per_round": float(epsilon) / k,
                               "gumbel_scale": 0.0 if math.isinf(epsilon) else 2.0 * k * delta / float(epsilon)}
    table = TauTable(XA, yA, n_peel)
    found = forward_select(table, k, epsilon, rng)
    # curator: the forward selection without noise (ties by a fixed seed, not the call's draws)
    exact = forward_select(table, k, math.inf, RandomSource(0)).order if not math.isinf(epsilon) else list(found.order)
    return [int(j) for j in found.order], [int(j) for j in exact], {
        "peel": "forward selection on Kendall's tau (method kendall_forward's mechanism)",
        "epsilon_per_round": found.budget.select[0], "laplace_scale_taus": found.budget.laplace[0],
        "sensitivity_peel": "(4 / N)(1 + ||beta||_1) per round, N the half's input rows"}


def gram_spec(k, intercept, epsilon, delta=0.0) -> adassp.NoiseSpec:
    """The noise of step 2, all of the budget on the augmented Gram matrix of k candidates: Laplace of scale
    Delta_1 / epsilon (``delta = 0``), or Gaussian of standard deviation Delta_2 / mu, mu the largest
    mu-GDP level that is (epsilon, delta)-DP (Dong, Roth and Su 2022), Delta_2 = m."""
    m = int(k) + 2
    d = int(k) + (1 if intercept else 0)
    if math.isinf(epsilon):
        return adassp.NoiseSpec("none", math.inf, 0.0, m, d, 0.0, 0.0, 0.0, 0.0)
    if delta > 0:
        mu = gdp_mu(epsilon, delta)
        d2 = adassp.gram_sensitivity_l2(m)
        return adassp.NoiseSpec("gaussian", float(epsilon), float(delta), m, d, d2 / mu, 0.0, d2, 0.0, mu)
    d1 = adassp.gram_sensitivity_l1(m)
    return adassp.NoiseSpec("laplace", float(epsilon), 0.0, m, d, d1 / float(epsilon), 0.0, d1, 0.0)


@dataclass
class OLSTests:
    """Post-processing of one Gram release: p-values and centres of the candidates (mapped scale)."""

    p_values: np.ndarray
    centre: np.ndarray
    note: str | None  # epsilon = inf only: why no test (no residual degrees of freedom)


def batched_inverse(A, floor):
    """Inverses of a batch of symmetric matrices with their eigenvalues raised to at least ``floor``."""
    e, Q = np.linalg.eigh(A)
    return np.einsum("...ij,...j,...kj->...ik", Q, 1.0 / np.maximum(e, floor), Q)


def ols_tests(gram, spec: adassp.NoiseSpec, intercept, n_draws, rng) -> OLSTests:
    """Step 3 of the module docstring on a (released) augmented Gram matrix of the candidates.

    Parametric bootstrap under each null.  The statistic of candidate j is |theta_c,j|,
    theta_c = A_bar^-1 c~.  Its null world: theta^(j) the least-squares fit of the noisy
    statistics with theta_j = 0 (theta^(j)_-j = A_bar_-j,-j^-1 c~_-j); draw b releases
    A*_b = A_bar + E*_b and c*_b = A_bar theta^(j) + sigma A_bar^(1/2) z_b + e*_b (E*, e* fresh
    noise of the release's own law, z standard normal, sigma^2 the plug-in residual variance
    of :func:`dpstats.estimation.bootstrap.plug_in`) and the statistic is recomputed from them,
    eigenvalue floor included.  p_j = (1 + #{b : |theta*_b,j| >= |theta_c,j|}) / (B + 1).  The
    draws (E*, e*, z) are shared by the candidates.

    Why not the intervals' pivot (which holds the released A~ fixed and draws the noise E in
    E theta independently of it): the E that produced A~ is not independent of A~, and the
    pivot's null p-values came out too small, 0.015 / 0.065 / 0.228 of them at or below 0.01 / 0.05
    / 0.2 over 19,200 null p-values of 32 simulated cells, against 0.010 / 0.044 / 0.173 for this
    re-run on the same releases, in which each draw has a noisy design of its own as the data had
    (benchmarks/README.md, "bench_fdr.py --calibration").
    """
    k = spec.m - 2
    first = 1 if intercept else 0
    if spec.kind == "none":  # exact least squares: statsmodels' t tests
        found = intervals.ols_intervals(gram, intercept)
        if not found.available:
            return OLSTests(np.ones(k), np.zeros(k), found.reason)
        se = np.sqrt(np.maximum(np.diag(found.cov), 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(se > 0, np.abs(found.centre) / se, np.where(found.centre != 0, np.inf, 0.0))
        return OLSTests(np.minimum(1.0, 2.0 * st.t.sf(t, found.df_resid))[first:], found.centre[first:], None)
    A, c, _, _ = intervals.statistics(gram, intercept)
    d = A.shape[0]
    floor = spec.gram_sd
    e, Q = np.linalg.eigh(A)
    e = np.maximum(e, floor)
    A_bar = (Q * e) @ Q.T
    centre = (Q / e) @ Q.T @ c
    _, _, sigma2 = bootstrap.plug_in(adassp.Release(gram, math.nan, spec, bool(intercept)), centre)
    n_draws = int(n_draws)
    inverse = batched_inverse(A_bar[None] + bootstrap.symmetric_noise(spec, rng, n_draws, d), floor)
    z = np.asarray(rng.gaussian(1.0, (n_draws, d)), dtype=np.float64)
    sampling = math.sqrt(sigma2) * z @ ((Q * np.sqrt(e)) @ Q.T) + spec.draw(rng, spec.gram_scale, (n_draws, d))
    p_values = np.ones(k)
    for j in range(first, d):
        rest = [i for i in range(d) if i != j]
        theta0 = np.zeros(d)
        theta0[rest] = np.linalg.solve(A_bar[np.ix_(rest, rest)], c[rest])
        drawn = np.einsum("bi,bi->b", inverse[:, j, :], (A_bar @ theta0)[None, :] + sampling)
        p_values[j - first] = (1.0 + np.sum(np.abs(drawn) >= abs(centre[j]))) / (n_draws + 1.0)
    return OLSTests(p_values, centre[first:], None)


@dataclass
class PrivateOLSBH:
    """What :func:`private_ols_bh` released (indices into the columns) and its public parameters."""

    candidates: list
    rejected: list
    tests: OLSTests
    gram: np.ndarray
    details: dict
    curator: dict = field(default_factory=dict)


def candidate_tests(X_test, y_test, candidates, epsilon, fdr, intercept, n_draws, rng, delta=0.0):
    """Steps 2-4 on the test rows: (noisy augmented Gram matrix, :class:`OLSTests`, rejected candidates)."""
    k = len(candidates)
    spec = gram_spec(k, intercept, epsilon, delta)
    m = spec.m
    G = adassp.augmented_gram(X_test[:, list(candidates)], y_test)
    noisy = adassp.from_upper(adassp.upper(G) + spec.draw(rng, spec.gram_scale, m * (m + 1) // 2), m)
    tests = ols_tests(noisy, spec, intercept, n_draws, rng)
    mask = bh_rejections(tests.p_values, fdr, k)
    return noisy, tests, sorted(c for c, r in zip(candidates, mask) if r)


def private_ols_bh(X, y, k, epsilon, fdr, intercept, rng, rows=None, n_input=None, n_draws=DEFAULT_DRAWS,
                   curator=False, how=DEFAULT_PEEL, delta=0.0) -> PrivateOLSBH:
    """The mechanism of ``method="bh_ols"`` on mapped arrays (module docstring), drawing from ``rng`` in the
    order: split, tie-break keys, peel, Gram noise, bootstrap draws.  ``rows``: input-row positions of the
    rows of X; ``n_input``: the public input row count (both default to the rows given)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n_c, p = X.shape
    k = min(int(k), p)
    rows = np.arange(n_c, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    n_input = n_c if n_input is None else int(n_input)
    details = {"k": k, "fdr": float(fdr), "draws": int(n_draws)}
    if k < p:  # peel on half A, test on half B (parallel composition)
        in_peel = split_labels(n_input, rng)[rows]
        n_peel, n_test = half_sizes(n_input)
        candidates, exact_candidates, peel_details = peel_candidates(X[in_peel], y[in_peel], rows[in_peel], n_peel, k,
                                                                     epsilon, rng, how)
        test_rows = ~in_peel
        details.update(split=True, rows_peel=int(n_peel), rows_test=int(n_test), **peel_details)
    else:  # every term is a candidate: no peel, every row tests
        candidates = exact_candidates = list(range(p))
        test_rows = np.ones(n_c, dtype=bool)
        details.update(split=False, rows_test=int(n_input))
    noisy, tests, rejected = candidate_tests(X[test_rows], y[test_rows], candidates, epsilon, fdr, intercept,
                                             n_draws, rng, delta)
    spec = gram_spec(k, intercept, epsilon, delta)
    details.update(gram_entries=spec.m * (spec.m + 1) // 2, bh_denominator=k, epsilon_gram=float(epsilon),
                   delta_gram=float(delta) if spec.kind != "none" else 0.0, noise=spec.kind)
    if spec.kind == "gaussian":
        details.update(gram_sensitivity_l2=spec.gram_sensitivity, gaussian_sd=spec.gram_scale, gdp_mu=spec.mu)
    else:
        details.update(gram_sensitivity_l1=spec.gram_sensitivity, laplace_scale=spec.gram_scale)
    found = PrivateOLSBH(candidates=candidates, rejected=rejected, tests=tests, gram=noisy, details=details)
    if curator:  # the same procedure without noise on the same halves (curator only)
        exact = ols_tests(adassp.augmented_gram(X[test_rows][:, exact_candidates], y[test_rows]),
                          gram_spec(k, intercept, math.inf), intercept, n_draws, None)
        found.curator = {
            "non_private_candidates": exact_candidates,
            "non_private_rejected": sorted(c for c, r in zip(exact_candidates, bh_rejections(exact.p_values, fdr, k))
                                           if r),
            "non_private_p_values": exact.p_values,
        }
    return found


def guarantee_text(fdr, k, p) -> str:
    """What the call controls and under which assumptions (public: from the call's arguments)."""
    k = min(int(k), int(p))
    if k >= p:
        null = (f"Null hypothesis of each term: beta_j = 0 in the linear model on all {p} terms (a conditional "
                f"test: a term correlated with a true term is not a discovery unless its own coefficient is not 0).")
        how = f"BH at level {fdr:g} over the {p} terms, least-squares tests on all rows"
    else:
        null = (f"Null hypothesis of each candidate: beta_j = 0 in the least-squares regression of the response on "
                f"the k = {k} candidates peeled on half of the rows; this is the full model's beta_j = 0 when the "
                f"peel kept every term with beta != 0.")
        how = f"BH at level {fdr:g} over the k = {k} candidates, least-squares tests on the other half"
    return (f"False discovery rate about {fdr:g} or less among the released terms, asymptotically: {how}, with "
            f"p-values from a parametric bootstrap of the noisy sufficient statistics under each null (valid for "
            f"large n, a linear mean, errors of constant variance, i.i.d. rows). Under any dependence among the tests the bound is "
            f"{fdr * by_factor(k):.4g} ({fdr:g} x (1 + 1/2 + ... + 1/{k})). " + null)


def selection_delta(epsilon, options) -> float:
    """The delta the call spends: the ``delta`` option at finite epsilon (0: Laplace noise, pure epsilon)."""
    return 0.0 if math.isinf(epsilon) else float(options["delta"])


def run(task) -> MethodOutcome:
    data = task.data  # clipped and mapped to [-1, 1] by the public ranges
    q, n_draws = task.options["fdr"], task.options["draws"]
    n_input = task.n_input if task.n_input is not None else data.X.shape[0]
    rows = task.kept_rows if (task.rows_may_drop and task.kept_rows is not None) else None
    task.deadline.check("bh_ols: before the statistics", reached="the design", advice="fewer candidate terms")
    delta = selection_delta(task.epsilon, task.options)
    found = private_ols_bh(data.X, data.y, task.size, task.epsilon, q, bool(data.intercept), task.rng, rows=rows,
                           n_input=n_input, n_draws=n_draws, curator=not light_curator_active(),
                           how=task.options["peel"], delta=delta)
    terms = task.terms
    candidates = [terms[j] for j in found.candidates]
    pvals = {terms[j]: float(v) for j, v in zip(found.candidates, found.tests.p_values)}
    signs = np.zeros(len(terms), dtype=np.int64)
    centre_of = dict(zip(found.candidates, found.tests.centre))
    for j in found.rejected:
        signs[j] = int(np.sign(centre_of[j]))
    released_support = [terms[j] for j in found.rejected]
    released_signs = {terms[j]: int(signs[j]) for j in found.rejected}
    details = dict(found.details)
    details.update(statistic="least-squares coefficient of each candidate given the others (mapped scale)",
                   p_value="parametric bootstrap of the noisy sufficient statistics under each null (restricted fit)",
                   signs="the sign of each released term's coefficient (post-processing)")
    split = found.details["split"]
    entry = LedgerEntry(
        mechanism=("private Benjamini-Hochberg on least-squares tests: "
                   + ("Gumbel peel of k candidates on one half of the rows, " if split else "")
                   + ("Gaussian" if delta > 0 else "Laplace") + " augmented Gram matrix of the candidates"
                   + (" on the other half" if split else "")
                   + ", bootstrap p-values, BH step-up"),
        epsilon=task.epsilon, delta=delta, neighbours=REPLACE_ONE,
        released={"support": released_support, "candidates": candidates, "p_values": pvals, "signs": released_signs,
                  "gram_upper": adassp.upper(found.gram).tolist(), "test_note": found.tests.note},
        details={**details, "composition": ("parallel: the peel reads one half of the input rows and the Gram "
                                             "matrix the other (a record is in one half); each spends epsilon"
                                             if split else "one Laplace release on all rows")})
    curator = {}
    if found.curator:
        c = found.curator
        strength = np.zeros(len(terms))  # -log10 of the non-private p-value; 0 for terms not peeled
        strength[c["non_private_candidates"]] = -np.log10(np.maximum(c["non_private_p_values"], 1e-300))
        curator = non_private_curator(terms, c["non_private_candidates"], c["non_private_rejected"], found.rejected,
                                      c["non_private_candidates"], c["non_private_p_values"],
                                      "-log10 of the OLS t-test p-value of each non-private candidate on the test "
                                      "rows", strength)
    return MethodOutcome(support=np.asarray(found.rejected, dtype=np.int64), entries=[entry], curator=curator,
                         released={"candidates": candidates, "p_values": pvals, "test_note": found.tests.note},
                         signs=signs)


class PrivateOLSBHMethod(SelectionMethod):
    """Private Benjamini-Hochberg on least-squares tests: FDR control for beta_j = 0 given the other terms."""

    name = "bh_ols"
    title = "private Benjamini-Hochberg on least-squares tests (noisy sufficient statistics, bootstrap p-values)"
    size_argument = "k"
    size_meaning = ("the number of candidate terms tested, peeled privately when fewer than the terms; the released "
                    "set has at most k")
    uses = ("bounds",)
    neighbours = REPLACE_ONE
    sign_policy = SignPolicy(native=True)
    options = (
        Real("fdr", default=DEFAULT_FDR, low=0.0, high=1.0,
             doc="the false discovery rate level q of the Benjamini-Hochberg step-up, in (0, 1)"),
        Choice("peel", default=DEFAULT_PEEL, choices=PEELS,
               doc="how the k candidates are chosen on half of the rows when k < p: 'forward' (forward selection "
                   "on Kendall's tau, as method='kendall_forward'; keeps true terms among correlated ones) or "
                   "'marginal' (the k largest |Kendall's S|, as method='bh'; unsafe under strong correlation: it can "
                   "keep null terms next to true ones and miss others)"),
        Real("delta", default=0.0, low=0.0, high=1.0, low_open=False,
             doc="0 (default): Laplace noise on the Gram matrix, pure epsilon-DP; in (0, 1): Gaussian noise, "
                 "(epsilon, delta)-DP, whose noise grows like k rather than k^2 (much more power for k above a few)"),
        Integer("draws", default=DEFAULT_DRAWS, minimum=100,
                doc="bootstrap draws behind each p-value (the smallest p-value is 1 / (draws + 1))"),
    )

    def selection_cost(self, epsilon, options, context):
        """(epsilon, delta): the Gaussian variant spends the ``delta`` option too."""
        return float(epsilon), selection_delta(epsilon, options)

    def check_design(self, plan, size, options, context):
        rows = int(plan.n_rows_input)
        need = 4 if int(size) < int(plan.p) else 2  # two rows per half when the candidates are peeled
        if rows < need:  # the input row count is public under replace-one neighbours
            raise InvalidArgumentError(f"method 'bh_ols' needs at least {need} input rows; the data has {rows}.")

    def condition_rows(self, curator, ctx):
        """Curator only: the privacy condition (clipped statistics) and the FDR statement's assumptions."""
        from .. import conditions as C

        if math.isinf(ctx.epsilon):
            rows = C._infinite_epsilon_rows()
        else:
            rows = [C.row(C.PRIVACY, "bounded statistics: every row (1, x, y) lies in [-1, 1]^m after clipping to the "
                          "public ranges", "clipped by construction", "l1 sensitivity m (m + 1) / 2 of the Gram "
                          "matrix", C.HOLDS, "dpstats.estimation.adassp (brute-forced in the tests)",
                          note="by construction", required=True)]
        rows.append(C.row(C.RECOVERY, "the FDR statement's assumptions: a linear mean, errors of constant variance, "
                          "i.i.d. rows, large n (the bootstrap's normal sampling error)", "assumptions about the population, "
                          "not measurable from these data", "-", C.NOT_CHECKABLE,
                          "Benjamini and Hochberg (1995); Benjamini and Yekutieli (2001) under any dependence"))
        return rows

    def recovery_probability(self, curator, p, size):
        """Curator only: not computed; the Diagnostics give the non-private set and its overlap instead."""
        return None, "the non-private BH set (same halves, no noise)", "", None

    def statistical_guarantee(self, options, p, size) -> str:
        """The FDR statement printed by ``print(fit)`` and ``summary()`` (public inputs only)."""
        return guarantee_text(options["fdr"], size, p)

    run = staticmethod(run)


METHOD = PrivateOLSBHMethod()
