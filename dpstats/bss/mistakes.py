"""``method="mistakes"``: the mistakes mechanism with a propose-test-release guard.

Privacy statement
-----------------
S^(0) = S_1 (the certified best support); S^(i) = argmin {R(S): |S \\ S^(0)| = i} for
i = 1..min(s, p - s).  Block P_i (supports with exactly i mistakes) has
m_i = C(s, i) C(p - s, i) members, every one scored R(S^(i)).  Draw block i with
log-weight log m_i - eps R(S^(i)) / (2 Delta) and return a *uniform element* of P_i.

Prastakos, Behdin and Mazumder (2025), Theorem 2 (reconstructed from its proof in their
Appendix A.4): when the gap g = R(S_2) - R(S_1)
exceeds 2 Delta every neighbour has the same S^(0), the blocks coincide and each block
score moves by at most Delta, so the mechanism is eps-DP for that pair.  The guarantee is
*conditional* on the gap.

Exact epsilon: the epsilon the method is given is what it spends.  On the engine path
(the exact path's cost rule, :mod:`dpstats.bss.exact_cost`, says no; or C(p, s) >
``max_enumerate``, a count the user gives) and with the hinge loss the blocks are certified within
the solver slack tau = tolerance * Delta, which makes a mechanism sampled with eps_nom
eps_nom (1 + 2 tolerance)-DP (:mod:`dpstats.bss.engine`, "Solver slack and epsilon"): it
samples with eps_nom = eps / (1 + 2 tolerance) (rounded down,
:func:`dpstats.bss.exhaustive.slack_split`) and the ledger entry shows eps as eps_nom plus
the slack part.  On the exact path with the squared loss (chosen from n, p, s
and the options only, public) every value is exact: tau = 0 and eps_nom = eps.

* ``guard="ptr"`` (default): propose-test-release (:mod:`dpstats.mechanisms.ptr`).  The
  certified gap g_c (a certified lower bound of R(S_2) minus the value of S^(0), from the
  certified top-2 list, :func:`certified_gap`) lies in [g - tau, g], so it moves by at most 2 Delta + tau per
  neighbour step, and d(D) = max(0, (g_c - 2 Delta - 2 tau) / (2 Delta + tau)) is a
  1-Lipschitz lower bound on the distance to the unsafe set {g <= 2 Delta + 2 tau}.  With
  eps_t = ptr_share * eps (default 0.2) and eps_m = eps - eps_t: if
  d + Laplace(1/eps_t) > ln(1/(2 delta)) / eps_t run mistakes with the budget eps_m,
  otherwise the (always private) top-R mechanism with the budget eps_m
  (:mod:`dpstats.bss.top_r`); each spends exactly eps_m, its slack included, so the
  charge is the same on both branches.  Total (eps_t + eps_m, delta) = (eps, delta)-DP;
  delta (option ``delta``) defaults to 1e-6 (public, fixed before the data; a fixed
  constant rather than 1/n^2 because the cost must be known before n is read).  The
  branch is released and recorded.  With tau = 0 (exact path) the distance is
  max(0, (g - 2 Delta) / (2 Delta)).  The test runs before the blocks are certified: when
  it sends the call to top-R, the blocks (the expensive part when the signal is weak) are
  never needed.
* ``guard="none"``: the paper's conditional guarantee.  The mechanism's ledger entry carries
  :data:`GAP_CONDITION` in ``conditional``, so the ledger total, ``print(fit)``,
  ``fit.summary()`` and ``fit.release()`` show the total as conditional, and
  :func:`charge_condition` gives the same text to the accountant's charge.

Hinge loss (``loss="hinge"``): R is the hinge objective with Delta_h = 2 (1 + b_x r sqrt(s))
with an intercept, 1 + b_x r sqrt(s) without (see :mod:`dpstats.bss.hinge`); values are certified upper bounds within tau_eval, and
every block lower bound used by the guard is lowered by tau_eval (tau / 2 on the exact
path), so g_c stays in [g - tau, g] and the guard's Lipschitz argument is unchanged.

Capped block scores (this package's formulation; exact audits in tests/test_mistakes_cap.py).
Block i is scored

    c_i = min(R(S^(i)), R(S^(0)) + K),    K = block_cap(...) (public),

instead of R(S^(i)).  Privacy: under the gap condition every neighbour has the same S^(0)
and the same blocks, and each of R(S^(i)) and R(S^(0)) moves by at most Delta, so their
minimum (K is a constant) moves by at most Delta: the proof of Theorem 2 goes through
unchanged with c_i in place of R(S^(i)).  Certificates: a block with c_i < R(S^(0)) + K
is minimised within tau as before; for a block at the cap a certified *lower bound*
L_i >= R(S^(0)) + K - tau is all the score needs (the capped score is then within tau of
c_i), which is what makes blocks with many mistakes cheap: the exact block search prunes
everything it can bound above the cap, and the MILP stops as soon as its bound reaches
it.  Utility: raising the weight of every capped block to that of the cap moves at most
C(p, s) exp(-eps_nom K / (2 Delta)) of probability (relative to block 0's weight), so

    K_tv = 2 Delta (log C(p, s) + log(1 / cap_tv)) / eps_nom

keeps the total variation distance to the uncapped mechanism below ``cap_tv`` (option,
default 1e-9; 0 switches the cap off).  The PTR guard's gap does not use the blocks (it
comes from the certified top-2 list), so the cap does not touch it.  When the guard passes,
g > 2 Delta (1 + ln(1 / (2 delta)) / eps_t) roughly, and blocks with two or more mistakes
usually lie beyond the cap: they cost one pruned search each.

Deviation from the authors' reference code: its ``_draw_topk_and_mistakes`` returns S^(i)
itself when block i is drawn.  That output depends on the data through S^(i) and is not
the exponential mechanism Theorem 2 analyses; we return a uniform element of P_i (every
S in P_i is scored R(S^(i))), as the paper defines it.

References
----------
Prastakos, Behdin and Mazumder (2025), Differentially private high-dimensional variable
selection via integer programming, section 2.1.2, Theorem 2 and Appendix A.4; Dwork and
Lei (2009), Differential privacy and robust statistics (propose-test-release).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import comb, gammaln, logsumexp

from ..mechanisms.ptr import propose_test_release, ptr_pass_probability, ptr_threshold
from ..light_curator import light_curator_active
from ..method_options import Choice, Real
from .. import conditions
from ..methods import MethodOutcome, get_method, listed_probability
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from .certified import (CERTIFIED_OPTIONS, CertifiedMethod, exact_scores, loss_items, make_engine,
                        sensitivity_of, task_rows, task_uses_exact_path, uses_exact_path)
from .certified_plan import CertifiedPlanModel
from .engine import OuterApproximationEngine
from .enumeration import log_n_supports, slack_parts
from .losses import HINGE, loss_of

DEFAULT_GUARD = "ptr"
DEFAULT_DELTA = 1e-6
DEFAULT_PTR_SHARE = 0.2
#: Default total-variation allowance of the capped block scores (module docstring).
DEFAULT_CAP_TV = 1e-9
#: The condition of Theorem 2 that ``guard="none"`` relies on without testing it privately.
GAP_CONDITION = ("eps-DP only if the gap R(S_2) - R(S_1) exceeds 2 Delta (Prastakos, Behdin and Mazumder 2025, "
                 "Theorem 2); not privately verified")


def charge_condition(options):
    """The condition a call's guarantee needs, known from its (validated) options before data access.

    :data:`GAP_CONDITION` for ``guard="none"``, None for the default ``guard="ptr"``
    (unconditional (eps, delta)-DP).
    """
    return GAP_CONDITION if options["guard"] == "none" else None


def ptr_distance(gap_certified, sensitivity, tau) -> float:
    """The PTR distance d(D) = max(0, (g_c - 2 Delta - 2 tau) / (2 Delta + tau)).

    The true gap g moves by at most 2 Delta per neighbour (each R(S) by at most Delta) and
    the certified g_c lies in [g - tau, g], so g_c moves by at most 2 Delta + tau and d is
    1-Lipschitz; d = 0 wherever g_c <= 2 Delta + 2 tau, which covers every unsafe data set
    (g <= 2 Delta), so d lower-bounds the distance to the unsafe set.
    """
    return max(0.0, (gap_certified - 2 * sensitivity - 2 * tau) / (2 * sensitivity + tau))


def check_options(options, context):
    """The validated options of ``method="mistakes"`` (see :class:`MistakesMethod`)."""
    return METHOD.validate_options(dict(options), context)


def split_budget(epsilon, options):
    """(eps_t, eps_m) of the PTR guard: eps_t + eps_m = epsilon (both inf at epsilon = inf, not inf - inf)."""
    if math.isinf(epsilon):
        return math.inf, math.inf
    eps_t = options["ptr_share"] * epsilon
    return eps_t, epsilon - eps_t


def uses_slack(p, s, options, n=None):
    """Whether the blocks carry solver slack: the hinge loss, or the engine path (public inputs only:
    n, p, s and the options, :func:`dpstats.bss.certified.uses_exact_path`)."""
    return loss_of(options).slack_on_every_path or not uses_exact_path(p, s, options, n)


def selection_cost(epsilon, options, context):
    """Exactly the selection share (the slack comes out of it), with the guard's delta."""
    if math.isinf(epsilon):
        return math.inf, 0.0
    return float(epsilon), (options["delta"] if options["guard"] == "ptr" else 0.0)


