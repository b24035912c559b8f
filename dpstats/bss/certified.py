"""The parts shared by the certified best-subset methods, ``top_r`` and ``mistakes``.

Their options and public defaults, the choice between the exact path (every support scored:
by default when its estimated cost is within the budget of :mod:`dpstats.bss.exact_cost`,
or C(p, s) <= ``max_enumerate`` when the user gives a count) and the certified engine
(:mod:`dpstats.bss.engine`), the engine for a task, and the exact scores.  Both methods
import these from here, never from each other; what depends on the loss comes from its :class:`~dpstats.bss.losses.Loss`.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..method_options import Integer, Real
from ..methods import SIGNS_FROM_SELECTION_FIT, SelectionMethod
from .class_weight import CLASS_WEIGHT_OPTIONS, check_class_weight_options, class_weights
from .engine import OuterApproximationEngine
from .engine_problem import SmallerSizeList
from .enumeration import check_enumeration_memory, n_supports
from .exact_cost import EXACT_PATH_SECONDS, exact_path_limit
from .intercept import INTERCEPT_OPTIONS, check_intercept_options
from .losses import LOSS_OPTION, loss_of, resolve_non_private_objective  # noqa: F401 (also here)

DEFAULT_TOLERANCE = 5e-4


# ---------------------------------------------------------------- options and public defaults
#: Options shared by the certified best-subset methods (top_r and mistakes).
CERTIFIED_OPTIONS = (
    Real("tolerance", default=DEFAULT_TOLERANCE, low=0, high=0.1, high_open=False,
         doc="certified solver slack tau as a fraction of Delta; the mechanism samples with eps / (1 + 2 tolerance) "
             "so that it spends exactly eps"),
    Integer("max_enumerate", default=None, minimum=1, allow_none=True,
            doc=f"score every support exactly when C(p, s) is at most this count; None (default): when the "
                f"estimated scoring time is within {EXACT_PATH_SECONDS:g} s (dpstats.bss.exact_cost)"),
    LOSS_OPTION,
) + INTERCEPT_OPTIONS + CLASS_WEIGHT_OPTIONS


def check_certified_options(options, ridge):
    """Cross-option rules shared by top_r and mistakes (public values only).  ``max_enumerate=None``
    stays None until n, p and s are known (:func:`check_certified_size` resolves it)."""
    check_intercept_options(options, loss_of(options).least_squares)
    check_class_weight_options(options)
    return options


def exact_path_count(p, s, options, n=None):
    """The largest C(p, s) scored exactly: the user's ``max_enumerate``, or the count the cost
    rule allows at (n, p, s) for the loss (:func:`dpstats.bss.exact_cost.exact_path_limit`).
    ``n`` is the input row count (public); it is needed only while ``max_enumerate`` is None."""
    given = options["max_enumerate"]
    if given is not None:
        return given
    if n is None:
        raise ValueError("the exact path's cost rule needs the input row count n (max_enumerate=None)")
    return exact_path_limit(loss_of(options), n, p, s)


def uses_exact_path(p, s, options, n=None):
    """Every support is scored (C(p, s) <= :func:`exact_path_count`): public inputs only."""
    n_sup = n_supports(p, s)
    return n_sup is not None and n_sup <= exact_path_count(p, s, options, n)


def task_rows(task):
    """The row count a task's path is decided from: the input row count (public; the
    ``n_rows`` of the call's cost), or the data's rows when a task is built directly."""
    if task.n_input is not None:
        return task.n_input
    return task.cost_context["n_rows"] if "n_rows" in task.cost_context else task.data.n_rows


def task_uses_exact_path(task):
    """:func:`uses_exact_path` for a task (its terms, size, options and row count)."""
    return uses_exact_path(len(task.terms), task.size, task.options, task_rows(task))


def certified_default_radius(p, s, options):
    """``radius=None`` for top_r and mistakes: the loss's default for the path that runs
    (1 for the squared loss; with the hinge loss :func:`dpstats.bss.hinge.hinge_default_radius`,
    4 where every support is scored exactly, 1 where the MIP engine runs).  Public inputs only."""
    return loss_of(options).default_radius(engine=not uses_exact_path(p, s, options))


def certified_default_ridge(n, p, s, options, radius=1.0):
    """``ridge="auto"`` for top_r and mistakes: 0 on the exact path (squared loss), where every
    support is scored exactly; where the MIP engine runs,
    :func:`dpstats.bss.losses.engine_default_ridge` (lam r^2 at most the certificate's tau when
    n >= p, so the answer stays the ridge-free one; RIDGE_PER_ROW * sqrt(n p) when n < p); with
    the hinge loss :func:`dpstats.bss.hinge.hinge_default_ridge`.  Public inputs only."""
    tolerance = options.get("tolerance")
    return loss_of(options).default_ridge(n, p, radius, engine=not uses_exact_path(p, s, options, n), s=s,
                                          tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance)


def check_certified_size(p, s, options, context, name):
    """Resolve ``max_enumerate=None`` to the cost rule's count at the call's (n, p, s), which
    every later step reads (public inputs only: the input row count, p, s and the loss); then
    refuse, before the charge, ridge = 0 on the engine's path (its bounds need ridge > 0) and
    an exact path whose supports would not fit in memory."""
    if options["max_enumerate"] is None:
        options["max_enumerate"] = exact_path_count(p, s, options, context["n_rows"])
    exact = uses_exact_path(p, s, options)
    if context.get("ridge") == 0 and loss_of(options).needs_engine_ridge and not exact:
        raise InvalidArgumentError(
            f"method={name!r} with ridge=0 needs the exact path (every support scored: C(p, s) within the cost budget, "
            "or at most max_enumerate): the certified engine's bounds need ridge > 0. Use a positive ridge (the default "
            "'auto' gives 0.1 n there, more when n < p) or raise max_enumerate.")
    if exact:
        check_enumeration_memory(n_supports(p, s), s, f"method={name!r}")
    else:
        check_engine_tolerance(options, context, name)


def check_engine_tolerance(options, context, name):
    """Refuse, before the charge, a tolerance whose slack tau = tolerance Delta cannot hold the
    engine's evaluation error twice over for this many rows.  The engine's own check uses the
    data (y'y); deciding on the public bound instead (n rows, Delta >= (1 + r)^2 on the mapped
    scale for every size and intercept route) keeps the outcome of the call independent of
    the data's values (spec 5.9)."""
    n_rows = context.get("n_rows")
    bound = loss_of(options).engine_evaluation_error_bound(n_rows) if n_rows is not None else 0.0
    if bound <= 0.0:
        return
    radius = context.get("radius")
    radius = loss_of(options).default_radius(engine=True) if radius is None else float(radius)
    delta_floor = (1.0 + radius) ** 2
    tolerance = DEFAULT_TOLERANCE if options.get("tolerance") is None else float(options["tolerance"])
    if not tolerance * delta_floor > 2.0 * bound:
        needed = 4.0 * bound / delta_floor
        raise InvalidArgumentError(
            f"method={name!r}: tolerance={tolerance:g} is too small for the certified engine on {n_rows} rows (the "
            f"floating-point error of one value grows with the row count); use tolerance >= {needed:.2g}, "
            "whose slack the mechanism accounts for.")


