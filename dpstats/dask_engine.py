"""Dask as the engine for data that outgrows one machine (spec 04, section 4.4).

A ``dask.dataframe.DataFrame`` passed as ``data`` is never collected on the client.
What leaves a partition is, by construction, small and of a public shape:

* a validation pass: per partition its row count, whether a used column has missing or
  infinite values (the same checks, and the same errors, as the pandas path, raised
  before any budget is charged; row counts are public under the neighbour relations of
  spec 05, section 5.1);
* ``dpvote``: one sign vector of length p per partition (each partition is a machine,
  :mod:`dpstats.vote.dask_backend`);
* best-subset methods: the clipped sufficient statistics G = X'X, c = X'y, y'y and n of
  each partition, summed in a tree (:func:`dask_sufficient_statistics`); with
  ``bounds="auto"`` first the counts of the row maxima below each point of the public
  quantile grid (71 integers per partition), which is all the private quantile needs;
* the shared sign step: one vote vector per partition (partitions are the blocks).

So ``top_r``, ``mistakes`` and ``exponential`` accept a Dask DataFrame whose rows do not fit
in the client's memory, as long as a p x p matrix does.

The formula is evaluated per partition.  Its columns are fixed before any data is read,
from dask's ``_meta_nonempty`` (a synthetic frame built from the dtypes alone, so
data-free): categorical levels must therefore be declared (a pandas Categorical with
known categories, or ``C(x, levels=[...])``); levels inferred from data are refused.
patsy's design objects cannot be pickled, so each worker rebuilds them from the
formula text and the empty meta frame (cached per process).  Names in the formula are
looked up among the columns, ``np``/``numpy`` and builtins only.

Install with ``pip install dpstats[dask]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy

from . import formula as _formula
from .errors import DataError, FormulaError, InvalidArgumentError

DASK_INSTALL_HINT = "pip install dpstats[dask]"


class DaskUnavailableError(InvalidArgumentError, ImportError):
    """Dask (the optional ``dask`` extra) is needed but cannot be imported."""


def require_dask():
    """Import and return ``dask`` and ``dask.dataframe``, or raise a clear error."""
    try:
        import dask
        import dask.dataframe as dd
    except ImportError as exc:
        raise DaskUnavailableError(
            f"this needs Dask, an optional extra of dpstats: install it with `{DASK_INSTALL_HINT}` "
            f"(import failed: {exc})."
        ) from None
    return dask, dd


def is_dask_dataframe(obj) -> bool:
    """True for a Dask DataFrame, decided without importing dask."""
    module = type(obj).__module__ or ""
    return module.split(".")[0] == "dask" and hasattr(obj, "npartitions") and hasattr(obj, "map_partitions")


# --------------------------------------------------------------------------- design
_DESIGN_CACHE: dict = {}


def _design_infos(expanded, meta):
    """patsy design infos (y, x) built from the data-free meta frame, cached per process."""
    key = (expanded, tuple(meta.columns), tuple(str(t) for t in meta.dtypes))
    hit = _DESIGN_CACHE.get(key)
    if hit is None:
        fake = _nonempty_meta(meta)
        env = patsy.EvalEnvironment([{"np": np, "numpy": np}])
        desc = patsy.ModelDesc.from_formula(expanded)
        if desc.lhs_termlist:
            y_df, x_df = patsy.dmatrices(desc, fake, eval_env=env, NA_action="raise", return_type="dataframe")
            hit = (y_df.design_info, x_df.design_info)
        else:
            x_df = patsy.dmatrix(desc, fake, eval_env=env, NA_action="raise", return_type="dataframe")
            hit = (None, x_df.design_info)
        if len(_DESIGN_CACHE) > 64:
            _DESIGN_CACHE.clear()
        _DESIGN_CACHE[key] = hit
    return hit


def _nonempty_meta(meta):
    """Synthetic rows from the dtypes alone (dask's meta_nonempty), never from data."""
    from dask.dataframe.utils import meta_nonempty

    fake = meta_nonempty(meta)
    # Positive values keep row-wise transforms such as np.log defined on the fake rows.
    for c in fake.columns:
        if pd.api.types.is_numeric_dtype(fake[c]) and not pd.api.types.is_bool_dtype(fake[c]):
            fake[c] = np.arange(1, len(fake) + 1, dtype=np.float64).astype(fake[c].dtype)
    return fake


def partition_design(pdf, spec):
    """(X, y) of one partition: the formula's candidate columns (no intercept) and response.

    Runs on the workers.  ``spec`` is the picklable :class:`DesignSpec`.
    """
    pdf = _apply_na(pdf, spec)
    if spec.plain_columns is not None:
        # Every term is a numeric column as is: skip patsy (slow for hundreds of terms).
        x = pdf[list(spec.plain_columns)].to_numpy(dtype=np.float64)
        y = None if spec.plain_response is None else pdf[spec.plain_response].to_numpy(dtype=np.float64)
        return np.ascontiguousarray(x), y
    y_info, x_info = _design_infos(spec.expanded, spec.meta)
    if len(pdf) == 0:
        p = len(spec.terms)
        return np.zeros((0, p)), (np.zeros(0) if y_info is not None else None)
    infos = [x_info] if y_info is None else [y_info, x_info]
    mats = patsy.build_design_matrices(infos, pdf, NA_action="raise", return_type="matrix")
    x = np.asarray(mats[-1], dtype=np.float64)
    if spec.intercept:
        x = x[:, 1:]
    y = None if y_info is None else np.asarray(mats[0], dtype=np.float64)[:, 0]
    return np.ascontiguousarray(x), y


def _apply_na(pdf, spec):
    used = list(spec.used)
    if isinstance(spec.na_action, dict):
        pdf = pdf.copy()
        for c in used:
            if c in spec.na_action:
                pdf[c] = pdf[c].fillna(spec.na_action[c])
        return pdf
    if spec.na_action == "omit":
        return pdf.dropna(subset=used)
    return pdf


@dataclass(frozen=True)
class DesignSpec:
    """Everything a worker needs to evaluate the formula on a partition (picklable)."""

    expanded: str
    meta: pd.DataFrame
    terms: tuple
    intercept: bool
    used: tuple
    na_action: object
    plain_columns: tuple | None = None  # set when every term is a numeric column used as is
    plain_response: str | None = None


def _validate_partition(pdf, spec):
    """Public-shape facts of one partition: rows in, rows usable, missing/infinite flags."""
    used = list(spec.used)
    rows_in = len(pdf)
    missing = {c: int(pdf[c].isna().sum()) for c in used}
    bad_inf = [c for c in used if pd.api.types.is_numeric_dtype(pdf[c]) and not pd.api.types.is_bool_dtype(pdf[c])
               and np.isinf(pdf[c].to_numpy(dtype=np.float64, na_value=np.nan)).any()]
    nonfinite_terms = []
    rows_used = rows_in
    if not bad_inf and (spec.na_action != "raise" or not any(missing.values())):
        x, y = partition_design(pdf, spec)
        rows_used = x.shape[0]
        bad = ~np.all(np.isfinite(x), axis=0)
        nonfinite_terms = [spec.terms[j] for j in np.nonzero(bad)[0]]
        if y is not None and not np.all(np.isfinite(y)):
            nonfinite_terms.append("<response>")
    return {"rows_in": rows_in, "rows": rows_used, "missing": {c: k for c, k in missing.items() if k},
            "infinite": bad_inf, "nonfinite_terms": nonfinite_terms}


@dataclass
class DaskModelFrame:
    """The design of a call on a Dask DataFrame: evaluated lazily, partition by partition.

    Mirrors :class:`dpstats.formula.ModelFrame` (``terms``, ``response``, ``intercept``,
    ``p``, ``n``, ``caveats``) without materialising X and y.  ``partition_rows`` are the
    usable rows per partition (public: n is public per machine).
    """

    formula: str
    expanded_formula: str
    terms: list
    response: str | None
    intercept: bool
    ddf: object
    spec: DesignSpec
    partition_rows: np.ndarray
    n_rows_input: int
    caveats: list = field(default_factory=list)
    categorical_terms: list = field(default_factory=list)
    is_dask: bool = True

    X = None
    y = None

    @property
    def n(self) -> int:
        return int(self.partition_rows.sum())

    @property
    def p(self) -> int:
        return len(self.terms)

    @property
    def npartitions(self) -> int:
        return int(self.ddf.npartitions)

    @property
    def has_response(self) -> bool:
        return self.response is not None


def build_dask_model_frame(formula, ddf, *, na_action="raise", require_response=True) -> DaskModelFrame:
    """Parse ``formula`` against a Dask DataFrame's dtypes and validate every partition.

    Raises the same errors as :func:`dpstats.formula.build_model_frame`, before any budget
    is charged.  Constant-column detection is not done on Dask data.
    """
    dask, _ = require_dask()
    na_action = _formula.check_na_action(na_action)
    meta = ddf._meta
    if meta.columns.has_duplicates:
        raise DataError("data has duplicated column names; rename them so every column is unique.")
    if any(not isinstance(c, str) for c in meta.columns):
        raise DataError("a Dask DataFrame passed to dpstats must have string column names.")
    if ddf.npartitions < 1 or len(meta.columns) == 0:
        raise DataError("data is empty (no partitions or no columns).")
    columns = [str(c) for c in meta.columns]
    # Only columns, np/numpy and builtins: partitions are evaluated on workers, away from
    # the caller's namespace.
    env = patsy.EvalEnvironment([{"np": np, "numpy": np}])
    parsed = _formula.parse_formula(formula, columns, require_response=require_response, eval_env=env,
                                    unknown_hint="; on a Dask DataFrame only columns, np/numpy and builtins can be used")
    lhs, expanded, desc = parsed.lhs, parsed.expanded, parsed.desc
    used = set(parsed.used_columns)
    for factor in _formula._factor_codes(desc.lhs_termlist + desc.rhs_termlist):
        code = getattr(factor, "code", str(factor))
        names = _formula._names_in(code)
        if "levels" not in code:
            for n in names:
                if n not in columns:
                    continue
                col = meta[n]
                numeric = pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)
                declared = isinstance(col.dtype, pd.CategoricalDtype) and col.cat.known
                if not (numeric or declared):
                    raise DataError(
                        f"column {n!r} is categorical with levels that would be inferred from the data; on a Dask "
                        "DataFrame declare them (a Categorical with known categories, or C(x, levels=[...])).")
    try:
        y_info, x_info = _design_infos(expanded, meta)
    except (patsy.PatsyError, TypeError, ValueError) as exc:
        raise FormulaError(f"formula {formula!r} could not be evaluated on the columns of data: "
                           f"{str(exc).splitlines()[0]}") from None
    if y_info is not None and len(y_info.column_names) != 1:
        raise DataError(f"the response {lhs!r} is categorical; dp_select needs a numeric response.")
    for factor, info in x_info.factor_infos.items():
        if info.type != "categorical" or "levels" in getattr(factor, "code", ""):
            continue
        names = [n for n in _formula._names_in(factor.code) if n in columns]
        if not all(isinstance(meta[n].dtype, pd.CategoricalDtype) and meta[n].cat.known
                   or pd.api.types.is_bool_dtype(meta[n]) for n in names):
            raise DataError(
                f"the categorical term {factor.code!r} has levels that would be inferred from the data; on a Dask "
                "DataFrame declare them (a Categorical with known categories, or C(x, levels=[...])).")
    intercept = "Intercept" in x_info.column_names
    cols = [c for c in x_info.column_names if c != "Intercept"]
    terms = [_formula._clean_term_name(c) for c in cols]
    if not terms:
        raise FormulaError(f"formula {formula!r} has no candidate terms on its right-hand side.")
    if len(set(terms)) != len(terms):
        raise FormulaError(f"the formula produces duplicated term names: {terms}.")
    def is_plain(name):
        return name in columns and pd.api.types.is_numeric_dtype(meta[name]) and not pd.api.types.is_bool_dtype(meta[name])

    plain = all(is_plain(c) for c in cols) and (y_info is None or is_plain(y_info.column_names[0]))
    spec = DesignSpec(expanded=expanded, meta=meta, terms=tuple(terms), intercept=intercept,
                      used=tuple(sorted(used)), na_action=na_action,
                      plain_columns=tuple(cols) if plain else None,
                      plain_response=(y_info.column_names[0] if plain and y_info is not None else None))

    # One validation pass: only counts and flags come back.
    parts = ddf.to_delayed()
    reports = dask.compute(*[dask.delayed(_validate_partition)(part, spec) for part in parts])
    missing = {}
    for r in reports:
        for c, k in r["missing"].items():
            missing[c] = missing.get(c, 0) + k
    caveats = []
    if missing and na_action == "raise":
        raise DataError(
            f"columns {sorted(missing)} have missing values. Choose na_action='omit' (drop incomplete rows) "
            "or na_action={column: public constant} (impute); dpstats never imputes from the data.")
    if missing and na_action == "omit":
        caveats.append("rows with missing values were omitted; the number of complete rows is data-dependent")
    elif missing:
        caveats.append(f"missing values in {sorted(missing)} were imputed with public constants")
    infinite = sorted({c for r in reports for c in r["infinite"]})
    if infinite:
        raise DataError(f"columns {infinite} contain infinite values; remove or replace them before the call.")
    nonfinite = sorted({t for r in reports for t in r["nonfinite_terms"]})
    if nonfinite:
        raise DataError(f"terms {nonfinite} have infinite or undefined values after transformation.")
    rows = np.array([r["rows"] for r in reports], dtype=np.int64)
    if rows.sum() == 0:
        raise DataError("data is empty (0 usable rows).")
    categorical_terms = [t for t, c in zip(terms, cols) if "[" in c]
    return DaskModelFrame(formula=formula, expanded_formula=expanded, terms=terms,
                          response=_formula._clean_term_name(lhs) if y_info is not None else None,
                          intercept=intercept, ddf=ddf, spec=spec, partition_rows=rows,
                          n_rows_input=int(sum(r["rows_in"] for r in reports)), caveats=caveats,
                          categorical_terms=categorical_terms)


