"""Formula interface on patsy, with R's ``.``: a design planned from the schema alone.

``y ~ .`` means every column except those on the left-hand side; ``. - x3`` removes a
term; ``(.)**2`` expands to all main effects and pairwise interactions.  R's spellings
(dotted names, reserved words as names, backticks, ``poly(x, d)``) are rewritten into
patsy's first (:mod:`dpstats.r_spellings`).

Two stages, so that no data value can decide for free whether a call fails
--------------------------------------------------------------------------
1. :func:`plan_design` reads only the public schema: column names, dtypes, declared
   categories and the input row count.  It parses the formula, refuses what may not run,
   and fixes the candidate terms, their order and the intercept by evaluating the
   formula on a *synthetic* frame built from the dtypes (the values of the data are never
   read).  Every error here is free: ``dp_select`` calls it before charging anything.
2. :func:`evaluate_rows` (per pandas frame or Dask partition) and :func:`materialise`
   evaluate the planned design on the data, after the charge.  Every data-content problem
   is handled by a total rule (below), so evaluation never fails on the data's values:
   after the charge a call releases (or times out), whatever the data hold.

What is refused, and why
------------------------
* Any function of a whole column (``x.mean()``, ``np.max(x)``, ``np.std(x)``, ranks, and
  patsy's stateful transforms ``center``, ``standardize``, ``scale``, spline bases): it
  would put every record into every row.  Only row-wise operations with public constants
  run (an allow-list, :mod:`dpstats.row_functions`).
* Categorical levels inferred from the data: which levels occur is data, and under
  add/remove neighbours one record can add or remove a term.  Declare them (a pandas
  Categorical, a bool, or ``C(x, levels=[...])``), or opt in by name with
  ``infer_levels=[...]``, in which case the ledger says the result is not differentially
  private.
* Datetime columns: as dummies their term names would release raw values; convert them to
  numbers with a public origin.

Data values: the total rules
----------------------------
* A row is *incomplete* when a column the formula uses is missing, when a value lies
  outside the declared levels of a categorical, or when a term or the response is not
  finite after evaluation (``np.log`` of a non-positive value, an infinite input).
  A numeric binary response (hinge loss) that is not 0 or 1 makes its row incomplete too.
  ``na_action="omit"`` (the default) drops incomplete rows (R's ``na.omit``; every
  n-dependent quantity then comes from the input row count, and blocks split the input
  rows, :mod:`dpstats.mechanisms.partition`); ``na_action={column: constant}`` imputes public constants first and then
  drops the rows still incomplete.  ``na_action="raise"`` is refused before the charge:
  whether a data set has an incomplete row is a fact about its values, and an error
  raised on it would release that fact with infinite epsilon, charged or not.
* Zero complete rows is a data set like any other: every method samples from what the
  empty design gives (for most, uniformly).
* A term without variation is kept: it simply carries no signal.

The intercept, when the formula has one, is never a candidate term: it is forced into
every support.
"""
from __future__ import annotations

import ast
import contextlib
import io
import keyword
import re
import sys
import threading
import tokenize
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy

from .backends import IN_MEMORY
from .errors import (DataError, FormulaError, FormulaNote, InvalidArgumentError, InvalidTypeError,
                     PrivacyLeakWarning, StatefulTransformError)
from .formula_fast import simple_terms
from .method_options import is_real
from .r_spellings import dotted_names, refuse_r_power, refuse_unbalanced, rewrite_r_spellings, spelling_hint
from .row_functions import CONTRASTS, check_row_wise, declared_levels

_STATEFUL_HELP = (
    "compute its constants from the whole column (means, scales or knots), which would "
    "reveal data outside the privacy budget. Use public constants instead, for example "
    "I((x - 50) / 10) with a centre and scale known before seeing the data, or build the "
    "basis yourself with public knots."
)

NA_ACTIONS = ("omit",)

#: Why ``na_action="raise"`` is refused (before anything is charged).
RAISE_REFUSED = (
    'na_action="raise" cannot be offered: whether some row is incomplete (a missing value, a value outside '
    "declared levels, a term that is not finite after its transformation) is a fact about the data's values, "
    "and an error raised on it would release that fact with infinite epsilon, even after the budget is "
    "charged. Use na_action=\"omit\" (the default: incomplete rows are dropped, R's na.omit) or "
    "na_action={column: public constant} (impute, then drop the rows still incomplete); the curator report "
    "says how many rows were complete.")
#: Names a formula may use that are neither columns nor the caller's: patsy's own.
_FORMULA_NAMES = frozenset({"Q", "C", "I", "np", "numpy"}) | CONTRASTS
#: R functions users write out of habit; the message says how to write them here.
_R_FUNCTIONS = frozenset({"log", "log2", "log10", "log1p", "exp", "expm1", "sqrt"})
RESPONSE_TYPES = ("numeric", "binary")
#: A call needs at least this many input rows (the input row count is public).
MIN_ROWS = 2
#: patsy's NA handling is switched off: incomplete rows are found by our own total rules,
#: and patsy's messages would quote data values.
_NO_NA = patsy.NAAction(NA_types=[])