def block_cap(p, s, sensitivity, nominal_epsilon, options):
    """K of the capped block scores, from public parameters only (module docstring); inf = no cap."""
    tv = options.get("cap_tv", DEFAULT_CAP_TV)
    if tv == 0 or math.isinf(nominal_epsilon):
        return math.inf
    return 2.0 * sensitivity * (log_n_supports(p, s) + math.log(1.0 / tv)) / nominal_epsilon


def capped_scores(values, cap):
    """c_i = min(R(S^(i)), cap) per block, cap = R(S^(0)) + K."""
    return np.minimum(np.asarray(values, dtype=np.float64), cap)


def log_block_sizes(p, s):
    """log m_i = log C(s, i) + log C(p - s, i), i = 0..min(s, p - s)."""
    i = np.arange(min(s, p - s) + 1)
    lc = lambda a, b: gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)  # noqa: E731
    return lc(s, i) + lc(p - s, i)


def mistakes_log_weights(block_values, p, s, epsilon, sensitivity):
    """log m_i - eps R(S^(i)) / (2 Delta) for i = 0..min(s, p - s)."""
    return log_block_sizes(p, s) - epsilon * np.asarray(block_values, dtype=np.float64) / (2.0 * sensitivity)


def mistakes_output_log_probabilities(all_supports, all_values, p, s, epsilon, sensitivity, cap_width=math.inf):
    """Exact log P(S) over every support (the audit oracle): P(block i) / m_i, block scores
    capped at R(S^(0)) + ``cap_width``."""
    order = np.lexsort((np.arange(all_values.size), all_values))
    anchor = all_supports[order[0]]
    in0 = np.zeros(p, dtype=bool)
    in0[anchor] = True
    count = (~in0[all_supports]).sum(axis=1)
    blocks = np.array([all_values[count == i].min() for i in range(min(s, p - s) + 1)])
    blocks = capped_scores(blocks, blocks[0] + cap_width)
    logw = mistakes_log_weights(blocks, p, s, epsilon, sensitivity)
    logp_block = logw - logsumexp(logw)
    return logp_block[count] - log_block_sizes(p, s)[count]


