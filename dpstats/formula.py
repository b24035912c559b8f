"""Formula interface on patsy, with R's ``.`` and the privacy checks of spec 05, 5.3.

``y ~ .`` means every column except those on the left-hand side; ``. - x3`` removes a
term; ``(.)**2`` expands to all main effects and pairwise interactions.  Row-wise
transforms with public constants (``np.log(x)``, ``I(x**2)``, ``x1:x2``) are fine.

What is refused or flagged, and why:

* patsy's stateful transforms (``center``, ``standardize``, ``scale``, spline bases
  ``bs``/``cr``/``cc``/``te``) compute constants (means, standard deviations, knots)
  from the whole column; those constants would leave the budget, so they are refused.
* categorical levels inferred from the data reveal which levels occur: a
  :class:`~dpstats.errors.PrivacyLeakWarning` is issued and a ledger caveat added.
  Pandas Categoricals (declared categories), booleans and ``C(x, levels=[...])`` are
  accepted silently.
* missing values raise by default; ``na_action="omit"`` drops incomplete rows (the
  ledger notes that the number of complete rows is data-dependent) and a dict of public
  constants imputes them column by column.

The intercept, when the formula has one, is never a candidate term: it is forced into
every support (spec 01, section 1.1).
"""
from __future__ import annotations

import ast
import contextlib
import io
import keyword
import re
import sys
import tokenize
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy

from .errors import DataError, FormulaError, InvalidArgumentError, InvalidTypeError, PrivacyLeakWarning, StatefulTransformError

_STATEFUL_HELP = (
    "compute its constants from the whole column (means, scales or knots), which would "
    "reveal data outside the privacy budget. Use public constants instead, for example "
    "I((x - 50) / 10) with a centre and scale known before seeing the data, or build the "
    "basis yourself with public knots."
)

NA_ACTIONS = ("raise", "omit")
RESPONSE_TYPES = ("numeric", "binary")


@dataclass
class ModelFrame:
    """The design of a call: candidate terms, response and intercept.

    Attributes
    ----------
    X : ndarray (n, p)
        Candidate term columns (no intercept), before clipping.
    y : ndarray (n,) or None
    terms : list of str
        Names of the candidate terms, in column order.
    response : str or None
    intercept : bool
    caveats : list of str
        Ledger caveats raised while building the design.
    response_levels : tuple or None
        For a binary response, its two levels (coded -1, +1), in that order.
    """

    formula: str
    expanded_formula: str
    X: np.ndarray
    y: np.ndarray | None
    terms: list
    response: str | None
    intercept: bool
    n_rows_input: int
    caveats: list = field(default_factory=list)
    categorical_terms: list = field(default_factory=list)
    #: ``(negative, positive)`` level of a binary response coded -1 / +1
    #: (``response_type="binary"``); None for a numeric response.
    response_levels: tuple | None = None

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def p(self) -> int:
        return self.X.shape[1]


def check_na_action(na_action):
    """Validate ``na_action`` without looking at the data."""
    if isinstance(na_action, str):
        if na_action == "impute":
            raise InvalidArgumentError(
                'na_action="impute" needs the public constants: pass a dict such as '
                'na_action={"x1": 0.0, "y": 10.0} mapping each column to its impute value.'
            )
        if na_action not in NA_ACTIONS:
            raise InvalidArgumentError(
                f'na_action must be "raise", "omit" or a dict of public impute constants; got {na_action!r}.'
            )
        return na_action
    if isinstance(na_action, Mapping):
        for key, value in na_action.items():
            if not isinstance(key, str):
                raise InvalidTypeError(f"na_action keys must be column names; got {key!r}.")
            if isinstance(value, (int, float, np.number)) and not np.isfinite(value):
                raise InvalidArgumentError(f"na_action impute value for {key!r} must be finite.")
        return dict(na_action)
    raise InvalidTypeError(
        'na_action must be "raise", "omit" or a dict of public impute constants; '
        f"got {type(na_action).__name__}."
    )


