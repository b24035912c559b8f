"""Objective perturbation: the minimiser of a randomly tilted, ridged empirical risk.

The mechanism is Algorithm 1 of Kifer, Smith and Thakurta (2012), "Private convex
empirical risk minimization and high-dimensional regression" (pure epsilon-DP variant),
which extends Chaudhuri, Monteleoni and Sarwate (2011) to constrained parameter sets.
Prastakos, Behdin and Mazumder (2025) use it to fit coefficients on a privately selected
support.  The constants below are derived for the data dpstats refits on; the budget
split and the interval construction are this package's own.

Data
----
As for AdaSSP (:mod:`dpstats.estimation.adassp`): the complete rows of the selection's
design restricted to the selected terms, every term clipped to its public range and
mapped to [-1, 1] (:class:`dpstats.privacy.bounds.TermRanges`).  A row gives the design
vector z in [-1, 1]^d (the column of ones first when the formula has an intercept, so
d = s + 1, else d = s) and a response y: the mapped numeric response in [-1, 1] for a
least-squares selection, the class coded -1 / +1 for a hinge-loss selection (not mapped).
Every design vector has ||z||_2^2 <= d.

The mechanism
-------------
With a loss l(theta; z, y), a closed convex set F, a ridge Delta > 0 and a noise vector b
drawn with density nu(b) proportional to exp(-eps_b ||b||_2 / Delta_g), release

    theta^ = argmin_{theta in F}  sum_i l(theta; z_i, y_i) + (Delta / 2) ||theta||^2 + b' theta.

The norm ||b|| is Gamma(d, scale Delta_g / eps_b) and its direction uniform on the sphere
(sampled from the call's RandomSource: a sum of d exponentials, and d normalised Gaussian
draws).  Kifer et al. write the density as exp(-eps_b ||b|| / (2 zeta)) with zeta the
Lipschitz constant of the loss on F; Delta_g below is the sensitivity of one record's
gradient, which is at most 2 zeta and is what the proof uses.

Losses and constants
--------------------
* Squared loss (least-squares selections): l = (y - z'theta)^2 / 2 over the public ball
  F = {||theta||_2 <= R} on every coefficient (the intercept included) of the mapped
  scale.  The gradient is (z z') theta - y z and the Hessian z z'.

  - Lipschitz constant on F: ||grad|| <= (1 + ||z|| R) ||z|| <= zeta = sqrt(d) + d R.
  - Gradient sensitivity: for two records (z, y), (w, y'),
    grad - grad' = (z z' - w w') theta - (y z - y' w).  The eigenvalues of z z' - w w' lie
    in [-||w||^2, ||z||^2], so its operator norm is <= d, and ||y z - y' w|| <= 2 sqrt(d):

        Delta_g = d R + 2 sqrt(d)      (<= 2 zeta; d R + sqrt(2 d) is attained for even d
                                        by two orthogonal corners of the cube).

  - Smoothness: the Hessian of one record is z z', rank one with eigenvalue <= lambda = d.

  R is public: ``radius=`` of ``estimate``, by default the selection's radius when it has
  a finite one (it is released in its public call), else 1.  On the mapped scale every
  linear model whose predictions stay in the response's range over the terms' ranges has
  ||theta||_1 <= 1, hence ||theta||_2 <= 1, so R = 1 excludes no such model.
  The minimiser is computed exactly: with K = A + Delta I (A = Z'Z) and g = Z'y - b, it is
  K^-1 g if that lies in the ball, and otherwise (K + mu I)^-1 g with the unique mu > 0
  that puts it on the sphere (the trust-region subproblem with a positive definite K).
  mu solves a one-dimensional secular equation, by Newton's method on
  1 / ||theta(mu)|| - 1 / R, which converges monotonically (More and Sorensen 1983), to
  floating-point precision.  The release reads the data only through A and Z'y, so a Dask
  data set is reduced partition by partition, as for AdaSSP.

* Logistic loss (hinge-loss selections; a smooth surrogate of the hinge, as in Chaudhuri
  et al. 2011): l = log(1 + exp(-y z'theta)), y in {-1, +1}, over F = R^d (no constraint).

  - Lipschitz: ||grad|| = sigma(-y z'theta) ||z|| < zeta = sqrt(d); Delta_g = 2 sqrt(d)
    (the supremum, approached but not attained).
  - Smoothness: the Hessian sigma (1 - sigma) z z' has rank one and eigenvalue
    <= lambda = d / 4.

  The minimiser of the strongly convex (modulus Delta), smooth objective is found by
  Newton's method from theta = 0, with a backtracking line search until the squared Newton
  decrement is below 1e-8 (1 + |objective|) and full steps after that, iterated until a step
  moves theta by less than 1e-13 (1 + ||theta||) (then one Newton step more) or the
  gradient stops decreasing (its rounding floor); Newton's
  quadratic convergence puts the result within floating-point rounding of the exact
  minimiser.  (Like every floating-point implementation of a continuous mechanism, the
  guarantee is for the exact arithmetic; the difference here is at rounding level.)

Budget
------
The call's epsilon is split into eps_J = ``JACOBIAN_SHARE`` * eps_op = eps_op / 2 (paid by
the ridge) and eps_b = eps_op - eps_J (paid by the noise), as in Kifer et al.:

    Delta = lambda / (exp(eps_J) - 1)        (Kifer et al. take 2 lambda / eps, slightly larger).

For the squared loss eps_op = (1 - ``INTERVAL_SHARE``) epsilon = 0.8 epsilon; the other
0.2 epsilon releases the augmented Gram matrix of (1, x_S, y) with Laplace noise (L1
sensitivity m (m + 1) / 2, m = s + 2, :mod:`dpstats.estimation.adassp`), which only the
parametric bootstrap reads (:mod:`dpstats.estimation.op_bootstrap`).  For the logistic
loss eps_op = epsilon and no intervals are released (nothing about the design is).

Privacy statement
-----------------
The output of this module is epsilon-DP (pure; delta = 0) under replace-one *and* under
add/remove neighbours.  Proof.  Write L_D(theta) = sum_i l(theta; z_i, y_i) and
b_D(theta) = -(grad L_D(theta) + Delta theta) (the noise that makes theta stationary).

* Interior outputs (the logistic loss, and ||theta|| < R for the squared loss).  The
  first-order condition b = b_D(theta) is a bijection between noise and output (the
  objective is strongly convex), so theta^ has density
  p_D(theta) = nu(b_D(theta)) det(H_D(theta) + Delta I), H_D the Hessian of L_D.
* Boundary outputs (squared loss, ||theta|| = R).  Then b = b_D(theta) - mu theta for a
  unique multiplier mu >= 0, and (theta, mu) -> b is a bijection onto the rest of the
  noise space; with T an orthonormal basis of the tangent space at theta, the pair
  (theta, mu) has density nu(b_D(theta) - mu theta) R det(T'(H_D + (Delta + mu) I) T)
  with respect to (surface measure) x (Lebesgue), and theta^'s law on the sphere is its
  integral over mu.
* Replacing one record changes b_D(theta) (and b_D(theta) - mu theta) by the difference of
  two gradients at the same theta, of norm <= Delta_g, so nu changes by a factor at most
  exp(eps_b).  Adding or removing a record changes it by one gradient, of norm
  <= zeta <= Delta_g: the same bound.
* The Hessians differ by the Hessians of the differing records, psd of rank one with
  eigenvalue <= lambda, and everything else (the other records' Hessians, Delta I, mu I,
  and their compression by T) is >= Delta I.  For M >= Delta I and such a rank-one E,
  det(M + E) / det(M) = 1 + e' M^-1 e <= 1 + lambda / Delta, and det(M + E') >= det(M);
  so the determinant changes by a factor at most 1 + lambda / Delta = exp(eps_J).
* Every factor bound holds pointwise (in mu too), so the densities of every output, and
  hence the probabilities of every event, differ by at most exp(eps_b + eps_J) = exp(eps_op).

With the squared loss the Gram release composes with it: eps_op + 0.2 epsilon = epsilon.
Nothing depends on the row count (the Gram release's count is noisy), which is why the
add/remove statement holds with the same epsilon.  The Gaussian variant ((epsilon,
delta)-DP) of Kifer et al. is not offered: ``delta`` must be 0.

epsilon = inf: no noise, Delta = 0, no Gram noise: the least-squares fit constrained to the
ball (ordinary least squares when that lies inside) or the logistic maximum-likelihood fit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import DataContentError

#: Share of the objective perturbation's epsilon paid by the ridge (the Jacobian factor).
JACOBIAN_SHARE = 0.5

#: Squared loss: share of the call's epsilon spent on the Gram release the bootstrap reads.
INTERVAL_SHARE = 0.2

#: Default radius of the public ball (squared loss), when the selection has no finite one.
DEFAULT_RADIUS = 1.0

LOSSES = ("squared", "logistic")

#: Newton's method (logistic loss): stop when a step is below this relative size, then step once more.
NEWTON_STEP_TOL = 1e-13
NEWTON_MAX_ITER = 500
#: ... and take full Newton steps (no line search) once the squared Newton decrement is below
#: this fraction of the objective's size.
NEWTON_FULL_STEP = 1e-8


# ------------------------------------------------------------------ constants
def lipschitz(loss, d, radius=None) -> float:
    """zeta: a bound on ||grad l(theta; z, y)|| over F (module docstring)."""
    if loss == "squared":
        return math.sqrt(d) + d * float(radius)
    return math.sqrt(d)


def gradient_sensitivity(loss, d, radius=None) -> float:
    """Delta_g: a bound on ||grad l(theta; v) - grad l(theta; w)|| over F and two records."""
    if loss == "squared":
        return d * float(radius) + 2.0 * math.sqrt(d)
    return 2.0 * math.sqrt(d)


def smoothness(loss, d) -> float:
    """lambda: the largest eigenvalue of one record's (rank-one) Hessian."""
    return float(d) if loss == "squared" else d / 4.0