def draw_from_block(anchor, i, p, rng):
    """A uniform support with exactly i mistakes from ``anchor``.

    Drop a uniform i-subset of the anchor and add a uniform i-subset of its complement
    (this, not S^(i) itself, is what the analysed mechanism returns; see module notes).
    """
    anchor = np.asarray(sorted(anchor), dtype=np.int64)
    outside = np.setdiff1d(np.arange(p), anchor)
    drop = rng.sample_without_replacement(anchor.size, i)
    add = rng.sample_without_replacement(outside.size, i)
    keep = np.delete(anchor, drop)
    return tuple(int(j) for j in np.sort(np.concatenate([keep, outside[add]])))


def sample_mistakes(anchor, block_values, p, s, epsilon, sensitivity, rng):
    """One draw of the mistakes mechanism: a block, then a uniform element of it."""
    i = rng.categorical_log(mistakes_log_weights(block_values, p, s, epsilon, sensitivity))
    return tuple(anchor) if i == 0 else draw_from_block(anchor, i, p, rng)


def block_scorer(task, tau):
    """Every support scored exactly (the exact path, a public choice: :func:`dpstats.bss.certified.uses_exact_path`),
    or the certified engine."""
    p, s = len(task.terms), task.size
    if task_uses_exact_path(task):
        exact = exact_scores(task, tau, "mistakes")
        exact.path = f"exact enumeration of C({p}, {s}) = {int(comb(p, s, exact=True)):,} supports"
        return exact
    return make_engine(task, tau, "mistakes")


