"""A linear-time path for the simplest formulas.

patsy parses ``y ~ x0 + x1 + ...`` recursively and builds the design term by term; both
cost O(p^2) for p columns (benchmarks/bench_formula.py; numbers in benchmarks/README.md).
Most wide calls are ``y ~ .`` or
``y ~ . - id``: sums and differences of plain numeric columns.  For those this module
computes the terms exactly as patsy would, in O(p), and builds the design with a single
float64 allocation.  Anything else returns ``None`` so that the caller falls back to the
patsy path (which also produces the error messages).

Accepted grammar (the subset of patsy's formula language evaluated here):

* left-hand side: empty, or one column: a bare name or ``Q("name")`` / ``Q('name')``;
* right-hand side: bare column names, ``Q("name")``, R's ``.`` (every column except the
  response), ``0``, ``1``, binary and unary ``+`` / ``-`` and parentheses.

The right-hand side is evaluated with patsy's own rules (``patsy/desc.py``): binary
operators associate to the left with unary ``+``/``-`` binding like binary ones; ``a + b``
appends the new terms of ``b``; ``a - b`` removes the terms of ``b`` from those of ``a``
(terms added later are added again); ``+ 0`` / ``- 1`` remove the intercept, ``+ 1`` /
``- 0`` put it back; a unary minus is only valid on ``0`` or ``1``.  Terms are identified,
as in patsy, by their code: ``x1`` and ``Q("x1")`` are different terms for patsy, so
``. - Q("x1")`` does *not* remove ``x1`` (and ``.`` writes non-identifier columns as
``Q('x y')``, with single quotes, so only ``- Q('x y')`` removes that column).

Only terms whose column has a plain numpy integer or floating dtype are accepted: bool,
categorical, object/string, complex, datetime and pandas extension dtypes (``Int64``,
``Float64``, ...) are expanded or converted differently by patsy and return ``None``.
"""
from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["SimpleDesign", "simple_terms", "simple_design_matrix"]

# One token per match; whitespace in front of it is skipped.  Every non-space character
# starts some alternative, so consecutive matches cover the whole string.
_TOKEN = re.compile(
    r"""[ \t\n\r\f]*(?:
        (?P<q>Q[ \t]*\([ \t]*(?P<lit>"[^"\\\n\r]*"|'[^'\\\n\r]*')[ \t]*\))
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<num>[0-9][0-9A-Za-z_.]*)
      | (?P<op>[-+().])
      | (?P<other>[^ \t\n\r\f])
    )""",
    re.VERBOSE,
)
_LHS = re.compile(
    r"""[ \t\n\r\f]*(?:
        Q[ \t]*\([ \t]*(?P<lit>"[^"\\\n\r]*"|'[^'\\\n\r]*')[ \t]*\)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    )[ \t\n\r\f]*""",
    re.VERBOSE,
)
# dpstats.formula._clean_term_name: the term name shown for a patsy column name.
_Q_CLEAN = re.compile(r"""Q\((['"])(.*?)\1\)""")

# Deeper nesting falls back to patsy: right-nested sums such as a + (b + (c + .)) merge
# term lists once per level, so the depth bounds the cost at O(depth * p).
MAX_PAREN_DEPTH = 64
# Bytes of the temporary block copied into X at a time (a few columns of the frame).
CHUNK_BYTES = 1 << 22

_ZERO, _ONE, _ATOM, _PLUS, _MINUS = "ZERO", "ONE", "ATOM", "+", "-"
_LPAREN, _UPLUS, _UMINUS, _BPLUS, _BMINUS = 0, 1, 2, 3, 4
_PRECEDENCE = {_LPAREN: -9999999, _UPLUS: 100, _UMINUS: 100, _BPLUS: 100, _BMINUS: 100}


