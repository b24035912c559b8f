"""Public ranges for the terms and the response, and their private estimation.

``bounds=`` takes

* a dict of public ranges ``{name: (lower, upper)}`` (a single positive number b means
  (-b, b)) naming columns of the data, the response and any term: the range of a term not
  named is derived from its columns' ranges by interval arithmetic
  (:func:`complete_bounds`, :mod:`dpstats.derived_ranges`), and dummy columns of
  categorical terms take their contrast's values (0 or 1 for treatment coding); columns
  the formula does not use are accepted (a codebook);
* a pair ``(b_x, b_y)``: every term has the range (-b_x, b_x), the response (-b_y, b_y);
* ``"auto"``: a documented share of epsilon (``AUTO_BOUNDS_SHARE``) buys a private range for
  every numeric term and the response (:mod:`dpstats.privacy.auto_bounds`).

Each value is clipped to its range and mapped to [-1, 1] (:class:`TermRanges`), so the
sensitivities downstream use b_x = b_y = 1.  The ranges used are released as
``bounds_used``: public inputs, or outputs of the ledger's auto-bounds entry.  Bounds are
never computed from the data without budget.

A binary response (``response_type="binary"``, coded -1 / +1 for the hinge loss) is not
clipped and needs no range: a dict may omit it (a range given for it is ignored), and
``"auto"`` spends its share on the terms only.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..backends import IN_MEMORY
from ..errors import InvalidArgumentError, InvalidTypeError
from ..sufficient_stats import SufficientStats
from .auto_bounds import AUTO_RANGE_SHARE, column_grid_counts, default_grid, draw_ranges

#: Share of epsilon that ``bounds="auto"`` spends on the ranges (see :mod:`dpstats.privacy.auto_bounds`).
AUTO_BOUNDS_SHARE = AUTO_RANGE_SHARE


def check_bounds(bounds, required=True):
    """Validate the form of ``bounds`` without looking at the data.

    Returns "auto", a pair ``(b_x, b_y)`` of positive floats, or a dict term -> (lower, upper)
    (a single positive b given for a term becomes (-b, b)).
    """
    if bounds is None:
        if required:
            raise InvalidArgumentError(
                "bounds are required for this method: give public ranges {term: (lower, upper)} for every term and "
                "the response (from a codebook or domain knowledge), a pair (b_x, b_y) meaning [-b_x, b_x] for "
                "every term and [-b_y, b_y] for the response, or bounds='auto' to spend a share of epsilon "
                "estimating them privately. Bounds are never taken from the data for free."
            )
        return None
    if isinstance(bounds, str):
        if bounds != "auto":
            raise InvalidArgumentError(f"bounds must be a dict of ranges, a pair (b_x, b_y) or 'auto'; got {bounds!r}.")
        return "auto"
    if isinstance(bounds, Mapping):
        out = {}
        for key, value in bounds.items():
            if not isinstance(key, str):
                raise InvalidTypeError(f"bounds keys must be term names; got {key!r}.")
            out[key] = _range("bounds[" + repr(key) + "]", value)
        return out
    if isinstance(bounds, (tuple, list, np.ndarray)) and len(bounds) == 2:
        if any(isinstance(v, (tuple, list, np.ndarray)) for v in bounds):
            raise InvalidTypeError(
                "bounds=(b_x, b_y) takes two positive numbers; for (lower, upper) ranges give a dict "
                "{term: (lower, upper)} naming every term and the response.")
        return (_positive("bounds[0] (b_x)", bounds[0]), _positive("bounds[1] (b_y)", bounds[1]))
    raise InvalidTypeError(
        f"bounds must be a dict {{term: (lower, upper)}}, a pair (b_x, b_y) or 'auto'; got {bounds!r}."
    )


def _range(name, value):
    """(lower, upper) with lower < upper, both finite; a single positive b means (-b, b)."""
    if isinstance(value, (tuple, list, np.ndarray)):
        if len(value) != 2:
            raise InvalidArgumentError(f"{name} must be a range (lower, upper) or a positive number b; got {value!r}.")
        lower, upper = (_finite(f"{name}[0] (lower)", value[0]), _finite(f"{name}[1] (upper)", value[1]))
        if not lower < upper:
            raise InvalidArgumentError(f"{name} must have lower < upper; got ({lower!r}, {upper!r}).")
        return (lower, upper)
    b = _positive(name, value)
    return (-b, b)


def _finite(name, value):
    if isinstance(value, (bool, str, bytes)):  # a string is not converted, as for epsilon or radius
        raise InvalidTypeError(f"{name} must be a finite number; got {value!r}.")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"{name} must be a finite number; got {value!r}.") from None
    if not math.isfinite(value):
        raise InvalidArgumentError(f"{name} must be a finite number; got {value!r}.")
    return value


def _positive(name, value):
    value = _finite(name, value)
    if not value > 0:
        raise InvalidArgumentError(f"{name} must be a positive finite number; got {value!r}.")
    return value


@dataclass
class ClippedData:
    """The design and response mapped to [-1, 1] by their public ranges (see :class:`TermRanges`).

    ``b_x`` and ``b_y`` are the bounds that hold on the mapped values: 1 after a mapping,
    infinite for the unclipped data of a method without bounds (kendall's sign step).
    """

    X: np.ndarray
    y: np.ndarray | None
    b_x: float
    b_y: float | None
    intercept: bool
    entries: list = field(default_factory=list)
    public_bounds: object = None
    #: (negative, positive) levels of a binary response coded -1 / +1 (not clipped).
    response_levels: tuple | None = None
    #: The public ranges and the affine map that was applied (None when nothing was mapped).
    ranges: "TermRanges | None" = None
    #: Curator-only notes on the mapping (for ``bounds="auto"``: clipped shares per term).
    curator: dict = field(default_factory=dict)
    #: Value of the forced constant column whose coefficient lies in the ball, for data
    #: centred by private means (:mod:`dpstats.bss.intercept`); None otherwise.
    intercept_column: float | None = None

    #: Rows in memory (:mod:`dpstats.backends`).
    backend = IN_MEMORY

    @property
    def intercept_value(self) -> float:
        return self.intercept_column if self.intercept_column is not None else min(1.0, self.b_x)

    def design_with_intercept(self) -> np.ndarray:
        """The mapped design with the intercept column (value min(1, b_x)) first, when the formula has one."""
        if not self.intercept:
            return self.X
        return np.hstack([np.full((self.X.shape[0], 1), self.intercept_value), self.X])

    @property
    def bounds_used(self) -> dict | None:
        return None if self.ranges is None else self.ranges.used()

    @property
    def n_rows(self) -> int:
        """Rows of the clipped data (after ``na_action="omit"``; not public)."""
        return int(self.X.shape[0])

    def columns(self, index) -> np.ndarray:
        """The design's columns ``index`` (n x len(index)), without the intercept column."""
        return self.X[:, index]

    def stats_with_intercept_column(self) -> SufficientStats:
        """Sufficient statistics of (intercept column, design) and the response, the constant column first
        (``intercept=True``): the statistics of data centred by private means (:mod:`dpstats.bss.intercept`)."""
        return SufficientStats.from_arrays(self.design_with_intercept(), self.y, intercept=True)


@dataclass
class TermRanges:
    """Public ranges [lower, upper] per term (and of the response) and the map to [-1, 1].

    A value is first clipped to its range, then mapped by x -> (x - centre) / half:

    * with an intercept, centre = (lower + upper) / 2 and half = (upper - lower) / 2, the
      affine map of the range onto [-1, 1] (the intercept absorbs the shift, so nothing is
      lost by centring at the public midpoint);
    * without one, centre = 0 and half = max(|lower|, |upper|): a pure rescaling, so a model
      through the origin stays a model through the origin.

    Either way the mapped values lie in [-1, 1] (b_x = b_y = 1 in the sensitivities).
    """

    terms: list
    lower: np.ndarray
    upper: np.ndarray
    response: str | None = None
    response_lower: float | None = None
    response_upper: float | None = None
    intercept: bool = True

    def __post_init__(self):
        self.lower = np.asarray(self.lower, dtype=np.float64)
        self.upper = np.asarray(self.upper, dtype=np.float64)
        self.centre, self.half = _affine(self.lower, self.upper, self.intercept)
        if self.response_lower is not None:
            c, h = _affine(np.array([self.response_lower]), np.array([self.response_upper]), self.intercept)
            self.response_centre, self.response_half = float(c[0]), float(h[0])
        else:
            self.response_centre = self.response_half = None

    def map_design(self, X, in_place=False) -> np.ndarray:
        """Clip every column to its range and map it to [-1, 1].

        A new array, or ``X`` itself with ``in_place`` (a float64 design nobody else reads:
        a fresh n x p array costs its page faults, seconds for a wide design on a loaded
        machine).  Done in blocks of rows so that the three passes stay in cache.
        """
        X = np.asarray(X, dtype=np.float64)
        out = X if in_place else np.empty_like(X)
        step = max(1, _MAP_BLOCK // max(X.shape[1], 1))
        for i in range(0, X.shape[0], step):
            block = out[i:i + step]
            np.clip(X[i:i + step], self.lower, self.upper, out=block)
            block -= self.centre
            block /= self.half
        return out

    def map_response(self, y):
        if y is None or self.response_lower is None:
            return None
        return (np.clip(np.asarray(y, dtype=np.float64), self.response_lower, self.response_upper)
                - self.response_centre) / self.response_half

    def map_values(self, values, response=False):
        """Map public values given in the data's units (e.g. public centres) the same way (no clipping)."""
        if response:
            return (np.asarray(values, dtype=np.float64) - self.response_centre) / self.response_half
        return (np.asarray(values, dtype=np.float64) - self.centre) / self.half

    def used(self) -> dict:
        """term -> [lower, upper] for every term and the response (the ``bounds_used`` release item)."""
        out = {t: [float(lo), float(hi)] for t, lo, hi in zip(self.terms, self.lower, self.upper)}
        if self.response is not None and self.response_lower is not None:
            out[self.response] = [float(self.response_lower), float(self.response_upper)]
        return out


#: Values per block of rows in :meth:`TermRanges.map_design` (2 MiB of float64).
_MAP_BLOCK = 1 << 18


def _affine(lower, upper, intercept):
    if intercept:
        return (lower + upper) / 2.0, (upper - lower) / 2.0
    return np.zeros_like(lower), np.maximum(np.abs(lower), np.abs(upper))


@dataclass
class ResolvedBounds:
    """The public ranges that will hold after mapping, and the ledger entries it took to get them."""

    ranges: TermRanges
    entries: list = field(default_factory=list)
    public_bounds: object = None


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


def complete_bounds(bounds, plan, *, columns, constant=lambda name: None, response_required=True):
    """``(bounds, derived)``: a bounds dict completed with a range for every term of ``plan``.

    Keys of ``bounds`` may be terms, the response, or columns of the data: a codebook's
    ranges for every column are accepted with any formula, and the ranges of derived terms
    (products, powers, ``I(...)``, ``np.log``, contrasts, ...) are computed from the columns'
    ranges by interval arithmetic (:mod:`dpstats.derived_ranges`).  ``derived`` maps each
    term whose range was derived to how.  A pair or ``"auto"`` is returned unchanged.  Reads
    the formula, the schema and the given ranges only, so ``dp_select`` runs it before the
    charge; a term whose range can be neither found nor derived is named with what to supply.
    """
    from ..derived_ranges import RangeUnavailable, formula_ranges

    if not isinstance(bounds, dict):
        return bounds, {}
    factors = factor_names(plan)  # a range may also be given for a factor of products (I(x**2) in I(x**2):z)
    bounds = normalise_bounds_keys(bounds, list(plan.terms) + factors, plan.response)
    colset = set(columns)
    known = set(plan.terms) | set(factors) | ({plan.response} if plan.response is not None else set())
    unknown = [k for k in bounds if k not in known and k not in colset]
    if unknown:
        raise InvalidArgumentError(
            f"bounds dict names {unknown}, which are neither terms of the formula ({_few(plan.terms)}) nor "
            "columns of data.")
    try:
        found = formula_ranges(bounds, plan, columns=columns, constant=constant,
                               response_required=response_required)
    except RangeUnavailable as exc:
        raise InvalidArgumentError(
            "bounds: no public range is given for these terms, and none can be derived from the ranges of "
            "the columns they use (nothing was charged):\n  - " + str(exc).replace("\n", "\n  - ")
            + "\nDummy columns of categorical terms need no range; ranges of products, powers, I(...) and "
            "element-wise functions follow from their columns' ranges.") from None
    return found.ranges, found.derived


def factor_names(plan):
    """The numeric factors of the formula's terms, spelled as terms are (``I(x ** 2)``)."""
    if plan.plain_columns is not None:
        return []
    from ..derived_ranges import _clean

    _, x_info = plan.infos()
    return sorted({_clean(getattr(f, "code", str(f))) for f, info in x_info.factor_infos.items()
                   if info.type == "numerical"})


def contrast_ranges(plan, *, columns):
    """``(ranges, derived)`` of the candidate columns made only of categorical factors.

    Their values are the entries of their contrast columns (0 or 1 for treatment coding,
    -1, 0, 1 for ``Sum``, ...): public, from the declared levels and the coding alone.
    ``bounds="auto"`` uses them for the dummy columns it does not draw.
    """
    from ..derived_ranges import formula_ranges

    if not plan.categorical_terms:
        return {}, {}
    found = formula_ranges({}, plan, columns=columns, response_required=False, wanted=set(plan.categorical_terms))
    return found.ranges, found.derived


def _few(names, shown=10):
    names = list(names)
    return str(names[:shown])[:-1] + (f", ... ({len(names)} in all)]" if len(names) > shown else "]")


def check_bounds_keys(bounds, terms, response, categorical_terms=(), response_required=True):
    """A bounds dict names every term (categorical dummies default to 1) and the response.

    Depends only on the formula and the schema, so ``dp_select`` runs it before the charge.
    A binary response (``response_required=False``) is coded -1 / +1 and needs no bound.
    """
    if not isinstance(bounds, dict):
        return
    # Sets: a wide formula has thousands of terms, and list membership made this quadratic.
    term_set, categorical = set(terms), set(categorical_terms)
    missing = [t for t in terms if t not in bounds and t not in categorical]
    if response is not None and response_required and response not in bounds:
        missing.append(response)
    if missing:
        raise InvalidArgumentError(
            f"bounds dict has no bound for {missing}; give a public bound for every term and the response "
            "(dummy columns of categorical terms default to 1)."
        )
    unknown = [k for k in bounds if k not in term_set and k != response]
    if unknown:
        raise InvalidArgumentError(f"bounds dict names {unknown}, which are not terms of the formula ({terms}).")


def resolve_bounds(bounds, *, terms, response, n, epsilon_share, rng, counts_of, categorical_terms=(),
                   intercept=True):
    """Turn a validated ``bounds`` argument into public ranges per term (and of the response).

    ``categorical_terms`` may map each such term to its contrast's range
    (:func:`contrast_ranges`) instead of listing it.  ``counts_of(which, columns)`` returns :func:`dpstats.privacy.auto_bounds.column_grid_counts`
    on the public grid ``AUTO_GRID`` of the design's ``columns`` (which = "x") or of the
    response (which = "y"); it is called only for ``bounds="auto"``, after the charge.  ``response`` is None when the formula has no response or it is not mapped
    (a binary response).  Dummy columns of categorical terms take values in {0, 1} and
    default to the range (0, 1).
    """
    has_y = response is not None
    p = len(terms)
    entries = []
    if bounds == "auto":
        # One private range per numeric term and for the response; dummy columns keep (0, 1).
        ranged = [j for j, t in enumerate(terms) if t not in set(categorical_terms)]
        counts = list(counts_of("x", ranged)) if ranged else []
        names = [terms[j] for j in ranged]
        if has_y:
            counts += list(counts_of("y", None))
            names.append(response)
        drawn, entries = draw_ranges(counts, n, epsilon_share, rng, grid=AUTO_GRID, names=names)
        lower, upper = np.zeros(p), np.ones(p)
        if isinstance(categorical_terms, Mapping):
            # Dummy columns take their contrast's values (e.g. -1, 0, 1 under Sum coding).
            for j, t in enumerate(terms):
                if t in categorical_terms:
                    lower[j], upper[j] = categorical_terms[t]
        for j, (lo, hi) in zip(ranged, drawn):
            lower[j], upper[j] = lo, hi
        y_range = drawn[-1] if has_y else (None, None)
        public = "auto"
    elif isinstance(bounds, dict):
        check_bounds_keys(bounds, terms, response, categorical_terms)
        pairs = [bounds.get(t, DUMMY_RANGE) for t in terms]
        lower = np.array([lo for lo, _ in pairs], dtype=np.float64).reshape(p)
        upper = np.array([hi for _, hi in pairs], dtype=np.float64).reshape(p)
        y_range = bounds[response] if has_y else (None, None)
        public = {k: list(v) for k, v in bounds.items()}
    else:
        b_x, b_y = bounds
        lower, upper = np.full(p, -b_x), np.full(p, b_x)
        y_range = (-b_y, b_y) if has_y else (None, None)
        public = (b_x, b_y)
    ranges = TermRanges(list(terms), lower, upper, response if has_y else None, y_range[0], y_range[1],
                        intercept=intercept)
    return ResolvedBounds(ranges, entries=entries, public_bounds=public)


#: The public grid the private ranges are drawn on.
AUTO_GRID = default_grid()

#: The default range of a categorical term's dummy column (values 0 and 1).
DUMMY_RANGE = (0.0, 1.0)


def clip_to_bounds(model_frame, bounds, epsilon_share, rng, categorical_terms=(), in_place=False) -> ClippedData:
    """Map the design (and response) to [-1, 1] by public ranges, estimating them privately first
    with ``epsilon_share`` for ``bounds="auto"``.  ``in_place``: overwrite the frame's design
    (``dp_select`` does; its frame is read only through the mapped data afterwards)."""
    X, y = model_frame.X, model_frame.y
    levels = getattr(model_frame, "response_levels", None)
    binary = levels is not None
    if binary and isinstance(bounds, dict):
        # A binary response is coded -1 / +1 and never clipped; its bound is not needed.
        bounds = {k: v for k, v in bounds.items() if k != model_frame.response}
    has_y = y is not None and not binary

    def counts_of(which, columns):
        return column_grid_counts(X[:, columns] if which == "x" else np.asarray(y)[:, None], AUTO_GRID)

    resolved = resolve_bounds(bounds, terms=model_frame.terms, response=model_frame.response if has_y else None,
                              # The public input row count: under na_action="omit" the number of complete
                              # rows is private, and the range draw's width cost scales with n.
                              n=int(getattr(model_frame, "n_rows_input", X.shape[0])),
                              epsilon_share=epsilon_share, rng=rng, counts_of=counts_of,
                              categorical_terms=categorical_terms, intercept=model_frame.intercept)
    ranges = resolved.ranges
    curator = (_auto_bounds_report(X, y if has_y else None, ranges, categorical_terms) if bounds == "auto"
               else _clipped_report(X, y if has_y else None, ranges, categorical_terms))
    in_place = in_place and isinstance(X, np.ndarray) and X.dtype == np.float64 and X.flags.writeable
    return ClippedData(ranges.map_design(X, in_place=in_place), y if binary else ranges.map_response(y), 1.0,
                       None if binary or y is None else 1.0, model_frame.intercept, entries=resolved.entries,
                       public_bounds=resolved.public_bounds, response_levels=tuple(levels) if binary else None,
                       ranges=ranges, curator=curator)


#: Values compared at a time by :func:`_clipped_report` (no n x p temporary).
_REPORT_BLOCK_VALUES = 1 << 22


def _clipped_report(X, y, ranges, categorical_terms):
    """Curator-only: the share of each numeric term's (and the response's) values outside its
    public range, computed a block of columns at a time (no n x p temporary)."""
    if X.shape[0] == 0:
        return {"share_clipped": {}}
    skip = set(categorical_terms)
    cols = [j for j, t in enumerate(ranges.terms) if t not in skip]
    share = {}
    n = X.shape[0]
    step = max(1, _REPORT_BLOCK_VALUES // max(n, 1))
    every = len(cols) == X.shape[1]  # no dummy column: blocks are slices (views, no copy)
    for start in range(0, len(cols), step):
        block = slice(start, min(start + step, len(cols))) if every else cols[start:start + step]
        values = X[:, block]
        out = (values < ranges.lower[block]) | (values > ranges.upper[block])
        # count / n: the same floats as the mean of the booleans, a fifth of the time at p = 10^4
        shares = np.count_nonzero(out, axis=0) / n
        for j, f in zip(range(len(cols))[block] if every else block, shares.tolist()):
            share[ranges.terms[j]] = f
    if y is not None:
        share[ranges.response] = float(np.mean((y < ranges.response_lower) | (y > ranges.response_upper)))
    return {"share_clipped": share}


def _auto_bounds_report(X, y, ranges, categorical_terms):
    """Curator-only: the share of each term's values the drawn ranges clip, and loud caveats."""
    from .auto_bounds import clipped_fractions, range_caveats

    cols = [j for j, t in enumerate(ranges.terms) if t not in set(categorical_terms)]
    names = [ranges.terms[j] for j in cols]
    values = X[:, cols]
    pairs = [(ranges.lower[j], ranges.upper[j]) for j in cols]
    if y is not None:
        values = np.column_stack([values, y])
        names.append(ranges.response)
        pairs.append((ranges.response_lower, ranges.response_upper))
    fractions = clipped_fractions(values, pairs)
    report = {"auto_bounds_clipped_fraction": {t: float(f) for t, f in zip(names, fractions)}}
    warnings = range_caveats(values, pairs, names, AUTO_GRID)
    if warnings:
        report["auto_bounds_warnings"] = warnings
    return report
