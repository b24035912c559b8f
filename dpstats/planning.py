"""Planning before the data: the chance of recovering the true support, from public inputs only.

``plan(method=..., n=..., p=..., s=..., epsilon=..., design=dict(rho=..., r2=..., spread=...))``
predicts, for a *planned* design, the probability that a ``dp_select`` call returns the
true support, by simulation with dpstats' own mechanisms:

1. ``reps`` data sets are drawn with :func:`dpstats.simulate` (the private best-subset
   papers' design: Toeplitz covariance rho^|j - k|, coefficients 1/sqrt(s) on s terms,
   the realised signal-to-noise ratio ``snr``);
2. on each, ``dp_select("y ~ .", ..., signs=False)`` runs the chosen method with the
   planned parameters;
3. each call contributes a number q_i in [0, 1] with E[q_i | data] = the probability that
   the call returns the true support on these data:

   * **exact** where the fit's curator holds the mechanism's own output probability of the
     true support (:func:`truth_probability`): the top-R list of ``top_r`` (exact and
     certified-engine paths) and ``exponential``; the mistakes blocks (a block's probability
     over its size) or, when ``mistakes``' guard ran top-R, that list; the canonical
     Lipschitz top-k's probability of the non-private top k (``dp_sis``, when that set is the
     true one).  q_i is that probability;
   * **empirical** otherwise (the truth not listed, ``kendall``'s whole calls, the other methods):
     q_i = 1 if the call returned the true support, else 0.

   * **approximate** from :data:`dpstats.plan_model.MODEL_MIN_TERMS` planned terms on, for
     the methods that offer a model of their statistics (``kendall``, ``dp_sis``, ``top_r``,
     ``mistakes``;
     :meth:`dpstats.methods.SelectionMethod.planning_model`): no call is made; the terms near
     the true ones are simulated, the others' statistics drawn from their normal
     approximation, and q_i is the mechanism's probability of the true support on them
     (:mod:`dpstats.plan_model`); ``plan(..., exact=True)`` simulates whole calls instead.

   Exact and empirical q_i are unbiased, so mixing them per data set is too; the exact values
   remove the mechanism's own noise.  ``exact_share`` in :attr:`Plan.table` is the share of
   data sets whose q_i was a probability; ``computed`` is "exact", "mixed", "empirical" or
   "approximate".

4. The prediction is mean(q_i).  Its 95 % Monte Carlo interval is a Student t interval
   of the mean when some q_i are exact and the Wilson score interval for counts only;
   both describe the simulation error only.

**Units.**  ``dp_select`` maps every term and the response by its public range: a value
x with range (c - h, c + h) becomes (x - c) / h in [-1, 1], and the mechanisms see only the
mapped values.  So what a plan needs from the user's units is how much of its range each
variable fills, stated as ``design["spread"]``: the public ranges span +-``spread`` standard
deviations of the data on each side of their centre (h = spread * sd; the meaning that
``method="auto"`` and :func:`dpstats.compare` give ``spread``, :mod:`dpstats.method_choice`).
A plan simulates standardised terms (standard deviation 1) and gives its calls the bounds
(spread, spread_y * sd(y)), sd(y) the simulated response's standard deviation
(:func:`dpstats.simulate.response_sd`) and ``design["spread_y"]`` the response's own spread
(default ``spread``).  That is the same as simulating in the user's units
with the user's ranges: rescaling a term to a + b x with the range (a - b spread, a + b spread)
leaves its mapped values unchanged, hence every call's output and every probability
(``tests/test_plan_units.py`` checks it at the same seeds).  It assumes the data sit in the
middle of their ranges; with an intercept, data off the centre change only what is clipped.
On real data the documented ranges span many standard deviations (1.2-10 on each side for the
median term, 1.3-46 for the response, on the 12 data sets of ``benchmarks/bench_plan_units.py``):
the mapped effects are that many times smaller, and squared-loss score gaps shrink by the square.
The response's range is often much wider than the terms' (0/1 terms have ranges of 1-2 standard
deviations, an income or a price 10-46): with one spread for both, a plan agreed with the measured
probability on 13 of 24 (data set, epsilon) cells there, with the response's own ``spread_y`` on 22.

**The response.**  A plan simulates the response its planned call needs (:func:`planned_response`,
:func:`check_family`): a continuous one (``simulate``'s family "gaussian") for the squared loss and
the other methods, and a binary one (family "binomial": y = 1 where the latent score x'beta* + noise
is positive, coded 0/1) for the hinge loss (``loss="hinge"``, also from ``plan(like=fit)``), whose
calls read two levels only: a continuous response would fail that check on every row and make
each call a uniform pick.  ``design["family"] = "gaussian"`` with the hinge loss is refused before
any simulation.  The hinge loss's response needs no range (``dp_select`` codes it -1 / +1 and
does not clip it), so only the terms' ``spread`` matters (the simulated pair's b_y = 1 is not
used).  ``family="binomial"`` with the squared loss (a linear probability model) is planned too:
the 0/1 response, of standard deviation 1/2, gets by default its natural public range (0, 1)
(``spread_y`` = 1; a stated ``spread_y`` counts its standard deviations) and is simulated centred,
y - 1/2, with b_y = spread_y / 2, which maps it as ``dp_select`` maps the 0/1 response with that
range.  With family "binomial", ``r2`` (``snr``) is that of the latent score.

The effect is ``design["r2"]``, the model's population R^2 (or ``snr``, the signal's variance
over the noise's, :func:`dpstats.simulate`; snr = r2 / (1 - r2)).  Without ``spread`` or
``bounds``, a method with ranges gets ``spread = 4`` (:data:`DEFAULT_SPREAD`: +-4 standard
deviations clip 0.006 % of a normal, so the default does not clip the simulated design).
``bounds=`` still sets the simulated bounds directly (the former default (1, 1) clipped a
third of the simulated terms, and more of the response).  ``plan(like=fit)`` plans a
follow-up of a ``dp_select`` call from its public call only (:func:`_public_call_of`).

The data sets are those of ``simulate(n, ..., random_state=data_seed)``, one data seed per
replication; the first rows of each seed's X are drawn once and kept for every point
(:class:`dpstats.simulate.NestedDraws`, at most 512 MB for all seeds), and the calls run
inside :func:`dpstats.light_curator.light_curator`, which leaves out curator
summaries that a plan does not read.  Neither changes any value.

Nothing here touches user data (there is no data argument), spends budget (no
accountant; the internal calls' ledgers are discarded) or is released: a plan is a
function of public inputs.  Seeded by ``random_state``: the same seeds are used at every
point of a grid (common random numbers), so differences along a grid are smooth.

``Plan.required_n(target)`` / ``Plan.required_epsilon(target)`` search: they bracket the
target by doubling (halving) from the planned value, then evaluate inside the bracket
until its ends are within 10 %, and interpolate a logistic curve in log n (log epsilon)
between them, after making the predictions non-decreasing (pool-adjacent-violators).
The search runs first on a third of the seeds (a pilot); the two points the answer is
read from then get all ``reps`` and the search resumes from them.  Where the curve is flat
near the target, those two points get more data sets (up to 4 ``reps``) until the answer's
estimated Monte Carlo error is within ``precision`` (:attr:`Plan.answers` keeps it).
Where the planned call's defaults switch to private means at a public n or epsilon (recovery can fall
there), each stretch between switches is searched as its own curve, lowest first
(:meth:`Plan.regime`).
Recovery against n at a fixed epsilon is a steep sigmoid (the exponential-type mechanisms'
log-odds grow about linearly in n epsilon), so a linear interpolation between points a
factor 2 apart missed the crossing by up to a third; benchmarks/bench_plan_calibration.py
compares the predictions with direct simulations.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from ._lazy import lazy_module
from .display import MissingPlotDependencyError, _pyplot  # noqa: F401  (re-exported)
from .errors import InvalidArgumentError, InvalidTypeError
from .method_options import Boolean, Custom, Integer, Later, Real, is_integer, validate_arguments
from .plan_search import DEFAULT_PRECISION, RequiredSearch
from .plan_text import PlanText
from .plan_units import DEFAULT_SPREAD, auto_design, spread_bounds
from .simulate import snr_of_r2

stats = lazy_module("scipy.stats")  # imported on first use (dpstats._lazy)


#: dp_select arguments that plan sets itself or refuses (a plan has no data and no budget).
_REFUSED = ("data", "formula", "accountant", "random_state", "estimate", "na_action", "infer_levels", "method",
            "epsilon", "s", "bounds", "verbose")
_DESIGN_KEYS = ("rho", "r2", "snr", "spread", "spread_y", "family", "link")
#: The design a plan assumes where the user states nothing (no data: these are assumptions).
_DESIGN_DEFAULTS = {"rho": 0.1, "snr": 5.0}
_COLUMNS = ["n", "epsilon", "probability", "lower", "upper", "power", "fdr", "exact_share", "reps", "computed"]


def _positive_int(name, value, minimum=1):
    return Integer(name, argument=True, minimum=minimum).check(value)


def _positive_real(name, value):
    return Real(name, argument=True, low=0.0).check(value)


def _probability(name, value):
    return Real(name, argument=True, low=0.0, high=1.0).check(value)


def _grid(name, values, check):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidTypeError(f"{name} must be a sequence of values; got {values!r}.")
    out = sorted({check(name, v) for v in values})
    if len(out) < 2:
        raise InvalidArgumentError(f"{name} needs at least two distinct values; got {values!r}.")
    return out


def _check_design(design):
    """``design=`` checked from its value alone: the keys given, validated (no defaults yet:
    :func:`_resolved_design` adds them, since ``spread`` depends on the method and ``bounds``)."""
    if design is None:
        return {}
    if not isinstance(design, dict):
        raise InvalidTypeError(f"design must be a dict with keys among {list(_DESIGN_KEYS)}; got {design!r}.")
    unknown = sorted(set(design) - set(_DESIGN_KEYS))
    if unknown:
        raise InvalidArgumentError(f"design has unknown keys {unknown}; it accepts {list(_DESIGN_KEYS)}.")
    if "r2" in design and "snr" in design:
        raise InvalidArgumentError("design takes r2 or snr, not both: they state the same effect "
                                   "(snr = r2 / (1 - r2)); got both.")
    out = dict(design)
    if "rho" in out:
        out["rho"] = Real("design['rho']", argument=True, low=-1.0, high=1.0).check(out["rho"])
    if "snr" in out:
        out["snr"] = _positive_real("design['snr']", out["snr"])
    if "r2" in out:
        out["r2"] = Real("design['r2']", argument=True, low=0.0, high=1.0).check(out["r2"])
    if "spread" in out:
        out["spread"] = _positive_real("design['spread']", out["spread"])
    if "spread_y" in out:
        out["spread_y"] = _positive_real("design['spread_y']", out["spread_y"])
    if out.get("family", "gaussian") not in ("gaussian", "binomial"):
        raise InvalidArgumentError(f"design['family'] must be 'gaussian' or 'binomial'; got {out['family']!r}.")
    if out.get("link", "sign") not in ("sign", "logistic"):
        raise InvalidArgumentError(f"design['link'] must be 'sign' or 'logistic'; got {out['link']!r}.")
    return out


def planned_response(meth, options) -> str:
    """The planned call's response kind (:data:`dpstats.plan_units.RESPONSES`), from public inputs: the method's loss
    (``meth.response_type``, "binary" for the hinge loss) given its ``loss`` option as planned (an
    unknown value counts as the default; ``dp_select`` refuses it in the planned calls).  Call
    :func:`check_family` for the design's family."""
    from .bss.losses import LOSS_OPTION, loss_named

    if "loss" not in {option.name for option in meth.options}:
        return "continuous"
    loss = loss_named(options.get("loss", LOSS_OPTION.default)) or loss_named(LOSS_OPTION.default)
    return "binary" if meth.response_type({"loss": loss.name}) == "binary" else "continuous"


