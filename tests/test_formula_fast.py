"""The O(p) formula path (issue 18, item 1) against patsy, formula by formula."""
import ast
import io
import keyword
import re
import time
import tokenize

import numpy as np
import pandas as pd
import patsy
import pytest

from dpstats import formula_fast
from dpstats.formula_fast import SimpleDesign, simple_design_matrix, simple_terms


# --- the reference: dpstats' patsy path, written out here --------------------------------
# (R's "." is expanded as dpstats.formula does it, then patsy parses and builds.)

def _quote(name):
    return name if name.isidentifier() and not keyword.iskeyword(name) else f"Q({name!r})"


def _expand_dot(rhs, columns):
    """Replace every free-standing '.' token (not part of a name, number or call) by all columns."""
    tokens = list(tokenize.generate_tokens(io.StringIO(rhs).readline))
    spans, prev = [], None
    for tok in tokens:
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.OP and tok.string == ".":
            attached = prev is not None and (prev.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)
                                             or prev.string in (")", "]"))
            if not attached:
                spans.append((tok.start[0], tok.start[1]))
        prev = tok
    lines = rhs.splitlines(keepends=True) or [""]
    expansion = "(" + " + ".join(_quote(c) for c in columns) + ")"
    for row, col in reversed(spans):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + expansion + line[col + 1:]
    return "".join(lines)


def _names_in(code):
    names = set()
    for node in ast.walk(ast.parse(code.strip(), mode="eval")):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Q":
            names.add(node.args[0].value)
    return names


def _clean_term_name(name):
    return re.sub(r"""Q\((['"])(.*?)\1\)""", r"\2", name)


def _numeric_frame(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "y": rng.standard_normal(n),
        "x1": rng.standard_normal(n),
        "x2": rng.uniform(1, 2, n),
        "x3": rng.standard_normal(n),
        "x_4": rng.standard_normal(n),
        "a1b2": rng.standard_normal(n),
        "x10": rng.standard_normal(n),
        "_z": rng.standard_normal(n),
        "k": rng.integers(-5, 5, n).astype(np.int64),
        "u8": rng.integers(0, 200, n).astype(np.uint8),
        "f32": rng.standard_normal(n).astype(np.float32),
        "x y": rng.standard_normal(n),
    })


@pytest.fixture
def num():
    return _numeric_frame()


