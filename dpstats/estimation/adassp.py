"""AdaSSP: private least squares from noisy sufficient statistics with an adaptive ridge.

The mechanism follows Wang (2018), "Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain": perturb the sufficient
statistics of least squares once, release a noisy estimate of the design's smallest
eigenvalue, and solve a ridge problem whose penalty is just large enough for the noisy
Gram matrix to be safely invertible.  The statement and the sensitivities below are
derived for the data dpstats refits on; the calibration and the ridge rule are this
package's own.

Data
----
The refit uses the complete rows of the selection's design restricted to the selected
terms S (s of them), every value clipped to its public range and mapped to [-1, 1]
(:class:`dpstats.privacy.bounds.TermRanges`).  Each row gives the augmented vector

    v = (1, x_S, y) in [-1, 1]^m,   m = s + 2.

The design Z has the column of ones first when the formula has an intercept (then
d = s + 1 design columns), and is x_S alone otherwise (d = s).  The column of ones is in
v either way: without an intercept its entries are not used by the fit but give the
bootstrap a noisy row count (the number of complete rows is private under
``na_action="omit"`` and under add/remove neighbours).

Nothing is centred.  Centring by the data's own means inside the statistics would make
one record move every row (and so every entry of the centred Gram matrix); the intercept
is instead the column of ones, and the public midpoint of each range already centres the
mapped values roughly (:class:`~dpstats.privacy.bounds.TermRanges`).

What is released (once per call)
--------------------------------
1. G~ = G + E_G: the upper triangle (diagonal included) of the augmented Gram matrix
   G = sum_i v_i v_i', with independent noise on each of its m (m + 1) / 2 entries.  G
   holds the count n (G_00), A = Z'Z, Z'y and y'y.
2. l~ = lambda_min(A) + e_l, the smallest eigenvalue of the design's Gram matrix plus
   independent noise.

Everything else (the ridge, the coefficients on the data's units, the bootstrap
intervals) is computed from (G~, l~) and public parameters only: post-processing.

Sensitivities (replace one record, and add or remove one)
---------------------------------------------------------
Replacing the record with augmented vector v by one with w changes G by
M = v v' - w w'; removing v (or adding it) changes G by v v', which is the case w = 0.
Both v and w lie in [-1, 1]^m (the coordinate of ones is 1 in both, a special case), so
the bounds below cover both relations at once.

* L2 (Gaussian noise).  Summing the upper triangle counts each off-diagonal entry once:

      ||M||_upper^2 = (||M||_F^2 + sum_i M_ii^2) / 2
                    = (||v||^4 + ||w||^4 + sum_i (v_i^2 - w_i^2)^2) / 2 - (v'w)^2.

  With a_i = v_i^2 and b_i = w_i^2 in [0, 1] the first part is convex in (a, b), so its
  maximum is at a, b in {0, 1}^m.  There, with alpha and beta the numbers of ones,
  sum_i (a_i - b_i)^2 counts the coordinates where a and b differ, at most
  (m - alpha) + (m - beta), and (alpha^2 + beta^2 + 2m - alpha - beta) / 2 <= m^2.  Hence

      Delta_2 = m,

  attained by two vertices of the cube with v'w = 0 (possible when m is even; for odd m
  the largest value at the vertices is sqrt(m^2 - 1)).  Removing a row changes G by at
  most sqrt((m^2 + m) / 2) <= m.
* L1 (Laplace noise).  Write v = p + q and w = p - q, so |p_i| + |q_i| <= 1 and
  M_ij = 2 (p_i q_j + q_i p_j).  With P = sum |p_i| and Q = sum |q_i|,

      sum_{i<=j} |M_ij| <= 2 sum_{i!=j} |p_i| |q_j| + 4 sum_i |p_i| |q_i|
                         = 2 P Q + 2 sum_i |p_i| |q_i| <= m^2 / 2 + m / 2,

  since P + Q <= m and |p_i| |q_i| <= 1/4.  So Delta_1 = m (m + 1) / 2, attained by
  removing (or adding) a vertex of the cube (w = 0, p = q = v / 2).
* The smallest eigenvalue.  A changes by z z' - u u' (z, u the rows of the design, with
  ||z||^2, ||u||^2 <= d), and by Weyl's inequality lambda_min moves by at most
  max(||z||^2, ||u||^2), so Delta_l = d, in L1 and L2 alike (one number).  Attained, e.g.,
  by the design rows (1, -1) k times, one of them replaced by (1, 1): lambda_min goes from
  0 to 2 = d.

The tests check each bound by brute force over neighbours (random rows and the corners
of the cube) and check that it is attained.

Noise and privacy
-----------------
``delta = 0`` (the default): the Laplace mechanism, pure epsilon-DP.  The Gram matrix gets
``1 - EIGEN_SHARE`` = 90 % of epsilon (Laplace scale Delta_1 / (0.9 epsilon) per entry),
the smallest eigenvalue 10 % (scale d / (0.1 epsilon)); they compose to epsilon.
This is the package's default because every selection method is pure-DP and an
``Accountant`` holds delta = 0 unless told otherwise, and because ``dp_select(...,
estimate=share)`` spends a share of epsilon only.

``delta > 0``: the Gaussian mechanism, (epsilon, delta)-DP, which is Wang's (2018)
version.  Both releases are Gaussian, so together they are one Gaussian mechanism and are
mu-GDP with mu^2 = (Delta_2 / sigma_G)^2 + (Delta_l / sigma_l)^2 (Dong, Roth and Su 2022);
mu is the largest value that is (epsilon, delta)-DP (:mod:`dpstats.estimation.gaussian_dp`),
split 90 % / 10 % of mu^2: sigma_G = m / (mu sqrt(0.9)), sigma_l = d / (mu sqrt(0.1)).
Its noise grows like m, the Laplace noise like m^2 / 2: at delta = 1e-6 the Gaussian
variant adds less noise per entry from s = 3 selected terms on at epsilon = 1, and from
s = 5 on at epsilon = 10 (the ledger entry's details show the scales).

Both variants are private under replace-one and under add/remove neighbours with the
same (epsilon, delta), because every bound above covers both relations and nothing
released depends on n except through the noisy G_00.

The 10 % for the eigenvalue: it only sets the ridge, and the ridge is zero whenever the
design is well conditioned compared with the noise (the usual case for n in the
thousands); the coefficients' accuracy comes from the Gram matrix.

Ridge rule (post-processing)
----------------------------
Let E be the noise on the design block of G (d x d, symmetric).  By Gershgorin's theorem
||E||_2 <= d max |E_ij|, and by a union bound over its d (d + 1) / 2 entries
max |E_ij| <= q with probability at least 1 - rho, where q is that entry quantile
(Laplace: b log(d (d + 1) / (2 rho)); Gaussian: sigma Phi^-1(1 - rho / (d (d + 1)))).
So tau = d q bounds ||E||_2 with probability >= 1 - rho (rho = ``RIDGE_FAILURE`` = 0.05).
A lower confidence bound of lambda_min(A) is l_low = max(l~ - q_l, 0), q_l the one-sided
(1 - rho) quantile of e_l.  The ridge is

    lam = max(0, tau - l_low),

so that, with probability at least 1 - 2 rho, lambda_min(A~ + lam I) >=
lambda_min(A) - tau + lam >= 0.  As a safety net (the remaining probability), lam is raised
so that the smallest eigenvalue of A~ + lam I is at least the noise's standard deviation.
The coefficients are theta~ = (A~ + lam I)^-1 (Z'y)~, every coefficient (the intercept
included) under the same ridge.  With epsilon = inf there is no noise, lam = 0 and theta~
is least squares (the minimum-norm solution, as statsmodels' pinv, if A is singular).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from .gaussian_dp import gdp_mu

#: Share of the budget (of epsilon for Laplace noise, of mu^2 for Gaussian noise) spent on
#: the smallest eigenvalue; the rest goes to the augmented Gram matrix.
EIGEN_SHARE = 0.1

#: rho of the ridge rule: the noise exceeds the ridge's bound with probability at most rho.
RIDGE_FAILURE = 0.05

#: Eigenvalues of the regularised Gram matrix below this fraction of the largest are treated
#: as zero (minimum-norm solution), as for a singular design at epsilon = inf.
_SINGULAR_RTOL = 1e-12

NOISE_KINDS = ("laplace", "gaussian", "none")


def gram_sensitivity_l1(m) -> float:
    """Delta_1 = m (m + 1) / 2 of the upper triangle of the augmented Gram matrix (module docstring)."""
    return m * (m + 1) / 2.0


def gram_sensitivity_l2(m) -> float:
    """Delta_2 = m of the upper triangle of the augmented Gram matrix (module docstring)."""
    return float(m)


def eigen_sensitivity(d) -> float:
    """Delta_l = d of the smallest eigenvalue of the design's Gram matrix (Weyl; module docstring)."""
    return float(d)