def check_family(stated, response):
    """The response kind for the stated design (``design["family"]``) and the planned loss, refusing,
    before any simulation, a family that cannot give the loss's response: the hinge loss needs a
    binary response, which ``simulate``'s family "binomial" gives (the default of a hinge-loss plan);
    family "gaussian" would give a continuous response whose every row the hinge loss refuses.  The
    squared loss takes either family (with "binomial", a linear probability model: "0/1")."""
    family = stated.get("family")
    if response == "binary":
        if family is not None and family != "binomial":
            raise InvalidArgumentError(
                f"design['family'] = {family!r} simulates a continuous response, but the planned call's loss='hinge' "
                "needs a binary one (every simulated row would fail its two-level check, and each call would be a "
                "uniform pick): leave design['family'] out (a hinge-loss plan simulates family='binomial') or give "
                "design['family']='binomial'; for a continuous response plan the squared loss.")
        return "binary"
    return "0/1" if family == "binomial" else "continuous"


def _resolved_design(given, *, needs_bounds, bounds_given, response="continuous"):
    """The design a plan simulates: the user's keys, the defaults for the others (rho 0.1,
    snr 5, and family "binomial" for a binary response: the hinge loss), snr from r2 when r2 is
    given, and ``spread`` (default :data:`DEFAULT_SPREAD`) for a method with ranges whose bounds
    are not given directly."""
    out = {**_DESIGN_DEFAULTS, **({"family": "binomial"} if response == "binary" else {}), **given}
    if "r2" in given:
        out["snr"] = snr_of_r2(given["r2"])
    if needs_bounds and not bounds_given and "spread" not in out:
        out["spread"] = DEFAULT_SPREAD
    order = [k for k in _DESIGN_KEYS if k in out]
    return {k: out[k] for k in order}


def _seed_root(random_state):
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2**63)))
    if not is_integer(random_state) or random_state < 0:
        raise InvalidTypeError(f"random_state must be None, a non-negative int or a numpy Generator; "
                               f"got {random_state!r}.")
    return np.random.SeedSequence(int(random_state))


