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

One class per estimator family, each overriding what differs instead of the base asking which
family it holds: :class:`AdaSSPResult`, :class:`ResidualStepResult` (AdaSSP followed by a
residual step), :class:`ObjectivePerturbationResult` and :class:`TukeyResult`; what every
charged call's result shares (the ledger's totals, JSON, HTML) is
:class:`~dpstats.published.PublishedResult`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._lazy import lazy_module
from ..errors import InvalidArgumentError
from ..method_options import is_real
from ..display import _fmt
from ..published import PublishedResult
from . import intervals as iv
from . import residual_step
from .arguments import check_flag as _check_flag, check_level  # noqa: F401  (check_level: cli)
from .prediction import NO_INTERVALS_NOTE, EstimatePrediction
from .result_text import EstimateText

stats = lazy_module("scipy.stats")  # imported on first use (dpstats._lazy)

INTERCEPT = "Intercept"

SELECTION_NOTE = ("conditional on the selected terms: they were chosen on the same data, and the intervals do not "
                  "account for the selection")

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
    #: rows per least-squares model (public: from the noisy row count and d) and the selected terms that are
    #: 0/1 indicators by the public schema (a categorical's or bool's dummies), for the notes
    rows_per_model: float | None = None
    indicator_terms: tuple = ()


class EstimateResult(EstimatePrediction, EstimateText, PublishedResult):
    """Private coefficients of the selected terms (least squares or logistic), on the data's units.

    The base of the estimator families (module docstring); ``fit.estimate`` returns one of them.

    Attributes
    ----------
    coef : pandas.Series
        The private coefficients (``Intercept`` first when the formula has one), on the
        original units of the terms and the response (the clipped variables).
    coef_corrected : pandas.Series
        The intervals' centre: ``coef`` with the ridge undone (equal to ``coef`` when the
        ridge is 0; NaN where no interval is given). ``help(dpstats.estimation.intervals)``.
    bse : pandas.Series
        Standard errors: OLS's at epsilon = inf, else the bootstrap standard deviation of the
        corrected estimate (NaN where the estimate has no intervals).
    interval_method, no_interval_reason : str, str or None
        ``"ols"``, ``"bootstrap"`` or ``"none"``; and, for ``"none"``, why, in plain words.
    nobs, df_resid, sigma2, rsquared : float
        Rows, residual degrees of freedom, residual variance (response units) and R^2, from
        the released statistics: private, covered by the ledger entry (exact at epsilon = inf).
    selection_epsilon : float or None
        The epsilon of the selection this estimate follows (its own ledger).
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

    def __init__(self, *, call, formula, response, terms, theta, affine, intervals, ridge, spec, release, ledger,
                 plan, ranges, level, public_call, rows_public, model="linear", selection_epsilon=None,
                 selection_delta=None):
        self.call = call
        self.formula = formula
        self.response = response
        self.selected = list(terms)
        self.intercept = bool(plan.intercept)
        self.names = ([INTERCEPT] if self.intercept else []) + list(terms)
        self._T, self._t0 = affine
        self._theta = np.asarray(theta, dtype=np.float64)
        self.model = model
        self._iv = intervals if intervals is not None else iv.IntervalSet("none", reason=NO_INTERVALS_NOTE)
        self.coef = pd.Series(self._T @ self._theta + self._t0, index=self.names, name="coef")
        T = self._T
        if self._iv.available and self._iv.centre is not None:
            corrected = T @ np.asarray(self._iv.centre, dtype=np.float64) + self._t0
        elif not self._iv.available and self._iv.reason is not None and self._iv.centre is not None:
            corrected = np.full(len(self.names), np.nan)  # no reliable correction where no interval is given
        else:
            corrected = self.coef.to_numpy()
        #: The interval's centre: the estimate with the ridge undone (``help(dpstats.estimation.intervals)``);
        #: equal to ``coef`` when the ridge is 0; NaN where no interval is given (the correction is unreliable).
        self.coef_corrected = pd.Series(corrected, index=self.names, name="coef (bias-corrected)")
        self._errors = None if self._iv.errors is None else np.asarray(self._iv.errors) @ T.T
        self._cov = None if self._iv.cov is None else T @ self._iv.cov @ T.T
        if self._iv.kind == "ols":
            bse = np.sqrt(np.maximum(np.diag(self._cov), 0.0))
        elif self._errors is not None and len(self._errors) > 1:
            bse = np.std(self._errors, axis=0, ddof=1)
        else:
            bse = np.nan
        self.bse = pd.Series(bse, index=self.names, name="std err")
        self.ridge = None if ridge is None else float(ridge)
        self.spec = spec
        self._release = release
        self.ledger = ledger
        self._plan = plan
        self._ranges = ranges
        self.level = level
        self._public_call = public_call
        self._rows_public = rows_public
        #: epsilon of the selection this estimate follows (its own ledger), or None.
        self.selection_epsilon = selection_epsilon
        self._selection_delta = selection_delta

    def __getstate__(self):
        # A design planned on a Dask frame holds the lazy frame, whose graph may hold rows:
        # a pickled result keeps only the plan made from the schema (predict needs no more).
        state = dict(self.__dict__)
        if not state["_plan"].backend.rows_in_memory:
            state["_plan"] = state["_plan"].plan
        return state

    @property
    def theta_mapped(self) -> np.ndarray:
        """The released coefficients on the mapped scale (terms and response mapped to [-1, 1] by the
        public ranges; for the Tukey estimate, the original units): :attr:`coef` = T theta + t0 with
        (T, t0) = :attr:`mapping`.  Post-processing of the release, like :attr:`coef`."""
        return self._theta.copy()

    @property
    def mapping(self) -> tuple:
        """(T, t0): the public affine map from the mapped scale to the original units."""
        return self._T.copy(), np.array(self._t0, dtype=np.float64, copy=True)

    # statsmodels' name
    @property
    def params(self) -> pd.Series:
        return self.coef

    @property
    def bounds_used(self) -> dict:
        return {} if self._ranges is None else self._ranges.used()

    # ------------------------------------------------------------------ what a family declares
    #: The family's name in ``print()``.
    family = "private estimate"

    @property
    def status(self) -> str:
        """``"released"``, or the Tukey-depth mechanism's released failure (coefficients NaN)."""
        return "released"

    @property
    def mechanism(self) -> str:
        """A short name of the mechanism, for the summary."""
        raise NotImplementedError

    def _no_interval_text(self):
        """Why there are no intervals, when there are none."""
        return self._iv.reason

    def _interval_note(self) -> str:
        """How the (bootstrap) intervals were made, for the notes."""
        return ("The intervals cover sampling error, the privacy noise and the ridge's shrinkage (a bias-corrected "
                "symmetric parametric bootstrap that re-runs the whole estimator); they are centred at "
                "coef_corrected.")

    #: What shrinks the coefficients when the ridge is positive, for the notes.
    shrinkage = "the adaptive ridge (the noise is large compared with the design's smallest eigenvalue)"

    def _family_notes(self) -> list:
        """Notes only this family has (after the interval note)."""
        return []

    def _constraint_notes(self) -> list:
        """Notes on the family's public constraints besides the ridge."""
        return []

    def _header_rows(self) -> list:
        """Summary header rows only this family has (after the epsilon and delta spent)."""
        return []

    def _release_items(self) -> dict:
        """Items of :meth:`release` only this family has."""
        return {}

    def _statistics_at(self, centre):
        """(nobs, RSS / df, R^2) of the released statistics at ``centre``, or None (no design released)."""
        return None

    @property
    def n_draws(self) -> int:
        return 0 if self._errors is None else int(self._errors.shape[0])

    @property
    def has_intervals(self) -> bool:
        return self._iv.available

    @property
    def interval_method(self) -> str:
        """How the intervals were made: ``"ols"`` (epsilon = inf, t intervals), ``"bootstrap"`` or ``"none"``."""
        return self._iv.kind

    @property
    def no_interval_reason(self):
        """Plain words on why there are no intervals (None when there are)."""
        if self._iv.available:
            return None
        return self._no_interval_text()

    def _require_intervals(self):
        if not self._iv.available:
            raise InvalidArgumentError("this estimate has no intervals (" + self.no_interval_reason + ").")

    def confint(self, level=None, *, selection_adjusted=False, strict=False) -> pd.DataFrame:
        """Intervals at ``level`` (default: the estimate's level), columns named as R's ``confint``.

        Where this estimate has no valid interval (``no_interval_reason``), the rows are NaN, as R
        gives NA, the reason is in the frame's ``attrs["reason"]`` and a
        :class:`~dpstats.errors.NoIntervalWarning` says it; ``strict=True`` raises instead.

        At epsilon = inf: ordinary least squares' t intervals (statsmodels, R).  Otherwise the
        bias-corrected symmetric parametric bootstrap around ``coef_corrected``
        (``help(dpstats.estimation.intervals)``), which covers sampling, privacy noise and the
        ridge's shrinkage; post-processing of the release, no budget.

        ``selection_adjusted=True`` widens them to be valid after the private selection on
        the same data (Zrnic and Jordan 2020): level 1 - alpha' with alpha' =
        :func:`~dpstats.estimation.intervals.selection_adjusted_alpha` of the selection's
        epsilon and the public row count; refused, in plain words, when that correction is
        useless (alpha' below 1e-12) or the row count is not public.
        """
        level = self.level if level is None else check_level(level)
        _check_flag("selection_adjusted", selection_adjusted)
        _check_flag("strict", strict)
        a = (1 - level) / 2
        if not self._iv.available and not strict:
            import warnings

            from ..errors import NoIntervalWarning

            out = pd.DataFrame(np.full((len(self.names), 2), np.nan), index=self.names, columns=[_pct(a), _pct(1 - a)])
            out.attrs["reason"] = self.no_interval_reason
            reason = str(self.no_interval_reason)
            reason = reason if reason.lower().startswith("no interval") else f"no intervals: {reason}"
            warnings.warn(f"{reason}; confint() gives NaN rows (strict=True raises).",
                          NoIntervalWarning, stacklevel=2)
            return out
        self._require_intervals()
        half = self._half_widths(level)
        if selection_adjusted:
            inner = self._adjusted_level(level)
            if self._iv.kind == "ols":
                half = self._half_widths(inner)
            else:  # the bootstrap cannot resolve tiny tails: scale by the normal quantiles' ratio
                half = half * stats.norm.ppf(0.5 + inner / 2) / stats.norm.ppf(0.5 + level / 2)
        centre = self.coef_corrected.to_numpy()
        return pd.DataFrame(np.column_stack([centre - half, centre + half]), index=self.names,
                            columns=[_pct(a), _pct(1 - a)])

    def _adjusted_level(self, level):
        eps_s, n = self.selection_epsilon, self._rows_public
        if eps_s is None or n is None:
            raise InvalidArgumentError(
                "selection_adjusted=True needs the selection's epsilon and a public row count (replace-one "
                "neighbours); this estimate has " + ("no selection epsilon." if eps_s is None else
                                                      "no public row count."))
        if self._selection_delta:
            raise InvalidArgumentError(
                "no selection-adjusted interval: the selection spent delta > 0, and the max-information correction "
                "of Zrnic and Jordan (2020) used here is for pure epsilon-DP selections; the intervals of confint() "
                "are conditional on the selected terms.")
        alpha = iv.selection_adjusted_alpha(1 - level, eps_s, n)
        if alpha < iv.MIN_ADJUSTED_ALPHA:
            raise InvalidArgumentError(
                f"no selection-adjusted interval: with the selection's epsilon = {_fmt(eps_s)} on {n} rows the "
                "max-information correction of Zrnic and Jordan (2020) needs a miscoverage below 1e-12 (it is useful "
                "for a selection epsilon of order 1 / sqrt(n)); the intervals of confint() are conditional on the "
                "selected terms.")
        return 1 - alpha

    def _half_widths(self, level):
        """Half-widths per coefficient at ``level`` (t quantile x se at epsilon = inf)."""
        if self._iv.kind == "ols":
            return iv.t_quantile(level, self._iv.df_resid) * self.bse.to_numpy()
        return iv.half_widths(self._errors, level)

    def conf_int(self, alpha=0.05, cols=None, *, selection_adjusted=False, strict=False) -> pd.DataFrame:
        """statsmodels' spelling: intervals at level 1 - ``alpha`` (default 0.05, a 95 % interval, as in
        statsmodels, whatever the estimate's level), for the terms ``cols`` (names; None: all).  The same
        intervals as :meth:`confint` (R's spelling, which takes the level itself)."""
        if not is_real(alpha) or not 0.0 < float(alpha) < 1.0:
            raise InvalidArgumentError(f"alpha must be a number in (0, 1), the miscoverage (0.05 for a 95 % interval, "
                                       f"as in statsmodels; confint() takes the level); got {alpha!r}.")
        out = self.confint(1.0 - float(alpha), selection_adjusted=selection_adjusted, strict=strict)
        if cols is None:
            return out
        names = [cols] if isinstance(cols, str) else list(cols)
        unknown = [c for c in names if c not in out.index]
        if unknown:
            raise InvalidArgumentError(f"cols names terms that are not in this estimate: {unknown}; its terms are "
                                       f"{list(out.index)}.")
        return out.loc[names]

    def plot(self, ax=None, level=None, intercept=False):
        """The private coefficients with their intervals (R's ``coefplot``), one row per term.

        Points: :attr:`coef`; horizontal lines: :meth:`confint` at ``level`` (default: the
        estimate's level); a dashed line at 0.  The intercept is left out unless
        ``intercept=True`` (its scale differs from the slopes').  An estimate without
        intervals (:attr:`has_intervals` False; the notes say why) draws the points alone
        and says so.  Everything drawn is released (the coefficients and the
        bootstrap on released statistics), so the figure may be published with the
        estimate.  Names are on the vertical axis and wrap; a figure made here keeps them
        on ``savefig`` without ``bbox_inches``.  Returns the matplotlib Axes (needs
        ``pip install "dpstats[plots]"``).
        """
        from ..plots import add_legend, new_axes, wrap

        _check_flag("intercept", intercept)
        level = self.level if level is None else check_level(level)
        if self.status != "released":
            raise InvalidArgumentError(f"nothing to plot: no coefficients were released ({self.status}).")
        names = [n for n in self.names if intercept or n != INTERCEPT]
        if not names:
            raise InvalidArgumentError("nothing to plot: the estimate has only the intercept; pass intercept=True.")
        labels = [wrap(n) for n in names]
        own_figure = ax is None
        ax = new_axes(labels, ax, width=5.0)
        y = np.arange(len(names))
        coef = self.coef[names].to_numpy()
        if self.has_intervals:
            # Drawn as segments, not error bars: a basic bootstrap interval need not contain the point.
            ci = self.confint(level).loc[names].to_numpy()
            ax.hlines(y, ci[:, 0], ci[:, 1], color="#247", linewidth=2,
                      label=f"{_pct(level)} basic bootstrap interval")
            ax.plot(coef, y, "o", color="#247", label="coefficient")
        else:
            ax.plot(coef, y, "o", color="#247", label="coefficient (no intervals: see the estimate's notes)")
        ax.axvline(0.0, color="black", linestyle="--", linewidth=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"coefficient (original units of {self.response})" if self.response else "coefficient")
        ax.set_title(f"private estimate: {self.mechanism}", fontsize=9)
        add_legend(ax, ax.get_legend_handles_labels()[0], own_figure)
        return ax


    def to_frame(self) -> pd.DataFrame:
        """A tidy table, one row per coefficient (R's ``broom::tidy``).

        Columns: ``term``, ``estimate`` (the released coefficients), ``estimate_corrected``
        (the interval's centre: ridge undone), ``std_error``, ``conf_low``, ``conf_high`` (at
        the estimate's level; NaN when there are none, see ``no_interval_reason``),
        ``interval`` (how they were made) and ``ledger_entry`` (the mechanism that paid for
        every column: everything here is post-processing of that entry's release).
        """
        if self.has_intervals:
            ci = self.confint().to_numpy()
        else:
            ci = np.full((len(self.names), 2), np.nan)
        entry = self.ledger.entries[-1]  # the estimator's; private ranges, when bought, come first
        return pd.DataFrame({
            "term": self.names,
            "estimate": self.coef.to_numpy(),
            "estimate_corrected": self.coef_corrected.to_numpy(),
            "std_error": self.bse.to_numpy(),
            "conf_low": ci[:, 0],
            "conf_high": ci[:, 1],
            "interval": self.interval_method,
            "ledger_entry": f"{entry.mechanism} (epsilon = {_fmt(entry.epsilon)}, delta = {_fmt(entry.delta)})",
        })

    tidy = to_frame

    @property
    def _centre_differs(self) -> bool:
        return not np.allclose(self.coef.to_numpy(), self.coef_corrected.to_numpy(), rtol=1e-12, atol=0)

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
            "intervals": {"method": self.interval_method, "reason_none": self.no_interval_reason,
                          "centre": ({k: float(v) for k, v in self.coef_corrected.items()} if ci is not None
                                     else None)},
            # Post-processing of the ledger entry's release (private, covered by it); exact at epsilon = inf.
            "fit_statistics": ({"nobs": _num(self.nobs), "df_resid": _num(self.df_resid), "sigma2": _num(self.sigma2),
                                "rsquared": _num(self.rsquared)} if self._fit_statistics() is not None else None),
            **self._release_items(),
            "ledger": self.ledger.to_dict(),
        }

    def __repr__(self):
        return (f"<{type(self).__name__} terms={self.names} epsilon_spent={_fmt(self.epsilon_spent)} "
                f"delta_spent={_fmt(self.delta_spent)}>")


