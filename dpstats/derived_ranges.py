"""Public ranges of formula terms, derived from public ranges of the columns.

A formula's terms are row-wise expressions of columns (:mod:`dpstats.row_functions`):
products ``a:b``, powers ``I(x**2)``, ``np.log(x)``, centred and scaled columns
``I((x - 50) / 10)``, categorical contrasts.  Given a public range for every column an
expression uses, the range of the expression follows by interval arithmetic (Moore 1966;
Moore, Kearfott and Cloud 2009): each operation maps the ranges of its operands to the
range of its result.  Every input is public (column ranges, constants written in the
formula, declared levels and patsy's contrast matrices), so the derived ranges are public
too: no data value is read, and all of it runs before the charge.

The rules
---------
* ``+``, ``-``, ``*``, ``/`` (a divisor whose range contains 0 is refused), ``//`` and
  ``%`` by a constant, unary ``-``; ``x * x`` with the same operand twice is a square.
* ``**`` with an integer exponent (even powers of a range containing 0 start at 0), a real
  exponent of a non-negative base, or a positive base raised to a range.
* Monotone functions at the ends of the range, inside their domain: ``np.log``,
  ``np.log2``, ``np.log10`` (range above 0), ``np.log1p`` (above -1), ``np.sqrt`` (from 0),
  ``np.exp``, ``np.exp2``, ``np.expm1``, ``np.cbrt``, ``np.arctan``, ``np.sinh``,
  ``np.tanh``, ``np.arcsinh``, ``np.arcsin`` / ``np.arccos`` (within [-1, 1]),
  ``np.arccosh`` (from 1), ``np.arctanh`` (inside (-1, 1)), ``np.floor``, ``np.ceil``,
  ``np.trunc``, ``np.rint``, ``np.sign``; ``abs``, ``np.square``, ``np.cosh`` (through 0);
  ``np.sin``, ``np.cos`` (their extrema inside the range), ``np.tan`` (no pole inside);
  ``np.reciprocal``, ``np.power``, ``np.clip``, ``np.minimum`` / ``np.maximum`` (and the
  ``fmin`` / ``fmax`` forms), ``np.hypot``, ``np.where`` (the hull of both branches);
  comparisons and logical operations take values in [0, 1].
* A categorical factor contributes the values of its contrast column: 0 or 1 for the
  default treatment coding, the column's smallest and largest entries for any other
  contrast (``Sum`` gives [-1, 1]).
* A term is the product of its factors (``a:b:C(g)``): the product of their ranges.

Where each variable occurs once in an expression, as in every product of distinct columns
and every function of one column, the derived range is exactly the set of values the
expression takes on the box of column ranges (the ends are attained); where a column occurs
more than once (``I(x - x**2)``) it may be wider, never narrower, than the true range.
Floating-point rounding is not directed outwards: an end may be off by one unit in the
last place, and a value beyond it is clipped by that much, which changes no privacy
statement (clipping to any public range is what the sensitivities rely on).

A term whose range cannot be derived (a column without a range, a function undefined on
part of its argument's range, such as ``np.log`` of a range reaching 0) is named, with
what to supply, before anything is charged.  A range given for a term itself always wins
over a derived one.
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .row_functions import ROW_FUNCTIONS

__all__ = ["RangeUnavailable", "expression_range", "FormulaRanges", "formula_ranges"]


class RangeUnavailable(Exception):
    """The range of an expression cannot be derived; ``str()`` says why and what to supply."""


@dataclass
class _Range:
    lo: float
    hi: float
    #: A boolean array (a comparison, a logical operation): numpy adds booleans with 'or',
    #: multiplies them with 'and' and refuses to subtract or negate them.
    boolean: bool = False

    def pair(self):
        return (self.lo, self.hi)


def _fmt(v):
    return f"{v:.6g}"


def _show(lo, hi):
    return f"[{_fmt(lo)}, {_fmt(hi)}]"


def _checked(lo, hi, what):
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RangeUnavailable(f"{what} overflows (its range is not finite)")
    return _Range(min(lo, hi), max(lo, hi))


def _hull(*ranges):
    return _Range(min(r.lo for r in ranges), max(r.hi for r in ranges))


def _add(a, b, what):
    return _checked(a.lo + b.lo, a.hi + b.hi, what)


def _sub(a, b, what):
    return _checked(a.lo - b.hi, a.hi - b.lo, what)


def _mul(a, b, what):
    corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return _checked(min(corners), max(corners), what)


def _div(a, b, what):
    if b.lo <= 0.0 <= b.hi:
        raise RangeUnavailable(f"{what} divides by a range {_show(b.lo, b.hi)} that contains 0")
    return _mul(a, _Range(1.0 / b.hi, 1.0 / b.lo), what)


def _abs(a):
    if a.lo >= 0:
        return _Range(a.lo, a.hi)
    if a.hi <= 0:
        return _Range(-a.hi, -a.lo)
    return _Range(0.0, max(-a.lo, a.hi))


def _int_power(a, n, what):
    if n == 0:
        return _Range(1.0, 1.0)
    if n < 0:
        if a.lo <= 0.0 <= a.hi:
            raise RangeUnavailable(f"{what} raises a range {_show(a.lo, a.hi)} containing 0 to a negative power")
        return _div(_Range(1.0, 1.0), _int_power(a, -n, what), what)
    try:
        if n % 2 == 0:
            m = _abs(a)
            return _checked(m.lo ** n, m.hi ** n, what)
        return _checked(a.lo ** n, a.hi ** n, what)
    except OverflowError:
        raise RangeUnavailable(f"{what} overflows (its range is not finite)") from None


def _power(a, b, what):
    if b.lo == b.hi:
        e = b.lo
        if float(e).is_integer() and abs(e) <= 1e6:
            return _int_power(a, int(e), what)
        if a.lo < 0:
            raise RangeUnavailable(f"{what} raises a range {_show(a.lo, a.hi)} with negative values to the "
                                   f"non-integer power {_fmt(e)} (undefined there)")
        if e < 0 and a.lo == 0:
            raise RangeUnavailable(f"{what} raises a range reaching 0 to a negative power")
        try:
            return _checked(a.lo ** e, a.hi ** e, what)
        except OverflowError:
            raise RangeUnavailable(f"{what} overflows (its range is not finite)") from None
    if a.lo <= 0:
        raise RangeUnavailable(f"{what} raises a range {_show(a.lo, a.hi)} that is not above 0 to a varying power")
    # a ** b = exp(b log a): one occurrence of each operand, so exact.
    log_a = _Range(math.log(a.lo), math.log(a.hi))
    return _monotone(math.exp, _mul(b, log_a, what), what)


def _monotone(f, a, what, increasing=True):
    try:
        lo, hi = f(a.lo), f(a.hi)
    except OverflowError:
        raise RangeUnavailable(f"{what} overflows (its range is not finite)") from None
    return _checked(lo, hi, what) if increasing else _checked(hi, lo, what)


def _domain(a, what, name, low=None, low_open=False, high=None, high_open=False):
    bad_low = low is not None and (a.lo <= low if low_open else a.lo < low)
    bad_high = high is not None and (a.hi >= high if high_open else a.hi > high)
    if bad_low or bad_high:
        parts = []
        if low is not None:
            parts.append(f"{'above' if low_open else 'at least'} {_fmt(low)}")
        if high is not None:
            parts.append(f"{'below' if high_open else 'at most'} {_fmt(high)}")
        raise RangeUnavailable(f"{what}: {name} is defined only for values {' and '.join(parts)}, and its "
                               f"argument's range is {_show(a.lo, a.hi)}")


def _periodic_extrema(a, f, peak, trough, what):
    """Range of sin-like ``f`` (period 2 pi, maximum at ``peak``, minimum at ``trough``) on ``a``."""
    if a.hi - a.lo >= 2 * math.pi:
        return _Range(-1.0, 1.0)
    values = [f(a.lo), f(a.hi)]
    for point, value in ((peak, 1.0), (trough, -1.0)):
        k = math.ceil((a.lo - point) / (2 * math.pi))
        if point + 2 * math.pi * k <= a.hi:
            values.append(value)
    return _checked(min(values), max(values), what)


_INCREASING = {
    "exp": math.exp, "exp2": lambda v: 2.0 ** v, "expm1": math.expm1, "cbrt": np.cbrt,
    "arctan": math.atan, "sinh": math.sinh, "tanh": math.tanh, "arcsinh": math.asinh,
    "floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "rint": lambda v: float(np.rint(v)),
    "sign": lambda v: float(np.sign(v)),
}
# name -> (function, domain keyword arguments of _domain)
_INCREASING_ON_DOMAIN = {
    "log": (math.log, dict(low=0.0, low_open=True)),
    "log2": (math.log2, dict(low=0.0, low_open=True)),
    "log10": (math.log10, dict(low=0.0, low_open=True)),
    "log1p": (math.log1p, dict(low=-1.0, low_open=True)),
    "sqrt": (math.sqrt, dict(low=0.0)),
    "arcsin": (math.asin, dict(low=-1.0, high=1.0)),
    "arccosh": (math.acosh, dict(low=1.0)),
    "arctanh": (math.atanh, dict(low=-1.0, low_open=True, high=1.0, high_open=True)),
}
_BOOLEAN_FUNCTIONS = frozenset({"isnan", "logical_and", "logical_or", "logical_not"})


#: The range rule of each arithmetic operator between two ranges.
_ARITHMETIC_RULES = {ast.Add: _add, ast.Sub: _sub, ast.Mult: _mul, ast.Div: _div, ast.Pow: _power}


def _floordiv_or_mod(a, c, floordiv, what):
    """The range of a // c or a % c for a non-zero constant c."""
    if floordiv:
        return _checked(math.floor(a.lo / c), math.floor(a.hi / c), what)
    # numpy's % takes the divisor's sign: values in [0, c) for c > 0, (c, 0] for c < 0.
    k_lo, k_hi = math.floor(a.lo / c), math.floor(a.hi / c)
    if k_lo == k_hi:  # one period: x - k c, monotone
        return _checked(a.lo - k_lo * c, a.hi - k_lo * c, what)
    return _checked(0.0, c, what)