def truth_probability(method, curator, truth, p, options):
    """P(the call returns ``truth`` | these data), read from a fit's curator, or None: the method's
    own :meth:`~dpstats.methods.SelectionMethod.truth_probability` (the top-R list of ``top_r``
    and ``exponential``, the mistakes blocks or the guard's top-R fallback, the canonical Lipschitz
    top-k's probability of the non-private top k of ``dp_sis``).  None when the truth is not among
    them or the method lists none: the caller then counts whether the call returned the truth."""
    from .methods import get_method

    return get_method(method).truth_probability(curator, truth, p, options)


#: Memory for the rows of X that a plan keeps between points (:meth:`Plan._simulate`):
#: 512 MB, e.g. the first 2236 rows of 30 data sets at p = 1000, 223 at p = 10^4.
_DRAWS_BYTES = 1 << 29


#: ``plan``'s default bounds: (spread, spread * sd(y)) for a method that clips, from ``design["spread"]``
#: (default :data:`DEFAULT_SPREAD`); none for one that does not (kendall, dpvote).
DEFAULT_BOUNDS = "default"


def _check_method_name(value):
    from .methods import get_method

    return get_method(value).name  # a non-string or an unknown name: a dpstats error with the list


def _check_signs(value):
    from .api import _check_signs as check

    check(value)
    return value  # passed to dp_select as given


def _check_like(value):
    from .results import SelectionResult

    if not isinstance(value, SelectionResult):
        raise InvalidTypeError(f"like must be a dp_select result (its public call is planned again); got "
                               f"{type(value).__name__}.")
    return value


#: ``plan``'s own arguments, each checked from its value alone by one validator
#: (:func:`dpstats.method_options.validate_arguments`); the rules that involve several
#: (``s0`` with ``s="auto"``, p > 2s - 1, bounds for the method, ``bounds`` or ``spread``,
#: what ``like`` gives) follow in :func:`plan`, and ``**select_options`` are checked by
#: ``dp_select`` (its arguments and the method's options).  method, n, p, s and epsilon are
#: required unless ``like`` gives them.
PLAN_ARGUMENTS = (
    Custom("method", argument=True, allow_none=True, check_value=_check_method_name,
           accepted="a registered method name or 'auto'",
           doc="the planned dp_select method ('auto': the one dp_select's auto would take; None: like's)"),
    Integer("n", argument=True, minimum=2, allow_none=True, doc="planned rows (None: like's, when public)"),
    Integer("p", argument=True, minimum=1, allow_none=True, doc="candidate terms (None: like's)"),
    Integer("s", argument=True, minimum=1, keywords=("auto",), allow_none=True,
            doc="true support size (selection size; None: like's)"),
    Real("epsilon", argument=True, low=0.0, allow_inf=True, allow_none=True,
         doc="budget of the planned call (None: like's)"),
    Later("bounds", argument=True, default=DEFAULT_BOUNDS, allow_none=True, keywords=(DEFAULT_BOUNDS,),
          checked_by="dp_select in the planned calls (and plan's rule for methods without bounds)",
          doc="simulated clipping bounds of the planned call (default: from design['spread'])"),
    Custom("design", argument=True, check_value=lambda v: _check_design(v),
           accepted=f"None or a dict with keys among {list(_DESIGN_KEYS)}",
           doc="simulated design: rho, r2 or snr, spread (None: defaults)"),
    Integer("reps", argument=True, default=100, minimum=2, doc="simulated data sets per point"),
    Custom("random_state", argument=True, check_value=lambda v: _seed_root(v),
           accepted="None, a non-negative integer or a numpy Generator", doc="seed"),
    Real("level", argument=True, default=0.95, low=0.0, high=1.0, doc="Monte Carlo interval level"),
    Custom("signs", argument=True, default=None, allow_none=True, check_value=_check_signs,
           accepted="True, False or a budget share in (0, 1)",
           doc="passed to dp_select (None: False, or like's sign share)"),
    Integer("s0", argument=True, minimum=1, allow_none=True, doc="true size with s='auto'"),
    Custom("like", argument=True, allow_none=True, check_value=_check_like,
           accepted="None or a dp_select result", doc="plan a follow-up of this fit's public call"),
    Boolean("exact", argument=True, default=False,
            doc="simulate whole calls even where the method offers a model of its statistics"),
    Boolean("verbose", argument=True, default=False, doc="print a line per evaluated point"),
)

#: ``release()["call"]`` keys that ``plan(like=fit)`` passes to the planned calls as they are.
_LIKE_PASSED = ("radius", "ridge", "R")


def _public_call_of(fit):
    """What ``plan(like=fit)`` reads from a fit: its public call only.

    ``fit.release()["call"]`` (the method, epsilon, the size, the sign step's share, radius,
    ridge, R and the method's options as the call resolved them, and n where the input row
    count is public: replace-one neighbours) and the candidate terms ``fit.terms`` (the
    formula on the data's public schema; p is their number) and whether the formula has an
    intercept.  Never the curator's values, the released support or the data: the user
    states the design (``rho``, ``r2`` or ``snr``, ``spread``), which is not public.  The
    fit's ranges are in the user's units; the plan simulates standardised data, so they are
    replaced by the stated ``spread`` (module docstring, "Units"), except ``bounds="auto"``
    (private ranges), which the planned calls use too.
    """
    from .mechanisms.signs import SIGNS_SHARE

    call = fit.release()["call"]
    size_key = "s" if "s" in call else "k"
    size = call.get(size_key)
    if isinstance(size, str):
        raise InvalidArgumentError(
            f"plan(like=fit) plans calls with a given size; this fit chose its size privately ({size_key}={size!r}). "
            "Plan it by hand: plan(method=..., s='auto', s0=<true size>, s_max=..., ...).")
    epsilon = call["epsilon"]
    epsilon = math.inf if epsilon == "inf" else float(epsilon)
    share = call.get("signs_share")
    signs = False if not share else (True if share == SIGNS_SHARE else float(share))
    bounds = call.get("bounds")
    options = {k: call[k] for k in _LIKE_PASSED if k in call}
    options.update(call.get("options") or {})
    from .api import _PER_ROW_TEXT

    hidden = sorted(k for k, v in options.items() if isinstance(v, str) and v == _PER_ROW_TEXT)
    if hidden:
        raise InvalidArgumentError(f"plan(like=fit): the fit's options {hidden} hold one value per row, which is not "
                                   "public; plan this call by hand.")
    return {"method": call["method"], "n": call.get("n"), "p": len(fit.terms), "s": int(size), "epsilon": epsilon,
            "signs": signs, "bounds": "auto" if bounds == "auto" else None if bounds is None else "ranges",
            "options": options, "intercept": bool(fit.intercept)}