def resolve_non_private_tolerance(options, given_options, context):
    """``epsilon = inf`` without a ``tolerance`` given: the smallest tolerance the engine can hold
    on public inputs (:meth:`~dpstats.bss.losses.Loss.non_private_tolerance`) instead of
    :data:`DEFAULT_TOLERANCE`.

    The default slack tau = tolerance * Delta is sized for the mechanism: it costs a share
    2 tolerance of epsilon and no more.  At epsilon = inf it buys nothing, and Delta grows like
    the radius squared, so with the ball widened (``method="auto"`` takes radius 10^6 there) tau
    reached 10^9 on the mapped scale and the engine certified a support whose residual sum of
    squares was 13 % above the best one's (ISLR's Carseats with all pairwise interactions, s = 5).
    The default ridge follows the tolerance (lam r^2 <= tau,
    :func:`~dpstats.bss.losses.engine_default_ridge`), so it shrinks with it."""
    if "tolerance" in given_options and given_options["tolerance"] is not None:
        return
    radius = context.get("radius")
    radius = loss_of(options).default_radius(engine=True) if radius is None else float(radius)
    tolerance = loss_of(options).non_private_tolerance(context.get("n_rows"), radius)
    if tolerance is not None:
        options["tolerance"] = min(float(options["tolerance"]), tolerance)


