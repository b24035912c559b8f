"""R's spellings in a formula, rewritten into patsy's before the formula is parsed.

R users write column names and terms that Python cannot parse or reads differently:

* dotted names (``Infant.Mortality``, ``Acid.Conc.``): Python reads ``a.b`` as an
  attribute; a dotted run of name characters that is a column of the data is rewritten to
  ``Q("Infant.Mortality")``;
* Python's reserved words as names (``class ~ .``, ``y ~ lambda``): a reserved word that is
  a column is rewritten to ``Q("class")``, except the ones Python uses as operators in an
  expression (``and``, ``or``, ``not``, ``in``, ``is``, ``if``, ``else``) and the values
  ``True``, ``False``, ``None``: for those the parse error says to write ``Q("in")``;
* backticks (`` `my var` ``): R's quoting of any name, rewritten to ``Q("my var")``;
* ``poly(x, d)``: R's orthogonal polynomials are centred and scaled with the data's own
  moments (``poly`` computes them from the column), which would spend privacy outside the
  budget.  ``poly(x, d)`` is read as the raw powers ``x + I(x**2) + ... + I(x**d)``, R's
  ``poly(x, d, raw = TRUE)``, with a :class:`FormulaNote` saying so; ``raw = TRUE`` is read
  the same way silently, and ``raw = FALSE`` is refused with the fix.  The powers' ranges
  follow from the column's range (:mod:`dpstats.derived_ranges`).

Some R habits have no rewrite; they are refused before anything is charged, with the fix:

* ``^`` between terms (``y ~ (a + b)^2``, ``y ~ (.)^2``, ``y ~ a^2``): R's interaction
  expansion is patsy's ``**``, ``(a + b)**2`` (:func:`refuse_r_power`; inside a call such as
  ``I(x^2)`` Python's ``^`` is a bit-wise XOR, refused by :mod:`dpstats.row_functions`);
* ``factor(x)`` (and ``as.factor(x)``): written ``C(x, levels=[...])`` with declared levels,
  or a pandas Categorical with fixed categories (levels read from the data are data);
* ``offset(x)``: a term with its coefficient fixed at 1, not part of a selection; subtract
  it from the response instead, ``I(y - x) ~ ...``.

Only the formula's text and the column names are read (no data value).  Nothing inside a
string literal is touched.
"""
from __future__ import annotations

import ast
import keyword
import re
import warnings

from .errors import FormulaError, FormulaNote
from .method_options import is_integer

__all__ = ["FormulaNote", "rewrite_r_spellings", "refuse_r_power", "refuse_unbalanced", "dotted_names",
           "OPERATOR_KEYWORDS"]

#: Reserved words Python uses inside expressions: never rewritten, even when a column has the name.
OPERATOR_KEYWORDS = frozenset({"and", "or", "not", "in", "is", "if", "else", "True", "False", "None"})
#: A run of R name characters (letters, digits, '_' and '.'), not starting with a digit.
_RUN = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*")
_POLY = re.compile(r"(?<![A-Za-z0-9_.])poly\s*\(")
_R_LOGICAL = {"TRUE": True, "T": True, "FALSE": False, "F": False}
#: R calls that have no rewrite: refused with the fix (_refuse_r_calls).
_R_CALL = re.compile(r"(?<![A-Za-z0-9_.])(factor|as\.factor|offset)\s*\(")


def _segments(text):
    """(is_string, piece) pieces of ``text``: Python string literals apart from the rest."""
    out, start, i, n = [], 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise FormulaError(f"formula {text!r} has an unterminated string literal.")
            if start < i:
                out.append((False, text[start:i]))
            out.append((True, text[i:j + 1]))
            start = i = j + 1
            continue
        i += 1
    if start < n:
        out.append((False, text[start:]))
    return out


_CLOSING = {"(": ")", "[": "]", "{": "}"}
_OPENING = {v: k for k, v in _CLOSING.items()}


