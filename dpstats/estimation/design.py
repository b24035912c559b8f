"""The refit's data: public ranges of the selected terms, their statistics, and new designs.

* :func:`selection_ranges` -- the public ranges of the selected terms and the response,
  from the selection's ``bounds_used`` or from ``bounds=`` given to ``estimate``;
* :func:`augmented_gram_of` -- the augmented Gram matrix of the mapped selected columns,
  evaluated with the selection's own design plan (same formula, same ``na_action``, same
  rows), on pandas or partition by partition on Dask; the only function here that reads
  data values (after the charge);
* :func:`mapped_rows_of` -- the mapped rows themselves, for a refit that needs more than
  the Gram matrix (objective perturbation with the logistic loss); reads data;
* :class:`MappedRows` -- the mapped rows as a source of sums over rows (pandas, or partition
  by partition on Dask), for the residual step's passes; reads data;
* :func:`design_rows_of` -- the selected columns as evaluated, neither clipped nor mapped
  (the bound-free Tukey-depth refit); reads data;
* :func:`prediction_design` -- the selected terms' columns for new data, through the
  formula's design (patsy's encoding of the selection, categorical contrasts included).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import patsy

from ..errors import InvalidArgumentError, InvalidTypeError
from ..formula import _clean_term_name, _names_in, _validate_data, evaluate_rows
from ..privacy.bounds import TermRanges, check_bounds, factor_names, normalise_bounds_keys
from . import adassp


def selection_ranges(plan, selected, bounds_used, bounds) -> TermRanges:
    """Public ranges of the selected terms and the response, mapped as the selection mapped them.

    ``bounds_used`` (the selection's, term -> [lower, upper]) or ``bounds`` (given to
    ``estimate`` for a selection without bounds: a dict naming every selected term and the
    response, or a pair (b_x, b_y)).  Public inputs only: runs before the charge.
    """
    response = plan.response
    binary = getattr(plan, "response_type", "numeric") == "binary"  # coded -1 / +1: no range, not mapped
    if bounds_used is not None:
        pairs = {t: tuple(v) for t, v in bounds_used.items()}
    else:
        checked = check_bounds(bounds, required=True)
        if checked == "auto":
            raise InvalidArgumentError(
                "bounds='auto' is not available in estimate(): it would spend budget on ranges. Give public "
                "ranges {term: (lower, upper)} for the selected terms and the response, or a pair (b_x, b_y).")
        if isinstance(checked, tuple):
            b_x, b_y = checked
            pairs = {t: (-b_x, b_x) for t in plan.terms}
            pairs[response] = (-b_y, b_y)
        else:
            # Ranges of the selected terms: given, or derived from the columns' ranges
            # (dpstats.derived_ranges); a codebook may name columns the formula does not use.
            from ..derived_ranges import RangeUnavailable, formula_ranges

            factors = factor_names(plan)  # a range may be given for a factor of products (I(x**2) in I(x**2):z)
            checked = normalise_bounds_keys(checked, list(plan.terms) + factors, response)
            columns = set(getattr(plan, "data_columns", None) or plan.used) | set(factors)
            unknown = [k for k in checked if k not in plan.terms and k != response and k not in columns]
            if unknown:
                raise InvalidArgumentError(
                    f"bounds names {unknown}, which are neither terms of the formula, the response nor columns of "
                    "the data.")
            try:
                found = formula_ranges(checked, plan, columns=columns, response_required=not binary, wanted=selected)
            except RangeUnavailable as exc:
                raise InvalidArgumentError(
                    "bounds has no public range for these selected terms or the response, and none can be derived "
                    "from the ranges of the columns they use:\n  - " + str(exc).replace("\n", "\n  - ")
                    + "\nGive bounds={term or column: (lower, upper)} (dummy columns of categorical terms need "
                    "none), or a pair (b_x, b_y).") from None
            pairs = {t: tuple(found.ranges[t]) for t in selected}
            if not binary:
                pairs[response] = tuple(found.ranges[response])
    lower = np.array([pairs[t][0] for t in selected], dtype=np.float64)
    upper = np.array([pairs[t][1] for t in selected], dtype=np.float64)
    if binary:
        return TermRanges(list(selected), lower, upper, response, None, None, intercept=bool(plan.intercept))
    return TermRanges(list(selected), lower, upper, response, float(pairs[response][0]), float(pairs[response][1]),
                      intercept=bool(plan.intercept))


def _after_charge(data):
    """The data as :func:`~dpstats.formula._validate_data` gives it, without the row minimum: these readers
    run after the charge, where a refusal would depend on the row count (private under add/remove
    neighbours); the selection, or :func:`~dpstats.estimation.refit._with_data`, checked it before."""
    return _validate_data(data, min_rows=0)


def augmented_gram_of(data, plan, columns, ranges: TermRanges) -> np.ndarray:
    """G = sum of (1, x_S, y)(1, x_S, y)' over the complete rows, mapped to [-1, 1] (reads data)."""
    columns = np.asarray(columns, dtype=np.int64)
    if not plan.backend.rows_in_memory:
        return _dask_gram(plan, columns, ranges)
    X, y = evaluate_rows(_after_charge(data), plan)
    return adassp.augmented_gram(ranges.map_design(X[:, columns]), ranges.map_response(y))