@dataclass(frozen=True)
class PerturbationSpec:
    """The public parameters of one objective-perturbation release.

    ``epsilon`` is the mechanism's own share (eps_op); ``noise_epsilon`` (eps_b) and
    ``jacobian_epsilon`` (eps_J) add up to it.  ``ridge`` is Delta, ``noise_scale`` the
    Gamma scale Delta_g / eps_b of ||b|| (0 without noise).
    """

    loss: str
    epsilon: float
    d: int
    radius: float
    lipschitz: float
    gradient_sensitivity: float
    smoothness: float
    noise_epsilon: float
    jacobian_epsilon: float
    ridge: float
    noise_scale: float

    @property
    def private(self) -> bool:
        return not math.isinf(self.epsilon)

    def details(self) -> dict:
        out = {"loss": self.loss, "design_columns_d": self.d, "lipschitz_zeta": self.lipschitz,
               "gradient_sensitivity": self.gradient_sensitivity, "smoothness_lambda": self.smoothness,
               "objective_epsilon": self.epsilon, "noise_epsilon": self.noise_epsilon,
               "jacobian_epsilon": self.jacobian_epsilon, "ridge_Delta": self.ridge,
               "noise_norm": f"Gamma(shape {self.d}, scale {self.noise_scale:g}), uniform direction"}
        if self.loss == "squared":
            out["radius"] = self.radius
        return out


