"""The losses of the best-subset methods: what each one brings, declared once.

A :class:`Loss` says everything the methods and the engine need to know about a loss: its
sensitivity, its default radius and ridge, whether its values carry certified solver error
(slack) on every path, the engine source that evaluates it, how to score every support, and
its curator-only items.  :data:`SQUARED` (the ridge-and-ball least-squares objective,
:mod:`dpstats.bss.objective`) and :data:`HINGE` (the hinge objective, :mod:`dpstats.bss.hinge`)
are the two implementations; :func:`loss_of` maps the validated ``loss`` option to one of
them, so no method branches on the option's string.

A bottom module of the best-subset core: methods, the API and planning read these defaults
here, never from each other.
"""
from __future__ import annotations

import math

import numpy as np

from ..method_options import Choice
from .class_weight import class_weights_of_task
from .enumeration import score_all_supports, score_all_supports_hinge
from .gram import EVAL_RELATIVE_ERROR, GramSource, MatrixFreeSource
from .hinge import (HingeObjective, constant_classifier_diagnostic, hinge_default_radius, hinge_default_ridge,
                    hinge_sensitivity)
from .hinge_source import HingeSource
from .objective import RidgeBallObjective, least_squares_sensitivity, squared_loss_sensitivity

#: ``epsilon = inf`` with the squared loss and no radius given: the ball's radius on the mapped scale (coefficients
#: up to 10^6 times the response's range per unit of a term's range). The ball only bounds the private score's
#: sensitivity, and radius 1 cut the least-squares fit on 5 of 23 real data sets (dpstats.method_choice).
NON_PRIVATE_RADIUS = 1e6

#: Ridge per row of the certified engine's default when there are fewer rows than terms:
#: ``ridge="auto"`` is lam = RIDGE_PER_ROW * sqrt(n p) there (:func:`engine_default_ridge`).
#: With at least as many rows as terms the engine's default is the much smaller
#: :func:`engine_default_ridge` = tolerance * Delta / r^2, which leaves the answer alone; and
#: lam = 0 where every support is scored exactly (``exponential``, ``mcmc``, and ``top_r`` /
#: ``mistakes`` on their exact path, :mod:`dpstats.bss.exact_cost`), so that ``epsilon=inf`` there is ordinary
#: least-squares best subset.  n is public under replace-one neighbours, p is the formula's
#: number of terms.
RIDGE_PER_ROW = 0.1


#: Share of tau given to the hinge evaluations (tau_eval); tau_mip = tau - 2 tau_eval.
HINGE_EVAL_SHARE = 0.125
#: Above this many columns the squared-loss engine works matrix-free (:mod:`dpstats.bss.gram`).
MATRIX_FREE_ABOVE = 3000
#: Hinge loss, ``s="auto"``: the fixed sigma0^2 of the size criterion, pen(s) = HINGE_SIZE_VARIANCE k_n s
#: (:mod:`dpstats.bss.model_size`, "Hinge loss").
HINGE_SIZE_VARIANCE = 0.5