def refuse_unbalanced(formula: str) -> None:
    """Refuse a formula whose brackets or quotes do not pair up, in plain words.

    Python's tokenizer and parser would say ``('EOF in multi-line statement', (2, 0))`` or
    ``'(' was never closed``; this reads the text once (string literals and R's backticks
    skipped) and names the first bracket or quote that is not closed or has no opening.
    """
    stack = []  # (bracket, position)
    i, n = 0, len(formula)
    what = None
    while i < n and what is None:
        ch = formula[i]
        if ch in "'\"`":
            j = i + 1
            while j < n and formula[j] != ch:
                j += 2 if (formula[j] == "\\" and ch != "`") else 1
            if j >= n:
                what = ("an unmatched backtick: R's `name` quoting needs two" if ch == "`" else
                        f"a quote ({ch}) is not closed: a quoted name such as Q({ch}x{ch}) needs its closing {ch}")
            i = j + 1
            continue
        if ch in _CLOSING:
            stack.append((ch, i))
        elif ch in _OPENING:
            if not stack:
                what = f"a {ch!r} has no matching {_OPENING[ch]!r} before it; remove it or add the {_OPENING[ch]!r}"
            elif stack[-1][0] != _OPENING[ch]:
                what = (f"a {ch!r} closes a {stack[-1][0]!r}; close the {stack[-1][0]!r} with a "
                        f"{_CLOSING[stack[-1][0]]!r}")
            else:
                stack.pop()
        i += 1
    if what is None and stack:
        opened, at = stack[-1]
        name = re.search(r"[A-Za-z0-9_.]*$", formula[:at]).group(0)
        what = (f"the {opened!r} of {name + opened!r} is not closed" if name else f"a {opened!r} is not closed") + \
            f"; add the missing {_CLOSING[opened]!r}"
    if what is not None:
        raise FormulaError(f"formula {formula!r} does not parse: {what}.")


def _quote(name):
    return f"Q({name!r})"


