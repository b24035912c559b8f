"""Local sign estimators of DPVote.

Each machine turns its own rows into a sign vector in {-1, 0, +1}^p and sends nothing
else.  DPVote's guarantee holds for *any* sign matrix (Liu, Tu, Mao and Chen 2022, remark
after Theorem 1), so the local rules may tune themselves on local data (local scales, a
local Lasso path):
no budget is involved here.

Mean model (Liu et al. 2022, eq. (7), Algorithm 3)
    v_j = sign(xbar_j) if |xbar_j| > lambda_j else 0, with the default
    lambda_j = sigma_hat_j sqrt(2 log p / N), sigma_hat_j the machine's standard deviation of
    column j and N the *total* number of rows.  The paper's point: under majority voting the
    threshold can be of order sqrt(log p / N), far below the single-machine sqrt(log p / n_k).

Regression (Liu et al. 2022, eqs. (14)-(15), Algorithm 4)
    v = sign(beta_hat(lambda_k)), where beta_hat(lambda) is the local Lasso
    argmin (1 / (2 n_k)) ||y - X b||^2 + lambda ||b||_1 (scikit-learn's scaling; columns and
    response centred locally when the formula has an intercept) and lambda_k is the smallest
    lambda >= lambda_0 whose solution has at most K non-zeros.  The Lasso path is piecewise
    linear with the active set changing only at its knots, so lambda_k is lambda_0 itself or
    a knot of the LARS path (Efron et al. 2004), which is how it is computed.  Default
    lambda_0 = sigma_hat sqrt(2 log p / N), sigma_hat the local residual standard deviation
    of least squares (the standard deviation of y when n_k <= 2 (p + 1)); default K = k.
    The default assumes columns on comparable scales (as in the paper's simulations).

References
----------
Liu, Tu, Mao and Chen (2022), Majority vote for distributed differentially private sign
selection, arXiv:2209.04419, sections 3.1 and 4.1.
Efron, Hastie, Johnstone and Tibshirani (2004), Least angle regression.
"""
from __future__ import annotations

import math
import warnings

import numpy as np


def _log_p(p: int) -> float:
    return math.log(max(p, 2))


def default_mean_threshold(X, total_rows: int) -> np.ndarray:
    """lambda_j = sigma_hat_j sqrt(2 log p / N) (per column, local scale, total N)."""
    X = np.asarray(X, dtype=np.float64)
    ddof = 1 if X.shape[0] > 1 else 0
    sd = X.std(axis=0, ddof=ddof)
    return sd * math.sqrt(2.0 * _log_p(X.shape[1]) / total_rows)


def mean_signs(X, threshold) -> np.ndarray:
    """Thresholded local means: sign(xbar_j) where |xbar_j| > threshold_j, else 0."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        return np.zeros(X.shape[1], dtype=np.int8)
    xbar = X.mean(axis=0)
    return np.where(np.abs(xbar) > threshold, np.sign(xbar), 0).astype(np.int8)


def default_lasso_lambda0(X, y, total_rows: int, intercept: bool = True) -> float:
    """lambda_0 = sigma_hat sqrt(2 log p / N), sigma_hat a local residual scale."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, p = X.shape
    if intercept:
        X = X - X.mean(axis=0)
        y = y - y.mean()
    dof = n - p - (1 if intercept else 0)
    if n > 2 * (p + 1) and dof > 0:
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        sigma = math.sqrt(float(np.sum((y - X @ coef) ** 2)) / dof)
    else:
        sigma = float(y.std(ddof=1)) if n > 1 else 0.0
    return sigma * math.sqrt(2.0 * _log_p(p) / total_rows)


def lasso_smallest_lambda(X, y, lambda0: float, max_nonzero: int, intercept: bool = True):
    """The smallest lambda >= lambda0 whose Lasso solution has at most ``max_nonzero`` non-zeros.

    Returns
    -------
    (lambda_k, beta) : float and ndarray (p,)
        Lasso in scikit-learn's scaling (1 / (2 n)) ||y - X b||^2 + lambda ||b||_1.
    """
    from sklearn.linear_model import lars_path

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, p = X.shape
    if n == 0:
        return math.inf, np.zeros(p)
    if intercept:
        X = X - X.mean(axis=0)
        y = y - y.mean()
    with warnings.catch_warnings():
        # LARS warns about degenerate regressors on tiny machines; the path is still valid.
        warnings.simplefilter("ignore")
        alphas, _, coefs = lars_path(X, y, method="lasso", alpha_min=float(lambda0), max_iter=max(500, 4 * p))
    nnz = np.count_nonzero(coefs, axis=0)
    # alphas decrease along the path; the last point is at lambda0 (or above it when the
    # path ended early, e.g. at the least-squares fit).  Walk back to the first point with
    # at most max_nonzero non-zeros: between knots the active set only grows towards the
    # knot where a variable leaves, so the minimiser is lambda0 or a knot.
    for i in range(alphas.size - 1, -1, -1):
        if nnz[i] <= max_nonzero and alphas[i] >= lambda0 - 1e-15 * max(1.0, abs(lambda0)):
            return float(max(alphas[i], lambda0)), coefs[:, i].copy()
    return float(alphas[0]), np.zeros(p)


def lasso_signs(X, y, lambda0: float, max_nonzero: int, intercept: bool = True) -> np.ndarray:
    """sign(beta_hat(lambda_k)) with lambda_k from :func:`lasso_smallest_lambda`."""
    _, beta = lasso_smallest_lambda(X, y, lambda0, max_nonzero, intercept)
    return np.sign(beta).astype(np.int8)


def local_sign_vector(X, y, *, total_rows: int, lam=None, max_nonzero: int, intercept: bool = True) -> np.ndarray:
    """One machine's sign vector: thresholded means when ``y`` is None, else the local Lasso.

    Parameters
    ----------
    X : ndarray (n_k, p)
        The machine's candidate columns.
    y : ndarray (n_k,) or None
    total_rows : int
        N, the total number of rows over all machines (public): the input row count,
        never the number of complete rows left by ``na_action="omit"`` (which is private).
    lam : float or None
        The threshold (mean model) or lambda_0 (regression); None for the defaults above.
    max_nonzero : int
        K of Liu et al. (2022), eq. (15) (regression only).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        # A machine left without rows (e.g. every row omitted by na_action="omit") has no
        # signal: it votes 0 everywhere.
        return np.zeros(X.shape[1], dtype=np.int8)
    if y is None:
        threshold = default_mean_threshold(X, total_rows) if lam is None else float(lam)
        return mean_signs(X, threshold)
    if X.shape[0] < 2:
        return np.zeros(X.shape[1], dtype=np.int8)
    try:
        with np.errstate(all="ignore"):
            lambda0 = default_lasso_lambda0(X, y, total_rows, intercept) if lam is None else float(lam)
            return lasso_signs(X, y, lambda0, max_nonzero, intercept)
    except (ArithmeticError, ValueError, np.linalg.LinAlgError):
        # A machine whose local fit fails on its own values (|x| near 1e300 overflows LARS)
        # abstains, voting 0 everywhere: its vote is still a function of its own rows only,
        # so the group-privacy argument of the vote is unchanged, and the call stays total.
        return np.zeros(X.shape[1], dtype=np.int8)