def plan(*, method=None, n=None, p=None, s=None, epsilon=None, bounds=DEFAULT_BOUNDS, design=None, reps=100,
         random_state=None, level=0.95, signs=None, s0=None, like=None, exact=False, verbose=False,
         **select_options) -> "Plan":
    """Predicted probability that ``dp_select`` returns the true support, for a planned design.

    Parameters
    ----------
    method : str
        A ``dp_select`` method.  ``"exponential"`` and ``"top_r"`` on its exact path give
        exact per-data-set probabilities; the others an empirical frequency (module docstring).
        ``"auto"`` plans the method ``dp_select(method="auto")`` would take for this call, from
        public inputs only (:func:`dpstats.method_choice.choose_method` on the planned design, as
        :func:`dpstats.compare` reads it: ``rho``, ``spread``, ``r2`` or ``snr``; whether the call has
        ranges, i.e. unless ``bounds=None``; epsilon, p and s); the printout names the method and why.
    n, p, s : int
        Planned rows, candidate terms and true support size (the selection asks for s
        terms); the design needs 2s - 1 < p (:func:`dpstats.simulate`).  ``s="auto"`` plans
        a call that chooses the size privately (``s_max`` and the size options go to
        ``select_options``); the design's true size is then ``s0``.
    s0 : int, optional
        With ``s="auto"``: the true support size of the simulated design.
    epsilon : float
        Budget of the planned call.
    design : dict, optional
        What the plan assumes about the data (nothing here is public; state what you know
        from a pilot, earlier studies or the literature):

        * ``rho`` (default 0.1): Toeplitz correlation rho^|j - k| of the terms;
        * ``r2``: the model's population R^2, in (0, 1) (with ``family="binomial"``, of the
          latent score); or ``snr`` (default 5, an R^2 of 5/6), the signal's variance over the
          noise's (:func:`dpstats.simulate`); give one, snr = r2 / (1 - r2);
        * ``spread``: the public ranges span +-``spread`` standard deviations of the data on
          each side of their centre, for every term (h = spread * sd for a range (c - h,
          c + h); the meaning of ``method="auto"`` and :func:`dpstats.compare`);
        * ``spread_y``: the same for the response (default ``spread``; a documented response
          range, an income or a price, often spans many more of its standard deviations than
          0/1 terms do; a 0/1 response, family "binomial" with the squared loss: default 1, its
          range (0, 1); not used by the hinge loss, whose response has no range).  ``dp_select`` maps each variable by its range, so simulating
          standardised data with the bounds (spread, spread_y * sd(y)) is the same as simulating in your units
          with your ranges (module docstring, "Units").  Default :data:`DEFAULT_SPREAD` = 4
          (clips 0.006 % of a normal); ignored by methods without ranges (``kendall``,
          ``dpvote``).  Codebook ranges are often 3-10 times the data's standard deviation:
          a plan with too small a spread is optimistic;
        * ``family`` and ``link`` of :func:`dpstats.simulate`.  Default: "gaussian" (a continuous
          response), and "binomial" (a binary response, link "sign") for a hinge-loss call
          (``loss="hinge"``), which needs one: "gaussian" with the hinge loss is refused.
          "binomial" with the squared loss plans a linear probability model, the 0/1 response
          with its range (0, 1) unless ``spread_y`` says otherwise (module docstring, "The response").
    bounds : as in ``dp_select``, optional
        The simulated bounds directly (kept for earlier code; the simulated terms have
        standard deviation 1, so ``(1, 1)`` clips a third of them).  Default: from
        ``design["spread"]`` and ``design["spread_y"]``; none for a method that uses no bounds.
        Giving ``bounds`` with either is an error.
    verbose : bool, default False
        Print one line per evaluated point (its n, epsilon, prediction, data sets and the time
        so far): a search on a flat curve can simulate several hundred data sets per point.
        Plans use no data, so the lines are not curator-only.
    exact : bool, default False
        True: simulate whole calls even where the method offers a model of its statistics
        (``kendall``, ``dp_sis``, ``top_r`` and ``mistakes`` from
        :data:`dpstats.plan_model.MODEL_MIN_TERMS` planned terms on: near terms simulated, far
        terms' statistics drawn; :mod:`dpstats.plan_model`).
    like : a ``dp_select`` result, optional
        Plan a follow-up of this fit's call from its public call only (``fit.release()["call"]``
        and its candidate terms, :func:`_public_call_of`): method, n (where the row count is
        public; else give ``n=``), p, s, epsilon, the sign step's share, radius, ridge, R and
        the method's options as the call resolved them.  Arguments given here replace the
        fit's (e.g. ``epsilon=4`` for a larger budget, ``ridge="auto"`` to let a default
        follow a new n).  ``design`` must state ``rho``, ``r2`` (or ``snr``) and, for a
        method with ranges, ``spread``: they are not public and are never read from the fit
        (nor its curator values or data).  Calls with a private size (``s="auto"``) are
        planned by hand.
    reps : int, default 100
        Simulated data sets per evaluated point.
    random_state : None, int or numpy.random.Generator
    level : float, default 0.95
        Level of the Monte Carlo interval.
    signs : bool or float, optional
        Passed to ``dp_select`` (default False, or the fit's share with ``like``): with
        ``signs=True`` the selection has 90 % of epsilon, as in a call that also releases signs.
    **select_options
        Other ``dp_select`` arguments of the planned call (``R``, ``radius``, ``ridge``,
        method options such as ``max_enumerate``, ``loss``).  There is no data argument:
        a plan never sees user data and spends no budget.

    Returns
    -------
    Plan
        Its printout states the assumptions: the design, the ranges' spread and the bounds
        simulated, and the method.
    """
    from .methods import get_method

    refused = sorted(set(select_options) & set(_REFUSED))
    if refused:
        raise InvalidArgumentError(f"plan does not accept {refused}: a plan uses public inputs only, simulates its "
                                   "own data and spends no budget.")
    if "k" in select_options:  # dp_select's other name for the size (screening methods): the planned size s
        select_options = dict(select_options)
        k = select_options.pop("k")
        if s is not None and k is not None and k != s:
            raise InvalidArgumentError(f"give s= only (the planned size); s={s!r} and k={k!r} disagree.")
        s = s if s is not None else k
    given = dict(method=method, n=n, p=p, s=s, epsilon=epsilon, bounds=bounds, design=design, reps=reps,
                 random_state=random_state, level=level, signs=signs, s0=s0, like=like, exact=exact,
                 verbose=verbose)
    bounds_given = not (isinstance(bounds, str) and bounds == DEFAULT_BOUNDS)
    like_bounds, intercept, public = None, True, None
    auto = isinstance(given["method"], str) and given["method"] == "auto"
    if auto and like is not None:
        raise InvalidArgumentError("plan(like=fit) plans the fit's own method again; method='auto' chooses one for a "
                                   "new call: leave method out, or plan(method='auto', n=..., p=..., s=..., "
                                   "epsilon=...) without like.")
    if like is not None:
        _check_like(like)
        public, select_options = _fill_from_like(like, given, select_options)
        like_bounds, intercept = public["bounds"], public["intercept"]
    missing = [name for name in ("method", "n", "p", "s", "epsilon") if given[name] is None]
    if missing:
        raise InvalidTypeError(f"plan needs {', '.join(missing)} (or like=fit, a dp_select result whose public call "
                               "gives them).")
    args = validate_arguments(PLAN_ARGUMENTS, {**given, "method": None} if auto else given)
    choice = None
    if auto:  # the method dp_select(method="auto") would take for this planned call (public inputs only)
        args["method"], select_options, bounds, bounds_given, choice = _resolve_auto(args, select_options, bounds,
                                                                                     bounds_given)
    method = args["method"]
    meth = get_method(method)
    stated = args["design"]
    response = check_family(stated, planned_response(meth, select_options))  # before any simulation
    if like is not None:
        _check_like_design(meth, stated, like_bounds, bounds_given)
        if like_bounds == "auto" and not bounds_given:
            bounds, bounds_given = "auto", True  # the fit bought private ranges: so do the planned calls
    bounds = _given_bounds(meth, method, bounds, bounds_given, stated)
    n, p, select_s = args["n"], args["p"], args["s"]
    s = _true_size(select_s, args["s0"], p)
    check_simulable(n, p)
    design = _resolved_design(stated, needs_bounds=meth.needs_bounds, bounds_given=bounds_given, response=response)
    if meth.needs_bounds and not bounds_given:
        bounds = spread_bounds(p, s, design["rho"], design["snr"], design["spread"], design.get("spread_y"),
                               response=response)
    signs = False if args["signs"] is None else args["signs"]
    model = None if args["exact"] else meth.planning_model(p, s, design, bounds=bounds, signs=signs,
                                                           auto_size=select_s == "auto", options=dict(select_options),
                                                           intercept=intercept)
    return Plan(method=method, n=n, p=p, s=s, epsilon=args["epsilon"], bounds=bounds, design=design,
                reps=args["reps"], seed=args["random_state"], level=args["level"], signs=signs,
                options=dict(select_options), select_s=select_s, intercept=intercept, model=model,
                like=None if like is None else {"n_public": public["n"] is not None},
                default_spread=meth.needs_bounds and not bounds_given and "spread" not in stated,
                verbose=args["verbose"], response=response, method_choice=choice)