# --------------------------------------------------------------------- clipping
def _clip_partition(x, y, clip):
    kind = clip[0]
    if kind == "scale":
        _, scale, y_scale = clip
        xc = np.clip(x / scale, -1.0, 1.0)
        yc = None if y is None else np.clip(y / y_scale, -1.0, 1.0)
    else:
        _, b_x, b_y = clip
        xc = np.clip(x, -b_x, b_x)
        yc = None if y is None else np.clip(y, -b_y, b_y)
    return xc, yc


def _with_intercept(xc, intercept, value):
    if not intercept:
        return xc
    return np.hstack([np.full((xc.shape[0], 1), value), xc])


def _partition_stats(pdf, spec, clip, intercept_value):
    from .bss.objective import SufficientStats

    x, y = partition_design(pdf, spec)
    xc, yc = _clip_partition(x, y, clip)
    design = _with_intercept(xc, spec.intercept, intercept_value)
    if yc is None:
        yc = np.zeros(design.shape[0])
    return SufficientStats.from_arrays(design, yc, intercept=spec.intercept)


def _sum_stats(*parts):
    total = parts[0]
    for s in parts[1:]:
        total = total + s
    return total


def _grid_counts_partition(pdf, spec, which, grid):
    """#{i : r_i <= c} for every public grid point c (the private quantile's only input)."""
    x, y = partition_design(pdf, spec)
    from .privacy.bounds import grid_counts

    return grid_counts(np.max(np.abs(x), axis=1) if which == "x" else np.abs(y), grid).astype(np.int64)


