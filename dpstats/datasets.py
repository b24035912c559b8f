"""Example datasets shipped with dpstats, with public clipping ranges.

The data files live in the repository's ``data/`` folder, which an installed wheel
ships as the subpackage ``dpstats._data``.  Each dataset is described in
``data/datasets.json`` (machine-readable) and ``data/CODEBOOK.md`` (for people).

:func:`dataset_bounds` suggests a public range ``(lower, upper)`` for every numeric
column, in the form ``dp_select(..., bounds=...)`` takes: each column is clipped to its
range and mapped affinely onto [-1, 1].  A range that starts where the values can start
(0 for counts and salaries, 1 for codes starting at 1) uses the whole of [-1, 1]; a
symmetric bound [-B, B] on a non-negative column would leave the negative half unused.
The ranges were chosen from the documented meaning of each measurement (physiology,
questionnaire codes, baseball record books, what cannot be negative), not from the
values in the files, so clipping to them reveals nothing about the data.  One stated
exception: the diabetes response ``y`` has no documented scale, so its range is a
convention for examples.  The reason for each end is in
``dataset_info(name)["bounds_rationale"]``.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import DataError, InvalidArgumentError, InvalidTypeError

__all__ = ["list_datasets", "load_dataset", "dataset_bounds", "dataset_info"]

_METADATA_FILE = "datasets.json"


def _data_dir() -> Any:
    """Folder (a Traversable or a Path) holding datasets.json and the CSV files."""
    try:
        packaged = resources.files("dpstats._data")
    except (ModuleNotFoundError, TypeError):
        # Running from a source checkout: ``dpstats._data`` only exists once setuptools
        # has mapped ``data/`` into the package, i.e. in a built wheel.
        packaged = None
    if packaged is not None and packaged.joinpath(_METADATA_FILE).is_file():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "data"
    if (checkout / _METADATA_FILE).is_file():
        return checkout
    raise FileNotFoundError(
        "dpstats cannot find its example data: neither the installed package "
        "'dpstats._data' nor the source folder "
        f"'{checkout}' contains {_METADATA_FILE}. Reinstall dpstats."
    )


@functools.lru_cache(maxsize=1)
def _metadata() -> dict[str, dict]:
    # Cached because it never changes within a process; callers only ever get deep
    # copies, so nothing outside this module can modify the cached object.
    with _data_dir().joinpath(_METADATA_FILE).open("r", encoding="utf-8") as fh:
        meta = json.load(fh)
    for entry in meta.values():
        _expand_column_groups(entry)
    return meta


def _expand_column_groups(entry: dict) -> None:
    """Expand ``column_groups`` (many alike columns, e.g. 2308 genes) into per-column entries.

    A group names columns ``prefix + zero-padded number`` from ``first`` to ``last`` that
    share a description template, units, a public ``range`` [lower, upper] and its
    ``range_rationale``; keeping them as one group keeps datasets.json small and readable.
    """
    for group in entry.pop("column_groups", []):
        for j in range(group["first"], group["last"] + 1):
            name = f"{group['prefix']}{j:0{group['digits']}d}"
            entry["columns"][name] = {"description": group["description"].format(name=name),
                                      "units": group["units"]}
            entry["bounds"][name] = list(group["range"])
            entry["bounds_rationale"][name] = group["range_rationale"]


def _entry(name: str) -> dict:
    if not isinstance(name, str):
        raise InvalidTypeError(
            f"name must be a str naming a dataset, got {type(name).__name__}; "
            f"available datasets: {', '.join(list_datasets())}."
        )
    meta = _metadata()
    if name not in meta:
        raise InvalidArgumentError(
            f"Unknown dataset name {name!r}; available datasets: "
            f"{', '.join(sorted(meta))}."
        )
    return meta[name]


def list_datasets() -> list[str]:
    """Names of the example datasets shipped with dpstats.

    Returns
    -------
    list of str
        Dataset names, sorted alphabetically; each is accepted by
        :func:`load_dataset`, :func:`dataset_bounds` and :func:`dataset_info`.
    """
    return sorted(_metadata())


#: ``read_csv`` options that read decimal text exactly: before pandas 3 the default parser
#: could be one unit in the last place off (so the data depended on the pandas version);
#: pandas 3 reads exactly by default and deprecates the option.
EXACT_FLOATS = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}


def load_dataset(name: str) -> pd.DataFrame:
    """Load an example dataset as a pandas DataFrame.

    Categorical columns are returned as ``pandas.Categorical`` whose categories are
    the levels *declared* in the metadata, in the declared order, rather than the
    levels found in the file.  The levels are therefore public knowledge, and
    downstream code may build indicator columns from them without looking at the data.
    Missing values (only ``Salary`` in ``"hitters"``) are kept as NaN; dpstats
    omits such rows by default (``na_action="omit"``, R's ``na.omit``).

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`: ``"diabetes"`` (Efron et al., 2004 [1]_;
        442 patients, response ``y``) or ``"hitters"`` (James et al., 2023 [2]_;
        322 baseball players, response ``Salary``).

    Returns
    -------
    pandas.DataFrame
        One row per observation, with the columns listed in
        ``dataset_info(name)["columns"]``, in that order.

    Raises
    ------
    InvalidArgumentError
        If ``name`` is not a known dataset (also a ``ValueError``).
    InvalidTypeError
        If ``name`` is not a string (also a ``TypeError``).

    References
    ----------
    .. [1] Efron, B., Hastie, T., Johnstone, I. and Tibshirani, R. (2004).
       Least angle regression. *Annals of Statistics*, 32(2), 407-499.
    .. [2] James, G., Witten, D., Hastie, T., Tibshirani, R. and Taylor, J. (2023).
       *An Introduction to Statistical Learning with Applications in Python*.
       Springer, Cham.
    """
    entry = _entry(name)
    categorical: dict[str, list[str]] = entry["categorical"]
    with _data_dir().joinpath(entry["file"]).open("r", encoding="utf-8") as fh:
        # Only empty cells count as missing: pandas' default NA strings include
        # labels such as "NA" or "None" that could be legitimate category labels.
        frame = pd.read_csv(
            fh,
            dtype={col: str for col in categorical},
            keep_default_na=False,
            na_values=[""],
            **EXACT_FLOATS,
        )
    for col, levels in categorical.items():
        values = frame[col]
        unknown = sorted(set(values.dropna()) - set(levels))
        if unknown:
            # pd.Categorical would silently turn such labels into NaN.
            raise DataError(
                f"Column {col!r} of dataset {name!r} holds labels {unknown} that are not "
                f"among its declared levels {levels}; the installed data files are "
                "inconsistent. Reinstall dpstats."
            )
        frame[col] = pd.Categorical(values, categories=list(levels), ordered=False)
    return frame


def dataset_bounds(name: str) -> dict[str, tuple[float, float]]:
    """Suggested public range ``(lower, upper)`` of each numeric column.

    The ranges come from what is publicly known about each measurement
    (physiological plausibility, questionnaire codes, baseball record books, what
    cannot be negative), not from the data, so clipping to them reveals nothing about
    the data.  The exception is the diabetes response ``y``, whose scale is
    undocumented: its range is a convention for examples, to be replaced by your own
    for a real analysis.  The reasons for both ends of each range are in
    ``dataset_info(name)["bounds_rationale"]``.  The result can be passed as
    ``dp_select(..., bounds=dataset_bounds(name))`` (keep only the formula's terms
    and its response).

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`: ``"diabetes"`` [1]_ or ``"hitters"`` [2]_.

    Returns
    -------
    dict of str to tuple of (float, float)
        A new dictionary mapping every numeric column, response included, to a
        range ``(lower, upper)`` with ``lower < upper``, both finite, such that values
        are expected to lie in ``[lower, upper]``.  ``dp_select`` clips each column
        to its range and maps it affinely onto [-1, 1].

    Raises
    ------
    InvalidArgumentError
        If ``name`` is not a known dataset (also a ``ValueError``).
    InvalidTypeError
        If ``name`` is not a string (also a ``TypeError``).

    References
    ----------
    .. [1] Efron, B., Hastie, T., Johnstone, I. and Tibshirani, R. (2004).
       Least angle regression. *Annals of Statistics*, 32(2), 407-499.
    .. [2] James, G., Witten, D., Hastie, T., Tibshirani, R. and Taylor, J. (2023).
       *An Introduction to Statistical Learning with Applications in Python*.
       Springer, Cham.
    """
    return {col: (float(lower), float(upper)) for col, (lower, upper) in _entry(name)["bounds"].items()}


def dataset_info(name: str) -> dict:
    """The full metadata entry of a dataset.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`: ``"diabetes"`` [1]_ or ``"hitters"`` [2]_.

    Returns
    -------
    dict
        A deep copy (safe to modify) with keys ``"file"``, ``"title"``,
        ``"source"``, ``"licence"``, ``"licence_note"``, ``"row"``, ``"n_rows"``,
        ``"response"``, ``"missing"``, ``"categorical"``, ``"columns"``,
        ``"bounds"`` (column -> ``[lower, upper]`` list, as in datasets.json; see
        :func:`dataset_bounds`) and ``"bounds_rationale"`` (column -> the reasons
        for the lower and the upper end).

    Raises
    ------
    InvalidArgumentError
        If ``name`` is not a known dataset (also a ``ValueError``).
    InvalidTypeError
        If ``name`` is not a string (also a ``TypeError``).

    References
    ----------
    .. [1] Efron, B., Hastie, T., Johnstone, I. and Tibshirani, R. (2004).
       Least angle regression. *Annals of Statistics*, 32(2), 407-499.
    .. [2] James, G., Witten, D., Hastie, T., Tibshirani, R. and Taylor, J. (2023).
       *An Introduction to Statistical Learning with Applications in Python*.
       Springer, Cham.
    """
    return copy.deepcopy(_entry(name))