@dataclass
class ModelFrame:
    """The evaluated design of a call (after the charge): candidate terms, response, intercept.

    Attributes
    ----------
    X : ndarray (n, p)
        Candidate term columns (no intercept), before clipping, complete rows only.
    y : ndarray (n,) or None
    terms : list of str
    response : str or None
    intercept : bool
    n_rows_input : int
        The input row count (public under replace-one); ``n`` may be smaller after
        ``na_action="omit"`` and is then private.
    caveats : list of str
        Ledger caveats raised while planning the design.
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
    response_levels: tuple | None = None
    #: Positions (in the input rows) of the rows kept under ``na_action="omit"``, so that
    #: block labels can be tied to input rows; None when no row can be dropped.
    kept_rows: np.ndarray | None = None

    #: Rows in memory (:mod:`dpstats.backends`).
    backend = IN_MEMORY

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
        if na_action == "raise":
            raise InvalidArgumentError(RAISE_REFUSED)
        if na_action not in NA_ACTIONS:
            raise InvalidArgumentError(
                f'na_action must be "omit" or a dict of public impute constants; got {na_action!r}.'
            )
        return na_action
    if isinstance(na_action, Mapping):
        for key, value in na_action.items():
            if not isinstance(key, str):
                raise InvalidTypeError(f"na_action keys must be column names; got {key!r}.")
            if is_real(value) and not np.isfinite(value):
                raise InvalidArgumentError(f"na_action impute value for {key!r} must be finite; got {value!r}.")
        return dict(na_action)
    raise InvalidTypeError(
        'na_action must be "omit" or a dict of public impute constants; '
        f"got {type(na_action).__name__}."
    )


def _quote(name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return name
    return f"Q({name!r})"


def _expand_dot(rhs: str, columns) -> str:
    """Replace every free-standing ``.`` token of the right-hand side by all columns."""
    # Tokens are streamed, not listed: on Python 3.12.0-3.12.3 every token carries its own
    # copy of the line (CPython gh-119118), so a list costs tokens x line length.
    spans = []
    prev = None  # (type, string) of the previous significant token
    try:
        for tok in tokenize.generate_tokens(io.StringIO(rhs).readline):
            if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                continue
            if tok.type == tokenize.OP and tok.string == ".":
                # A '.' not preceded by something it could belong to stands alone.
                attached = prev is not None and (prev[0] in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)
                                                 or prev[1] in (")", "]"))
                if not attached:
                    spans.append(tok.start[1])
            prev = (tok.type, tok.string)
    except (tokenize.TokenError, SyntaxError) as exc:
        raise FormulaError(f"formula right-hand side {rhs!r} does not parse: {exc}") from None
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
        raise FormulaError(f"cannot parse {code!r} in the formula: {exc.msg} (a column name that is not a Python "
                           "name is written Q('name') or in backticks)") from None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value)
    return names


def _clean_term_name(name: str) -> str:
    """A term's name with each Q("...") replaced by the column name it quotes (escapes undone: Q("a\\nb") is the
    column 'a<newline>b', so that ``data[fit.support]`` finds it)."""
    def unquote(m):
        try:
            value = ast.literal_eval(m.group(1) + m.group(2) + m.group(1))
        except (ValueError, SyntaxError):
            return m.group(2)
        return value if isinstance(value, str) else m.group(2)
    return re.sub(r"""Q\((['"])(.*?)\1\)""", unquote, name)


def _factor_codes(terms):
    for term in terms:
        for factor in term.factors:
            yield factor


# ------------------------------------------------------------------------ schema
COLUMN_KINDS = ("numeric", "bool", "categorical", "text", "datetime", "complex")


def column_kind(dtype) -> str:
    """How a column's dtype is used by a formula (decided from the dtype alone)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return "categorical"
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_complex_dtype(dtype):
        return "complex"  # numeric to pandas, but a design matrix would drop the imaginary part
    if pd.api.types.is_numeric_dtype(dtype):
        return "numeric"
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype) \
            or isinstance(dtype, pd.PeriodDtype):
        return "datetime"
    return "text"


def _validate_data(data, min_rows=None):
    """The data as a DataFrame with string column names; schema checks only.  ``min_rows``
    (default :data:`MIN_ROWS`): fewer input rows are refused, which is free only where the row
    count is public (replace-one neighbours); methods under add/remove neighbours pass 0."""
    min_rows = MIN_ROWS if min_rows is None else int(min_rows)
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
    check_columns(frame.columns)
    if frame.shape[0] < min_rows:
        rows = frame.shape[0]
        raise DataError(f"data has {rows} {'row' if rows == 1 else 'rows'}; dp_select needs at least {min_rows} "
                        "(the input row count is public).")
    non_str = [c for c in frame.columns.tolist() if not isinstance(c, str)]
    if non_str:
        frame = frame.rename(columns={c: str(c) for c in non_str})
    return frame


def check_columns(columns):
    """Schema checks on column names (public)."""
    if len(columns) == 0:
        raise DataError("data has no columns.")
    if columns.has_duplicates:
        dups = sorted({str(c) for c in columns[columns.duplicated()]})
        raise DataError(f"data has duplicated column names {dups}; rename them so every column is unique.")
    # tolist() once: iterating a pandas Index of strings element by element costs about
    # 7 ms per 10^4 columns, a tenth of a wide dp_select call.
    if any(str(c) == "Intercept" for c in columns.tolist()):
        raise DataError("data has a column named 'Intercept', which clashes with the formula's intercept; "
                        "rename it.")


@contextlib.contextmanager
def _recursion_limit(limit):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, int(limit)))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


#: Most binary operators (+ - * / :) a formula may have on patsy's path, after '.' is expanded.
MAX_PATSY_OPERATORS = 5000
_OPERATOR = re.compile(r"[-+*/:]")
#: Stack of the thread that runs patsy's parser (virtual memory, touched only as used).
_PARSE_STACK_BYTES = 16 << 20
_PARSE_LOCK = threading.Lock()  # sys.setrecursionlimit is process-wide: one parse at a time
_STACK_LOCK = threading.Lock()  # so is threading.stack_size


def _model_desc(expanded, formula):
    """``patsy.ModelDesc.from_formula(expanded)``, bounded, on a thread with a known stack.

    patsy parses and evaluates ``a + b + ...`` recursively, one level per operator, in time
    and memory that grow with the square of their number.  Measured (issue 15, item 6) with
    ``y ~ np.abs(x0) + ... `` on Python 3.11.7, 3.12.1 and 3.13.0:

    * the recursion limit is not what crashes: Python frames live on the heap since 3.11, and
      a 20000-operator parse under a limit of 81000 ran on all three in the main thread (a
      3000-operator parse even ran in a 64 KiB thread on 3.11 and 3.12);
    * on 3.13.0 freeing patsy's parse tree recurses in C (subtype_dealloc through the
      instance dicts and lists, about one frame chain per operator, up to the C recursion
      count): in a thread with a 256 KiB stack 2000 operators crashed with SIGSEGV (1000
      ran), with 512 KiB (macOS' default for threads) 3000 crashed, with 1 MiB 5000 ran.
      So the parse runs, and its tree is freed, on a thread with a 16 MiB stack, whatever
      stack the caller's thread has;
    * cost: build_model_frame took 20 / 32 / 23 s at 5000 terms (3.11 / 3.12 / 3.13), and
      12 min (3.11) and 8 min (3.13) at 20000; on 3.12.0 to 3.12.3 tokenize copies the
      formula's line into every token (CPython gh-119118, fixed in 3.12.4) and patsy keeps
      them: the parse alone took 12.7 GB at 20000 on 3.12.1, and build_model_frame was
      killed at 24 GB.  Hence the cap, checked on the formula text before any charge.
    """
    depth = len(_OPERATOR.findall(expanded))
    if depth > MAX_PATSY_OPERATORS:
        raise FormulaError(
            f"formula too long for patsy's parser: after '.' is expanded it has {depth} operators (+, -, *, /, :), "
            f"and formulas that go through patsy may have at most {MAX_PATSY_OPERATORS}. Use plain column names "
            "(y ~ . or y ~ . - id over numeric columns skip patsy: convert bool columns to float) or fewer terms.")
    out = {}

    def parse():
        with _PARSE_LOCK, _recursion_limit(4 * depth + 1000):
            try:
                out["desc"] = patsy.ModelDesc.from_formula(expanded)
            except patsy.PatsyError as exc:
                out["error"] = f"formula {formula!r} does not parse: {exc}"
            except RecursionError:
                out["error"] = f"formula {formula!r} is nested too deeply for patsy's parser."
            except Exception as exc:  # noqa: BLE001 - re-raised on the caller's thread
                out["exception"] = exc.with_traceback(None)

    worker = None
    try:
        with _STACK_LOCK:
            old = threading.stack_size(_PARSE_STACK_BYTES)
            try:
                worker = threading.Thread(target=parse, name="dpstats-formula-parse", daemon=True)
                worker.start()
            finally:
                threading.stack_size(old)
    except (ValueError, RuntimeError):  # thread stacks cannot be set or started here
        worker = None
    if worker is None:
        parse()
    else:
        worker.join()
    if "error" in out:
        raise FormulaError(out["error"])
    if "exception" in out:
        raise out["exception"]
    return out["desc"]


@dataclass
class ParsedFormula:
    """A formula checked against column names only (no data values are read)."""

    lhs: str
    expanded: str
    desc: object  # patsy.ModelDesc
    used_columns: list
    response_columns: list


def _split_formula(formula, columns, require_response):
    """(lhs, rhs) after R's spellings are rewritten; refuses what is not one formula."""
    if not isinstance(formula, str):
        raise InvalidTypeError(f'formula must be a string such as "y ~ ."; got {type(formula).__name__}.')
    if "~" not in formula:
        raise FormulaError(f'formula {formula!r} has no "~"; write it as "response ~ terms", e.g. "y ~ .".')
    refuse_unbalanced(formula)  # an unclosed '(' or quote, in plain words (not the tokenizer's)
    refuse_r_power(formula)  # R's (a + b)^2 is patsy's (a + b)**2
    # R's spellings (dotted names, reserved words, backticks, poly) in patsy's words.
    lhs, rhs = rewrite_r_spellings(formula, columns).split("~", 1)
    lhs = lhs.strip()
    if "~" in rhs:
        raise FormulaError(f"formula {formula!r} has more than one '~'.")
    if require_response and not lhs:
        raise FormulaError(f'formula {formula!r} has no response; write it as "y ~ ...".')
    if re.search(r"\.\s*\^", rhs):
        raise FormulaError("R's '.^2' is written '(.)**2' in a Python formula.")
    return lhs, rhs


def _check_factor(code, names, factor, columns, colset, eval_env, unknown_hint):
    """Refuse a factor that is stateful, names something unknown, or is not row-wise."""
    try:
        passes = factor.memorize_passes_needed({}, eval_env)
    except Exception:  # noqa: BLE001 - anything odd is refused below
        passes = 0
    if passes:
        raise StatefulTransformError(f"the formula term {code!r} uses a stateful transform: such transforms {_STATEFUL_HELP}")
    unknown = [n for n in names if n not in colset and n not in _FORMULA_NAMES
               and _lookup(eval_env, n) is _MISSING]
    r_style = [n for n in unknown if n in _R_FUNCTIONS]
    if r_style:
        raise FormulaError(f"the formula term {code!r} uses R's {r_style[0]}(); in a Python formula write "
                           f"np.{r_style[0]}(...).")
    quoted = _q_without_string(code)
    if quoted:
        raise FormulaError(f"the formula term {code!r} gives Q() the number {quoted}: Q() takes one column name "
                           f"as a quoted string, e.g. Q('{quoted}').")
    called = _calls_of(code, set(unknown))
    if called:
        raise FormulaError(f"the formula term {code!r} calls {called[0]}(), which is not a function a formula may "
                           f"use (and {called[0].split('.')[0]!r} is not a column of data). {FORMULA_FUNCTIONS_HELP}")
    if unknown:
        raise _not_columns(unknown, columns, unknown_hint)
    check_row_wise(code, colset, lambda name: _lookup(eval_env, name))


#: What a formula may call, for the message on an unknown function (the allow-list is
#: :mod:`dpstats.row_functions`; ``poly`` is R's spelling, :mod:`dpstats.r_spellings`).
FORMULA_FUNCTIONS_HELP = (
    "A formula may call the element-wise numpy functions as np.<name> (np.log, np.log1p, np.exp, np.sqrt, np.abs, "
    "np.clip, np.where, ...), abs(), I(...) for arithmetic on columns (I(x**2), I((x - 50) / 10)), "
    "Q('name') for a column whose name is not a Python name, C(x, levels=[...]) for a categorical with declared "
    "levels, and poly(x, degree) for raw powers; help(dpstats.row_functions) lists them all. For "
    "a row-wise function of your own (each row's value from that row alone), compute the column before the call, "
    "data['fx'] = f(data['x']), and use its name.")


def _q_without_string(code):
    """The argument of the first ``Q(...)`` in ``code`` that is a literal but not a string (``Q(0)``), as written."""
    try:
        tree = ast.parse(code.strip() or "0", mode="eval")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q"
                and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Constant)
                and not isinstance(node.args[0].value, str)):
            return ast.unparse(node.args[0])
    return None


def _calls_of(code, unknown):
    """The functions ``code`` calls whose name (or the head of a dotted name) is in ``unknown``, as written."""
    try:
        tree = ast.parse(code.strip() or "0", mode="eval")
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        parts, func = [], node.func
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if isinstance(func, ast.Name) and func.id in unknown:
            name = ".".join([func.id] + parts[::-1])
            if name not in out:
                out.append(name)
    return out


def _not_columns(unknown, columns, unknown_hint):
    return FormulaError(
        f"formula refers to {sorted(set(unknown))}, which are not columns of data "
        f"(columns: {columns[:20]}{' ...' if len(columns) > 20 else ''}){unknown_hint}."
    )


def _refuse_unknown_dotted(lhs, rhs, columns, colset, eval_env, unknown_hint):
    """R's dotted names that are not columns (Miss.Col), reported as written: Python would read
    Miss.Col as the attribute Col of a name Miss (and x.1 or Acid.Conc. not at all)."""
    unknown = [run for run in dotted_names(f"{lhs} ~ {rhs}") if run not in colset
               and (head := run.split(".", 1)[0]) not in _FORMULA_NAMES
               and (not head or _lookup(eval_env, head) is _MISSING)]
    if unknown:
        raise _not_columns(unknown, columns, unknown_hint)


def _without_response_terms(desc, formula):
    """R's rule: a right-hand term that is the response itself (``y ~ y + x``) is dropped, with a
    :class:`FormulaNote` ("the response appeared on the right-hand side and was dropped").  Kept,
    it would be a candidate that explains the response perfectly.  From the formula alone."""
    lhs = {frozenset(getattr(f, "code", str(f)) for f in term.factors) for term in desc.lhs_termlist}
    kept = [term for term in desc.rhs_termlist
            if not (term.factors and frozenset(getattr(f, "code", str(f)) for f in term.factors) in lhs)]
    if len(kept) == len(desc.rhs_termlist):
        return desc
    dropped = [term.name() for term in desc.rhs_termlist if term not in kept]
    warnings.warn(f"formula {formula!r}: the response appeared on the right-hand side ({', '.join(dropped)}) and "
                  "was dropped, as R does; write the terms without it.", FormulaNote, stacklevel=5)
    return patsy.ModelDesc(desc.lhs_termlist, kept)


def _refuse_unknown_removed(rhs, columns, colset, eval_env, unknown_hint):
    """A removed term naming no column (``y ~ . - x11`` for x1) is refused, as R's model frame refuses it:
    patsy removes what is absent silently, so the misspelt term would stay in the model unnoticed."""
    if "-" not in rhs:
        return
    placeholder = "_dpstats_dot_"
    try:
        tree = patsy.parse_formula.parse_formula("~ " + _expand_dot(rhs, [placeholder]))
    except (patsy.PatsyError, FormulaError, RecursionError):
        return  # the model's own parse reports what is wrong
    removed, stack = [], [tree]
    while stack:
        node = stack.pop()
        if node.type == "-" and len(node.args) == 2:
            below = [node.args[1]]
            while below:
                leaf = below.pop()
                if leaf.type == "PYTHON_EXPR":
                    removed.append(leaf.token.extra)
                below.extend(leaf.args)
        stack.extend(node.args)
    unknown = sorted({n for code in removed for n in _names_in(code)
                      if n not in colset and n != placeholder and n not in _FORMULA_NAMES
                      and _lookup(eval_env, n) is _MISSING})
    if unknown:
        raise _not_columns(unknown, columns, unknown_hint)


def parse_formula(formula, columns, *, require_response=True, eval_env=None, unknown_hint="") -> ParsedFormula:
    """Split, expand ``.``, parse, and refuse everything that is not row-wise.

    Works from the column names alone, so the pandas and the Dask paths share it and
    nothing here depends on the data's values.
    """
    lhs, rhs = _split_formula(formula, columns, require_response)
    if eval_env is None:
        eval_env = patsy.EvalEnvironment([{"np": np, "numpy": np}])
    colset = set(columns)
    _refuse_unknown_dotted(lhs, rhs, columns, colset, eval_env, unknown_hint)
    _refuse_unknown_removed(rhs, columns, colset, eval_env, unknown_hint)
    try:
        lhs_names = _names_in(lhs) if lhs else set()
        expanded = f"{lhs} ~ {_expand_dot(rhs, [c for c in columns if c not in lhs_names]).strip()}"
        # patsy parses "a + b + ..." recursively: bounded, with the recursion limit raised for
        # the parse only (wide formulas, e.g. 2308 genes), on a thread with a known stack.
        desc = _model_desc(expanded, formula)
    except FormulaError as exc:
        hint = spelling_hint(formula, columns)  # a column named like Python's 'in', 'not', ...
        if not hint or type(exc) is not FormulaError:
            raise
        raise FormulaError(str(exc) + hint) from None
    desc = _without_response_terms(desc, formula)
    used = set()
    for factor in _factor_codes(desc.lhs_termlist + desc.rhs_termlist):
        code = getattr(factor, "code", str(factor))
        names = _names_in(code)
        _check_factor(code, names, factor, columns, colset, eval_env, unknown_hint)
        used |= {n for n in names if n in colset}
    response_columns = [c for c in columns if c in lhs_names]
    if lhs and not response_columns:
        # e.g. "0 ~ ." (patsy reads a left-hand 0 as "no intercept", not as a column): without this
        # the call would have no response and fail after the charge
        raise FormulaError(f"formula {formula!r} has no response column: the left of '~' ({lhs!r}) names no column "
                           f"of data (columns: {columns[:20]}{' ...' if len(columns) > 20 else ''}). Write the "
                           "response's column name on the left, e.g. \"y ~ .\", quoted as Q('my y') when it is not a "
                           "Python name.")
    return ParsedFormula(lhs=lhs, expanded=expanded, desc=desc, used_columns=sorted(used),
                         response_columns=response_columns)


@dataclass
class DesignPlan:
    """Everything about a call's design that follows from the formula and the public schema.

    Built by :func:`plan_design` before anything is charged; evaluated on the data by
    :func:`evaluate_rows` after.  Picklable (Dask workers receive it).
    """

    formula: str
    expanded_formula: str
    lhs: str
    terms: list
    response: str | None
    intercept: bool
    used: tuple
    na_action: object
    n_rows_input: int
    response_type: str = "numeric"
    response_levels: tuple | None = None
    categorical_terms: list = field(default_factory=list)
    caveats: list = field(default_factory=list)
    #: column -> declared levels, for columns cast to a Categorical before evaluation
    #: (``C(x, levels=[...])``, opted-in inferred levels): a value outside them is then
    #: missing, never an error that quotes it.
    level_casts: dict = field(default_factory=dict)
    #: patsy design infos (response, terms), built on the synthetic frame; patsy's objects
    #: cannot be pickled, so a copy sent to a Dask worker rebuilds them (:meth:`infos`).
    y_info: object = None
    x_info: object = None
    #: When every term is a numeric column used as is: the columns, read without patsy.
    plain_columns: tuple | None = None
    #: dtypes of the used columns: with ``level_casts``, all a worker needs to rebuild the
    #: design infos from a synthetic frame.
    used_dtypes: object = None

    #: A design planned on a pandas frame evaluates rows in memory (:mod:`dpstats.backends`);
    #: one planned on a Dask frame is wrapped by :class:`dpstats.dask_engine.DaskModelFrame`.
    backend = IN_MEMORY
    #: Every column name of the data (public schema): a codebook of ranges may name columns
    #: the formula does not use.  Not pickled (workers do not need it).
    data_columns: tuple | None = None

    def infos(self):
        """(y_info or None, x_info), rebuilt after unpickling (np-only namespace, as on Dask)."""
        if self.x_info is None:
            key = (self.expanded_formula, self.response_type, tuple(map(str, self.used_dtypes)),
                   tuple(self.used_dtypes.index), repr(sorted(self.level_casts.items(), key=str)))
            hit = _INFO_CACHE.get(key)
            if hit is None:
                env = patsy.EvalEnvironment([{"np": np, "numpy": np}])
                desc = _model_desc(self.expanded_formula, self.formula)
                if self.response_type == "binary":
                    desc = patsy.ModelDesc([], desc.rhs_termlist)
                hit = _design_infos(desc, synthetic_frame(self.used_dtypes, self.level_casts), env)
                if len(_INFO_CACHE) > 64:
                    _INFO_CACHE.clear()
                _INFO_CACHE[key] = hit
            self.y_info, self.x_info = hit
        return self.y_info, self.x_info

    def __getstate__(self):
        state = dict(self.__dict__)
        state["y_info"] = state["x_info"] = state["data_columns"] = None
        return state

    @property
    def p(self) -> int:
        return len(self.terms)

    @property
    def n(self) -> int:
        """The input row count: the only row count known (and public) before the charge."""
        return self.n_rows_input


def synthetic_frame(dtypes: pd.Series, levels: dict, rows: int = 4) -> pd.DataFrame:
    """Rows made from the dtypes and declared levels alone, never from data.

    Numeric columns get positive values (so row-wise transforms such as ``np.log`` are
    defined); categorical columns cycle through their levels.
    """
    out = {}
    for name, dtype in dtypes.items():
        if name in levels:
            lv = list(levels[name])
            values = [lv[i % len(lv)] for i in range(rows)] if lv else [None] * rows
            out[name] = pd.Categorical(values, categories=lv) if lv else pd.Series(values, dtype=object)
            continue
        kind = column_kind(dtype)
        if kind == "numeric":
            out[name] = np.arange(1, rows + 1, dtype=np.float64)
        elif kind == "bool":
            out[name] = np.arange(rows) % 2 == 1
        elif kind == "categorical":
            cats = list(dtype.categories)
            out[name] = pd.Categorical([cats[i % len(cats)] for i in range(rows)] if cats else [None] * rows,
                                       categories=cats)
        else:
            out[name] = pd.Series(["a"] * rows, dtype=object)
    return pd.DataFrame(out)


def plan_design(formula, dtypes, n_rows_input, *, na_action="omit", require_response=True, eval_env=None,
                response_type="numeric", infer_levels=(), levels_of=None, unknown_hint="") -> DesignPlan:
    """Plan the design from the formula and the public schema; every error here is free.

    Parameters
    ----------
    formula : str
    dtypes : pandas.Series
        Column name -> dtype (the schema; categories of Categorical dtypes are declared).
    n_rows_input : int
        The input row count (public under replace-one neighbours).
    na_action : "omit" (default) or dict
    infer_levels : sequence of str
        Columns whose levels may be read from the data (opt-in; the result is then not
        differentially private and the caveats say so).
    levels_of : callable(column) -> list, optional
        Reads the levels of an opted-in column from the data.
    """
    na_action = check_na_action(na_action)
    if response_type not in RESPONSE_TYPES:
        raise InvalidArgumentError(f"response_type must be 'numeric' or 'binary'; got {response_type!r}.")
    columns = [str(c) for c in dtypes.index.tolist()]
    if response_type == "numeric":
        fast = _simple_plan(formula, columns, dtypes, n_rows_input, na_action, infer_levels, require_response)
        if fast is not None:
            return fast
    if eval_env is None:
        eval_env = patsy.EvalEnvironment.capture(0)
    eval_env = eval_env.with_outer_namespace({"np": np, "numpy": np})
    parsed = parse_formula(formula, columns, require_response=require_response, eval_env=eval_env,
                           unknown_hint=unknown_hint)
    infer_levels = _check_infer_levels(infer_levels, columns)
    used = parsed.used_columns
    kinds = {c: column_kind(dtypes[c]) for c in used}
    _check_na_dict(na_action, used, dtypes)
    _refuse_datetimes(used, kinds, dtypes)
    desc = parsed.desc
    response = None
    response_levels = None
    level_casts, caveats = _level_casts(desc, kinds, infer_levels, levels_of)

    if response_type == "binary":
        response, response_levels = _plan_binary_response(parsed, dtypes, kinds, level_casts)
        desc = patsy.ModelDesc([], desc.rhs_termlist)  # the response is coded by us, not by patsy
    else:
        _refuse_non_numeric_response(parsed, kinds, dtypes)

    used_dtypes = dtypes[used] if used else dtypes.iloc[:0]
    y_info, x_info = _schema_design_infos(formula, desc, used_dtypes, level_casts, eval_env, kinds)
    undeclared = _undeclared_categoricals(x_info, kinds, level_casts)
    if y_info is not None:
        undeclared += _undeclared_categoricals(y_info, kinds, level_casts)
        response = _numeric_response_name(parsed, y_info, kinds, dtypes)
    _refuse_undeclared_levels(undeclared, kinds, dtypes)
    intercept = "Intercept" in x_info.column_names
    names = [c for c in x_info.column_names if c != "Intercept"]
    terms = _distinct_terms(formula, names)
    plain = _all_numeric(names, kinds) and (y_info is None or _all_numeric(y_info.column_names[:1], kinds))
    return DesignPlan(formula=formula, expanded_formula=parsed.expanded, lhs=parsed.lhs, terms=terms,
                      response=response, intercept=intercept, used=tuple(used), na_action=na_action,
                      n_rows_input=int(n_rows_input), response_type=response_type, response_levels=response_levels,
                      categorical_terms=_pure_categorical_columns(x_info, terms, intercept), caveats=caveats,
                      level_casts=level_casts, y_info=y_info, x_info=x_info,
                      plain_columns=tuple(names) if plain else None, used_dtypes=used_dtypes,
                      data_columns=tuple(columns))


def _refuse_non_numeric_response(parsed, kinds, dtypes):
    """A one-column response must be numeric or bool (a binary response is planned separately)."""
    if len(parsed.response_columns) != 1 or kinds.get(parsed.response_columns[0]) in ("numeric", "bool"):
        return
    c = parsed.response_columns[0]
    fix = ""
    if kinds.get(c) == "text":
        fix = (f" If it holds numbers with a few text entries, convert it before the call with "
               f"data[{c!r}] = pd.to_numeric(data[{c!r}], errors='coerce') (entries that are not numbers "
               "become missing, and na_action='omit' drops their rows)." + _two_level_fix(
                   f"data[{c!r}] = data[{c!r}].map({{'<one level>': 0, '<the other>': 1}})",
                   f" (declare its two levels: data[{c!r}] = pd.Categorical(data[{c!r}], categories=[...]))",
                   lead=" If it is a label with two levels"))
    elif kinds.get(c) == "categorical":
        levels = list(dtypes[c].categories)  # declared: part of the public schema
        if len(levels) == 2:
            fix = _two_level_fix(f"data[{c!r}] = data[{c!r}].map({{{levels[0]!r}: 0, {levels[1]!r}: 1}})"
                                 ".astype(float)", "", lead=" It has two declared levels")
    raise DataError(f"the response {c!r} is not numeric (dtype {dtypes[c]}); dp_select needs a numeric "
                    f"response for this method.{fix}")


def _two_level_fix(convert, declare, lead, column=True):
    """What to do with a two-level response under the squared loss: code it 0/1 (a linear probability model),
    or classify with the hinge loss (the methods that take it: :func:`dpstats.method_choice.methods_with_loss`).
    ``column``: the response is a column (else an expression, which the hinge loss needs as a column)."""
    from .method_choice import methods_with_loss, one_of

    convert = f"convert it to 0/1 before the call, e.g. {convert}" if column else f"make it a number, e.g. {convert}"
    classify = "" if column else "add it to the data as a bool column and "
    return (f"{lead}: for a linear probability model {convert}; for classification {classify}use loss='hinge' "
            f"with method={one_of(methods_with_loss('hinge'))}{declare}.")


def _numeric_response_name(parsed, y_info, kinds, dtypes):
    """The response's name; refused when its design has more than one column (a categorical response)."""
    width = len(y_info.column_names)
    if len([t for t in parsed.desc.lhs_termlist if t.factors]) > 1:
        raise FormulaError(f"the left of '~' ({parsed.lhs!r}) holds several terms; the response is one column or one "
                           f"expression: write I({parsed.lhs}) for their sum.")
    if width != 1:
        fix = ""
        c = parsed.response_columns[0] if len(parsed.response_columns) == 1 else None
        if width == 2 and c is not None and _clean_term_name(parsed.lhs) == c and kinds.get(c) == "bool":
            # a nullable boolean's missing values become NaN (omitted) with float; int would fail on them
            to = "float" if pd.api.types.is_extension_array_dtype(dtypes[c]) else "int"
            fix = _two_level_fix(f"data[{c!r}] = data[{c!r}].astype({to})", "", lead=" It is a bool")
        elif width == 2:
            fix = _two_level_fix("a comparison times 1, I(1 * (x > 0))", "", lead=" It has two levels",
                                 column=False)
        raise DataError(f"the response {parsed.lhs!r} is categorical (it expands to {width} columns); dp_select "
                        f"needs a numeric response for this method.{fix}")
    return _clean_term_name(parsed.lhs)


def _all_numeric(names, kinds) -> bool:
    return all(c in kinds and kinds[c] == "numeric" for c in names)


def _simple_plan(formula, columns, dtypes, n_rows_input, na_action, infer_levels, require_response):
    """The common wide case (y ~ ., y ~ . - id: plain numeric columns) in O(p), with exactly
    patsy's terms and order; None sends the formula through patsy."""
    fast = simple_terms(formula, columns, dtypes)
    if fast is None or not fast.terms or (fast.response is None and require_response):
        return None
    _check_infer_levels(infer_levels, columns)
    _check_na_dict(na_action, fast.used_columns, dtypes)
    return DesignPlan(formula=formula, expanded_formula=formula, lhs=fast.response or "", terms=fast.terms,
                      response=fast.response, intercept=fast.intercept, used=tuple(fast.used_columns),
                      na_action=na_action, n_rows_input=int(n_rows_input), plain_columns=tuple(fast.terms),
                      used_dtypes=dtypes[fast.used_columns], data_columns=tuple(columns))


def _refuse_datetimes(used, kinds, dtypes):
    """Datetimes and complex numbers: no design column without a public choice by the analyst."""
    for c in used:
        if kinds[c] == "datetime":
            raise DataError(f"column {c!r} has dtype {dtypes[c]}; convert it to a number with a public origin "
                            f"(for example days since 2000-01-01) before the call.")
        if kinds[c] == "complex":
            raise DataError(f"column {c!r} has the complex dtype {dtypes[c]}; a design column is real: pass its real "
                            f"and imaginary parts as two columns (np.real, np.imag) before the call.")


def _level_casts(desc, kinds, infer_levels, levels_of):
    """(column -> levels to cast to, caveats): levels declared in the formula or opted in."""
    level_casts = {}
    caveats = []
    # Levels declared in the formula (C(x, levels=[...])): such a column is cast to a
    # Categorical before evaluation, unless it is also used otherwise (then patsy checks
    # the levels, and a value outside them fails after the charge without being quoted).
    other_uses = set()
    for factor in _factor_codes(desc.lhs_termlist + desc.rhs_termlist):
        code = getattr(factor, "code", "")
        found = declared_levels(code)
        if found is not None and found[0] in kinds and kinds[found[0]] in ("text", "numeric"):
            level_casts.setdefault(found[0], found[1])
        else:
            other_uses |= _names_in(code)
    level_casts = {c: lv for c, lv in level_casts.items() if c not in other_uses}
    # Levels opted in by name, read from the data (not DP).
    inferred = [c for c in infer_levels if c in kinds and kinds[c] in ("text", "numeric") and c not in level_casts]
    for c in inferred:
        level_casts[c] = list(levels_of(c)) if levels_of is not None else []
    if inferred:
        text = (f"NOT differentially private: the levels of {inferred} were read from the data outside the "
                "budget (infer_levels)")
        warnings.warn(text, PrivacyLeakWarning, stacklevel=5)  # the caller of plan_design's caller
        caveats.append(text)
    return level_casts, caveats


def _schema_design_infos(formula, desc, used_dtypes, level_casts, eval_env, kinds):
    """patsy's design infos built on a synthetic frame of the schema (no data values)."""
    try:
        return _design_infos(desc, synthetic_frame(used_dtypes, level_casts), eval_env)
    except patsy.PatsyError as exc:
        # C(x, Treatment(reference=8)) on a column without declared levels fails on the synthetic values (8 is
        # not among them): what is missing is the declaration, so the refusal says that
        undeclared = []
        for factor in _factor_codes(desc.lhs_termlist + desc.rhs_termlist):
            code = getattr(factor, "code", "")
            names = [n for n in _names_in(code) if n in kinds]
            if code.startswith("C(") and any(kinds[n] not in ("categorical", "bool") and n not in level_casts
                                             for n in names):
                undeclared.append((code, names))
        _refuse_undeclared_levels(undeclared, kinds, used_dtypes)
        raise FormulaError(f"formula {formula!r} cannot be evaluated on the columns of data: "
                           f"{str(exc).splitlines()[0]}") from None
    except Exception as exc:  # noqa: BLE001 - a row-wise expression that fails on any values
        raise FormulaError(f"formula {formula!r} cannot be evaluated on the columns of data "
                           f"({type(exc).__name__}); check the types of the columns it uses.") from None


def _refuse_undeclared_levels(undeclared, kinds, dtypes):
    """Refuse categorical terms whose levels would be read from the data.  ``undeclared``: (term,
    columns) pairs.  A text (object or string dtype) column may be a numeric column with a few
    text entries: the message says so first, from the dtype alone (no value is read or quoted)."""
    if not undeclared:
        return
    terms = sorted({term for term, _ in undeclared})
    columns = sorted({c for _, names in undeclared for c in names if c in kinds})  # infer_levels takes columns
    # Text columns used as they are (not in C(...), which asks for a categorical).
    text = [c for c in dict.fromkeys(n for term, names in undeclared if not term.startswith("C(") for n in names)
            if kinds.get(c) == "text"]
    first = ""
    if text:
        c = text[0]
        if len(text) == 1:
            which = (f"column {c!r} has dtype {dtypes[c]} (text), so it is not numeric: a term on it would be "
                     "categorical")
        else:
            listed = ", ".join(f"{n!r} (dtype {dtypes[n]})" for n in text)
            which = f"columns {listed} are text, not numeric: terms on them would be categorical"
        first = (
            f"{which}. If {'it' if len(text) == 1 else 'one'} holds numbers with a few text entries, convert it "
            f"before the call with data[{c!r}] = pd.to_numeric(data[{c!r}], errors='coerce') (entries that are "
            "not numbers become missing, and na_action='omit' drops their rows); if it is categorical, declare "
            "its levels. ")
    raise DataError(
        f"{first}{'T' if first else 't'}he levels of {terms} would be inferred from the data, which reveals "
        "which values occur (under add/remove neighbours one record can add or remove a term). Declare them: a pandas "
        "Categorical with fixed categories, a bool, or C(x, levels=[...]); or pass "
        f"infer_levels={columns} (their columns) to accept levels read from the data (the result is then "
        "not differentially private).")


def _distinct_terms(formula, names):
    terms = [_clean_term_name(c) for c in names]
    if not terms:
        raise FormulaError(f"formula {formula!r} has no candidate terms on its right-hand side.")
    if len(set(terms)) != len(terms):
        raise FormulaError(f"the formula produces duplicated term names: {terms}.")
    return terms


_INFO_CACHE: dict = {}


def _design_infos(desc, fake, eval_env):
    """patsy's (y_info or None, x_info) for ``desc``, built on a synthetic frame."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if desc.lhs_termlist:
            y_df, x_df = patsy.dmatrices(desc, fake, eval_env=eval_env, NA_action=_NO_NA, return_type="dataframe")
            return y_df.design_info, x_df.design_info
        x_df = patsy.dmatrix(desc, fake, eval_env=eval_env, NA_action=_NO_NA, return_type="dataframe")
        return None, x_df.design_info


def _check_infer_levels(infer_levels, columns):
    if isinstance(infer_levels, str):
        infer_levels = [infer_levels]
    try:
        names = list(infer_levels)
    except TypeError:
        raise InvalidTypeError(f"infer_levels must be a list of column names; got {infer_levels!r}.") from None
    unknown = [n for n in names if n not in columns]
    if unknown:
        raise InvalidArgumentError(f"infer_levels names {unknown}, which are not columns of data.")
    return names


def _check_na_dict(na_action, used, dtypes):
    if not isinstance(na_action, dict):
        return
    unknown = [c for c in na_action if c not in dtypes.index]
    if unknown:
        raise InvalidArgumentError(f"na_action names {unknown}, which are not columns of data.")
    for c, value in na_action.items():
        dtype = dtypes[c]
        kind = column_kind(dtype)
        if kind == "categorical":
            if value not in list(dtype.categories):
                raise InvalidArgumentError(f"na_action impute value for {c!r} must be one of its declared categories "
                                           f"{list(dtype.categories)}; got {value!r}.")
        elif kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise InvalidTypeError(f"na_action impute value for the bool column {c!r} must be True or False; "
                                       f"got {value!r}.")
        elif kind == "numeric":
            if not is_real(value):
                raise InvalidTypeError(f"na_action impute value for the numeric column {c!r} must be a finite number; "
                                       f"got {value!r}.")
        elif kind == "text":
            if not isinstance(value, str):
                raise InvalidTypeError(f"na_action impute value for the text column {c!r} must be a string (one of "
                                       f"its declared levels); got {value!r}.")
        else:
            raise InvalidArgumentError(f"na_action cannot impute the {kind} column {c!r}; convert it to numbers "
                                       "with a public origin first.")


def _plan_binary_response(parsed, dtypes, kinds, level_casts):
    name = _clean_term_name(parsed.lhs)
    if len(parsed.response_columns) != 1 or name != parsed.response_columns[0]:
        raise DataError(
            f"a binary response must be a column of data; got {parsed.lhs!r}. Add the coded column to the data "
            "(for example a bool or 0/1 column) and use its name on the left of '~'."
        )
    kind = kinds[name]
    if kind == "bool":
        return name, (False, True)
    if kind == "numeric":
        return name, (0, 1)
    levels = list(dtypes[name].categories) if kind == "categorical" else level_casts.get(name)
    if levels is None:
        raise DataError(
            f"the levels of the binary response {name!r} would be inferred from the data. Declare them: a bool, a "
            f"0/1 column or a pandas Categorical with two categories; or pass infer_levels=[{name!r}] (the result "
            "is then not differentially private).")
    if len(levels) != 2:
        raise DataError(f"the response {name!r} has {len(levels)} declared levels; classification with the hinge "
                        "loss needs exactly two.")
    return name, (levels[0], levels[1])


def _undeclared_categoricals(design_info, kinds, level_casts):
    out = []
    for factor, info in design_info.factor_infos.items():
        if info.type != "categorical":
            continue
        code = getattr(factor, "code", "")
        if declared_levels(code) is not None or tuple(info.categories) == (False, True):
            continue  # declared in the formula, or a bool (patsy always codes False, True)
        names = [n for n in _names_in(code) if n in kinds]
        if not names or not all(kinds[n] in ("categorical", "bool") or n in level_casts for n in names):
            out.append((_clean_term_name(code), names))
    return out


# -------------------------------------------------------------------- evaluation
def evaluate_rows(pdf: pd.DataFrame, plan: DesignPlan, with_rows=False):
    """``(X, y)`` of the planned design on some rows (a pandas frame or a Dask partition).

    Applies the total rules of the module docstring: imputes declared constants, maps
    values outside declared levels to missing, drops incomplete rows under
    always (after imputing the declared constants of a dict ``na_action``), and treats a
    numeric binary response outside {0, 1} as incomplete.  Never raises on the values.  ``y`` is -1 / +1 for a binary response.  With
    ``with_rows=True`` also returns the positions of the kept rows.
    """
    kept = np.arange(len(pdf))
    used = list(plan.used)
    plain = plan.plain_columns is not None and not prepare_needed(pdf, plan, used)
    if not plain:
        pdf = pdf[used] if used else pdf.iloc[:, :0]
        pdf = _prepare_columns(pdf, plan)
    # A plain numeric design reads its columns straight into X, where a missing value is a
    # NaN that the finiteness check below treats as any other incomplete row (one pass over
    # X instead of pandas' isna over every column).
    incomplete = (np.zeros(len(pdf), dtype=bool) if plain or not used
                  else pdf.isna().any(axis=1).to_numpy())
    if incomplete.any():
        pdf = pdf.loc[~incomplete]
        kept = kept[~incomplete]
    X, y = _evaluate(pdf if plain else _numpy_dtypes(pdf), plan)
    bad = rows_not_finite(X)
    if y is not None:
        bad |= ~np.isfinite(y)
    if bad.any():
        X, y = X[~bad], (None if y is None else y[~bad])
        kept = kept[~bad]
    if with_rows:
        return np.ascontiguousarray(X), y, kept
    return np.ascontiguousarray(X), y


def rows_not_finite(X):
    """Rows of X holding a value that is not finite, checked a block of columns at a time (no
    n x p boolean temporary, an eighth of X)."""
    n, p = X.shape
    finite = np.ones(n, dtype=bool)
    step = max(1, FILL_BYTES // max(8 * n, 1))
    for start in range(0, p, step):
        finite &= np.isfinite(X[:, start:start + step]).all(axis=1)
    return ~finite


def prepare_needed(pdf, plan, used):
    """Whether imputation, declared levels or nullable (extension) dtypes need pandas' path."""
    na = plan.na_action if isinstance(plan.na_action, dict) else {}
    if any(c in plan.level_casts or c in na for c in used):
        return True
    # One pass over pdf.dtypes: a lookup dtypes[c] per used column costs about 30 ms per
    # 10^3 columns (pandas' Series indexing), a third of a dp_select call at p = 10^4.
    dtypes = pdf.dtypes
    kinds = dtypes.tolist()
    if not any(pd.api.types.is_extension_array_dtype(dtype) for dtype in set(kinds)):
        return False  # the common case, decided on the few distinct dtypes
    extension = {c for c, dtype in zip(dtypes.index.tolist(), kinds) if pd.api.types.is_extension_array_dtype(dtype)}
    return any(c in extension for c in used)


def _prepare_columns(pdf, plan):
    """Impute public constants and cast declared levels (values outside them become missing)."""
    na = plan.na_action if isinstance(plan.na_action, dict) else {}
    todo = [c for c in pdf.columns if c in plan.level_casts or c in na]
    if not todo:
        return pdf  # the common case: nothing to do, no copy (wide designs)
    pdf = pdf.copy()
    for c in todo:
        col = pdf[c]
        if c in plan.level_casts:
            levels = plan.level_casts[c]
            col = pd.Series(pd.Categorical(col.where(col.isin(levels)), categories=levels), index=col.index)
        if c in na:
            col = col.fillna(na[c])
        pdf[c] = col
    return pdf


def _numpy_dtypes(pdf):
    """Complete rows of pandas' nullable columns as numpy dtypes (patsy reads only those)."""
    # pdf.dtypes once: a per-column lookup costs seconds on 10^5 columns.
    todo = [c for c, dtype in pdf.dtypes.items() if pd.api.types.is_extension_array_dtype(dtype)
            and column_kind(dtype) in ("numeric", "bool")]
    if not todo:
        return pdf
    pdf = pdf.copy()
    for c in todo:
        dtype = bool if column_kind(pdf[c].dtype) == "bool" else np.float64
        pdf[c] = pdf[c].to_numpy(dtype=dtype)
    return pdf


#: Bytes of columns copied at a time into the design (keeps the peak memory near X's size).
FILL_BYTES = 1 << 25


def _plain_matrix(pdf, names):
    """The named numeric columns as one C-ordered float64 array, filled a block of columns at a
    time (``DataFrame.to_numpy`` of a wide frame is column-major, and making it C-ordered
    afterwards would copy X once more)."""
    idx = pdf.columns.get_indexer(list(names))
    n, p = len(pdf), len(idx)
    X = np.empty((n, p), dtype=np.float64)
    step = max(1, FILL_BYTES // max(8 * n, 1))
    for start in range(0, p, step):
        X[:, start:start + step] = pdf.iloc[:, idx[start:start + step]].to_numpy(dtype=np.float64)
    return X


def _evaluate(pdf, plan):
    if plan.response_type == "binary":
        y = _code_binary(pdf[plan.response], plan)
    else:
        y = None
    if len(pdf) == 0:
        return np.zeros((0, plan.p)), (None if plan.response is None else np.zeros(0))
    if plan.plain_columns is not None:
        # Every term is a numeric column as is (and so is a numeric response): no patsy.
        X = _plain_matrix(pdf, plan.plain_columns)
        if plan.response_type != "binary" and plan.response is not None:
            y = pdf[plan.response].to_numpy(dtype=np.float64)
        return X, y
    y_info, x_info = plan.infos()
    infos = [x_info] if y_info is None else [y_info, x_info]
    X, y_built = _build_rows(infos, pdf, plan)
    if y_info is not None:
        y = y_built
    return X, y


def _build_rows(infos, pdf, plan):
    """patsy's design matrices for the rows of ``pdf``; a row whose evaluation fails gives NaN.

    The columns are prepared so that patsy should not fail on a value (levels cast, missing
    rows dropped), but if it does, the failing rows are found by halving the block and
    become incomplete rows (omitted by the caller): the rule stays total, and patsy's
    message, which would quote a value, is never shown.
    """
    try:
        with np.errstate(all="ignore"):
            mats = patsy.build_design_matrices(infos, pdf, NA_action=_NO_NA, return_type="matrix")
    except Exception:  # noqa: BLE001 - any failure on values becomes incomplete rows
        if len(pdf) <= 1:
            X = np.full((len(pdf), plan.p), np.nan)
            return X, np.full(len(pdf), np.nan)
        half = len(pdf) // 2
        Xa, ya = _build_rows(infos, pdf.iloc[:half], plan)
        Xb, yb = _build_rows(infos, pdf.iloc[half:], plan)
        return np.vstack([Xa, Xb]), np.concatenate([ya, yb])
    X = np.asarray(mats[-1], dtype=np.float64)
    if plan.intercept:
        X = X[:, 1:]
    y = np.asarray(mats[0], dtype=np.float64)[:, 0] if len(infos) == 2 else np.full(len(pdf), np.nan)
    return X, y


def _code_binary(col, plan):
    negative, positive = plan.response_levels
    if plan.response_levels == (0, 1):
        values = col.to_numpy(dtype=np.float64)
        # a value other than 0 or 1 makes its row incomplete (omitted), never an error
        return np.where(values == 1, 1.0, np.where(values == 0, -1.0, np.nan))
    values = col.to_numpy()
    return np.where(values == positive, 1.0, -1.0)


def materialise(plan: DesignPlan, frame: pd.DataFrame) -> ModelFrame:
    """Evaluate a plan on a pandas frame (after the charge)."""
    X, y, kept = evaluate_rows(frame, plan, with_rows=True)
    return ModelFrame(formula=plan.formula, expanded_formula=plan.expanded_formula, X=X, y=y, terms=list(plan.terms),
                      response=plan.response, intercept=plan.intercept, n_rows_input=plan.n_rows_input,
                      caveats=list(plan.caveats), categorical_terms=list(plan.categorical_terms),
                      response_levels=plan.response_levels,
                      kept_rows=kept)


def plan_pandas_design(formula, data, *, na_action="omit", require_response=True, eval_env=None,
                       response_type="numeric", infer_levels=(), min_rows=None):
    """(plan, frame) for a pandas DataFrame: the schema is its dtypes and row count (``min_rows``:
    see :func:`_validate_data`)."""
    if not isinstance(formula, str):
        raise InvalidTypeError(f'formula must be a string such as "y ~ ."; got {type(formula).__name__}.')
    non_str = ([c for c in data.columns.tolist() if not isinstance(c, str)] if isinstance(data, pd.DataFrame)
               else [])
    frame = _validate_data(data, min_rows)

    def levels_of(c):
        return sorted(frame[c].dropna().unique().tolist(), key=str)

    try:
        plan = plan_design(formula, frame.dtypes, frame.shape[0], na_action=na_action,
                           require_response=require_response, eval_env=eval_env, response_type=response_type,
                           infer_levels=infer_levels, levels_of=levels_of)
    except (FormulaError, DataError) as exc:
        if not non_str:
            raise
        raise _with_non_string_names(exc, formula, non_str, all_columns=len(non_str) == frame.shape[1]) from None
    return plan, frame


def _with_non_string_names(exc, formula, non_str, all_columns):
    """``exc`` for data whose column names are not all strings (``pd.DataFrame(array)`` names them 0, 1, ...):
    a formula names columns by strings, and a number in it is a number.  Where the formula writes one of
    those names as a number (``0 ~ .``, ``Q(1)``), that is the message; otherwise, when no column name is a
    string, it is added to ``exc``'s; else ``exc`` is returned as it is."""
    kinds = sorted({type(c).__name__ for c in non_str})
    shown = f"{non_str[:10]}{' ...' if len(non_str) > 10 else ''}"
    example = str(non_str[0])
    note = (f"column names must be strings for a formula to name them, and data's column names {shown} are "
            f"{' and '.join(kinds)} (a bare {example} in a formula is the number {example}): rename them before the "
            f"call, e.g. df.columns = df.columns.astype(str), and write them quoted, Q('{example}'), or give them "
            f"Python names with df = df.add_prefix('x') (x{example}, ...).")
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "''", formula)
    numbers = set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", unquoted))
    if numbers & {str(c) for c in non_str}:
        return FormulaError(f"formula {formula!r}: {note} (The formula's own error: {exc})")
    if not all_columns:
        return exc
    return type(exc)(f"{exc} Note: {note}")


def build_model_frame(formula, data, *, na_action="omit", require_response=True, eval_env=None,
                      response_type="numeric", infer_levels=()) -> ModelFrame:
    """Plan and evaluate ``formula`` on ``data`` in one step (no budget is involved here).

    ``dp_select`` runs the two stages separately, with the charge between them; this
    convenience is for direct use and tests.  Raises FormulaError, StatefulTransformError,
    DataError (schema); data values never raise (the total rules of the module docstring).
    """
    if eval_env is None:
        eval_env = patsy.EvalEnvironment.capture(1)
    plan, frame = plan_pandas_design(formula, data, na_action=na_action, require_response=require_response,
                                     eval_env=eval_env, response_type=response_type, infer_levels=infer_levels)
    return materialise(plan, frame)


_MISSING = object()


def _lookup(eval_env, name):
    try:
        return eval_env.namespace[name]
    except KeyError:
        import builtins

        return getattr(builtins, name, _MISSING)


def _pure_categorical_columns(design_info, terms, intercept):
    """Candidate columns of terms made only of categorical factors: 0/1 dummies."""
    out = []
    offset = 1 if intercept else 0
    for term, cols in design_info.term_slices.items():
        if term.factors and all(design_info.factor_infos[f].type == "categorical" for f in term.factors):
            out += [terms[j - offset] for j in range(cols.start, cols.stop) if j - offset >= 0]
    return out