def _resolve_auto(args, select_options, bounds, bounds_given):
    """``plan(method="auto")``: (method, select options, bounds, bounds_given, the choice) as
    ``dp_select(method="auto")`` resolves the planned call (:func:`dpstats.method_choice.choose_method`,
    public inputs only): from the planned design (its defaults included, as in :func:`dpstats.compare`
    and the plan's printout), whether the planned call has ranges (it does unless ``bounds=None``),
    epsilon, p and s.  ``auto`` takes no method option (``loss="hinge"`` is refused with the methods
    that take it); bounds given for a method that uses none are dropped, as ``dp_select`` does."""
    from .api import DP_SELECT_ARGUMENTS
    from .method_choice import NON_PRIVATE_RADIUS, choose_method, chosen_options, refuse_auto_options
    from .methods import get_method
    from .privacy.bounds import check_bounds

    arguments = {a.name for a in DP_SELECT_ARGUMENTS}
    refuse_auto_options({k: v for k, v in select_options.items() if k not in arguments})
    if bounds_given and bounds is not None:
        bounds = check_bounds(bounds, required=False)  # a pair becomes a tuple of floats
    has_ranges = not (bounds_given and bounds is None)
    stated = args["design"]
    design = {**_DESIGN_DEFAULTS, **stated}
    if "r2" in stated:
        design["snr"] = snr_of_r2(stated["r2"])
    select_s, epsilon = args["s"], args["epsilon"]
    size = select_s if is_integer(select_s) else None
    name, reason = choose_method(bounds_given=has_ranges, design=auto_design(design, bounds if bounds_given else None),
                                 epsilon=epsilon, p=args["p"], s=size, auto_size=select_s == "auto")
    meth = get_method(name)
    options = {**chosen_options(name, size), **select_options}
    if "radius" in meth.uses and "radius" not in options and math.isinf(epsilon):
        options["radius"] = NON_PRIVATE_RADIUS  # as dp_select: least squares in a ball that never binds
    if not meth.needs_bounds:
        bounds, bounds_given = DEFAULT_BOUNDS, False  # dp_select drops them too
    return name, options, bounds, bounds_given, {"method": name, "reason": reason}


def _fill_from_like(like, given, select_options):
    """plan(like=fit): the arguments not given, from the fit's public call (``given`` updated in place);
    returns (the public call, the select options with the fit's resolved ones first)."""
    public = _public_call_of(like)
    for name in ("method", "n", "p", "s", "epsilon", "signs"):
        if given[name] is None:
            given[name] = public[name]
    if given["n"] is None:
        raise InvalidArgumentError(
            f"plan(like=fit): the fit's row count is not public (method {public['method']!r} protects adding or "
            "removing a record); give n=, the rows you plan for.")
    select_options = {**public["options"], **select_options}
    for key in sorted(set(select_options) & set(_REFUSED)):  # resolved values the call records but plan sets itself
        select_options.pop(key)
    return public, select_options


def _check_like_design(meth, stated, like_bounds, bounds_given):
    """plan(like=fit) states the design itself: it is not public, so it is never read from the fit."""
    needed = ["rho", "r2 (or snr)"] + (["spread"] if meth.needs_bounds and like_bounds == "ranges"
                                      and not bounds_given else [])
    have = {"rho": "rho" in stated, "r2 (or snr)": "r2" in stated or "snr" in stated, "spread": "spread" in stated}
    absent = [k for k in needed if not have[k]]
    if absent:
        raise InvalidArgumentError(
            f"plan(like=fit) needs design= stating {', '.join(absent)}: the design is not public, so it is not "
            "read from the fit (spread: how many of the data's standard deviations the public ranges span on "
            "each side; r2: the model's R^2, e.g. from a pilot).")


def _given_bounds(meth, method, bounds, bounds_given, stated):
    """The simulated bounds the user gave (checked), None for a method without bounds, or the
    default marker when they follow from the design's spread."""
    if bounds_given and ("spread" in stated or "spread_y" in stated) and meth.needs_bounds:
        key = "spread" if "spread" in stated else "spread_y"
        raise InvalidArgumentError(
            f"give bounds= or design['{key}'], not both: spread and spread_y set the simulated bounds (spread, "
            f"spread_y * sd(y)); got bounds={bounds!r} and design['{key}']={stated[key]!r}.")
    if not meth.needs_bounds:
        if bounds_given and bounds is not None:
            raise InvalidArgumentError(f"method {method!r} uses no bounds (it needs no clipping); do not pass "
                                       "bounds= to plan for it.")
        return None
    if bounds_given and bounds is not None:
        from .privacy.bounds import check_bounds

        return check_bounds(bounds, required=False)  # a pair becomes a tuple of floats; a bad form is refused here
    return bounds


