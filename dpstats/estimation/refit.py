"""``fit.estimate(...)``: refit the selected terms privately, with its own ledger entry.

Order of work, as in ``dp_select`` (``help(dpstats.api)``), so that a refused call charges
nothing and no data value decides for free whether it fails:

1. every argument is checked from its value alone (epsilon, delta, method, level, number
   of bootstrap draws, random_state, accountant), and everything public about the
   selection: that it kept what a refit needs (a result of ``dp_select``), that its loss
   was least squares (a hinge-loss selection is refused, naming ``loss``), that the
   formula has a response, that the model is not empty, and the public ranges (the
   selection's ``bounds_used``; ``bounds=`` for ``kendall`` and ``dpvote``, which have
   none, checked against the selected terms and the response);
2. an accountant, if given, is asked whether (epsilon, delta) fits under the estimate's
   neighbouring relation, then charged;
3. only then are data values read: the selection's design is evaluated again on the same
   data with the same formula, design plan and ``na_action`` (so the same rows), the
   selected columns are clipped and mapped by the ranges, and the augmented Gram matrix
   is released by :mod:`dpstats.estimation.adassp`;
4. post-processing: the coefficients, their mapping to the data's units, and the
   parametric bootstrap (:mod:`dpstats.estimation.bootstrap`).

Neighbours.  The AdaSSP release is (epsilon, delta)-DP under replace-one *and* add/remove
neighbours with the same budget (its sensitivities cover both,
``help(dpstats.estimation.adassp)``).  Its ledger entry and charge use the selection's
relation when it is one of these two (replace one record for the best-subset and
screening methods; add or remove one record for ``kendall``, so a kendall accountant takes
the estimate without any conversion) and replace-one record after ``dpvote``: the estimate
is record-level, not machine-level, DP, so an accountant kept for dpvote's
machine-level relation refuses it before the charge.  Nothing the estimate does depends
on the row count except through the noisy count it releases.
"""
from __future__ import annotations

import math
import numbers

from ..errors import InvalidArgumentError, InvalidTypeError
from ..privacy.accountant import Accountant
from ..privacy.ledger import ADD_REMOVE, REPLACE_ONE, Ledger, LedgerEntry
from ..privacy.randomness import RandomSource
from . import adassp
from . import bootstrap as boot
from .design import augmented_gram_of, selection_ranges
from .result import EstimateResult, check_level, original_units_map

METHODS = ("adassp",)

MECHANISM = "AdaSSP: noisy augmented Gram matrix and smallest eigenvalue of the selected terms"


def _check_epsilon(epsilon):
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise InvalidTypeError(f"epsilon must be a positive number; got {epsilon!r}.")
    epsilon = float(epsilon)
    if math.isnan(epsilon) or epsilon <= 0:
        raise InvalidArgumentError(f"epsilon must be a positive number (or math.inf for the non-private fit); "
                                   f"got {epsilon!r}.")
    return epsilon


def _check_delta(delta, epsilon):
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise InvalidTypeError(f"delta must be a number in [0, 1); got {delta!r}.")
    delta = float(delta)
    if math.isnan(delta) or not 0 <= delta < 1:
        raise InvalidArgumentError(f"delta must be in [0, 1) (0: Laplace noise, pure epsilon-DP; > 0: Gaussian "
                                   f"noise, well below 1 / n); got {delta!r}.")
    return 0.0 if math.isinf(epsilon) else delta


