"""``fit.estimate(...)``: refit the selected terms privately, with its own ledger entry.

Order of work, as in ``dp_select`` (``help(dpstats.api)``), so that a refused call charges
nothing and no data value decides for free whether it fails:

1. every argument is checked from its value alone (epsilon, delta, method, level, number
   of bootstrap draws, random_state, accountant), and everything public about the
   selection: that it kept what a refit needs (a result of ``dp_select``), that the
   formula has a response, that the model is not empty, and the public ranges (the
   selection's ``bounds_used``; ``bounds=`` for ``kendall`` and ``dpvote``, which have
   none, checked against the selected terms and the response) for the methods that need
   ranges (``Estimator.needs_bounds``; the Tukey-depth mechanism needs none and refuses
   ``bounds=``); then the chosen method's own public checks (:class:`Estimator.check`):
   AdaSSP refuses a hinge-loss selection (naming ``loss``) and ``radius``; objective
   perturbation refuses ``delta > 0`` and checks ``radius``; the Tukey-depth mechanism
   refuses ``delta = 0``, a hinge-loss selection, ``radius`` and a Dask DataFrame, and
   converts the budget to its add/remove guarantee (below); an unpickled result whose
   selection had an accountant needs ``accountant=`` (:mod:`dpstats.estimation.follow_up`),
   checked before ``data=`` is looked at;
2. an accountant, if given, is asked whether (epsilon, delta) fits under the estimate's
   neighbouring relation, then charged;
3. only then are data values read, by the method's release (:class:`Estimator.release`):
   the selection's design is evaluated again on the same data with the same formula,
   design plan and ``na_action`` (so the same rows), the selected columns are clipped and
   mapped by the ranges (not for the Tukey-depth mechanism, which reads them as evaluated,
   in original units), and the mechanism runs (:mod:`dpstats.estimation.adassp`,
   :mod:`dpstats.estimation.objective_perturbation`, :mod:`dpstats.estimation.tukey`);
4. post-processing: the coefficients, their mapping to the data's units, and the
   intervals (:mod:`dpstats.estimation.intervals`, through :mod:`dpstats.estimation.bootstrap`);
5. the estimate's ledger entries are appended to the selection's ledger as a follow-up
   query (:mod:`dpstats.estimation.follow_up`; in full if stage 3 or 4 failed).

After the charge no error message may quote a data value or a count.  A new method is a
subclass of :class:`Estimator` registered in ``ESTIMATORS``: its ``check`` runs in stage 1,
its ``release`` in stage 3.

Neighbours.  AdaSSP and objective perturbation are private under replace-one *and*
add/remove neighbours with the same budget (``help(dpstats.estimation.adassp)``,
``help(dpstats.estimation.objective_perturbation)``).  The ledger entry and charge use the
selection's relation when it is one of these two (replace one record for the best-subset
and screening methods; add or remove one record for ``kendall``, so a kendall accountant
takes the estimate without any conversion) and replace-one record after ``dpvote``: the
estimate is record-level, not machine-level, DP, so an accountant kept for dpvote's
machine-level relation refuses it before the charge.  Nothing the estimate does depends
on the row count except through a noisy count it releases.

The Tukey-depth mechanism (``method="tukey"``, :mod:`dpstats.estimation.tukey`) is
(epsilon, delta)-DP under add/remove-one-record neighbours only, with delta > 0.  After an
add/remove selection (``kendall``) it runs with the requested (epsilon, delta).  Under
replace-one (every other selection, and record-level after ``dpvote``) it runs with

    epsilon' = epsilon / 2,   delta' = delta / (1 + exp(epsilon / 2))

(rounded down, so that ``(1 + exp(epsilon / 2)) delta' <= delta`` holds exactly), and is then
(epsilon, delta)-DP under replace-one.  Proof (group privacy over two add/remove steps):
data sets D and D'' that differ by replacing one record are linked by D' = D without that
record, an add/remove neighbour of both (the design is evaluated row by row, so D' is D's
evaluated rows minus at most one, and D'' is D' plus at most one).  For every event S,
P[M(D) in S] <= e^{eps'} P[M(D') in S] + delta' <= e^{eps'} (e^{eps'} P[M(D'') in S] +
delta') + delta' = e^{2 eps'} P[M(D'') in S] + (1 + e^{eps'}) delta', which is
e^{eps} P[M(D'') in S] + delta with the values above; the same holds with D and D''
exchanged.  The ledger entry records (epsilon, delta) under replace-one, its parts the
add/remove shares and the conversion, and its details the add/remove (epsilon', delta')
and their split.  At ``epsilon = inf`` the refit is least squares on the selected terms,
unclipped (not private), as the other methods' fits at ``epsilon = inf``.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from ..errors import InvalidArgumentError, InvalidTypeError
from ..method_options import Boolean, Choice, Custom, InstanceOf, Integer, Later, Real, is_real, validate_arguments
from ..privacy.accountant import Accountant
from ..privacy.bounds import AUTO_GRID
from ..privacy.ledger import ADD_REMOVE, REPLACE_ONE, Ledger, LedgerEntry
from ..privacy.randomness import RandomSource
from . import adassp
from . import bootstrap as boot
from . import follow_up
from . import intervals as iv
from . import objective_perturbation as op
from . import op_bootstrap
from . import residual_step
from . import tukey
from .design import MappedRows, augmented_gram_of, design_rows_of, grid_counts_of, mapped_rows_of, selection_ranges
from .private_ranges import PRIVATE_RANGE_SHARE, RANGE_CHOICES, buys_ranges, private_term_ranges
from .result import (AdaSSPResult, EstimateResult, ObjectivePerturbationResult, ResidualStepResult, TukeyResult,
                     TukeySpec, original_units_map)

MECHANISM = "AdaSSP: noisy augmented Gram matrix and smallest eigenvalue of the selected terms"


def _relation(selection_neighbours):
    """The estimate's neighbouring relation (module docstring)."""
    return selection_neighbours if selection_neighbours in (REPLACE_ONE, ADD_REMOVE) else REPLACE_ONE


