"""Release equivalence on neighbouring data sets, for every method (spec 05, 5.1, 5.5, 5.8).

For each method, ``dp_select`` runs on a small data set D and on neighbours D' with the
same arguments and the same ``random_state``.  ``release()`` may differ only in what the
mechanisms sampled (the selected terms, the signs, each ledger entry's ``released`` values
and top-level keys that repeat them, such as ``guard_branch``); the call, every other
ledger field, the totals and the ledger caveats are functions of public parameters and
must be identical (:func:`tests.release_checks.assert_release_equivalent`).

Neighbours follow the method's relation (spec 05, 5.1):
* replace one record (every method but kendall; dpvote's replace-one-machine relation
  contains it): a random row replaced by a random row ("random"), by the corner of the
  bounds box, all x at +b_x and y at -b_y ("corner"), or by a row of huge values that
  clipping must handle ("huge");
* add or remove one record (kendall): D minus one row ("remove") and D plus one row
  ("add"), besides the replacements above;
* with ``na_action="omit"`` (cases "...-omit"): neighbours that differ in whether one
  row is complete (spec 05, 5.8: the number of complete rows is private).

The BSS methods run the certified engine (not exact enumeration) in the cases named
"engine" (``max_enumerate`` below the number of supports).
"""
import json
import math
import zlib
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest

import dpstats
from conftest import make_regression
from release_checks import assert_release_equivalent, check_release_shape

pytest.importorskip("sklearn")

EPSILON = 2.0
SEED = 7
HUGE = 1e6


def numeric(n, p, seed=1):
    return make_regression(n=n, p=p, s=3, seed=seed)


def binary(n, p, seed=1):
    data = make_regression(n=n, p=p, s=3, seed=seed)
    data["y"] = data["y"] > 0
    return data


def strong_signal(n=3000, p=6, seed=0):
    """A gap large enough that the mistakes PTR guard passes (tests/test_mistakes.py)."""
    gen = np.random.default_rng(seed)
    X = gen.uniform(-1, 1, size=(n, p))
    data = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    data.insert(0, "y", (X[:, 0] + X[:, 2]) * 0.5 + 0.02 * gen.normal(size=n))
    return data


DERIVED_FORMULA = "y ~ (x0 + x1 + x2)**2 + I(x3**2) + np.log(x4 + 10) + np.exp(x5 / 5)"
DERIVED_CODEBOOK = {**{f"x{j}": (-4.0, 4.0) for j in range(8)}, "y": (-6.0, 6.0)}

