"""Ranges of derived terms from public column ranges (dpstats.derived_ranges).

The oracle is brute force: each expression is evaluated with numpy on a grid of the column
box (its corners, the critical points of the functions used, and random interior points)
and the derived range must contain every value; where every column occurs once in the
expression the derived ends must also be attained (interval arithmetic is then exact).
"""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.derived_ranges import RangeUnavailable, expression_range
from dpstats.formula import build_model_frame, plan_pandas_design
from dpstats.privacy.bounds import complete_bounds

# (expression, exact): exact when every column occurs once (the ends are then attained).
EXPRESSIONS = [
    ("a * b", True), ("a * b * c", True), ("a + b - c", True), ("a / b", True), ("I(a ** 2)", True),
    ("I(a ** 3)", True), ("I(b ** -2)", True), ("I(b ** 0.5)", True), ("I(2 ** a)", True),
    ("I(b ** c)", True), ("np.log(b)", True), ("np.log10(b) * a", True), ("np.log1p(b)", True),
    ("np.sqrt(b)", True), ("np.exp(a)", True), ("np.expm1(c)", True), ("I((a - 50) / 10)", True),
    ("I((c + 1.5) * 2)", True), ("np.abs(a)", True), ("abs(c)", True), ("np.square(a)", True),
    ("np.sin(a)", True), ("np.cos(c)", True), ("np.tanh(a)", True), ("np.arctan(c)", True),
    ("np.cosh(a)", True), ("np.sinh(c)", True), ("np.cbrt(a)", True), ("np.floor(a)", True),
    ("np.ceil(c)", True), ("np.sign(a)", True), ("np.reciprocal(b)", True), ("np.clip(a, -1, 1)", True),
    ("np.minimum(a, b)", True), ("np.maximum(a, c)", True), ("np.hypot(a, c)", True), ("np.power(b, 1.5)", True),
    ("I(a * a)", True), ("I((a > 0) * b)", True), ("I((c <= 1) * 2.0 - b)", True), ("I(a // 2)", True), ("np.exp2(c) - a", True),
    ("np.where(a > 0, b, c)", False), ("I(a % 3)", False), ("I(a - a ** 2)", False), ("I(a * b + a)", False),
    ("I((c <= 1) + (b > a))", True), ("I((c <= 1) * (b > a) * 3.0)", True),  # numpy: bool + bool is 'or'
    ("I(True + (a > 0))", True),

    ("np.arcsinh(a) * np.log2(b)", True), ("np.sqrt(b, dtype='float64')", True),
]


def _grid(lo, hi, gen, k=6):
    """Candidate values of one column: its ends, the critical points inside, random points."""
    points = {lo, hi, *gen.uniform(lo, hi, size=k)}
    for c in (0.0, -1.0, 1.0):
        if lo <= c <= hi:
            points.add(c)
    for m in range(math.ceil(lo / (math.pi / 2)), math.floor(hi / (math.pi / 2)) + 1):
        points.add(m * math.pi / 2)  # extrema of sin and cos
    return np.array(sorted(points))


def _boxes(n=25, seed=0):
    gen = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a = np.sort(gen.uniform(-6, 6, size=2))
        b = np.sort(gen.uniform(0.1, 5, size=2))  # positive: logs, roots, divisors
        c = np.sort(gen.uniform(-3, 3, size=2))
        out.append({"a": tuple(a), "b": tuple(b), "c": tuple(c)})
    return out


def _evaluate(code, values):
    env = {"np": np, "I": lambda v: v, "abs": abs}
    with np.errstate(all="ignore"):
        return np.asarray(eval(code, env, dict(values)), dtype=np.float64)  # noqa: S307 - test oracle