def grid_counts_of(data, plan, columns, grid) -> np.ndarray:
    """The counts on the public ``grid`` of the selected design columns (original units) and of the
    response, over the complete rows, shape (s + 1, 2, len(grid)): the only input of the private ranges
    (:mod:`dpstats.estimation.private_ranges`).  They add up over row blocks, so a Dask frame sends one
    partition's counts at a time (reads data)."""
    from ..privacy.auto_bounds import column_grid_counts

    columns = np.asarray(columns, dtype=np.int64)
    if not plan.backend.rows_in_memory:
        from ..dask_engine import _grid_counts_partition, _sum_arrays, _tree_sum, require_dask, shared_argument

        dask, _ = require_dask()
        out = []
        spec = shared_argument(plan.spec)
        for which, cols in (("x", columns), ("y", None)):
            parts = [dask.delayed(_grid_counts_partition)(part, spec, which, cols, grid)
                     for part in plan.ddf.to_delayed()]
            out.append(np.asarray(_tree_sum(dask, parts, _sum_arrays).compute()))
        return np.concatenate(out)
    X, y = evaluate_rows(_after_charge(data), plan)
    return np.concatenate([column_grid_counts(np.asarray(X[:, columns], dtype=np.float64), grid),
                           column_grid_counts(np.asarray(y, dtype=np.float64)[:, None], grid)])


def mapped_rows_of(data, plan, columns, ranges: TermRanges):
    """(Z, y): the mapped design rows (column of ones first with an intercept) and the response as
    evaluated (for a binary response, coded -1 / +1), over the complete rows (reads data).

    Pandas only: a hinge-loss selection (the only user) refuses a Dask DataFrame itself.
    """
    columns = np.asarray(columns, dtype=np.int64)
    X, y = evaluate_rows(_after_charge(data), plan)
    Z = ranges.map_design(X[:, columns])
    if plan.intercept:
        Z = np.hstack([np.ones((Z.shape[0], 1)), Z])
    return Z, np.asarray(y, dtype=np.float64)


def design_rows_of(data, plan, columns):
    """(X, y): the selected design columns as evaluated (original units, neither clipped nor mapped;
    a column of ones first with an intercept) and the response, over the complete rows (reads data).

    The same evaluation as :func:`augmented_gram_of` (same formula, plan and ``na_action``, so
    the same rows).  Pandas only: the Tukey-depth refit, its only user, refuses a Dask
    DataFrame before the charge.
    """
    columns = np.asarray(columns, dtype=np.int64)
    X, y = evaluate_rows(_after_charge(data), plan)
    Z = np.asarray(X[:, columns], dtype=np.float64)
    if plan.intercept:
        Z = np.hstack([np.ones((Z.shape[0], 1)), Z])
    return Z, np.asarray(y, dtype=np.float64)


class MappedRows:
    """The refit's mapped rows as a source of additive statistics (reads data; after the charge).

    The residual step (:mod:`dpstats.estimation.residual_step`) needs three passes: the
    augmented Gram matrix, then counts of residuals beyond a grid of levels and sums over the
    clipped residuals for a first estimate it has just released.  Each pass is a sum over
    rows, so a pandas frame evaluates its rows once and keeps them (``Z`` with the column of
    ones first with an intercept, ``y`` mapped), and a Dask frame sums partition by
    partition, as :func:`augmented_gram_of` does: one materialiser per backend.
    """

    def __init__(self, data, plan, columns, ranges: TermRanges):
        self.columns = np.asarray(columns, dtype=np.int64)
        self.plan, self.ranges = plan, ranges
        self.intercept = bool(plan.intercept)
        rows = None if not plan.backend.rows_in_memory else evaluate_rows(_after_charge(data), plan)
        self._rows = None if rows is None else _mapped_design(rows, self.columns, ranges, self.intercept)

    def total(self, statistic, *args) -> np.ndarray:
        """sum over rows of ``statistic(Z, y, *args)`` (an array), on pandas or partition by partition."""
        if self._rows is not None:
            return np.asarray(statistic(*self._rows, *args), dtype=np.float64)
        from ..dask_engine import _sum_arrays, _tree_sum, require_dask, shared_argument

        dask, _ = require_dask()
        spec, ranges = shared_argument(self.plan.spec), shared_argument(self.ranges)
        parts = [dask.delayed(_partition_statistic)(part, spec, self.columns, ranges, self.intercept, statistic, args)
                 for part in self.plan.ddf.to_delayed()]
        return np.asarray(_tree_sum(dask, parts, _sum_arrays).compute(), dtype=np.float64)


