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


@pytest.fixture
def small_data():
    return make_regression()