def _quote(name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    return f"Q({name!r})"


def _expand_dot(rhs: str, columns) -> str:
    """Replace every free-standing ``.`` token of the right-hand side by all columns."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(rhs).readline))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise FormulaError(f"formula right-hand side {rhs!r} does not parse: {exc}") from None
    # Offsets of free-standing dots: a '.' not preceded by something it could belong to.
    spans = []
    prev = None
    for tok in tokens:
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.OP and tok.string == ".":
            attached = prev is not None and (prev.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)
                                             or prev.string in (")", "]"))
            if not attached:
                spans.append(tok.start[1])
        prev = tok
    if not spans:
        return rhs
    if not columns:
        raise FormulaError("'.' in the formula stands for the other columns, but data has none.")
    expansion = "(" + " + ".join(_quote(c) for c in columns) + ")"
    out = rhs
    for offset in reversed(spans):
        out = out[:offset] + expansion + out[offset + 1:]
    return out


def _names_in(code: str):
    """Column names an expression refers to: bare names and Q("...") strings."""
    try:
        tree = ast.parse(code.strip() or "0", mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"cannot parse {code!r} in the formula: {exc.msg}") from None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value)
    return names


def _clean_term_name(name: str) -> str:
    return re.sub(r"""Q\((['"])(.*?)\1\)""", r"\2", name)


def _factor_codes(terms):
    for term in terms:
        for factor in term.factors:
            yield factor


def _validate_data(data):
    if isinstance(data, pd.DataFrame):
        frame = data
    elif isinstance(data, Mapping):
        try:
            frame = pd.DataFrame(dict(data))
        except Exception as exc:  # noqa: BLE001 - pandas raises many types here
            raise InvalidTypeError(f"data could not be turned into a DataFrame: {exc}") from None
    else:
        raise InvalidTypeError(
            f"data must be a pandas DataFrame (or a dict of columns); got {type(data).__name__}."
        )
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise DataError(f"data is empty ({frame.shape[0]} rows, {frame.shape[1]} columns).")
    if frame.columns.has_duplicates:
        dups = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
        raise DataError(f"data has duplicated column names {dups}; rename them so every column is unique.")
    non_str = [c for c in frame.columns if not isinstance(c, str)]
    if non_str:
        frame = frame.rename(columns={c: str(c) for c in non_str})
    return frame


@contextlib.contextmanager
def _recursion_limit(limit):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, int(limit)))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@dataclass
class ParsedFormula:
    """A formula checked against column names only (no data values are read)."""

    lhs: str
    expanded: str
    desc: object  # patsy.ModelDesc
    used_columns: list
    response_columns: list


def parse_formula(formula, columns, *, require_response=True, eval_env=None, unknown_hint="") -> ParsedFormula:
    """Split, expand ``.``, parse, and refuse stateful transforms and unknown names.

    Works from the column names alone, so the pandas and the Dask paths share it and
    nothing here depends on the data's values.
    """
    if not isinstance(formula, str):
        raise InvalidTypeError(f'formula must be a string such as "y ~ ."; got {type(formula).__name__}.')
    if "~" not in formula:
        raise FormulaError(f'formula {formula!r} has no "~"; write it as "response ~ terms", e.g. "y ~ .".')
    lhs, rhs = formula.split("~", 1)
    lhs = lhs.strip()
    if "~" in rhs:
        raise FormulaError(f"formula {formula!r} has more than one '~'.")
    if require_response and not lhs:
        raise FormulaError(f'formula {formula!r} has no response; write it as "y ~ ...".')
    lhs_names = _names_in(lhs) if lhs else set()
    expanded = f"{lhs} ~ {_expand_dot(rhs, [c for c in columns if c not in lhs_names]).strip()}"
    try:
        # patsy parses "a + b + ..." recursively, one frame per term: allow wide formulas
        # (p >> n screening, e.g. 2308 genes) by raising the limit for the parse only.
        with _recursion_limit(4 * expanded.count("+") + 1000):
            desc = patsy.ModelDesc.from_formula(expanded)
    except patsy.PatsyError as exc:
        raise FormulaError(f"formula {formula!r} does not parse: {exc}") from None
    if eval_env is None:
        eval_env = patsy.EvalEnvironment([{"np": np, "numpy": np}])
    used = set()
    # Refuse stateful transforms before any value of the data is evaluated.
    for factor in _factor_codes(desc.lhs_termlist + desc.rhs_termlist):
        code = getattr(factor, "code", str(factor))
        try:
            passes = factor.memorize_passes_needed({}, eval_env)
        except Exception:  # noqa: BLE001 - unknown names surface below with a clearer message
            passes = 0
        if passes:
            raise StatefulTransformError(f"the formula term {code!r} uses a stateful transform: such transforms {_STATEFUL_HELP}")
        names = _names_in(code)
        unknown = [n for n in names if n not in columns and n not in ("Q", "C", "I")
                   and _lookup(eval_env, n) is _MISSING]
        if unknown:
            raise FormulaError(
                f"formula refers to {sorted(unknown)}, which are not columns of data "
                f"(columns: {columns[:20]}{' ...' if len(columns) > 20 else ''}){unknown_hint}."
            )
        used |= {n for n in names if n in columns}
    return ParsedFormula(lhs=lhs, expanded=expanded, desc=desc, used_columns=sorted(used),
                         response_columns=[c for c in columns if c in lhs_names])


def build_model_frame(formula, data, *, na_action="raise", require_response=True, eval_env=None,
                      response_type="numeric") -> ModelFrame:
    """Parse ``formula`` against ``data`` and return the design of the call.

    Parameters
    ----------
    formula : str
        A patsy formula, with R's ``.`` for "every other column".
    data : pandas.DataFrame
    na_action : "raise", "omit" or dict
        See the module docstring.
    require_response : bool
        Raise if the formula has no left-hand side.
    eval_env : patsy.EvalEnvironment, optional
        Where names like ``np`` or user functions are looked up.
    response_type : "numeric" or "binary"
        ``"binary"`` (classification with the hinge loss) codes a two-level response
        -1 / +1: a bool (False, True), a numeric 0/1 column (0, 1), a pandas Categorical
        with two declared categories (in declared order), or a column of two distinct
        strings (sorted order; the levels are then inferred from the data, which issues a
        PrivacyLeakWarning and a ledger caveat, as for categorical terms).  The response
        must be a column of ``data``; the levels are recorded as
        ``ModelFrame.response_levels = (negative, positive)``.

    Raises
    ------
    FormulaError, StatefulTransformError, DataError
    """
    if not isinstance(formula, str):
        raise InvalidTypeError(f'formula must be a string such as "y ~ ."; got {type(formula).__name__}.')
    na_action = check_na_action(na_action)
    if response_type not in RESPONSE_TYPES:
        raise InvalidArgumentError(f"response_type must be 'numeric' or 'binary'; got {response_type!r}.")
    frame = _validate_data(data)
    columns = [str(c) for c in frame.columns]
    if eval_env is None:
        eval_env = patsy.EvalEnvironment.capture(0)
    eval_env = eval_env.with_outer_namespace({"np": np, "numpy": np})
    parsed = parse_formula(formula, columns, require_response=require_response, eval_env=eval_env)
    desc, used, response_cols = parsed.desc, parsed.used_columns, parsed.response_columns
    expanded = parsed.expanded
    caveats: list[str] = []
    frame = _handle_missing(frame, used, na_action, caveats)
    _check_raw_values(frame, used)

    response_levels = None
    if response_type == "binary":
        binary_y, response_levels, inferred_levels = _binary_response(parsed, frame)
        desc = patsy.ModelDesc([], desc.rhs_termlist)  # the response is coded here, not by patsy
        if inferred_levels:
            warnings.warn(
                f"the levels {list(response_levels)} of the binary response {parsed.lhs!r} were inferred from "
                "the data, which reveals which values occur. Declare them: use a bool, a 0/1 column or a "
                "pandas Categorical with two fixed categories.", PrivacyLeakWarning, stacklevel=3)
            caveats.append(f"the levels of the binary response {parsed.lhs!r} were inferred from the data "
                           "(not covered by the budget)")
    elif len(response_cols) == 1:
        col = frame[response_cols[0]]
        if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)):
            raise DataError(
                f"the response {response_cols[0]!r} is not numeric (dtype {col.dtype}); "
                "dp_select needs a numeric response for this method."
            )

    try:
        if desc.lhs_termlist:
            y_df, x_df = patsy.dmatrices(desc, frame, eval_env=eval_env, NA_action="raise", return_type="dataframe")
        else:
            y_df = None
            x_df = patsy.dmatrix(desc, frame, eval_env=eval_env, NA_action="raise", return_type="dataframe")
    except patsy.PatsyError as exc:
        msg = str(exc).splitlines()[0]
        if "missing values" in msg:
            raise DataError(f"a formula term produced missing values (e.g. np.log of a non-positive value): {msg}") from None
        raise FormulaError(f"formula {formula!r} could not be evaluated on data: {msg}") from None

    y = None
    response = None
    if y_df is not None:
        if y_df.shape[1] != 1:
            raise DataError(
                f"the response {parsed.lhs!r} is categorical (it expands to {y_df.shape[1]} columns); "
                "dp_select needs a numeric response for this method."
            )
        response = _clean_term_name(parsed.lhs)
        y = y_df.to_numpy(dtype=np.float64)[:, 0]
        if not np.all(np.isfinite(y)):
            raise DataError(f"the response {response!r} has infinite or undefined values after transformation.")

    if response_type == "binary":
        response = _clean_term_name(parsed.lhs)
        y = binary_y

    design_info = x_df.design_info
    intercept = "Intercept" in x_df.columns
    x_df = x_df.drop(columns=["Intercept"]) if intercept else x_df
    terms = [_clean_term_name(c) for c in x_df.columns]
    if len(set(terms)) != len(terms):
        raise FormulaError(f"the formula produces duplicated term names: {terms}.")
    if not terms:
        raise FormulaError(f"formula {formula!r} has no candidate terms on its right-hand side.")
    X = x_df.to_numpy(dtype=np.float64)
    bad = ~np.all(np.isfinite(X), axis=0)
    if bad.any():
        names = [terms[j] for j in np.nonzero(bad)[0]]
        raise DataError(f"terms {names} have infinite or undefined values after transformation.")
    categorical_terms = _pure_categorical_columns(design_info, terms, intercept)
    # A dummy of a declared level that does not occur is constant but harmless (its levels
    # are public); other constant terms are errors.
    constant = np.all(X == X[:1], axis=0) & ~np.isin(terms, categorical_terms)
    if constant.any():
        names = [terms[j] for j in np.nonzero(constant)[0]]
        raise DataError(
            f"terms {names} are constant in data and carry no information; "
            "remove them from the formula (e.g. '- name')."
        )

    inferred = _categorical_inferred(design_info, frame)
    if inferred:
        warnings.warn(
            f"the levels of {inferred} were inferred from the data, which reveals which levels occur. "
            "Declare them: use a pandas Categorical with fixed categories or C(x, levels=[...]).",
            PrivacyLeakWarning, stacklevel=3,
        )
        caveats.append(f"categorical levels of {inferred} were inferred from the data (not covered by the budget)")
    return ModelFrame(formula=formula, expanded_formula=expanded, X=X, y=y, terms=terms, response=response,
                      intercept=intercept, n_rows_input=len(data), caveats=caveats,
                      categorical_terms=categorical_terms, response_levels=response_levels)