@dataclass
class Request:
    """Everything public about one ``estimate`` call, checked (stage 1)."""

    fit: object
    epsilon: float
    delta: float
    method: str
    level: float
    draws: int
    rng: RandomSource
    ctx: dict
    plan: object
    selected: list
    ranges: object
    relation: str
    formula: str | None
    options: dict
    #: ``ranges=``: "public" (the selection's ranges) or "private" (:mod:`dpstats.estimation.private_ranges`).
    range_choice: str = "public"
    #: Whether this call buys its ranges (a public rule, decided before the charge).
    buy_ranges: bool = False

    @property
    def binary(self) -> bool:
        return self.ctx["response_type"] == "binary"

    @property
    def columns(self) -> list:
        return [self.plan.terms.index(t) for t in self.selected]

    @property
    def d(self) -> int:
        return len(self.selected) + (1 if self.plan.intercept else 0)

    def new_ledger(self) -> Ledger:
        ledger = Ledger(caveats=list(getattr(self.plan, "caveats", [])))
        if self.rng.seeded:
            ledger.caveat("seeded: reproducible, not for release")
        return ledger

    def relation_caveats(self) -> tuple:
        if self.relation == self.ctx["neighbours"]:
            return ()
        return (f"record-level guarantee ({self.relation}); the selection's was {self.ctx['neighbours']}",)

    def public_call(self) -> dict:
        out = {"method": self.method, "epsilon": "inf" if math.isinf(self.epsilon) else self.epsilon,
               "delta": self.delta, "level": self.level, "bootstrap": self.draws,
               "selection_method": self.fit.method, "formula": self.formula, "selected": list(self.selected)}
        if self.range_choice != "public":
            out.update(ranges=self.range_choice, ranges_bought=self.buy_ranges)
        return out

    def call_text(self, extra="") -> str:
        if self.range_choice != "public":
            extra = f"{extra}, ranges = \"{self.range_choice}\""
        return (f"estimate(method = \"{self.method}\", epsilon = {_show(self.epsilon)}, delta = {_show(self.delta)}"
                f"{extra}, level = {_show(self.level)}) after {self.fit.call}")

    def selection_epsilon(self):
        """The selection's epsilon (its own ledger, without earlier follow-up queries), for the notes and
        Zrnic and Jordan's correction."""
        ledger = getattr(self.fit, "ledger", None)
        if isinstance(ledger, Ledger):
            return follow_up.selection_ledger(ledger).total_epsilon
        value = getattr(self.fit, "epsilon_spent", None)
        return float(value) if isinstance(value, numbers.Real) else None

    def selection_delta(self):
        ledger = getattr(self.fit, "ledger", None)
        if isinstance(ledger, Ledger):
            return follow_up.selection_ledger(ledger).total_delta
        value = getattr(self.fit, "delta_spent", None)
        return float(value) if isinstance(value, numbers.Real) else None

    def selection_details(self) -> dict:
        """For the ledger entry: the selection this estimate follows (public: its ledger's epsilon)."""
        eps = self.selection_epsilon()
        return {} if eps is None else {"after_selection": f"dp_select(method={self.fit.method!r})",
                                       "selection_epsilon": "inf" if math.isinf(eps) else eps}

    def rows_public(self):
        return getattr(self.plan, "n_rows_input", None) if self.relation == REPLACE_ONE else None


class Estimator:
    """One estimation method: its public checks (before the charge) and its release (after)."""

    name = ""
    #: Whether the method needs public ranges (the selection's ``bounds_used`` or ``bounds=``).
    needs_bounds = True

    def check(self, req: Request) -> dict:
        """Method-specific public checks (stage 1); returns the method's validated options."""
        raise NotImplementedError

    def release(self, req: Request) -> EstimateResult:
        """Stage 3 and 4: read the data, release, post-process.  Only after the charge."""
        raise NotImplementedError

    def refuse_hinge_and_radius(self, req: Request):
        """For least-squares estimators: a hinge-loss selection and ``radius=`` are refused (stage 1)."""
        if req.binary:
            raise InvalidArgumentError(
                f"method={self.name!r} fits least squares; this selection used loss='hinge' (classification), "
                "whose response is coded -1 / +1. Use method='objective_perturbation' (logistic regression), or "
                "select with the squared loss (the default loss).")
        if req.options.get("radius") is not None:
            raise InvalidArgumentError(f"radius is an option of method='objective_perturbation'; method={self.name!r} "
                                       "needs none.")