def _check_draws(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidTypeError(f"bootstrap must be an integer number of draws; got {value!r}.")
    if value < 2:
        raise InvalidArgumentError(f"bootstrap must be >= 2 draws (1000 is the default); got {value}.")
    return int(value)


def _relation(selection_neighbours):
    """The estimate's neighbouring relation (module docstring)."""
    return selection_neighbours if selection_neighbours in (REPLACE_ONE, ADD_REMOVE) else REPLACE_ONE


def _public_checks(fit, *, epsilon, delta, method, bounds, random_state, accountant, level, draws):
    """Stage 1: everything public; returns what the later stages need."""
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, epsilon)
    if method not in METHODS:
        raise InvalidArgumentError(f"method must be one of {list(METHODS)}; got {method!r}.")
    level = check_level(level)
    draws = _check_draws(draws)
    rng = random_state if isinstance(random_state, RandomSource) else RandomSource(random_state)
    if accountant is not None and not isinstance(accountant, Accountant):
        raise InvalidTypeError(f"accountant must be a dpstats.Accountant; got {type(accountant).__name__}.")
    ctx = getattr(fit, "_refit", None)
    if not ctx:
        raise InvalidArgumentError(
            "this result does not carry what a refit needs (the data, formula and design of its selection); "
            "estimate() works on the result of dpstats.dp_select.")
    plan = ctx["plan"]
    if ctx["response_type"] == "binary":
        raise InvalidArgumentError(
            "estimate() fits least squares; this selection used loss='hinge' (classification), whose response is "
            "coded -1 / +1. Select with the squared loss (the default loss) to estimate coefficients.")
    if plan.response is None:
        raise InvalidArgumentError("estimate() needs a formula with a response (y ~ ...); this selection's formula "
                                   "has none (the sparse-mean model of dpvote).")
    if ctx["bounds_used"] is not None and bounds is not None:
        raise InvalidArgumentError(
            "bounds= is only for selections without bounds (kendall, dpvote); this selection's ranges "
            "(release()['bounds_used']) are used, so that the refit clips the same data the selection did.")
    if ctx["bounds_used"] is None and bounds is None:
        raise InvalidArgumentError(
            f"method {fit.method!r} selects without clipping, but estimate() needs public ranges: give "
            "bounds={term: (lower, upper)} for every selected term and the response (from a codebook or domain "
            "knowledge, never from the data), or a pair (b_x, b_y).")
    selected = list(fit.support)
    if not selected and not plan.intercept:
        raise InvalidArgumentError("the selection is empty and the formula has no intercept: there is no "
                                   "coefficient to estimate.")
    ranges = selection_ranges(plan, selected, ctx["bounds_used"], bounds)
    return epsilon, delta, level, draws, rng, ctx, plan, selected, ranges


def estimate_after_selection(fit, *, epsilon, delta=0.0, method="adassp", bounds=None, random_state=None,
                             accountant=None, level=0.95, bootstrap=boot.DEFAULT_DRAWS) -> EstimateResult:
    """Private coefficients, intervals and predictions for the terms ``fit`` selected.

    See :meth:`dpstats.results.SelectionResult.estimate` and the module docstring.
    """
    epsilon, delta, level, draws, rng, ctx, plan, selected, ranges = _public_checks(
        fit, epsilon=epsilon, delta=delta, method=method, bounds=bounds, random_state=random_state,
        accountant=accountant, level=level, draws=bootstrap)
    relation = _relation(ctx["neighbours"])
    label = f"estimate(method={method!r}) after dp_select(method={fit.method!r})"
    formula = ctx["formula"] if isinstance(ctx["formula"], str) else None
    if accountant is not None:  # checks the budget and the relation first; refuses without charging
        accountant.charge(epsilon, delta, label=label, neighbours=relation, method=method, formula=formula)
    # From here on the data's values are read; a failure keeps the charge.
    columns = [plan.terms.index(t) for t in selected]
    m, d = len(selected) + 2, len(selected) + (1 if plan.intercept else 0)
    spec = adassp.calibrate(epsilon, delta, m, d)
    G = augmented_gram_of(ctx["data"], plan, columns, ranges)
    rel = adassp.release(G, plan.intercept, spec, rng)
    del G  # nothing below may read the exact statistics
    theta, lam = adassp.fit_release(rel)
    draws_theta = boot.draws(rel, theta, draws, rng)
    ledger = Ledger(caveats=list(getattr(plan, "caveats", [])))
    if rng.seeded:
        ledger.caveat("seeded: reproducible, not for release")
    ledger.add(LedgerEntry(
        mechanism=MECHANISM + (f" ({spec.kind} noise)" if spec.kind != "none" else ""),
        epsilon=epsilon, delta=delta, neighbours=relation,
        caveats=(() if relation == ctx["neighbours"] else
                 (f"record-level guarantee ({relation}); the selection's was {ctx['neighbours']}",)),
        released={"columns": ["(1)"] + list(selected) + [plan.response], **rel.to_dict()},
        details=spec.details()))
    public_call = {"method": method, "epsilon": "inf" if math.isinf(epsilon) else epsilon, "delta": delta,
                   "level": level, "bootstrap": draws, "selection_method": fit.method, "formula": formula,
                   "selected": list(selected)}
    call = (f"estimate(method = \"{method}\", epsilon = {_show(epsilon)}, delta = {_show(delta)}, "
            f"level = {_show(level)}) after {fit.call}")
    rows_public = getattr(plan, "n_rows_input", None) if relation == REPLACE_ONE else None
    return EstimateResult(call=call, formula=ctx["formula"], response=plan.response, terms=selected, theta=theta,
                          affine=original_units_map(ranges, plan.intercept), boot_theta=draws_theta, ridge=lam,
                          spec=spec, release=rel, ledger=ledger, plan=plan, ranges=ranges, level=level,
                          public_call=public_call, rows_public=rows_public)


def _show(x):
    return "inf" if math.isinf(x) else f"{x:g}"