_MISSING = object()


def _binary_response(parsed, frame):
    """Code a two-level response -1 / +1; returns (y, (negative, positive), levels_inferred)."""
    name = _clean_term_name(parsed.lhs)
    if len(parsed.response_columns) != 1 or name != parsed.response_columns[0]:
        raise DataError(
            f"a binary response must be a column of data; got {parsed.lhs!r}. Add the coded column to the data "
            "(for example a bool or 0/1 column) and use its name on the left of '~'."
        )
    col = frame[name]
    inferred = False
    if pd.api.types.is_bool_dtype(col):
        levels = (False, True)
        values = col.to_numpy(dtype=bool)
        y = np.where(values, 1.0, -1.0)
    elif isinstance(col.dtype, pd.CategoricalDtype):
        categories = list(col.dtype.categories)
        if len(categories) != 2:
            raise DataError(
                f"the response {name!r} is categorical with {len(categories)} declared categories {categories}; "
                "classification with the hinge loss needs exactly two."
            )
        levels = (categories[0], categories[1])
        y = np.where(col.to_numpy() == categories[1], 1.0, -1.0)
    elif pd.api.types.is_numeric_dtype(col):
        values = col.to_numpy(dtype=np.float64)
        if not np.all((values == 0) | (values == 1)):
            raise DataError(
                f"the numeric response {name!r} is not binary: the hinge loss needs values in {{0, 1}} "
                "(or a bool, or a two-level categorical). Recode it, e.g. data['y01'] = (data['y'] > c) "
                "with a public threshold c."
            )
        levels = (0, 1)
        y = np.where(values == 1, 1.0, -1.0)
    else:
        observed = sorted({str(v) for v in col.to_numpy()})
        if len(observed) > 2:
            raise DataError(
                f"the response {name!r} has {len(observed)} levels {observed[:10]}; classification with the "
                "hinge loss needs exactly two."
            )
        inferred = True
        levels = tuple(observed) if len(observed) == 2 else (observed[0], None)
        y = np.where(col.astype(str).to_numpy() == levels[-1], 1.0, -1.0)
    if np.all(y == y[0]) or None in levels:
        raise DataError(
            f"the binary response {name!r} takes a single level in data; classification needs both classes."
        )
    return y, levels, inferred


