"""Parametric bootstrap intervals for objective perturbation (squared loss; no extra budget).

Objective perturbation releases only the coefficients theta^, which say nothing about the
design; intervals need the design's Gram matrix.  So, for the squared loss, the call also
releases the augmented Gram matrix G~ of (1, x_S, y) with Laplace noise, for
``INTERVAL_SHARE`` of its epsilon (:mod:`dpstats.estimation.objective_perturbation`), and
this module reads (G~, theta^) and public parameters only -- post-processing.  As for
AdaSSP (:mod:`dpstats.estimation.bootstrap`, after Ferrando, Wang and Sheldon 2022), the
whole pipeline is simulated from the fitted model, conditional on the design:

1. Plug-in model (:func:`dpstats.estimation.bootstrap.plug_in`): A_bar, the noisy design
   block of G~ with its eigenvalues raised to at least the Gram noise's standard
   deviation; the residual variance sigma2 from the noisy entries, in [0, 1].
2. For b = 1..B: Z'y_b = A_bar theta^ + N(0, sigma2 A_bar) (sampling error given the
   design), fresh perturbation noise b_b of the release's own law (Gamma norm, uniform
   direction, same scale), and theta_b = the same exact minimiser over the same ball with
   the same ridge Delta, with A_bar in place of Z'Z.
3. Basic bootstrap intervals [2 beta^ - q_{1-a/2}, 2 beta^ - q_{a/2}] on the data's units,
   which carry the shrinkage of the ridge and of the ball into the interval.

Coverage was checked by simulation (tests/test_objective_perturbation.py, marked slow;
the numbers are in docs/methods.md).  The intervals are conditional on the selected model
and describe the clipped variables, like AdaSSP's.  With the logistic loss nothing about
the design is released and no interval is given.
"""
from __future__ import annotations

import numpy as np

from . import adassp
from . import bootstrap as boot
from .objective_perturbation import PerturbationSpec, draw_noise, solve_squared


def gram_spec(epsilon, m, d) -> adassp.NoiseSpec:
    """The Laplace noise of the Gram release at its share ``epsilon`` (L1 sensitivity m (m + 1) / 2)."""
    d1 = adassp.gram_sensitivity_l1(m)
    if np.isinf(epsilon):
        return adassp.NoiseSpec("none", float(epsilon), 0.0, m, d, 0.0, 0.0, 0.0, 0.0)
    return adassp.NoiseSpec("laplace", float(epsilon), 0.0, m, d, d1 / float(epsilon), 0.0, d1, 0.0)


def release_gram(G, spec: adassp.NoiseSpec, rng) -> np.ndarray:
    """G~: the upper triangle of G with independent Laplace noise (reads data)."""
    m = G.shape[0]
    return adassp.from_upper(adassp.upper(G) + spec.draw(rng, spec.gram_scale, m * (m + 1) // 2), m)


def draws(gram, intercept, theta, spec: PerturbationSpec, gspec: adassp.NoiseSpec, n_draws, rng) -> np.ndarray:
    """theta_b, b = 1..n_draws (n_draws x d), on the mapped scale (module docstring)."""
    rel = adassp.Release(np.asarray(gram, dtype=np.float64), float("nan"), gspec, bool(intercept))
    A_bar, (e_bar, Q), sigma2 = boot.plug_in(rel, np.asarray(theta, dtype=np.float64))
    d = A_bar.shape[0]
    z = np.asarray(rng.gaussian(1.0, (n_draws, d)), dtype=np.float64)
    c = (A_bar @ theta)[None, :] + np.sqrt(sigma2) * (z * np.sqrt(e_bar)) @ Q.T
    b = draw_noise(spec, rng, n_draws)
    theta_b, _ = solve_squared(A_bar, c, b, spec.ridge, spec.radius)
    return theta_b