def certified_gap(task, tau, scorer):
    """(g_c, S^(0), R(S^(0))): the PTR guard's certified gap, g - tau <= g_c <= g.

    From a certified top-k list: every support other than S^(0) has R >= min(v_2 - tau_eval,
    the list's bound), and that bound is >= v_k - tau_mip >= v_2 - tau_mip; tau_eval covers
    values that are upper bounds (the hinge loss: tau / 2 on the exact path).  g = inf when
    S^(0) is the only support.  k = R (public) when the top-R fallback could run, so that
    its certificate is the one the fallback reuses; else 2.
    """
    if not isinstance(scorer, OuterApproximationEngine):  # ExactScores
        k = min(2, scorer.values.size)
        sups, vals = scorer.top(k)
        if k < 2:
            return math.inf, sups[0], float(vals[0])
        second = vals[1] - loss_of(task.options).exact_value_slack(tau)
        return float(second - vals[0]), sups[0], float(vals[0])
    if scorer.p == scorer.s:
        best = scorer.best()
        return math.inf, best.support, best.value
    k = int(task.R) if (task.options["guard"] == "ptr" and int(task.R) >= 2
                        and log_n_supports(scorer.p, scorer.s) > math.log(int(task.R) + 1)) else 2
    cert = scorer.top(k)
    scorer.gap_certificate = cert  # curator-only: how tight the top-2 list was certified
    return (float(min(cert.values[1] - scorer.tau_eval, cert.lower_bound) - cert.values[0]), cert.supports[0],
            float(cert.values[0]))