def engine_default_ridge(n, p, s, radius, tolerance):
    """``ridge="auto"`` of the squared loss where the certified MIP engine runs.

    n >= p: lam = tolerance * (1 + r sqrt(s))^2 / r^2, so that lam r^2 is at most tau, the
    public slack every certificate of the engine already has (tau = tolerance * Delta, and
    Delta >= (b_y + b_x r sqrt(s))^2 on the terms mapped to [-1, 1] in every intercept mode:
    equal without an intercept, 4 times it when profiled, (b_y + r sqrt(s b_x^2 + v^2))^2 with
    the constant column v in the ball; :func:`~dpstats.bss.objective.squared_loss_sensitivity`).
    Why this leaves the
    answer alone: on the ball ||b|| <= r, for every support S

        R_0(S) <= R_lam(S) <= R_0(S) + lam ||b_0(S)||^2 <= R_0(S) + lam r^2,

    (b_0(S) the ridge-free minimiser: at it the ridge objective is at most R_0 + lam ||b_0||^2),
    so the ridge moves every support's value by at most tau, upwards.  The engine's certified
    best support S_1 (R_lam(S_1) <= min R_lam + tau) then has R_0(S_1) <= min R_0 + 2 tau: the
    answer is the ridge-free least-squares best subset (same radius) unless another support is
    within 2 tau of it, which the certificate could not tell apart at ridge 0 either.  The
    engine needs lam > 0 only for its MILP cuts (slopes -(X_j'a)^2 / lam); its block search
    draws its bounds from the data's own curvature where there is some (the smallest
    eigenvalues of the Schur blocks, and the ball multiplier), which n >= p provides
    (measurements at both defaults: benchmarks/README.md, bench_public.py).

    n < p: lam = RIDGE_PER_ROW * sqrt(n p), as before issue 28.  With fewer rows than terms
    X'X is singular, so every Schur complement over more than n - |T| outside columns has
    smallest eigenvalue 0 and only the ridge bounds a block: at a ridge that leaves the
    answer alone the certificates do not finish (simulate(100, 1000, 5): not in 100 s at
    lam = 10, 4 s at the default 31.6; docs/methods.md).  This ridge can change the answer;
    the curator report says when (``ridge_share_of_diagonal_at_best``,
    ``least_squares_best_support``, ``fit_warnings``), and ``ridge=`` takes any lam > 0.

    Every input is public: n (the input row count), p (the formula's terms), s, the radius
    and the tolerance, so the ridge is too.

    References: Behdin, Prastakos and Mazumder (2024), section 3, used lam = 0.1 n, the
    engine's earlier default.
    """
    n, p = float(n), float(p)
    if n < p:
        return RIDGE_PER_ROW * math.sqrt(n * p)
    r = float(radius)
    return float(tolerance) * least_squares_sensitivity(1.0, 1.0, r, s, intercept=False) / (r * r)


class Loss:
    """What a best-subset method needs to know about its loss (public facts only)."""

    #: the ``loss`` option's value
    name: str
    #: the ledger's ``loss`` detail
    label: str
    #: the response the formula must produce, decided before data access
    response_type: str
    #: values carry certified solver error on every path (the exact path too)
    slack_on_every_path: bool
    #: the engine needs ridge > 0 (its cuts divide by it) unless every support is scored
    needs_engine_ridge: bool
    #: ``s="auto"`` (:mod:`dpstats.bss.model_size`): the size criterion's fixed sigma0^2 in mapped units, or None
    #: when the criterion has a noise scale (``noise_sd`` given, or bought privately: "The noise scale")
    size_criterion_variance: float | None
    #: values are residual sums of squares: the size table's known-variance BIC, Cp and leaps columns and the
    #: curator's sigma2_hat apply; so does the intercept centred by private means (:mod:`dpstats.bss.intercept`)
    least_squares: bool

    def sensitivity(self, data, radius, s) -> float:
        """Delta of the objective over supports of ``s`` candidates (replace-one)."""
        raise NotImplementedError

    def default_radius(self, engine) -> float:
        """``radius=None``; ``engine`` (the MIP engine runs) decided from public inputs only."""
        raise NotImplementedError

    def default_ridge(self, n, p, radius, engine, *, s=None, tolerance=None) -> float:
        """``ridge="auto"`` for ``n`` input rows and ``p`` terms (public); ``s`` and the
        certificate's ``tolerance`` (a fraction of Delta) where the engine runs."""
        raise NotImplementedError

    def response_bound(self, data) -> float:
        """b_y of the retry cap's objective bound n b_y^2 (Behdin et al. 2024, Theorem 1)."""
        raise NotImplementedError

    def exact_value_slack(self, tau) -> float:
        """How far above the objective an exact-path value may lie (scored within tau / 2)."""
        return 0.5 * tau if self.slack_on_every_path else 0.0

    def engine_evaluation_error_bound(self, n_rows) -> float:
        """An upper bound, from the input row count only, on the engine's error of one value
        (``evaluation_error`` of its source), which must stay below tau / 2: 0 where the
        source's error is a share of tau (the hinge loss)."""
        return 0.0

    def non_private_radius_ridge(self, n_rows, p, radius, ridge):
        """(radius, ridge) of an ``epsilon = inf`` call of a certified method, before its path's
        defaults: each as given (None / "auto" where not given, resolved later by the path's own
        defaults).  A loss whose engine path has defaults of its own, chosen for the engine's speed,
        resolves them here to those of the exact path, so that both paths optimise one objective.
        Public inputs only (the input row count ``n_rows``, the number of terms ``p``, the values given)."""
        return radius, ridge

    def non_private_tolerance(self, n_rows, radius):
        """The ``tolerance`` of an ``epsilon = inf`` call that gave none, or None to keep the default:
        the smallest one whose slack still holds the engine's evaluation error twice over on
        the public floor Delta >= (1 + radius)^2 (:func:`dpstats.bss.certified.check_engine_tolerance`),
        so that tau is a few rounding errors of the values, not a share of Delta."""
        bound = self.engine_evaluation_error_bound(n_rows) if n_rows is not None else 0.0
        if bound <= 0.0:
            return None
        return 4.0 * bound / (1.0 + float(radius)) ** 2

    def engine_source(self, task, tau):
        """The engine's source of values, cuts and neighbours for a task (ridge and radius fixed)."""
        raise NotImplementedError

    def score_all_supports(self, task, tau, label):
        """(supports, values) of every support, each value within :meth:`exact_value_slack`."""
        raise NotImplementedError

    def curator_items(self, task, best_support, best_value) -> dict:
        """Curator-only items about the best support's fit."""
        raise NotImplementedError


