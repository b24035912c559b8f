"""``DPSelector``: :func:`dpstats.dp_select` as a scikit-learn feature selector.

Needs scikit-learn, the optional ``lasso`` extra (``pip install dpstats[lasso]``).  This
module imports without it; constructing a :class:`DPSelector` then raises
:class:`SklearnUnavailableError` with the pip command.
"""
from __future__ import annotations

import keyword
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .errors import DataError, InvalidArgumentError, InvalidTypeError

SKLEARN_INSTALL_HINT = "pip install dpstats[lasso]"

#: ``dp_select`` arguments that DPSelector sets from its own parameters, so not accepted in
#: ``method_options`` (the value is the DPSelector parameter to use instead).
_OWN_ARGUMENTS = {"formula": None, "data": None, "method": "method", "epsilon": "epsilon", "s": "s", "k": "s",
                  "bounds": "bounds", "random_state": "random_state", "accountant": "accountant",
                  "signs": "signs"}
#: Column names the formula cannot take as they are (besides non-identifiers and keywords).
_RESERVED_NAMES = {"Intercept"}


class SklearnUnavailableError(InvalidArgumentError, ImportError):
    """scikit-learn (the optional ``lasso`` extra) is needed but cannot be imported."""


try:
    from sklearn.base import BaseEstimator, clone as _sk_clone
    from sklearn.feature_selection import SelectorMixin
    from sklearn.utils.validation import check_is_fitted, check_consistent_length, column_or_1d
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess by the tests
    _IMPORT_ERROR = f"{type(_exc).__name__}: {_exc}"

    class _Unavailable:
        """Stands in for scikit-learn's bases when it is not installed."""

        def __new__(cls, *args, **kwargs):
            raise SklearnUnavailableError(
                f"DPSelector is a scikit-learn selector and needs scikit-learn, an optional extra of dpstats: "
                f"install it with `{SKLEARN_INSTALL_HINT}` (or pip install scikit-learn). "
                f"(import failed: {_IMPORT_ERROR})")

    _BASES = (_Unavailable,)
    _validate_data = None
else:
    _BASES = (SelectorMixin, BaseEstimator)
    try:  # scikit-learn >= 1.6
        from sklearn.utils.validation import validate_data as _validate_data
    except ImportError:  # pragma: no cover - older scikit-learn
        _validate_data = None


def _numeric(dtype) -> bool:
    """A real numeric dtype (complex is refused too: a feature is real)."""
    if isinstance(dtype, np.dtype):
        return dtype.kind in "biuf"
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)


def _as_numbers(X):
    """A list (or any input without a dtype) as float numbers, every entry that is not a real number
    (None, text, complex) as NaN: a list has no schema, so its values may not decide whether the call is
    refused (the rows with NaN are omitted after the charge, as dp_select omits incomplete rows).  Arrays,
    Series and DataFrames are returned as they are (their dtype is the schema)."""
    if isinstance(X, (pd.DataFrame, pd.Series)) or isinstance(getattr(X, "dtype", None), np.dtype):
        return X
    try:
        cells = np.asarray(X, dtype=object)
    except ValueError:
        return X  # ragged: scikit-learn's shape check refuses it (the shape is the schema)
    flat = cells.ravel()
    out = np.full(flat.shape, np.nan)
    for i, v in enumerate(flat):
        if isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating)):
            out[i] = float(v)
    return out.reshape(cells.shape)


def _refuse_non_numeric(X, what):
    """Refuse X or y by dtype alone (the public schema), never by its values.

    scikit-learn converts an object array to numbers where every value allows it and raises
    otherwise, which is a fact about the values; dpstats decides by dtype, as ``dp_select``
    does for a formula's columns.  Inputs without a dtype (lists) are converted first by
    :func:`_as_numbers`.  Complex dtypes are refused here (scikit-learn's own refusal quotes values).
    """
    if isinstance(X, pd.DataFrame):
        dtypes = list(X.dtypes.items())
    elif isinstance(X, pd.Series) or isinstance(getattr(X, "dtype", None), np.dtype):
        dtypes = [(None, X.dtype)]
    else:
        return
    bad = [(f"dtype {t}" if c is None else f"column {c!r} of dtype {t}") for c, t in dtypes if not _numeric(t)]
    if bad:
        shown = ", ".join(bad[:5]) + (", ..." if len(bad) > 5 else "")
        if any(pd.api.types.is_complex_dtype(t) for _, t in dtypes):  # scikit-learn's wording, not its quote of values
            raise DataError(f"Complex data not supported: DPSelector takes real {what}; got {shown}. Pass the real "
                            "and imaginary parts as two features.")
        raise DataError(
            f"DPSelector takes numeric {what} only (the dtype decides, never the values); got {shown}. Encode text "
            "and categories first (e.g. a OneHotEncoder earlier in the pipeline), or call dpstats.dp_select with "
            "a formula and declared levels.")


