"""The result of ``fit.estimate(...)``: private coefficients, intervals, predictions, ledger.

Modelled on statsmodels' regression results (``params``, ``bse``, ``conf_int``,
``predict``, ``summary``) with R's names where they differ (``coef``, ``confint``).
Everything it shows is computed from the ledger's release (the noisy sufficient
statistics of AdaSSP, or the perturbed minimiser of objective perturbation and its noisy
Gram matrix) and public parameters: the coefficients and the bootstrap draws are
post-processing, so :meth:`EstimateResult.release` holds only ledger-covered items.
A refit of a hinge-loss selection is a logistic regression (``model="logistic"``): its
``predict`` gives probabilities or class labels, and it has no intervals.  The Tukey-depth
refit (``method="tukey"``) uses no ranges: its coefficients are on the original units as
released (identity map), it has no intervals (the mechanism releases one point), and when
its test does not pass the failure is the release: the coefficients are NaN and the notes
say so (:attr:`EstimateResult.status`).
"""
from __future__ import annotations

import json
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InvalidArgumentError, InvalidTypeError
from ..results import Summary, _fmt
from . import bootstrap
from .design import prediction_design

INTERCEPT = "Intercept"

SELECTION_NOTE = ("conditional on the selected terms: they were chosen on the same data, and the intervals do not "
                  "account for the selection")

NO_INTERVALS_NOTE = ("no intervals or standard errors: objective perturbation with the logistic loss releases the "
                     "coefficients only, and nothing about the design that a bootstrap would need")

OP_RIDGE_NOTE = ("objective perturbation adds a public ridge (Delta on the mapped scale) and, for least squares, "
                 "keeps the coefficients in a public ball: both shrink them, the more so with few rows; the bootstrap "
                 "simulates both")

TUKEY_NO_INTERVALS_NOTE = ("no intervals or standard errors: the Tukey mechanism releases one point (the coefficient "
                           "vector) and nothing a bootstrap would need")

TUKEY_FAILED_NOTE = ("the Tukey mechanism's test did not pass: no coefficients were released; more data or a larger "
                     "epsilon")

TUKEY_UNITS_NOTE = ("the Tukey mechanism needs no bounds: the coefficients are a least-squares fit of the unclipped "
                    "terms and response, in their original units")

RIDGE_NOTE = ("the adaptive ridge is active (the noise is large compared with the design's smallest eigenvalue): the "
              "coefficients are shrunk and the intervals may undercover; more rows, a larger epsilon or tighter "
              "public ranges make it vanish")


@dataclass(frozen=True)
class TukeySpec:
    """Public facts of a Tukey-depth refit (released values and public parameters only)."""

    private: bool = True
    status: str = "released"
    num_models: int | None = None
    noisy_n_lower: float | None = None
    noisy_distance: float | None = None
    ptr_threshold: float | None = None
    group_privacy: bool = False
    add_remove_epsilon: float | None = None
    add_remove_delta: float | None = None
    kind: str = "tukey"


def check_level(level, name="level"):
    if isinstance(level, bool) or not isinstance(level, numbers.Real):
        raise InvalidTypeError(f"{name} must be a number in (0, 1); got {level!r}.")
    level = float(level)
    if not 0 < level < 1:
        raise InvalidArgumentError(f"{name} must be in (0, 1), e.g. 0.95; got {level!r}.")
    return level