@dataclass
class SimpleDesign:
    """Terms of a simple formula, as patsy would build them.

    Attributes
    ----------
    response : str or None
        The response column (None when the left-hand side is empty).
    terms : list of str
        Candidate term columns in patsy's design order (the intercept excluded); these
        are column names, i.e. patsy's column names after
        ``dpstats.formula._clean_term_name``.
    intercept : bool
        Whether patsy's design has an ``Intercept`` column.
    codes : list of str
        patsy's factor codes for ``terms`` (its design column names), e.g. ``x1`` or
        ``Q('x y')``.
    """

    response: str | None
    terms: list
    intercept: bool
    codes: list

    @property
    def used_columns(self) -> list:
        """Columns the design reads: the terms, then the response (if any)."""
        return list(self.terms) + ([self.response] if self.response is not None else [])


def _dtype_lookup(columns, dtypes):
    if hasattr(dtypes, "index") and hasattr(dtypes, "tolist"):  # pandas Series (frame.dtypes)
        return dict(zip(dtypes.index.tolist(), dtypes.tolist()))
    if isinstance(dtypes, Mapping):
        return dtypes
    dtypes = list(dtypes)
    if len(dtypes) != len(columns):
        raise ValueError(f"dtypes has {len(dtypes)} entries for {len(columns)} columns.")
    return dict(zip(columns, dtypes))


def _numeric(dtype) -> bool:
    """A plain numpy integer or float dtype: patsy treats it as one numeric column."""
    return isinstance(dtype, np.dtype) and dtype.kind in "iuf"


def _reduce(op, nouns):
    """Apply one operator to the top of the noun stack, with patsy's evaluation rules.

    A noun is ``(type, intercept, intercept_removed, terms)`` with ``terms`` an
    insertion-ordered dict code -> column, owned by the noun (mutated in place).
    Returns False when patsy would raise.
    """
    if op == _UPLUS:
        _, i, r, t = nouns.pop()
        nouns.append((_PLUS, i, r, t))
        return True
    if op == _UMINUS:
        kind = nouns.pop()[0]
        if kind == _ZERO:
            nouns.append((_MINUS, True, False, {}))
        elif kind == _ONE:
            nouns.append((_MINUS, False, True, {}))
        else:  # "Unary minus can only be applied to 1 or 0"
            return False
        return True
    rkind, ri, rr, rt = nouns.pop()
    _, li, lr, lt = nouns.pop()
    if op == _BPLUS:
        if rkind == _ZERO:
            nouns.append((_PLUS, False, True, lt))
            return True
        if lt:
            lt.update(rt)  # codes already present keep their first position
        else:
            lt = rt
        if ri:
            nouns.append((_PLUS, True, False, lt))
        else:
            nouns.append((_PLUS, li, lr, lt))
        return True
    # binary minus
    if rkind == _ZERO:
        nouns.append((_MINUS, True, False, lt))
        return True
    if rkind == _ONE:
        nouns.append((_MINUS, False, True, lt))
        return True
    for code in rt:
        lt.pop(code, None)
    if ri:
        nouns.append((_MINUS, False, True, lt))
    else:
        nouns.append((_MINUS, li, lr, lt))
    return True


class _NotSimple(Exception):
    """The formula leaves the accepted subset (or patsy would raise): use patsy."""


def _literal_name(lit: str) -> str:
    return lit[1:-1]


def _response_of(lhs: str, colset) -> str | None:
    """The left-hand side's column, or None when it is empty."""
    if not lhs.strip():
        return None
    m = _LHS.fullmatch(lhs)
    if m is None:
        raise _NotSimple
    if m.group("name") is not None:
        response = m.group("name")
        if keyword.iskeyword(response):
            raise _NotSimple
    else:
        response = _literal_name(m.group("lit"))
    if response not in colset:
        raise _NotSimple
    return response