class AdaSSPEstimator(Estimator):
    """AdaSSP (:mod:`dpstats.estimation.adassp`): least squares from noisy sufficient statistics."""

    name = "adassp"

    def check(self, req):
        self.refuse_hinge_and_radius(req)
        return {}

    def release(self, req):
        plan, selected = req.plan, req.selected
        m, d = len(selected) + 2, req.d
        ledger = req.new_ledger()
        ranges, epsilon = req.ranges, req.epsilon
        if req.buy_ranges:  # dpstats.estimation.private_ranges: ranges first, AdaSSP with the rest
            epsilon_r = PRIVATE_RANGE_SHARE * req.epsilon
            counts = grid_counts_of(req.ctx["data"], plan, req.columns, AUTO_GRID)
            ranges, entries = private_term_ranges(counts, req.ranges, plan.n_rows_input, epsilon_r, req.rng)
            for entry in entries:
                ledger.add(entry)
            epsilon = req.epsilon - epsilon_r
        spec = adassp.calibrate(epsilon, req.delta, m, d)
        G = augmented_gram_of(req.ctx["data"], plan, req.columns, ranges)
        rel = adassp.release(G, plan.intercept, spec, req.rng)
        del G  # nothing below may read the exact statistics
        theta, lam = adassp.fit_release(rel)
        ivs = iv.adassp_intervals(rel, theta, lam, req.draws, req.rng)
        ledger.add(LedgerEntry(
            mechanism=MECHANISM + (f" ({spec.kind} noise)" if spec.kind != "none" else ""),
            epsilon=epsilon, delta=req.delta, neighbours=req.relation, caveats=req.relation_caveats(),
            released={"columns": ["(1)"] + list(selected) + [plan.response], **rel.to_dict()},
            details={**spec.details(), **req.selection_details()}))
        return AdaSSPResult(call=req.call_text(), formula=req.ctx["formula"], response=plan.response,
                            terms=selected, theta=theta, affine=original_units_map(ranges, plan.intercept),
                            intervals=ivs, ridge=lam, spec=spec, release=rel, ledger=ledger, plan=plan,
                            ranges=ranges, level=req.level, public_call=req.public_call(),
                            rows_public=req.rows_public(), selection_epsilon=req.selection_epsilon(),
                            selection_delta=req.selection_delta())


STEP_MECHANISM = ("AdaSSP followed by one residual step: noisy augmented Gram matrix and smallest eigenvalue, a "
                  "private clipping level of the residuals, noisy (Z'r, r'r) of the clipped residuals")


class ResidualStepEstimator(Estimator):
    """AdaSSP followed by one residual step (:mod:`dpstats.estimation.residual_step`): its privacy
    noise scales with the residuals rather than with the response's range; pure epsilon-DP."""

    name = "adassp_residual"

    def check(self, req):
        self.refuse_hinge_and_radius(req)
        if req.delta > 0:
            raise InvalidArgumentError(
                f"delta must be 0 for method={self.name!r} (Laplace noise and an exponential mechanism, pure "
                f"epsilon-DP); got {req.delta!r}. method='adassp' offers a Gaussian (epsilon, delta) variant.")
        return {}

    def release(self, req):
        if math.isinf(req.epsilon):  # no noise: least squares, exactly AdaSSP's epsilon = inf fit
            return AdaSSPEstimator().release(req)
        plan, selected = req.plan, req.selected
        rows = MappedRows(req.ctx["data"], plan, req.columns, req.ranges)
        rel = residual_step.release(rows, req.d, plan.intercept, req.epsilon, req.relation, req.rng)
        del rows  # nothing below may read the data
        coef, centre, lam, theta1 = residual_step.fit(rel)
        ivs = residual_step.intervals(rel, centre, lam, theta1, req.draws, req.rng)
        e1, e2, e3 = rel.epsilons
        ledger = req.new_ledger()
        ledger.add(LedgerEntry(
            mechanism=STEP_MECHANISM, epsilon=req.epsilon, delta=0.0, neighbours=req.relation,
            caveats=req.relation_caveats(),
            released={"columns": ["(1)"] + list(selected) + [plan.response], **rel.to_dict()},
            details={**rel.details(), **req.selection_details()},
            parts=(("AdaSSP (Laplace noise)", e1), ("clipping level: exponential mechanism", e2),
                   ("residual step (Laplace noise)", e3))))
        return ResidualStepResult(call=req.call_text(), formula=req.ctx["formula"], response=plan.response,
                                  terms=selected, theta=coef, affine=original_units_map(req.ranges, plan.intercept),
                                  intervals=ivs, ridge=lam, spec=rel.spec, release=rel, ledger=ledger, plan=plan,
                                  ranges=req.ranges, level=req.level, public_call=req.public_call(),
                                  rows_public=req.rows_public(), selection_epsilon=req.selection_epsilon(),
                                  selection_delta=req.selection_delta())


