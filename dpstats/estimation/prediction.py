"""What an estimate says about rows: R's ``predict.lm`` for new rows and the fit statistics (rows,
residual variance, R^2) from the released statistics.

A part of :class:`dpstats.estimation.result.EstimateResult` (its base), kept apart from the
coefficients and intervals: everything here is post-processing of the estimate's release
(the coefficients, the bootstrap's draws, the released statistics of each family's
``_statistics_at``).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import InvalidArgumentError
from . import intervals as iv
from .arguments import check_flag as _check_flag, check_level
from .design import prediction_design

NO_INTERVALS_NOTE = ("no intervals or standard errors: objective perturbation with the logistic loss releases the "
                     "coefficients only, and nothing about the design that a bootstrap would need")


class EstimatePrediction:
    """Predictions and fit statistics of an estimate (see the module docstring)."""

    def predict(self, newdata=None, *, interval=None, level=None, clip=False, type=None):  # noqa: A002 - R's name
        """Predictions for new rows through the formula's design of the selected terms (R's ``predict.lm``).

        Parameters
        ----------
        newdata : pandas.DataFrame or dict of columns
            Needs only the columns the selected terms use, with the dtypes of the fit's data
            (numeric columns numeric: strings are refused, not converted) and, for categorical
            terms, the declared levels (others give NaN).  Incomplete rows give NaN.  Checked
            before anything is computed.
        interval : None, "confidence" or "prediction"
            ``"confidence"``: an interval for the mean response at the row; ``"prediction"``:
            for a new observation (adds the residual variance, Gaussian errors), both as R's
            ``predict.lm`` (columns ``fit``, ``lwr``, ``upr``).  At epsilon = inf they are R's
            t intervals; otherwise symmetric bootstrap intervals around the bias-corrected fit
            (``help(dpstats.estimation.intervals)``), so ``fit`` (the released coefficients'
            prediction) may lie outside them when the ridge is active (``notes`` says so).
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
        if newdata is None:
            # R and statsmodels give the fitted values; the estimate keeps no rows (its release is the
            # coefficients), so the rows must be passed: the selection's own data gives the fitted values
            raise InvalidArgumentError(
                "predict() needs newdata=, a DataFrame with the columns of the selected terms: the estimate keeps "
                "no rows. For fitted values pass the data of the selection, predict(newdata=data).")
        if interval not in (None, "confidence", "prediction"):
            raise InvalidArgumentError(f"interval must be None, 'confidence' or 'prediction'; got {interval!r}.")
        _check_flag("clip", clip)
        if clip and self._ranges is None:
            raise InvalidArgumentError("clip=True needs public ranges, and this estimate has none: the Tukey "
                                       "mechanism fitted the unclipped terms in their original units; use clip=False.")
        allowed = (None, "response") if self.model == "linear" else (None, "response", "link", "class")
        if type not in allowed:
            raise InvalidArgumentError(f"type must be one of {list(allowed)} for a {self.model} refit; got {type!r}.")
        level = self.level if level is None else check_level(level)
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
            return self._probabilities(fit, type)
        if interval is None:
            return fit
        return self._prediction_intervals(Z, fit, interval, level)

    def _probabilities(self, fit, type):  # noqa: A002 - R's name
        """A logistic refit's probability of the second level, or the predicted level (``type="class"``)."""
        with np.errstate(invalid="ignore"):
            prob = 0.5 * (1.0 + np.tanh(0.5 * fit.to_numpy()))
        if type == "class":
            levels = getattr(self._plan, "response_levels", None) or (-1, 1)
            labels = np.where(prob >= 0.5, 1, 0)
            return pd.Series([levels[k] if np.isfinite(p) else None for k, p in zip(labels, prob)],
                             index=fit.index, name="class", dtype=object)
        return pd.Series(prob, index=fit.index, name="probability")

    def _prediction_intervals(self, Z, fit, interval, level):
        """R's ``predict.lm`` columns fit, lwr, upr: t intervals at epsilon = inf, else the bootstrap's."""
        centre = Z @ self.coef_corrected.to_numpy()
        sigma2 = self.sigma2 if interval == "prediction" else 0.0
        with np.errstate(invalid="ignore"):
            if self._iv.kind == "ols":
                var = np.einsum("ij,jk,ik->i", Z, self._cov, Z) + sigma2
                half = iv.t_quantile(level, self._iv.df_resid) * np.sqrt(np.maximum(var, 0.0))
            else:
                err = Z @ self._errors.T  # (rows, draws)
                if interval == "prediction" and self._iv.sigma2_draws is not None:
                    # each draw's residual variance carries the release's noise (dpstats.estimation.bootstrap)
                    scale = np.sqrt(self._iv.sigma2_draws * self._response_half2())
                    err = err + (scale * self._iv.noise_normals)[None, :]
                elif interval == "prediction":
                    err = err + math.sqrt(sigma2) * self._iv.noise_normals[None, :]
                half = np.quantile(np.abs(err), level, axis=1)
        return pd.DataFrame({"fit": fit.to_numpy(), "lwr": centre - half, "upr": centre + half}, index=fit.index)

    def _fit_statistics(self):
        if self.model != "linear":
            return None
        centre = self._iv.centre if self._iv.available and self._iv.centre is not None else self._theta
        return self._statistics_at(centre)

    @property
    def nobs(self) -> float:
        """Rows used: exact at epsilon = inf; otherwise the noisy count the ledger entry releases
        (its G_00; private, covered by that entry).  NaN when nothing about the rows is released."""
        st = self._fit_statistics()
        return math.nan if st is None else st[0]

    @property
    def df_resid(self) -> float:
        """Residual degrees of freedom ``nobs - (number of coefficients)`` (noisy when ``nobs`` is)."""
        if self._iv.kind == "ols":
            return float(self._iv.df_resid)
        return self.nobs - len(self.names)

    @property
    def sigma2(self) -> float:
        """Residual variance on the response's units: RSS / df from the released statistics at the
        bias-corrected coefficients (private, covered by the ledger entry; exact at epsilon = inf,
        statsmodels' ``scale``)."""
        st = self._fit_statistics()
        if st is None:
            return math.nan
        return st[1] * self._response_half2()

    def _response_half2(self) -> float:
        """The square of the response's half range (mapped variances to the response's units)."""
        hy = 1.0 if self._ranges is None or self._ranges.response_half is None else float(self._ranges.response_half)
        return hy ** 2

    @property
    def rsquared(self) -> float:
        """R^2 from the released statistics (private, covered by the ledger entry; exact at epsilon = inf)."""
        st = self._fit_statistics()
        return math.nan if st is None else st[2]
