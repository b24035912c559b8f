"""R's names and spellings in a formula (dpstats.r_spellings): each spelling and its result.

Each R spelling must give exactly the result of its patsy spelling (same terms, same
response, same release with the same seed), or a clear error with the exact fix.
"""
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats import FormulaNote
from dpstats.r_spellings import rewrite_r_spellings

COLUMNS = ["Fertility", "Infant.Mortality", "Acid.Conc.", "class", "my var", "x.1"]


def swiss_like(n=120, seed=0):
    """Columns named as in R's data sets (swiss, stackloss) and two that Python cannot parse."""
    gen = np.random.default_rng(seed)
    frame = pd.DataFrame(gen.uniform(1, 9, size=(n, len(COLUMNS))), columns=COLUMNS)
    frame["Fertility"] = 2 * frame["Infant.Mortality"] - frame["x.1"] + gen.normal(scale=0.5, size=n)
    frame["class"] = frame["my var"] + 0.5 * frame["Acid.Conc."] + gen.normal(scale=0.5, size=n)
    return frame


BOUNDS = {**{c: (0.5, 10.0) for c in COLUMNS}, "Fertility": (-10.0, 20.0), "class": (-5.0, 20.0)}


def fit(formula, **kwargs):
    return dpstats.dp_select(formula, swiss_like(), method="exponential", epsilon=2, s=2, bounds=BOUNDS,
                             random_state=3, **kwargs)


def _same(r_formula, patsy_formula):
    a, b = fit(r_formula), fit(patsy_formula)
    assert (a.terms, a.response, a.support) == (b.terms, b.response, b.support)
    ra, rb = a.release(), b.release()
    ra["call"].pop("formula"), rb["call"].pop("formula")
    assert ra == rb
    return a


@pytest.mark.parametrize("r_formula, patsy_formula, terms, response", [
    ("Fertility ~ Infant.Mortality + x.1 + Acid.Conc.",
     "Fertility ~ Q('Infant.Mortality') + Q('x.1') + Q('Acid.Conc.')",
     ["Infant.Mortality", "x.1", "Acid.Conc."], "Fertility"),
    ("Infant.Mortality ~ Fertility + Acid.Conc.:x.1 + np.log(Acid.Conc.)",
     "Q('Infant.Mortality') ~ Fertility + Q('Acid.Conc.'):Q('x.1') + np.log(Q('Acid.Conc.'))",
     ["Fertility", "Acid.Conc.:x.1", "np.log(Acid.Conc.)"], "Infant.Mortality"),
    ("class ~ .", "Q('class') ~ .", ["Fertility", "Infant.Mortality", "Acid.Conc.", "my var", "x.1"], "class"),
    ("class ~ . - Fertility", "Q('class') ~ . - Fertility", ["Infant.Mortality", "Acid.Conc.", "my var", "x.1"],
     "class"),
    ("Fertility ~ . - Infant.Mortality - `my var`", "Fertility ~ . - Q('Infant.Mortality') - Q('my var')",
     ["Acid.Conc.", "class", "x.1"], "Fertility"),
    ("`my var` ~ Fertility + `Infant.Mortality`", "Q('my var') ~ Fertility + Q('Infant.Mortality')",
     ["Fertility", "Infant.Mortality"], "my var"),
    ("class ~ `my var`:Fertility + I(`my var` * 1.5)", "Q('class') ~ Q('my var'):Fertility + I(Q('my var') * 1.5)",
     ["my var:Fertility", "I(my var * 1.5)"], "class"),
])
def test_an_r_spelling_gives_the_result_of_its_patsy_spelling(r_formula, patsy_formula, terms, response):
    result = _same(r_formula, patsy_formula)
    assert result.terms == terms and result.response == response


def test_dotted_names_give_the_derived_ranges_too():
    result = fit("Fertility ~ Infant.Mortality:x.1 + np.sqrt(Acid.Conc. + 20)")
    used = result.release()["bounds_used"]
    assert used["Infant.Mortality:x.1"] == [0.25, 100.0]
    assert used["np.sqrt(Acid.Conc. + 20)"] == [pytest.approx(math.sqrt(20.5)), pytest.approx(math.sqrt(30))]


def test_a_python_operator_word_as_a_column_is_answered_with_the_fix():
    data = swiss_like().rename(columns={"class": "in"})
    bounds = {("in" if k == "class" else k): v for k, v in BOUNDS.items()}
    with pytest.raises(dpstats.FormulaError, match=r"""The column 'in' is a reserved word in Python: write it Q\("in"\)"""):
        dpstats.dp_select("in ~ .", data, method="exponential", epsilon=1, s=1, bounds=bounds)
    ok = dpstats.dp_select('Q("in") ~ .', data, method="exponential", epsilon=1, s=1, bounds=bounds, random_state=0)
    assert ok.response == "in"