OP_MECHANISM = "objective perturbation (Kifer, Smith and Thakurta 2012)"


class ObjectivePerturbationEstimator(Estimator):
    """Objective perturbation (:mod:`dpstats.estimation.objective_perturbation`): squared loss over a
    public ball for least-squares selections, logistic loss for hinge-loss selections."""

    name = "objective_perturbation"

    def check(self, req):
        if req.delta > 0:
            raise InvalidArgumentError(
                "delta must be 0 for method='objective_perturbation' (pure epsilon-DP, gamma-norm noise); "
                f"got {req.delta!r}. method='adassp' offers a Gaussian (epsilon, delta) variant.")
        radius = req.options.get("radius")
        if req.binary:
            if radius is not None:
                raise InvalidArgumentError("radius is only for the squared loss; the logistic refit of a "
                                           "hinge-loss selection is unconstrained.")
            if not req.plan.backend.rows_in_memory:
                raise InvalidArgumentError("objective perturbation with the logistic loss needs the rows: a Dask "
                                           "DataFrame is not supported (the hinge loss refuses it as well).")
            return {"loss": "logistic", "radius": None}
        if radius is None and math.isinf(req.epsilon):
            # epsilon = inf needs no ball (the ball only bounds the gradient's sensitivity): the
            # default is then ordinary least squares on the selected terms, as statsmodels'.
            radius = math.inf
        elif radius is None:
            # the selection's own radius, unless it was epsilon = inf's ball that never binds (10^6: a gradient
            # sensitivity that large drowns the refit; there the selection's radius meant nothing private)
            call = getattr(req.fit, "_public_call", {})
            chosen, selection_epsilon = call.get("radius"), call.get("epsilon")
            wide = selection_epsilon == "inf" or (is_real(selection_epsilon) and math.isinf(selection_epsilon))
            ok = is_real(chosen) and math.isfinite(chosen) and chosen > 0 and not wide
            radius = float(chosen) if ok else op.DEFAULT_RADIUS
        elif math.isinf(radius) and not math.isinf(req.epsilon):  # a number > 0 or math.inf (ESTIMATE_ARGUMENTS)
            raise InvalidArgumentError(
                f"radius must be a positive finite number (math.inf only with epsilon=math.inf); got {radius!r}.")
        return {"loss": "squared", "radius": radius}

    def release(self, req):
        plan, selected, d = req.plan, req.selected, req.d
        loss, radius = req.options["loss"], req.options["radius"]
        ledger = req.new_ledger()
        if loss == "squared":
            eps_gram = req.epsilon * op.INTERVAL_SHARE
            eps_op = req.epsilon - eps_gram if not math.isinf(req.epsilon) else math.inf
            spec = op.calibrate("squared", eps_op, d, radius)
            m = len(selected) + 2
            gspec = op_bootstrap.gram_spec(eps_gram, m, d)
            G = augmented_gram_of(req.ctx["data"], plan, req.columns, req.ranges)
            theta = op.release_squared(G, plan.intercept, spec, req.rng)
            gram = op_bootstrap.release_gram(G, gspec, req.rng)
            del G  # nothing below may read the exact statistics
            rel = op.Release(theta, spec, gram, gspec, bool(plan.intercept))
            ivs = iv.op_intervals(rel, req.draws, req.rng)
            details = {**spec.details(), "gram_epsilon": eps_gram, "gram_noise": gspec.kind,
                       "gram_scale": gspec.gram_scale, "gram_sensitivity": gspec.gram_sensitivity,
                       "interval_share": op.INTERVAL_SHARE}
            columns = ["(1)"] + list(selected) + [plan.response]
            mechanism = (OP_MECHANISM + f": squared loss over the ball of radius {radius:g}, and the augmented "
                         "Gram matrix with Laplace noise for the intervals")
            extra = f", radius = {_show(radius)}"
        else:
            spec = op.calibrate("logistic", req.epsilon, d)
            Z, y = mapped_rows_of(req.ctx["data"], plan, req.columns, req.ranges)
            theta = op.release_logistic(Z, y, spec, req.rng)
            del Z, y
            rel = op.Release(theta, spec, None, None, bool(plan.intercept))
            ivs = iv.IntervalSet("none", reason=iv.LOGISTIC)
            details = spec.details()
            columns = None
            mechanism = OP_MECHANISM + ": logistic loss (surrogate of the hinge)"
            extra = ""
        released = {"coefficient_names": (["(1)"] if plan.intercept else []) + list(selected), **rel.to_dict()}
        if columns is not None:
            released["gram_columns"] = columns
        ledger.add(LedgerEntry(mechanism=mechanism, epsilon=req.epsilon, delta=0.0, neighbours=req.relation,
                               caveats=req.relation_caveats(), released=released,
                               details={**details, **req.selection_details()}))
        public_call = req.public_call()
        if loss == "squared":
            public_call["radius"] = "inf" if math.isinf(radius) else radius
        return ObjectivePerturbationResult(
            call=req.call_text(extra), formula=req.ctx["formula"], response=plan.response, terms=selected,
            theta=theta, affine=original_units_map(req.ranges, plan.intercept), intervals=ivs, ridge=spec.ridge,
            spec=spec, release=rel, ledger=ledger, plan=plan, ranges=req.ranges, level=req.level,
            public_call=public_call, rows_public=req.rows_public(),
            model="linear" if loss == "squared" else "logistic", selection_epsilon=req.selection_epsilon(),
            selection_delta=req.selection_delta())