def calibrate(loss, epsilon, d, radius=None) -> PerturbationSpec:
    """The ridge and the noise of a release at the mechanism's epsilon (eps_op)."""
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}")
    epsilon = float(epsilon)
    radius = math.inf if loss == "logistic" else float(radius)
    zeta, dg, lam = lipschitz(loss, d, radius), gradient_sensitivity(loss, d, radius), smoothness(loss, d)
    if math.isinf(epsilon):
        return PerturbationSpec(loss, epsilon, d, radius, zeta, dg, lam, math.inf, math.inf, 0.0, 0.0)
    eps_j = JACOBIAN_SHARE * epsilon
    eps_b = epsilon - eps_j
    # lam / (e^eps_j - 1), written so that it never overflows (e^eps_j is inf past eps_j ~ 709)
    ridge = lam * math.exp(-eps_j) / -math.expm1(-eps_j)
    return PerturbationSpec(loss, epsilon, d, radius, zeta, dg, lam, eps_b, eps_j, ridge, dg / eps_b)


def draw_noise(spec: PerturbationSpec, rng, size=None) -> np.ndarray:
    """b with density proportional to exp(-eps_b ||b|| / Delta_g): Gamma(d) norm, uniform direction.

    ``size``: None for one vector (d,), or a number of vectors (size, d).
    """
    count = 1 if size is None else int(size)
    d = spec.d
    if not spec.private or d == 0:
        out = np.zeros((count, d))
    else:
        norm = np.asarray(rng.exponential((count, d)), dtype=np.float64).sum(axis=1) * spec.noise_scale
        direction = np.asarray(rng.gaussian(1.0, (count, d)), dtype=np.float64)
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        out = direction * norm[:, None]
    return out[0] if size is None else out