class _RhsParser:
    """Shunting-yard evaluation of the right-hand side with patsy's rules (:func:`_reduce`).

    Each token is handled by :meth:`noun` (a term is expected) or :meth:`operator` (an
    operator is expected); anything patsy would reject, or that the subset does not cover,
    raises :class:`_NotSimple`.
    """

    def __init__(self, columns, colset, response):
        self.columns, self.colset, self.response = columns, colset, response
        self.nouns: list = []
        self.ops: list = []
        self.depth = 0
        self.dot_codes = None

    def _reduce(self, op):
        if not _reduce(op, self.nouns):
            raise _NotSimple

    def _dot(self) -> dict:
        if self.dot_codes is None:
            # as dpstats.formula._expand_dot writes the columns for patsy
            iskw = keyword.iskeyword
            self.dot_codes = {(c if c.isidentifier() and not iskw(c) else f"Q({c!r})"): c
                              for c in self.columns if c != self.response}
            if not self.dot_codes:
                raise _NotSimple  # dpstats: "'.' ... but data has none"
        return dict(self.dot_codes)

    def noun(self, m) -> bool:
        """Handle a token where a term is expected; True when a noun was pushed."""
        kind = m.lastgroup if m.lastgroup != "lit" else "q"
        if kind == "op":
            tok = m.group("op")
            if tok in _PREFIX_OPS:
                if tok == "(":
                    self.depth += 1
                    if self.depth > MAX_PAREN_DEPTH:
                        raise _NotSimple
                self.ops.append(_PREFIX_OPS[tok])
                return False
            if tok != ".":
                raise _NotSimple  # ")" where a term was expected
            self.nouns.append((_ATOM, False, False, self._dot()))
        elif kind == "name":
            name = m.group("name")
            if name not in self.colset or keyword.iskeyword(name):
                raise _NotSimple
            self.nouns.append((_ATOM, False, False, {name: name}))
        elif kind == "q":
            lit = m.group("lit")
            if _literal_name(lit) not in self.colset:
                raise _NotSimple
            self.nouns.append((_ATOM, False, False, {f"Q({lit})": _literal_name(lit)}))
        elif kind == "num" and m.group("num") in _CONSTANT_NOUNS:
            self.nouns.append(_CONSTANT_NOUNS[m.group("num")]())
        else:
            raise _NotSimple  # other numbers are errors outside **; other characters
        return True

    def operator(self, m) -> bool:
        """Handle a token where an operator is expected; True when a term is expected next."""
        if m.lastgroup != "op":
            raise _NotSimple  # juxtaposition: a call, an attribute, a string ...
        tok = m.group("op")
        if tok == ")":
            while self.ops and self.ops[-1] != _LPAREN:
                self._reduce(self.ops.pop())
            if not self.ops:
                raise _NotSimple  # unmatched ")"
            self.ops.pop()
            self.depth -= 1
            return False
        if tok not in _BINARY_OPS:
            raise _NotSimple  # "(" or "." after a term
        op = _BINARY_OPS[tok]
        while self.ops and _PRECEDENCE[op] <= _PRECEDENCE[self.ops[-1]]:
            self._reduce(self.ops.pop())
        self.ops.append(op)
        return True

    def parse(self, rhs: str) -> tuple:
        """The final noun's (intercept removed, term map)."""
        want_noun = True
        for m in _TOKEN.finditer(rhs):
            want_noun = not self.noun(m) if want_noun else self.operator(m)
        if want_noun:
            raise _NotSimple  # empty right-hand side or a trailing operator
        while self.ops:
            op = self.ops.pop()
            if op == _LPAREN:
                raise _NotSimple
            self._reduce(op)
        if len(self.nouns) != 1:
            raise _NotSimple
        _, _, removed, term_map = self.nouns[0]
        return removed, term_map


_PREFIX_OPS = {"(": _LPAREN, "+": _UPLUS, "-": _UMINUS}
_BINARY_OPS = {"+": _BPLUS, "-": _BMINUS}
# fresh tuples each time: a noun's term dict is mutated in place by _reduce
_CONSTANT_NOUNS = {"0": lambda: (_ZERO, False, True, {}), "1": lambda: (_ONE, True, False, {})}


def _checked_terms(term_map, columns, dtypes, response, require_numeric_response) -> None:
    """Raise :class:`_NotSimple` unless patsy would build exactly these numeric columns."""
    terms = list(term_map.values())
    if len(set(terms)) != len(terms):
        raise _NotSimple  # e.g. x1 + Q("x1"): dpstats refuses duplicated names
    if response is not None and response in terms:
        raise _NotSimple  # y ~ y + x: dropped with a note on patsy's path (dpstats.formula)
    for code, name in term_map.items():
        if code != name and _Q_CLEAN.sub(r"\2", code) != name:
            raise _NotSimple  # a name repr() escapes: patsy's column name would differ
    lookup = _dtype_lookup(columns, dtypes)
    try:
        if not all(_numeric(dt) for dt in set(map(lookup.__getitem__, terms))):
            raise _NotSimple
        if response is not None and require_numeric_response and not _numeric(lookup[response]):
            raise _NotSimple
    except (KeyError, TypeError):  # a column without a dtype, or an unhashable one
        raise _NotSimple from None