@dataclass(frozen=True)
class NoiseSpec:
    """The public noise parameters of one AdaSSP release.

    ``gram_scale`` and ``eigen_scale`` are the Laplace scales b or the Gaussian standard
    deviations sigma (0 for ``kind="none"``, epsilon = inf).  ``m`` is the length of the
    augmented vector (1, x_S, y), ``d`` the number of design columns.
    """

    kind: str
    epsilon: float
    delta: float
    m: int
    d: int
    gram_scale: float
    eigen_scale: float
    gram_sensitivity: float
    eigen_sensitivity: float
    mu: float | None = None

    @property
    def gram_sd(self) -> float:
        """Standard deviation of the noise on one entry of the Gram matrix."""
        return math.sqrt(2.0) * self.gram_scale if self.kind == "laplace" else self.gram_scale

    def entry_quantile(self, tail) -> float:
        """q with P(|noise on one Gram entry| > q) = tail."""
        if self.kind == "laplace":
            return self.gram_scale * math.log(1.0 / tail)
        if self.kind == "gaussian":
            return self.gram_scale * float(ndtri(1.0 - tail / 2.0))
        return 0.0

    def eigen_quantile(self, tail) -> float:
        """q_l with P(noise on the eigenvalue > q_l) = tail (one-sided)."""
        if self.kind == "laplace":
            return self.eigen_scale * math.log(1.0 / (2.0 * tail))
        if self.kind == "gaussian":
            return self.eigen_scale * float(ndtri(1.0 - tail))
        return 0.0

    def draw(self, rng, scale, size):
        """Noise of this kind with the given scale, from the call's RandomSource."""
        if self.kind == "laplace":
            return np.asarray(rng.laplace(scale, size), dtype=np.float64)
        if self.kind == "gaussian":
            return np.asarray(rng.gaussian(scale, size), dtype=np.float64)
        return np.zeros(size)

    def details(self) -> dict:
        """Public parameters for the ledger entry."""
        out = {"noise": self.kind, "augmented_length_m": self.m, "design_columns_d": self.d,
               "gram_scale": self.gram_scale, "eigenvalue_scale": self.eigen_scale,
               "gram_sensitivity": self.gram_sensitivity, "eigenvalue_sensitivity": self.eigen_sensitivity,
               "eigenvalue_share": EIGEN_SHARE}
        if self.kind == "laplace":
            out.update(sensitivity_norm="L1", gram_epsilon=(1 - EIGEN_SHARE) * self.epsilon,
                       eigenvalue_epsilon=EIGEN_SHARE * self.epsilon)
        elif self.kind == "gaussian":
            out.update(sensitivity_norm="L2", gdp_mu=self.mu)
        return out


