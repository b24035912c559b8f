"""Public clipping bounds, and their private estimation.

``bounds=`` takes

* a scalar pair ``(b_x, b_y)``: every term is clipped to [-b_x, b_x] and the response
  to [-b_y, b_y];
* a dict of public per-term bounds ``{term: b}``: each term (and the response, which
  must be in the dict) is divided by its bound and clipped to [-1, 1], so b_x = b_y = 1
  on the rescaled data.  Dummy columns of categorical terms take values in {0, 1} by
  construction and default to bound 1;
* ``"auto"``: a documented share of epsilon (``AUTO_BOUNDS_SHARE`` = 5 %, split evenly
  between x and y) buys two private quantiles, b_x the ``AUTO_QUANTILE`` (0.95) quantile
  of the row maxima ||x_i||_inf and b_y that of |y_i|.

Bounds are never computed from the data without budget.

A binary response (``response_type="binary"``, coded -1 / +1 for the hinge loss) is not
clipped and needs no bound (its loss is bounded by construction, :mod:`dpstats.bss.hinge`):
b_y of a pair is ignored, a dict
may omit the response (a bound given for it is ignored), and ``"auto"`` spends its whole
share on b_x.

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
    loss = np.abs(grid_counts(values, grid) - q * np.size(values))  # sensitivity 1
    return exponential_log_probabilities(loss, epsilon, 1.0)


def private_quantile(values, q, epsilon, rng, grid=QUANTILE_GRID) -> float:
    """Draw the private q-quantile of ``values`` on ``grid`` (see module docstring)."""
    return private_quantile_from_counts(grid_counts(values, grid), np.size(values), q, epsilon, rng, grid)


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
    #: (negative, positive) levels of a binary response coded -1 / +1 (not clipped).
    response_levels: tuple | None = None

    @property
    def intercept_value(self) -> float:
        return min(1.0, self.b_x)

    def design_with_intercept(self) -> np.ndarray:
        """The clipped design with the forced intercept column (value min(1, b_x)) first."""
        if not self.intercept:
            return self.X
        return np.hstack([np.full((self.X.shape[0], 1), self.intercept_value), self.X])


@dataclass
class ResolvedBounds:
    """The bounds that hold after clipping, and the ledger entries it took to get them."""

    b_x: float
    b_y: float | None
    term_scale: np.ndarray | None = None
    response_scale: float | None = None
    entries: list = field(default_factory=list)
    public_bounds: object = None


def private_quantile_from_counts(counts, n, q, epsilon, rng, grid=QUANTILE_GRID) -> float:
    """The private quantile from the counts #{i : r_i <= c} on the public grid.

    The counts add up over row blocks, which is all a distributed engine has to send.
    """
    loss = np.abs(np.asarray(counts, dtype=np.float64) - q * n)  # sensitivity 1
    return float(grid[sample_exponential(loss, epsilon, 1.0, rng)])


def normalise_bounds_keys(bounds, terms, response):
    """A bounds dict with its keys spelled as the formula's terms are.

    patsy normalises the spacing of a term's code (``I(bmi**2)`` becomes ``I(bmi ** 2)``);
    a key that matches a term only after the same normalisation is renamed to it.
    """
    if not isinstance(bounds, dict):
        return bounds
    known = set(terms) | ({response} if response is not None else set())
    out = {}
    for key, value in bounds.items():
        name = key if key in known else _patsy_spelling(key)
        out[name if name in known else key] = value
    return out


def _patsy_spelling(key):
    import patsy

    try:
        return ":".join(patsy.EvalFactor(part.strip()).code for part in str(key).split(":"))
    except Exception:  # noqa: BLE001 - not a valid expression: left as given, reported as unknown
        return key


def check_bounds_keys(bounds, terms, response, categorical_terms=(), response_required=True):
    """A bounds dict names every term (categorical dummies default to 1) and the response.

    Depends only on the formula and the schema, so ``dp_select`` runs it before the charge.
    A binary response (``response_required=False``) is coded -1 / +1 and needs no bound.
    """
    if not isinstance(bounds, dict):
        return
    missing = [t for t in terms if t not in bounds and t not in categorical_terms]
    if response is not None and response_required and response not in bounds:
        missing.append(response)
    if missing:
        raise InvalidArgumentError(
            f"bounds dict has no bound for {missing}; give a public bound for every term and the response "
            "(dummy columns of categorical terms default to 1)."
        )
    unknown = [k for k in bounds if k not in terms and k != response]
    if unknown:
        raise InvalidArgumentError(f"bounds dict names {unknown}, which are not terms of the formula ({terms}).")


def grid_counts(values, grid=QUANTILE_GRID):
    """#{i : values_i <= c} for every grid point c."""
    return np.searchsorted(np.sort(np.asarray(values, dtype=np.float64)), grid, side="right")