def simple_terms(formula: str, columns, dtypes, *, require_numeric_response: bool = True) -> SimpleDesign | None:
    """Terms of ``formula`` as patsy would build them, or None when it is not simple.

    Parameters
    ----------
    formula : str
        ``"lhs ~ rhs"``; see the module docstring for the accepted subset.
    columns : list of str
        Column names of the data, in order (``.`` expands in this order).  Must be unique.
    dtypes : pandas Series (``frame.dtypes``), mapping column -> dtype, or a sequence
        aligned with ``columns``.  Only the dtypes of the final terms and of the
        response are looked at.
    require_numeric_response : bool
        If True (default) the response must have a plain numeric dtype, otherwise None is
        returned (patsy would code a bool or string response as several columns).  Set it
        False when the caller codes the response itself (binary responses).

    Returns
    -------
    SimpleDesign or None
        None whenever the formula uses anything outside the subset, refers to a name that
        is not a column, refers to a column that is not plain numeric, would make patsy
        raise, or would give two terms the same name.  The caller then uses patsy.

    Runs in O(len(formula) + len(columns)) time (parenthesis nesting is limited to
    ``MAX_PAREN_DEPTH``); never imports or calls patsy.
    """
    if not isinstance(formula, str) or formula.count("~") != 1:
        return None
    columns = list(columns)
    colset = set(columns)
    if len(colset) != len(columns):
        return None
    lhs, rhs = formula.split("~", 1)
    try:
        response = _response_of(lhs, colset)
        removed, term_map = _RhsParser(columns, colset, response).parse(rhs)
        _checked_terms(term_map, columns, dtypes, response, require_numeric_response)
    except _NotSimple:
        return None
    return SimpleDesign(response=response, terms=list(term_map.values()), intercept=not removed,
                        codes=list(term_map))


def simple_design_matrix(design: SimpleDesign, frame, *, order: str = "C"):
    """Build ``(X, y)`` for a :class:`SimpleDesign` from a pandas DataFrame.

    Parameters
    ----------
    design : SimpleDesign
    frame : pandas.DataFrame
        Holds every column of ``design.used_columns`` (unique column names).  Missing
        values are not checked here: NaN is copied into X / y as is (patsy would raise),
        so handle them first (dpstats.formula._handle_missing).
    order : "C" or "F"
        Memory layout of X.  "C" (default) is what dpstats' pandas path returns
        (``np.ascontiguousarray``); "F" costs about the same.  (Under pandas 3,
        ``patsy.dmatrices(..., return_type="dataframe").to_numpy()`` is F-ordered.)

    Returns
    -------
    X : ndarray (n, len(design.terms)), float64, a new array (no Intercept column)
    y : ndarray (n,), float64, a new array, or None without a response

    X is the only large allocation: it is filled a few columns at a time
    (``CHUNK_BYTES`` of temporary data), so the peak memory is about X's size.
    """
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F'; got {order!r}.")
    terms = design.terms
    n = len(frame)
    p = len(terms)
    idx = frame.columns.get_indexer(terms)
    if p and (idx < 0).any():
        missing = [t for t, i in zip(terms, idx) if i < 0]
        raise KeyError(f"columns {missing[:10]} are not in the frame.")
    X = np.empty((n, p), dtype=np.float64, order=order)
    width = max(1, min(p, CHUNK_BYTES // max(1, 8 * n)))
    for start in range(0, p, width):
        stop = min(p, start + width)
        X[:, start:stop] = frame.iloc[:, idx[start:stop]].to_numpy(dtype=np.float64)
    y = None
    if design.response is not None:
        y = frame[design.response].to_numpy(dtype=np.float64, copy=True)
    return X, y