@pytest.mark.parametrize("code, exact", EXPRESSIONS, ids=[e for e, _ in EXPRESSIONS])
def test_derived_range_against_brute_force(code, exact):
    gen = np.random.default_rng(abs(hash(code)) % 2**32)
    for box in _boxes():
        lo, hi, used = expression_range(code, lambda name: box[name])
        grids = [_grid(*box[name], gen) for name in ("a", "b", "c")]
        mesh = np.meshgrid(*grids, indexing="ij")
        values = _evaluate(code, {name: m.ravel() for name, m in zip("abc", mesh)})
        values = np.broadcast_to(values, mesh[0].ravel().shape)
        tol = 1e-9 * max(1.0, abs(lo), abs(hi))
        assert values.min() >= lo - tol and values.max() <= hi + tol, (code, box, lo, hi)
        if exact:
            assert values.min() == pytest.approx(lo, abs=tol) and values.max() == pytest.approx(hi, abs=tol), (
                code, box, (lo, hi), (values.min(), values.max()))
        assert set(used) <= {"a", "b", "c"}


@pytest.mark.parametrize("code, why", [
    ("np.log(a)", "above 0"), ("np.sqrt(c)", "at least 0"), ("I(a / c)", "contains 0"),
    ("I(c ** 0.5)", "non-integer power"), ("np.arcsin(a)", "at most 1"), ("np.tan(a)", "pole"),
    ("np.exp(I(a * 1000))", "overflows"), ("np.log(d)", "no range"),
])
def test_an_undefined_or_unknown_range_is_named(code, why):
    box = {"a": (-6.0, 6.0), "b": (1.0, 2.0), "c": (-3.0, 3.0)}

    def column_range(name):
        if name not in box:
            raise RangeUnavailable(f"column {name!r} has no range")
        return box[name]

    with pytest.raises(RangeUnavailable, match=why):
        expression_range(code, column_range)


def test_every_allowed_function_has_a_rule_or_a_clear_refusal():
    from dpstats.row_functions import ROW_FUNCTIONS

    box = {"a": (0.2, 0.7), "b": (1.5, 2.0)}
    for name in sorted(ROW_FUNCTIONS):
        for args in ("a", "a, b", "a > 0, a, b"):
            code = f"np.{name}({args})"
            try:
                lo, hi, _ = expression_range(code, lambda n: box[n])
            except RangeUnavailable:
                continue
            a, b = np.meshgrid(np.linspace(0.2, 0.7, 51), np.linspace(1.5, 2.0, 51))
            try:
                values = _evaluate(code, {"a": a.ravel(), "b": b.ravel()})
            except (TypeError, ValueError):
                continue  # numpy refuses the call itself (patsy fails before the charge)
            values = values[np.isfinite(values)]
            assert values.min() >= lo - 1e-12 and values.max() <= hi + 1e-12, code


# ----------------------------------------------------------------- formula terms
def _frame(grid_a, grid_b, levels_g, levels_h, y=0.0):
    rows = list(itertools.product(grid_a, grid_b, levels_g, levels_h))
    frame = pd.DataFrame(rows, columns=["a", "b", "g", "h"])
    frame["g"] = pd.Categorical(frame["g"], categories=levels_g)
    frame["h"] = pd.Categorical(frame["h"], categories=levels_h)
    frame["y"] = np.linspace(1, 5, len(frame)) + y
    return frame


TERM_FORMULAS = [
    "y ~ (a + b + g)**2",
    "y ~ a:C(g, Sum) + C(g, Sum):C(h) + np.log(b):h + I(a**2)",
    "y ~ C(g, Helmert) * I((b - 2) / 3) + np.exp(a):b",
    "y ~ C(h, Diff):a + C(g, Poly) - 1",
]


