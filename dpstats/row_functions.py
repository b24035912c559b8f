"""Which expressions a formula may evaluate: row-wise operations with public constants.

A formula term is evaluated on the whole column at once, so a term such as
``I(x / np.max(np.abs(x)))``, ``I(x - x.mean())``, ``np.std(x)`` or a rank transform
would feed a statistic of *every* record into *every* row: one record could then move
all rows, and the sensitivity the mechanisms are calibrated to no longer holds (an audit
measured 28.5 sensitivity units for one record under DP-SIS).  So only operations that
map each row to a value computed from that row and public constants may run.  This is an
allow-list, not a deny-list: anything not listed is refused before the data is read.

Allowed
-------
* column names (bare or quoted with ``Q("name")``), numeric and string literals,
  ``True``/``False``/``None``, and names of the caller's environment bound to a plain
  number (public constants such as ``c = 50``);
* arithmetic ``+ - * / // % **``, unary ``+ -``, comparisons, and ``&``/``|``/``~``
  between comparisons;
* the element-wise functions in :data:`ROW_FUNCTIONS`, called as ``np.<name>`` (or
  ``numpy.<name>``), plus Python's ``abs``;
* patsy's ``I(...)`` and ``Q("...")``, and ``C(column, levels=[...])`` or
  ``C(column, Treatment(...))`` (any patsy contrast) with literal arguments.

Everything else is refused with a :class:`~dpstats.errors.FormulaError`: other functions
(``np.max``, ``np.mean``, user functions), attributes of columns (``x.mean()``),
indexing, comprehensions, lambdas.  ``^`` is refused with a hint, because Python reads
``I(age^2)`` as bit-wise XOR, not as a power.
"""
from __future__ import annotations

import ast
import numbers

import numpy as np

from .errors import FormulaError

#: numpy functions that act element-wise; with public constant arguments they are row-wise.
ROW_FUNCTIONS = frozenset({
    "abs", "absolute", "fabs", "sign", "sqrt", "cbrt", "square", "power", "float_power", "reciprocal",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    "floor", "ceil", "trunc", "rint", "clip", "minimum", "maximum", "fmin", "fmax", "where", "isnan",
    "logical_and", "logical_or", "logical_not", "hypot",
})
#: Inputs of the allowed functions that are not ufuncs (ufuncs declare theirs as ``nin``).
_POSITIONAL = {"clip": 3, "where": 3}
#: The only keywords an allowed numpy function may take, and only as literals.
_LITERAL_KEYWORDS = frozenset({"dtype", "casting"})
#: numpy constants that may appear as ``np.pi`` or ``np.e``.
NUMPY_CONSTANTS = frozenset({"pi", "e"})
#: patsy's contrast codings (builtins of its formula namespace).
CONTRASTS = frozenset({"Treatment", "Sum", "Diff", "Helmert", "Poly", "ContrastMatrix"})
_NUMPY_NAMES = frozenset({"np", "numpy"})

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_LOGICAL = (ast.BitAnd, ast.BitOr)
_HELP = ("Only row-wise operations with public constants may be used in a formula: arithmetic, "
         "comparisons, np.log, np.exp, np.sqrt, np.abs and the other element-wise functions listed in "
         "dpstats.row_functions, I(), Q(), and C() with declared levels. A function of a whole column "
         "(a mean, maximum, standard deviation or rank) would put every record into every row; compute "
         "such constants from public knowledge and write them as numbers, e.g. I((x - 50) / 10).")


def check_row_wise(code: str, columns, lookup) -> None:
    """Raise FormulaError unless ``code`` (one patsy factor) is row-wise with public constants.

    ``columns`` are the data's column names; ``lookup(name)`` returns the value a
    non-column name has in the formula's environment (or a sentinel when it has none).
    """
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"cannot parse {code!r} in the formula: {exc.msg}") from None
    _Checker(code, set(columns), lookup).visit(tree.body)


def _is_boolean(node) -> bool:
    return (isinstance(node, (ast.Compare, ast.BoolOp))
            or (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)))
            or (isinstance(node, ast.BinOp) and isinstance(node.op, _LOGICAL)
                and _is_boolean(node.left) and _is_boolean(node.right)))


