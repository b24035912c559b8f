"""Private means of bounded columns: the l-infinity K-norm mechanism.

Used to centre the data before a selection: the best-subset intercept
(:mod:`dpstats.bss.intercept`) and DP-SIS's default centring
(:mod:`dpstats.screening.dp_sis`) draw the means of the mapped terms and response here,
with one ledger entry, and then centre every row with them (:func:`centre_values`, or
clipping).  DP-SIS's private scale draws second moments in the same call: a value v in
[-1, 1] enters as 2 v^2 - 1, again in [-1, 1], so the statement below covers it unchanged.

Privacy statement
-----------------
Input: d columns whose values lie in [-1, 1] (the terms and the response mapped by their
public ranges, :mod:`dpstats.privacy.bounds`), and the public input row count n.  The
statistic is the vector of column sums divided by n, m(D) = (1/n) sum_i v_i.  Neighbours
replace one record (n public); a record that becomes incomplete under
``na_action="omit"`` contributes 0 instead of v_i, which is a change of the same kind.
Each coordinate of a record moves by at most 2 (a value in [-1, 1] replaced by another,
or by 0), so ||m(D) - m(D')||_inf <= Delta = 2 / n for every pair of neighbours.

Release m~ = m(D) + Z with Z drawn from the density

    f(z) = (epsilon / (2 Delta))^d / d! * exp(-epsilon ||z||_inf / Delta),

the K-norm mechanism of Hardt and Talwar (2010) for the l-infinity ball, which is the
shape of the sensitivity set here (the difference of two points of a cube is a cube).  At
every output o, log f(o - m(D)) - log f(o - m(D')) = epsilon (||o - m(D')||_inf -
||o - m(D)||_inf) / Delta <= epsilon ||m(D) - m(D')||_inf / Delta <= epsilon (triangle
inequality): the release is epsilon-DP (pure).

Sampling (exact): Z = R U with R ~ Gamma(d + 1, Delta / epsilon), the sum of d + 1
exponentials, and U uniform on the cube [-1, 1]^d, independent.  The density of R U at z
is the integral over r >= ||z||_inf of the Gamma density times (2 r)^-d, which is f(z).
Consequently ||Z||_inf ~ Gamma(d, Delta / epsilon), and Z / ||Z||_inf is uniform on the
cube's surface (the audits in tests/test_private_means.py test both and the density ratio).
Every variate comes from the call's :class:`~dpstats.privacy.randomness.RandomSource` by
inverse CDF on 53-bit uniforms (the package-wide floating-point caveat applies).

Why not Laplace per coordinate: Laplace noise needs the l1 sensitivity 2 d / n, so each
coordinate's noise has standard deviation sqrt(2) * 2 d / (n epsilon); here it is
E[R^2 / 3]^(1/2) ~ 2 d / (sqrt(3) n epsilon), up to 2.4 times smaller for the same epsilon
(sqrt(6) for large d; the noise scales as 1 / epsilon, so the same accuracy costs that factor
less budget: about 1.7 at d = 3, 2.1 at d = 10, 2.4 at d = 50).

Post-processing (free): the means are clamped to [-1, 1], where the true means lie.

``epsilon = inf`` returns the exact means.

References
----------
Hardt and Talwar (2010), On the geometry of differential privacy, STOC (the K-norm mechanism).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

#: The range width of a mapped value ([-1, 1]): a record moves a column sum by at most this.
MAPPED_WIDTH = 2.0
#: Default share of a selection's epsilon spent on the means by the methods that centre with them.
MEANS_SHARE = 0.1
#: The means are worth buying when their expected noise radius E||Z||_inf is at most this
#: (on the mapped scale, where every public range is [-1, 1]).
MAX_NOISE_RADIUS = 1.0


def means_sensitivity(n) -> float:
    """Delta = 2 / n: the l-infinity distance the means of mapped columns move under one replacement."""
    return MAPPED_WIDTH / float(n)


def linf_noise(d, scale, rng) -> np.ndarray:
    """Z = R U, R ~ Gamma(d + 1, scale), U uniform on [-1, 1]^d: density proportional to exp(-||z||_inf / scale)."""
    radius = float(np.sum(rng.exponential(d + 1))) * float(scale)
    return radius * (2.0 * np.asarray(rng.uniform(d), dtype=np.float64) - 1.0)


def private_means(sums, n, epsilon, rng) -> np.ndarray:
    """Private means of d mapped columns from their sums over the rows (n public): epsilon-DP.

    ``sums``: the column sums of values in [-1, 1] (incomplete rows contribute 0); the
    result is clamped to [-1, 1].  ``epsilon = inf``: the exact means.
    """
    means = np.asarray(sums, dtype=np.float64) / max(float(n), 1.0)
    if not math.isinf(epsilon):
        means = means + linf_noise(means.size, means_sensitivity(max(n, 1)) / float(epsilon), rng)
    return np.clip(means, -1.0, 1.0)


def log_density(output, means, n, epsilon) -> float:
    """log f(output - means) before clamping (the audits' exact oracle)."""
    z = np.asarray(output, dtype=np.float64) - np.asarray(means, dtype=np.float64)
    d = z.size
    scale = means_sensitivity(n) / float(epsilon)
    return float(-d * math.log(2.0 * scale) - gammaln(d + 1) - np.max(np.abs(z)) / scale)


def expected_noise_radius(d, n, epsilon) -> float:
    """E ||Z||_inf = d * Delta / epsilon (public: d, n and epsilon only)."""
    if math.isinf(epsilon):
        return 0.0
    return d * means_sensitivity(n) / float(epsilon)


def means_affordable(d, n, epsilon, max_radius=None) -> bool:
    """The public rule of the methods' defaults: buy the d means with ``epsilon`` only when
    :func:`expected_noise_radius` is at most ``max_radius`` (default :data:`MAX_NOISE_RADIUS`;
    else the centring would be mostly a random shift).  A method that clips after centring
    asks for a smaller radius (:mod:`dpstats.screening.dp_sis`)."""
    limit = MAX_NOISE_RADIUS if max_radius is None else float(max_radius)
    return expected_noise_radius(d, n, epsilon) <= limit


def column_sums(x, y):
    """[column sums of the mapped design, sum of the mapped response] of some rows (they add up
    over row blocks and Dask partitions; a module-level function, so it pickles)."""
    return np.concatenate([np.asarray(x).sum(axis=0), [0.0 if y is None else float(np.sum(y))]])


def column_sums_and_count(x, y):
    """:func:`column_sums` with the number of rows appended (they add up over blocks and partitions)."""
    return np.concatenate([column_sums(x, y), [float(np.asarray(x).shape[0])]])


def centre_values(values, means):
    """(v - m) / (1 + |m|): values in [-1, 1] centred by means m in [-1, 1], back in [-1, 1].

    A row-wise map once the means are released (so neighbours stay neighbours); it clips
    nothing, so a least-squares fit or a correlation sees the same column up to scale."""
    means = np.asarray(means, dtype=np.float64)
    return (values - means) / (1.0 + np.abs(means))
