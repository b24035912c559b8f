"""``method="exponential"``: the exact exponential mechanism over all supports.

Privacy statement
-----------------
Output space: all C(p, s) supports of s candidate terms (a forced intercept is in every
support).  Loss R(S; D), the ridge-and-ball least-squares objective of
:mod:`dpstats.bss.objective`, has sensitivity Delta = (b_y + b_x r sqrt(s'))^2 under
replace-one neighbours (s' = s + 1 with an intercept).  P(S) proportional to
exp(-epsilon R(S) / (2 Delta)) is epsilon-DP (pure).  Exactness: every R(S) is evaluated
in closed form (a Cholesky solve, with the ball's monotone Newton solve where the fit
leaves the ball; :mod:`dpstats.bss.objective`), no solver slack.

Hinge loss (``loss="hinge"``; Prastakos, Behdin and Mazumder 2025, Appendix C): the
response is coded -1 / +1 (not clipped) and R is replaced by
R_h(S) = min sum_i max(0, 1 - y_i (b0 + x_iS'b)) + lam ||b||^2 over ||b|| <= r and, under a
forced intercept, an unpenalised b0 with |b0| <= 1 + b_x r sqrt(s) (a box that loses no
optimality), of :mod:`dpstats.bss.hinge`, with Delta_h = 2 (1 + b_x r sqrt(s)) under the
intercept and 1 + b_x r sqrt(s) without one.  R_h is
computed by a convex solve that returns a value u(S) with a certified gap
u(S) - R_h(S) <= tau, where tau = ``tolerance`` * Delta_h is public (``tolerance`` is a
fixed option, default 1e-6, never data-dependent).  The scores u then have sensitivity at
most Delta_h + tau, so sampling with exp(-eps_nom u / (2 Delta_h)) is
eps_nom (1 + tau / Delta_h)-DP; we use the conservative factor 1 + 2 tau / Delta_h of the
MIP engine's solver slack (:mod:`dpstats.bss.engine`, "Solver slack and epsilon"; this is
its special case tau_mip = 0).  The slack comes out of the requested budget: given eps,
the mechanism samples with the nominal eps_nom = eps / (1 + 2 tolerance) (rounded down,
:func:`slack_split`), so it is eps-DP and the ledger charges exactly eps, shown as
eps_nom plus the slack part eps - eps_nom.  A solve whose certified gap exceeds tau
raises SolverError and releases nothing.

Class weights (``class_weight=``, hinge loss; :mod:`dpstats.bss.class_weight`): row i's
hinge term is multiplied by the public weight w_{y_i} in (0, 1] (the largest 1), so
every summand stays within the unweighted bound and Delta_h is unchanged
(:mod:`dpstats.bss.hinge`, "Class weights"); the mechanism, its slack and its ledger are
as above, on the weighted values.  The weights are public: declared, never measured.

Only when C(p, s) <= ``max_enumerate`` (default 10^6; the scoring rate is in
benchmarks/README.md); above that, use ``method="top_r"``.  This is the oracle the other
best-subset methods are tested against.

References
----------
McSherry and Talwar (2007), Mechanism design via differential privacy.
Behdin, Prastakos and Mazumder (2024), Differentially private best subset selection via
integer programming, section 2; Prastakos, Behdin and Mazumder (2025), section 2.1.
"""
from __future__ import annotations

import numpy as np
from scipy.special import comb

from ..errors import InvalidArgumentError
from ..mechanisms.exponential import exponential_log_probabilities, sample_exponential
from ..method_options import Integer, Real
from .. import conditions
from ..methods import SIGNS_FROM_SELECTION_FIT, MethodOutcome, SelectionMethod, listed_probability
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from .class_weight import CLASS_WEIGHT_OPTIONS, check_class_weight_options, class_weights, class_weights_of_task
# the enumeration is shared with top_r and mistakes; its names stay importable from here
from .enumeration import (check_enumeration_memory, curator_summary,  # noqa: F401
                          empirical_margin, enumerate_supports, log_n_supports, score_all_supports,
                          score_all_supports_hinge, slack_parts, slack_split)
from .intercept import INTERCEPT_OPTIONS, check_intercept_options
from .losses import HINGE, LOSS_OPTION, hinge_curator_items, loss_of, resolve_non_private_objective

