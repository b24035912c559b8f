"""``method="bh"``: private Benjamini-Hochberg by peeling, with marginal Kendall tests.

Released: the terms of the formula that a Benjamini-Hochberg (BH) step-up at level ``fdr``
rejects among k candidates peeled privately, their private p-values and the sign of each
released term's association with the response (Dwork, Su and Zhang 2021, in a pure-epsilon
form; the mechanism is :mod:`dpstats.mechanisms.private_bh`).

Hypotheses
----------
For each candidate term j, H0_j: the term is independent of the response (marginal
independence, the null of a genome-wide association scan).  In a linear model
y = X beta + e this is beta_j = 0 when term j is independent of the terms with beta != 0 and
of e; a term with beta_j = 0 that is correlated with a true term is *not* null here (its
marginal association is real) and its rejection is not a false discovery of this test.

Statistic
---------
Kendall's S_j = (concordant - discordant pairs of (x_j, y)) on the rows used, ties broken by a
uniformly random permutation (i.i.d. keys per variable and input row,
:class:`dpstats.screening.kendall_statistic.TieBreak`).  Under H0_j with i.i.d. rows the
tie-broken ranks of x_j and of y are independent uniform permutations, so S_j has exactly the
null law of Kendall's statistic for n_c distinct points (n_c the complete rows used): a sum of
independent V_i uniform on {-(i - 1), -(i - 3), ..., i - 1}, i = 1..n_c.  Each V_i is strictly
sub-Gaussian, E exp(t V_i) = sinh(i t) / (i sinh t) <= exp(t^2 (i^2 - 1) / 6) (because
log(sinh(x)/x) - x^2/6 decreases in |x|: the Langevin function coth x - 1/x is at most x/3), so
S_j is sub-Gaussian with proxy sigma^2(n_c) = n_c (n_c - 1)(2 n_c + 5) / 18, its variance.  The
mechanism uses sigma^2(n_h), n_h the *input* row count of the rows used (public; at least n_c,
so the proxy still holds when rows are omitted): the p-values are valid in finite samples, and
conservative (about the Gaussian tail times t sqrt(2 pi) at t standard deviations).
No bounds are needed: the statistic uses ranks only.

``p_value="normal"`` uses instead the normal approximation N(0, sigma^2(n_h)) of the null law
with a continuity correction of 1 (S moves in steps of 2), convolved with the noise in closed
form: more power, but valid only as far as the approximation is.  Against the exact law the
two-sided tail P(|S| >= s) exceeds 2 Phi-bar((s - 1) / sigma) by at most 12.5 % of it at n = 3,
2.9 % at n = 10, 0.29 % at n = 100 and 0.19 % at n = 150 (computed exactly in the tests; the
excess falls like 1/n), so the FDR statement then holds up to that factor.

Privacy statement
-----------------
Neighbours: replace one record, the input row count n public (a record that becomes
incomplete under ``na_action="omit"`` is a change of one record too).  For every fixed
assignment of tie-break keys, replacing one record changes the n_c - 1 pairs that involve it,
each moving S_j by at most 2, and making it incomplete removes them: |S_j(D) - S_j(D')| <=
2 (n_h - 1) = Delta_h for every j (brute-forced in the tests).  The mechanism's law is the
average over the keys of laws that each satisfy the privacy inequality, so it satisfies it.

* ``split=True`` (default): the input rows are split by a uniformly random permutation drawn
  by the mechanism (independent of the data) into a peel half A of floor(n/2) input rows and a
  test half B of the rest; a record stays in its input position's half.  Peel: k rounds of
  report-noisy-max on |S_j(A)| (Gumbel, epsilon / k each, Delta_A = 2 (n_A - 1)).  Tests: the
  k candidates' S_j(B) plus Laplace noise of scale k Delta_B / epsilon.  A replaced record lies
  in one half, so the two steps compose in parallel: epsilon-DP in all (one ledger entry).
  Each half breaks its ties with keys of its own (two independent draws of the key), so that
  given the peel half and its keys the test half's statistics keep their exact null law.
  BH uses m = k.
* ``split=False``: both steps on all rows, epsilon / 2 each (basic composition, two ledger
  entries); BH uses m = p, the number of candidate terms (terms not peeled count as p = 1).

Why the peel scores |S_j| rather than Dwork, Su and Zhang's truncated log p-values
log max(p_j, nu): a p-value here is a decreasing function of |S_j|, so both rank the terms
alike, but the log p-value's sensitivity is its steepest slope times Delta, reached at the
truncation nu (about t_nu Delta / sigma at t_nu = |S| / sigma standard deviations), so on the
scale of S its noise is t_nu / t times larger for a term at t < t_nu standard deviations; |S_j|
has the same sensitivity Delta at every value, and needs no nu.

The p-values, the BH step and the signs (the sign of each released term's noisy statistic)
are post-processing.  ``epsilon = inf``: the top k by |S_j| (ties at random), exact statistics,
BH on their p-values; with ``split=False`` this is BH over all p terms with at most k
rejections (the same set as BH whenever BH rejects at most k).

False discovery rate
--------------------
FDR = E[V / max(R, 1)] (V false rejections among R), over the data and the mechanism.

* ``split=True``: given half A (and the draws) the candidates are fixed and half B's rows are
  i.i.d. and independent of them; the candidates' p-values are valid, and when every null term
  is independent of the response and of the other terms jointly, the null p-values are
  independent of each other and of the non-null ones, so BH gives FDR <= fdr k0 / k <= fdr
  (k0 null candidates): exact, in finite samples (Benjamini and Hochberg 1995).  Under any
  dependence among the terms, FDR <= fdr (1 + 1/2 + ... + 1/k) (Benjamini and Yekutieli 2001).
* ``split=False``: candidates and tests share the rows; Dwork, Su and Zhang (2021) prove FDR
  control up to a small multiplicative factor for this scheme when the true null statistics are
  independent.  dpstats certifies no finite-sample bound for it (benchmarks/README.md measures
  it).

References
----------
Dwork, Su and Zhang (2021), Differentially private false discovery rate control, Journal of
Privacy and Confidentiality 11(2).  Benjamini and Hochberg (1995); Benjamini and Yekutieli
(2001).  Kendall (1938), A new measure of rank correlation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError
from ..light_curator import light_curator_active
from ..mechanisms.private_bh import P_VALUE_KINDS, bh_rejections, by_factor, p_values, peel_and_test
from ..method_options import Boolean, Choice, Real
from ..methods import MethodOutcome, SelectionMethod, SignPolicy, leading_scores
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..screening.kendall_statistic import KendallPanel, TieBreak

DEFAULT_FDR = 0.1
#: S moves in steps of 2: the normal approximation's continuity correction (p_value="normal").
LATTICE_SHIFT = 1.0


def null_variance(n) -> float:
    """sigma^2(n) = n (n - 1)(2 n + 5) / 18: the variance of Kendall's S on n distinct points under
    independence, and its sub-Gaussian proxy (module docstring)."""
    n = float(n)
    return n * (n - 1.0) * (2.0 * n + 5.0) / 18.0


def statistic_sensitivity(n_rows) -> float:
    """Delta = 2 (n - 1): the most one record moves Kendall's S on rows of input count n."""
    return 2.0 * max(float(n_rows) - 1.0, 0.0)


