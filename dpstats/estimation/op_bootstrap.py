"""The noisy Gram release that objective perturbation's intervals read (squared loss; its share of epsilon).

Objective perturbation releases only the coefficients theta^, which say nothing about the
design; intervals need the design's Gram matrix.  So, for the squared loss, the call also
releases the augmented Gram matrix G~ of (1, x_S, y) with Laplace noise, for
``INTERVAL_SHARE`` of its epsilon (:mod:`dpstats.estimation.objective_perturbation`), and
the bias-corrected intervals (:func:`dpstats.estimation.intervals.op_intervals`) read
(G~, theta^) and public parameters only -- post-processing: they undo the ridge Delta of
the released minimiser with the noisy design block, and re-run the whole mechanism (fresh
perturbation, same ridge and ball, sampling error given the design, fresh Gram noise) on
statistics simulated from the corrected estimate.  When theta^ lies on the ball's boundary
no interval is given (the constraint's shrinkage is unknown).  With the logistic loss
nothing about the design is released and no interval is given.  This module holds the Gram
release itself.
"""
from __future__ import annotations

import numpy as np

from . import adassp


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