class _Checker:
    def __init__(self, code, columns, lookup):
        self.code, self.columns, self.lookup = code, columns, lookup

    def refuse(self, what, hint=_HELP):
        raise FormulaError(f"the formula term {self.code!r} uses {what}, which is not allowed. {hint}")

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            self.refuse(f"a {type(node).__name__} expression")
        method(node)

    def visit_Constant(self, node):
        if not isinstance(node.value, (numbers.Number, str, bool, type(None))):
            self.refuse(f"the constant {node.value!r}")

    def visit_Name(self, node):
        if node.id in self.columns or node.id in ("True", "False", "None"):
            return
        value = self.lookup(node.id)
        if isinstance(value, (numbers.Real, np.number)) and not isinstance(value, np.ndarray):
            return  # a public constant of the caller's environment
        if node.id in _NUMPY_NAMES or callable(value):
            self.refuse(f"{node.id!r} other than as a call of an allowed function")
        self.refuse(f"the name {node.id!r}, which is neither a column nor a number",
                    "A name in a formula must be a column of data, or a plain number defined in your code.")

    def visit_UnaryOp(self, node):
        if isinstance(node.op, (ast.UAdd, ast.USub)) or (isinstance(node.op, (ast.Invert, ast.Not))
                                                           and _is_boolean(node.operand)):
            self.visit(node.operand)
            return
        self.refuse(f"the operator {type(node.op).__name__}")

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.BitXor):
            self.refuse("'^' (in Python a bit-wise XOR, not a power)",
                        "Write powers with '**', for example I(age**2).")
        if isinstance(node.op, _LOGICAL) and not (_is_boolean(node.left) and _is_boolean(node.right)):
            self.refuse(f"'{'|' if isinstance(node.op, ast.BitOr) else '&'}' outside a comparison (Python's "
                        "bit-wise operator; random-effect terms such as (1|g) are not supported)",
                        "Use '&' and '|' only between comparisons, e.g. I((x > 1) & (z < 2)).")
        if not isinstance(node.op, _ARITHMETIC + _LOGICAL):
            self.refuse(f"the operator {type(node.op).__name__}")
        self.visit(node.left)
        self.visit(node.right)

    def visit_BoolOp(self, node):
        for value in node.values:
            self.visit(value)

    def visit_Compare(self, node):
        self.visit(node.left)
        for value in node.comparators:
            self.visit(value)

    def visit_Attribute(self, node):
        if (isinstance(node.value, ast.Name) and node.value.id in _NUMPY_NAMES
                and node.attr in NUMPY_CONSTANTS):
            return
        self.refuse(f"the attribute {ast.unparse(node)!r}")

    def visit_List(self, node):
        for elt in node.elts:
            self.visit_literal(elt)

    visit_Tuple = visit_List

    def visit_literal(self, node):
        try:
            ast.literal_eval(node)
        except ValueError:
            self.refuse(f"the non-literal {ast.unparse(node)!r} where a literal is needed")

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _NUMPY_NAMES:
            if func.attr not in ROW_FUNCTIONS:
                self.refuse(f"the function {ast.unparse(func)!r} (not an element-wise function)")
            self._check_numpy_signature(node, func.attr)
            return self._visit_arguments(node)
        if not isinstance(func, ast.Name):
            self.refuse(f"the call {ast.unparse(node)!r}")
        name = func.id
        if name == "I" or name == "abs":
            if node.keywords or len(node.args) != 1:
                self.refuse(f"{ast.unparse(node)!r} ({name}() takes one argument and no keywords)")
            return self._visit_arguments(node)
        if name == "Q":
            if len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Constant) \
                    and node.args[0].value in self.columns:
                return
            self.refuse(f"{ast.unparse(node)!r} (Q() takes one quoted column name)")
        if name == "C":
            return self._visit_categorical(node)
        if name in ("log", "sqrt", "exp", "log10", "log2", "log1p", "expm1"):
            self.refuse(f"the R function {name}()", f"Write np.{name}(...) in a Python formula.")
        self.refuse(f"the function {name!r}")

    def _check_numpy_signature(self, node, name):
        # A ufunc's extra positional argument is its output buffer, and ``out=`` / ``where=``
        # make the term numpy's uninitialised memory or another column written in place:
        # only the inputs, and a literal ``dtype`` or ``casting``, may be given.
        most = _POSITIONAL.get(name) or getattr(np, name).nin
        if len(node.args) > most or any(isinstance(a, ast.Starred) for a in node.args):
            self.refuse(f"{ast.unparse(node)!r} (np.{name} takes {most} input{'s' if most > 1 else ''} here; a "
                        "further positional argument would be its output buffer)")
        for kw in node.keywords:
            if kw.arg not in _LITERAL_KEYWORDS:
                shown = "**" if kw.arg is None else f"{kw.arg}="
                self.refuse(f"the keyword {shown} of np.{name}",
                            "Only a literal dtype= or casting= may be given: out= and where= would make the term "
                            "an uninitialised or shared buffer.")
            self.visit_literal(kw.value)

    def _visit_arguments(self, node):
        for arg in node.args:
            self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)

    def _visit_categorical(self, node):
        if not node.args:
            self.refuse("C() without a column")
        self.visit(node.args[0])
        for arg in node.args[1:]:
            self._visit_contrast(arg)
        for kw in node.keywords:
            if kw.arg == "levels":
                self.visit_literal(kw.value)
            elif kw.arg == "contrast":
                self._visit_contrast(kw.value)
            else:
                self.refuse(f"the argument {kw.arg!r} of C()")

    def _visit_contrast(self, node):
        target = node.func if isinstance(node, ast.Call) else node
        if not (isinstance(target, ast.Name) and target.id in CONTRASTS):
            self.refuse(f"the contrast {ast.unparse(node)!r}", f"Use one of patsy's contrasts {sorted(CONTRASTS)}.")
        if isinstance(node, ast.Call):
            for arg in list(node.args) + [kw.value for kw in node.keywords]:
                self.visit_literal(arg)


def declared_levels(code: str):
    """``(column, levels)`` when ``code`` is ``C(column, ..., levels=[literal list])``, else None."""
    try:
        tree = ast.parse(code.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "C" and tree.args):
        return None
    first = tree.args[0]
    if isinstance(first, ast.Name):
        column = first.id
    elif (isinstance(first, ast.Call) and isinstance(first.func, ast.Name) and first.func.id == "Q"
          and first.args and isinstance(first.args[0], ast.Constant)):
        column = first.args[0].value
    else:
        return None
    for kw in tree.keywords:
        if kw.arg == "levels":
            return column, list(ast.literal_eval(kw.value))
    return None
