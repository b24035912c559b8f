"""The result of ``fit.estimate(...)``: private coefficients, intervals, predictions, ledger.

Modelled on statsmodels' regression results (``params``, ``bse``, ``conf_int``,
``predict``, ``summary``) with R's names where they differ (``coef``, ``confint``).
Everything it shows is computed from the ledger's release (the noisy sufficient
statistics) and public parameters: the coefficients and the bootstrap draws are
post-processing, so :meth:`EstimateResult.release` holds only ledger-covered items.
"""
from __future__ import annotations

import json
import numbers

import numpy as np
import pandas as pd

from ..errors import InvalidArgumentError, InvalidTypeError
from ..results import Summary, _fmt
from . import bootstrap
from .design import prediction_design

INTERCEPT = "Intercept"

SELECTION_NOTE = ("conditional on the selected terms: they were chosen on the same data, and the intervals do not "
                  "account for the selection")

RIDGE_NOTE = ("the adaptive ridge is active (the noise is large compared with the design's smallest eigenvalue): the "
              "coefficients are shrunk and the intervals may undercover; more rows, a larger epsilon or tighter "
              "public ranges make it vanish")


def check_level(level, name="level"):
    if isinstance(level, bool) or not isinstance(level, numbers.Real):
        raise InvalidTypeError(f"{name} must be a number in (0, 1); got {level!r}.")
    level = float(level)
    if not 0 < level < 1:
        raise InvalidArgumentError(f"{name} must be in (0, 1), e.g. 0.95; got {level!r}.")
    return level