class SquaredLoss(Loss):
    """The ridge-and-ball least-squares objective R(S) (:mod:`dpstats.bss.objective`)."""

    name = "squared"
    label = "least squares"
    response_type = "numeric"
    slack_on_every_path = False
    needs_engine_ridge = True
    size_criterion_variance = None
    least_squares = True

    def sensitivity(self, data, radius, s):
        return squared_loss_sensitivity(data, radius, s)

    def default_radius(self, engine):
        return 1.0

    def non_private_radius_ridge(self, n_rows, p, radius, ridge):
        # epsilon = inf: least-squares best subset, in a ball that never binds (a radius given stays)
        return (NON_PRIVATE_RADIUS if radius is None else radius), ridge

    def default_ridge(self, n, p, radius, engine, *, s=None, tolerance=None):
        # 0 where every support is scored exactly (epsilon=inf is then ordinary best subset)
        return engine_default_ridge(n, p, s, radius, tolerance) if engine else 0.0

    def response_bound(self, data):
        return data.b_y

    def engine_evaluation_error_bound(self, n_rows):
        # The sources' rounding error is EVAL_RELATIVE_ERROR (y'y + 1) on the mapped
        # response, and |y| <= 1 there on every intercept route (clipped, or centred and
        # clipped), so y'y <= n rows (fewer after omission).
        return EVAL_RELATIVE_ERROR * (float(n_rows) + 1.0)

    def engine_source(self, task, tau):
        if len(task.terms) > MATRIX_FREE_ABOVE:
            if getattr(task.data, "intercept_column", None) is not None:
                # centred by private means: the constant column in the ball (dpstats.bss.intercept)
                return MatrixFreeSource(task.data.design_with_intercept(), task.data.y, task.ridge, task.radius,
                                        intercept=True)
            # A formula intercept is profiled out by implicit centring (no n x p copy).
            return MatrixFreeSource(task.data.X, task.data.y, task.ridge, task.radius,
                                    centre=bool(task.data.intercept))
        return GramSource(task.stats, task.ridge, task.radius)

    def score_all_supports(self, task, tau, label):
        return score_all_supports(RidgeBallObjective(task.stats, task.ridge, task.radius), task.size, task, label)

    def curator_items(self, task, best_support, best_value):
        # The row count without forming the p x p statistics when the engine ran matrix-free.
        n = task._stats.n if task._stats is not None else task.data.n_rows
        return {"sigma2_hat": float(best_value) / max(n - task.size, 1)}