# ------------------------------------------------------------------ squared loss over the ball
def solve_squared(A, c, b, ridge, radius):
    """argmin over ||theta|| <= radius of theta'(A + ridge I)theta / 2 - (c - b)'theta, and its multiplier mu.

    Batched over the rows of ``c`` and ``b`` (B, d) with one A; a single vector works too.
    Returns (theta, mu) with mu = 0 for interior solutions.
    """
    A = np.asarray(A, dtype=np.float64)
    single = np.ndim(c) == 1
    g = np.atleast_2d(np.asarray(c, dtype=np.float64) - np.asarray(b, dtype=np.float64))
    d = A.shape[0]
    if d == 0:
        out = np.zeros((g.shape[0], 0)), np.zeros(g.shape[0])
        return (out[0][0], 0.0) if single else out
    e, Q = np.linalg.eigh(A + ridge * np.eye(d))
    e = np.maximum(e, 0.0)
    w = g @ Q  # coordinates of g in the eigenbasis
    scale = max(float(np.max(np.abs(e))), np.finfo(float).tiny)
    keep = e > 1e-12 * scale  # minimum-norm solution where K is singular (ridge 0, epsilon = inf)
    coord0 = np.where(keep, w / np.where(keep, e, 1.0), 0.0)
    norm0 = np.linalg.norm(coord0, axis=1)
    mu = np.zeros(g.shape[0])
    outside = norm0 > radius if math.isfinite(radius) else np.zeros(g.shape[0], dtype=bool)
    coords = coord0.copy()
    if np.any(outside):
        wo = w[outside]
        m = np.zeros(wo.shape[0])
        for _ in range(200):  # Newton on phi(mu) = 1/||theta(mu)|| - 1/R, monotone from mu = 0
            den = e[None, :] + m[:, None]
            den = np.where(den > 0, den, np.inf)
            t = wo / den
            nt = np.linalg.norm(t, axis=1)
            dnt = -np.sum(t * t / den, axis=1) / nt  # d||theta||/dmu
            phi = 1.0 / nt - 1.0 / radius
            step = -phi / (-dnt / nt ** 2)
            new = np.maximum(m + step, 0.0)
            done = np.abs(new - m) <= 4 * np.finfo(float).eps * np.maximum(new, 1e-300)
            m = new
            if np.all(done):
                break
        den = e[None, :] + m[:, None]
        t = wo / den
        t *= (radius / np.linalg.norm(t, axis=1))[:, None]  # on the sphere to the last bit
        coords[outside] = t
        mu[outside] = m
    theta = coords @ Q.T
    return (theta[0], float(mu[0])) if single else (theta, mu)


# ------------------------------------------------------------------ logistic loss
def _log1pexp(t):
    return np.logaddexp(0.0, t)


def _sigmoid(t):
    return 0.5 * (1.0 + np.tanh(0.5 * t))