TUKEY_MECHANISM = ("Tukey-depth mechanism (Amin, Joseph, Ribero and Vassilvitskii 2023; PTR and private number "
                   "of models of Dick, Gillenwater and Joseph 2023)")
GROUP_PRIVACY_PART = "group privacy: replace one = remove one + add one"


def replace_one_budget(epsilon, delta):
    """(epsilon', delta') under add/remove that give (epsilon, delta) under replace-one (module docstring).

    ``epsilon' = epsilon / 2`` (exact halving) and ``delta' = delta / (1 + exp(epsilon / 2))``,
    rounded down until ``(1 + e_up) delta' <= delta`` holds in exact arithmetic, with
    ``e_up`` a float above ``exp(epsilon / 2)`` (``math.exp`` rounded up by one step).
    ``delta'`` is 0 when ``exp(epsilon / 2)`` overflows.
    """
    half = epsilon / 2.0
    try:
        e_up = math.nextafter(math.exp(half), math.inf)
    except OverflowError:
        return half, 0.0
    if math.isinf(e_up):
        return half, 0.0
    factor = 1 + Fraction(e_up)
    delta_ar = delta / (1.0 + e_up)
    while delta_ar > 0 and Fraction(delta_ar) * factor > Fraction(delta):
        delta_ar = math.nextafter(delta_ar, 0.0)
    return half, delta_ar