class HingeLoss(Loss):
    """The hinge objective R_h (:mod:`dpstats.bss.hinge`), -1 / +1 response."""

    name = "hinge"
    label = "hinge"
    response_type = "binary"
    slack_on_every_path = True
    needs_engine_ridge = False
    size_criterion_variance = HINGE_SIZE_VARIANCE  # the hinge loss as a negative log-likelihood: pen(s) = k_n s / 2
    least_squares = False

    def sensitivity(self, data, radius, s):
        return hinge_sensitivity(data.b_x, radius, s, data.intercept)

    def default_radius(self, engine):
        return hinge_default_radius(engine=engine)

    def default_ridge(self, n, p, radius, engine, *, s=None, tolerance=None):
        return hinge_default_ridge(n, radius, engine=engine)

    def non_private_radius_ridge(self, n_rows, p, radius, ridge):
        # epsilon = inf: the exact path's defaults (radius 4, ridge 0.01 n / r^2 of the radius in use) on the
        # engine path too; the engine's own (radius 1, ridge 0.1 n) are a device for its speed and gave
        # near-constant classifiers (dpstats.bss.hinge, "Defaults for the hinge loss").  Given values stay.
        if radius is None:
            radius = self.default_radius(engine=False)
        if isinstance(ridge, str) and ridge == "auto":
            ridge = self.default_ridge(n_rows, p, radius, engine=False)
        return radius, ridge

    def response_bound(self, data):
        return 1.0  # b = 0 is feasible and each hinge term is then 1: R_h <= n

    # Class weights (option class_weight, dpstats.bss.class_weight) are public and at most 1,
    # so the sensitivity, the radius and the ridge are those of the unweighted loss; every
    # path below evaluates the weighted objective.
    def engine_source(self, task, tau):
        # values certified within tau_eval = HINGE_EVAL_SHARE * tau (the engine keeps
        # tau_mip = tau - 2 tau_eval)
        return HingeSource.from_clipped(task.data, task.ridge, task.radius, gap_tolerance=HINGE_EVAL_SHARE * tau,
                                        class_weights=class_weights_of_task(task))

    def score_all_supports(self, task, tau, label):
        _, supports, values, _ = score_all_supports_hinge(task.data, task.size, task.ridge, task.radius,
                                                          self.exact_value_slack(tau), task.options["tolerance"],
                                                          class_weights=class_weights_of_task(task))
        return supports, values

    def curator_items(self, task, best_support, best_value):
        objective = HingeObjective.from_clipped(task.data, task.ridge, task.radius,
                                                class_weights=class_weights_of_task(task))
        return {"Delta_h": self.sensitivity(task.data, task.radius, task.size),
                **hinge_curator_items(objective, list(best_support), task.data)}


SQUARED = SquaredLoss()
HINGE = HingeLoss()
#: The losses by the ``loss`` option's value.
LOSSES = {loss.name: loss for loss in (SQUARED, HINGE)}
#: The loss option shared by the best-subset methods.
LOSS_OPTION = Choice("loss", default="squared", choices=tuple(LOSSES),
                     doc="squared (least squares, numeric response) or hinge (sparse classification, two-level response)")


def loss_of(options) -> Loss:
    """The :class:`Loss` of validated method options (squared when the method has no loss option)."""
    return LOSSES[options.get("loss") or "squared"]


def loss_named(value):
    """The :class:`Loss` an unvalidated ``loss`` option value names, or None (anything else: the option's
    validation refuses it later)."""
    return LOSSES.get(value) if isinstance(value, str) else None


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
    if objective.class_weights is not None:
        items["class_weights"] = {"negative": objective.class_weights[0], "positive": objective.class_weights[1]}
        items["weighted_training_misclassification_rate_of_best"] = check["weighted_training_misclassification_rate"]
    if check["constant_classifier"]:
        items["constant_classifier_warning"] = check["message"]
    return items


def resolve_non_private_objective(options, context):
    """``epsilon = inf``: the radius and ridge not given take the defaults of the exact path on
    every path (:meth:`~dpstats.bss.losses.Loss.non_private_radius_ridge`), written into
    ``context["radius"]`` and ``context["ridge"]``, which ``dp_select`` then uses.

    The engine path's own hinge defaults (radius 1, ridge 0.1 n) were chosen for the engine's
    speed and define another objective: at epsilon = inf the engine then returned another support
    than the exact path on the same data (breast cancer's 10 mean_* terms, s = 2:
    mean_concavity + mean_concave_points, a classifier misclassifying 26 % of the rows, against
    mean_perimeter + mean_concave_points, 8.4 %, the exact path's and the brute-force answer).
    With no privacy to buy, the method returns the best support of the objective the exact path
    optimises, whichever path certifies it.  Public inputs only (the input row count, p, the
    options and the values given); a radius or ridge given stays as given."""
    radius, ridge = loss_of(options).non_private_radius_ridge(context.get("n_rows"), context.get("n_candidates"),
                                                               context.get("radius"), context.get("ridge"))
    context["radius"], context["ridge"] = radius, ridge
