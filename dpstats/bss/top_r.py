"""``method="top_r"``: the top-R mechanism on certified best supports.

Privacy statement
-----------------
Let N = C(p, s) and S_1..S_R the R best supports (ascending R(S), ties lexicographic).
Draw a with log-weights w_k = -eps R(S_k) / (2 Delta) (k <= R) and
w_{R+1} = log(N - R) - eps R(S_R) / (2 Delta); return S_a, or for a = R + 1 a uniform
support outside the top R (uniform draws from all supports, rejected while inside).
With unlimited retries (the default) this *is* the exponential mechanism on
Rhat(S) = R(S) for the top R and R(S_R) otherwise, whose sensitivity is Delta (Behdin,
Prastakos and Mazumder 2024, Lemmas A.1-A.2): sampled with eps, it is eps-DP.

Exact epsilon.  The ``epsilon`` the method is given is what it spends, solver slack and
retry cap included; it samples with a smaller *nominal* epsilon eps_nom where its
guarantee is looser than eps_nom, and the ledger entry shows the split (``parts``):

* Engine path (the exact path's cost rule says no, :mod:`dpstats.bss.exact_cost`; or
  C(p, s) > ``max_enumerate`` when the user gives a count): the list comes from the certified MIP engine
  (:mod:`dpstats.bss.engine`) within a public tolerance tau = tolerance * Delta, which
  makes Rhat's sensitivity Delta + 2 tau (:mod:`dpstats.bss.engine`, "Solver slack and
  epsilon"), so sampling with eps_nom is eps_nom (1 + 2 tolerance)-DP.  The mechanism
  samples with eps_nom = eps / (1 + 2 tolerance) (rounded down,
  :func:`dpstats.bss.exhaustive.slack_split`): eps-DP, charged eps = eps_nom + slack.
* Exact path (squared loss; by default when the estimated time of scoring every support
  is within the budget of :mod:`dpstats.bss.exact_cost`, or C(p, s) <= ``max_enumerate``):
  every support is scored exactly, tau = 0, eps_nom = eps and no slack part.  Whether this
  path runs depends on n (the input row count), p, s, the loss and ``max_enumerate`` only
  (public), so the charge never depends on the data;
  the certificate's own route inside the engine (data-dependent) never changes it.
* R >= C(p, s): the exact exponential mechanism of :mod:`dpstats.bss.exhaustive` runs
  instead, with a note (eps_nom = eps for the squared loss).
* ``max_tries=T``: the mechanism is (eps', 0)-DP, eps' = log(e^e + gamma) - log(1 - q^T)
  with e = eps_nom (1 + 2 tolerance) (e = eps_nom without slack), q = R / N,
  gamma = R^T exp(e n b_y^2 / (2 Delta)) / N^(T - 1) (Behdin, Prastakos and Mazumder
  2024, Theorem 1).  eps_nom is the largest value with eps' <= eps (found by bisection,
  eps' increases with eps_nom); the parts are eps_nom, the slack and the retry cap.  If
  even eps_nom = 0 gives eps' > eps (log(1 + R^T / N^(T - 1)) - log(1 - q^T) > eps) the
  call is refused before the charge.

Options: ``tolerance`` (default 5e-4, tau as a fraction of Delta), ``max_tries`` (default None = unlimited),
``max_enumerate`` (default None: the cost rule of :mod:`dpstats.bss.exact_cost`; a count overrides
it), ``loss`` ("squared" or "hinge"); every option with its default
is listed in docs/methods.md.

Hinge loss (``loss="hinge"``; Prastakos, Behdin and Mazumder 2025, Appendix C): the response is
coded -1 / +1 before data access, R is the hinge objective R_h of :mod:`dpstats.bss.hinge`
and Delta_h = 2 (1 + b_x r sqrt(s)) with an intercept (unpenalised, outside the ball, boxed
without loss of optimality), 1 + b_x r sqrt(s) without one.  R_h has no closed
form: each value is a certified upper bound within tau_eval (a duality gap), which the
engine's certificate arithmetic accounts for (:mod:`dpstats.bss.hinge_source`): the MILP
bound is valid because every hinge cut is an under-estimator whatever the dual accuracy,
and the list values are within tau_eval, so tau = tau_mip + 2 tau_eval = tolerance *
Delta_h and the nominal epsilon is the same eps / (1 + 2 tolerance).  On the exact path
every support is scored within tau / 2, so the hinge loss has a slack part on every path.
With ``max_tries`` the objective bound n b_y^2 of Theorem 1 becomes n (b = 0 is feasible
and each hinge term is then 1).

References
----------
Behdin, Prastakos and Mazumder (2024), Differentially private best subset selection via
integer programming, Algorithm 1, Theorem 1, Lemmas A.1-A.2; Prastakos, Behdin and
Mazumder (2025), Differentially private high-dimensional variable selection via integer
programming, section 2.1.1.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from .. import conditions
from ..errors import InvalidArgumentError
from ..light_curator import light_curator_active
from ..mechanisms.exponential import exponential_log_probabilities, sample_exponential
from ..method_options import Integer
from ..methods import MethodOutcome, SelectionMethod, get_method, listed_probability
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
# the parts shared with mistakes; their names stay importable from here
from .certified import (CERTIFIED_OPTIONS, CertifiedMethod, DEFAULT_TOLERANCE, ExactScores,  # noqa: F401
                        certified_default_radius, certified_default_ridge, check_certified_options,
                        check_certified_size, exact_scores, loss_items, make_engine, response_type, sensitivity_of,
                        task_rows, task_uses_exact_path, uses_exact_path)
from .certified import certified_top, draw_uniform_outside, top_r_uses_slack as uses_slack  # noqa: F401
from .certified_plan import CertifiedPlanModel
from .engine import OuterApproximationEngine
from .enumeration import curator_summary, log_n_supports, n_supports, slack_parts, slack_split
from .losses import HINGE, HINGE_EVAL_SHARE, LOSSES, MATRIX_FREE_ABOVE, engine_default_ridge, loss_of  # noqa: F401


# ---------------------------------------------------------------- options and cost
def check_options(options, context):
    """The validated options of ``method="top_r"`` (see :class:`TopRMethod`)."""
    return METHOD.validate_options(dict(options), context)


def inflated_epsilon(epsilon, tolerance):
    """The guarantee eps (1 + 2 tau / Delta), tau = tolerance * Delta, of a mechanism sampled
    with eps on scores certified within tau (:mod:`dpstats.bss.engine`); the inverse of
    :func:`mechanism_epsilon` (up to rounding)."""
    return epsilon if math.isinf(epsilon) else epsilon * (1.0 + 2.0 * tolerance)


def mechanism_epsilon(budget, tolerance, slack=True):
    """The nominal epsilon a mechanism samples with so that it spends exactly ``budget``:
    budget / (1 + 2 tolerance) rounded down with solver slack, ``budget`` without."""
    return slack_split(budget, tolerance)[0] if slack else float(budget)


def retry_floor(R, log_n, T):
    """eps' of the retry-capped mechanism at nominal epsilon 0: log(1 + R^T / N^(T-1)) - log(1 - q^T)."""
    return retry_cap_epsilon(0.0, R, log_n, T, 0, 0.0, 1.0)