def logistic_objective(theta, Z, y, b, ridge):
    """sum log(1 + exp(-y z'theta)) + ridge ||theta||^2 / 2 + b'theta (value, gradient, Hessian)."""
    t = Z @ theta
    margin = y * t
    value = float(np.sum(_log1pexp(-margin)) + 0.5 * ridge * theta @ theta + b @ theta)
    s = _sigmoid(-margin)  # sigma(-y z'theta)
    grad = -(Z.T @ (y * s)) + ridge * theta + b
    weights = s * (1.0 - s)
    hess = (Z * weights[:, None]).T @ Z + ridge * np.eye(Z.shape[1])
    return value, grad, hess


def solve_logistic(Z, y, b, ridge):
    """The minimiser of :func:`logistic_objective` by damped Newton (module docstring)."""
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = Z.shape[1]
    theta = np.zeros(d)
    if d == 0:
        return theta
    value, grad, hess = logistic_objective(theta, Z, y, b, ridge)
    converged = False
    stalls = 0
    for _ in range(NEWTON_MAX_ITER):
        try:
            step = -np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        if np.linalg.norm(step) <= NEWTON_STEP_TOL * (1.0 + np.linalg.norm(theta)):
            theta = theta + step  # one more (full) Newton step
            converged = True
            break
        decrement = -float(grad @ step)  # squared Newton decrement
        if decrement <= NEWTON_FULL_STEP * (1.0 + abs(value)):
            # Near the minimiser: full Newton steps (quadratic convergence); function values
            # no longer resolve the decrease, so no line search.
            cand = theta + step
            cv, cg, ch = logistic_objective(cand, Z, y, b, ridge)
            stalls = stalls + 1 if np.linalg.norm(cg) >= np.linalg.norm(grad) else 0
            theta, value, grad, hess = cand, cv, cg, ch
            if stalls >= 3:  # the gradient is at its rounding floor
                converged = True
                break
            continue
        size = 1.0
        while True:
            cand = theta + size * step
            cv, cg, ch = logistic_objective(cand, Z, y, b, ridge)
            if cv <= value - 1e-4 * size * decrement or size < 1e-12:
                break
            size *= 0.5
        theta, value, grad, hess = cand, cv, cg, ch
    if not converged or not np.all(np.isfinite(theta)):
        # Only possible without the ridge (epsilon = inf): no finite maximum-likelihood fit.
        raise DataContentError(
            "the non-private logistic fit does not exist for these data (the classes are separated by the "
            "selected terms, or a term is constant); a finite epsilon always has a fit.")
    return theta


# ------------------------------------------------------------------ the release
@dataclass(frozen=True)
class Release:
    """The mechanism's output: the coefficients on the mapped scale (and, for the squared loss,
    the Laplace-noised augmented Gram matrix the bootstrap reads)."""

    theta: np.ndarray
    spec: PerturbationSpec
    gram: np.ndarray | None = None
    gram_spec: object = None
    intercept: bool = True

    def to_dict(self) -> dict:
        out = {"theta_mapped": [float(v) for v in self.theta]}
        if self.gram is not None:
            iu = np.triu_indices(self.gram.shape[0])
            out["gram_upper"] = self.gram[iu].tolist()
        return out


def release_squared(G, intercept, spec: PerturbationSpec, rng) -> np.ndarray:
    """theta^ from the exact augmented Gram matrix of (1, x_S, y): the only squared-loss step that reads data."""
    m = G.shape[0]
    cols = np.arange(0 if intercept else 1, m - 1)
    A = G[np.ix_(cols, cols)]
    c = G[cols, m - 1]
    b = draw_noise(spec, rng)
    theta, _ = solve_squared(A, c, b, spec.ridge, spec.radius)
    return theta


def release_logistic(Z, y, spec: PerturbationSpec, rng) -> np.ndarray:
    """theta^ from the mapped rows Z (with the column of ones) and labels y in {-1, +1}: reads data."""
    b = draw_noise(spec, rng)
    return solve_logistic(Z, y, b, spec.ridge)