def _tree_sum(dask, items, func, split_every=8):
    """Sum delayed items in a tree so no single task receives all partitions at once."""
    items = list(items)
    while len(items) > 1:
        items = [dask.delayed(func)(*items[i:i + split_every]) for i in range(0, len(items), split_every)]
    return items[0]


@dataclass
class DaskClippedData:
    """Clipped design on Dask: bounds that hold on it, and lazy sufficient statistics.

    Stands in for :class:`dpstats.privacy.bounds.ClippedData` in ``SelectionTask``; methods
    reach the data only through :meth:`sufficient_stats` (and the sign step through
    :meth:`block_sign_votes`).
    """

    frame: DaskModelFrame
    clip: tuple
    b_x: float
    b_y: float | None
    intercept: bool
    term_scale: np.ndarray | None = None
    response_scale: float | None = None
    entries: list = field(default_factory=list)
    public_bounds: object = None
    is_dask: bool = True
    _stats: object = None

    X = None

    @property
    def y(self):
        return None

    @property
    def intercept_value(self) -> float:
        return min(1.0, self.b_x)

    def design_with_intercept(self):
        raise InvalidArgumentError(
            "this method needs the full design in memory and cannot run on a Dask DataFrame; methods that use "
            "only the sufficient statistics (exponential, top_r, mistakes) can.")

    def sufficient_stats(self):
        """Clipped G, c, yy, n summed over partitions (intercept column first)."""
        if self._stats is None:
            self._stats = dask_sufficient_statistics(self.frame, self.clip, self.intercept_value)
        return self._stats

    def block_sign_votes(self, columns, report, ridge, radius):
        """Per-partition sign votes of the coefficients of ``columns`` (partitions are the blocks)."""
        dask, _ = require_dask()
        n = self.frame.n
        parts = self.frame.ddf.to_delayed()
        votes = [dask.delayed(_partition_sign_vote)(part, self.frame.spec, self.clip, self.intercept_value,
                                                    tuple(columns), tuple(report), ridge, radius, n)
                 for part in parts]
        return np.vstack(dask.compute(*votes)).astype(np.int64)


