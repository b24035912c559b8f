"""``method="exponential"``: the exact exponential mechanism over all supports.

Privacy statement
-----------------
Output space: all C(p, s) supports of s candidate terms (a forced intercept is in every
support).  Loss R(S; D), the ridge-and-ball least-squares objective of
:mod:`dpstats.bss.objective`, has sensitivity Delta = (b_y + b_x r sqrt(s'))^2 under
replace-one neighbours (s' = s + 1 with an intercept).  P(S) proportional to
exp(-epsilon R(S) / (2 Delta)) is epsilon-DP (pure).  Exactness: every R(S) is evaluated
in closed form (an s x s eigendecomposition and a monotone Newton solve), no solver slack.

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

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
from scipy.special import comb, gammaln

from ..errors import InvalidArgumentError, SolverError
from ..mechanisms.exponential import exponential_log_probabilities, sample_exponential
from ..method_options import Choice, Integer, Real
from ..methods import MethodOutcome, SelectionMethod
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..privacy.progress import Progress
from .hinge import HingeObjective, constant_classifier_diagnostic, hinge_sensitivity
from .objective import RidgeBallObjective, least_squares_sensitivity

DEFAULT_MAX_ENUMERATE = 10**6
LOSSES = ("squared", "hinge")
#: Default public solver slack of the hinge loss, as a fraction of Delta_h: the mechanism
#: samples with eps / (1 + 2e-6).  The solver reaches about 1e-7 Delta_h, so this leaves a margin.
DEFAULT_HINGE_TOLERANCE = 1e-6


def log_n_supports(p: int, s: int) -> float:
    """log C(p, s), exact in log space for any size."""
    return float(gammaln(p + 1) - gammaln(s + 1) - gammaln(p - s + 1))


def enumerate_supports(p: int, s: int) -> np.ndarray:
    """All s-subsets of range(p) in lexicographic order, shape (C(p, s), s)."""
    count = int(comb(p, s, exact=True))
    flat = np.fromiter((j for c in combinations(range(p), s) for j in c), dtype=np.int64, count=count * s)
    return flat.reshape(count, s)


#: Supports scored between two looks at the deadline and the progress line.
SCORE_CHUNK = 1 << 16


def score_all_supports(objective: RidgeBallObjective, s: int, task=None, label="exact enumeration"):
    """Every candidate support (candidate-index space) and its exact R(S).

    With a ``task``, its deadline is checked and (``verbose``) progress printed between
    chunks of :data:`SCORE_CHUNK` supports.
    """
    candidates = objective.stats.candidates
    supports = enumerate_supports(candidates.size, s)
    full = objective.full_support(candidates[supports])
    if task is None:
        return supports, objective.values(full)
    values = np.empty(supports.shape[0])
    progress = Progress(f"{label}: scoring every support", values.size, "supports", enabled=task.verbose,
                        start=task.deadline.start)
    for start in range(0, values.size, SCORE_CHUNK):
        task.deadline.check(f"{label}: scoring every support",
                            reached=f"{start:,} of {values.size:,} supports scored",
                            advice="a smaller max_enumerate (the certified engine takes over) or a smaller s")
        values[start:start + SCORE_CHUNK] = objective.values(full[start:start + SCORE_CHUNK])
        progress.update(min(start + SCORE_CHUNK, values.size))
    return supports, values


#: The loss option shared by the best-subset methods.
LOSS_OPTION = Choice("loss", default="squared", choices=LOSSES,
                     doc="squared (least squares, numeric response) or hinge (sparse classification, two-level response)")
#: Bytes per enumerated support kept in memory (indices and value), for the memory check.
BYTES_PER_SUPPORT = 8


def check_max_enumerate(value) -> int:
    """Validate the ``max_enumerate`` option (shared by the best-subset methods)."""
    return Integer("max_enumerate", minimum=1).check(value)


def check_loss(value) -> str:
    """Validate the ``loss`` option (shared by the best-subset methods)."""
    return LOSS_OPTION.check(value)


def check_enumeration_memory(n_supports, s, what):
    """Refuse, before the charge, an enumeration whose arrays would not fit in memory.

    C(p, s) supports of s indices each are held at once; the estimate is public (p, s).
    """
    need = n_supports * (s + 1) * BYTES_PER_SUPPORT
    available = _available_memory()
    if available is not None and need > 0.5 * available:
        raise InvalidArgumentError(
            f"{what} would hold C(p, s) = {n_supports:,} supports in memory (about {need / 2**30:.1f} GiB, more than "
            f"half of the {available / 2**30:.1f} GiB available). Use method='top_r' (certified) or lower max_enumerate."
        )


def _available_memory():
    try:
        import os

        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX systems
        return None


def slack_split(budget, tolerance):
    """(nominal, slack): the solver slack taken out of a budget.

    A mechanism on scores certified within tau = tolerance * Delta, sampled with the
    nominal epsilon eps_nom, is eps_nom (1 + 2 tolerance)-DP (:mod:`dpstats.bss.engine`,
    "Solver slack and epsilon").  ``nominal`` is the largest float with
    nominal (1 + 2 tolerance) <= budget in exact rational arithmetic, and
    ``slack = budget - nominal``, so the guarantee fits the budget and the two parts add
    up to it (exactly for tolerance <= 1/2, where the subtraction is exact; otherwise to
    one rounding).  An infinite budget or zero tolerance has no slack part.
    """
    budget = float(budget)
    if math.isinf(budget) or tolerance == 0:
        return budget, 0.0
    factor = 1 + 2 * Fraction(tolerance)
    limit = Fraction(budget)
    nominal = budget / (1.0 + 2.0 * tolerance)
    while Fraction(nominal) * factor > limit:
        nominal = math.nextafter(nominal, 0.0)
    return nominal, budget - nominal


def slack_parts(budget, tolerance, mechanism):
    """(nominal, ledger parts) of a budget split by :func:`slack_split`."""
    nominal, slack = slack_split(budget, tolerance)
    if math.isinf(budget):
        return nominal, ()
    return nominal, ((f"{mechanism} (nominal epsilon)", nominal),
                     (f"solver slack (tau = {tolerance:g} Delta)", slack))


def selection_cost(epsilon, options, context):
    """Exactly the selection share: with the hinge loss the solver slack comes out of it."""
    return float(epsilon), 0.0


def response_type(options):
    return "binary" if options.get("loss") == "hinge" else "numeric"


def check_size(p, s, options):
    n_supports = int(comb(p, s, exact=True))
    if n_supports > options["max_enumerate"]:
        raise InvalidArgumentError(
            f"method='exponential' would enumerate C({p}, {s}) = {n_supports:,} supports, more than "
            f"max_enumerate={options['max_enumerate']:,}. Use method='top_r' (certified MIP) for this size, "
            "or raise max_enumerate."
        )
    check_enumeration_memory(n_supports, s, "method='exponential'")


def curator_summary(terms, supports, values, logp, delta, n, s, top=10, epsilon=None):
    """Curator-only diagnostics shared by the best-subset methods (never part of ``release()``).

    Keys as in :data:`dpstats.curator_keys.CURATOR_KEYS`.  ``tau_hat`` comes from the block
    minima of every scored support; with a finite ``epsilon`` (the one the mechanism sampled
    with) also ``bound_probability_not_best`` (:func:`dpstats.conditions.concentration_bound`).
    """
    from ..conditions import concentration_bound, margin_needed

    order = np.lexsort((np.arange(values.size), values))
    best = order[0]
    gap = float(values[order[1]] - values[best]) if values.size > 1 else math.inf
    table = [
        {"support": [terms[j] for j in supports[k]], "objective": float(values[k]),
         "probability": float(np.exp(logp[k]))}
        for k in order[:top]
    ]
    out = {
        "best_support": [terms[j] for j in supports[best]],
        "best_objective": float(values[best]),
        "probability_best": float(np.exp(logp[best])),
        "sensitivity": delta,
        "gap": gap,
        "gap_over_2_Delta": gap / (2 * delta),
        "sigma2_hat": float(values[best]) / max(n - s, 1),
        "top_supports": table,
        "tau_hat": empirical_margin(values, supports, best, len(terms)),
    }
    if epsilon is not None and not math.isinf(epsilon):
        out["bound_probability_not_best"] = concentration_bound(len(terms), s, out["tau_hat"], epsilon, delta)
        out["tau_hat_needed"] = margin_needed(len(terms), s, epsilon, delta)
    return out


def empirical_margin(values, supports, best, p) -> float:
    """tau_hat = min_i (R(S^(i)) - R(S_1)) / i over the mistake blocks of every scored support.

    S^(i) is the best support with exactly i members outside S_1 (curator-only; inf when
    s = p and there is no other support).
    """
    inside = np.zeros(p, dtype=bool)
    inside[supports[best]] = True
    mistakes = (~inside[supports]).sum(axis=1)
    margins = [(float(values[mistakes == i].min()) - float(values[best])) / i
               for i in range(1, int(mistakes.max(initial=0)) + 1) if np.any(mistakes == i)]
    return min(margins) if margins else math.inf


def score_all_supports_hinge(data, s, ridge, radius, gap_tolerance, tolerance):
    """(objective, supports, values, worst gap): every support's certified hinge value.

    Values are upper bounds within ``gap_tolerance`` of R_h (SolverError otherwise, naming
    the relative ``tolerance`` option).  Shared by ``exponential``, ``top_r`` and ``mistakes``.
    """
    objective = HingeObjective.from_clipped(data, ridge, radius, gap_tolerance=gap_tolerance)
    candidates = objective.candidates
    supports = enumerate_supports(candidates.size, s)
    values, gaps = objective.values(objective.full_support(candidates[supports]), with_gaps=True)
    worst = float(np.max(gaps))
    if not worst <= gap_tolerance:
        raise SolverError(
            # The achieved gap depends on the data: the message does not quote it.
            f"the hinge objective could not be certified within the configured slack "
            f"(tolerance={tolerance:g} of Delta_h); nothing was released. "
            "Raise tolerance (the mechanism then samples with eps / (1 + 2 tolerance))."
        )
    return objective, supports, values, worst


def hinge_curator_items(objective, candidate_support, data):
    """Curator-only hinge items: loss, response levels, training misclassification of a support,
    the majority-class rate, and a warning when its fit predicts one class for every row
    (:func:`~dpstats.bss.hinge.constant_classifier_diagnostic`)."""
    full = objective.full_support(objective.candidates[np.asarray(candidate_support, dtype=np.int64)])
    solution = objective.solve(full)
    levels = list(data.response_levels) if getattr(data, "response_levels", None) is not None else None
    check = constant_classifier_diagnostic(objective, full, solution.coef)
    items = {"loss": "hinge",
             "response_levels": ", ".join(map(str, levels)) if levels else "n/a",
             "training_misclassification_rate_of_best": check["training_misclassification_rate"],
             "majority_class_rate": check["majority_class_rate"]}
    if check["constant_classifier"]:
        items["constant_classifier_warning"] = check["message"]
    return items


def run_hinge(task) -> MethodOutcome:
    """The exponential mechanism on certified hinge objective values (module docstring)."""
    s = task.size
    data = task.data
    delta = hinge_sensitivity(data.b_x, task.radius, s, data.intercept)
    tau = task.options["tolerance"] * delta
    objective, supports, values, worst = score_all_supports_hinge(data, s, task.ridge, task.radius, tau,
                                                                  task.options["tolerance"])
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
                 "radius": task.radius, "loss": "hinge", "response levels (-1, +1)": levels,
                 "tolerance (tau / Delta_h)": task.options["tolerance"], "tau": tau,
                 "nominal epsilon": nominal},
        parts=parts,
    )
    curator = curator_summary(task.terms, supports, values, logp, delta, data.X.shape[0], s)
    best = int(np.lexsort((np.arange(values.size), values))[0])
    curator.pop("sigma2_hat", None)  # a least-squares quantity
    curator.update(hinge_curator_items(objective, supports[best], data))
    curator["largest_certified_gap"] = worst
    curator["method_detail"] = (f"exact enumeration of C({len(task.terms)}, {s}) = {values.size:,} supports, "
                                "hinge objective values certified within tau")
    return MethodOutcome(support=np.sort(chosen), entries=[entry], curator=curator)


def run(task) -> MethodOutcome:
    if task.options.get("loss") == "hinge":
        return run_hinge(task)
    s = task.size
    objective = RidgeBallObjective(task.stats, task.ridge, task.radius)
    delta = least_squares_sensitivity(task.data.b_x, task.data.b_y, task.radius, s, task.data.intercept)
    supports, values = score_all_supports(objective, s, task, "exponential")
    index = sample_exponential(values, task.epsilon, delta, task.rng)
    chosen = supports[index]
    logp = exponential_log_probabilities(values, task.epsilon, delta)
    entry = LedgerEntry(
        mechanism="exponential mechanism over all supports",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in chosen]},
        details={"sensitivity": delta, "s": s, "n_supports": int(values.size), "ridge": task.ridge,
                 "radius": task.radius, "loss": "least squares"},
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
    options = (
        Integer("max_enumerate", default=DEFAULT_MAX_ENUMERATE, minimum=1,
                doc="largest C(p, s) enumerated; above it use top_r"),
        LOSS_OPTION,
        Real("tolerance", default=None, low=0, high=1, allow_none=True,
             doc=f"hinge loss only: certified solver slack as a fraction of Delta_h (default {DEFAULT_HINGE_TOLERANCE:g})"),
    )

    def check_options(self, options, context):
        if options["tolerance"] is not None and options["loss"] != "hinge":
            raise InvalidArgumentError("tolerance applies to loss='hinge' only (the squared loss is evaluated exactly).")
        if options["loss"] == "hinge" and options["tolerance"] is None:
            options["tolerance"] = DEFAULT_HINGE_TOLERANCE
        return options

    def check_size(self, p, size, options, context):
        check_size(p, size, options)

    def default_radius(self, p, size, options):
        if options.get("loss") == "hinge":
            from .hinge import hinge_default_radius

            return hinge_default_radius(engine=False)
        return 1.0

    def default_ridge(self, n, p, size, options, radius=1.0):
        # Squared loss: every support is scored exactly, no ridge needed.  The hinge loss
        # keeps a small ridge for its certified per-support solves (dpstats.bss.hinge).
        if options.get("loss") == "hinge":
            from .hinge import hinge_default_ridge

            return hinge_default_ridge(n, radius, engine=False)
        return 0.0

    selection_cost = staticmethod(selection_cost)
    response_type = staticmethod(response_type)
    run = staticmethod(run)


METHOD = ExponentialMethod()


def check_options(options, context):
    """The validated options of ``method="exponential"`` (see :class:`ExponentialMethod`)."""
    return METHOD.validate_options(dict(options), context)