class TukeyEstimator(Estimator):
    """The Tukey-depth mechanism (:mod:`dpstats.estimation.tukey`): least squares without bounds,
    (epsilon, delta)-DP with delta > 0; one point, no intervals; a failure is a release."""

    name = "tukey"
    needs_bounds = False

    def check(self, req):
        self.refuse_hinge_and_radius(req)
        rows_per_model = tukey._check_rows_per_model(req.options.get("rows_per_model"))
        if not req.plan.backend.rows_in_memory:
            raise InvalidArgumentError(
                "method='tukey' needs the rows (it fits least squares on random subsets of them): a Dask DataFrame "
                "is not supported. Use method='adassp' (sufficient statistics, partition by partition), or a "
                "pandas DataFrame.")
        if math.isinf(req.epsilon):
            return {"private": False, "rows_per_model": rows_per_model}
        if not req.delta > 0:
            raise InvalidArgumentError(
                f"delta must be > 0 for method='tukey' (its propose-test-release step is (epsilon, delta)-DP); got "
                f"{req.delta!r}. Give e.g. delta=1e-6 (well below 1 / n), or use method='adassp' or "
                "method='objective_perturbation' (with public bounds) for pure epsilon-DP.")
        group = req.relation != ADD_REMOVE
        if group:
            eps_run, delta_run = replace_one_budget(req.epsilon, req.delta)
            if not delta_run > 0:
                raise InvalidArgumentError(
                    f"epsilon = {req.epsilon!r} is too large for method='tukey' under replace-one neighbours: "
                    "delta / (1 + exp(epsilon / 2)) underflows. Use a smaller epsilon, or epsilon=math.inf for the "
                    "non-private fit.")
        else:
            eps_run, delta_run = req.epsilon, req.delta
        budget = tukey.split_budget(eps_run, delta_run)
        return {"private": True, "group": group, "budget": budget, "rows_per_model": rows_per_model}

    def release(self, req):
        plan, selected, d = req.plan, req.selected, req.d
        names = (["(1)"] if plan.intercept else []) + list(selected)
        ledger = req.new_ledger()
        X, y = design_rows_of(req.ctx["data"], plan, req.columns)
        if not req.options["private"]:
            theta = np.linalg.lstsq(X, y, rcond=None)[0] if X.shape[0] else np.zeros(d)
            del X, y  # nothing below may read the data
            spec = TukeySpec(private=False, status="released")
            ledger.add(LedgerEntry(
                mechanism=TUKEY_MECHANISM + ": epsilon = inf, least squares on the selected terms (not private)",
                epsilon=math.inf, delta=0.0, neighbours=req.relation, caveats=req.relation_caveats(),
                released={"coefficient_names": names, "coefficients": theta.tolist(), "status": "released"},
                details={"private": False, **req.selection_details()}))
            result = None
        else:
            budget, group = req.options["budget"], req.options["group"]
            rows_per_model = req.options["rows_per_model"]
            result = tukey.tukey_estimate(X, y, budget.epsilon, budget.delta, random_state=req.rng,
                                          rows_per_model=rows_per_model)
            del X, y  # nothing below may read the data
            theta = (np.asarray(result.coefficients, dtype=np.float64) if result.released
                     else np.full(d, np.nan))
            rows = tukey.resolve_rows_per_model(rows_per_model, d, result.noisy_n_lower, budget)
            indicators = tuple(t for t in selected if t in set(getattr(plan, "categorical_terms", ()) or ()))
            spec = TukeySpec(private=True, status=result.status, num_models=result.num_models,
                             noisy_n_lower=result.noisy_n_lower, noisy_distance=result.noisy_distance,
                             ptr_threshold=result.ptr_threshold, group_privacy=group,
                             add_remove_epsilon=budget.epsilon, add_remove_delta=budget.delta,
                             rows_per_model=rows, indicator_terms=indicators)
            out = result.to_dict()
            released = {"coefficient_names": names,
                        **{k: out[k] for k in ("coefficients", "status", "num_models", "noisy_n_lower",
                                               "noisy_distance", "ptr_threshold", "depth_floor")}}
            tag = " (add/remove)" if group else ""
            parts = ((f"noisy lower bound on n{tag}", budget.eps_n),
                     (f"PTR noisy distance{tag}", budget.eps_ptr),
                     (f"restricted exponential mechanism{tag}", budget.eps_em))
            caveats = req.relation_caveats()
            if group:
                parts += ((GROUP_PRIVACY_PART, req.epsilon - budget.epsilon),)
                caveats += (f"{req.relation} by group privacy from add or remove one record: the mechanism ran at "
                            f"(epsilon / 2, delta / (1 + exp(epsilon / 2))) = ({budget.epsilon:.6g}, "
                            f"{budget.delta:.6g})",)
            details = {
                "add_remove_epsilon": budget.epsilon, "add_remove_delta": budget.delta,
                "epsilon_split": budget.epsilon_split(), "delta_split": budget.delta_split(),
                "conversion": ("replace one = remove one + add one (group privacy): epsilon' = epsilon / 2, "
                               "delta' = delta / (1 + exp(epsilon / 2))") if group else "none (add/remove neighbours)",
                "n_share": tukey.DEFAULT_N_SHARE, "n_failure_probability": tukey.DEFAULT_N_FAILURE_PROBABILITY,
                "rows_per_model": (f"{rows_per_model} (d = {d} design columns): "
                                   f"{tukey.resolve_rows_per_model(rows_per_model, d, result.noisy_n_lower, budget):g}"
                                   " rows"),
                "min_models": tukey.MIN_MODELS, "em_coefficient": budget.em_coefficient,
                "ptr_threshold_factor": tukey.PTR_THRESHOLD_FACTOR,
            }
            ledger.add(LedgerEntry(mechanism=TUKEY_MECHANISM, epsilon=req.epsilon, delta=req.delta,
                                   neighbours=req.relation, caveats=caveats, released=released,
                                   details={**details, **req.selection_details()},
                                   parts=parts))
        identity = (np.eye(d), np.zeros(d))
        return TukeyResult(call=req.call_text(), formula=req.ctx["formula"], response=plan.response,
                           terms=selected, theta=theta, affine=identity, intervals=None, ridge=None, spec=spec,
                           release=result, ledger=ledger, plan=plan, ranges=None, level=req.level,
                           public_call=req.public_call(), rows_public=req.rows_public(),
                           selection_epsilon=req.selection_epsilon(),
                           selection_delta=req.selection_delta())


#: method name -> its estimator (more estimators register here).
ESTIMATORS = {e.name: e for e in (AdaSSPEstimator(), ResidualStepEstimator(), ObjectivePerturbationEstimator(),
                                   TukeyEstimator())}

METHODS = tuple(ESTIMATORS)


def _random_source(value):
    return value if isinstance(value, RandomSource) else RandomSource(value)