def certified_blocks(task, tau, cap_width=math.inf, scorer=None):
    """Anchor S^(0), block supports and values, per-block lower bounds, certificate info.

    With a finite ``cap_width`` K, blocks whose minimum is at least R(S^(0)) + K are only
    bounded (``info["capped_blocks"]``; their value is the best support found, their lower
    bound at least the cap minus tau).  ``scorer``: the :func:`block_scorer` already used
    for the gap (its cuts and memo are reused).

    The info (route, solves, tau_mip, tau_eval, achieved gaps) is curator-only: it is a
    deterministic function of the data (docs/privacy.md).
    """
    scorer = block_scorer(task, tau) if scorer is None else scorer
    loss = loss_of(task.options)
    if not isinstance(scorer, OuterApproximationEngine):  # ExactScores
        exact = scorer
        (anchor,), (v0,) = exact.top(1)
        blocks = exact.mistakes(anchor)
        sups = [anchor] + [b[0] for b in blocks]
        vals = np.array([v0] + [b[1] for b in blocks])
        # hinge values are upper bounds within tau / 2: the block lower bounds subtract it,
        # so they stay lower bounds (module docstring, PTR guard)
        lbs = vals[1:] - loss.exact_value_slack(tau)
        return sups, vals, lbs, {"path": exact.path,
                                 "capped_blocks": [i for i in range(1, len(vals)) if vals[i] > vals[0] + cap_width]}
    engine = scorer
    best = engine.best()
    certs = engine.mistakes(best.support, cap_width=cap_width)
    sups = [best.support] + [c.support for c in certs]
    vals = np.array([best.value] + [c.value for c in certs])
    lbs = np.array([c.lower_bound for c in certs])
    if loss.slack_on_every_path:
        # a block's lower bound may come from certified upper values (the 1-mistake block,
        # evaluated over the whole ball): subtracting tau_eval keeps it a lower bound
        lbs = lbs - engine.tau_eval
    info = {"path": engine.certificate_route(), "tau_mip": engine.tau_mip, "tau_eval": engine.tau_eval,
            # the gap of each block's score: capped at R(S^(0)) + K (module docstring), a capped
            # block's score is the cap and its certificate the lower bound against it
            "block_gaps_achieved": [float(min(v, vals[0] + cap_width) - min(lb, vals[0] + cap_width))
                                    for v, lb in zip(vals[1:], lbs)],
            "best_gap_achieved": float(best.value - best.lower_bound), "solver": engine.stats.as_dict(),
            "capped_blocks": [i + 1 for i, c in enumerate(certs) if c.capped]}
    return sups, vals, lbs, info


def _gap_certificate_info(scorer):
    """Curator-only: how the top-2 list behind the gap was certified (no blocks were needed)."""
    if not isinstance(scorer, OuterApproximationEngine):
        return {"path": scorer.path + " (top list for the gap; no blocks needed)"}
    info = {"path": scorer.certificate_route() + " (top list for the gap; no blocks needed)",
            "tau_mip": scorer.tau_mip, "tau_eval": scorer.tau_eval, "solver": scorer.stats.as_dict()}
    cert = getattr(scorer, "gap_certificate", None)
    if cert is not None:
        info["gap_achieved"] = float(cert.values[-1] - cert.lower_bound)
    return info