def _partition_sign_vote(pdf, spec, clip, intercept_value, columns, report, ridge, radius, n):
    from .bss.objective import RidgeBallObjective, SufficientStats

    x, y = partition_design(pdf, spec)
    xc, yc = _clip_partition(x, y, clip)
    design = _with_intercept(xc, spec.intercept, intercept_value)[:, list(columns)]
    out = np.zeros(len(report), dtype=np.int64)
    block_ridge = ridge * design.shape[0] / n
    if design.shape[0] == 0 or (block_ridge == 0 and np.linalg.matrix_rank(design) < len(columns)):
        return out
    sol = RidgeBallObjective(SufficientStats.from_arrays(design, yc), block_ridge, radius).solve(
        np.arange(len(columns)))
    return np.sign(sol.coef[list(report)]).astype(np.int64)


def dask_sufficient_statistics(frame: DaskModelFrame, clip, intercept_value):
    """Sufficient statistics of the clipped design, summed over partitions in a tree.

    Parameters
    ----------
    frame : DaskModelFrame
    clip : ("bounds", b_x, b_y) or ("scale", term_scale, response_scale)
    intercept_value : float
        Value of the forced intercept column (min(1, b_x)).

    Returns
    -------
    dpstats.bss.objective.SufficientStats
    """
    dask, _ = require_dask()
    parts = [dask.delayed(_partition_stats)(part, frame.spec, clip, intercept_value)
             for part in frame.ddf.to_delayed()]
    return _tree_sum(dask, parts, _sum_stats).compute()