def _check_X(estimator, X, reset):
    """X as a 2-d numeric array (NaN and inf kept: dp_select omits those rows, never raises).

    No minimum row count here: dp_select applies its own (none for add/remove methods, whose
    row count is private)."""
    if _validate_data is not None:
        return _validate_data(estimator, X, reset=reset, dtype="numeric", ensure_all_finite=False,
                              ensure_min_samples=0)
    return estimator._validate_data(X, reset=reset, dtype="numeric", force_all_finite=False,  # pragma: no cover
                                    ensure_min_samples=0)


def _formula_names(names):
    """The column name for the formula of each feature: the feature's own name when the formula
    can take it (a string that is a Python identifier, not a keyword, not 'Intercept'), else
    x<j> (with '_' appended until it is free)."""
    safe = [None] * len(names)
    taken = set()
    for j, name in enumerate(names):
        if (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)
                and name not in _RESERVED_NAMES):
            safe[j] = name
            taken.add(name)
    originals = {n for n in names if isinstance(n, str)}
    for j, name in enumerate(names):
        if safe[j] is None:
            candidate = f"x{j}"
            while candidate in taken or candidate in originals:
                candidate += "_"
            safe[j] = candidate
            taken.add(candidate)
    return safe


def _response_name(names, safe):
    """'y', or 'y_', 'y__', ... : a name that is neither a feature's name nor a formula name."""
    used = set(safe) | {n for n in names if isinstance(n, str)}
    name = "y"
    while name in used:
        name += "_"
    return name