def _true_size(select_s, s0, p):
    """The simulated design's true support size: s, or s0 with s="auto"; it needs 2s - 1 < p."""
    if select_s == "auto":
        if s0 is None:
            raise InvalidArgumentError("plan(s='auto') needs s0=, the true support size of the planned design.")
        s = s0
    else:
        if s0 is not None:
            raise InvalidArgumentError("s0 applies to plan(s='auto') only; with an integer s the true size is s.")
        s = select_s
    if 2 * s - 1 >= p:
        raise InvalidArgumentError(f"p must exceed 2s - 1 = {2 * s - 1} (the true support is x1, x3, ..., "
                                   f"x{2 * s - 1}); got p={p}.")
    return s


#: The largest simulated data set a plan (or dpstats.compare) draws: n p values of 8 bytes.
MAX_SIMULATED_BYTES = 4 << 30


def check_simulable(n, p):
    """Refuse, before anything is allocated, a design whose simulated X would not fit
    (:data:`MAX_SIMULATED_BYTES`); a plan searching larger n stops at the same limit."""
    need = int(n) * int(p) * 8
    if need > MAX_SIMULATED_BYTES:
        raise InvalidArgumentError(
            f"n = {n} rows by p = {p} terms is {need / 2**30:.3g} GiB of simulated data per data set, above the "
            f"{MAX_SIMULATED_BYTES / 2**30:g} GiB a plan simulates; plan a smaller n (the predicted probability "
            "changes slowly with n at this size: use required_n on a smaller grid).")