@pytest.fixture
def mixed(num):
    out = num.copy()
    out["flag"] = np.arange(len(out)) % 2 == 0
    out["s"] = ["a", "b", "c"] * (len(out) // 3)
    out["g"] = pd.Categorical(["u", "v"] * (len(out) // 2), categories=["u", "v", "w"])
    out["ni"] = pd.array(np.arange(len(out)), dtype="Int64")
    return out


def patsy_reference(formula, df):
    """What dpstats' patsy path builds: '.' expanded as in dpstats.formula, then patsy."""
    lhs, rhs = formula.split("~", 1)
    lhs_names = _names_in(lhs) if lhs.strip() else set()
    expanded = f"{lhs}~{_expand_dot(rhs, [c for c in df.columns if c not in lhs_names])}"
    if lhs.strip():
        y_df, x_df = patsy.dmatrices(expanded, df, return_type="dataframe", NA_action="raise")
        assert y_df.shape[1] == 1
        y = y_df.to_numpy(dtype=np.float64)[:, 0]
        response = _clean_term_name(lhs.strip())
    else:
        x_df = patsy.dmatrix(expanded, df, return_type="dataframe", NA_action="raise")
        y, response = None, None
    intercept = "Intercept" in x_df.columns
    if intercept:
        assert list(x_df.columns).index("Intercept") == 0
        x_df = x_df.drop(columns=["Intercept"])
    codes = list(x_df.columns)
    return dict(codes=codes, terms=[_clean_term_name(c) for c in codes], intercept=intercept,
                X=x_df.to_numpy(dtype=np.float64), y=y, response=response)


def assert_matches_patsy(formula, df, **kw):
    design = simple_terms(formula, list(df.columns), df.dtypes)
    assert design is not None, f"{formula!r} should take the fast path"
    ref = patsy_reference(formula, df)
    assert design.terms == ref["terms"], formula
    assert design.codes == ref["codes"], formula
    assert design.intercept == ref["intercept"], formula
    assert design.response == ref["response"], formula
    X, y = simple_design_matrix(design, df, **kw)
    assert X.dtype == np.float64 and X.shape == ref["X"].shape
    np.testing.assert_array_equal(X, ref["X"])
    if ref["y"] is None:
        assert y is None
    else:
        assert y.dtype == np.float64
        np.testing.assert_array_equal(y, ref["y"])
    return design


PARITY_FORMULAS = [
    "y ~ .",
    "y ~ . - 1",
    "y ~ 0 + .",
    "y ~ -1 + .",
    "y ~ . + 0",
    "y ~ +0 + .",
    "y ~ . - x3",
    "y ~ . - x1 + x1",
    "y ~ x1 + x1",
    "y ~ x2 + x1 + x2 + x3",
    "y ~ x1 + x2 - x1 + x1",
    "y ~ x3 + . - x3",
    "y ~ 1 + x1",
    "y ~ x1 - 1 + 1",
    "y ~ x1 + 1 + 0 + 1",
    "y ~ x1 + 0 - 0",
    "y ~ x1 - 0",
    "y ~ x1 + (0)",
    "y ~ x1 + +0",   # patsy: a unary plus node is not ZERO, the intercept stays
    "y ~ x1 - -1",   # likewise: the intercept stays
    "y ~ 0 + -0 + x1",
    "~ x1 + x2",
    "~ .",
    "~ 0 + x3 + x1",
    "y ~ (.)",
    "y ~ ((.)) - x_4",
    "y ~ . - (x1 + x2)",
    "y ~ . - (x1 - x2)",
    "y ~ x1 - (x2 - 1)",
    "y ~ (x1 + 0) + x2",
    "y ~ x_4 + a1b2 + x10 + _z",
    "y ~ . - x10 - _z - 1",
    "y ~ . - . + x2",
    "y ~ x1 - x1",
    "y ~ 1",
    "y ~ 0 + x1 + 1",
    "x1 ~ .",
    "x1 ~ . - y",
    "k ~ u8 + f32 + x1",
    "y ~ . - Q('x y')",
    'y ~ . - Q("x y")',  # a different code for patsy: x y stays
    "y ~ Q( 'x y' ) + k",
    'y ~ Q ("x y") - Q("x y") + x2',
    "Q('x y') ~ x1 + x2",
    'Q("x y") ~ . - k',
    "y~x1+x2-x2",
    "y ~ x1 +\n x2",
    "  y   ~\t.  -  x3  ",
]


@pytest.mark.parametrize("formula", PARITY_FORMULAS)
def test_matches_patsy(formula, num):
    assert_matches_patsy(formula, num)


def test_matches_patsy_with_non_numeric_columns_removed(mixed):
    d = assert_matches_patsy("y ~ . - flag - s - g - ni", mixed)
    assert d.terms == [c for c in mixed.columns if c not in ("y", "flag", "s", "g", "ni")]


def test_known_answers(num):
    """Hand-written expectations (independent of patsy) for the main rules."""
    cols, dt = list(num.columns), num.dtypes
    others = [c for c in cols if c != "y"]
    d = simple_terms("y ~ .", cols, dt)
    assert (d.response, d.terms, d.intercept) == ("y", others, True)
    assert d.codes[-1] == "Q('x y')" and d.used_columns == others + ["y"]
    d = simple_terms("y ~ . - x1 + x1", cols, dt)
    assert d.terms == [c for c in others if c != "x1"] + ["x1"]
    d = simple_terms("y ~ x2 + x1 + x2 - 1", cols, dt)
    assert (d.terms, d.intercept) == (["x2", "x1"], False)
    d = simple_terms("~ x1 + x2", cols, dt)
    assert (d.response, d.terms, d.intercept) == (None, ["x1", "x2"], True)
    assert simple_terms("y ~ 0 + .", cols, dt).intercept is False
    assert simple_terms("y ~ . - 1 + 1", cols, dt).intercept is True


FALLBACK_FORMULAS = [
    "y ~ (.)**2",
    "y ~ x1:x2",
    "y ~ I(x1**2)",
    "y ~ np.log(x1)",
    "y ~ C(g)",
    "y ~ x1 + flag",      # bool column
    "y ~ x1 + s",         # string column
    "y ~ g",              # categorical column
    "y ~ x1 + ni",        # pandas extension dtype
    "y ~ x1 + nope",      # unknown name
    "y ~ x1*x2",
    "y ~ x1/x2",
    "y ~ x1 ** 2",
    "y ~ .",              # '.' reaches bool, string and categorical columns
    "y ~ . - flag",       # still s and g
    "y ~ x1 + 2",
    "y ~ x1 + 1.0",
    "y ~ x1 + 01",
    "y ~ -x1",
    "y ~ x1 + Q('x1')",   # two patsy terms named x1
    "y ~ x1 +",
    "y ~ (x1",
    "y ~ x1)",
    "y ~ ",
    "y ~ x1 x2",
    "y ~ x1 ~ x2",
    "x1 + x2",
    "np.log(y) ~ x1",
    "y + x1 ~ x2",
    "flag ~ x1",          # bool response: patsy codes it as two columns
    "s ~ x1",
    "nope ~ x1",
    "y ~ x1 + lambda",
    "y ~ x1 + .5",
    "y ~ x1 + x1.real",
    "y ~ x1.",
    "y ~ (x1) .",
    "y ~ . x1",
    "y ~ x1[0]",
    "y ~ x1 + 'x2'",
    "y ~ x1 # comment",
    "y ~ x1 + Q('x\\ty')",
    "y ~ x1 + Q(\"nope\")",
    "y ~ . + y",  # the response as a term: patsy's path drops it with a note, as R does
]


@pytest.mark.parametrize("formula", FALLBACK_FORMULAS)
def test_falls_back_to_patsy(formula, mixed):
    assert simple_terms(formula, list(mixed.columns), mixed.dtypes) is None


def test_bool_response_accepted_when_the_caller_codes_it(mixed):
    cols = list(mixed.columns)
    assert simple_terms("flag ~ x1 + x2", cols, mixed.dtypes) is None
    d = simple_terms("flag ~ x1 + x2", cols, mixed.dtypes, require_numeric_response=False)
    assert (d.response, d.terms, d.intercept) == ("flag", ["x1", "x2"], True)


def test_dtypes_as_mapping_or_sequence(num):
    cols = list(num.columns)
    want = simple_terms("y ~ . - k", cols, num.dtypes)
    assert simple_terms("y ~ . - k", cols, dict(num.dtypes)) == want
    assert simple_terms("y ~ . - k", cols, list(num.dtypes)) == want
    dts = list(num.dtypes)
    dts[cols.index("x2")] = np.dtype(bool)
    assert simple_terms("y ~ . - k", cols, dts) is None
    assert simple_terms("y ~ . - k - x2", cols, dts) is not None
    with pytest.raises(ValueError):
        simple_terms("y ~ x1", cols, dts[:-1])


def test_duplicated_columns_fall_back(num):
    assert simple_terms("y ~ x1", ["y", "x1", "x1"], [np.dtype(float)] * 3) is None


def test_keyword_columns(num):
    df = num.assign(**{"lambda": num["x1"] * 2, "class": num["x2"] + 1})
    d = assert_matches_patsy("y ~ .", df)
    assert "Q('lambda')" in d.codes and "lambda" in d.terms
    assert_matches_patsy("y ~ . - Q('class')", df)
    with pytest.raises((patsy.PatsyError, SyntaxError)):  # patsy cannot use a bare keyword
        patsy.dmatrices("y ~ x1 + lambda", df)
    assert simple_terms("y ~ x1 + lambda", list(df.columns), df.dtypes) is None
    assert simple_terms("lambda ~ x1", list(df.columns), df.dtypes) is None


def test_paren_depth_limit(num):
    cols = list(num.columns)
    ok = "y ~ " + "(" * formula_fast.MAX_PAREN_DEPTH + "." + ")" * formula_fast.MAX_PAREN_DEPTH
    assert simple_terms(ok, cols, num.dtypes) is not None
    deep = "y ~ " + "(" * (formula_fast.MAX_PAREN_DEPTH + 1) + "." + ")" * (formula_fast.MAX_PAREN_DEPTH + 1)
    assert simple_terms(deep, cols, num.dtypes) is None


# --- random formulas of the subset, against patsy -------------------------------------

def _random_rhs(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.35:
        return rng.choice(["x1", "x2", "x3", "k", "x_4", "Q('x y')", 'Q("x y")', ".", "0", "1", "(.)", "y"])
    if r < 0.45:
        return "-" + rng.choice(["0", "1", "x1"])
    if r < 0.5:
        return "+" + _random_rhs(rng, depth + 1)
    if r < 0.6:
        return "(" + _random_rhs(rng, depth + 1) + ")"
    return _random_rhs(rng, depth + 1) + rng.choice([" + ", " - "]) + _random_rhs(rng, depth + 1)


def test_random_formulas_match_patsy(num):
    rng = np.random.default_rng(20240518)
    cols = list(num.columns)
    fast = 0
    for _ in range(400):
        formula = rng.choice(["y ~ ", "~ ", "x2 ~ "]) + _random_rhs(rng)
        design = simple_terms(formula, cols, num.dtypes)
        try:
            ref = patsy_reference(formula, num)
        except patsy.PatsyError:
            assert design is None, formula
            continue
        if design is None:
            # only when dpstats would refuse duplicated names (x y and Q("x y")), or the response is
            # a term (dropped with a note on patsy's path)
            assert len(set(ref["terms"])) < len(ref["terms"]) or ref["response"] in ref["terms"], formula
            continue
        fast += 1
        assert (design.codes, design.terms, design.intercept, design.response) == (
            ref["codes"], ref["terms"], ref["intercept"], ref["response"]), formula
        X, y = simple_design_matrix(design, num)
        np.testing.assert_array_equal(X, ref["X"])
        if y is not None:
            np.testing.assert_array_equal(y, ref["y"])
    assert fast > 200


# --- the design matrix ---------------------------------------------------------------

def test_design_matrix_layout_and_copies(num):
    d = simple_terms("y ~ . - k", list(num.columns), num.dtypes)
    Xc, y = simple_design_matrix(d, num)
    Xf, _ = simple_design_matrix(d, num, order="F")
    assert Xc.flags.c_contiguous and Xf.flags.f_contiguous
    np.testing.assert_array_equal(Xc, Xf)
    np.testing.assert_array_equal(Xc, num[d.terms].to_numpy(dtype=np.float64))
    assert not np.shares_memory(y, num["y"].to_numpy())
    assert not np.shares_memory(Xc, num["x1"].to_numpy())
    with pytest.raises(ValueError):
        simple_design_matrix(d, num, order="A")
    with pytest.raises(KeyError):
        simple_design_matrix(d, num.drop(columns=["x3"]))


def test_design_matrix_in_many_chunks(monkeypatch):
    rng = np.random.default_rng(3)
    n, p = 40, 120
    df = pd.DataFrame(rng.standard_normal((n, p)), columns=[f"v{j}" for j in range(p)])
    df["y"] = rng.standard_normal(n)
    df["i"] = rng.integers(0, 9, n)
    monkeypatch.setattr(formula_fast, "CHUNK_BYTES", 8 * n * 7)  # 7 columns at a time
    for order in ("C", "F"):
        assert_matches_patsy("y ~ . - v3 + v3", df, order=order)


def test_empty_design(num):
    d = simple_terms("y ~ x1 - x1", list(num.columns), num.dtypes)
    assert d.terms == [] and d.intercept
    X, y = simple_design_matrix(d, num)
    assert X.shape == (len(num), 0) and y.shape == (len(num),)


# --- linear time ---------------------------------------------------------------------

def test_wide_formulas_take_linear_time():
    p = 100_000
    cols = ["y"] + [f"x{j}" for j in range(p)]
    dtypes = [np.dtype(np.float64)] * (p + 1)
    t0 = time.perf_counter()
    d = simple_terms("y ~ .", cols, dtypes)
    assert d.terms == cols[1:] and d.intercept
    explicit = "y ~ " + " + ".join(cols[1:])
    d = simple_terms(explicit, cols, dtypes)
    assert d.terms == cols[1:]
    removed = "y ~ . - " + " - ".join(cols[1: p // 2 + 1]) + " + x0"
    d = simple_terms(removed, cols, dtypes)
    assert d.terms == cols[p // 2 + 1:] + ["x0"]
    # patsy needs minutes at p = 10^4; a quadratic step here would need far more than this.
    assert time.perf_counter() - t0 < 10.0


def test_simple_design_is_a_dataclass():
    d = SimpleDesign(response=None, terms=["a"], intercept=False, codes=["a"])
    assert d.used_columns == ["a"]


def test_prepare_needed_reads_the_dtypes_of_the_used_columns_only(mixed):
    # The wide-frame shortcut (one pass over the distinct dtypes) must agree with asking each
    # used column: pandas' path exactly when a used column has an extension dtype.
    from dpstats.formula import prepare_needed, plan_design

    for formula in ("y ~ x1 + ni", "y ~ x1 + x2", "y ~ ni"):
        plan = plan_design(formula, mixed.dtypes, len(mixed))
        used = list(plan.used)
        expected = any(pd.api.types.is_extension_array_dtype(mixed[c].dtype) for c in used)
        assert prepare_needed(mixed, plan, used) == expected
        assert expected == ("ni" in used)