def kendall_s(X, y, tiebreak) -> np.ndarray:
    """Kendall's S_j = C(n, 2) - 2 D_j of every column against y, ties broken by ``tiebreak``."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    if n < 2:
        return np.zeros(X.shape[1])
    panel = KendallPanel(X, np.asarray(y, dtype=np.float64), tiebreak=tiebreak)
    return n * (n - 1) / 2.0 - 2.0 * panel.discordant_with_response().astype(np.float64)


def half_sizes(n_input) -> tuple:
    """(rows of the peel half, rows of the test half): floor(n/2) and the rest."""
    return n_input // 2, n_input - n_input // 2


def split_labels(n_input, rng) -> np.ndarray:
    """True for the input rows of the peel half: the first floor(n/2) of a uniform permutation."""
    in_peel = np.zeros(n_input, dtype=bool)
    in_peel[rng.permutation(n_input)[:n_input // 2]] = True
    return in_peel


@dataclass
class PrivateBH:
    """What :func:`private_bh_select` released (indices into the columns) and its public parameters."""

    candidates: list
    rejected: list
    p_values: np.ndarray  # of the candidates, in peel order
    noisy: np.ndarray
    details: dict
    curator: dict = field(default_factory=dict)


@dataclass
class BHStatistics:
    """Kendall statistics of every column on the peel rows and on the test rows, with their input
    row counts (public), from :func:`bh_statistics`."""

    peel: np.ndarray
    test: np.ndarray
    rows_peel: int
    rows_test: int
    split: bool


def bh_statistics(X, y, split, rng, rows=None, n_input=None) -> BHStatistics:
    """Draw the split (when ``split``) and the tie-break keys, and compute Kendall's S of every column.

    ``rows``: input-row positions of the rows of X (they fix each row's half and tie-break keys);
    ``n_input``: the public input row count (both default to the rows given).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n_c = X.shape[0]
    rows = np.arange(n_c, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    n_input = n_c if n_input is None else int(n_input)
    if split:
        in_peel = split_labels(n_input, rng)
        # each half breaks its ties with its own keys: given the peel half and its keys, the test half's
        # statistics keep their exact null law
        tie_peel, tie_test = TieBreak.draw(rng), TieBreak.draw(rng)
        mask = in_peel[rows]
        n_peel, n_test = half_sizes(n_input)
        return BHStatistics(peel=kendall_s(X[mask], y[mask], tie_peel.subset(rows[mask])),
                            test=kendall_s(X[~mask], y[~mask], tie_test.subset(rows[~mask])),
                            rows_peel=n_peel, rows_test=n_test, split=True)
    tiebreak = TieBreak.draw(rng)
    both = kendall_s(X, y, tiebreak.subset(rows))
    return BHStatistics(peel=both, test=both, rows_peel=n_input, rows_test=n_input, split=False)


def bh_mechanism(stats: BHStatistics, k, epsilon, fdr, rng, curator=False, p_value="bound") -> PrivateBH:
    """Peel, noisy tests and BH (:func:`dpstats.mechanisms.private_bh.peel_and_test`) on the statistics;
    ``p_value``: "bound" (finite-sample) or "normal" (the normal approximation, continuity-corrected)."""
    k = int(k)
    p = stats.peel.size
    if stats.split:  # disjoint rows: each step spends epsilon (parallel composition); BH over the k candidates
        eps_peel = eps_test = float(epsilon)
        m = k
    else:  # the same rows: epsilon / 2 each (basic composition); BH over all p terms
        eps_peel = eps_test = float(epsilon) / 2.0
        m = p
    delta_peel, delta_test = statistic_sensitivity(stats.rows_peel), statistic_sensitivity(stats.rows_test)
    sigma = math.sqrt(null_variance(stats.rows_test))
    out = peel_and_test(np.abs(stats.peel), delta_peel, stats.test, delta_test, sigma, k, fdr, m, eps_peel,
                        eps_test, rng, p_value=p_value, lattice_shift=LATTICE_SHIFT)
    rejected = [c for c, r in zip(out.candidates, out.rejected) if r]
    details = {
        "k": k, "fdr": float(fdr), "split": bool(stats.split),
        "rows_peel": int(stats.rows_peel), "rows_test": int(stats.rows_test),
        "epsilon_peel": eps_peel, "epsilon_per_round": eps_peel / k, "epsilon_tests": eps_test,
        "sensitivity_peel": delta_peel, "sensitivity_test": delta_test,
        "gumbel_scale": out.gumbel_scale, "laplace_scale": out.laplace_scale,
        "null_sd": sigma, "bh_denominator": int(m),
    }
    result = PrivateBH(candidates=out.candidates, rejected=rejected, p_values=out.p_values, noisy=out.noisy,
                       details=details)
    if curator:
        # The same procedure without noise on the same rows and draws (curator only).
        order = np.argsort(-np.abs(stats.peel), kind="stable")[:k]
        exact_p = p_values(stats.test[order], sigma, 0.0, p_value, LATTICE_SHIFT)
        result.curator = {
            "non_private_candidates": [int(j) for j in order],
            "non_private_rejected": sorted(int(j) for j, r in zip(order, bh_rejections(exact_p, fdr, m)) if r),
            "peel_z": np.abs(stats.peel) / math.sqrt(max(null_variance(stats.rows_peel), 1e-300)),
            "candidate_p_without_noise": p_values(stats.test[out.candidates], sigma, 0.0, p_value, LATTICE_SHIFT),
        }
    return result


def private_bh_select(X, y, k, epsilon, fdr, split, rng, rows=None, n_input=None, curator=False,
                      p_value="bound") -> PrivateBH:
    """The mechanism of ``method="bh"`` on arrays (module docstring): :func:`bh_statistics`, then
    :func:`bh_mechanism`, drawing from ``rng`` in that order."""
    return bh_mechanism(bh_statistics(X, y, split, rng, rows, n_input), k, epsilon, fdr, rng, curator, p_value)


def guarantee_text(fdr, k, p, split, p_value="bound") -> str:
    """What the call controls and under which assumptions (public: from the call's arguments)."""
    null = ("Null hypothesis of each term: independent of the response (marginal independence, Kendall's "
            "test; in a linear model beta_j = 0 only when the term is independent of the terms with "
            "beta != 0).")
    if p_value == "normal":
        how, pvals = ("up to the normal approximation of Kendall's null law (asymptotically exact; checked within "
                      "0.3 % of the exact tail from 100 rows)"), "normal-approximation p-values"
    else:
        how, pvals = "exactly in finite samples", "valid (conservative) p-values"
    if split:
        return (f"False discovery rate at most {fdr:g} among the released terms, {how}, "
                f"when the rows are i.i.d. and every null term is independent of the response and of the other "
                f"terms jointly: BH at level {fdr:g} over the k = {k} candidates peeled on half of the rows, "
                f"with {pvals} from the other half. Under any dependence among the terms "
                f"the bound is {fdr * by_factor(k):.4g} ({fdr:g} x (1 + 1/2 + ... + 1/{k})). " + null)
    return (f"False discovery rate: BH at level {fdr:g} over all {p} terms on the noisy p-values of the k = {k} "
            f"peeled candidates, on the same rows (split=False). No finite-sample bound is certified: Dwork, Su "
            f"and Zhang (2021) prove FDR control up to a small multiplicative factor when the true null "
            f"statistics are independent; split=True gives a stated bound. " + null)


def non_private_curator(terms, candidates, rejected, released, tested, p_values, meaning, scores) -> dict:
    """Curator only: the BH procedure without noise (its candidates and rejections, indices), its overlap
    with the ``released`` indices, the exact p-values of the ``tested`` candidates, and the per-term
    ``scores`` (an array over all terms, with their ``meaning``) that ``fit.plot()`` draws."""
    return {
        "non_private_candidates": [terms[j] for j in candidates],
        "non_private_support": [terms[j] for j in rejected],
        "overlap_released_with_non_private": len(set(rejected) & set(released)),
        "candidate_p_values_without_noise": {terms[j]: float(v) for j, v in zip(tested, p_values)},
        "non_private_scores": {"meaning": meaning,
                               "scores": leading_scores(terms, scores, released, max(2 * len(tested), 20))},
    }


def run(task) -> MethodOutcome:
    frame = task.data  # the unclipped model frame: ranks need no bounds
    k, q, split = task.size, task.options["fdr"], task.options["split"]
    n_input = task.n_input if task.n_input is not None else frame.X.shape[0]
    rows = task.kept_rows if (task.rows_may_drop and task.kept_rows is not None) else None
    task.deadline.check("bh: before the statistics", reached="the design", advice="fewer candidate terms")
    keep_curator = not light_curator_active()
    found = private_bh_select(frame.X, frame.y, k, task.epsilon, q, split, task.rng, rows=rows, n_input=n_input,
                              curator=keep_curator, p_value=task.options["p_value"])
    terms = task.terms
    candidates = [terms[j] for j in found.candidates]
    pvals = {terms[j]: float(v) for j, v in zip(found.candidates, found.p_values)}
    support = sorted(found.rejected)
    signs = np.zeros(len(terms), dtype=np.int64)
    noisy_of = dict(zip(found.candidates, found.noisy))
    for j in support:
        signs[j] = int(np.sign(noisy_of[j]))
    released_signs = {terms[j]: int(signs[j]) for j in support}
    released_support = [terms[j] for j in support]
    details = dict(found.details)
    details.update(statistic="Kendall's S (concordant - discordant pairs), ties broken at random",
                   p_value=("two-sided sub-Gaussian bound on the null law of the noisy statistic (valid, conservative)"
                            if task.options["p_value"] == "bound" else
                            "two-sided normal approximation of the null law (continuity-corrected) with the noise"),
                   signs="the sign of each released term's noisy statistic (post-processing)")
    if split:
        entries = [LedgerEntry(
            mechanism="private Benjamini-Hochberg: Gumbel peel of k candidates on one half of the rows, Laplace "
                      "Kendall statistics of the candidates on the other half, BH step-up",
            epsilon=task.epsilon, neighbours=REPLACE_ONE,
            released={"support": released_support, "candidates": candidates, "p_values": pvals,
                      "signs": released_signs},
            details={**details, "composition": "parallel: the peel reads one half of the input rows and the tests "
                                               "the other (a record is in one half); each spends epsilon"})]
    else:
        half = task.epsilon / 2.0
        peel_details = {key: details[key] for key in ("k", "rows_peel", "epsilon_per_round", "sensitivity_peel",
                                                      "gumbel_scale", "statistic")}
        entries = [
            LedgerEntry(mechanism="private Benjamini-Hochberg, step 1: Gumbel peel of k candidates by |Kendall's S|",
                        epsilon=half, neighbours=REPLACE_ONE, released={"candidates": candidates},
                        details={**peel_details, "composition": "basic over k rounds"}),
            LedgerEntry(mechanism="private Benjamini-Hochberg, step 2: Laplace Kendall statistics of the candidates, "
                                  "BH step-up over all terms",
                        epsilon=half, neighbours=REPLACE_ONE,
                        released={"p_values": pvals, "support": released_support, "signs": released_signs},
                        details={**details, "composition": "basic with step 1 (same rows)"}),
        ]
    curator = {}
    if found.curator:
        c = found.curator
        curator = non_private_curator(terms, c["non_private_candidates"], c["non_private_rejected"], support,
                                      found.candidates, c["candidate_p_without_noise"],
                                      "|Kendall's S| / its null sd on the peel rows (the peel's score)", c["peel_z"])
    return MethodOutcome(support=np.asarray(support, dtype=np.int64), entries=entries, curator=curator,
                         released={"candidates": candidates, "p_values": pvals}, signs=signs)


class PrivateBHMethod(SelectionMethod):
    """Private Benjamini-Hochberg by peeling: a released set with false-discovery-rate control."""

    name = "bh"
    title = "private Benjamini-Hochberg by peeling (Dwork, Su and Zhang 2021), marginal Kendall tests"
    size_argument = "k"
    size_meaning = "the number of candidate terms peeled and tested; the released set has at most k"
    uses = ()
    neighbours = REPLACE_ONE
    sign_policy = SignPolicy(native=True)
    options = (
        Real("fdr", default=DEFAULT_FDR, low=0.0, high=1.0,
             doc="the false discovery rate level q of the Benjamini-Hochberg step-up, in (0, 1)"),
        Choice("p_value", default="bound", choices=P_VALUE_KINDS,
               doc="'bound': a sub-Gaussian bound on Kendall's null law, valid in finite samples (conservative); "
                   "'normal': its normal approximation, continuity-corrected (more power, asymptotic validity)"),
        Boolean("split", default=True,
                doc="peel on half of the rows and test on the other half (exact finite-sample FDR bound); False: "
                    "both on all rows at epsilon / 2 each (Dwork, Su and Zhang's scheme, no certified bound)"),
    )

    def check_design(self, plan, size, options, context):
        rows = int(plan.n_rows_input)
        need = 4 if options["split"] else 2
        if rows < need:  # the input row count is public under replace-one neighbours
            raise InvalidArgumentError(
                f"method 'bh' needs at least {need} input rows{' (two per half)' if options['split'] else ''}; "
                f"the data has {rows}.")

    def condition_rows(self, curator, ctx):
        """Curator only: the privacy condition (bounded statistics, by construction) and the FDR statement's
        assumption, which the data cannot confirm."""
        from .. import conditions as C

        if math.isinf(ctx.epsilon):
            rows = C._infinite_epsilon_rows()
        else:
            rows = [C.row(C.PRIVACY, "bounded statistics: Kendall's S moves by at most 2 (n - 1) when a record is "
                          "replaced or omitted (n the input rows used)", "ranks only: no clipping needed",
                          "sensitivity 2 (n - 1)", C.HOLDS, "dpstats.fdr.bh (brute-forced in the tests)",
                          note="by construction", required=True)]
        rows.append(C.row(C.RECOVERY, "the FDR statement's assumption: i.i.d. rows, each null term independent of the "
                          "response and of the other terms", "an assumption about the population, not measurable "
                          "from these data", "-", C.NOT_CHECKABLE, "Benjamini and Hochberg (1995); Benjamini and "
                          "Yekutieli (2001) under any dependence",
                          note="under any dependence the bound is fdr (1 + 1/2 + ... + 1/k) (split=True)"))
        return rows

    def recovery_probability(self, curator, p, size):
        """Curator only: not computed (the law of the released set sums the peel's orders, the noise and the
        BH step); the Diagnostics give the non-private set and its overlap with the release instead."""
        return None, "the non-private BH set (same halves, no noise)", "", None

    def statistical_guarantee(self, options, p, size) -> str:
        """The FDR statement printed by ``print(fit)`` and ``summary()`` (public inputs only)."""
        return guarantee_text(options["fdr"], size, p, options["split"], options["p_value"])

    run = staticmethod(run)


METHOD = PrivateBHMethod()