def _ridge_row(result):
    return [] if result.ridge is None else [["ridge (mapped scale)", _fmt(result.ridge)]]


class AdaSSPResult(EstimateResult):
    """AdaSSP (Wang 2018): least squares from the noisy augmented Gram matrix."""

    family = "AdaSSP"

    @property
    def mechanism(self) -> str:
        kind = self.spec.kind
        return f"AdaSSP, {kind} noise" if kind != "none" else "none (epsilon = inf)"

    def _header_rows(self) -> list:
        return _ridge_row(self)

    def _statistics_at(self, centre):
        return iv.fit_statistics(self._release.gram, self.intercept, centre, self._release.spec.gram_sd)


class ResidualStepResult(AdaSSPResult):
    """AdaSSP followed by one residual step (:mod:`dpstats.estimation.residual_step`)."""

    family = "AdaSSP with a residual step"

    @property
    def mechanism(self) -> str:
        return "AdaSSP with a residual step, laplace noise"

    def _interval_note(self) -> str:
        return ("The intervals cover sampling error and the privacy noise of the three releases (a parametric "
                "bootstrap of the residual step's error with the released design held fixed); they are centred at "
                "coef_corrected.")

    def _family_notes(self) -> list:
        return [f"The residual step clipped the residuals at {_fmt(self._release.clip)} on the mapped scale "
                "(2.25 times a private high quantile, released): symmetric errors are unaffected; a skewed error "
                "distribution whose far tail passes it would bias the intercept."]

    def _statistics_at(self, centre):
        # its residual variance comes from the step's own (Z'r, r'r)
        return residual_step.fit_statistics(self._release, centre)


