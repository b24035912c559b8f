"""s="auto" at epsilon = inf on real data: the exhaustive BIC / Cp choice over every support of
every size, with statsmodels' OLS as the oracle.

The data sets and their public ranges (chosen from documented knowledge, not from the data)
are those of test_real_data.py.  The oracle clips each column to its range, fits OLS with an
intercept by statsmodels on every support of sizes 1..s_max, and minimises
RSS + sigma0^2 k_n s in the response's units (k_n = log n for BIC, 2 for Cp); dp_select works
in mapped units (the response divided by its public half-range), which rescales the criterion
and leaves its argmin unchanged.  radius=1e6 so that the ball never cuts an OLS fit (the default
radius 1 can, see test_real_data.py); the ridge is the default, 0 on this exact path.
"""
import functools
import math
from itertools import combinations

import numpy as np
import pytest

import dpstats
from test_real_data import CASES, MIN_RELATIVE_GAP

sm = pytest.importorskip("statsmodels.api")

NAMES = ["diabetes", "longley", "anes96", "fair", "randhie", "star98", "scotland", "cpunish", "statecrime",
         "macrodata"]


def half_range(case):
    lo, hi = case.ranges[case.response]
    return (hi - lo) / 2


@functools.lru_cache(maxsize=None)
def ols_rss(name, s_max):
    """support (tuple of term names) -> statsmodels OLS residual sum of squares on the clipped data."""
    case = CASES[name]
    frame = case.frame()
    X = np.column_stack([np.clip(frame[t].to_numpy(float), *case.ranges[t]) for t in case.terms])
    y = np.clip(frame[case.response].to_numpy(float), *case.ranges[case.response])
    out = {}
    for s in range(1, s_max + 1):
        for sup in combinations(range(len(case.terms)), s):
            fit = sm.OLS(y, sm.add_constant(X[:, sup], has_constant="add")).fit()
            out[tuple(case.terms[j] for j in sup)] = float(fit.ssr)
    return out, len(y)


def default_noise_sd(name, s_max):
    """The default sigma0 at epsilon = inf: the residual standard deviation of the best model of s_max terms,
    sqrt(RSS / (n - s_max - 1)) (statsmodels OLS on every support of that size), at most the response's
    half-range (the cap of dpstats.bss.model_size.MAX_MAPPED_VARIANCE)."""
    rss, n = ols_rss(name, s_max)
    best = min(v for sup, v in rss.items() if len(sup) == s_max)
    return min(math.sqrt(best / (n - s_max - 1)), half_range(CASES[name]))


def oracle(name, s_max, noise_sd, criterion):
    rss, n = ols_rss(name, s_max)
    k_n = math.log(n) if criterion == "bic" else 2.0
    crit = {sup: value + noise_sd**2 * k_n * len(sup) for sup, value in rss.items()}
    ranked = sorted(crit, key=crit.get)
    best, second = ranked[0], ranked[1]
    assert crit[second] - crit[best] > MIN_RELATIVE_GAP * abs(crit[best])  # not decided by rounding
    return list(best)


# (noise_sd as a share of the response's half-range, criterion): the default (the residual scale of the best
# model of s_max terms, BIC), a public variance under BIC, and Cp.
SETTINGS = [(None, "bic"), (0.1, "bic"), (0.1, "cp")]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda v: f"{v[1]}-{v[0]}")
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("method", ["exponential", "top_r", "mistakes"])
def test_epsilon_inf_equals_exhaustive_criterion(name, method, setting):
    share, criterion = setting
    case = CASES[name]
    s_max = 4
    noise_sd = None if share is None else share * half_range(case)
    options = {"criterion": criterion} | ({} if noise_sd is None else {"noise_sd": noise_sd})
    fit = dpstats.dp_select(case.formula, case.frame(), method=method, epsilon=math.inf, s="auto", s_max=s_max,
                            bounds=case.ranges, radius=1e6, random_state=0, **options)
    expected = oracle(name, s_max, default_noise_sd(name, s_max) if noise_sd is None else noise_sd, criterion)
    assert sorted(fit.support) == sorted(expected)
    assert fit.release()["s_selected"] == len(expected)
    table = fit.size_table()
    assert table.loc[len(expected), "criterion"] == table["criterion"].min()


def test_the_choices_are_not_all_one_size():
    """The settings above exercise several sizes (the comparison is not only at s = 1)."""
    chosen = {len(oracle(name, 4, share * half_range(CASES[name]), crit))
              for name in NAMES for share, crit in SETTINGS if share is not None}
    assert len(chosen) >= 3, chosen


@pytest.mark.slow
@pytest.mark.parametrize("name", ["diabetes", "star98", "macrodata", "randhie", "fair"])
def test_epsilon_inf_every_size_up_to_ten(name):
    case = CASES[name]
    s_max = min(10, len(case.terms))
    noise_sd = 0.05 * half_range(case)
    fit = dpstats.dp_select(case.formula, case.frame(), method="exponential", epsilon=math.inf, s="auto",
                            s_max=s_max, bounds=case.ranges, radius=1e6, noise_sd=noise_sd, random_state=0)
    assert sorted(fit.support) == sorted(oracle(name, s_max, noise_sd, "bic"))


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda v: f"{v[1]}-{v[0]}")
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("method", ["exponential", "top_r"])
def test_gem_epsilon_inf_equals_exhaustive_criterion(name, method, setting):
    """size_mechanism="generalized": GEM scores are 0 exactly on the criterion's minimisers, so at
    epsilon = inf the answer is the same exhaustive BIC / Cp choice (statsmodels OLS here)."""
    share, criterion = setting
    case = CASES[name]
    noise_sd = None if share is None else share * half_range(case)
    options = {"criterion": criterion} | ({} if noise_sd is None else {"noise_sd": noise_sd})
    fit = dpstats.dp_select(case.formula, case.frame(), method=method, epsilon=math.inf, s="auto", s_max=4,
                            bounds=case.ranges, radius=1e6, random_state=0, size_mechanism="generalized", **options)
    expected = oracle(name, 4, default_noise_sd(name, 4) if noise_sd is None else noise_sd, criterion)
    assert sorted(fit.support) == sorted(expected)
    assert fit.release()["s_selected"] == len(expected)


@pytest.mark.parametrize("name", NAMES)
def test_two_stage_epsilon_inf_equals_exhaustive_criterion(name):
    """size_mechanism="two_stage" (the former default for top_r; the default "margin" is covered above): the
    same exhaustive BIC choice at epsilon = inf."""
    case = CASES[name]
    fit = dpstats.dp_select(case.formula, case.frame(), method="top_r", epsilon=math.inf, s="auto", s_max=4,
                            bounds=case.ranges, radius=1e6, random_state=0, size_mechanism="two_stage")
    expected = oracle(name, 4, default_noise_sd(name, 4), "bic")
    assert sorted(fit.support) == sorted(expected)
    assert any("best subset's criterion" in e.mechanism for e in fit.ledger.entries)