def calibrate(epsilon, delta, m, d) -> NoiseSpec:
    """The noise of a release at (epsilon, delta): Laplace for delta = 0, Gaussian for delta > 0."""
    epsilon, delta = float(epsilon), float(delta)
    if math.isinf(epsilon):
        return NoiseSpec("none", epsilon, 0.0, m, d, 0.0, 0.0, 0.0, 0.0)
    if delta == 0:
        d1, dl = gram_sensitivity_l1(m), eigen_sensitivity(d)
        return NoiseSpec("laplace", epsilon, 0.0, m, d, d1 / ((1 - EIGEN_SHARE) * epsilon),
                         dl / (EIGEN_SHARE * epsilon), d1, dl)
    mu = gdp_mu(epsilon, delta)
    d2, dl = gram_sensitivity_l2(m), eigen_sensitivity(d)
    return NoiseSpec("gaussian", epsilon, delta, m, d, d2 / (mu * math.sqrt(1 - EIGEN_SHARE)),
                     dl / (mu * math.sqrt(EIGEN_SHARE)), d2, dl, mu)


# ------------------------------------------------------------------ layout of the statistics
def augmented_rows(X, y) -> np.ndarray:
    """V = [1, X, y] (n x m) of the mapped rows."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    X = X if X.ndim == 2 else X.reshape(n, -1)  # (0, k) stays (0, k): zero complete rows are data too
    return np.hstack([np.ones((n, 1)), X, np.asarray(y, dtype=np.float64).reshape(n, 1)])


def augmented_gram(X, y) -> np.ndarray:
    """G = V'V of the mapped rows (sums over row blocks: Dask partitions add up)."""
    V = augmented_rows(X, y)
    return V.T @ V