def _backticks(text):
    """`name` (anything but a backtick inside, as in R) to Q('name'); string literals kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "`":
            j = text.find("`", i + 1)
            if j < 0:
                raise FormulaError(f"formula {text!r} has an unmatched backtick; R's `name` quoting needs two.")
            out.append(_quote(text[i + 1:j]))
            i = j + 1
        elif ch in "'\"":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _names(text, columns):
    colset = set(columns)

    def replace(m):
        run = m.group(0)
        start = m.start()
        before = piece[start - 1] if start > 0 else ""
        if before.isdigit():
            return run  # part of a number such as 1.5e3
        if run in colset and ("." in run or (keyword.iskeyword(run) and run not in OPERATOR_KEYWORDS)):
            return _quote(run)
        return run

    out = []
    for is_string, piece in _segments(text):
        out.append(piece if is_string else _RUN.sub(replace, piece))
    return "".join(out)


def _matching_paren(text, open_at, after="poly"):
    depth = 0
    i = open_at
    while i < len(text):
        ch = text[i]
        if ch in "'\"":
            j = i + 1
            while j < len(text) and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise FormulaError(f"formula {text!r} has an unclosed parenthesis after {after}.")


def _poly(text, notes, columns):
    while True:
        m, offset = None, 0
        for is_string, piece in _segments(text):  # poly( outside string literals only
            found = None if is_string else _POLY.search(piece)
            if found is not None:
                m = found
                break
            offset += len(piece)
        if m is None:
            return text
        start = offset + m.start()
        open_at = offset + m.end() - 1
        close_at = _matching_paren(text, open_at)
        call = text[start:close_at + 1]
        inner = text[open_at + 1:close_at]
        text = text[:start] + _expand_poly(call, _names(inner, columns), notes) + text[close_at + 1:]


def _expand_poly(call, inner, notes):
    fix = ("write the powers yourself, e.g. x + I(x**2) (R's poly(x, 2, raw = TRUE)), or poly(x, 2, raw = TRUE)")
    try:
        node = ast.parse(f"f({inner})", mode="eval").body
    except SyntaxError:
        raise FormulaError(f"cannot parse {call!r}; {fix}.") from None
    args, kwargs = list(node.args), {kw.arg: kw.value for kw in node.keywords}
    if not args or len(args) > 2 or set(kwargs) - {"degree", "raw"} or ("degree" in kwargs) == (len(args) == 2):
        raise FormulaError(f"{call!r}: dpstats reads poly(x, degree) or poly(x, degree, raw = TRUE); {fix}.")
    degree_node = kwargs.get("degree", args[1] if len(args) == 2 else None)
    if not (isinstance(degree_node, ast.Constant) and is_integer(degree_node.value)
            and 1 <= degree_node.value <= 20):
        raise FormulaError(f"{call!r}: the degree must be a whole number from 1 to 20.")
    degree = degree_node.value
    raw = None
    if "raw" in kwargs:
        value = kwargs["raw"]
        if isinstance(value, ast.Name) and value.id in _R_LOGICAL:
            raw = _R_LOGICAL[value.id]
        elif isinstance(value, ast.Constant) and isinstance(value.value, bool):
            raw = value.value
        else:
            raise FormulaError(f"{call!r}: raw must be TRUE or FALSE.")
    base = ast.get_source_segment(f"f({inner})", args[0]).strip()
    if raw is False:
        raise FormulaError(
            f"{call!r} asks for R's orthogonal polynomials, which are centred and scaled with the data's own "
            "moments: that would spend privacy outside the budget. Use raw powers instead: "
            f"poly({base}, {degree}, raw = TRUE), or write {_powers(base, degree)}.")
    powers = _powers(base, degree)
    if raw is None:
        shown = re.sub(r"""Q\((['"])(.*?)\1\)""", r"\2", powers)
        notes.append(
            f"{call} is read as the raw powers {shown} (R's poly(..., raw = TRUE)): R's default orthogonal "
            "polynomials are centred and scaled with the data's own moments, which would spend privacy outside "
            "the budget. The powers' ranges follow from the column's range. Write raw = TRUE to silence this note.")
    return f"({powers})"


def _powers(base, degree):
    # A name, Q("name") or a call such as np.log(x) is one factor as written; anything
    # else (x + z) is wrapped in I().
    simple = isinstance(ast.parse(base, mode="eval").body, (ast.Name, ast.Call))
    first = base if simple else f"I({base})"
    inner = base if simple else f"({base})"
    return " + ".join([first] + [f"I({inner}**{k})" for k in range(2, degree + 1)])


def _first_argument(inner):
    """The first argument of a call's argument text, as written (all of it when it does not parse)."""
    try:
        node = ast.parse(f"f({inner})", mode="eval").body
    except SyntaxError:
        return inner.strip()
    if not node.args:
        return inner.strip()
    return ast.get_source_segment(f"f({inner})", node.args[0]).strip()


def _refuse_r_calls(text):
    """R's factor(x), as.factor(x) and offset(x), refused with the patsy spelling or the fix."""
    offset = 0
    for is_string, piece in _segments(text):
        m = None if is_string else _R_CALL.search(piece)
        if m is None:
            offset += len(piece)
            continue
        open_at = offset + m.end() - 1
        close_at = _matching_paren(text, open_at, after=m.group(1))
        call = text[offset + m.start():close_at + 1]
        arg = _first_argument(text[open_at + 1:close_at]) or "x"
        if m.group(1) == "offset":
            lhs = _lhs(text)
            operand = arg if re.fullmatch(r"[A-Za-z_.][A-Za-z0-9_.]*|Q\(.*\)", arg) else f"({arg})"
            response = f"I({lhs} - {operand})" if lhs else f"I(y - {operand})"
            raise FormulaError(
                f"the formula term {call!r} is R's offset (a term with its coefficient fixed at 1): offsets are not "
                "supported in dpstats' selection. Subtract it from the response instead: write the response as "
                f"{response} and drop {call} from the right-hand side (or add a column with the difference to "
                "the data before the call).")
        raise FormulaError(
            f"the formula term {call!r} is R's {m.group(1)}(): here a categorical term is written "
            f"C({arg}, levels=[...]) with its levels declared (for example C({arg}, levels=[0, 1, 2])), or make "
            f"{arg} a pandas Categorical with fixed categories before the call. Levels read from the data would "
            "reveal which values occur.")


def _lhs(text):
    """The left-hand side of ``text`` (before the first '~' outside string literals), stripped."""
    out = []
    for is_string, piece in _segments(text):
        if not is_string and "~" in piece:
            out.append(piece.split("~", 1)[0])
            break
        out.append(piece)
    return "".join(out).strip()


def _carets(formula):
    """The '^' of ``formula`` that stand between terms: right of '~', outside calls, brackets and
    string literals.  Returns (positions, closed) where ``closed`` maps the position of each ')'
    to (position of its '(', whether that bracket belongs to a call)."""
    hits, stack, closed = [], [], {}
    tilde = False
    i, n = 0, len(formula)
    while i < n:
        ch = formula[i]
        if ch in "'\"`":
            j = i + 1
            while j < n and formula[j] != ch:
                j += 2 if formula[j] == "\\" and ch != "`" else 1
            i = j + 1
            continue
        if ch in "([{":
            before = formula[:i].rstrip()
            call = ch != "(" or (bool(before) and (before[-1].isalnum() or before[-1] in "_.`)]"))
            stack.append((i, call))
        elif ch in ")]}":
            if stack:
                closed[i] = stack.pop()
        elif ch == "~" and not stack:
            tilde = True
        elif ch == "^" and tilde and not any(call for _, call in stack):
            hits.append(i)
        i += 1
    return hits, closed


def _left_operand(formula, pos, closed):
    """(kind, text) of the operand left of the '^' at ``pos``: kind "group" for a bracketed
    sum or R's '.', "term" for a single term."""
    end = len(formula[:pos].rstrip())
    last = end - 1
    if last < 0:
        return "term", ""
    ch = formula[last]
    if ch == ")" and last in closed and not closed[last][1]:
        return "group", formula[closed[last][0]:end]
    if ch == "." and (last == 0 or not re.match(r"[A-Za-z0-9_.]", formula[last - 1])):
        return "dot", "."
    start = last
    if ch == ")" and last in closed:
        start = closed[last][0]
    elif ch == "`":
        start = formula.rfind("`", 0, last)
        return "term", formula[max(start, 0):end]
    while start > 0 and re.match(r"[A-Za-z0-9_.]", formula[start - 1]):
        start -= 1
    return "term", formula[start:end]


def refuse_r_power(formula: str) -> None:
    """Refuse R's ``^`` between formula terms with its patsy spelling ``**``.

    R reads ``(a + b)^2`` as all main effects and interactions up to order 2 (``a + b + a:b``),
    patsy as ``(a + b)**2``; R's ``a^2`` of a single term is ``a`` (as is patsy's ``a**2``).
    A ``^`` inside a call (``I(x^2)``) is Python's bit-wise XOR and is left to the row-wise
    check.  Only the formula's text is read.
    """
    if "^" not in formula:
        return
    hits, closed = _carets(formula)
    if not hits:
        return
    fixed = formula
    kinds = []
    for pos in reversed(hits):
        kind, operand = _left_operand(formula, pos, closed)
        kinds.append((kind, operand, pos))
        fixed = fixed[:pos] + "**" + fixed[pos + 1:]
        if kind == "dot":
            at = len(formula[:pos].rstrip()) - 1
            fixed = fixed[:at] + "(.)" + fixed[at + 1:]
    kinds.reverse()
    if any(kind != "term" for kind, _, _ in kinds):
        raise FormulaError(
            f"formula {formula!r} uses R's '^' for interactions: R's (...)^2 is written (...)**2 here (all main "
            f"effects and their interactions up to order 2): {fixed!r}. In Python '^' is a bit-wise XOR.")
    _, term, pos = kinds[0]
    power = re.match(r"\s*([A-Za-z0-9_.]+)", formula[pos + 1:])
    power = power.group(1) if power else "2"
    square = "its square" if power == "2" else "the power"
    raise FormulaError(
        f"formula {formula!r} uses R's '^' on the single term {term}: for {square} write I({term}**{power}). "
        f"(In an R formula {term}^{power} is the term's interaction with itself, which is just {term}; here that "
        f"is {term}**{power}, or simply {term}. R's (...)^2 is written (...)**2 here.)")


def dotted_names(text):
    """R's dotted names as written in ``text`` (``Miss.Col``, ``Acid.Conc.``, ``x.1``): runs of
    name characters with a '.' and a letter, outside string literals, not part of a number and
    not called (``np.log(x)``, ``x.mean()``).  The caller keeps those that are not columns."""
    out = []
    for is_string, piece in _segments(text):
        if is_string:
            continue
        for m in _RUN.finditer(piece):
            run = m.group(0)
            if "." not in run or not re.search(r"[A-Za-z_]", run) or re.match(r"\.[0-9]", run):
                continue  # a plain name, R's '.', or a number such as .5e3
            if m.start() > 0 and piece[m.start() - 1].isdigit():
                continue  # part of a number such as 1.5e3
            if re.match(r"\s*\(", piece[m.end():]):
                continue  # a call: np.log(...), x.mean()
            out.append(run)
    return out


def rewrite_r_spellings(formula: str, columns) -> str:
    """``formula`` with R's spellings rewritten to patsy's (see the module docstring).

    Emits a :class:`FormulaNote` for each ``poly(x, d)`` read as raw powers.  Returns the
    formula unchanged when it has none of them.
    """
    text = formula
    if "%in%" in text and any("%in%" in piece for is_string, piece in _segments(text) if not is_string):
        raise FormulaError("R's %in% (nesting) is written ':' here: 'a %in% b' is the interaction a:b.")
    if "`" in text:
        text = _backticks(text)
    if "factor" in text or "offset" in text:
        _refuse_r_calls(text)
    if "poly" in text:  # before the names, so that the note shows poly(x.1, 2) as written
        notes = []
        text = _poly(text, notes, columns)
        for note in notes:
            warnings.warn(note, FormulaNote, stacklevel=4)
    return _names(text, columns)


def spelling_hint(formula: str, columns) -> str:
    """A hint for a formula that does not parse: columns named like Python's operator words."""
    found = [c for c in columns if c in OPERATOR_KEYWORDS and re.search(rf"(?<![\w.'\"]){c}(?![\w.'\"])", formula)]
    if not found:
        return ""
    return (" " + " ".join(f'The column {c!r} is a reserved word in Python: write it Q("{c}").' for c in found))
