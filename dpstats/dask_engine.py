"""Dask as the engine for data that outgrows one machine.

A ``dask.dataframe.DataFrame`` passed as ``data`` is never collected on the client.
What leaves a partition is, by construction, small and of a public shape:

* before the charge, per partition its input row count (public under the neighbour
  relations); the design itself is planned from the dtypes alone
  (:func:`dpstats.formula.plan_design`), with the same free errors as on pandas;
* ``dpvote``: one sign vector of length p per partition (each partition is a machine,
  :mod:`dpstats.vote.dask_backend`);
* best-subset methods: the clipped sufficient statistics G = X'X, c = X'y, y'y and n of
  each partition, summed in a tree (:func:`dask_sufficient_statistics`); with
  ``bounds="auto"`` first the counts of the row maxima below each point of the public
  quantile grid (71 integers per partition), which is all the private quantile needs;
* the shared sign step: one vote vector per partition (partitions are the blocks);
* ``dp_sis``: per partition x'y, the column sums, sum y and the row count
  (:meth:`DaskClippedData.partition_sums`); ``samp_agg``: blocks gathered from the
  partitions by the workers, one vote-count vector per group of blocks
  (:mod:`dpstats.screening.samp_agg_dask`); ``kendall``: exact discordant-pair counts
  over every union of two partitions (:mod:`dpstats.screening.kendall_dask`).

So ``top_r``, ``mistakes`` and ``exponential`` accept a Dask DataFrame whose rows do not fit
in the client's memory, as long as a p x p matrix does.

The formula is evaluated per partition, after the charge, by the same function as on
pandas (:func:`dpstats.formula.evaluate_rows`).  Its columns are fixed before any data
is read, from a synthetic frame built from the dtypes alone: categorical levels must
be declared (a pandas Categorical with known categories, or ``C(x, levels=[...])``).
Names in the formula are looked up among the columns and ``np``/``numpy`` only.

Install with ``pip install dpstats[dask]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy

from . import formula as _formula
from .backends import PARTITIONED, is_dask_dataframe  # noqa: F401 (is_dask_dataframe re-exported)
from .errors import DataError, InvalidArgumentError

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




# --------------------------------------------------------------------------- design
def partition_design(pdf, plan, with_rows=False):
    """(X, y) of one partition: the planned candidate columns (no intercept) and response.

    Runs on the workers, with the same total rules as the pandas path
    (:func:`dpstats.formula.evaluate_rows`); ``plan`` is the picklable DesignPlan.  With
    ``with_rows=True`` also the positions of the kept rows in the partition.
    """
    return _formula.evaluate_rows(pdf, plan, with_rows=with_rows)


def shared_argument(value):
    """``value`` as one key of a Dask graph, for an argument that every partition's task reads
    (the design plan, the ranges).

    Passed as a literal, dask walks a dataclass's fields once per task looking for collections
    (about 1.4 ms per partition at 30 terms, growing with the terms) and a distributed scheduler
    ships it with every task; as one key it is neither walked (it holds no collection) nor sent
    more than once per worker."""
    dask, _ = require_dask()
    return dask.delayed(value, pure=False, traverse=False)


def _partition_lengths(ddf):
    """Input rows per partition: a count, public under the neighbour relations (docs/privacy.md)."""
    dask, _ = require_dask()
    return np.array(dask.compute(*[dask.delayed(len)(part) for part in ddf.to_delayed()]), dtype=np.int64)


@dataclass
class DaskModelFrame:
    """The design of a call on a Dask DataFrame: planned from the schema, evaluated lazily.

    Mirrors :class:`dpstats.formula.DesignPlan` (``terms``, ``response``, ``intercept``,
    ``p``, ``caveats``) without materialising X and y.  ``partition_rows`` are the input
    rows per partition (public); under ``na_action="omit"`` fewer may be used.
    """

    plan: object  # dpstats.formula.DesignPlan
    ddf: object
    partition_rows: np.ndarray

    #: Partitions, never collected (:mod:`dpstats.backends`).
    backend = PARTITIONED

    X = None
    y = None

    def __getattr__(self, name):
        # formula, terms, response, intercept, caveats, categorical_terms, n_rows_input, ...
        if name == "plan":
            raise AttributeError(name)
        return getattr(self.plan, name)

    @property
    def spec(self):
        return self.plan

    @property
    def n(self) -> int:
        return int(self.partition_rows.sum())

    @property
    def npartitions(self) -> int:
        return int(self.ddf.npartitions)

    @property
    def has_response(self) -> bool:
        return self.response is not None


def build_dask_model_frame(formula, ddf, *, na_action="omit", require_response=True, response_type="numeric",
                           infer_levels=(), min_rows=None) -> DaskModelFrame:
    """Plan ``formula`` against a Dask DataFrame's schema (dtypes, declared categories).

    Reads no data value: only the partitions' row counts.  Raises the same (free) errors
    as :func:`dpstats.formula.plan_design`; data-content problems surface when the
    partitions are evaluated, after the charge, as on pandas.
    """
    require_dask()
    meta = ddf._meta
    _formula.check_columns(meta.columns)
    if any(not isinstance(c, str) for c in meta.columns):
        raise DataError("a Dask DataFrame passed to dpstats must have string column names.")
    if ddf.npartitions < 1:
        raise DataError("data has no partitions.")
    # Known categories are a property of the Dask column (its meta holds none of the values).
    unknown = [c for c in meta.columns if isinstance(meta[c].dtype, pd.CategoricalDtype) and not ddf[c].cat.known]
    if unknown:
        raise DataError(f"the categories of {unknown} are unknown to Dask (they would be read from the data); "
                        "declare them, e.g. ddf[c] = ddf[c].cat.set_categories([...]).")
    if infer_levels:
        raise InvalidArgumentError("infer_levels is not available on a Dask DataFrame; declare the levels "
                                   "(a Categorical with known categories, or C(x, levels=[...])).")
    rows = _partition_lengths(ddf)
    min_rows = _formula.MIN_ROWS if min_rows is None else int(min_rows)  # 0 under add/remove neighbours
    if rows.sum() < min_rows:
        raise DataError(f"data has fewer than {min_rows} rows (the input row count is public).")
    # Only columns, np/numpy and builtins: partitions are evaluated on workers, away from
    # the caller's namespace.
    env = patsy.EvalEnvironment([{"np": np, "numpy": np}])
    plan = _formula.plan_design(formula, meta.dtypes, int(rows.sum()), na_action=na_action,
                                require_response=require_response, eval_env=env, response_type=response_type,
                                unknown_hint="; on a Dask DataFrame only columns, np/numpy and builtins can be used")
    return DaskModelFrame(plan=plan, ddf=ddf, partition_rows=rows)


# --------------------------------------------------------------------- clipping
def _clip_partition(x, y, ranges):
    """The one mapping rule (:class:`dpstats.privacy.bounds.TermRanges`), per partition."""
    return ranges.map_design(x), (None if y is None else ranges.map_response(y))


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


def _grid_counts_partition(pdf, spec, which, columns, grid):
    """Counts on the public grid (the private ranges' only input); they add up over partitions."""
    from .privacy.auto_bounds import column_grid_counts

    x, y = partition_design(pdf, spec)
    return column_grid_counts(x[:, columns] if which == "x" else np.asarray(y)[:, None], grid).astype(np.int64)


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
    clip: object  # the TermRanges mapping every partition's values to [-1, 1]
    b_x: float
    b_y: float | None
    intercept: bool
    entries: list = field(default_factory=list)
    public_bounds: object = None
    _stats: object = None
    #: See :attr:`dpstats.privacy.bounds.ClippedData.intercept_column`.
    intercept_column: float | None = None

    X = None
    #: Partitions, never collected (:mod:`dpstats.backends`).
    backend = PARTITIONED

    @property
    def y(self):
        return None

    @property
    def intercept_value(self) -> float:
        return self.intercept_column if self.intercept_column is not None else min(1.0, self.b_x)

    @property
    def ranges(self):
        return self.clip

    @property
    def bounds_used(self):
        return self.clip.used()

    def design_with_intercept(self):
        raise InvalidArgumentError(
            "this method needs the full design in memory and cannot run on a Dask DataFrame; methods that use "
            "only the sufficient statistics (exponential, top_r, mistakes) can.")

    def sufficient_stats(self):
        """Clipped G, c, yy, n summed over partitions (intercept column first)."""
        if self._stats is None:
            self._stats = dask_sufficient_statistics(self.frame, self.clip, self.intercept_value)
        return self._stats

    def partition_sums(self, func, *args):
        """``func(x, y, *args)`` on every partition's clipped (x, y), summed in a tree.

        ``func`` (picklable: a module-level function) returns a 1-D array of a public
        length that adds up over partitions (sums of cross-products, counts)."""
        dask, _ = require_dask()
        spec, clip = shared_argument(self.frame.spec), shared_argument(self.clip)
        parts = [dask.delayed(_partition_apply, pure=False)(part, spec, clip, func, args)
                 for part in self.frame.ddf.to_delayed()]
        return _tree_sum(dask, parts, _sum_arrays).compute()

    def block_sign_votes(self, columns, report, ridge, radius):
        """Per-partition sign votes of the coefficients of ``columns`` (partitions are the blocks)."""
        dask, _ = require_dask()
        n = self.frame.n
        parts = self.frame.ddf.to_delayed()
        spec, clip = shared_argument(self.frame.spec), shared_argument(self.clip)
        votes = [dask.delayed(_partition_sign_vote)(part, spec, clip, self.intercept_value,
                                                    tuple(columns), tuple(report), ridge, radius, n)
                 for part in parts]
        return np.vstack(dask.compute(*votes)).astype(np.int64)


def _partition_apply(pdf, spec, clip, func, args):
    x, y = partition_design(pdf, spec)
    xc, yc = _clip_partition(x, y, clip)
    return np.asarray(func(xc, yc, *args))


def _partition_sign_vote(pdf, spec, clip, intercept_value, columns, report, ridge, radius, n):
    from .bss.sign_votes import block_vote

    x, y = partition_design(pdf, spec)
    xc, yc = _clip_partition(x, y, clip)
    design = _with_intercept(xc, spec.intercept, intercept_value)[:, list(columns)]
    return block_vote(design, yc, report, ridge * design.shape[0] / n, radius, intercept=bool(spec.intercept))


def dask_sufficient_statistics(frame: DaskModelFrame, clip, intercept_value):
    """Sufficient statistics of the clipped design, summed over partitions in a tree.

    Parameters
    ----------
    frame : DaskModelFrame
    clip : dpstats.privacy.bounds.TermRanges
    intercept_value : float
        Value of the forced intercept column (min(1, b_x)).

    Returns
    -------
    dpstats.bss.objective.SufficientStats
    """
    dask, _ = require_dask()
    spec, shared_clip = shared_argument(frame.spec), shared_argument(clip)
    parts = [dask.delayed(_partition_stats)(part, spec, shared_clip, intercept_value)
             for part in frame.ddf.to_delayed()]
    return _tree_sum(dask, parts, _sum_stats).compute()


def dask_clip_to_bounds(frame: DaskModelFrame, bounds, epsilon_share, rng, categorical_terms=()):
    """The Dask counterpart of :func:`dpstats.privacy.bounds.clip_to_bounds` (same mechanisms).

    For ``bounds="auto"`` each partition sends only its counts on the public grid.
    """
    from .privacy.bounds import AUTO_GRID, resolve_bounds

    dask, _ = require_dask()
    has_y = frame.response is not None

    def counts_of(which, columns):
        spec = shared_argument(frame.spec)
        parts = [dask.delayed(_grid_counts_partition)(part, spec, which, columns, AUTO_GRID)
                 for part in frame.ddf.to_delayed()]
        return _tree_sum(dask, parts, _sum_arrays).compute()

    resolved = resolve_bounds(bounds, terms=frame.terms, response=frame.response if has_y else None, n=frame.n,
                              epsilon_share=epsilon_share, rng=rng, counts_of=counts_of,
                              categorical_terms=categorical_terms, intercept=frame.intercept)
    return DaskClippedData(frame, resolved.ranges, 1.0, 1.0 if has_y else None, frame.intercept,
                           entries=resolved.entries, public_bounds=resolved.public_bounds)


class _UnclippedRanges:
    """The identity mapping: a method without bounds (kendall) reads the values as they are."""

    def map_design(self, x):
        return x

    def map_response(self, y):
        return y

    def used(self):
        return None


def dask_unclipped_data(frame: DaskModelFrame) -> DaskClippedData:
    """The design of a method without bounds, for the shared sign step on Dask (partitions are
    the blocks).  A block's least-squares sign is a vote in {-1, 0, +1} whatever the range
    of the data, so the votes' sensitivity is 1 without clipping; the intercept column is 1."""
    return DaskClippedData(frame, _UnclippedRanges(), float("inf"), float("inf"), frame.intercept)


def _sum_arrays(*arrays):
    return np.sum(np.stack(arrays), axis=0)


__all__ = ["DASK_INSTALL_HINT", "DaskClippedData", "DaskModelFrame", "DaskUnavailableError",
           "build_dask_model_frame", "dask_clip_to_bounds", "dask_sufficient_statistics", "is_dask_dataframe",
           "partition_design", "require_dask"]