#: ``estimate()``'s arguments (:meth:`dpstats.results.SelectionResult.estimate` and
#: :func:`estimate_after_selection`), each checked from its value alone by one validator
#: (:func:`dpstats.method_options.validate_arguments`); the rules that involve the selection
#: or the estimator follow in :func:`_public_checks` and :meth:`Estimator.check`.
ESTIMATE_ARGUMENTS = (
    Real("epsilon", argument=True, low=0.0, allow_inf=True,
         hint="Give the estimate's privacy budget; math.inf returns the non-private fit.", doc="privacy budget"),
    Real("delta", argument=True, default=0.0, low=0.0, low_open=False, high=1.0,
         hint="0: Laplace noise, pure epsilon-DP; > 0: Gaussian noise, well below 1 / n.", doc="delta"),
    Choice("method", argument=True, default="adassp", choices=METHODS, doc="the estimator"),
    Later("bounds", argument=True, allow_none=True, checked_by="the selection's terms and response "
          "(dpstats.estimation.design.selection_ranges)", doc="ranges for selections without bounds"),
    Choice("ranges", argument=True, default="public", choices=RANGE_CHOICES,
           doc="'public': map by the public ranges; 'private': buy each selected term's and the response's range "
               "with 10 % of epsilon when affordable (dpstats.estimation.private_ranges)"),
    Custom("random_state", argument=True, check_value=_random_source,
           accepted="None, a non-negative integer or a numpy Generator", doc="seed"),
    InstanceOf("accountant", argument=True, allow_none=True, cls=Accountant, what="a dpstats.Accountant",
               doc="the budget charged (default: the selection's)"),
    Real("level", argument=True, default=0.95, low=0.0, high=1.0, hint="e.g. level=0.95.", doc="interval level"),
    Integer("bootstrap", argument=True, default=boot.DEFAULT_DRAWS, minimum=2,
            hint=f"{boot.DEFAULT_DRAWS} is the default.", doc="bootstrap draws of the intervals"),
    Real("radius", argument=True, low=0.0, allow_inf=True, allow_none=True,
         doc="objective perturbation's ball (squared loss)"),
    Later("data", argument=True, allow_none=True, checked_by="the selection's public schema (columns, dtypes, "
          "declared levels, input row count)", doc="the selection's data, after drop_data() or pickling"),
    Boolean("prepaid", argument=True, default=False, doc="internal: dp_select(..., estimate=share) paid already"),
    Custom("rows_per_model", argument=True, allow_none=True, check_value=tukey._check_rows_per_model,
           accepted="None, 'auto', 'd', '2d' or a positive number", doc="rows per model of method='tukey'"),
)


def _public_checks(fit, args):
    """Stage 1: everything public; returns the checked :class:`Request`."""
    epsilon, method, bounds, data = args["epsilon"], args["method"], args["bounds"], args["data"]
    delta = 0.0 if math.isinf(epsilon) else args["delta"]
    options = {"radius": args["radius"], "rows_per_model": args["rows_per_model"]}
    ctx = getattr(fit, "_refit", None)
    if not ctx:
        raise InvalidArgumentError(
            "this result does not carry what a refit needs (the data, formula and design of its selection); "
            "estimate() works on the result of dpstats.dp_select.")
    follow_up.check_accountant(ctx, args["accountant"], args["prepaid"])  # before data= is looked at
    ctx = _with_data(ctx, data)
    plan = ctx["plan"]
    if plan.response is None:
        raise InvalidArgumentError("estimate() needs a formula with a response (y ~ ...); this selection's formula "
                                   "has none (the sparse-mean model of dpvote).")
    estimator = ESTIMATORS[method]
    if method != "tukey" and options.get("rows_per_model") is not None:
        raise InvalidArgumentError(f"rows_per_model is an option of method='tukey'; method={method!r} does not "
                                   "use it.")
    if not estimator.needs_bounds:
        if bounds is not None:
            raise InvalidArgumentError(
                f"bounds= is not used by method={method!r}: the Tukey-depth mechanism needs no ranges and reads the "
                "selected terms and the response unclipped, in their original units; drop bounds=.")
    elif ctx["bounds_used"] is not None and bounds is not None:
        raise InvalidArgumentError(
            "bounds= is only for selections without bounds (kendall, dpvote); this selection's ranges "
            "(release()['bounds_used']) are used, so that the refit clips the same data the selection did.")
    elif ctx["bounds_used"] is None and bounds is None:
        raise InvalidArgumentError(
            f"method {fit.method!r} selects without clipping, but estimate() needs public ranges: give "
            "bounds={term: (lower, upper)} for every selected term and the response (from a codebook or domain "
            "knowledge, never from the data), or a pair (b_x, b_y).")
    selected = list(fit.support)
    if not selected and not plan.intercept:
        raise InvalidArgumentError("the selection is empty and the formula has no intercept: there is no "
                                   "coefficient to estimate.")
    ranges = selection_ranges(plan, selected, ctx["bounds_used"], bounds) if estimator.needs_bounds else None
    formula = ctx["formula"] if isinstance(ctx["formula"], str) else None
    choice = args["ranges"]
    if choice == "private":
        if method != "adassp":
            raise InvalidArgumentError(f"ranges='private' is available for method='adassp'; method={method!r} maps by "
                                       "the public ranges (leave ranges='public').")
        if _relation(ctx["neighbours"]) != REPLACE_ONE:
            raise InvalidArgumentError(
                f"ranges='private' is stated for replace-one neighbours (the range draw uses the public row count); "
                f"this selection's neighbours are {ctx['neighbours']!r} (method {fit.method!r}): leave "
                "ranges='public'.")
    n_input = getattr(plan, "n_rows_input", None)
    req = Request(fit=fit, epsilon=epsilon, delta=delta, method=method, level=args["level"], draws=args["bootstrap"],
                  rng=args["random_state"], ctx=ctx,
                  plan=plan, selected=selected, ranges=ranges, relation=_relation(ctx["neighbours"]), formula=formula,
                  options=dict(options), range_choice=choice,
                  buy_ranges=buys_ranges(choice, epsilon, len(selected), n_input))
    req.options = estimator.check(req)
    return req