def dask_clip_to_bounds(frame: DaskModelFrame, bounds, epsilon_share, rng, categorical_terms=()):
    """The Dask counterpart of :func:`dpstats.privacy.bounds.clip_to_bounds` (same mechanisms).

    For ``bounds="auto"`` each partition sends only its counts on the public grid.
    """
    from .privacy.bounds import QUANTILE_GRID, resolve_bounds

    dask, _ = require_dask()
    has_y = frame.response is not None

    def counts_of(which):
        parts = [dask.delayed(_grid_counts_partition)(part, frame.spec, which, QUANTILE_GRID)
                 for part in frame.ddf.to_delayed()]
        return _tree_sum(dask, parts, _sum_arrays).compute()

    resolved = resolve_bounds(bounds, terms=frame.terms, response=frame.response if has_y else None, n=frame.n,
                              epsilon_share=epsilon_share, rng=rng, counts_of=counts_of,
                              categorical_terms=categorical_terms)
    if resolved.term_scale is not None:
        clip = ("scale", resolved.term_scale, resolved.response_scale if has_y else 1.0)
    else:
        clip = ("bounds", resolved.b_x, resolved.b_y if has_y else 1.0)
    return DaskClippedData(frame, clip, resolved.b_x, resolved.b_y, frame.intercept,
                           term_scale=resolved.term_scale, response_scale=resolved.response_scale,
                           entries=resolved.entries, public_bounds=resolved.public_bounds)


def _sum_arrays(*arrays):
    return np.sum(np.stack(arrays), axis=0)


__all__ = ["DASK_INSTALL_HINT", "DaskClippedData", "DaskModelFrame", "DaskUnavailableError",
           "build_dask_model_frame", "dask_clip_to_bounds", "dask_sufficient_statistics", "is_dask_dataframe",
           "partition_design", "require_dask"]