#: Largest C(p, s) that ``method="exponential"`` enumerates by default (``top_r`` and
#: ``mistakes`` choose their exact path by its cost instead: :mod:`dpstats.bss.exact_cost`).
DEFAULT_MAX_ENUMERATE = 10**6
#: Default public solver slack of the hinge loss, as a fraction of Delta_h: the mechanism
#: samples with eps / (1 + 2e-6).  The solver reaches about 1e-7 Delta_h, so this leaves a margin.
DEFAULT_HINGE_TOLERANCE = 1e-6


def selection_cost(epsilon, options, context):
    """Exactly the selection share: with the hinge loss the solver slack comes out of it."""
    return float(epsilon), 0.0


def response_type(options):
    return loss_of(options).response_type


def check_size(p, s, options):
    n_supports = int(comb(p, s, exact=True))
    if n_supports > options["max_enumerate"]:
        raise InvalidArgumentError(
            f"method='exponential' would enumerate C({p}, {s}) = {n_supports:,} supports, more than "
            f"max_enumerate={options['max_enumerate']:,}. Use method='top_r' (certified MIP) for this size, "
            "or raise max_enumerate."
        )
    check_enumeration_memory(n_supports, s, "method='exponential'")


def check_auto_size(p, s_max, options):
    """s="auto": every support of every size 1..s_max is enumerated (public p, s_max)."""
    total = sum(int(comb(p, s, exact=True)) for s in range(1, s_max + 1))
    if total > options["max_enumerate"]:
        raise InvalidArgumentError(
            f"method='exponential' with s='auto' would enumerate {total:,} supports of sizes 1..{s_max}, "
            f"more than max_enumerate={options['max_enumerate']:,}. Use method='top_r', a smaller s_max, or "
            "raise max_enumerate.")
    check_enumeration_memory(int(comb(p, min(s_max, p // 2), exact=True)), s_max,
                             "method='exponential' with s='auto'")


def run_hinge(task) -> MethodOutcome:
    """The exponential mechanism on certified hinge objective values (module docstring)."""
    s = task.size
    data = task.data
    delta = HINGE.sensitivity(data, task.radius, s)
    tau = task.options["tolerance"] * delta
    weights = class_weights_of_task(task)
    objective, supports, values, worst = score_all_supports_hinge(data, s, task.ridge, task.radius, tau,
                                                                  task.options["tolerance"], class_weights=weights)
    # The slack comes out of the budget: sample with the nominal epsilon (module docstring).
    nominal, parts = slack_parts(task.epsilon, task.options["tolerance"], "exponential mechanism")
    index = sample_exponential(values, nominal, delta, task.rng)
    chosen = supports[index]
    logp = exponential_log_probabilities(values, nominal, delta)
    levels = list(data.response_levels) if getattr(data, "response_levels", None) is not None else None
    entry = LedgerEntry(
        mechanism="exponential mechanism over all supports (hinge loss)",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        caveats=(f"solver slack tau = {tau:.3g} (certified duality gaps): sampled with the nominal "
                 "eps / (1 + 2 tau / Delta_h), so the guarantee is eps",),
        released={"support": [task.terms[j] for j in chosen]},
        details={"sensitivity": delta, "s": s, "n_supports": int(values.size), "ridge": task.ridge,
                 "radius": task.radius, "loss": HINGE.label, "response levels (-1, +1)": levels,
                 "tolerance (tau / Delta_h)": task.options["tolerance"], "tau": tau,
                 "nominal epsilon": nominal,
                 **({} if weights is None else {"class weights (-1, +1)": list(weights)})},
        parts=parts,
    )
    curator = curator_summary(task.terms, supports, values, logp, delta, data.n_rows, s)
    best = int(np.lexsort((np.arange(values.size), values))[0])
    curator.pop("sigma2_hat", None)  # a least-squares quantity
    curator.update(hinge_curator_items(objective, supports[best], data))
    curator["largest_certified_gap"] = worst
    curator["method_detail"] = (f"exact enumeration of C({len(task.terms)}, {s}) = {values.size:,} supports, "
                                "hinge objective values certified within tau")
    return MethodOutcome(support=np.sort(chosen), entries=[entry], curator=curator)


def run(task) -> MethodOutcome:
    loss = loss_of(task.options)
    if loss is HINGE:
        return run_hinge(task)
    s = task.size
    delta = loss.sensitivity(task.data, task.radius, s)
    supports, values = loss.score_all_supports(task, 0.0, "exponential")
    index = sample_exponential(values, task.epsilon, delta, task.rng)
    chosen = supports[index]
    logp = exponential_log_probabilities(values, task.epsilon, delta)
    entry = LedgerEntry(
        mechanism="exponential mechanism over all supports",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in chosen]},
        details={"sensitivity": delta, "s": s, "n_supports": int(values.size), "ridge": task.ridge,
                 "radius": task.radius, "loss": loss.label},
    )
    curator = curator_summary(task.terms, supports, values, logp, delta, task.stats.n, s, epsilon=task.epsilon)
    curator["method_detail"] = f"exact enumeration of C({len(task.terms)}, {s}) = {values.size:,} supports"
    return MethodOutcome(support=np.sort(chosen), entries=[entry], curator=curator)


class ExponentialMethod(SelectionMethod):
    """The exact exponential mechanism over all C(p, s) supports (small p; the test oracle)."""

    name = "exponential"
    title = "exact exponential mechanism over all supports"
    size_argument = "s"
    supports_dask = True
    sign_policy = SIGNS_FROM_SELECTION_FIT
    #: s="auto" (dpstats.bss.model_size): every support of every size, one joint draw by default.
    auto_size_kind = "best_subset"
    default_size_mechanism = "joint"
    auto_size_enumerates = True
    options = (
        Integer("max_enumerate", default=DEFAULT_MAX_ENUMERATE, minimum=1,
                doc="largest C(p, s) enumerated; above it use top_r"),
        LOSS_OPTION,
        Real("tolerance", default=None, low=0, high=1, allow_none=True,
             doc=f"hinge loss only: certified solver slack as a fraction of Delta_h (default {DEFAULT_HINGE_TOLERANCE:g})"),
    ) + INTERCEPT_OPTIONS + CLASS_WEIGHT_OPTIONS

    def check_options(self, options, context):
        check_intercept_options(options, loss_of(options).least_squares)
        check_class_weight_options(options)
        slack = loss_of(options).slack_on_every_path
        if options["tolerance"] is not None and not slack:
            raise InvalidArgumentError("tolerance applies to loss='hinge' only (the squared loss is evaluated exactly).")
        if slack and options["tolerance"] is None:
            options["tolerance"] = DEFAULT_HINGE_TOLERANCE
        return options

    def check_size(self, p, size, options, context):
        check_size(p, size, options)

    def check_auto_size(self, p, s_max, options):
        check_auto_size(p, s_max, options)

    def check_design(self, plan, size, options, context):
        # class_weight's keys against the response's declared levels (public schema)
        class_weights(options, plan.response_levels)

    def default_radius(self, p, size, options):
        return loss_of(options).default_radius(engine=False)

    def resolve_infinite_epsilon(self, options, given_options, context):
        # no privacy to buy: the squared loss's ball widened so that it never binds (least-squares best subset)
        resolve_non_private_objective(options, context)

    def default_ridge(self, n, p, size, options, radius=1.0):
        # Squared loss: every support is scored exactly, no ridge needed.  The hinge loss
        # keeps a small ridge for its certified per-support solves (dpstats.bss.hinge).
        return loss_of(options).default_ridge(n, p, radius, engine=False)

    def condition_rows(self, curator, ctx):
        return conditions.exponential_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        return conditions.best_support_probability(curator, p, size, "exact")

    def planning_kind(self, p, s, options, auto_size=False):
        return "exact"  # every support scored: the mechanism's own probabilities (squared and hinge)

    def truth_probability(self, curator, truth, p, options, exact=False):
        return listed_probability(curator, truth)  # the top-R list of every support's exact probability

    selection_cost = staticmethod(selection_cost)
    response_type = staticmethod(response_type)
    run = staticmethod(run)


METHOD = ExponentialMethod()


def check_options(options, context):
    """The validated options of ``method="exponential"`` (see :class:`ExponentialMethod`)."""
    return METHOD.validate_options(dict(options), context)