# id -> (method, data builder, dp_select keyword arguments, neighbour kinds)
REPLACE = ("random", "corner", "huge")
CASES = {
    "exponential": ("exponential", lambda: numeric(80, 8), dict(s=2, bounds=(2.0, 3.0)), REPLACE),
    "exponential-hinge": ("exponential", lambda: binary(80, 8), dict(s=2, bounds=(2.0, 1.0), loss="hinge"),
                          REPLACE),
    "top_r-exact": ("top_r", lambda: numeric(80, 8), dict(s=2, R=5, bounds=(2.0, 3.0)), REPLACE),
    "top_r-engine": ("top_r", lambda: numeric(100, 12), dict(s=3, R=5, bounds=(2.0, 3.0), max_enumerate=10),
                     REPLACE),
    # p=10, s=3: the hinge engine's certificate route (dual bounds, MILP solves) varies
    # between these neighbours, so a route leaking into the ledger is caught.
    "top_r-hinge-engine": ("top_r", lambda: binary(80, 10),
                           dict(s=3, R=5, bounds=(2.0, 1.0), loss="hinge", max_enumerate=10), REPLACE),
    "mistakes-engine": ("mistakes", lambda: numeric(100, 12), dict(s=3, R=5, bounds=(2.0, 3.0), max_enumerate=10),
                        REPLACE),
    "mistakes-guard-none-engine": ("mistakes", lambda: numeric(100, 12),
                                   dict(s=3, bounds=(2.0, 3.0), max_enumerate=10, guard="none"), REPLACE),
    "mistakes-ptr-passes-engine": ("mistakes", lambda: strong_signal(10000),
                                   dict(s=2, bounds=(1.0, 1.0), max_enumerate=1, epsilon=20.0), REPLACE),
    "mistakes-hinge-engine": ("mistakes", lambda: binary(80, 10),
                              dict(s=3, R=5, bounds=(2.0, 1.0), loss="hinge", max_enumerate=10), REPLACE),
    "mcmc": ("mcmc", lambda: numeric(80, 8), dict(s=2, bounds=(2.0, 3.0), n_iter=1000, tv_chains=20), REPLACE),
    "dp_sis": ("dp_sis", lambda: numeric(80, 10), dict(k=3, bounds=(2.0, 3.0)), REPLACE),
    "kendall": ("kendall", lambda: numeric(70, 6), dict(k=2), REPLACE + ("remove", "add")),
    "samp_agg": ("samp_agg", lambda: numeric(100, 8), dict(k=2, bounds=(2.0, 3.0)), REPLACE),
    "kendall_forward": ("kendall_forward", lambda: numeric(70, 6), dict(s=3), REPLACE),
    # s="auto": rounds that may stop; the released size is part of the release.
    "kendall_forward-auto": ("kendall_forward", lambda: numeric(70, 6), dict(s="auto", s_max=4), REPLACE),
    "dpvote": ("dpvote", lambda: numeric(90, 8), dict(k=2, machines=5), REPLACE),
    "frank_wolfe": ("frank_wolfe", lambda: numeric(80, 8), dict(s=2, bounds=(2.0, 3.0)), REPLACE),
    "peeling": ("peeling", lambda: numeric(80, 8), dict(s=2, bounds=(2.0, 3.0)), REPLACE),
    "peeling-iterations": ("peeling", lambda: numeric(80, 8), dict(s=3, bounds=(2.0, 3.0), iterations=3), REPLACE),
    # A released set of variable size (0 to k), with candidates and p-values (tests/test_fdr_method.py has more).
    "bh": ("bh", lambda: numeric(80, 8), dict(k=3), REPLACE),
    "bh-no-split": ("bh", lambda: numeric(80, 8), dict(k=3, split=False), REPLACE),
    # Least-squares tests: a peel and a Gram release on the other half; every term a candidate (no peel).
    "bh_ols": ("bh_ols", lambda: numeric(80, 8), dict(k=3, bounds=(2.0, 3.0), draws=200), REPLACE),
    "bh_ols-all-terms": ("bh_ols", lambda: numeric(80, 4), dict(k=4, bounds=(2.0, 3.0), draws=200), REPLACE),
    "bh_ols-marginal": ("bh_ols", lambda: numeric(80, 8), dict(k=3, bounds=(2.0, 3.0), draws=200, peel="marginal"),
                        REPLACE),
    "bh_ols-gaussian": ("bh_ols", lambda: numeric(80, 8), dict(k=3, bounds=(2.0, 3.0), draws=200, delta=1e-6),
                        REPLACE),
    "dpvote-mean": ("dpvote", lambda: numeric(90, 8).drop(columns="y"), dict(k=2, machines=5, formula="~ ."),
                    REPLACE),
    "dpvote-labels": ("dpvote", lambda: numeric(90, 8), dict(k=2, machines=np.arange(90) % 6), REPLACE),
    # Ranges of derived terms (products, powers, functions) from a codebook of column ranges
    # (dpstats.derived_ranges); the codebook also names columns the formula does not use.
    "exponential-derived": ("exponential", lambda: numeric(80, 8),
                            dict(s=2, formula=DERIVED_FORMULA, bounds=DERIVED_CODEBOOK), REPLACE),
    "dp_sis-derived": ("dp_sis", lambda: numeric(80, 8), dict(k=3, formula=DERIVED_FORMULA, bounds=DERIVED_CODEBOOK),
                       REPLACE),
    # The private means of the intercept and of DP-SIS, asked for by name (at these sizes the
    # defaults' public rule would not buy them): the means entry, then the selection.
    "exponential-centred": ("exponential", lambda: numeric(80, 8), dict(s=2, bounds=(2.0, 3.0), intercept="centred"),
                            REPLACE),
    "top_r-engine-centred": ("top_r", lambda: numeric(100, 12),
                             dict(s=3, R=5, bounds=(2.0, 3.0), max_enumerate=10, intercept="centred"), REPLACE),
    "dp_sis-means-sd": ("dp_sis", lambda: numeric(80, 10), dict(k=3, bounds=(2.0, 3.0), center="means", scale="sd"),
                        REPLACE),
    "frank_wolfe-means-sd": ("frank_wolfe", lambda: numeric(80, 8),
                             dict(s=2, bounds=(2.0, 3.0), center="means", scale="sd", steps=6), REPLACE),
    "peeling-means-sd": ("peeling", lambda: numeric(80, 8),
                         dict(s=2, bounds=(2.0, 3.0), center="means", scale="sd", iterations=2), REPLACE),
}