@pytest.mark.parametrize("formula", TERM_FORMULAS)
def test_term_ranges_match_the_design_on_every_grid_point(formula):
    # The design columns built by patsy on every combination of grid values and levels:
    # each term's derived range is exactly [min, max] of its column (the ends are attained).
    box = {"a": (-2.0, 3.0), "b": (0.5, 4.0), "y": (0.0, 10.0)}
    gen = np.random.default_rng(3)
    frame = _frame(_grid(*box["a"], gen, 3), _grid(*box["b"], gen, 3), ["u", "v", "w"], ["p", "q"])
    plan, _ = plan_pandas_design(formula, frame)
    ranges, derived = complete_bounds(box, plan, columns=list(frame.columns))
    X = build_model_frame(formula, frame).X
    for j, term in enumerate(plan.terms):
        lo, hi = ranges[term]
        if "range widened" in derived.get(term, ""):  # a constant column: range widened to include 0
            assert lo <= X[:, j].min() == X[:, j].max() <= hi and 0 in (lo, hi)
            continue
        assert X[:, j].min() == pytest.approx(lo, abs=1e-12), term
        assert X[:, j].max() == pytest.approx(hi, abs=1e-12), term
        assert term in derived or term in box


def test_a_term_given_directly_wins_over_the_derived_range():
    frame = _frame([0.0, 1.0], [1.0, 2.0], ["u", "v"], ["p", "q"])
    plan, _ = plan_pandas_design("y ~ a:b + np.log(b)", frame)
    ranges, derived = complete_bounds({"a": (0, 1), "b": (1, 2), "y": (0, 9), "a:b": (0, 1.5)}, plan,
                                      columns=list(frame.columns))
    assert ranges["a:b"] == (0.0, 1.5) and "a:b" not in derived
    assert ranges["np.log(b)"] == (0.0, pytest.approx(math.log(2))) and "b [1, 2]" in derived["np.log(b)"]


def data(n=300, seed=0):
    gen = np.random.default_rng(seed)
    frame = pd.DataFrame({"x1": gen.uniform(0, 10, n), "x2": gen.uniform(1, 5, n), "x3": gen.uniform(-1, 1, n),
                          "id": np.arange(n, dtype=float)})
    frame["y"] = frame.x1 * frame.x2 / 10 + np.log(frame.x2) + gen.normal(scale=0.3, size=n)
    return frame


CODEBOOK = {"x1": (0, 10), "x2": (1, 5), "x3": (-1, 1), "y": (-5, 15), "id": (0, 10000), "other": (0, 1)}


def test_dp_select_derives_the_ranges_and_says_how():
    frame = data()
    codebook = {k: v for k, v in CODEBOOK.items() if k != "other"}
    fit = dpstats.dp_select("y ~ (x1 + x2 + x3)**2 + np.log(x2) + I((x1 - 5) / 5)", frame, method="exponential",
                            epsilon=1, s=2, bounds=codebook, random_state=0)
    release = fit.release()
    used, derived = release["bounds_used"], release["bounds_derived"]
    assert used["x1:x2"] == [0.0, 50.0] and used["x1:x3"] == [-10.0, 10.0] and used["x2:x3"] == [-5.0, 5.0]
    assert used["I((x1 - 5) / 5)"] == [-1.0, 1.0]
    assert used["np.log(x2)"] == [0.0, pytest.approx(math.log(5))]
    assert set(derived) == {"x1:x2", "x1:x3", "x2:x3", "np.log(x2)", "I((x1 - 5) / 5)"}
    assert derived["x1:x2"] == "product: x1 [0, 10] x x2 [1, 5]"
    assert "id" not in used  # a codebook column the formula does not use
    text = str(fit.summary())
    assert "product: x1 [0, 10] x x2 [1, 5]" in text and "from" in text
    assert "ranges (public; 5 derived from the given ones, see summary())" in str(fit)


def test_a_codebook_with_extra_columns_is_accepted_but_a_typo_is_refused():
    frame = data()
    codebook = {k: v for k, v in CODEBOOK.items() if k != "other"}
    fit = dpstats.dp_select("y ~ x1 + x2", frame, method="exponential", epsilon=1, s=1, bounds=codebook,
                            random_state=0)
    assert set(fit.release()["bounds_used"]) == {"x1", "x2", "y"}
    with pytest.raises(dpstats.InvalidArgumentError, match=r"\['other'\], which are neither terms of the formula .* nor columns of data"):
        dpstats.dp_select("y ~ x1 + x2", frame, method="exponential", epsilon=1, s=1, bounds=CODEBOOK)


