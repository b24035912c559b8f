import numpy as np
import pandas as pd
import pytest


def make_regression(n=60, p=6, s=2, rho=0.3, noise=0.5, seed=0):
    """A small regression data set with named columns y, x0..x{p-1}."""
    rng = np.random.default_rng(seed)
    idx = np.arange(p)
    cov = rho ** np.abs(idx[:, None] - idx[None, :])
    X = rng.multivariate_normal(np.zeros(p), cov, size=n)
    beta = np.zeros(p)
    beta[:s] = [1.0, -0.8, 0.6, -0.5, 0.4][:s]
    y = X @ beta + noise * rng.standard_normal(n)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", y)
    return frame


def toeplitz_regression(n, p, seed=0, rho=0.5):
    """y = X beta + N(0, 1) noise with beta = (1, -1, 0.8, 0, ...) and Toeplitz(rho) rows."""
    gen = np.random.default_rng(seed)
    idx = np.arange(p)
    X = gen.multivariate_normal(np.zeros(p), rho ** np.abs(idx[:, None] - idx[None, :]), size=n)
    beta = np.zeros(p)
    beta[:3] = [1.0, -1.0, 0.8]
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", X @ beta + gen.standard_normal(n))
    return frame, beta


@pytest.fixture
def small_data():
    return make_regression()


#: The smallest valid call of each built-in method; a method registered later inherits
#: a call built from its declared size argument and bounds use.
BASE = {
    "exponential": {"s": 2},
    "top_r": {"s": 2, "R": 5},
    "mistakes": {"s": 2},
    "mcmc": {"s": 2, "n_iter": 200, "tv_chains": 0},
    "dp_sis": {"k": 2},
    "kendall": {"k": 2},
    "samp_agg": {"k": 2},
    "dpvote": {"k": 2, "machines": 4},
}


def base_call(name):
    from dpstats.methods import get_method

    meth = get_method(name)
    call = dict(BASE.get(name, {meth.size_argument: 2}))
    if meth.needs_bounds:
        call["bounds"] = (3, 3)
    return call