#: Every method once more with ``na_action="omit"``: D has one incomplete row, and the
#: neighbours make another row incomplete ("incomplete"), complete the incomplete row
#: ("complete"), or replace a random row ("random").  The number of complete rows is then
#: private (spec 05, 5.8): block counts, splits and thresholds must come from the input
#: row count, so the release may not depend on it.  D has k^2 + 1 input rows and k^2
#: complete ones, so a block count taken from the complete rows would differ from the
#: "incomplete" neighbour's (floor(sqrt(k^2 - 1)) = k - 1).
OMIT_OF = ("exponential", "exponential-hinge", "top_r-engine", "mistakes-engine", "mcmc", "dp_sis", "kendall",
           "samp_agg", "dpvote", "dpvote-mean", "dpvote-labels", "exponential-centred", "dp_sis-means-sd",
           "frank_wolfe", "peeling-iterations", "frank_wolfe-means-sd", "bh", "bh-no-split", "kendall_forward",
           "kendall_forward-auto", "bh_ols", "bh_ols-all-terms", "bh_ols-marginal")
OMIT_KINDS = ("incomplete", "complete", "random")


def _omit_rows(n):
    return math.isqrt(n - 1) ** 2 + 1


def _with_missing(build):
    def inner():
        data = build()
        data = data.iloc[:_omit_rows(len(data))].copy()
        data.loc[data.index[0], "x0"] = np.nan
        return data
    return inner


def _omit_kwargs(kwargs, build):
    out = {**kwargs, "na_action": "omit"}
    if isinstance(out.get("machines"), np.ndarray):
        out["machines"] = out["machines"][:_omit_rows(len(build()))]
    return out


for _case in OMIT_OF:
    _method, _build, _kwargs, _ = CASES[_case]
    CASES[f"{_case}-omit"] = (_method, _with_missing(_build), _omit_kwargs(_kwargs, _build), OMIT_KINDS)


def _case_rng(case, kind):
    return np.random.default_rng(zlib.crc32(f"{case}/{kind}".encode()))


def _row(data, values_x, value_y):
    row = {c: values_x[j] for j, c in enumerate(c for c in data.columns if c != "y")}
    if "y" in data.columns:
        row["y"] = value_y
    return row


def neighbour(case, kind, data):
    """D' of the given kind (see the module docstring); D is not modified."""
    method, _, kwargs, _ = CASES[case]
    gen = _case_rng(case, kind)
    n = len(data)
    x_cols = [c for c in data.columns if c != "y"]
    binary_y = "y" in data.columns and data["y"].dtype == bool
    i = int(gen.integers(n))
    if kind == "remove":
        return data.drop(index=data.index[i]).reset_index(drop=True)
    if kind in ("incomplete", "complete"):
        out = data.copy()
        if kind == "incomplete":  # one more incomplete row (row 0 already is)
            out.loc[out.index[1 + i % (n - 1)], x_cols[int(gen.integers(len(x_cols)))]] = np.nan
        else:  # the incomplete row 0 becomes complete
            out.loc[out.index[0], "x0"] = 0.5
        return out
    if kind in ("random", "add"):
        x = gen.normal(scale=1.5, size=len(x_cols))
        y = bool(gen.integers(2)) if binary_y else float(gen.normal(scale=2.0))
    elif kind == "corner" and isinstance(kwargs.get("bounds"), dict):
        # A codebook: every column at its upper end, the response at its lower end.
        x = np.array([kwargs["bounds"][c][1] for c in x_cols])
        y = kwargs["bounds"]["y"][0]
    elif kind == "corner":
        b_x, b_y = kwargs.get("bounds", (float(np.nanmax(np.abs(data[x_cols].to_numpy()))),
                                         float(np.nanmax(np.abs(data["y"]))) if "y" in data else 0.0))
        x = np.full(len(x_cols), float(b_x))
        y = (not bool(data["y"].iloc[i])) if binary_y else -float(b_y)
    elif kind == "huge":
        x = HUGE * (-1.0) ** np.arange(len(x_cols))
        y = True if binary_y else -HUGE
    else:
        raise ValueError(kind)
    out = data.copy()
    row = _row(data, x, y)
    if kind == "add":
        out.loc[n] = row
        return out.astype(data.dtypes.to_dict())
    for c, v in row.items():
        out.loc[out.index[i], c] = v
    return out