class ObjectivePerturbationResult(EstimateResult):
    """Objective perturbation (Kifer, Smith and Thakurta 2012), squared or logistic loss."""

    family = "objective perturbation"
    shrinkage = "objective perturbation's public ridge"

    @property
    def mechanism(self) -> str:
        if not self.spec.private:
            return "none (epsilon = inf)"
        return f"objective perturbation, {self.spec.loss} loss"

    def _header_rows(self) -> list:
        rows = _ridge_row(self)
        if self.spec.loss == "squared":
            rows.append(["radius (mapped scale, public)", _fmt(self.spec.radius)])
        return rows

    def _constraint_notes(self) -> list:
        spec = self.spec
        if spec.loss == "squared" and math.isfinite(spec.radius) and (
                float(np.linalg.norm(self._theta)) >= spec.radius * (1 - iv.BALL_TOL)):
            return [f"A public constraint binds: the coefficients lie on the boundary of the ball of radius "
                    f"{_fmt(spec.radius)} (mapped scale); a larger radius= removes the constraint."]
        return []

    def _statistics_at(self, centre):
        gram = self._release.gram
        if gram is None:  # the logistic loss releases no design
            return None
        return iv.fit_statistics(gram, self.intercept, centre, self._release.gram_spec.gram_sd)


class TukeyResult(EstimateResult):
    """The Tukey-depth mechanism with propose-test-release: one point, in the original units, or a released failure."""

    family = "Tukey depth"

    @property
    def status(self) -> str:
        return self.spec.status

    @property
    def mechanism(self) -> str:
        spec = self.spec
        if not spec.private:
            return "none (epsilon = inf)"
        return "Tukey depth with PTR" + ("" if spec.status == "released" else f" (failed: {spec.status})")

    def _no_interval_text(self):
        return "no interval: " + TUKEY_NO_INTERVALS_NOTE[len("no intervals or standard errors: "):]

    def _header_rows(self) -> list:
        spec = self.spec
        if not spec.private:
            return []
        rows = [["status", self.status]]
        if spec.noisy_n_lower is not None:
            rows.append(["noisy lower bound on rows", _fmt(spec.noisy_n_lower)])
        rows.append(["models", str(spec.num_models)])
        if spec.noisy_distance is not None:
            rows.append(["noisy distance / threshold", f"{_fmt(spec.noisy_distance)} / {_fmt(spec.ptr_threshold)}"])
        return rows

    def _release_items(self) -> dict:
        return {"status": self.status}

    @property
    def notes(self) -> list:
        out = [] if self.status == "released" else [f"NOT RELEASED: {TUKEY_FAILED_NOTE} (status {self.status!r})."]
        out.append("There are " + TUKEY_NO_INTERVALS_NOTE + ".")
        out.append("The coefficients are conditional on the selected terms: they were chosen on the same data.")
        out.append("The " + TUKEY_UNITS_NOTE[4:] + ".")
        spec = self.spec
        if spec.private and spec.indicator_terms and spec.rows_per_model:
            r = spec.rows_per_model
            out.append(f"{', '.join(spec.indicator_terms)}: 0/1 indicator{'s' if len(spec.indicator_terms) > 1 else ''}"
                       f". Each least-squares model sees {r:.0f} rows, and a level held by fewer than about 3 / {r:.0f} "
                       f"= {3 / r:.0%} of the rows is missing from most of them, whichever level it is. Where the 1s "
                       "are rare those fits put the coefficient near 0 (an 8 % indicator with coefficient 1 came out "
                       "0.008 at n = 5000, epsilon 5); where the 0s are (a rare reference level) the indicator is "
                       "constant in those fits and shares the intercept with it, so its coefficient and the "
                       "intercept are biased in opposite directions (a 0/1 term that is 1 in 89 % of the rows came "
                       "out about 0.8 against least squares' 0.44 on Ecdat Wages). The depth median follows them. "
                       "With a rare level use rows_per_model of at least 3 / (its share), e.g. 60 for a 5 % level, "
                       "which needs many more rows for the mechanism's test (n / rows_per_model models), or "
                       "method='adassp' with public ranges.")
        return out


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else None


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