class _Evaluator:
    """Interval evaluation of one row-wise expression (already checked by the allow-list)."""

    def __init__(self, code, column_range, constant):
        self.code = code
        self.column_range = column_range
        self.constant = constant
        self.columns = {}  # column -> its range, in the order first used

    def column(self, name):
        found = self.column_range(name)
        lo, hi = found[0], found[1]
        self.columns.setdefault(name, (lo, hi))
        # A bool column: 0 or 1, and numpy adds bool arrays with 'or'.
        return _Range(float(lo), float(hi), boolean=len(found) > 2 and bool(found[2]))

    def fail(self, node, why="has no interval rule"):
        raise RangeUnavailable(f"{ast.unparse(node)!r} {why}")

    def eval(self, node):
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            self.fail(node)
        return method(node)

    def eval_Constant(self, node):
        value = node.value
        if isinstance(value, bool):
            return _Range(float(value), float(value), boolean=True)
        if (isinstance(value, (int, float)) and math.isfinite(value)):
            return _Range(float(value), float(value))
        self.fail(node, "is not a finite number")

    def eval_Name(self, node):
        if node.id in ("True", "False"):
            v = float(node.id == "True")
            return _Range(v, v, boolean=True)
        value = self.constant(node.id)
        if value is not None:
            return _Range(float(value), float(value))
        return self.column(node.id)

    def eval_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy") and node.attr in ("pi", "e"):
            v = math.pi if node.attr == "pi" else math.e
            return _Range(v, v)
        self.fail(node)

    def eval_UnaryOp(self, node):
        a = self.eval(node.operand)
        if isinstance(node.op, (ast.USub, ast.UAdd)) and a.boolean:
            self.fail(node, "negates a boolean (numpy refuses it)")
        if isinstance(node.op, ast.USub):
            return _Range(-a.hi, -a.lo)
        if isinstance(node.op, ast.UAdd):
            return a
        return _Range(1.0 - a.hi, 1.0 - a.lo, boolean=True)  # not / ~ of a comparison

    def eval_Compare(self, node):
        # A boolean: decided where the operands' ranges decide it, else 0 or 1.
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            try:
                a, b = self.eval(node.left), self.eval(node.comparators[0])
            except RangeUnavailable:
                return _Range(0.0, 1.0)
            if isinstance(node.ops[0], (ast.Gt, ast.GtE)):
                a, b = b, a  # a < b  or  a <= b
            strict = isinstance(node.ops[0], (ast.Lt, ast.Gt))
            true = a.hi < b.lo if strict else a.hi <= b.lo
            false = a.lo >= b.hi if strict else a.lo > b.hi
            if true or false:
                return _Range(float(true), float(true), boolean=True)
        return _Range(0.0, 1.0, boolean=True)

    def eval_BoolOp(self, node):
        return _Range(0.0, 1.0, boolean=True)

    def eval_BinOp(self, node):
        what = repr(ast.unparse(node))
        a, b = self.eval(node.left), self.eval(node.right)
        op = node.op
        if isinstance(op, (ast.BitAnd, ast.BitOr)) or (a.boolean and b.boolean and isinstance(op, (ast.Add, ast.Mult))):
            if isinstance(op, (ast.BitOr, ast.Add)):  # 'or'
                return _Range(max(a.lo, b.lo), max(a.hi, b.hi), boolean=True)
            return _Range(min(a.lo, b.lo), min(a.hi, b.hi), boolean=True)  # 'and'
        if a.boolean and b.boolean and isinstance(op, ast.Sub):
            self.fail(node, "subtracts booleans (numpy refuses it)")
        if isinstance(op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right):
            return _int_power(a, 2, what)  # x * x is a square, not a product
        rule = _ARITHMETIC_RULES.get(type(op))
        if rule is not None:
            return rule(a, b, what)
        if isinstance(op, (ast.FloorDiv, ast.Mod)):
            if b.lo != b.hi or b.lo == 0:
                self.fail(node, "has a divisor that is not a non-zero constant")
            return _floordiv_or_mod(a, b.lo, isinstance(op, ast.FloorDiv), what)
        self.fail(node)

    def eval_Call(self, node):
        func = node.func
        # A literal dtype= or casting= (the only keywords the allow-list admits) changes the
        # values' precision at most; anything else has no rule.
        if any(kw.arg not in ("dtype", "casting") for kw in node.keywords):
            self.fail(node, "has keyword arguments")
        if isinstance(func, ast.Name) and func.id in ("I", "Q", "abs") and len(node.args) == 1:
            arg = node.args[0]
            if func.id == "Q":
                return self.column(arg.value)
            return self.eval(arg) if func.id == "I" else _abs(self.eval(arg))
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id in ("np", "numpy") and func.attr in ROW_FUNCTIONS):
            self.fail(node)
        if func.attr in _BOOLEAN_FUNCTIONS:
            return _Range(0.0, 1.0, boolean=True)
        args = [self.eval(a) for a in node.args]
        rule = _NUMPY_RULES.get((func.attr, len(args)))
        if rule is None:
            self.fail(node)
        return rule(*args, what=repr(ast.unparse(node)))