def test_poly_is_read_as_raw_powers_with_a_note():
    with pytest.warns(FormulaNote, match=r"poly\(x\.1, 3\) is read as the raw powers x\.1 \+ I\(x\.1\*\*2\)"):
        result = fit("Fertility ~ poly(x.1, 3) + Infant.Mortality")
    assert result.terms == ["x.1", "I(x.1 ** 2)", "I(x.1 ** 3)", "Infant.Mortality"]
    used = result.release()["bounds_used"]
    assert used["I(x.1 ** 2)"] == [0.25, 100.0] and used["I(x.1 ** 3)"] == [0.125, 1000.0]
    assert "from x.1 [0.5, 10]" in result.release()["bounds_derived"]["I(x.1 ** 2)"]
    # The same selection as the powers written out.
    plain = fit("Fertility ~ x.1 + I(x.1**2) + I(x.1**3) + Infant.Mortality")
    assert plain.terms == result.terms and plain.support == result.support


def test_poly_raw_true_is_silent_and_raw_false_is_refused_with_the_fix():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the curator's note that the ball cuts this fit is about the data, not the formula
        warnings.simplefilter("ignore", dpstats.CuratorWarning)
        result = fit("Fertility ~ poly(Infant.Mortality, 2, raw = TRUE) + poly(np.log(`my var`), degree=2, raw=True)")
    assert result.terms == ["Infant.Mortality", "I(Infant.Mortality ** 2)", "np.log(my var)",
                            "I(np.log(my var) ** 2)"]
    with pytest.raises(dpstats.FormulaError, match=r"orthogonal polynomials.*poly\(Fertility, 2, raw = TRUE\)"):
        fit("class ~ poly(Fertility, 2, raw = FALSE)")
    with pytest.raises(dpstats.FormulaError, match="degree must be a whole number"):
        fit("class ~ poly(Fertility, 2.5)")


def test_the_rewrite_leaves_strings_numbers_and_functions_alone():
    columns = ["x.1", "Infant.Mortality", "class", "g"]
    text = 'y ~ C(g, levels=["Infant.Mortality", "class"]) + I(x.1 * 1.5e3) + np.log(Infant.Mortality) + .'
    assert rewrite_r_spellings(text, columns) == (
        "y ~ C(g, levels=[\"Infant.Mortality\", \"class\"]) + I(Q('x.1') * 1.5e3) + np.log(Q('Infant.Mortality')) + .")
    assert rewrite_r_spellings("y ~ a.b + np.exp(c)", ["y", "c"]) == "y ~ a.b + np.exp(c)"  # not columns
    assert rewrite_r_spellings("`O'Brien score` ~ `x (cm)` + Q('a`b') + poly(z, 2, raw = TRUE)", []) == (
        "Q(\"O'Brien score\") ~ Q('x (cm)') + Q('a`b') + (z + I(z**2))")
    assert rewrite_r_spellings("y ~ C(g, levels=['poly(x, 2)'])", ["y", "g", "x"]) == "y ~ C(g, levels=['poly(x, 2)'])"
    with pytest.raises(dpstats.FormulaError, match="unmatched backtick"):
        rewrite_r_spellings("y ~ `x", ["x"])


def test_a_dotted_name_that_is_not_a_column_is_still_refused():
    with pytest.raises(dpstats.FormulaError, match="not columns of data"):
        fit("Fertility ~ Infant.Mortalty")


def test_r_spellings_on_dask():
    dd = pytest.importorskip("dask.dataframe")
    formula = "class ~ Infant.Mortality:`my var` + poly(x.1, 2, raw = TRUE)"
    on_pandas = fit(formula)
    on_dask = dpstats.dp_select(formula, dd.from_pandas(swiss_like(), npartitions=3), method="exponential",
                                epsilon=2, s=2, bounds=BOUNDS, random_state=3)
    assert on_dask.terms == on_pandas.terms == ["Infant.Mortality:my var", "x.1", "I(x.1 ** 2)"]
    assert on_dask.release()["bounds_used"] == on_pandas.release()["bounds_used"]


