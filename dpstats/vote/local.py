"""Local sign estimators of DPVote.

Each machine turns its own rows into a sign vector in {-1, 0, +1}^p and sends nothing
else.  DPVote's guarantee holds for *any* sign matrix (Liu, Tu, Mao and Chen 2022, remark
after Theorem 1), so the local rules may tune themselves on local data (local scales, a
local Lasso path):
no budget is involved here.

Mean model (Liu et al. 2022, eq. (7), Algorithm 3)
    v_j = sign(xbar_j) if |xbar_j| > lambda_j else 0.  The paper's point: under majority
    voting the threshold can be of order sqrt(log p / N) (N the total number of rows), far
    below the single-machine sqrt(log p / n_k).  The constant matters, and is derived here.

The local threshold (``local_rule="binomial"``, the default)
    Write the threshold in units of the local standard error, lambda_j = z sigma_hat_j /
    sqrt(n_k).  On a null coordinate (mean 0) each machine votes +1 with probability
    q = P(T_{n_k - 1} > z) (exactly for normal rows, T Student's t), -1 with the same
    probability, and the plain majority makes the coordinate non-zero with probability
    exactly 2 P(Bin(m, q) > m / 2) (the two events are disjoint).  The default takes the
    largest q with 2 P(Bin(m, q) > m / 2) <= level / p (:func:`null_vote_probability`,
    ``level`` = ``null_level``, default 0.05), so the expected number of null coordinates
    the non-private vote selects is at most ``level`` whatever m, and z = the t quantile of
    q (:func:`local_z`).  q depends only on the public m, p and level; z on the machine's
    own row count.  As m grows q -> 1/2 and z ~ c sqrt(log p / m), the paper's order.
    Why not the paper's constant: with lambda = c sigma sqrt(log p / N) the null machine
    probability is Phi_bar(c sqrt(log p / m)) and, by the normal approximation to the
    binomial, a null coordinate wins the majority with probability about
    2 Phi_bar(c sqrt(2 log p / pi)), a constant in m near p^(-c^2 / pi): with c = sqrt(2)
    (``local_rule="sqrt_log_p"``, the previous default) about p^(1 - 2 / pi) false
    positives for every m, so the false discovery rate does not fall as machines are
    added (benchmarks/README.md, bench_dpvote_recovery.py).

Regression (Liu et al. 2022, eqs. (14)-(15), Algorithm 4)
    v = sign(beta_hat(lambda_k)), where beta_hat(lambda) is the local Lasso
    argmin (1 / (2 n_k)) ||y - X b||^2 + lambda ||b||_1 (scikit-learn's scaling; columns and
    response centred locally when the formula has an intercept) and lambda_k is the smallest
    lambda >= lambda_0 whose solution has at most K non-zeros.  The Lasso path is piecewise
    linear with the active set changing only at its knots, so lambda_k is lambda_0 itself or
    a knot of the LARS path (Efron et al. 2004), which is how it is computed.  Default
    lambda_0 = z sigma_hat / sqrt(n_k) with the z of the mean model (the local standard
    error of x_j'e / n_k for a unit-variance column; ``local_rule="sqrt_log_p"``: the previous
    sigma_hat sqrt(2 log p / N)), sigma_hat the local residual standard deviation of least
    squares (the standard deviation of y when n_k <= 2 (p + 1)).  Default K = p, no cap
    (:func:`dpstats.vote.dpvote.default_local_size`).  The default assumes
    columns on comparable scales (as in the paper's simulations).

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


#: Default ``null_level``: the bound on the expected number of null coordinates the plain
#: majority vote selects (a family-wise 5 %).
DEFAULT_NULL_LEVEL = 0.05
#: The local threshold rules: "binomial" (derived from the exact binomial probability of a
#: null majority, the default) and "sqrt_log_p" (sigma_hat sqrt(2 log p / N), the previous default).
LOCAL_RULES = ("binomial", "sqrt_log_p")


def _log_p(p: int) -> float:
    return math.log(max(p, 2))


def null_majority_probability(machines: int, q: float) -> float:
    """Exact P(a null coordinate is non-zero in the plain vote) = 2 P(Bin(m, q) > m / 2).

    Each machine votes +1 and -1 with probability q each (0 otherwise), independently.
    """
    from scipy.stats import binom

    m = int(machines)
    return float(2.0 * binom.sf(m // 2, m, q))


def null_vote_probability(machines: int, p: int, level: float = DEFAULT_NULL_LEVEL) -> float:
    """The largest q <= 1/2 with 2 P(Bin(m, q) > m / 2) <= level / p (public: m, p, level).

    P(Bin(m, q) >= a) is the regularised incomplete beta function I_q(a, m - a + 1), so q
    is its inverse at level / (2 p), a = floor(m / 2) + 1; the float is then stepped down
    until the exact binomial tail is within the target.
    """
    from scipy.special import betaincinv

    m = int(machines)
    target = float(level) / (2.0 * max(int(p), 1))
    if null_majority_probability(m, 0.5) / 2.0 <= target:
        return 0.5
    a = m // 2 + 1
    q = float(betaincinv(a, m - a + 1, target))
    while q > 0 and null_majority_probability(m, q) / 2.0 > target:
        q = math.nextafter(q, 0.0) if q < 1e-300 else q * (1 - 1e-12)
    return q


def local_z(q: float, dof: int) -> float:
    """z with P(T_dof > z) = q (Student's t; the normal quantile when dof is not positive)."""
    from scipy.stats import norm, t

    if q >= 0.5:
        return 0.0
    return float(t.isf(q, dof)) if dof >= 1 else float(norm.isf(q))


def default_mean_threshold(X, total_rows: int, *, machines=None, rule="sqrt_log_p",
                           level=DEFAULT_NULL_LEVEL) -> np.ndarray:
    """The per-column local threshold of the mean model (module docstring).

    ``rule="binomial"``: lambda_j = z sigma_hat_j / sqrt(n_k), z = :func:`local_z` of
    :func:`null_vote_probability` (m = ``machines``) with n_k - 1 degrees of freedom; a
    machine with fewer than 2 rows has no scale and gets an infinite threshold (it votes 0).
    ``rule="sqrt_log_p"``: lambda_j = sigma_hat_j sqrt(2 log p / N) (total N).
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    if rule == "binomial":
        if n < 2:
            return np.full(p, np.inf)
        z = local_z(null_vote_probability(machines, p, level), n - 1)
        return X.std(axis=0, ddof=1) * (z / math.sqrt(n))
    ddof = 1 if n > 1 else 0
    sd = X.std(axis=0, ddof=ddof)
    return sd * math.sqrt(2.0 * _log_p(p) / total_rows)


def mean_signs(X, threshold) -> np.ndarray:
    """Thresholded local means: sign(xbar_j) where |xbar_j| > threshold_j, else 0."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        return np.zeros(X.shape[1], dtype=np.int8)
    xbar = X.mean(axis=0)
    return np.where(np.abs(xbar) > threshold, np.sign(xbar), 0).astype(np.int8)


def default_lasso_lambda0(X, y, total_rows: int, intercept: bool = True, *, machines=None, rule="sqrt_log_p",
                          level=DEFAULT_NULL_LEVEL) -> float:
    """lambda_0 = z sigma_hat / sqrt(n_k) (``rule="binomial"``) or sigma_hat sqrt(2 log p / N).

    sigma_hat is the local residual standard deviation of least squares (n_k - p - 1
    degrees of freedom for z), or the standard deviation of y (n_k - 1) on a machine
    with n_k <= 2 (p + 1).
    """
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
        dof = n - 1
    if rule == "binomial":
        return sigma * local_z(null_vote_probability(machines, p, level), dof) / math.sqrt(max(n, 1))
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


def local_sign_vector(X, y, *, total_rows: int, lam=None, max_nonzero: int, intercept: bool = True,
                      machines=None, rule="sqrt_log_p", level=DEFAULT_NULL_LEVEL) -> np.ndarray:
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
    machines : int
        m, the number of machines (public); needed by ``rule="binomial"``.
    rule : {"binomial", "sqrt_log_p"}
        The default threshold when ``lam`` is None (module docstring; :mod:`dpstats.vote.dpvote`
        passes "binomial" unless the caller asks for the previous rule).
    level : float
        The bound on the expected number of null coordinates of the plain vote (``rule="binomial"``).
    """
    if rule == "binomial" and lam is None and machines is None:
        raise ValueError("rule='binomial' needs machines= (the public number of machines)")
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        # A machine left without rows (e.g. every row omitted by na_action="omit") has no
        # signal: it votes 0 everywhere.
        return np.zeros(X.shape[1], dtype=np.int8)
    if y is None:
        threshold = (default_mean_threshold(X, total_rows, machines=machines, rule=rule, level=level)
                     if lam is None else float(lam))
        return mean_signs(X, threshold)
    if X.shape[0] < 2:
        return np.zeros(X.shape[1], dtype=np.int8)
    try:
        with np.errstate(all="ignore"):
            lambda0 = (default_lasso_lambda0(X, y, total_rows, intercept, machines=machines, rule=rule, level=level)
                       if lam is None else float(lam))
            return lasso_signs(X, y, lambda0, max_nonzero, intercept)
    except (ArithmeticError, ValueError, np.linalg.LinAlgError):
        # A machine whose local fit fails on its own values (|x| near 1e300 overflows LARS)
        # abstains, voting 0 everywhere: its vote is still a function of its own rows only,
        # so the group-privacy argument of the vote is unchanged, and the call stays total.
        return np.zeros(X.shape[1], dtype=np.int8)