def run(task) -> MethodOutcome:
    s, p = task.size, len(task.terms)
    opts = task.options
    delta_s = sensitivity_of(task)
    # Slack or not is decided by public inputs only (n, p, s, max_enumerate, the loss).
    slack = uses_slack(p, s, opts, task_rows(task))
    tau = opts["tolerance"] * delta_s if slack else 0.0
    eps = task.epsilon
    # The mechanism's budget and nominal epsilon are public (eps, the guard, the slack), so
    # the cap K is too (module docstring, "Capped block scores").
    eps_t, eps_run = split_budget(eps, opts) if opts["guard"] == "ptr" else (None, eps)
    nominal, parts = slack_parts(eps_run, opts["tolerance"], "mistakes mechanism") if slack else (eps_run, ())
    cap_width = block_cap(p, s, delta_s, nominal, opts)
    # Public parameters only: the number of blocks comes from p and s, not from what the
    # engine returned; the certificate route and statistics stay in curator["certificate"].
    details = {"sensitivity": delta_s, "s": s, "ridge": task.ridge, "radius": task.radius, "tau": tau,
               "tau_relative_to_delta": opts["tolerance"], "n_blocks": min(s, p - s) + 1, "block_cap": cap_width,
               "loss": loss_of(opts).label}
    scorer = block_scorer(task, tau)
    if math.isinf(eps) and loss_of(opts) is HINGE and isinstance(scorer, OuterApproximationEngine):
        # epsilon = inf releases the certified best support only; with the hinge loss's small non-private ridge
        # (dpstats.bss.hinge, "Defaults for the hinge loss") its gap and blocks, curator-only there, are far
        # slower to certify
        best = scorer.best()
        curator = {"best_support": [task.terms[j] for j in best.support], "best_objective": best.value,
                   "sensitivity": delta_s, "tau": tau, **loss_items(task, best.support, best.value),
                   "certificate": {"path": scorer.certificate_route(), "tau_mip": scorer.tau_mip,
                                   "tau_eval": scorer.tau_eval, "best_gap_achieved": float(best.value - best.lower_bound),
                                   "solver": scorer.stats.as_dict()}}
        entry = LedgerEntry(mechanism="certified best subset (epsilon = inf, not private)", epsilon=math.inf,
                            released={"support": [task.terms[j] for j in best.support]}, details=details)
        return MethodOutcome(support=np.array(best.support, dtype=np.int64), entries=[entry], curator=curator)
    # The gap first (the certified top-2 list): the guard needs nothing else, and when it
    # fails the blocks are never certified.
    gap_cert, anchor, v0 = certified_gap(task, tau, scorer)
    curator = {
        "best_support": [task.terms[j] for j in anchor],
        "best_objective": v0,
        "sensitivity": delta_s,
        "gap_certified": gap_cert,
        "two_Delta": 2 * delta_s,
        "gap_over_2_Delta": gap_cert / (2 * delta_s),
        "tau": tau,
        "block_cap": cap_width,
        **loss_items(task, anchor, v0),
    }

    def add_blocks():
        """Certify the blocks (capped) and record them for the curator; returns the scores."""
        sups, vals, lbs, info = certified_blocks(task, tau, cap_width, scorer)
        if tuple(sups[0]) != tuple(anchor):  # both come from the same certified best support
            raise AssertionError("the blocks' anchor differs from the gap's best support")
        scores = capped_scores(vals, vals[0] + cap_width)
        curator.update({
            "block_supports": [[task.terms[j] for j in sp] for sp in sups],
            "block_objectives": [float(v) for v in vals],
            "block_scores": [float(v) for v in scores],
            "capped_blocks": info.pop("capped_blocks", []),
            "tau_hat": float(min((vals[i] - vals[0]) / i for i in range(1, len(vals)))) if len(vals) > 1 else math.inf,
            "certificate": info,
        })
        return scores

    if math.isinf(eps):
        add_blocks()
        entry = LedgerEntry(mechanism="certified best subset (epsilon = inf, not private)", epsilon=math.inf,
                            released={"support": [task.terms[j] for j in anchor]}, details=details)
        return MethodOutcome(support=np.array(anchor, dtype=np.int64), entries=[entry], curator=curator)

    entries, released = [], {}
    if opts["guard"] == "ptr":
        eps_m = eps_run
        dist = ptr_distance(gap_cert, delta_s, tau)
        passed, noisy = propose_test_release(dist, eps_t, opts["delta"], task.rng)
        branch = "mistakes" if passed else "top_r"
        released["guard_branch"] = branch
        entries.append(LedgerEntry(
            mechanism="propose-test-release: gap test for the mistakes mechanism",
            epsilon=eps_t, delta=opts["delta"], neighbours=REPLACE_ONE, released={"guard_branch": branch},
            details={"epsilon_test": eps_t, "epsilon_mechanism": eps_m, "ptr_share": opts["ptr_share"],
                     "threshold": ptr_threshold(eps_t, opts["delta"]), "distance_sensitivity": 1.0,
                     "distance": "max(0, (g_c - 2 Delta - 2 tau) / (2 Delta + tau))"},
        ))
        curator.update({"ptr_distance": dist, "ptr_noisy_distance": noisy,
                        "ptr_pass_probability": ptr_pass_probability(dist, eps_t, opts["delta"]),
                        "guard_branch": branch})
        if not passed:
            curator["certificate"] = _gap_certificate_info(scorer)
            sub = dataclasses.replace(task, epsilon=eps_m, options={**opts, "max_tries": None})
            out = get_method("top_r").run(sub, scorer=scorer)  # the same data and tau: reuse its certificates
            curator["fallback_top_r"] = out.curator
            return MethodOutcome(support=out.support, entries=entries + out.entries, curator=curator,
                                 released=released, caveats=out.caveats)
    scores = add_blocks()
    vals = np.asarray(curator["block_objectives"])

    # eps_run is this mechanism's budget; with slack it samples with the nominal
    # eps_run / (1 + 2 tolerance) so that its guarantee is eps_run (module docstring).
    logw = mistakes_log_weights(scores, p, s, nominal, delta_s)
    logp = logw - logsumexp(logw)
    chosen = sample_mistakes(anchor, scores, p, s, nominal, delta_s, task.rng)
    if slack:
        caveat = (f"certified blocks within solver slack tau = {tau:.4g}; sampled with the nominal "
                  "eps / (1 + 2 tau / Delta), so the guarantee is eps")
    else:
        caveat = f"every support scored exactly (C({p}, {s}) = {int(comb(p, s, exact=True)):,}, the exact path): no solver slack"
    entries.append(LedgerEntry(
        mechanism="mistakes mechanism (uniform element of the drawn block)",
        epsilon=eps_run, neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in chosen]},
        caveats=(caveat,), details={**details, "nominal_epsilon": nominal}, conditional=charge_condition(opts),
        parts=parts,
    ))
    log_m = log_block_sizes(p, s)
    curator["block_probabilities"] = [float(np.exp(x)) for x in logp]
    curator["probability_best"] = float(np.exp(logp[0]))
    if len(vals) > 1 and curator["tau_hat"] > 0:
        t_hat = curator["tau_hat"]
        ii = np.arange(1, len(vals))
        curator["bound_probability_not_best"] = float(np.exp(logsumexp(
            log_m[1:] - nominal * ii * t_hat / (2 * delta_s))))
    if len(vals) > 1 and not light_curator_active():  # a bisection that plan's calls do not read
        from ..conditions import margin_needed

        curator["tau_hat_needed"] = margin_needed(p, s, nominal, delta_s)
    return MethodOutcome(support=np.array(chosen, dtype=np.int64), entries=entries, curator=curator,
                         released=released)