def _mapped_design(rows, columns, ranges, intercept):
    X, y = rows
    Z = ranges.map_design(X[:, columns])
    if intercept:
        Z = np.hstack([np.ones((Z.shape[0], 1)), Z])
    return Z, ranges.map_response(y)


def _partition_statistic(pdf, plan, columns, ranges, intercept, statistic, args):
    return np.asarray(statistic(*_mapped_design(evaluate_rows(pdf, plan), columns, ranges, intercept), *args),
                      dtype=np.float64)


def _partition_gram(pdf, plan, columns, ranges):
    X, y = evaluate_rows(pdf, plan)
    return adassp.augmented_gram(ranges.map_design(X[:, columns]), ranges.map_response(y))


def _dask_gram(frame, columns, ranges):
    from ..dask_engine import _sum_arrays, _tree_sum, require_dask, shared_argument

    dask, _ = require_dask()
    spec, shared_ranges = shared_argument(frame.spec), shared_argument(ranges)
    parts = [dask.delayed(_partition_gram)(part, spec, columns, shared_ranges) for part in frame.ddf.to_delayed()]
    return np.asarray(_tree_sum(dask, parts, _sum_arrays).compute(), dtype=np.float64)


# ---------------------------------------------------------------------------- prediction
def _as_frame(newdata):
    if isinstance(newdata, pd.DataFrame):
        frame = newdata
    elif isinstance(newdata, Mapping):
        try:
            frame = pd.DataFrame(dict(newdata))
        except Exception as exc:  # noqa: BLE001 - pandas raises many types here
            raise InvalidTypeError(f"newdata could not be turned into a DataFrame: {exc}") from None
    else:
        kind = f"{type(newdata).__module__.split('.')[0]}.{type(newdata).__name__}"
        hint = (" Collect the rows to predict first, newdata.compute() (a Dask DataFrame)."
                if kind.startswith("dask.") else "")
        raise InvalidTypeError(f"newdata must be a pandas DataFrame (or a dict of columns); got {kind}.{hint}")
    non_str = [c for c in frame.columns if not isinstance(c, str)]
    return frame.rename(columns={c: str(c) for c in non_str}) if non_str else frame


def prediction_design(plan, newdata, selected) -> np.ndarray:
    """The selected terms' columns (original units, before clipping) for the rows of ``newdata``.

    Only the columns the selected terms use are needed (not the response, nor the terms
    that were not selected), with the fit's column kinds and declared levels
    (:func:`check_newdata_schema`, before anything is computed).  Rows that are incomplete
    for them (a missing value, a term that is not finite) give NaN, like R's
    ``predict(..., na.action = na.pass)``; public constants of ``na_action={...}`` are
    imputed as in the fit.
    """
    plan = getattr(plan, "spec", plan)
    frame = _as_frame(newdata)
    n = frame.shape[0]
    if plan.plain_columns is not None:
        needed = list(selected)
        _require_columns(frame, needed)
        check_newdata_schema(plan, frame, needed)
        sub = _impute(frame[needed], plan)
        return _numeric(sub, needed)
    sub_info, needed = _selected_design_info(plan, selected)
    _require_columns(frame, needed)
    check_newdata_schema(plan, frame, needed)
    pdf = _with_declared_levels(_impute(frame[needed], plan), plan, needed)
    complete = ~pdf.isna().any(axis=1).to_numpy() if needed else np.ones(n, dtype=bool)
    out = np.full((n, len(selected)), np.nan)
    if complete.any():
        out[complete] = _design_rows(sub_info, _plain_dtypes(pdf.loc[complete]), selected)
    out[~np.all(np.isfinite(out), axis=1)] = np.nan
    return out


def _selected_design_info(plan, selected):
    """(patsy design info of the terms that make the selected columns, the data columns they use)."""
    _, x_info = plan.infos()
    wanted = set(selected)
    keep_terms, factor_codes = [], set()
    for term, cols in x_info.term_slices.items():
        names = {_clean_term_name(c) for c in x_info.column_names[cols]}
        if names & wanted:
            keep_terms.append(term)
            factor_codes |= {getattr(f, "code", "") for f in term.factors}
    needed = sorted({c for code in factor_codes for c in _names_in(code)} & set(plan.used))
    return x_info.subset(keep_terms), needed