def _domain_then_increasing(name):
    f, dom = _INCREASING_ON_DOMAIN[name]

    def rule(a, what):
        _domain(a, what, f"np.{name}", **dom)
        return _monotone(f, a, what)
    return rule


def _arccos(a, what):
    _domain(a, what, "np.arccos", low=-1.0, high=1.0)
    return _monotone(math.acos, a, what, increasing=False)


def _tan(a, what):
    k = math.ceil((a.lo - math.pi / 2) / math.pi)
    if math.pi / 2 + k * math.pi <= a.hi:
        raise RangeUnavailable(f"{what}: np.tan has a pole inside its argument's range {_show(a.lo, a.hi)}")
    return _monotone(math.tan, a, what)


def _hypot(a, b, what):
    a, b = _abs(a), _abs(b)
    return _checked(math.hypot(a.lo, b.lo), math.hypot(a.hi, b.hi), what)


def _numpy_rules():
    """(numpy function name, number of arguments) -> rule(*argument ranges, what=...)."""
    rules = {}
    for name, f in _INCREASING.items():
        rules.setdefault((name, 1), lambda a, what, f=f: _monotone(f, a, what))
    for name in _INCREASING_ON_DOMAIN:
        rules.setdefault((name, 1), _domain_then_increasing(name))
    unary = {
        "arccos": _arccos,
        "abs": lambda a, what: _abs(a), "absolute": lambda a, what: _abs(a), "fabs": lambda a, what: _abs(a),
        "square": lambda a, what: _int_power(a, 2, what),
        "reciprocal": lambda a, what: _div(_Range(1.0, 1.0), a, what),
        "cosh": lambda a, what: _monotone(math.cosh, _abs(a), what),
        "sin": lambda a, what: _periodic_extrema(a, math.sin, math.pi / 2, -math.pi / 2, what),
        "cos": lambda a, what: _periodic_extrema(a, math.cos, 0.0, math.pi, what),
        "tan": _tan,
    }
    binary = {
        "power": _power, "float_power": _power,
        "minimum": lambda a, b, what: _Range(min(a.lo, b.lo), min(a.hi, b.hi)),
        "fmin": lambda a, b, what: _Range(min(a.lo, b.lo), min(a.hi, b.hi)),
        "maximum": lambda a, b, what: _Range(max(a.lo, b.lo), max(a.hi, b.hi)),
        "fmax": lambda a, b, what: _Range(max(a.lo, b.lo), max(a.hi, b.hi)),
        "hypot": _hypot,
    }
    ternary = {
        "clip": lambda x, low, high, what: _Range(min(max(x.lo, low.lo), high.lo), min(max(x.hi, low.hi), high.hi)),
        "where": lambda cond, a, b, what: _hull(a, b),
    }
    for arity, table in ((1, unary), (2, binary), (3, ternary)):
        for name, rule in table.items():
            rules.setdefault((name, arity), rule)
    return rules