def design_columns(m, intercept) -> np.ndarray:
    """Indices of the design columns Z in the augmented vector (1, x_S, y)."""
    return np.arange(0 if intercept else 1, m - 1)


def upper(G) -> np.ndarray:
    """The upper triangle of G (diagonal included), row by row: the released vector."""
    return G[np.triu_indices(G.shape[-1])]


def from_upper(values, m) -> np.ndarray:
    """The symmetric m x m matrix whose upper triangle is ``values``."""
    G = np.zeros((m, m))
    iu = np.triu_indices(m)
    G[iu] = values
    G[(iu[1], iu[0])] = values
    return G


def smallest_eigenvalue(G, intercept) -> float:
    cols = design_columns(G.shape[0], intercept)
    if cols.size == 0:
        return 0.0
    return float(np.linalg.eigvalsh(G[np.ix_(cols, cols)])[0])


# ------------------------------------------------------------------ the mechanism
@dataclass(frozen=True)
class Release:
    """The mechanism's output: the noisy augmented Gram matrix and the noisy smallest eigenvalue."""

    gram: np.ndarray
    min_eigenvalue: float
    spec: NoiseSpec
    intercept: bool

    def to_dict(self) -> dict:
        return {"gram_upper": upper(self.gram).tolist(), "min_eigenvalue": float(self.min_eigenvalue)}


def release(G, intercept, spec: NoiseSpec, rng) -> Release:
    """Add the calibrated noise to the augmented Gram matrix and to lambda_min(A): the only step that reads data."""
    m = G.shape[0]
    noisy = from_upper(upper(G) + spec.draw(rng, spec.gram_scale, m * (m + 1) // 2), m)
    lam = smallest_eigenvalue(G, intercept) + float(spec.draw(rng, spec.eigen_scale, 1)[0])
    return Release(noisy, lam, spec, bool(intercept))


# ------------------------------------------------------------------ post-processing
def ridge(A, min_eigenvalue, spec: NoiseSpec) -> np.ndarray:
    """The adaptive ridge for a batch of noisy design blocks A (B, d, d) and eigenvalues (B,).

    The rule of the module docstring; zero without noise.
    """
    A = np.asarray(A, dtype=np.float64)
    lam_noisy = np.asarray(min_eigenvalue, dtype=np.float64).reshape(A.shape[0])
    if spec.kind == "none":
        return np.zeros(A.shape[0])
    d = A.shape[-1]
    tau = d * spec.entry_quantile(RIDGE_FAILURE / (d * (d + 1) / 2.0))
    low = np.maximum(lam_noisy - spec.eigen_quantile(RIDGE_FAILURE), 0.0)
    lam = np.maximum(tau - low, 0.0)
    # Safety net for the event of probability <= 2 rho: keep A~ + lam I clearly positive definite.
    floor = spec.gram_sd
    smallest = np.linalg.eigvalsh(A)[:, 0]
    return np.where(smallest + lam < floor, floor - smallest, lam)


def solve(A, c, lam) -> np.ndarray:
    """theta = (A + lam I)^-1 c for a batch (minimum norm where A + lam I is singular)."""
    A = np.asarray(A, dtype=np.float64)
    d = A.shape[-1]
    e, Q = np.linalg.eigh(A + np.asarray(lam)[:, None, None] * np.eye(d))
    w = np.einsum("bji,bj->bi", Q, c)
    scale = np.maximum(np.max(np.abs(e), axis=1, keepdims=True), np.finfo(float).tiny)
    keep = e > _SINGULAR_RTOL * scale
    coef = np.where(keep, w / np.where(keep, e, 1.0), 0.0)
    return np.einsum("bij,bj->bi", Q, coef)


def fit(gram_batch, min_eigenvalue, spec: NoiseSpec, intercept):
    """(theta, lam) from released statistics: a batch of augmented Gram matrices (B, m, m)."""
    gram_batch = np.asarray(gram_batch, dtype=np.float64)
    m = gram_batch.shape[-1]
    cols = design_columns(m, intercept)
    A = gram_batch[:, cols][:, :, cols]
    c = gram_batch[:, cols, m - 1]
    lam = ridge(A, min_eigenvalue, spec)
    return solve(A, c, lam), lam


def fit_release(rel: Release):
    """(theta, lam) of one release (coefficients on the mapped scale)."""
    theta, lam = fit(rel.gram[None], np.array([rel.min_eigenvalue]), rel.spec, rel.intercept)
    return theta[0], float(lam[0])