def test_an_underivable_range_is_named_before_the_charge_with_what_to_supply():
    frame = data()
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.InvalidArgumentError) as err:
        dpstats.dp_select("y ~ np.log(x3 + 1) + x1:id + np.sqrt(x2)", frame, method="exponential", epsilon=1, s=1,
                          bounds={"x1": (0, 10), "x2": (1, 5), "x3": (-1, 1), "y": (-5, 15)}, accountant=acc)
    message = str(err.value)
    assert "'np.log(x3 + 1)': np.log is defined only for values above 0" in message
    assert "range is [0, 2]" in message and "or give 'np.log(x3 + 1)': (lower, upper) directly" in message
    assert "'x1:id': column 'id' has no range: add 'id': (lower, upper) to bounds" in message
    assert "np.sqrt(x2)" not in message  # derivable
    assert acc.spent() == (0.0, 0.0)


def test_a_derived_response():
    frame = data()
    frame["y"] = frame["y"].abs() + 1
    fit = dpstats.dp_select("np.log(y) ~ x1 + x2", frame, method="exponential", epsilon=1, s=1,
                            bounds={"x1": (0, 10), "x2": (1, 5), "y": (1, 20)}, random_state=0)
    assert fit.release()["bounds_used"]["np.log(y)"] == [0.0, pytest.approx(math.log(20))]
    assert "from y [1, 20]" in fit.release()["bounds_derived"]["np.log(y)"]


def test_derived_ranges_reach_estimate():
    frame = data()
    fit = dpstats.dp_select("y ~ x1:x2 + x3 + np.log(x2)", frame, method="exponential", epsilon=float("inf"), s=2,
                            bounds={k: v for k, v in CODEBOOK.items() if k != "other"},
                            random_state=0)
    est = fit.estimate(epsilon=1, random_state=0)
    for term in fit.support:
        assert est.bounds_used[term] == fit.release()["bounds_used"][term]


def test_estimate_after_a_bound_free_selection_derives_the_selected_ranges():
    frame = data()
    codebook = {k: v for k, v in CODEBOOK.items() if k != "other"}
    fit = dpstats.dp_select("y ~ x1:x2 + x3 + np.log(x2)", frame, method="kendall", epsilon=float("inf"), k=2,
                            random_state=0)
    est = fit.estimate(epsilon=1, bounds=codebook, random_state=0)
    expected = {"x1:x2": [0.0, 50.0], "x3": [-1.0, 1.0], "np.log(x2)": [0.0, pytest.approx(math.log(5))]}
    for term in fit.support:
        assert est.bounds_used[term] == expected[term]
    assert "x1:x2" in fit.support  # y = x1 x2 / 10 + log(x2) + noise
    with pytest.raises(dpstats.InvalidArgumentError, match="'x1:x2': column 'x1' has no range"):
        fit.estimate(epsilon=1, bounds={"x2": (1, 5), "x3": (-1, 1), "y": (-5, 15)})


# ------------------------------------------------------------- real data, not bundled
STATECRIME_RANGES = {  # statsmodels' statecrime NOTE: 50 states and DC, 2009
    "hs_grad": (0, 100),    # percent high-school graduates
    "poverty": (0, 100),    # percent below the poverty line
    "single": (0, 100),     # single-parent share of family households, a percentage
    "white": (0, 100),      # percent white only
    "urban": (0, 100),      # percent in urbanised areas
    "violent": (0, 3000),   # violent crimes per 100,000: below 3,000 for every state and DC throughout the
                            # FBI UCR series (DC's early-1990s peak was the highest)
    "murder": (0, 100),     # murders per 100,000: DC's 1991 peak, about 80, is the highest on record
}