_NUMPY_RULES = _numpy_rules()


def expression_range(code, column_range, constant=lambda name: None):
    """``(lower, upper, columns)``: the range of the row-wise expression ``code``.

    ``column_range(name)`` returns a column's public ``(lower, upper)`` (``(0, 1, True)`` for
    a bool column) or raises
    :class:`RangeUnavailable`; ``constant(name)`` returns the value of a public constant of
    the formula's environment, or None.  ``columns`` maps each column used to its range.
    Raises :class:`RangeUnavailable` when no rule applies or a function is undefined on
    part of its argument's range.
    """
    try:
        tree = ast.parse(code.strip(), mode="eval").body
    except SyntaxError:
        raise RangeUnavailable(f"{code!r} does not parse") from None
    ev = _Evaluator(code, column_range, constant)
    r = ev.eval(tree)
    return r.lo, r.hi, dict(ev.columns)


# ------------------------------------------------------------------- formula terms
@dataclass
class FormulaRanges:
    """The public range of every term (and of the response), and how each was obtained.

    ``ranges`` maps term -> (lower, upper) for every candidate term and the response
    (when it is ranged); ``derived`` maps the terms whose range was derived (not given) to
    a short statement of the derivation, e.g. ``"crim [0, 100] x zn [0, 100]"``.
    """

    ranges: dict
    derived: dict = field(default_factory=dict)