class EstimateResult:
    """Private coefficients of the selected terms (least squares or logistic), on the data's units.

    Attributes
    ----------
    coef : pandas.Series
        The private coefficients (``Intercept`` first when the formula has one), on the
        original units of the terms and the response (the clipped variables).
    bse : pandas.Series
        Bootstrap standard errors (NaN where the estimate has no intervals).
    level : float
        Level of the intervals of :meth:`release` and :meth:`summary`.
    ridge : float or None
        The ridge used (on the mapped scale): AdaSSP's adaptive ridge, chosen from released
        values, or objective perturbation's public Delta; None for the Tukey-depth refit.
    model : str
        ``"linear"`` or ``"logistic"`` (the refit of a hinge-loss selection).
    ledger : Ledger
        One entry: the mechanism's release.
    bounds_used : dict
        term -> [lower, upper]: the public ranges the data was clipped and mapped with
        (empty for the bound-free Tukey-depth refit).
    status : str
        ``"released"``, or the released failure of the Tukey-depth mechanism
        (``"ptr_failed"``, ``"too_few_models"``, ``"empty_region"``: coefficients NaN).
    """

    def __init__(self, *, call, formula, response, terms, theta, affine, boot_theta, ridge, spec, release, ledger,
                 plan, ranges, level, public_call, rows_public, model="linear"):
        self.call = call
        self.formula = formula
        self.response = response
        self.selected = list(terms)
        self.intercept = bool(plan.intercept)
        self.names = ([INTERCEPT] if self.intercept else []) + list(terms)
        self._T, self._t0 = affine
        self._theta = np.asarray(theta, dtype=np.float64)
        self.model = model
        self._boot = (None if boot_theta is None else
                      np.asarray(boot_theta, dtype=np.float64) @ self._T.T + self._t0)
        self.coef = pd.Series(self._T @ self._theta + self._t0, index=self.names, name="coef")
        self.bse = pd.Series(np.std(self._boot, axis=0, ddof=1) if self._boot is not None and len(self._boot) > 1
                             else np.nan, index=self.names, name="std err")
        self.ridge = None if ridge is None else float(ridge)
        self.spec = spec
        self._release = release
        self.ledger = ledger
        self._plan = plan
        self._ranges = ranges
        self.level = level
        self._public_call = public_call
        self._rows_public = rows_public

    def __getstate__(self):
        # A design planned on a Dask frame holds the lazy frame, whose graph may hold rows:
        # a pickled result keeps only the plan made from the schema (predict needs no more).
        state = dict(self.__dict__)
        if getattr(state.get("_plan"), "is_dask", False):
            state["_plan"] = state["_plan"].plan
        return state

    # statsmodels' name
    @property
    def params(self) -> pd.Series:
        return self.coef

    @property
    def epsilon_spent(self) -> float:
        return self.ledger.total_epsilon

    @property
    def delta_spent(self) -> float:
        return self.ledger.total_delta

    @property
    def bounds_used(self) -> dict:
        return {} if self._ranges is None else self._ranges.used()

    @property
    def is_tukey(self) -> bool:
        return getattr(self.spec, "kind", None) == "tukey"

    @property
    def status(self) -> str:
        """``"released"``, or the Tukey-depth mechanism's released failure (coefficients NaN)."""
        return self.spec.status if self.is_tukey else "released"

    @property
    def _no_intervals_note(self) -> str:
        return TUKEY_NO_INTERVALS_NOTE if self.is_tukey else NO_INTERVALS_NOTE

    @property
    def n_draws(self) -> int:
        return 0 if self._boot is None else int(self._boot.shape[0])

    @property
    def has_intervals(self) -> bool:
        return self._boot is not None

    @property
    def mechanism(self) -> str:
        """A short name of the mechanism, for the summary."""
        spec = self.spec
        if self.is_tukey:
            if not spec.private:
                return "none (epsilon = inf)"
            return "Tukey depth with PTR" + ("" if spec.status == "released" else f" (failed: {spec.status})")
        if hasattr(spec, "loss"):
            if not spec.private:
                return "none (epsilon = inf)"
            return f"objective perturbation, {spec.loss} loss"
        return f"AdaSSP, {spec.kind} noise" if spec.kind != "none" else "none (epsilon = inf)"

    def _require_intervals(self):
        if self._boot is None:
            raise InvalidArgumentError("this estimate has no intervals: " + self._no_intervals_note + ".")

    def confint(self, level=None) -> pd.DataFrame:
        """Basic parametric-bootstrap intervals at ``level`` (default: the estimate's level).

        Columns named as R's ``confint`` ("2.5 %", "97.5 %" at 0.95).  No budget: the
        bootstrap runs on the released statistics (:mod:`dpstats.estimation.bootstrap`).
        """
        level = self.level if level is None else check_level(level)
        self._require_intervals()
        ci = bootstrap.basic_interval(self.coef.to_numpy(), self._boot, level)
        a = (1 - level) / 2
        return pd.DataFrame(ci, index=self.names, columns=[_pct(a), _pct(1 - a)])

    conf_int = confint  # statsmodels' name

    def predict(self, newdata, *, interval=None, level=None, clip=False, type=None):  # noqa: A002 - R's name
        """Predictions for new rows through the formula's design of the selected terms.

        Parameters
        ----------
        newdata : pandas.DataFrame or dict of columns
            Needs only the columns the selected terms use.  Incomplete rows give NaN.
        interval : None or "confidence"
            ``"confidence"`` adds a basic bootstrap interval for the mean response
            (columns ``fit``, ``lwr``, ``upr``, as R's ``predict.lm``).
        level : float, optional
            Level of the interval (default: the estimate's level).
        clip : bool, default False
            Clip the new terms to their public ranges first (the model was fitted on the
            clipped variables); by default the linear predictor is evaluated as is, as R
            and statsmodels do.  The Tukey-depth refit has no ranges and refuses True.
        type : None, "response", "link" or "class"
            For a logistic refit (``model="logistic"``): ``"response"`` (the default) the
            probability of the response's second level (the one coded +1), ``"link"`` the
            linear predictor (log-odds), ``"class"`` the predicted level (probability >= 1/2).
            A linear refit takes only None or ``"response"``.

        Returns
        -------
        pandas.Series (no interval) or pandas.DataFrame
        """
        if interval not in (None, "confidence"):
            raise InvalidArgumentError(f"interval must be None or 'confidence'; got {interval!r}.")
        if not isinstance(clip, bool):
            raise InvalidTypeError(f"clip must be True or False; got {clip!r}.")
        if clip and self._ranges is None:
            raise InvalidArgumentError("clip=True needs public ranges, and this estimate has none: the Tukey "
                                       "mechanism fitted the unclipped terms in their original units; use clip=False.")
        allowed = (None, "response") if self.model == "linear" else (None, "response", "link", "class")
        if type not in allowed:
            raise InvalidArgumentError(f"type must be one of {list(allowed)} for a {self.model} refit; got {type!r}.")
        if interval is not None:
            if self.model != "linear":
                raise InvalidArgumentError("interval= is not available for a logistic refit: " + NO_INTERVALS_NOTE
                                           + ".")
            self._require_intervals()
        X = prediction_design(self._plan, newdata, self.selected)
        if clip:
            X = np.clip(X, self._ranges.lower, self._ranges.upper)
        Z = np.hstack([np.ones((X.shape[0], 1)), X]) if self.intercept else X
        index = newdata.index if isinstance(newdata, pd.DataFrame) else None
        fit = pd.Series(Z @ self.coef.to_numpy(), index=index, name="fit")
        if self.model == "logistic" and type != "link":
            with np.errstate(invalid="ignore"):
                prob = 0.5 * (1.0 + np.tanh(0.5 * fit.to_numpy()))
            if type == "class":
                levels = getattr(self._plan, "response_levels", None) or (-1, 1)
                labels = np.where(prob >= 0.5, 1, 0)
                out = pd.Series([levels[k] if np.isfinite(p) else None for k, p in zip(labels, prob)],
                                index=index, name="class", dtype=object)
                return out
            return pd.Series(prob, index=index, name="probability")
        if interval is None:
            return fit
        level = self.level if level is None else check_level(level)
        boot = Z @ self._boot.T  # (rows, draws)
        a = 1 - level
        with np.errstate(invalid="ignore"):
            lwr = 2 * fit.to_numpy() - np.quantile(boot, 1 - a / 2, axis=1)
            upr = 2 * fit.to_numpy() - np.quantile(boot, a / 2, axis=1)
        return pd.DataFrame({"fit": fit.to_numpy(), "lwr": lwr, "upr": upr}, index=fit.index)

    def release(self) -> dict:
        """What may be published: the public call, the coefficients, their intervals and the ledger.

        The coefficients, standard errors and intervals are post-processing of the noisy
        statistics the ledger entry releases (kept there under ``released``); the ranges are
        public inputs, or outputs of the selection's ledger (``bounds="auto"``).
        """
        ci = self.confint() if self.has_intervals else None
        return {
            "call": dict(self._public_call),
            "selected": list(self.selected),
            "coefficients": {k: float(v) for k, v in self.coef.items()},
            "std_err": {k: float(v) for k, v in self.bse.items()} if ci is not None else None,
            "conf_int": ({k: [float(ci.loc[k].iloc[0]), float(ci.loc[k].iloc[1])] for k in self.names}
                         if ci is not None else None),
            "level": self.level,
            "ridge": self.ridge,
            "bounds_used": self.bounds_used,
            **({"status": self.status} if self.is_tukey else {}),
            "ledger": self.ledger.to_dict(),
        }

    def release_json(self, **kwargs) -> str:
        return json.dumps(self.release(), **kwargs)

    def summary(self) -> Summary:
        """A statsmodels-like table: coefficients, bootstrap std errors, intervals, and the ledger."""
        a = (1 - self.level) / 2
        if self.has_intervals:
            ci = self.confint()
            rows = [[name, _fmt(float(self.coef[name])), _fmt(float(self.bse[name])),
                     _fmt(float(ci.loc[name].iloc[0])), _fmt(float(ci.loc[name].iloc[1]))] for name in self.names]
            columns = ["", "coef", "std err", f"[{_fmt(a)}", f"{_fmt(1 - a)}]"]
        else:
            rows = [[name, _fmt(float(self.coef[name]))] for name in self.names]
            columns = ["", "coef"]
        header = [
            ["response", str(self.response)],
            ["formula", self.formula],
            ["mechanism", self.mechanism],
            ["epsilon spent", _fmt(self.epsilon_spent)],
            ["delta spent", _fmt(self.delta_spent)],
        ]
        gram = getattr(self._release, "gram", None)
        if gram is not None:
            header.append(["noisy row count", _fmt(float(gram[0, 0]))])
        if self.is_tukey and self.spec.private:
            header.append(["status", self.status])
            if self.spec.noisy_n_lower is not None:
                header.append(["noisy lower bound on rows", _fmt(self.spec.noisy_n_lower)])
            header.append(["models", str(self.spec.num_models)])
            if self.spec.noisy_distance is not None:
                header.append(["noisy distance / threshold", f"{_fmt(self.spec.noisy_distance)} / "
                                                              f"{_fmt(self.spec.ptr_threshold)}"])
        if self.ridge is not None:
            header.append(["ridge (mapped scale)", _fmt(self.ridge)])
        if getattr(self.spec, "loss", None) == "squared":
            header.append(["radius (mapped scale, public)", _fmt(self.spec.radius)])
        header.append(["intervals", f"basic parametric bootstrap, {self.n_draws} draws, level {_fmt(self.level)}"
                       if self.has_intervals else "none (see Notes)"])
        if self._rows_public is not None:
            header.insert(5, ["input rows (public)", str(self._rows_public)])
        if self._ranges is None:
            bounds_section = ("Bounds used", "none (bound-free): the terms and the response were used unclipped, in "
                                             "their original units")
        else:
            used = [[t, _fmt(lo), _fmt(hi)] for t, (lo, hi) in self.bounds_used.items()]
            bounds_section = ("Bounds used (each range mapped to [-1, 1]; values outside are clipped)", used,
                              ["term", "lower", "upper"])
        sections = [
            ("Call", self.call),
            (f"Private {'least squares' if self.model == 'linear' else 'logistic regression'} after selection",
             header, ["", ""]),
            ("Coefficients (original units" + (", log-odds of the second level)" if self.model == "logistic"
                                                else ")"), rows, columns),
            bounds_section,
            ("Notes", "\n".join(self.notes)),
            ("Privacy ledger", str(self.ledger)),
        ]
        return Summary(sections)

    def __str__(self):
        name = ("Tukey depth" if self.is_tukey else "AdaSSP" if not hasattr(self.spec, "loss")
                else "objective perturbation")
        lines = ["Call:", self.call, "", f"Private coefficients ({name}) after selection:"]
        if self.has_intervals:
            ci = self.confint()
            table = pd.DataFrame({"coef": self.coef, ci.columns[0]: ci.iloc[:, 0], ci.columns[1]: ci.iloc[:, 1]})
        else:
            table = pd.DataFrame({"coef": self.coef})
        lines.append(table.to_string(float_format=lambda v: f"{v:.6g}"))
        lines.append("")
        lines.append(f"epsilon spent: {_fmt(self.epsilon_spent)}   delta: {_fmt(self.delta_spent)}   "
                     f"neighbours: {self.ledger.entries[0].neighbours}")
        lines.extend(f"Note: {c}" for c in self.notes)
        lines.extend(f"Caveat: {c}" for c in self.ledger.caveats)
        return "\n".join(lines)

    @property
    def notes(self) -> list:
        """How to read the intervals (public: they depend on released values only)."""
        if self.is_tukey:
            out = [] if self.status == "released" else ["NOT RELEASED: " + TUKEY_FAILED_NOTE
                                                        + f" (status {self.status!r})."]
            out.append("There are " + TUKEY_NO_INTERVALS_NOTE + ".")
            out.append("The coefficients are conditional on the selected terms: they were chosen on the same data.")
            out.append("The " + TUKEY_UNITS_NOTE[4:] + ".")
            return out
        if not self.has_intervals:
            out = ["There are " + NO_INTERVALS_NOTE + ".", "The coefficients are " + SELECTION_NOTE.replace(
                ", and the intervals do not account for the selection", "") + "; they describe the clipped terms."]
        else:
            out = ["Intervals and standard errors are " + SELECTION_NOTE + "; they describe the clipped variables."]
        if hasattr(self.spec, "loss"):
            if self.ridge > 0 and self.spec.loss == "squared":
                out.append("Objective perturbation " + OP_RIDGE_NOTE[len("objective perturbation "):] + ".")
            elif self.ridge > 0:
                out.append("Objective perturbation adds a public ridge (Delta on the mapped scale), which shrinks "
                           "the coefficients, the more so with few rows.")
        elif self.ridge > 0:
            out.append("The " + RIDGE_NOTE[4:] + ".")
        return out

    def __repr__(self):
        return (f"<EstimateResult terms={self.names} epsilon_spent={_fmt(self.epsilon_spent)} "
                f"delta_spent={_fmt(self.delta_spent)}>")

    def _repr_html_(self):
        return self.summary().as_html()


