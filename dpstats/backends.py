"""Data backends: where a call's rows live, and how statistics over them are computed.

One object per backend, chosen once where the data enter (:func:`backend_of`, in
``dp_select`` and ``fit.estimate``); the model frame, the clipped data and the estimation
design carry it as ``.backend``, and code that reads rows asks it, as formulaic's
materialisers do:

* :data:`IN_MEMORY` -- a pandas DataFrame: the design is materialised once as arrays
  (``X``, ``y``), and a statistic is computed on them;
* :data:`PARTITIONED` -- a Dask DataFrame, never collected: every statistic is a sum over
  partitions, each partition evaluated on its worker (:mod:`dpstats.dask_engine`).

What a backend can do is declared, not probed: ``rows_in_memory`` says whether the rows are
arrays a method or a curator summary may read whole (a method that needs them declares
``supports_dask = False`` and is refused before the charge on the other backend);
``sum_over_rows(data, func, *args)`` is the one way to compute a statistic that adds up over
rows, whatever the backend.  The public schema alone decides the backend, so the choice
never depends on data values.
"""
from __future__ import annotations

import numpy as np


class InMemory:
    """Rows in memory (a pandas DataFrame): statistics on the materialised arrays."""

    name = "pandas"
    rows_in_memory = True

    def sum_over_rows(self, data, func, *args) -> np.ndarray:
        """``func(X, y, *args)`` of the data's rows (one block: all of them)."""
        return np.asarray(func(data.X, data.y, *args))

    def describe(self, data) -> str:
        """The data in a call's text: its type and number of columns (never its row count)."""
        columns = getattr(data, "columns", None)
        return f"<{type(data).__name__} with {len(columns)} columns>" if columns is not None else "<data>"

    def __repr__(self):
        return "IN_MEMORY"


class Partitioned:
    """A Dask DataFrame, never collected: statistics are summed over its partitions."""

    name = "dask"
    rows_in_memory = False

    def sum_over_rows(self, data, func, *args) -> np.ndarray:
        """``func(x, y, *args)`` on every partition's rows, summed in a tree (``data.partition_sums``;
        ``func`` is a module-level function, so the workers can receive it)."""
        return np.asarray(data.partition_sums(func, *args))

    def describe(self, data) -> str:
        return f"<dask DataFrame, {data.npartitions} partitions, {len(data.columns)} columns>"

    def __repr__(self):
        return "PARTITIONED"


IN_MEMORY = InMemory()
PARTITIONED = Partitioned()


def is_dask_dataframe(obj) -> bool:
    """True for a Dask DataFrame, decided from its type without importing dask."""
    module = type(obj).__module__ or ""
    return module.split(".")[0] == "dask" and hasattr(obj, "npartitions") and hasattr(obj, "map_partitions")


def backend_of(data):
    """The backend of a data set given to ``dp_select`` or ``fit.estimate`` (the one place that
    looks at its type)."""
    return PARTITIONED if is_dask_dataframe(data) else IN_MEMORY
