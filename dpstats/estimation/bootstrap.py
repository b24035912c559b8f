"""Parametric bootstrap intervals through the released noisy statistics (no extra budget).

The released (G~, l~) of :mod:`dpstats.estimation.adassp` and public parameters are all
this module reads, so its intervals are post-processing: they cost no budget.  The idea
is that of Ferrando, Wang and Sheldon (2022), "Parametric bootstrap for differentially
private confidence intervals": fit the model from the private release, then simulate the
whole pipeline -- the sampling of the data *and* the privacy noise -- from the fitted
model, and read the intervals off the simulated estimates.  Conditional on the design
(inference for the coefficients given the rows' terms, as ordinary least squares
intervals are):

1. Plug-in model.  A_bar: the noisy design block of G~ with its eigenvalues raised to at
   least the noise's standard deviation (a Gram matrix is positive semi-definite; the
   noise can make its estimate indefinite).  theta~: the released fit.  The residual
   variance sigma2 = RSS / (n~ - d), where RSS = y'y - 2 theta~'(Z'y) + theta~' A theta~
   from the noisy entries and n~ = G~_00 (at least d + 1); it is kept in [0, 1], since the
   mapped response lies in [-1, 1].
2. For b = 1..B (``bootstrap`` draws):

   * sampling error: (Z'y)_b = A_bar theta~ + N(0, sigma2 A_bar) -- given the design,
     Z'e is Gaussian with covariance sigma2 Z'Z for errors of variance sigma2 (exactly for
     Gaussian errors, by the central limit theorem otherwise);
   * privacy noise, drawn afresh with the release's own distribution and scales: on every
     entry of the design block and of Z'y, and on the smallest eigenvalue (of A_bar);
   * theta_b: the same adaptive ridge and solve as the release (:func:`adassp.fit`).
3. The draws feed the bias-corrected symmetric intervals of
   :mod:`dpstats.estimation.intervals`, which simulate from the estimate with its ridge
   undone (the plug-in ``theta`` given here) rather than from the shrunk estimate, and
   correct each draw the same way; the basic bootstrap interval around the shrunk estimate
   (Davison and Hinkley 1997, section 5.2) undercovered badly when the ridge was active
   (public ranges wide compared with the data).

The draws come from the call's :class:`~dpstats.privacy.randomness.RandomSource` (the
bootstrap's randomness is independent of the data).  Coverage: tests/test_estimation.py
(smoke, and slow at epsilon 1 and 10) and benchmarks/bench_coverage.py.
"""
from __future__ import annotations

import numpy as np

from . import adassp

#: Default number of bootstrap draws.
DEFAULT_DRAWS = 1000


def plug_in(rel: adassp.Release, theta):
    """(A_bar, its eigen-decomposition, sigma2) of the plug-in model (step 1 of the module docstring)."""
    G, spec = rel.gram, rel.spec
    m = G.shape[0]
    cols = adassp.design_columns(m, rel.intercept)
    d = cols.size
    A = G[np.ix_(cols, cols)]
    c = G[cols, m - 1]
    e, Q = np.linalg.eigh(A)
    e_bar = np.maximum(e, spec.gram_sd)
    A_bar = (Q * e_bar) @ Q.T
    n_noisy = max(float(G[0, 0]), d + 1.0)
    rss = float(G[m - 1, m - 1] - 2.0 * theta @ c + theta @ A @ theta)
    sigma2 = min(max(rss / (n_noisy - d), 0.0), 1.0)
    return A_bar, (e_bar, Q), sigma2


def draws(rel: adassp.Release, theta, n_draws, rng, return_statistics=False, design=None):
    """theta_b, b = 1..n_draws (n_draws x d), on the mapped scale (step 2).

    With ``return_statistics``: (theta_b, A_b, lam_b, sigma2), the draws' noisy design blocks
    and ridges and the plug-in residual variance, for the bias-corrected intervals of
    :mod:`dpstats.estimation.intervals`.  ``design``: a plug-in design Gram matrix to use
    instead of A_bar (positive definite; its smallest eigenvalue is the draws' eigenvalue).
    """
    spec = rel.spec
    m = rel.gram.shape[0]
    d = adassp.design_columns(m, rel.intercept).size
    A_bar, (e_bar, Q), sigma2 = plug_in(rel, theta)
    if design is not None:
        e_bar, Q = np.linalg.eigh(design)
        A_bar = (Q * e_bar) @ Q.T
    z = rng.gaussian(1.0, (n_draws, d))
    sampling = np.sqrt(sigma2) * (z * np.sqrt(e_bar)) @ Q.T
    c = (A_bar @ theta)[None, :] + sampling + spec.draw(rng, spec.gram_scale, (n_draws, d))
    iu = np.triu_indices(d)
    noise_upper = spec.draw(rng, spec.gram_scale, (n_draws, iu[0].size))
    E = np.zeros((n_draws, d, d))
    E[:, iu[0], iu[1]] = noise_upper
    E[:, iu[1], iu[0]] = noise_upper
    A = A_bar[None] + E
    lam_min = float(np.min(e_bar)) + spec.draw(rng, spec.eigen_scale, n_draws)
    # The batch is laid out as augmented Gram matrices so that adassp.fit runs unchanged.
    gram = np.zeros((n_draws, m, m))
    cols = adassp.design_columns(m, rel.intercept)
    gram[:, cols[:, None], cols[None, :]] = A
    gram[:, cols, m - 1] = c
    gram[:, m - 1, cols] = c
    theta_b, lam_b = adassp.fit(gram, lam_min, spec, rel.intercept)
    if return_statistics:
        return theta_b, A, lam_b, sigma2
    return theta_b