def response_type(options):
    """The loss's response ("binary", -1 / +1, for the hinge loss), decided before data access."""
    return loss_of(options).response_type


# ---------------------------------------------------------------- scoring
def sensitivity_of(task):
    """Delta (squared loss) or Delta_h (hinge loss) of the task (:mod:`dpstats.bss.objective`, :mod:`dpstats.bss.hinge`)."""
    return loss_of(task.options).sensitivity(task.data, task.radius, task.size)


def make_engine(task, tau, label):
    """The certified engine for a task on its loss's source (:meth:`dpstats.bss.losses.Loss.engine_source`):
    the Gram path, matrix-free above MATRIX_FREE_ABOVE columns, or the hinge source whose values
    are certified within tau_eval = HINGE_EVAL_SHARE * tau."""
    source = loss_of(task.options).engine_source(task, tau)
    return OuterApproximationEngine(source, task.size, tau, deadline=task.deadline, verbose=task.verbose,
                                    label=label)


class ExactScores:
    """Every support scored exactly (the small-problem path and the test oracle)."""

    def __init__(self, p, supports, values):
        """Every support (candidate indices, enumeration order) and its value (exact for the
        squared loss, certified upper bounds for the hinge loss)."""
        self.p, self.supports, self.values = int(p), supports, np.asarray(values, dtype=np.float64)

    def _first(self, R):
        """Indices of the R smallest values, lexicographic enumeration order breaking ties (a
        fixed public rule): the first R of the full sort by (value, index), from a partition
        and a sort of the values at or below the R-th (a full sort of C(p, s) values cost
        15 ms of a 90 ms call at C(100, 3))."""
        size = self.values.size
        if R >= size:
            return np.lexsort((np.arange(size), self.values))
        kth = np.partition(self.values, R - 1)[R - 1]
        if np.isnan(kth):
            return np.lexsort((np.arange(size), self.values))[:R]
        cand = np.flatnonzero(self.values <= kth)
        return cand[np.lexsort((cand, self.values[cand]))][:R]

    def top(self, R):
        idx = self._first(R)
        # one conversion of the R rows to Python ints (element by element took 0.4 ms of a
        # 35 ms exact-path call at C(100, 3), R = 100)
        return [tuple(row) for row in self.supports[idx].tolist()], self.values[idx]

    def mistakes(self, anchor):
        anchor = set(anchor)
        in0 = np.zeros(self.p, dtype=bool)
        in0[list(anchor)] = True
        # mistakes = s minus the anchor's members, added column by column (a gather of the
        # whole (C(p, s), s) array summed along its short axis took three times as long)
        hits = np.zeros(self.supports.shape[0], dtype=np.int64)
        for j in range(self.supports.shape[1]):
            hits += in0[self.supports[:, j]]
        count = self.supports.shape[1] - hits
        out = []
        p = self.p
        for i in range(1, min(len(anchor), p - len(anchor)) + 1):
            vals = np.where(count == i, self.values, np.inf)
            k = int(np.argmin(vals))
            out.append((tuple(int(j) for j in self.supports[k]), float(self.values[k])))
        return out


def exact_scores(task, tau, label="exact enumeration"):
    """ExactScores of every support for the task's loss (the small-problem path).

    Hinge values are certified upper bounds within tau / 2 (module docstring); the squared
    loss is exact.
    """
    supports, values = loss_of(task.options).score_all_supports(task, tau, label)
    return ExactScores(len(task.terms), supports, values)


# ---------------------------------------------------------------- top-R lists (top_r, and s="auto"'s sizes)
def top_r_uses_slack(p, s, R, options, n=None):
    """Whether the top-R mechanism's scores carry solver slack, from public inputs only.

    The hinge loss always does (certified duality gaps); the squared loss does on the
    engine path only, not when every support is scored exactly (the exact path, chosen
    from n, p, s and the options by :func:`dpstats.bss.certified.uses_exact_path`, or
    R >= C(p, s)).
    """
    if loss_of(options).slack_on_every_path:
        return True
    n_sup = n_supports(p, s)
    return not ((n_sup is not None and R >= n_sup) or uses_exact_path(p, s, options, n))


