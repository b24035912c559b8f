"""Public clipping bounds, and their private estimation (spec 05, section 5.2).

``bounds=`` takes

* a scalar pair ``(b_x, b_y)``: every term is clipped to [-b_x, b_x] and the response
  to [-b_y, b_y] (spec 01, section 1.1);
* a dict of public per-term bounds ``{term: b}``: each term (and the response, which
  must be in the dict) is divided by its bound and clipped to [-1, 1], so b_x = b_y = 1
  on the rescaled data.  Dummy columns of categorical terms take values in {0, 1} by
  construction and default to bound 1;
* ``"auto"``: a documented share of epsilon (``AUTO_BOUNDS_SHARE`` = 5 %, split evenly
  between x and y) buys two private quantiles, b_x the ``AUTO_QUANTILE`` (0.95) quantile
  of the row maxima ||x_i||_inf and b_y that of |y_i|.

Bounds are never computed from the data without budget.

Private quantile (privacy statement)
------------------------------------
Candidates c on the public grid 2^k, k = -30..40.  Utility u(c) = -|#{i : r_i <= c} - q n|
changes by at most 1 when one record is replaced (n public), so drawing c with
P(c) proportional to exp(epsilon u(c) / 2) is epsilon-DP (exponential mechanism).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError, InvalidTypeError
from ..mechanisms.exponential import exponential_log_probabilities, sample_exponential
from .ledger import REPLACE_ONE, LedgerEntry

AUTO_BOUNDS_SHARE = 0.05
AUTO_QUANTILE = 0.95
QUANTILE_GRID = 2.0 ** np.arange(-30, 41)


def check_bounds(bounds, required=True):
    """Validate the form of ``bounds`` without looking at the data."""
    if bounds is None:
        if required:
            raise InvalidArgumentError(
                "bounds are required for this method: give public bounds (b_x, b_y), a dict "
                "{term: bound} including the response, or bounds='auto' to spend 5% of epsilon "
                "estimating them privately. Bounds are never taken from the data for free."
            )
        return None
    if isinstance(bounds, str):
        if bounds != "auto":
            raise InvalidArgumentError(f"bounds must be (b_x, b_y), a dict or 'auto'; got {bounds!r}.")
        return "auto"
    if isinstance(bounds, Mapping):
        out = {}
        for key, value in bounds.items():
            if not isinstance(key, str):
                raise InvalidTypeError(f"bounds keys must be term names; got {key!r}.")
            out[key] = _positive("bounds[" + repr(key) + "]", value)
        return out
    if isinstance(bounds, (tuple, list, np.ndarray)) and len(bounds) == 2:
        return (_positive("bounds[0] (b_x)", bounds[0]), _positive("bounds[1] (b_y)", bounds[1]))
    raise InvalidTypeError(
        f"bounds must be a pair (b_x, b_y), a dict {{term: bound}} or 'auto'; got {bounds!r}."
    )


def _positive(name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"{name} must be a positive number; got {value!r}.") from None
    if not (math.isfinite(value) and value > 0):
        raise InvalidArgumentError(f"{name} must be a positive finite number; got {value!r}.")
    return value


def private_quantile_log_probabilities(values, q, epsilon, grid=QUANTILE_GRID):
    """Exact log-probabilities of each grid point under the private quantile."""
    values = np.sort(np.asarray(values, dtype=np.float64))
    counts = np.searchsorted(values, grid, side="right")
    loss = np.abs(counts - q * values.size)  # sensitivity 1
    return exponential_log_probabilities(loss, epsilon, 1.0)


def private_quantile(values, q, epsilon, rng, grid=QUANTILE_GRID) -> float:
    """Draw the private q-quantile of ``values`` on ``grid`` (see module docstring)."""
    values = np.sort(np.asarray(values, dtype=np.float64))
    counts = np.searchsorted(values, grid, side="right")
    loss = np.abs(counts - q * values.size)
    return float(grid[sample_exponential(loss, epsilon, 1.0, rng)])


@dataclass
class ClippedData:
    """Clipped design and response, with the bounds that hold on them."""

    X: np.ndarray
    y: np.ndarray | None
    b_x: float
    b_y: float | None
    intercept: bool
    term_scale: np.ndarray | None = None
    response_scale: float | None = None
    entries: list = field(default_factory=list)
    public_bounds: object = None

    @property
    def intercept_value(self) -> float:
        return min(1.0, self.b_x)

    def design_with_intercept(self) -> np.ndarray:
        """The clipped design with the forced intercept column (value min(1, b_x)) first."""
        if not self.intercept:
            return self.X
        return np.hstack([np.full((self.X.shape[0], 1), self.intercept_value), self.X])


def clip_to_bounds(model_frame, bounds, epsilon_share, rng, categorical_terms=()) -> ClippedData:
    """Apply public bounds, or estimate them privately with ``epsilon_share`` first."""
    X, y = model_frame.X, model_frame.y
    terms = model_frame.terms
    if bounds == "auto":
        entries = []
        has_y = y is not None
        eps_each = epsilon_share / (2 if has_y else 1)
        b_x = private_quantile(np.max(np.abs(X), axis=1), AUTO_QUANTILE, eps_each, rng)
        entries.append(LedgerEntry(
            "private quantile (bound b_x of the terms)", eps_each, 0.0, REPLACE_ONE,
            released={"b_x": b_x},
            details={"quantile": AUTO_QUANTILE, "of": "row maxima |x_i|_inf", "grid": "2^k, k=-30..40",
                     "sensitivity": 1.0},
        ))
        b_y = None
        if has_y:
            b_y = private_quantile(np.abs(y), AUTO_QUANTILE, eps_each, rng)
            entries.append(LedgerEntry(
                "private quantile (bound b_y of the response)", eps_each, 0.0, REPLACE_ONE,
                released={"b_y": b_y},
                details={"quantile": AUTO_QUANTILE, "of": "|y_i|", "grid": "2^k, k=-30..40", "sensitivity": 1.0},
            ))
        return ClippedData(np.clip(X, -b_x, b_x), None if y is None else np.clip(y, -b_y, b_y), b_x, b_y,
                           model_frame.intercept, entries=entries, public_bounds="auto")
    if isinstance(bounds, dict):
        missing = [t for t in terms if t not in bounds and t not in categorical_terms]
        if y is not None and model_frame.response not in bounds:
            missing.append(model_frame.response)
        if missing:
            raise InvalidArgumentError(
                f"bounds dict has no bound for {missing}; give a public bound for every term and the response "
                "(dummy columns of categorical terms default to 1)."
            )
        unknown = [k for k in bounds if k not in terms and k != model_frame.response]
        if unknown:
            raise InvalidArgumentError(f"bounds dict names {unknown}, which are not terms of the formula ({terms}).")
        scale = np.array([bounds.get(t, 1.0) for t in terms])
        Xc = np.clip(X / scale, -1.0, 1.0)
        yc, b_y, y_scale = None, None, None
        if y is not None:
            y_scale = bounds[model_frame.response]
            yc, b_y = np.clip(y / y_scale, -1.0, 1.0), 1.0
        return ClippedData(Xc, yc, 1.0, b_y, model_frame.intercept, term_scale=scale, response_scale=y_scale,
                           public_bounds=dict(bounds))
    b_x, b_y = bounds
    return ClippedData(np.clip(X, -b_x, b_x), None if y is None else np.clip(y, -b_y, b_y), b_x,
                       None if y is None else b_y, model_frame.intercept, public_bounds=(b_x, b_y))