def fit(case, data):
    method, _, kwargs, _ = CASES[case]
    kwargs = dict(kwargs)
    formula = kwargs.pop("formula", "y ~ .")
    epsilon = kwargs.pop("epsilon", EPSILON)
    return dpstats.dp_select(formula, data, method=method, epsilon=epsilon, random_state=SEED, **kwargs)


@lru_cache(maxsize=None)
def base(case):
    """(D, release of D), computed once per case."""
    data = CASES[case][1]()
    return data, fit(case, data).release()


PAIRS = [(case, kind) for case, spec in CASES.items() for kind in spec[3]]


@pytest.mark.parametrize("case, kind", PAIRS, ids=[f"{c}-{k}" for c, k in PAIRS])
def test_release_identical_apart_from_sampled_outputs(case, kind):
    data, released = base(case)
    other = fit(case, neighbour(case, kind, data)).release()
    assert_release_equivalent(released, other, label=f"{case}, {kind} neighbour")
    # The sampled outputs are what they claim to be.
    for rel in (released, other):
        assert set(rel["selected"]) <= (set(data.columns) - {"y"}) | set(rel.get("bounds_used", ()))
        if rel["signs"] is not None:
            assert set(rel["signs"]) == set(rel["selected"])
            assert set(rel["signs"].values()) <= {-1, 0, 1, None}


def test_the_engine_cases_do_not_enumerate():
    # The "engine" cases must exercise the certified engine, not exact enumeration.
    for case in ("top_r-engine", "mistakes-engine", "top_r-hinge-engine", "mistakes-hinge-engine"):
        method, build, kwargs, _ = CASES[case]
        p = build().shape[1] - 1
        assert math.comb(p, kwargs["s"]) > kwargs["max_enumerate"]


def test_the_ptr_case_takes_the_mistakes_branch_and_the_others_the_fallback():
    assert base("mistakes-ptr-passes-engine")[1]["guard_branch"] == "mistakes"
    assert base("mistakes-engine")[1]["guard_branch"] == "top_r"


def test_the_derived_cases_derive():
    released = base("exponential-derived")[1]
    assert set(released["bounds_derived"]) == {"x0:x1", "x0:x2", "x1:x2", "I(x3 ** 2)", "np.log(x4 + 10)",
                                               "np.exp(x5 / 5)"}
    assert released["bounds_used"]["I(x3 ** 2)"] == [0.0, 16.0]
    tampered = json.loads(json.dumps(released))
    tampered["bounds_used"]["x0:x1"] = [-15.0, 16.0]  # a derived range that moved with the data
    with pytest.raises(AssertionError, match="bounds_used differs"):
        assert_release_equivalent(released, tampered)


def test_the_comparison_catches_a_data_dependent_ledger_detail():
    # The check itself: a ledger detail that moves with the data must be caught.
    _, released = base("exponential")
    tampered = json.loads(json.dumps(released))
    tampered["ledger"]["entries"][0]["details"]["rows"] = 79
    with pytest.raises(AssertionError, match="details"):
        assert_release_equivalent(released, tampered)
    extra = json.loads(json.dumps(released))
    extra["best_objective"] = 1.5  # a top-level item no ledger entry covers
    with pytest.raises(AssertionError, match="not covered"):
        check_release_shape(extra)


def _sequences(value, path="call"):
    """(path, length) of every list, tuple or array inside ``value``."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _sequences(v, f"{path}[{k!r}]")
    elif isinstance(value, (list, tuple, np.ndarray)) or hasattr(value, "to_numpy"):
        yield path, len(value)
        for j, v in enumerate(value):
            if isinstance(v, (dict, list, tuple, np.ndarray)):
                yield from _sequences(v, f"{path}[{j}]")


def test_dpvote_machine_labels_stay_out_of_the_release():
    # Per-row machine labels are an input like the data: release()["call"] must not carry
    # them (one value per row, not a public parameter), and the release must be JSON.
    data = numeric(90, 6)
    labels = np.random.default_rng(0).permutation(np.arange(90) % 6)
    result = dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=EPSILON, k=2, machines=labels,
                               random_state=SEED)
    long = [(path, length) for path, length in _sequences(result.release()["call"]) if length >= 10]
    assert not long, f"per-row values in release()['call']: {long}"
    released = json.loads(result.release_json())
    assert released["ledger"]["entries"][0]["details"]["machines"] == 6
    check_release_shape(released)