def estimate_after_selection(fit, *, epsilon, delta=0.0, method="adassp", bounds=None, random_state=None,
                             accountant=None, level=0.95, bootstrap=boot.DEFAULT_DRAWS, radius=None, data=None,
                             prepaid=False, rows_per_model=None, ranges="public") -> EstimateResult:
    """Private coefficients, intervals and predictions for the terms ``fit`` selected.

    See :meth:`dpstats.results.SelectionResult.estimate` and the module docstring.
    ``accountant=None`` charges the selection's accountant, if it had one (an unpickled
    result whose selection had one refuses the call: :mod:`dpstats.estimation.follow_up`);
    ``prepaid`` is for ``dp_select(..., estimate=share)``, whose single charge covered the
    estimate.  Every other call is recorded on ``fit.ledger`` as a follow-up query, with or
    without an accountant (:mod:`dpstats.estimation.follow_up`).
    """
    args = validate_arguments(ESTIMATE_ARGUMENTS, dict(
        epsilon=epsilon, delta=delta, method=method, bounds=bounds, random_state=random_state, accountant=accountant,
        level=level, bootstrap=bootstrap, radius=radius, data=data, prepaid=prepaid, rows_per_model=rows_per_model,
        ranges=ranges))
    req = _public_checks(fit, args)
    accountant, prepaid = args["accountant"], args["prepaid"]
    if accountant is None and not prepaid:
        accountant = req.ctx.get("accountant")
    if accountant is not None and not prepaid:  # checks the budget and the relation first; refuses without charging
        accountant.charge(req.epsilon, req.delta, label=f"estimate(method={method!r}) after "
                          f"dp_select(method={fit.method!r})", neighbours=req.relation, method=method,
                          formula=req.formula)
    # From here on the data's values are read; a failure keeps the charge, and is recorded on the
    # selection's ledger as a follow-up query charged in full (dpstats.estimation.follow_up).
    if prepaid:  # dp_select(..., estimate=share): the call records its estimate's entry itself
        return ESTIMATORS[method].release(req)
    try:
        est = ESTIMATORS[method].release(req)
    except BaseException:
        follow_up.record_failure(fit, method=method, epsilon=req.epsilon, delta=req.delta, neighbours=req.relation)
        raise
    follow_up.record(fit, est.ledger.entries, caveats=est.ledger.caveats)
    return est


def _show(x):
    return "inf" if math.isinf(x) else f"{x:g}"


def _with_data(ctx, data):
    """The refit context with its data: the kept data, or ``data`` checked against the selection's
    public schema (the used columns and their kinds, declared levels, the input row count)
    when the result no longer holds it (pickled, or ``drop_data()``).  Public checks only."""
    if ctx.get("data") is not None:
        if data is not None:
            raise InvalidArgumentError("this result still holds the data of its selection; leave data= out (it is "
                                       "only for a result that was pickled or had drop_data() called).")
        return ctx
    if data is None:
        raise InvalidArgumentError(
            "this result no longer holds the data of its selection (it was pickled, or drop_data() was called): "
            "pass data=, the same data set the selection used (it is checked against the selection's schema).")
    from ..backends import backend_of
    from ..dask_engine import build_dask_model_frame
    from ..formula import _validate_data, column_kind

    plan = ctx["plan"]
    if ctx.get("dask"):
        if backend_of(data).rows_in_memory:
            raise InvalidTypeError("this selection ran on a Dask DataFrame: pass the same Dask DataFrame as data=.")
        rebuilt = build_dask_model_frame(ctx["formula"], data, na_action=plan.na_action,
                                         require_response=plan.response is not None)
        if list(rebuilt.terms) != list(plan.terms) or rebuilt.n_rows_input != plan.n_rows_input:
            raise InvalidArgumentError("data= does not match the selection's schema (its terms or input row count "
                                       "differ): pass the data set the selection used.")
        return {**ctx, "data": data, "plan": rebuilt}
    # the selection's row minimum: none under add/remove neighbours, where the row count is private
    frame = _validate_data(data, min_rows=0 if ctx.get("neighbours") == ADD_REMOVE else None)
    missing = [c for c in plan.used if c not in frame.columns]
    if missing:
        raise InvalidArgumentError(f"data= lacks the columns {missing} that the selection's formula uses: pass the "
                                   "data set the selection used.")
    if frame.shape[0] != plan.n_rows_input:
        raise InvalidArgumentError("data= has another number of rows than the selection's input: pass the data set "
                                   "the selection used.")
    if plan.used_dtypes is not None:
        for c in plan.used:
            want, got = plan.used_dtypes[c], frame.dtypes[c]
            same = column_kind(want) == column_kind(got)
            if same and isinstance(want, pd.CategoricalDtype):
                same = list(want.categories) == list(got.categories)
            if not same:
                raise InvalidArgumentError(f"data= column {c!r} has dtype {got} where the selection's had {want}: "
                                           "pass the data set the selection used.")
    return {**ctx, "data": frame}