class MistakesPlanModel(CertifiedPlanModel):
    """plan's model of a ``mistakes`` call at many candidate terms (:mod:`dpstats.bss.certified_plan`, step
    4), with its default propose-test-release guard: q is the guard's pass probability times the mistakes
    mechanism's probability of the truth plus the rest times the top-R fallback's; the draw takes the
    guard's branch with its pass probability."""

    def branches(self, n, sups, vals, delta, options, eps_sel):
        """(P(the guard passes), q of the mistakes mechanism, q of the top-R fallback, block scores,
        nominal epsilons of the mistakes mechanism and of the fallback) on the list."""
        # the top-R fallback's parts (top_r imports nothing from here)
        from .top_r import listed_truth_probability, mechanism_epsilon, uses_slack as top_r_uses_slack

        slack, tolerance = uses_slack(self.p, self.s, options, n), options["tolerance"]
        tau = tolerance * delta if slack else 0.0
        eps_t, eps_m = split_budget(eps_sel, {"ptr_share": options.get("ptr_share", DEFAULT_PTR_SHARE)})
        nominal = mechanism_epsilon(eps_m, tolerance, slack)
        nominal_t = mechanism_epsilon(eps_m, tolerance, top_r_uses_slack(self.p, self.s, self.R, options, n))
        # the certified gap lies in [g - tau, g] (exact without slack): its middle
        gap = float(vals[1] - vals[0]) - tau / 2.0 if len(vals) > 1 else math.inf
        passed = ptr_pass_probability(ptr_distance(gap, delta, tau), eps_t, options.get("delta", DEFAULT_DELTA))
        mistakes = (~np.isin(sups, sups[0])).sum(axis=1)
        cap = vals[0] + block_cap(self.p, self.s, delta, nominal, options)
        # a block without a scored candidate is taken at the cap (its supports lie far from the truth)
        scores = capped_scores([vals[mistakes == i].min() if np.any(mistakes == i) else cap
                                for i in range(min(self.s, self.p - self.s) + 1)], cap)
        logw = mistakes_log_weights(scores, self.p, self.s, nominal, delta)
        i = len(set(self.truth.tolist()) - set(sups[0].tolist()))
        q_m = math.exp(logw[i] - np.logaddexp.reduce(logw) - log_block_sizes(self.p, self.s)[i])
        q_t = listed_truth_probability(sups[:self.R], vals[:self.R], self.truth, self.p, self.s, nominal_t, delta)
        return passed, q_m, q_t, scores, nominal, nominal_t

    def probability_and_draw(self, n, sups, vals, delta, options, eps_sel, rng):
        from .top_r import sample_top_r

        passed, q_m, q_t, scores, nominal, nominal_t = self.branches(n, sups, vals, delta, options, eps_sel)
        if rng.uniform() < passed:
            chosen = sample_mistakes(sups[0], scores, self.p, self.s, nominal, delta, rng)
        else:
            chosen, _ = sample_top_r(sups[:self.R], vals[:self.R], self.p, self.s, nominal_t, delta, rng)
        return passed * q_m + (1.0 - passed) * q_t, chosen