def _pct(q):
    text = f"{100 * q:.4g}"
    return f"{text} %"


def original_units_map(ranges, intercept):
    """(T, t0) with beta = T theta + t0: coefficients on the data's units from the mapped ones.

    The mapped values are x~_j = (x_j - c_j) / h_j and y~ = (y - c_y) / h_y, so
    y = c_y + h_y (theta_0 + sum_j theta_j (x_j - c_j) / h_j): beta_j = h_y theta_j / h_j and
    beta_0 = c_y + h_y (theta_0 - sum_j theta_j c_j / h_j).  Without an intercept every
    centre is 0 (the map is a rescaling) and only the slopes remain.  A binary response
    (logistic refit) is not mapped: c_y = 0, h_y = 1.
    """
    c, h = np.asarray(ranges.centre, dtype=np.float64), np.asarray(ranges.half, dtype=np.float64)
    if ranges.response_centre is None:  # a binary response (log-odds): not mapped
        cy, hy = 0.0, 1.0
    else:
        cy, hy = float(ranges.response_centre), float(ranges.response_half)
    s = c.size
    if not intercept:
        return np.diag(hy / h) if s else np.zeros((0, 0)), np.zeros(s)
    T = np.zeros((s + 1, s + 1))
    T[0, 0] = hy
    T[0, 1:] = -hy * c / h
    T[1:, 1:] = np.diag(hy / h)
    t0 = np.zeros(s + 1)
    t0[0] = cy
    return T, t0