class EstimateResult:
    """Private least-squares coefficients of the selected terms, on the data's units.

    Attributes
    ----------
    coef : pandas.Series
        The private coefficients (``Intercept`` first when the formula has one), on the
        original units of the terms and the response (the clipped variables).
    bse : pandas.Series
        Bootstrap standard errors.
    level : float
        Level of the intervals of :meth:`release` and :meth:`summary`.
    ridge : float
        The adaptive ridge used (on the mapped scale), chosen from released values.
    ledger : Ledger
        One entry: the AdaSSP release.
    bounds_used : dict
        term -> [lower, upper]: the public ranges the data was clipped and mapped with.
    """

    def __init__(self, *, call, formula, response, terms, theta, affine, boot_theta, ridge, spec, release, ledger,
                 plan, ranges, level, public_call, rows_public):
        self.call = call
        self.formula = formula
        self.response = response
        self.selected = list(terms)
        self.intercept = bool(plan.intercept)
        self.names = ([INTERCEPT] if self.intercept else []) + list(terms)
        self._T, self._t0 = affine
        self._theta = np.asarray(theta, dtype=np.float64)
        self._boot = np.asarray(boot_theta, dtype=np.float64) @ self._T.T + self._t0
        self.coef = pd.Series(self._T @ self._theta + self._t0, index=self.names, name="coef")
        self.bse = pd.Series(np.std(self._boot, axis=0, ddof=1) if len(self._boot) > 1 else np.nan,
                             index=self.names, name="std err")
        self.ridge = float(ridge)
        self.spec = spec
        self._release = release
        self.ledger = ledger
        self._plan = plan
        self._ranges = ranges
        self.level = level
        self._public_call = public_call
        self._rows_public = rows_public

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
        return self._ranges.used()

    @property
    def n_draws(self) -> int:
        return int(self._boot.shape[0])

    def confint(self, level=None) -> pd.DataFrame:
        """Basic parametric-bootstrap intervals at ``level`` (default: the estimate's level).

        Columns named as R's ``confint`` ("2.5 %", "97.5 %" at 0.95).  No budget: the
        bootstrap runs on the released statistics (:mod:`dpstats.estimation.bootstrap`).
        """
        level = self.level if level is None else check_level(level)
        ci = bootstrap.basic_interval(self.coef.to_numpy(), self._boot, level)
        a = (1 - level) / 2
        return pd.DataFrame(ci, index=self.names, columns=[_pct(a), _pct(1 - a)])

    conf_int = confint  # statsmodels' name

    def predict(self, newdata, *, interval=None, level=None, clip=False):
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
            and statsmodels do.

        Returns
        -------
        pandas.Series (no interval) or pandas.DataFrame
        """
        if interval not in (None, "confidence"):
            raise InvalidArgumentError(f"interval must be None or 'confidence'; got {interval!r}.")
        if not isinstance(clip, bool):
            raise InvalidTypeError(f"clip must be True or False; got {clip!r}.")
        X = prediction_design(self._plan, newdata, self.selected)
        if clip:
            X = np.clip(X, self._ranges.lower, self._ranges.upper)
        Z = np.hstack([np.ones((X.shape[0], 1)), X]) if self.intercept else X
        index = newdata.index if isinstance(newdata, pd.DataFrame) else None
        fit = pd.Series(Z @ self.coef.to_numpy(), index=index, name="fit")
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
        ci = self.confint()
        return {
            "call": dict(self._public_call),
            "selected": list(self.selected),
            "coefficients": {k: float(v) for k, v in self.coef.items()},
            "std_err": {k: float(v) for k, v in self.bse.items()},
            "conf_int": {k: [float(ci.loc[k].iloc[0]), float(ci.loc[k].iloc[1])] for k in self.names},
            "level": self.level,
            "ridge": self.ridge,
            "bounds_used": self.bounds_used,
            "ledger": self.ledger.to_dict(),
        }

    def release_json(self, **kwargs) -> str:
        return json.dumps(self.release(), **kwargs)

    def summary(self) -> Summary:
        """A statsmodels-like table: coefficients, bootstrap std errors, intervals, and the ledger."""
        ci = self.confint()
        a = (1 - self.level) / 2
        rows = [[name, _fmt(float(self.coef[name])), _fmt(float(self.bse[name])), _fmt(float(ci.loc[name].iloc[0])),
                 _fmt(float(ci.loc[name].iloc[1]))] for name in self.names]
        header = [
            ["response", str(self.response)],
            ["formula", self.formula],
            ["mechanism", f"AdaSSP, {self.spec.kind} noise" if self.spec.kind != "none" else "none (epsilon = inf)"],
            ["epsilon spent", _fmt(self.epsilon_spent)],
            ["delta spent", _fmt(self.delta_spent)],
            ["noisy row count", _fmt(float(self._release.gram[0, 0]))],
            ["ridge (mapped scale)", _fmt(self.ridge)],
            ["intervals", f"basic parametric bootstrap, {self.n_draws} draws, level {_fmt(self.level)}"],
        ]
        if self._rows_public is not None:
            header.insert(5, ["input rows (public)", str(self._rows_public)])
        used = [[t, _fmt(lo), _fmt(hi)] for t, (lo, hi) in self.bounds_used.items()]
        sections = [
            ("Call", self.call),
            ("Private least squares after selection", header, ["", ""]),
            ("Coefficients (original units)", rows, ["", "coef", "std err", f"[{_fmt(a)}", f"{_fmt(1 - a)}]"]),
            ("Bounds used (each range mapped to [-1, 1]; values outside are clipped)", used,
             ["term", "lower", "upper"]),
            ("Notes", "\n".join(self.notes)),
            ("Privacy ledger", str(self.ledger)),
        ]
        return Summary(sections)

    def __str__(self):
        ci = self.confint()
        lines = ["Call:", self.call, "", "Private coefficients (AdaSSP) after selection:"]
        table = pd.DataFrame({"coef": self.coef, ci.columns[0]: ci.iloc[:, 0], ci.columns[1]: ci.iloc[:, 1]})
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
        out = ["Intervals and standard errors are " + SELECTION_NOTE + "; they describe the clipped variables."]
        if self.ridge > 0:
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
    centre is 0 (the map is a rescaling) and only the slopes remain.
    """
    c, h = np.asarray(ranges.centre, dtype=np.float64), np.asarray(ranges.half, dtype=np.float64)
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
