"""The parts shared by the certified best-subset methods, ``top_r`` and ``mistakes``.

Their options and public defaults, the choice between the exact path (every support scored,
C(p, s) <= ``max_enumerate``) and the certified engine (:mod:`dpstats.bss.engine`), the
engine for a task, and the exact scores.  Both methods import these from here, never from
each other; what depends on the loss comes from its :class:`~dpstats.bss.losses.Loss`.
"""
from __future__ import annotations

import numpy as np
from scipy.special import comb

from ..errors import InvalidArgumentError
from ..method_options import Integer, Real
from ..methods import SIGNS_FROM_SELECTION_FIT, SelectionMethod
from .engine import OuterApproximationEngine
from .enumeration import CERTIFIED_MAX_ENUMERATE, check_enumeration_memory, log_n_supports, n_supports
from .intercept import INTERCEPT_OPTIONS, check_intercept_options
from .losses import HINGE, LOSS_OPTION, loss_of

DEFAULT_TOLERANCE = 5e-4
#: Exact-path limits: the squared loss's, and the hinge loss's (a certified hinge value
#: costs about 1 ms at n = 500, so 2000 supports take about 2-3 seconds).
DEFAULT_MAX_ENUMERATE = CERTIFIED_MAX_ENUMERATE
DEFAULT_MAX_ENUMERATE_HINGE = HINGE.default_max_enumerate


# ---------------------------------------------------------------- options and public defaults
#: Options shared by the certified best-subset methods (top_r and mistakes).
CERTIFIED_OPTIONS = (
    Real("tolerance", default=DEFAULT_TOLERANCE, low=0, high=0.1, high_open=False,
         doc="certified solver slack tau as a fraction of Delta; the mechanism samples with eps / (1 + 2 tolerance) "
             "so that it spends exactly eps"),
    Integer("max_enumerate", default=None, minimum=1, allow_none=True,
            doc=f"exact enumeration up to this many supports (default {DEFAULT_MAX_ENUMERATE:,}; "
                f"{DEFAULT_MAX_ENUMERATE_HINGE:,} with the hinge loss)"),
    LOSS_OPTION,
) + INTERCEPT_OPTIONS


def check_certified_options(options, ridge):
    """Cross-option rules shared by top_r and mistakes (public values only)."""
    check_intercept_options(options, options["loss"])
    if options["max_enumerate"] is None:
        options["max_enumerate"] = loss_of(options).default_max_enumerate
    return options


def uses_exact_path(p, s, options):
    """Every support is scored (C(p, s) <= max_enumerate): public inputs only."""
    n_sup = n_supports(p, s)
    return n_sup is not None and n_sup <= options["max_enumerate"]


def certified_default_radius(p, s, options):
    """``radius=None`` for top_r and mistakes: the loss's default for the path that runs
    (1 for the squared loss; with the hinge loss :func:`dpstats.bss.hinge.hinge_default_radius`,
    4 where every support is scored exactly, 1 where the MIP engine runs).  Public inputs only."""
    return loss_of(options).default_radius(engine=not uses_exact_path(p, s, options))


def certified_default_ridge(n, p, s, options, radius=1.0):
    """``ridge="auto"`` for top_r and mistakes: 0 on the exact path (squared loss, C(p, s) <=
    max_enumerate), where every support is scored exactly; where the MIP engine runs,
    :func:`dpstats.bss.losses.engine_default_ridge` (lam r^2 at most the certificate's tau when
    n >= p, so the answer stays the ridge-free one; RIDGE_PER_ROW * sqrt(n p) when n < p); with
    the hinge loss :func:`dpstats.bss.hinge.hinge_default_ridge`.  Public inputs only."""
    tolerance = options.get("tolerance")
    return loss_of(options).default_ridge(n, p, radius, engine=not uses_exact_path(p, s, options), s=s,
                                          tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance)


def check_certified_size(p, s, options, context, name):
    """The certified engine needs ridge > 0 or the exact path; refused before the charge."""
    n_sup = int(comb(p, s, exact=True)) if log_n_supports(p, s) < 40 else None
    if (context.get("ridge") == 0 and loss_of(options).needs_engine_ridge
            and (n_sup is None or n_sup > options["max_enumerate"])):
        raise InvalidArgumentError(
            f"method={name!r} with ridge=0 needs exact enumeration (C(p, s) <= max_enumerate): the certified engine's "
            "bounds need ridge > 0. Use a positive ridge (the default 'auto' gives 0.1 n there, more when n < p) or raise "
            "max_enumerate.")
    if n_sup is not None and n_sup <= options["max_enumerate"]:
        check_enumeration_memory(n_sup, s, f"method={name!r}")


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
        # lexicographic enumeration order breaks ties (a fixed public rule)
        self.order = np.lexsort((np.arange(self.values.size), self.values))

    def top(self, R):
        idx = self.order[:R]
        return [tuple(int(j) for j in self.supports[k]) for k in idx], self.values[idx]

    def mistakes(self, anchor):
        anchor = set(anchor)
        in0 = np.zeros(self.p, dtype=bool)
        in0[list(anchor)] = True
        count = (~in0[self.supports]).sum(axis=1)
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

    def default_radius(self, p, size, options):
        return certified_default_radius(p, size, options)

    def default_ridge(self, n, p, size, options, radius=1.0):
        return certified_default_ridge(n, p, size, options, radius)