class DPSelector(*_BASES):
    """Differentially private feature selection as a scikit-learn selector.

    ``fit(X, y)`` runs :func:`dpstats.dp_select` on the formula ``y ~ <every column of X>``
    and keeps the selected columns; ``transform`` (from scikit-learn's ``SelectorMixin``),
    ``get_support()`` and ``get_feature_names_out()`` work as for any selector, so it fits in a
    :class:`~sklearn.pipeline.Pipeline`.

    Privacy
    -------
    **Every call to fit is a new release and charges** ``epsilon`` **again**: refitting, a
    ``fit`` followed by ``fit_transform``, every fold of ``cross_val_score`` and every candidate
    times every fold of ``GridSearchCV`` each spend ``epsilon`` on the same data, and those
    costs add up.  Pass an :class:`~dpstats.Accountant` (``accountant=``) to cap the total: a
    fit that would exceed it raises :class:`~dpstats.BudgetExceededError` before anything is
    charged.  ``sklearn.base.clone`` (used by cross-validation and grid search) shares the
    accountant with the clone instead of copying it, so the cap holds across clones in one
    process; so does ``copy.deepcopy``.  An accountant never survives pickling as a budget: a
    pickled selector (saved with joblib, or sent to worker processes by ``n_jobs`` other than 1
    in ``cross_val_score``, ``GridSearchCV``...) carries an accountant that refuses every charge,
    so its fits are refused before anything is read (a copy charging a copy would spend the same
    budget twice).  Use ``n_jobs=1`` with an accountant; a reloaded selector takes a new one with
    ``set_params(accountant=...)``.

    * What is released is the selected mask (``get_support()``, ``selection_.support``) and
      its ledger (``ledger_``; ``selection_.release()`` gives the publishable record).
      ``selection_`` also holds curator-only diagnostics: do not publish it whole.
    * The values of X and y are clipped to ``bounds`` (see :func:`dpstats.dp_select`); rows
      with a missing or non-finite value are omitted (``na_action="omit"``), never an error.
    * ``transform`` spends nothing: keeping the released columns is post-processing.
    * Only the selection is private.  An estimator fitted after it in a pipeline on the same
      data (``LinearRegression`` below) is **not** differentially private; for private
      coefficients use ``method_options={"estimate": share}`` (``selection_.estimates``) or
      ``selection_.estimate(...)``.
    * A ``random_state`` seed makes fits reproducible, and the ledger then says "not for
      release"; leave it None for a release.

    Parameters
    ----------
    method : str, default "auto"
        A method of :func:`dpstats.available_methods`, or "auto" (chosen from public inputs).
    epsilon : float, default 1.0
        The privacy budget of one fit.
    s : int or "auto", default None
        How many features to select; required (a fit without it is refused).  Passed to
        ``dp_select`` as ``s=`` or ``k=``, whichever the method takes (``s=`` for "auto").
    bounds : (b_x, b_y), dict or "auto", optional
        Public clipping ranges, as for ``dp_select``: a pair (every feature in [-b_x, b_x],
        y in [-b_y, b_y]), ``"auto"``, or a dict ``{feature name: (lower, upper)}`` keyed by
        the names of ``get_feature_names_out()`` (the columns of a DataFrame X, else x0,
        x1, ...), with y's range under the key ``"y"`` (``"y_"`` if a feature is named "y";
        the name used is ``response_name_`` after fit).
    random_state : None, int or numpy.random.Generator
        None draws from the OS CSPRNG (for a release); a seed makes fits reproducible.
    accountant : dpstats.Accountant, optional
        A shared budget charged by every fit (see Privacy).  It is never modified by this
        estimator other than by the charges of its fits; ``accountant_`` is the one used.
    signs : bool or float, default False
        Also spend a share of epsilon on the private signs of the selected terms
        (``selection_.signs``); the selector itself does not need them.  A method whose
        mechanism releases signs itself (``"dpvote"``) gets no ``signs=`` when this is False.
    method_options : dict, optional
        Further keyword arguments of ``dp_select``: the method's options (``max_enumerate``,
        ``design``, ...) and ``na_action``, ``radius``, ``ridge``, ``time_limit``,
        ``estimate``...  Arguments set by the parameters above are refused here.

    Attributes
    ----------
    support_mask_ : ndarray of bool, shape (n_features_in_,)
        The selected features (a release).
    selection_ : dpstats.SelectionResult
        The result of the last fit's ``dp_select`` call (its term names are the formula
        names, ``formula_names_``).
    ledger_ : dpstats.Ledger
        ``selection_.ledger``: what the last fit spent (``ledger_.total_epsilon``).
    accountant_ : dpstats.Accountant or None
        The accountant charged by the last fit.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Set when X is a DataFrame whose column names are all strings.
    formula_names_ : dict
        Feature name -> the column name used in the formula (equal unless the name is not a
        valid formula name, e.g. "a b" or "class", which become x<j>).
    response_name_ : str
        The name of y in the formula ("y" unless a feature is named "y").

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> from sklearn.linear_model import LinearRegression
    >>> import dpstats
    >>> from dpstats.sklearn_selector import DPSelector
    >>> data = dpstats.simulate(n=200, p=8, s=2, random_state=1).data  # doctest: +SKIP
    >>> X, y = data.drop(columns="y"), data["y"]  # doctest: +SKIP
    >>> acc = dpstats.Accountant(epsilon=2)
    >>> pipe = Pipeline([
    ...     ("select", DPSelector(method="dp_sis", epsilon=1, s=2, bounds=(3, 3), accountant=acc)),
    ...     ("ols", LinearRegression()),  # not private: fitted on the raw data
    ... ])
    >>> pipe.fit(X, y).predict(X)  # doctest: +SKIP
    >>> pipe["select"].get_feature_names_out()  # doctest: +SKIP
    >>> acc.remaining()  # doctest: +SKIP
    (1.0, 0.0)
    """

    def __init__(self, method="auto", epsilon=1.0, s=None, bounds=None, random_state=None, accountant=None,
                 signs=False, method_options=None):
        self.method = method
        self.epsilon = epsilon
        self.s = s
        self.bounds = bounds
        self.random_state = random_state
        self.accountant = accountant
        self.signs = signs
        self.method_options = method_options

    # ------------------------------------------------------------------ scikit-learn plumbing
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # rows with NaN or inf are omitted by dp_select
        tags.target_tags.required = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"allow_nan": True, "requires_y": True}

    def __sklearn_clone__(self):
        """A clone that shares the accountant (a budget is shared, never copied)."""
        params = {name: _sk_clone(value, safe=False)
                  for name, value in self.get_params(deep=False).items() if name != "accountant"}
        return type(self)(accountant=self.accountant, **params)

    def _get_support_mask(self):
        check_is_fitted(self, "support_mask_")
        return self.support_mask_

    # ------------------------------------------------------------------ fit
    def _method_keywords(self):
        """The size (as s= or k=, whichever the method takes) and signs= of the dp_select call."""
        from .methods import get_method

        if self.s is None:
            raise InvalidArgumentError(
                "DPSelector needs s= (how many features to select), e.g. DPSelector(method=..., epsilon=..., s=3); "
                "it is passed to dp_select as s= or k=, whichever the method takes.")
        if isinstance(self.method, str) and self.method == "auto":
            return {"s": self.s, "signs": self.signs}
        meth = get_method(self.method)  # an unknown name is refused with the list of methods
        out = {meth.size_argument: self.s}
        # A method whose mechanism releases signs itself (dpvote) takes no signs= : the
        # selector's default (signs=False, no sign step) then means "leave it to the method".
        if not (meth.sign_step().native and self.signs is False):
            out["signs"] = self.signs
        return out

    def _options(self):
        options = self.method_options
        if options is None:
            return {}
        if not isinstance(options, Mapping):
            raise InvalidTypeError(f"method_options must be a dict of dp_select keyword arguments or None; "
                                   f"got {type(options).__name__}.")
        for key in options:
            if key in _OWN_ARGUMENTS:
                own = _OWN_ARGUMENTS[key]
                fix = f"set DPSelector({own}=...) instead" if own else "DPSelector builds it from X and y"
                raise InvalidArgumentError(f"method_options may not contain {key!r}: {fix}.")
        return dict(options)

    def _bounds(self, names, safe, response):
        bounds = self.bounds
        if not isinstance(bounds, Mapping):
            return bounds  # None, "auto", a pair or something dp_select refuses with its own message
        to_formula = dict(zip(names, safe))
        out = {}
        for key, value in bounds.items():
            if key == response:
                out[response] = value
            elif key in to_formula:
                out[to_formula[key]] = value
            else:
                shown = list(names) if len(names) <= 10 else list(names[:10]) + ["..."]
                raise InvalidArgumentError(
                    f"bounds has a key {key!r}, which is neither a feature name ({shown}) nor the response's "
                    f"key {response!r}.")
        return out

    def fit(self, X, y):
        """Select features privately: one ``dp_select`` call, charging ``epsilon`` (again).

        Returns ``self``.
        A refused or failed fit (bad arguments, a budget exceeded, a time limit) leaves the
        selector as it was: the previous fit's attributes, if any, stay.
        """
        previous = {name: self.__dict__[name] for name in ("n_features_in_", "feature_names_in_")
                    if name in self.__dict__}
        try:
            return self._fit(X, y)
        except BaseException:
            for name in ("n_features_in_", "feature_names_in_"):  # set by scikit-learn's validation
                self.__dict__.pop(name, None)
            self.__dict__.update(previous)
            raise

    def _fit(self, X, y):
        from .api import dp_select

        keywords = self._method_keywords()
        options = self._options()
        X, y = _as_numbers(X), _as_numbers(y)
        _refuse_non_numeric(X, "features")
        _refuse_non_numeric(y, "y")
        X = _check_X(self, X, reset=True)
        y = column_or_1d(y, warn=True)
        _refuse_non_numeric(y, "y")
        if y.dtype.kind == "c":
            raise DataError("Complex data not supported: DPSelector takes a real y.")
        check_consistent_length(X, y)
        y = y.astype(float)
        names = list(getattr(self, "feature_names_in_", [f"x{j}" for j in range(X.shape[1])]))
        if len(set(names)) < len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise DataError(f"X has duplicated column names {twice[:5]}; rename them.")
        safe = _formula_names(names)
        response = _response_name(names, safe)
        bounds = self._bounds(names, safe, response)
        frame = pd.DataFrame(X, columns=safe)
        frame.insert(0, response, y)
        fit = dp_select(f"{response} ~ .", frame, method=self.method, epsilon=self.epsilon, bounds=bounds,
                        random_state=self.random_state, accountant=self.accountant,
                        **keywords, **options)
        selected = set(fit.support)
        self.support_mask_ = np.array([name in selected for name in safe], dtype=bool)
        self.selection_ = fit
        self.ledger_ = fit.ledger
        self.accountant_ = self.accountant
        self.formula_names_ = dict(zip(names, safe))
        self.response_name_ = response
        return self