def draw_uniform_outside(p, s, excluded, rng, max_tries=None):
    """Uniform s-subsets of range(p) drawn until one is not in ``excluded`` (sorted tuple).

    Returns (support, tries, succeeded); after ``max_tries`` failures the last draw is
    returned (Behdin et al. 2024, Algorithm 1, procedure M_0).
    """
    tries = 0
    while True:
        tries += 1
        cand = tuple(int(j) for j in rng.sample_without_replacement(p, s))
        if cand not in excluded:
            return cand, tries, True
        if max_tries is not None and tries >= max_tries:
            return cand, tries, False


def certified_top(task, R, tau, scorer=None):
    """(supports, values, certificate info, engine or None) of the R best supports.

    ``scorer``: the exact scores or the engine a caller already built for the same task and
    tau (``mistakes`` falling back to top-R), reused with its cuts and memo.

    The info (route, number of MILP solves, tau_mip, tau_eval, achieved gaps, solver
    statistics) is curator-only: it is a deterministic function of the data
    (docs/privacy.md), so it goes to ``fit.curator["certificate"]`` and never to the ledger.
    """
    p, s = len(task.terms), task.size
    n_sup = n_supports(p, s)
    if task_uses_exact_path(task):
        exact = scorer if isinstance(scorer, ExactScores) else exact_scores(task, tau, "top_r")
        sups, vals = exact.top(R)
        return sups, vals, {"path": f"exact enumeration of C({p}, {s}) = {n_sup:,} supports", "tau_achieved": 0.0}, exact
    if isinstance(scorer, SmallerSizeList) and scorer.tau == tau and scorer.size == s and \
            len(scorer.certificate.supports) == R:
        cert = scorer.certificate
        info = {"path": (f"from the certified best support of size {scorer.source_size}: the supports of size {s} "
                         "inside it or with one other column scored exactly, every other one bounded from below"),
                "lower_bound_outside_list": cert.lower_bound, "tau_mip": cert.tolerance,
                "gap_achieved": float(cert.values[-1] - cert.lower_bound)}
        return cert.supports, np.asarray(cert.values), info, scorer
    reuse = isinstance(scorer, OuterApproximationEngine) and scorer.tau == tau and scorer.s == task.size
    engine = scorer if reuse else make_engine(task, tau, "top_r")
    cert = engine.top(R)
    info = {"path": engine.certificate_route(), "lower_bound_outside_list": cert.lower_bound,
            "tau_mip": engine.tau_mip, "tau_eval": engine.tau_eval,
            "gap_achieved": float(cert.values[-1] - cert.lower_bound), "solver": engine.stats.as_dict()}
    return cert.supports, np.asarray(cert.values), info, engine


def loss_items(task, best_support, best_value):
    """Curator-only items of the loss: sigma2_hat for the squared loss; loss, Delta_h and the
    training misclassification rate of the best support for the hinge loss."""
    return loss_of(task.options).curator_items(task, best_support, best_value)


class CertifiedMethod(SelectionMethod):
    """What ``top_r`` and ``mistakes`` share as selection methods: the size check, the
    defaults of radius and ridge for the path that runs, the response type and the
    cross-option rules (a subclass adds its own to :meth:`check_options`)."""

    size_argument = "s"
    supports_dask = True
    sign_policy = SIGNS_FROM_SELECTION_FIT
    response_type = staticmethod(response_type)

    def check_options(self, options, context):
        return check_certified_options(options, context.get("ridge"))

    def check_size(self, p, size, options, context):
        check_certified_size(p, size, options, context, self.name)

    def check_design(self, plan, size, options, context):
        # class_weight's keys against the response's declared levels (public schema)
        class_weights(options, plan.response_levels)

    def default_radius(self, p, size, options):
        return certified_default_radius(p, size, options)

    def resolve_infinite_epsilon(self, options, given_options, context):
        resolve_non_private_objective(options, context)
        resolve_non_private_tolerance(options, given_options, context)

    def default_ridge(self, n, p, size, options, radius=1.0):
        return certified_default_ridge(n, p, size, options, radius)