def _lookup(eval_env, name):
    try:
        return eval_env.namespace[name]
    except KeyError:
        import builtins

        return getattr(builtins, name, _MISSING)


def _handle_missing(frame, used, na_action, caveats):
    missing = {c: int(frame[c].isna().sum()) for c in used}
    missing = {c: k for c, k in missing.items() if k}
    if not missing:
        return frame
    all_missing = [c for c in missing if missing[c] == len(frame)]
    if isinstance(na_action, dict):
        left = [c for c in missing if c not in na_action]
        if left:
            raise DataError(f"columns {left} have missing values but no impute constant in na_action.")
        frame = frame.copy()
        for c in missing:
            frame[c] = frame[c].fillna(na_action[c])
        caveats.append(f"missing values in {sorted(missing)} were imputed with public constants")
        return frame
    if all_missing:
        raise DataError(f"columns {all_missing} are entirely missing; remove them from the formula.")
    if na_action == "omit":
        kept = frame.dropna(subset=list(missing))
        if kept.shape[0] == 0:
            raise DataError("no complete rows are left after na_action='omit'.")
        caveats.append(
            "rows with missing values were omitted: the number of complete rows is data-dependent "
            "and a neighbouring data set may differ in it"
        )
        return kept
    detail = ", ".join(f"{c} ({k})" for c, k in missing.items())
    raise DataError(
        f"data has missing values in {detail}. Choose na_action='omit' (drop incomplete rows) or "
        "na_action={column: public constant} (impute); dpstats never imputes from the data."
    )


def _check_raw_values(frame, used):
    for c in used:
        col = frame[c]
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            values = col.to_numpy(dtype=np.float64, na_value=np.nan)
            if np.isinf(values).any():
                raise DataError(f"column {c!r} contains infinite values; remove or replace them before the call.")


def _pure_categorical_columns(design_info, terms, intercept):
    """Candidate columns of terms made only of categorical factors: 0/1 dummies."""
    out = []
    offset = 1 if intercept else 0
    for term, cols in design_info.term_slices.items():
        if term.factors and all(design_info.factor_infos[f].type == "categorical" for f in term.factors):
            out += [terms[j - offset] for j in range(cols.start, cols.stop) if j - offset >= 0]
    return out


def _categorical_inferred(design_info, frame):
    inferred = []
    for factor, info in design_info.factor_infos.items():
        if info.type != "categorical":
            continue
        code = getattr(factor, "code", "")
        if "levels" in code:
            continue
        names = [n for n in _names_in(code) if n in frame.columns]
        declared = all(isinstance(frame[n].dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(frame[n])
                       for n in names) and names
        if not declared:
            inferred.append(_clean_term_name(code))
    return inferred