def retry_capped_nominal(budget, tolerance, slack, R, log_n, T, n, b_y, sensitivity):
    """The largest nominal eps_nom with eps'(e) <= budget, e = eps_nom (1 + 2 tolerance)
    (e = eps_nom without slack), by bisection over floats (eps' increases with eps_nom).

    Returns (eps_nom, e, eps'(e)).  Raises InvalidArgumentError when even eps_nom = 0
    does not fit (:func:`retry_floor`); ``selection_cost`` raises the same before the charge.
    """
    factor = 1.0 + 2.0 * tolerance if slack else 1.0

    def cost(e_nom):
        return retry_cap_epsilon(e_nom * factor, R, log_n, T, n, b_y, sensitivity)

    floor = cost(0.0)
    if not floor <= budget:
        raise InvalidArgumentError(_retry_refusal(budget, floor, T))
    lo, hi = 0.0, float(budget)
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if cost(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo, lo * factor, cost(lo)


def _retry_refusal(budget, floor, T):
    return (f"max_tries={T} cannot fit in the selection epsilon {budget:.6g}: the retry cap alone costs "
            f"{floor:.6g} (Behdin, Prastakos and Mazumder 2024, Theorem 1, at nominal epsilon 0). Raise max_tries or "
            "epsilon, or leave max_tries=None (unlimited retries, exact). Nothing was computed or charged.")


def retry_cap_epsilon(epsilon, R, log_n, T, n, b_y, sensitivity):
    """eps' of the retry-capped top-R mechanism (Behdin et al. 2024, Theorem 1), in logs.

    eps' = log(e^eps + gamma) - log(1 - q^T), q = R / N,
    gamma = R^T exp(eps n b_y^2 / (2 Delta)) / N^(T - 1).
    """
    log_gamma = T * math.log(R) + epsilon * n * b_y**2 / (2.0 * sensitivity) - (T - 1) * log_n
    log_q = math.log(R) - log_n
    return float(logsumexp([epsilon, log_gamma])) - math.log1p(-math.exp(T * log_q))


def selection_cost(epsilon, options, context):
    """Exactly the selection share ``epsilon``: the slack and the retry cap come out of it
    (module docstring).  With ``max_tries``, once p is known, a share too small for the
    retry cap is refused here, before the charge."""
    if options.get("max_tries") is not None and not math.isinf(epsilon):
        p = context.get("n_candidates")
        if p is not None:
            log_n, T = log_n_supports(p, context["size"]), options["max_tries"]
            n_sup = n_supports(p, context["size"])
            if n_sup is not None and context["R"] >= n_sup:
                return float(epsilon), 0.0  # the exact exponential mechanism runs: no retries
            floor = retry_floor(context["R"], log_n, T)
            if not floor <= epsilon:
                raise InvalidArgumentError(_retry_refusal(epsilon, floor, T))
    return float(epsilon), 0.0


def top_r_log_weights(values, log_n, epsilon, sensitivity):
    """Log-weights of a in 1..R+1 (module docstring), in log space."""
    values = np.asarray(values, dtype=np.float64)
    R = values.size
    scale = epsilon / (2.0 * sensitivity)
    rest = log_n + math.log1p(-math.exp(math.log(R) - log_n))  # log(N - R)
    return np.concatenate([-scale * values, [rest - scale * values[-1]]])


def top_r_output_log_probabilities(all_supports, all_values, R, epsilon, sensitivity, order=None):
    """Exact log P(S) of the top-R mechanism (unlimited retries) over every support.

    The audit oracle: P(S_k) = P(a = k) for the top R; P(a = R + 1) / (N - R) elsewhere.
    """
    if order is None:
        order = np.lexsort((np.arange(all_values.size), all_values))
    N = all_values.size
    logw = top_r_log_weights(all_values[order[:R]], math.log(N), epsilon, sensitivity)
    logp_a = logw - logsumexp(logw)
    out = np.full(N, logp_a[-1] - math.log(N - R))
    out[order[:R]] = logp_a[:R]
    return out


def listed_top_r_log_probabilities(listed, listed_values, all_supports, epsilon, sensitivity):
    """Exact log P(S) over ``all_supports`` when the mechanism runs on a given top-R list.

    The audit oracle for what top_r actually runs: the engine's certified list and
    Algorithm 1's weights, with the uniform-outside step spreading P(a = R + 1).
    """
    all_supports = np.asarray(all_supports)
    N, R = all_supports.shape[0], len(listed)
    logw = top_r_log_weights(listed_values, math.log(N), epsilon, sensitivity)
    logp_a = logw - logsumexp(logw)
    out = np.full(N, logp_a[-1] - math.log(N - R))
    index = {tuple(row): k for k, row in enumerate(all_supports.tolist())}
    for k, support in enumerate(listed):
        out[index[tuple(int(j) for j in support)]] = logp_a[k]
    return out


def listed_truth_probability(sups, vals, truth, p, s, epsilon, sensitivity):
    """P(the top-R mechanism returns ``truth``) on the list (``sups``, ``vals``), R = len(sups): its
    weight, or its share of the outside weight spread uniformly over the N - R unlisted supports."""
    log_n = log_n_supports(p, s)
    logw = top_r_log_weights(vals, log_n, epsilon, sensitivity)
    logp = logw - logsumexp(logw)
    listed = [tuple(row) for row in np.asarray(sups).tolist()]
    truth = tuple(int(t) for t in truth)
    if truth in listed:
        return math.exp(logp[listed.index(truth)])
    return math.exp(logp[-1] - (log_n + math.log1p(-math.exp(math.log(len(listed)) - log_n))))


def sample_top_r(sups, vals, p, s, epsilon, sensitivity, rng, max_tries=None):
    """One draw of the top-R mechanism (Behdin et al. 2024, Algorithm 1) from a certified list.

    Returns (support, uniform draws used outside the list).
    """
    logw = top_r_log_weights(vals, log_n_supports(p, s), epsilon, sensitivity)
    a = rng.categorical_log(logw)
    if a < len(sups):
        return tuple(sups[a]), 0
    chosen, tries, _ = draw_uniform_outside(p, s, set(map(tuple, sups)), rng, max_tries)
    return chosen, tries


class TopRPlanModel(CertifiedPlanModel):
    """plan's model of a ``top_r`` call at many candidate terms (:mod:`dpstats.bss.certified_plan`): the
    top-R mechanism on the R best of the scored candidates."""

    def probability_and_draw(self, n, sups, vals, delta, options, eps_sel, rng):
        nominal = mechanism_epsilon(eps_sel, options["tolerance"], uses_slack(self.p, self.s, self.R, options, n))
        sups, vals = sups[:self.R], vals[:self.R]
        chosen, _ = sample_top_r(sups, vals, self.p, self.s, nominal, delta, rng)
        return listed_truth_probability(sups, vals, self.truth, self.p, self.s, nominal, delta), chosen


# ---------------------------------------------------------------- the method
def run(task, scorer=None) -> MethodOutcome:
    """The top-R mechanism; ``scorer`` as in :func:`certified_top`."""
    s, p, R = task.size, len(task.terms), int(task.R)
    opts = task.options
    loss = loss_of(opts)
    delta = sensitivity_of(task)
    # Whether the scores carry solver slack is decided by public inputs only (n, p, s, R,
    # max_enumerate, the loss), so the split of the budget never depends on the data.
    slack = uses_slack(p, s, R, opts, task_rows(task))
    tau = opts["tolerance"] * delta if slack else 0.0
    eps = task.epsilon  # the budget: what this mechanism spends, slack included
    log_n = log_n_supports(p, s)
    n_sup = n_supports(p, s)
    caveats = []
    # Public parameters only (fixed by p, s, R, the bounds, radius, ridge and the options);
    # what the solver computed is in the curator's "certificate" (see certified_top).
    details = {"sensitivity": delta, "s": s, "R": R, "ridge": task.ridge, "radius": task.radius,
               "nominal_epsilon": eps, "tau": tau, "tau_relative_to_delta": opts["tolerance"],
               "log_n_supports": log_n, "loss": loss.label}

    if n_sup is not None and R >= n_sup and loss is HINGE:
        # R >= C(p, s): the exact exponential mechanism on certified hinge values, with the
        # same split eps / (1 + 2 tolerance) + slack.
        note = f"R={R} >= C({p}, {s}) = {n_sup}: ran the exact exponential mechanism over all supports instead"
        out = get_method("exponential").run(task)
        out.curator["method_detail"] = note
        return MethodOutcome(support=out.support, entries=out.entries, curator=out.curator, caveats=[note])
    if n_sup is not None and R >= n_sup:
        # R >= C(p, s): the top-R mechanism is the exact exponential mechanism.
        supports, values = loss.score_all_supports(task, 0.0, "top_r")
        index = sample_exponential(values, eps, delta, task.rng)
        chosen = supports[index]
        logp = exponential_log_probabilities(values, eps, delta)
        note = f"R={R} >= C({p}, {s}) = {n_sup}: ran the exact exponential mechanism over all supports instead"
        entry = LedgerEntry(mechanism="exponential mechanism over all supports (top_r fallback, R >= C(p, s))",
                            epsilon=eps, neighbours=REPLACE_ONE,
                            released={"support": [task.terms[j] for j in chosen]},
                            caveats=(note,), details={**details, "n_supports": n_sup})
        curator = curator_summary(task.terms, supports, values, logp, delta, task.stats.n, s, epsilon=eps)
        curator["method_detail"] = note
        return MethodOutcome(support=np.sort(chosen), entries=[entry], curator=curator, caveats=[note])

    # epsilon = inf releases the best support only; with the hinge loss it is certified alone, at the small ridge
    # of the non-private objective (dpstats.bss.hinge, "Defaults for the hinge loss"), where a top-R list is far
    # slower to certify and would be curator-only
    sups, vals, info, scored = certified_top(task, 1 if math.isinf(eps) and loss is HINGE else R, tau, scorer)
    nominal, parts = eps, ()
    if opts.get("max_tries") is not None and not math.isinf(eps):
        # n as in the planned cost: the input row count, an upper bound on the rows used
        # (eps' grows with n), so the guarantee stays valid under na_action="omit".
        nominal, guarantee, capped = retry_capped_nominal(
            eps, opts["tolerance"], slack, R, log_n, opts["max_tries"], task.cost_context["n_rows"],
            loss.response_bound(task.data), delta)
        parts = (("top-R mechanism (nominal epsilon)", nominal),)
        if slack:
            parts += ((f"solver slack (tau = {opts['tolerance']:g} Delta)",
                       guarantee - nominal),)
        parts += ((f"retry cap (max_tries = {opts['max_tries']})",
                   eps - guarantee),)
        details["max_tries"] = opts["max_tries"]
        details["epsilon_retry_cap"] = capped
    elif slack:
        nominal, parts = slack_parts(eps, opts["tolerance"], "top-R mechanism")
    details["nominal_epsilon"] = nominal
    if math.isinf(eps):
        chosen, tries = sups[0], 0
        logp_a = np.full(R + 1, -np.inf)
        logp_a[0] = 0.0
    else:
        logw = top_r_log_weights(vals, log_n, nominal, delta)
        logp_a = logw - logsumexp(logw)
        chosen, tries = sample_top_r(sups, vals, p, s, nominal, delta, task.rng, opts.get("max_tries"))
    if slack:
        conditions = (f"certified top-{R} within solver slack tau = {tau:.4g} ({opts['tolerance']:g} Delta); "
                      "sampled with the nominal eps / (1 + 2 tau / Delta), so the guarantee is eps",)
    else:
        conditions = (f"every support scored exactly (C({p}, {s}) = {n_sup:,}, the exact path): no solver slack",)
    entry = LedgerEntry(mechanism=f"top-R mechanism (R = {R}) over certified best supports",
                        epsilon=eps, neighbours=REPLACE_ONE,
                        released={"support": [task.terms[j] for j in chosen]}, caveats=conditions,
                        details=details, parts=parts)
    curator = _curator(task, sups, vals, logp_a, delta, info, tau)
    curator["outside_top_r_draws"] = tries
    if isinstance(scored, ExactScores) and not light_curator_active():  # plan's calls do not read them
        curator.update(_margin_items(scored, sups, vals, delta, nominal, opts.get("max_tries"), s))
    return MethodOutcome(support=np.array(sorted(chosen), dtype=np.int64), entries=[entry], curator=curator,
                         caveats=caveats)


def _curator(task, sups, vals, logp_a, delta, info, tau):
    R = len(sups)
    top = min(R, 20)
    gap = float(vals[1] - vals[0]) if R > 1 else math.inf
    return {
        "best_support": [task.terms[j] for j in sups[0]],
        "best_objective": float(vals[0]),
        "probability_best": float(np.exp(logp_a[0])),
        "probability_outside_top_r": float(np.exp(logp_a[-1])),
        "probability_of_a": [float(np.exp(x)) for x in logp_a[:top]],
        "top_supports": [{"support": [task.terms[j] for j in sups[k]], "objective": float(vals[k]),
                          "probability": float(np.exp(logp_a[k]))} for k in range(top)],
        "sensitivity": delta,
        "gap": gap,
        "gap_over_2_Delta": gap / (2 * delta),
        "tau": tau,
        "certificate": info,
    } | loss_items(task, sups[0], vals[0])


def _margin_items(scored, sups, vals, delta, epsilon, max_tries, s):
    """Curator-only: tau_hat from the exactly scored supports and the concentration bound of
    the top-R law, P(output != S_1) <= sum_i m_i exp(-eps min(i tau_hat, R(S_R) - R(S_1)) / (2 Delta))
    (:func:`dpstats.conditions.concentration_bound`; no bound with ``max_tries`` or eps = inf).
    Not computed in ``plan``'s internal calls, which do not read them (:mod:`dpstats.light_curator`)."""
    from ..conditions import concentration_bound, margin_needed

    blocks = scored.mistakes(sups[0])
    margins = [(value - float(vals[0])) / i for i, (_, value) in enumerate(blocks, start=1)]
    out = {"tau_hat": min(margins) if margins else math.inf}
    if max_tries is None and not math.isinf(epsilon):
        cap = float(vals[-1] - vals[0])
        out["bound_probability_not_best"] = concentration_bound(scored.p, s, out["tau_hat"], epsilon, delta, cap=cap)
        out["tau_hat_needed"] = margin_needed(scored.p, s, epsilon, delta, cap=cap)
    return out


class TopRMethod(CertifiedMethod):
    """The top-R mechanism over certified best supports."""

    name = "top_r"
    title = "top-R mechanism over certified best supports (MIP on CBC)"
    #: s="auto" (dpstats.bss.model_size): each size scored on this method's certified top-R list.
    auto_size_kind = "best_subset"
    options = CERTIFIED_OPTIONS + (
        Integer("max_tries", default=None, minimum=1, allow_none=True,
                doc="cap on uniform draws outside the top R (needs bounds=(b_x, b_y)); None: unlimited"),
    )

    def check_options(self, options, context):
        options = super().check_options(options, context)
        if options["max_tries"] is not None and not isinstance(context.get("bounds"), tuple):
            raise InvalidArgumentError("max_tries needs public numeric bounds=(b_x, b_y): its epsilon depends on b_y.")
        return options

    def condition_rows(self, curator, ctx):
        return conditions.top_r_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        qualifier = "exact" if "method_detail" in curator else "exact, P(a = 1)"
        return conditions.best_support_probability(curator, p, size, qualifier)

    def planning_kind(self, p, s, options, auto_size=False):
        """Exact when every support is scored exactly (a loss without solver slack, the exact
        path's rule or R covering every support) and no retry cap changes the law."""
        loss = LOSSES.get(options.get("loss") or "squared")
        if options.get("max_tries") is not None or loss is None or loss.slack_on_every_path:
            return "empirical"
        if auto_size:  # every size scored exactly: the most numerous one decides
            s_max = options.get("s_max") or min(p, 10)
            count = math.comb(p, min(s_max, p // 2))
        else:
            count = math.comb(p, s)
        # The squared loss's scoring cost does not depend on n up to MATRIX_FREE_ABOVE terms
        # (dpstats.bss.exact_cost); the hook has no n, so above that the smallest n is assumed.
        exact = uses_exact_path(p, min(s_max, p // 2) if auto_size else s,
                                {"max_enumerate": options.get("max_enumerate"), "loss": loss.name}, 1)
        return "exact" if exact or options.get("R", 100) >= count else "empirical"

    def planning_model(self, p, s, design, *, bounds, signs, auto_size, options, intercept=True):
        # The truth, its swaps and the near block scored on drawn statistics (certified_plan), from the
        # public size on, for the Gaussian design with public pair bounds, the squared loss, an
        # intercept, any sign share and the call's options but a retry cap.
        from .certified_plan import planning_model_of

        return planning_model_of(self, TopRPlanModel, p, s, design, bounds=bounds, signs=signs, auto_size=auto_size,
                                 options=options, intercept=intercept)

    def truth_probability(self, curator, truth, p, options, exact=False):
        # the top-R list's exact probabilities; with max_tries they ignore the retry cap's fallback
        return None if options.get("max_tries") is not None else listed_probability(curator, truth)

    def size_stage_list_length(self, task):
        return int(task.R)

    def run_at_size(self, task, scorer):
        # the size stage's certificates of the released size (same data and tau) are reused
        return run(task, scorer)

    selection_cost = staticmethod(selection_cost)
    run = staticmethod(run)


METHOD = TopRMethod()