class Plan(PlanText):
    """A planned design and its predicted recovery probabilities (public inputs only).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per evaluated point: ``n``, ``epsilon``, ``probability`` (predicted),
        ``lower`` / ``upper`` (Monte Carlo interval), ``power`` (mean share of the true terms
        a call returns) and ``fdr`` (mean share of a call's returned terms that are not true, 0
        when it returns none: the false discovery rate, the measure of a method with
        false-discovery-rate control), ``exact_share`` (share of data sets
        whose probability was exact), ``reps`` (simulated data sets: all for the planned point
        and the points a search read its answer from, the pilot's third for the others) and
        ``computed`` ("exact", "mixed", "empirical" or "approximate").
    probability, interval : the prediction at the planned n and epsilon.
    answers : dict
        (axis, target) -> {"value", "error", "reps", "precision"}: each :meth:`required_n` /
        :meth:`required_epsilon` answer with the estimated standard error of its log (None where
        the first evaluated point already reached the target) and the data sets at the two
        points it was read from.
    truth : list of str
        The true support of the planned design.
    """

    #: the planned call's response (:data:`dpstats.plan_units.RESPONSES`; set per plan, this default for
    #: plans pickled before it)
    response = "continuous"
    #: ``plan(method="auto")``'s choice (set per plan; None for plans pickled before it)
    method_choice = None

    def __init__(self, *, method, n, p, s, epsilon, bounds, design, reps, seed, level, signs, options, select_s=None,
                 intercept=True, like=None, default_spread=False, model=None, verbose=False, response="continuous",
                 method_choice=None):
        self.method, self.n, self.p, self.s, self.epsilon = method, n, p, s, epsilon
        #: ``plan(method="auto")``: {"method", "reason"}, the method auto chose for the planned call; else None.
        self.method_choice = method_choice
        #: The planned call's response (:data:`dpstats.plan_units.RESPONSES`): "continuous", "binary" (the
        #: hinge loss) or "0/1" (family binomial with the squared loss, simulated centred as y - 1/2).
        self.response = response
        #: None (whole calls simulated), or the method's model of its statistics (:meth:`dpstats.methods.
        #: SelectionMethod.planning_model`), used from a public size on unless ``plan(..., exact=True)``.
        self.model = model
        #: The planned calls' formula: with an intercept unless ``like``'s formula had none.
        self.formula = "y ~ ." if intercept else "y ~ . - 1"
        #: None, or what ``like=fit`` gave (the plan's printout says so).
        self.like = like
        self._default_spread = default_spread
        self.select_s = s if select_s is None else select_s
        self.bounds, self.design, self.reps, self.level = bounds, design, reps, level
        self.signs, self.options = signs, options
        self.truth = [f"x{j}" for j in range(1, 2 * s, 2)]
        # One (data seed, mechanism seed) pair per replication, shared by every grid point.  A
        # search may ask for more at the points its answer is read from (plan_search, "precision"):
        # they are spawned later from the same root, so the first ``reps`` never change.
        self._seed_root = seed
        self._seeds = []
        self._spawn_seeds(reps)
        self._rows = {}
        #: (axis, target) -> {"value", "error", "reps", "precision"}: each required_n / required_epsilon answer, the
        #: estimated standard error of its log (None where it was read off a first point or none
        #: reached the target) and the data sets at the points it was read from
        self.answers = {}
        self._values = {}  # (n, epsilon) -> (q, exact, power, fdp) of the first len(q) seeds
        self._draws = {}  # data seed -> NestedDraws: the rows of X drawn so far, shared by every point
        self.verbose = verbose
        self._started = time.perf_counter()
        self.evaluate_point(n, epsilon)

    def _spawn_seeds(self, count):
        """Extend the (data seed, mechanism seed) pairs to ``count`` (the root's next children)."""
        extra = int(count) - len(self._seeds)
        if extra > 0:
            self._seeds += [tuple(int(x) for x in child.generate_state(2, dtype=np.uint32))
                            for child in self._seed_root.spawn(extra)]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_draws"] = {}  # kept rows are a cache (up to _DRAWS_BYTES): drawn again when needed
        return state

    # -- computation -----------------------------------------------------------------------
    @property
    def computed(self) -> str:
        """"exact" where the mechanism's own probabilities are averaged, else "empirical": the
        method's :meth:`~dpstats.methods.SelectionMethod.planning_kind`, declared before any
        simulation.  What each evaluated point actually averaged is the table's ``computed``
        and ``exact_share`` (:func:`truth_probability` reads more methods' curators)."""
        from .methods import get_method

        if self.model is not None:
            return self.model.kind
        return get_method(self.method).planning_kind(self.p, self.s, self.options, auto_size=self.select_s == "auto")

    def simulate_one(self, n, epsilon, data_seed, mech_seed):
        """(q, exact, power, fdp) for one simulated data set: the fit itself (and its ledger) is dropped here.

        q is the mechanism's own probability of returning the truth on these data when the
        fit's curator determines it (:func:`truth_probability`), else 1 if the call returned
        the truth and 0 otherwise; either way E[q | data] is the probability of recovery on
        these data, so mean(q) is unbiased (the exact values have the smaller variance).
        power and fdp are the call's own: the share of the true terms it returned, and the
        share of its returned terms that are not true (0 when it returns none), whose means are
        the power and the false discovery rate (the measures of ``method="bh"``).
        """
        from .api import dp_select
        from .light_curator import light_curator
        from .methods import get_method

        if self.model is not None and self.model.applies(n, epsilon):
            check_simulable(n, self.model.near)
            return self.model.simulate_one(n, epsilon, data_seed, mech_seed)
        sim = self._simulate(n, data_seed)
        meth = get_method(self.method)
        # a method whose mechanism makes its own signs takes no signs= (dp_select refuses one)
        signs = {} if meth.sign_step().native else {"signs": self.signs}
        with light_curator():  # curator summaries read by no one here are left out (same support, same q)
            fit = dp_select(self.formula, sim.data, method=self.method, epsilon=epsilon, s=self.select_s,
                            bounds=self.bounds, random_state=mech_seed, **signs, **self.options)
        truth = frozenset(self.truth)
        returned = frozenset(fit.support)
        power = len(returned & truth) / len(truth)
        fdp = len(returned - truth) / len(returned) if returned else 0.0
        q = meth.truth_probability(fit.curator, truth, self.p, self.options, exact=self.computed == "exact")
        if q is None:
            return float(returned == truth), 0.0, power, fdp
        return q, 1.0, power, fdp

    def _simulate(self, n, data_seed):
        """``simulate(n, p, s, ..., random_state=data_seed)`` (the same data set), drawing the
        first rows of X once for all points: the seed's :class:`~dpstats.simulate.NestedDraws`,
        each keeping as many rows as :data:`_DRAWS_BYTES` allows for ``reps`` data sets.  A "0/1"
        response (family binomial, squared loss) is centred, y - 1/2, in the middle of its range
        as the terms are in theirs (:func:`spread_bounds`); a "binary" one (the hinge loss) is kept 0/1."""
        check_simulable(n, self.p)  # a search may reach sizes the planned n did not
        from .simulate import NestedDraws

        draws = self._draws.get(data_seed)
        if draws is None:
            d = self.design
            # the first ``reps`` seeds share _DRAWS_BYTES; seeds a search added beyond them keep no rows
            first = any(data_seed == a for a, _ in self._seeds[:self.reps])
            keep = _DRAWS_BYTES // (8 * self.p * self.reps) if first else 0
            draws = self._draws[data_seed] = NestedDraws(
                self.p, self.s, seed=data_seed, rho=d["rho"], snr=d["snr"], family=d.get("family", "gaussian"),
                link=d.get("link", "sign"), max_rows=keep)
        sim = draws.simulate(n)
        if self.response == "0/1":  # centred in its range (0, 1), as the terms sit in theirs (spread_bounds)
            sim.data["y"] = sim.data["y"] - 0.5
        return sim

    def evaluate_point(self, n, epsilon, reps=None):
        """The row of (n, epsilon) from the first ``reps`` seeds (default the plan's ``reps``;
        more are spawned when asked for): a point seen with fewer seeds is extended by the
        missing ones only, so its row equals that of a point evaluated with ``reps`` seeds at
        once."""
        key = (int(n), float(epsilon))
        reps = self.reps if reps is None else int(reps)
        self._spawn_seeds(reps)
        done = self._values.get(key, (np.empty(0),) * 4)
        if key in self._rows and done[0].size >= reps:
            return self._rows[key]
        new = np.array([self.simulate_one(key[0], key[1], a, b) for a, b in self._seeds[done[0].size:reps]]).reshape(-1, 4)
        q, exact, power, fdp = (np.concatenate([old, new[:, j]]) for j, old in enumerate(done))
        self._values[key] = (q, exact, power, fdp)
        reps = len(q)
        mean, share = float(q.mean()), float(exact.mean())
        if share > 0:
            se = float(q.std(ddof=1)) / math.sqrt(reps) if reps > 1 else math.inf
            half = stats.t.ppf(0.5 + self.level / 2, reps - 1) * se if reps > 1 else math.inf
            lower, upper = mean - half, mean + half
        else:
            z = stats.norm.ppf(0.5 + self.level / 2)
            k = q.sum()
            centre = (k + z * z / 2) / (reps + z * z)
            half = z * math.sqrt(k * (reps - k) / reps + z * z / 4) / (reps + z * z)
            lower, upper = centre - half, centre + half
            shrunk = (k + 1) / (reps + 2)  # never 0 for counts of 0 or reps
            se = math.sqrt(shrunk * (1 - shrunk) / reps)
        computed = (self.model.kind if self.model is not None and self.model.applies(*key) else
                    "exact" if share == 1 else "empirical" if share == 0 else "mixed")
        row = {"n": key[0], "epsilon": key[1], "probability": mean, "lower": float(max(0.0, lower)),
               "upper": float(min(1.0, upper)), "power": float(power.mean()), "fdr": float(fdp.mean()),
               "exact_share": share, "reps": reps, "computed": computed, "se": se}
        self._rows[key] = row
        if self.verbose:
            print(f"[plan] n = {key[0]}, epsilon = {key[1]:g}: predicted P = {mean:.3f} from {reps} data sets, "
                  f"elapsed {time.perf_counter() - self._started:.1f} s", flush=True)
        return row

    # -- results ---------------------------------------------------------------------------
    @property
    def table(self) -> pd.DataFrame:
        rows = sorted(self._rows.values(), key=lambda r: (r["epsilon"], r["n"]))
        return pd.DataFrame(rows, columns=_COLUMNS)

    @property
    def probability(self) -> float:
        return self._rows[(self.n, self.epsilon)]["probability"]

    @property
    def interval(self) -> tuple:
        row = self._rows[(self.n, self.epsilon)]
        return float(row["lower"]), float(row["upper"])

    def evaluate(self, *, n_grid=None, epsilon_grid=None) -> pd.DataFrame:
        """Predict at every n of ``n_grid`` (at the planned epsilon) or every epsilon of
        ``epsilon_grid`` (at the planned n); the rows join :attr:`table` and are returned."""
        if (n_grid is None) == (epsilon_grid is None):
            raise InvalidArgumentError("give exactly one of n_grid and epsilon_grid.")
        if n_grid is not None:
            grid = _grid("n_grid", n_grid, lambda name, v: _positive_int(name, v, minimum=2))
            rows = [self.evaluate_point(v, self.epsilon) for v in grid]
        else:
            grid = _grid("epsilon_grid", epsilon_grid, lambda name, v: _positive_real(name, v))
            rows = [self.evaluate_point(self.n, v) for v in grid]
        return pd.DataFrame(rows, columns=_COLUMNS)

    # -- regimes: where the planned call's defaults change with n or epsilon ---------------
    def regime(self, n, epsilon):
        """The public choices the planned call's defaults make at (n, epsilon): the squared-loss
        intercept ("centred" or "profiled", :func:`dpstats.bss.intercept.resolved_intercept`)
        and the method's own switches (:meth:`~dpstats.methods.SelectionMethod.planning_regime`:
        DP-SIS's centring and scale).  Each flips once, from the free choice to private means, as n
        or epsilon grows; recovery can fall at the flip (benchmarks/README.md, "plan
        calibration": top_r at p = 1000, s = 3, epsilon 4 recovers with probability 1.000
        at n = 4900 and 0.833 at n = 5100, the intercept centred from 5005; dp_sis under
        its former limit 0.999 at n = 4039 and 0.002 at 4040), so the search treats each
        stretch between flips as its own monotone curve."""
        from .bss.intercept import resolved_intercept
        from .bss.losses import LOSS_OPTION, loss_named
        from .mechanisms.signs import SIGNS_SHARE
        from .methods import get_method
        from .privacy.bounds import AUTO_BOUNDS_SHARE

        meth = get_method(self.method)
        share = 0.0 if self.signs is False or meth.sign_step().native else (
            SIGNS_SHARE if self.signs is True else float(self.signs))
        if isinstance(self.bounds, str) and self.bounds == "auto" and meth.needs_bounds:
            share += AUTO_BOUNDS_SHARE
        # the selection's epsilon, as dp_select splits it (a size stage with s="auto" is not modelled)
        eps = epsilon if math.isinf(epsilon) else epsilon * (1.0 - share)
        names = {option.name for option in meth.options}
        out = []
        loss = loss_named(self.options.get("loss", LOSS_OPTION.default))  # as given: None for a value refused later
        if "means_share" in names and loss is not None and loss.least_squares:
            out.append(resolved_intercept(self.options, intercept=True, n=n, p=self.p, epsilon=eps))
        out.extend(meth.planning_regime(n, self.p, self.options, eps))
        return tuple(out)

    def regimes(self, axis, span):
        """The stretches of ``axis`` inside ``span`` on which :meth:`regime` is constant
        (:meth:`dpstats.plan_search.RequiredSearch.regimes`)."""
        return RequiredSearch(self).regimes(axis, span)

    def _required(self, axis, target, grid, precision):
        target = _probability("target", target)
        if precision is not None:
            precision = Real("precision", argument=True, low=0.0, high=1.0).check(precision)
        search = RequiredSearch(self, precision)
        value = search.run(axis, target, grid)
        self.answers[(axis, target)] = {"value": value, "error": search.error, "reps": search.deciding,
                                        "precision": precision}
        return value

    def required_n(self, target=0.8, n_grid=None, precision=DEFAULT_PRECISION):
        """The smallest n at which the predicted probability reaches ``target`` (at the planned epsilon).

        Without ``n_grid``: from the planned n, doubles (halves) n until the target is
        bracketed, then evaluates inside the bracket until its ends are within 10 % and
        interpolates a logistic curve in log n between them.  With ``n_grid``: the grid
        gives the bracket, refined the same way.  Predictions are made non-decreasing in n
        (pool-adjacent-violators) first.  Rounded up to an integer.  Returns the smallest
        evaluated n when it already reaches the target (the answer is then "at most" it);
        None when no evaluated n does (give a wider grid).  Every evaluated point joins
        :attr:`table` (typically 5 to 9 points; the table's ``reps`` says how many simulated
        calls each had: all ``reps`` for the planned point and the two the answer is read
        from, a third of them for the search's other points).

        ``precision`` (default 0.05; None turns it off): the Monte Carlo standard error of
        log(answer), about its relative standard error, that the search aims for.  Where the
        recovery curve is flat near the target the two points the answer is read from get
        more simulated data sets (as many as the error estimate asks for, up to 4 times
        ``reps``) until the estimated error is within it
        (:class:`dpstats.plan_search.RequiredSearch`).  :attr:`answers` keeps
        each answer with its estimated error, and the printout shows them.
        """
        value = self._required("n", target, n_grid, precision)
        return None if value is None else int(math.ceil(value - 1e-9))

    def required_epsilon(self, target=0.8, epsilon_grid=None, precision=DEFAULT_PRECISION):
        """The smallest epsilon at which the predicted probability reaches ``target`` (at the
        planned n); the same search as :meth:`required_n`, in log epsilon, with the same
        ``precision``."""
        if epsilon_grid is None and math.isinf(self.epsilon):
            raise InvalidArgumentError("epsilon_grid is needed when the planned epsilon is inf.")
        return self._required("epsilon", target, epsilon_grid, precision)

    def _axis(self):
        t = self.table
        return "n" if t["n"].nunique() >= t["epsilon"].nunique() else "epsilon"

    def _default_grid(self, axis):
        if axis == "n":
            return sorted({max(2, int(round(self.n * f))) for f in (0.25, 0.5, 1, 2, 4, 8)})
        if math.isinf(self.epsilon):
            raise InvalidArgumentError("plot(axis='epsilon') needs grid= when the planned epsilon is inf.")
        return [self.epsilon * 2.0**k for k in range(-2, 5)]

    def plot(self, ax=None, axis=None, grid=None):
        """Predicted recovery probability against n (or epsilon): a curve with its interval band.

        ``axis`` is "n" or "epsilon" (default: the one with more evaluated points); the
        other is held at its planned value.  ``grid``: the values of ``axis`` to draw
        (evaluated now when not in :attr:`table`).  Without it, points already evaluated
        (by :meth:`evaluate`, :meth:`required_n`, ...) are drawn, and when there are fewer
        than three, the default grid of :meth:`required_n` (:meth:`required_epsilon`) is
        evaluated first: ``reps`` simulated calls per new point.  The planned point is
        marked.  Returns the matplotlib Axes (needs ``pip install "dpstats[plots]"``).
        """
        plt = _pyplot()
        axis = axis or self._axis()
        if axis not in ("n", "epsilon"):
            raise InvalidArgumentError(f"axis must be 'n' or 'epsilon'; got {axis!r}.")
        other = "epsilon" if axis == "n" else "n"
        if grid is not None:
            self.evaluate(**{f"{axis}_grid": grid})
        else:
            t = self.table
            if (t[other] == getattr(self, other)).sum() < 3:
                self.evaluate(**{f"{axis}_grid": self._default_grid(axis)})
        t = self.table
        t = t[t[other] == getattr(self, other)].sort_values(axis)
        if grid is not None:
            wanted = {float(v) for v in grid}
            t = t[t[axis].astype(float).isin(wanted)]
        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
        x = t[axis].to_numpy(dtype=float)
        ax.fill_between(x, t["lower"], t["upper"], alpha=0.25, label=f"{self.level:.0%} Monte Carlo interval")
        ax.plot(x, t["probability"], marker="o", label="predicted P(true support)")
        planned = float(getattr(self, axis))
        if planned in set(x):
            ax.scatter([planned], [self.probability], s=90, facecolors="none", edgecolors="black", zorder=3,
                       label=f"planned {axis} = {planned:g}")
        if len(x) > 1 and x.max() / x.min() >= 4:
            ax.set_xscale("log")
            ax.set_xticks(x, [f"{v:g}" for v in x], minor=False)
            ax.set_xticks([], minor=True)
        ax.set_xlabel(axis)
        ax.set_ylabel("P(returns the true support)")
        ax.set_ylim(0, 1.02)
        ax.set_title(f"plan: {self.method}, p = {self.p}, s = {self.s}, "
                     + (f"epsilon = {self.epsilon:g}" if axis == "n" else f"n = {self.n}"), fontsize=9)
        ax.legend(loc="lower right", fontsize=8)
        return ax

    def __repr__(self):
        return (f"<Plan method={self.method!r} n={self.n} epsilon={self.epsilon:g} "
                f"probability={self.probability:.3f}>")