def test_all_pairwise_interactions_on_real_data_from_a_codebook():
    # The case: y ~ (.)**2 with a range for every column only (murder, a part of
    # violent, is left out).  At epsilon = inf the
    # exact exponential mechanism returns the least-squares best subset of the 15 terms with
    # an intercept (the ranges clip nothing, and the map to [-1, 1] is affine per column, so
    # residual sums of squares keep their order; a wide radius keeps the ball out of it).
    sm = pytest.importorskip("statsmodels.api")
    frame = sm.datasets.statecrime.load_pandas().data.reset_index(drop=True)
    fit = dpstats.dp_select("violent ~ (. - murder)**2", frame, method="exponential", epsilon=float("inf"), s=2,
                            bounds=STATECRIME_RANGES, radius=1e6, random_state=0)
    columns = [c for c in frame.columns if c not in ("violent", "murder")]
    pairs = list(itertools.combinations(columns, 2))
    assert len(fit.terms) == 15 and set(fit.terms) == set(columns) | {f"{a}:{b}" for a, b in pairs}
    used = fit.release()["bounds_used"]
    design = {c: frame[c].to_numpy(float) for c in columns}
    for a, b in pairs:
        corners = [x * y for x in STATECRIME_RANGES[a] for y in STATECRIME_RANGES[b]]
        assert used[f"{a}:{b}"] == [min(corners), max(corners)]
        design[f"{a}:{b}"] = design[a] * design[b]
    for term, (lo, hi) in used.items():  # nothing is clipped
        values = frame["violent"].to_numpy() if term == "violent" else design[term]
        assert lo <= values.min() and values.max() <= hi
    y = frame["violent"].to_numpy(float)
    rss = {}
    for support in itertools.combinations(fit.terms, 2):
        X = np.column_stack([np.ones(len(y))] + [design[t] for t in support])
        rss[support] = float(np.sum((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2))
    best = min(rss, key=rss.get)
    assert sorted(fit.support) == sorted(best)
    # And a private run of the same call goes through.
    private = dpstats.dp_select("violent ~ (. - murder)**2", frame, method="exponential", epsilon=1, s=2,
                                bounds=STATECRIME_RANGES, random_state=1)
    assert len(private.support) == 2 and len(private.release()["bounds_derived"]) == 10


def test_the_same_derived_ranges_on_dask():
    dd = pytest.importorskip("dask.dataframe")
    frame = data()
    codebook = {k: v for k, v in CODEBOOK.items() if k != "other"}
    formula = "y ~ (x1 + x2 + x3)**2 + np.log(x2)"
    on_pandas = dpstats.dp_select(formula, frame, method="exponential", epsilon=1, s=2, bounds=codebook,
                                  random_state=1).release()
    on_dask = dpstats.dp_select(formula, dd.from_pandas(frame, npartitions=3), method="exponential", epsilon=1, s=2,
                                bounds=codebook, random_state=1).release()
    assert on_dask["bounds_used"] == on_pandas["bounds_used"]
    assert on_dask["bounds_derived"] == on_pandas["bounds_derived"] and "x1:x2" in on_dask["bounds_derived"]


def test_auto_bounds_keep_the_contrast_values_of_dummy_columns():
    frame = data()
    frame["g"] = pd.Categorical(np.arange(len(frame)) % 3, categories=[0, 1, 2])
    fit = dpstats.dp_select("y ~ x1 + C(g, Sum) + C(g, Treatment):x3", frame, method="exponential", epsilon=5, s=1,
                            bounds="auto", random_state=0)
    used, derived = fit.release()["bounds_used"], fit.release()["bounds_derived"]
    assert used["C(g, Sum)[S.0]"] == [-1.0, 1.0] and used["C(g, Sum)[S.1]"] == [-1.0, 1.0]  # not (0, 1)
    assert "contrast column of C(g, Sum) [-1, 1]" in derived["C(g, Sum)[S.0]"]
    assert set(derived) == {"C(g, Sum)[S.0]", "C(g, Sum)[S.1]"}  # x1 and the products are drawn
    from release_checks import check_release_shape

    check_release_shape(fit.release())


def test_public_constants_of_the_caller_and_given_factors():
    frame = data()
    centre, scale = 5, 2.5  # noqa: F841 - public constants the formula reads from this frame
    fit = dpstats.dp_select("y ~ I((x1 - centre) / scale) + I(x2**2):x3", frame, method="exponential", epsilon=1,
                            s=1, bounds={"x1": (0, 10), "x2": (1, 5), "x3": (-1, 1), "y": (-5, 15), "I(x2**2)": (1, 9)},
                            random_state=0)
    used, derived = fit.release()["bounds_used"], fit.release()["bounds_derived"]
    assert used["I((x1 - centre) / scale)"] == [-2.0, 2.0]
    # The range given for I(x2 ** 2) is used for it as a factor of the product too.
    assert used["I(x2 ** 2):x3"] == [-9.0, 9.0] and "I(x2 ** 2) [1, 9] (given)" in derived["I(x2 ** 2):x3"]


REAL = ["longley", "anes96", "fair", "scotland", "cpunish", "statecrime"]


@pytest.mark.parametrize("name", REAL)
def test_all_pairwise_interactions_on_more_real_data(name):
    # y ~ (.)**2 on the real data sets of tests/test_real_data.py, with the column ranges
    # documented there (reasons next to each): the derived product ranges are the corner
    # products and clip nothing, and at epsilon = inf the selection is the least-squares
    # best pair of main effects and interactions (numpy lstsq with an intercept).
    pytest.importorskip("statsmodels.api")
    from test_real_data import CASES

    case = CASES[name]
    frame = case.frame()
    fit = dpstats.dp_select(f"{case.response} ~ (.)**2", frame, method="exponential", epsilon=math.inf, s=2,
                            bounds=case.ranges, radius=1e9, random_state=0)
    y = frame[case.response].to_numpy(float)
    design = {c: frame[c].to_numpy(float) for c in case.terms}
    used = fit.release()["bounds_used"]
    for a, b in itertools.combinations(case.terms, 2):
        design[f"{a}:{b}"] = design[a] * design[b]
        corners = [u * v for u in case.ranges[a] for v in case.ranges[b]]
        assert used[f"{a}:{b}"] == [min(corners), max(corners)]
        assert min(corners) <= design[f"{a}:{b}"].min() and design[f"{a}:{b}"].max() <= max(corners)
    assert set(fit.terms) == set(design)
    rss = {}
    for support in itertools.combinations(fit.terms, 2):
        X = np.column_stack([np.ones(len(y))] + [design[t] for t in support])
        rss[support] = float(np.sum((y - X @ np.linalg.lstsq(X, y, rcond=None)[0]) ** 2))
    ranked = sorted(rss, key=rss.get)
    assert (rss[ranked[1]] - rss[ranked[0]]) / rss[ranked[0]] > 1e-5  # not decided by rounding
    assert sorted(fit.support) == sorted(ranked[0])


def test_bool_columns_take_0_and_1_from_their_dtype():
    frame = data()
    frame["flag"] = frame["x3"] > 0
    fit = dpstats.dp_select("y ~ I(flag * x1) + I((flag + (x3 > 0.5)) * 2.0) + flag", frame, method="exponential", epsilon=1,
                            s=1, bounds={"x1": (0, 10), "x3": (-1, 1), "y": (-5, 15)}, random_state=0)
    used = fit.release()["bounds_used"]
    assert used["I(flag * x1)"] == [0.0, 10.0]
    assert used["I((flag + (x3 > 0.5)) * 2.0)"] == [0.0, 2.0]  # numpy: bool + bool is 'or'
    assert used["flag[T.True]"] == [0.0, 1.0]  # as a term, patsy codes a bool as a dummy