def _bare_column(code):
    """The column a factor's code names as is (``x`` or ``Q("x y")``), or None."""
    try:
        node = ast.parse(code.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Name):
        return node.id
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)):
        return node.args[0].value
    return None


def _clean(code):
    """A factor's code as patsy names its column (``Q("x y")`` shown as ``x y``)."""
    return re.sub(r"""Q\((['"])(.*?)\1\)""", r"\2", code)


def formula_ranges(given, plan, *, columns, constant=lambda name: None, response_required=True, wanted=None):
    """Complete ``given`` (a bounds dict, keys as validated) into a range for every term.

    Parameters
    ----------
    given : dict
        ``{name: (lower, upper)}``: names are terms, the response, or columns of the data
        (a codebook may name columns the formula does not use: they are accepted and only
        used to derive the ranges of terms).
    plan : dpstats.formula.DesignPlan
    columns : sequence of str
        The data's column names (public schema).
    constant : callable
        Public constants of the formula's environment (name -> number or None).
    response_required : bool
        False for a binary response (coded -1 / +1, needs no range).
    wanted : collection of str, optional
        Only these terms (and the response) need a range (a refit of selected terms).

    Returns :class:`FormulaRanges`.  Raises ``RangeUnavailable`` with one line per term
    that has neither a given nor a derivable range, naming what to supply.  Reads the
    formula, the schema and the given ranges only: call it before the charge.
    """
    terms = list(plan.terms)
    response = plan.response
    colset = set(columns)
    outer_constant = constant

    def constant(name):  # noqa: F811 - a column shadows a constant of the same name, as in patsy
        return None if name in colset else outer_constant(name)

    dtypes = getattr(plan, "used_dtypes", None)
    bool_columns = set() if dtypes is None else {c for c, dt in dtypes.items() if pd.api.types.is_bool_dtype(dt)}

    def column_range(name):
        if name in bool_columns:
            return (0.0, 1.0, True)  # from the dtype (public schema)
        if name in given:
            return given[name]
        if name in colset:
            raise RangeUnavailable(f"column {name!r} has no range: add {name!r}: (lower, upper) to bounds")
        raise RangeUnavailable(f"{name!r} is not a column")

    out, derived, problems = {}, {}, []
    if plan.plain_columns is not None:
        # Every term is a numeric column as is (the fast path): nothing to derive.
        for t in terms:
            if wanted is not None and t not in wanted:
                continue
            if t in given:
                out[t] = tuple(given[t])
            else:
                problems.append(f"{t!r}: column {t!r} has no range: add {t!r}: (lower, upper) to bounds")
    else:
        _derive_term_ranges(plan, terms, given, wanted, column_range, constant, out, derived, problems)
    if response is not None and response_required:
        if response in given:
            out[response] = tuple(given[response])
        else:
            try:
                lo, hi, text = _response_range(plan, column_range, constant)
                if not lo < hi:
                    raise RangeUnavailable(f"its range is the single value {_fmt(lo)}")
                out[response] = (lo, hi)
                derived[response] = text
            except RangeUnavailable as exc:
                problems.append(f"the response {response!r}: {exc}")
    if problems:
        raise RangeUnavailable(_clean("\n".join(problems)))
    return FormulaRanges(out, derived)