def resolve_bounds(bounds, *, terms, response, n, epsilon_share, rng, counts_of, categorical_terms=()):
    """Turn a validated ``bounds`` argument into the bounds that will hold on the data.

    ``counts_of(which)`` (which in {"x", "y"}) returns the grid counts of the row maxima
    |x_i|_inf or of |y_i|; it is called only for ``bounds="auto"``, after the budget is
    charged.  ``response`` is None when the formula has no response.
    """
    has_y = response is not None
    if bounds == "auto":
        eps_each = epsilon_share / (2 if has_y else 1)
        b_x = private_quantile_from_counts(counts_of("x"), n, AUTO_QUANTILE, eps_each, rng)
        entries = [LedgerEntry(
            "private quantile (bound b_x of the terms)", eps_each, 0.0, REPLACE_ONE, released={"b_x": b_x},
            details={"quantile": AUTO_QUANTILE, "of": "row maxima |x_i|_inf", "grid": "2^k, k=-30..40",
                     "sensitivity": 1.0})]
        b_y = None
        if has_y:
            b_y = private_quantile_from_counts(counts_of("y"), n, AUTO_QUANTILE, eps_each, rng)
            entries.append(LedgerEntry(
                "private quantile (bound b_y of the response)", eps_each, 0.0, REPLACE_ONE, released={"b_y": b_y},
                details={"quantile": AUTO_QUANTILE, "of": "|y_i|", "grid": "2^k, k=-30..40", "sensitivity": 1.0}))
        return ResolvedBounds(b_x, b_y, entries=entries, public_bounds="auto")
    if isinstance(bounds, dict):
        check_bounds_keys(bounds, terms, response, categorical_terms)
        scale = np.array([bounds.get(t, 1.0) for t in terms])
        return ResolvedBounds(1.0, 1.0 if has_y else None, term_scale=scale,
                              response_scale=bounds[response] if has_y else None, public_bounds=dict(bounds))
    b_x, b_y = bounds
    return ResolvedBounds(b_x, b_y if has_y else None, public_bounds=(b_x, b_y))


def clip_arrays(X, y, *, term_scale=None, response_scale=None, b_x=None, b_y=None):
    """Clip a design (and response) to its bounds: per-term scales mapped to [-1, 1], or
    (b_x, b_y).  The one clipping rule, for pandas frames and Dask partitions alike."""
    if term_scale is not None:
        Xc = np.clip(X / term_scale, -1.0, 1.0)
        yc = None if (y is None or response_scale is None) else np.clip(y / response_scale, -1.0, 1.0)
    else:
        Xc = np.clip(X, -b_x, b_x)
        yc = None if (y is None or b_y is None) else np.clip(y, -b_y, b_y)
    return Xc, yc


def clip_to_bounds(model_frame, bounds, epsilon_share, rng, categorical_terms=()) -> ClippedData:
    """Apply public bounds, or estimate them privately with ``epsilon_share`` first."""
    X, y = model_frame.X, model_frame.y
    levels = getattr(model_frame, "response_levels", None)
    if levels is not None:
        # A binary response is coded -1 / +1 and never clipped; its bound is not needed.
        if isinstance(bounds, dict):
            bounds = {k: v for k, v in bounds.items() if k != model_frame.response}
        resolved = resolve_bounds(bounds, terms=model_frame.terms, response=None, n=X.shape[0],
                                  epsilon_share=epsilon_share, rng=rng, categorical_terms=categorical_terms,
                                  counts_of=lambda which: grid_counts(np.max(np.abs(X), axis=1)))
        Xc, _ = clip_arrays(X, None, term_scale=resolved.term_scale, b_x=resolved.b_x)
        return ClippedData(Xc, y, resolved.b_x, None, model_frame.intercept, term_scale=resolved.term_scale,
                           response_scale=None, entries=resolved.entries, public_bounds=resolved.public_bounds,
                           response_levels=tuple(levels))
    resolved = resolve_bounds(
        bounds, terms=model_frame.terms, response=model_frame.response if y is not None else None,
        n=X.shape[0], epsilon_share=epsilon_share, rng=rng, categorical_terms=categorical_terms,
        counts_of=lambda which: grid_counts(np.max(np.abs(X), axis=1) if which == "x" else np.abs(y)))
    Xc, yc = clip_arrays(X, y, term_scale=resolved.term_scale, response_scale=resolved.response_scale,
                         b_x=resolved.b_x, b_y=resolved.b_y)
    return ClippedData(Xc, yc, resolved.b_x, resolved.b_y, model_frame.intercept, term_scale=resolved.term_scale,
                       response_scale=resolved.response_scale, entries=resolved.entries,
                       public_bounds=resolved.public_bounds)