# --- R habits answered (issue 43, item 4): each refused before the charge, with the fix.
def _habit_frame(**changes):
    frame = pd.DataFrame({"y": np.arange(20.0), "a": np.arange(20.0) % 3, "b": np.arange(20.0) % 5,
                          "Grad.Rate": np.arange(20.0)})
    return frame.assign(**changes)


def _refused(formula, data, error, match):
    acc = dpstats.Accountant(epsilon=10)
    with pytest.raises(error, match=match) as info:
        dpstats.dp_select(formula, data, method="dp_sis", epsilon=1, k=1, bounds=(10, 20), random_state=0,
                          accountant=acc)
    assert acc.spent() == (0.0, 0.0)
    return str(info.value)


@pytest.mark.parametrize("formula, fixed", [
    ("y ~ (.)^2", "y ~ (.)**2"),
    ("y ~ .^2", "y ~ (.)**2"),
    ("y ~ (a + b)^2", "y ~ (a + b)**2"),
    ("y ~ (a + Grad.Rate)^3 + b", "y ~ (a + Grad.Rate)**3 + b"),
])
def test_r_interaction_power_is_answered_with_patsys_spelling(formula, fixed):
    _refused(formula, _habit_frame(), dpstats.FormulaError,
             r"R's \(\.\.\.\)\^2 is written \(\.\.\.\)\*\*2 here.*" + re.escape(repr(fixed)))
    # ... and the spelling it suggests runs.
    assert dpstats.dp_select(fixed, _habit_frame(), method="dp_sis", epsilon=1, k=1, bounds=(10, 20),
                             random_state=0).terms


def test_r_power_of_a_single_term_says_it_is_the_term_and_how_to_square():
    _refused("y ~ a^2 + b", _habit_frame(), dpstats.FormulaError,
             r"single term a: for its square write I\(a\*\*2\).*which is just a; here that is a\*\*2")
    # A '^' inside a call stays Python's XOR, refused as before.
    _refused("y ~ I(a^2) + b", _habit_frame(), dpstats.FormulaError, "bit-wise XOR, not a power")


def test_r_factor_is_answered_with_c_and_declared_levels():
    _refused("y ~ factor(a) + b", _habit_frame(), dpstats.FormulaError,
             r"'factor\(a\)' is R's factor\(\): here a categorical term is written C\(a, levels=\[\.\.\.\]\)")
    _refused("y ~ as.factor(a) + b", _habit_frame(), dpstats.FormulaError, r"R's as\.factor\(\).*pandas Categorical")
    ok = dpstats.dp_select("y ~ C(a, levels=[0, 1, 2]) + b", _habit_frame(), method="dp_sis", epsilon=1, k=1,
                           bounds=(10, 20), random_state=0)
    assert "b" in ok.terms


def test_r_offset_is_answered_with_the_response_minus_the_offset():
    _refused("y ~ offset(a) + b", _habit_frame(), dpstats.FormulaError,
             r"offsets are not supported in dpstats' selection.*write the response as I\(y - a\)")
    ok = dpstats.dp_select("I(y - a) ~ b", _habit_frame(), method="dp_sis", epsilon=1, k=1, bounds=(10, 20),
                           random_state=0)
    assert ok.response == "I(y - a)" and ok.terms == ["b"]


@pytest.mark.parametrize("formula, missing", [
    ("y ~ Grad.Rate + Miss.Col", "Miss.Col"),
    ("y ~ np.log(Miss.Col) + a", "Miss.Col"),
    ("y ~ a + Acid.Conc.", "Acid.Conc."),
    ("y ~ a + x.1", "x.1"),
    ("Miss.Col ~ a", "Miss.Col"),
])
def test_a_missing_dotted_name_is_reported_as_written(formula, missing):
    _refused(formula, _habit_frame(), dpstats.FormulaError,
             re.escape(f"formula refers to [{missing!r}], which are not columns of data"))


def test_a_text_column_used_as_a_number_is_said_to_be_not_numeric_with_the_fix():
    values = pd.Series(np.arange(20.0) % 3, dtype=object)
    values[3] = "n/a?"  # numbers with one text entry
    data = _habit_frame(a=values)
    message = _refused("y ~ a + b", data, dpstats.DataError,
                       r"column 'a' has dtype object \(text\), so it is not numeric.*"
                       r"pd\.to_numeric\(data\['a'\], errors='coerce'\).*The levels of \['a'\] would be inferred")
    assert "n/a?" not in message  # no data value is quoted
    # A genuinely categorical use keeps the levels refusal alone.
    _refused("y ~ C(a) + b", data, dpstats.DataError, r"^the levels of \['C\(a\)'\] would be inferred")