def _derive_term_ranges(plan, terms, given, wanted, column_range, constant, out, derived, problems):
    """Fill ``out``/``derived`` for the patsy-built terms; a term without a range adds a line
    to ``problems`` naming what to supply."""
    y_info, x_info = plan.infos()
    factor_cache = {}
    j = 0
    for term, subterms in x_info.term_codings.items():
        if not term.factors:
            continue  # the intercept
        for sub in subterms:
            for combo in _column_combinations(x_info, sub):
                name = terms[j]
                j += 1
                if wanted is not None and name not in wanted:
                    continue
                if name in given:
                    out[name] = tuple(given[name])
                    continue
                try:
                    lo, hi, text = _term_range(sub, combo, x_info, column_range, constant, factor_cache, given)
                except RangeUnavailable as exc:
                    problems.append(_missing_range_line(name, sub, exc))
                    continue
                if not lo < hi:
                    # A constant column (e.g. a contrast's constant column): the range is
                    # widened to include 0, so that the map to [-1, 1] is defined.
                    lo, hi = (min(0.0, lo), max(0.0, lo)) if lo != 0 else (0.0, 1.0)
                    text += f" (constant; range widened to {_show(lo, hi)})"
                out[name] = (lo, hi)
                derived[name] = text
    if j != len(terms):  # pragma: no cover - patsy's column order is the plan's
        raise AssertionError("design columns and terms disagree")


def _missing_range_line(name, sub, exc):
    why = str(exc)
    if why.startswith(repr(name) + ": "):
        why = why[len(repr(name)) + 2:]
    if _bare_term(sub):
        return f"{name!r}: {why}"
    return f"{name!r}: {why}; or give {name!r}: (lower, upper) directly"