def _with_declared_levels(pdf, plan, needed):
    """The fit's categorical coding: cast levels (others become missing) and declared Categoricals."""
    for c in needed:
        if c in plan.level_casts:
            levels = plan.level_casts[c]
            col = pdf[c]
            pdf = pdf.assign(**{c: pd.Series(pd.Categorical(col.where(col.isin(levels)), categories=levels),
                                             index=col.index)})
    for c in needed:
        levels = _declared_levels(plan, c)
        if levels and c not in plan.level_casts:  # strings for a declared Categorical: the fit's coding
            pdf = pdf.assign(**{c: pd.Series(pd.Categorical(pdf[c], categories=levels), index=pdf.index)})
    return pdf


def _plain_dtypes(rows):
    """Nullable extension columns (not Categoricals) as numpy bool / float64, which patsy evaluates."""
    for c in rows.columns:
        if pd.api.types.is_extension_array_dtype(rows[c].dtype) and not isinstance(rows[c].dtype,
                                                                                 pd.CategoricalDtype):
            rows = rows.assign(**{c: rows[c].to_numpy(dtype=bool if pd.api.types.is_bool_dtype(rows[c].dtype)
                                                         else np.float64)})
    return rows


def _design_rows(sub_info, rows, selected):
    """The selected columns of the formula's design for complete ``rows``."""
    try:
        with np.errstate(all="ignore"):
            (mat,) = patsy.build_design_matrices([sub_info], rows, NA_action=patsy.NAAction(NA_types=[]),
                                                 return_type="matrix")
    except patsy.PatsyError as exc:
        raise InvalidArgumentError(f"newdata cannot be evaluated with the formula's design: "
                                   f"{str(exc).splitlines()[0]}") from None
    names = [_clean_term_name(c) for c in sub_info.column_names]
    return np.asarray(mat, dtype=np.float64)[:, [names.index(t) for t in selected]]


def _declared_levels(plan, column):
    if column in plan.level_casts:
        return list(plan.level_casts[column])
    dtype = plan.used_dtypes[column] if plan.used_dtypes is not None and column in plan.used_dtypes else None
    if isinstance(dtype, pd.CategoricalDtype):
        return list(dtype.categories)
    return None


def check_newdata_schema(plan, frame, needed):
    """newdata's columns against the fit's schema, before anything is computed (R's ``predict.lm``).

    A column numeric in the fit's data must be numeric in ``newdata`` (strings are refused,
    never converted), a logical one logical; a categorical (or text) one takes categorical or
    text values, and a value outside its declared levels is refused naming it, as R's "factor
    has new levels" (``newdata`` is the user's own rows, not the private data: its values may
    be quoted).  Missing values stay missing (their prediction is NaN).
    """
    from ..formula import column_kind

    dtypes = plan.used_dtypes
    if dtypes is None:
        return
    for c in needed:
        if c not in dtypes.index:
            continue
        want, got = column_kind(dtypes[c]), column_kind(frame[c].dtype)
        if want in ("numeric", "bool") and got != want:
            raise InvalidTypeError(
                f"newdata column {c!r} has dtype {frame[c].dtype} ({got}), but it was {want} in the fit's data "
                f"({dtypes[c]}); give it as {want} values (strings are not converted).")
        if want in ("categorical", "text"):
            if got not in ("categorical", "text"):
                raise InvalidTypeError(
                    f"newdata column {c!r} has dtype {frame[c].dtype} ({got}), but it was {want} in the fit's data; "
                    "give its levels as strings or a pandas Categorical.")
            levels = _declared_levels(plan, c)
            if levels:
                values = frame[c].dropna()
                new = sorted({str(v) for v in values.unique() if v not in levels})
                if new:
                    raise InvalidArgumentError(
                        f"newdata column {c!r} has levels {new[:5]} that were not declared for the fit "
                        f"(declared: {levels[:10]}); predictions need one of the declared levels.")


def _require_columns(frame, needed):
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise InvalidArgumentError(f"newdata lacks the columns {missing}, which the selected terms use.")


def _impute(pdf, plan):
    na = plan.na_action if isinstance(plan.na_action, dict) else {}
    todo = {c: v for c, v in na.items() if c in pdf.columns}
    return pdf.fillna(todo) if todo else pdf


def _numeric(pdf, names):
    try:
        X = np.column_stack([pd.to_numeric(pdf[c], errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
                             for c in names]) if names else np.zeros((pdf.shape[0], 0))
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"newdata's columns {names} must be numeric, as in the data of the fit.") from None
    X[~np.all(np.isfinite(X), axis=1)] = np.nan
    return X