class MistakesMethod(CertifiedMethod):
    """The mistakes mechanism over certified block minimisers, guarded by propose-test-release."""

    name = "mistakes"
    title = "mistakes mechanism over certified block minimisers (MIP on CBC)"
    #: s="auto" in two stages only (dpstats.bss.model_size): the size stage, then this method with its own guard
    #: at the released size.
    auto_size_kind = "best_subset"
    refused_size_mechanisms = ("joint", "generalized")
    refused_size_mechanism_message = ("method='mistakes' with s='auto' runs in two stages (its blocks rest on one "
                                      "size's gap); leave size_mechanism=None or give 'margin' or 'two_stage'.")
    options = CERTIFIED_OPTIONS + (
        Choice("guard", default=DEFAULT_GUARD, choices=("ptr", "none"),
               doc="ptr: propose-test-release on the certified gap (unconditional); none: conditional on the gap"),
        Real("delta", default=DEFAULT_DELTA, low=0, high=0.5, doc="delta of the propose-test-release guard"),
        Real("ptr_share", default=DEFAULT_PTR_SHARE, low=0, high=1, doc="share of epsilon spent on the gap test"),
        Real("cap_tv", default=DEFAULT_CAP_TV, low=0, low_open=False, high=1,
             doc="total variation allowed by capping block scores at R(S^(0)) + K; 0: no cap"),
    )

    def condition_rows(self, curator, ctx):
        return conditions.mistakes_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        fallback = curator.get("fallback_top_r")
        if isinstance(fallback, dict):
            return conditions.best_support_probability(fallback, p, size, "exact, of the top_r fallback the guard ran")
        return conditions.best_support_probability(curator, p, size, "exact, P(block 0)")

    def planning_model(self, p, s, design, *, bounds, signs, auto_size, options, intercept=True):
        # as top_r's (dpstats.bss.certified_plan): the blocks and the guard's gap read from the modelled list
        from .certified_plan import planning_model_of

        return planning_model_of(self, MistakesPlanModel, p, s, design, bounds=bounds, signs=signs, auto_size=auto_size,
                                 options=options, intercept=intercept)

    def truth_probability(self, curator, truth, p, options, exact=False):
        """The guard's branch is part of the draw, so the probability is that of the branch taken
        (conditionally unbiased): the fallback top-R list, or the mistakes blocks, each sampled and then
        a uniform member of it, so a support with i mistakes has the block's probability over
        m_i = C(s, i) C(p - s, i)."""
        if curator.get("guard_branch") == "top_r":
            fallback = curator.get("fallback_top_r") or {}
            return None if options.get("max_tries") is not None else listed_probability(fallback, truth)
        blocks, best = curator.get("block_probabilities"), curator.get("best_support")
        if blocks is None or best is None or len(best) != len(truth):
            return None
        s = len(truth)
        i = len(truth - frozenset(best))
        if i >= len(blocks):
            return None
        return float(blocks[i]) / (math.comb(s, i) * math.comb(p - s, i))

    selection_cost = staticmethod(selection_cost)
    charge_condition = staticmethod(charge_condition)
    run = staticmethod(run)


METHOD = MistakesMethod()