def _bare_term(subterm):
    """Whether a term is one column used as is (its range is given, never derived)."""
    return (len(subterm.factors) == 1 and not subterm.contrast_matrices
            and _bare_column(getattr(subterm.factors[0], "code", "")) is not None)


def _column_combinations(info, subterm):
    from patsy.build import _subterm_column_combinations

    return list(_subterm_column_combinations(info.factor_infos, subterm))


def _factor_range(factor, info, column, column_range, constant, cache, given):
    """(lower, upper, text) of one factor's design column ``column``."""
    key = (factor, column)
    if key in cache:
        hit = cache[key]
        if isinstance(hit, RangeUnavailable):
            raise hit
        return hit
    try:
        finfo = info.factor_infos[factor]
        code = getattr(factor, "code", str(factor))
        if finfo.type == "categorical":
            raise AssertionError("categorical factors are handled by the caller")
        bare = _bare_column(code)
        if bare is None and _clean(code) in given:
            # A range given for the factor as a term of its own (e.g. I(x ** 2) in I(x ** 2):z).
            lo, hi = (float(v) for v in given[_clean(code)])
            hit = (lo, hi, f"{_clean(code)} {_show(lo, hi)} (given)")
            cache[key] = hit
            return hit
        lo, hi, used = expression_range(code, column_range, constant)
        if bare is not None:
            text = f"{bare} {_show(lo, hi)}"
        else:
            text = f"{_clean(code)} {_show(lo, hi)} from " + ", ".join(f"{c} {_show(*r)}" for c, r in used.items())
        hit = (lo, hi, text)
    except RangeUnavailable as exc:
        cache[key] = exc
        raise
    cache[key] = hit
    return hit


def _term_range(subterm, combo, info, column_range, constant, cache, given):
    lo, hi = 1.0, 1.0
    parts = []
    all_bare = True
    for factor, column in zip(subterm.factors, combo):
        if factor in subterm.contrast_matrices:
            matrix = np.asarray(subterm.contrast_matrices[factor].matrix, dtype=np.float64)[:, column]
            f_lo, f_hi = float(matrix.min()), float(matrix.max())
            code = _clean(getattr(factor, "code", str(factor)))
            if f_lo == f_hi:
                parts.append(f"column of {code} (constant {_fmt(f_lo)})")
            elif set(np.unique(matrix)) <= {0.0, 1.0}:
                parts.append(f"dummy of {code} (0 or 1)")
            else:
                parts.append(f"contrast column of {code} {_show(f_lo, f_hi)}")
            all_bare = False
        else:
            f_lo, f_hi, text = _factor_range(factor, info, column, column_range, constant, cache, given)
            parts.append(text)
            if _bare_column(getattr(factor, "code", "")) is None:
                all_bare = False
        corners = [lo * f_lo, lo * f_hi, hi * f_lo, hi * f_hi]
        lo, hi = min(corners), max(corners)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RangeUnavailable("the product of its factors' ranges overflows")
    text = " x ".join(parts)
    if len(parts) > 1 and all_bare:
        text = "product: " + text
    return lo, hi, text


def _response_range(plan, column_range, constant):
    if plan.plain_columns is not None or _bare_column(plan.lhs) is not None:
        # A column: its range is given or missing, never derived.
        raise RangeUnavailable(f"add {plan.response!r}: (lower, upper) to bounds")
    y_info, _ = plan.infos()
    code = plan.lhs
    if y_info is not None and len(y_info.factor_infos) == 1:
        code = getattr(next(iter(y_info.factor_infos)), "code", code)
    if _bare_column(code) is not None:
        # A column: its range is given or missing, never derived.
        raise RangeUnavailable(f"add {plan.response!r}: (lower, upper) to bounds")
    lo, hi, used = expression_range(code, column_range, constant)
    return lo, hi, f"{_clean(code)} {_show(lo, hi)} from " + ", ".join(f"{c} {_show(*r)}" for c, r in used.items())
