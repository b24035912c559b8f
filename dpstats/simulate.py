"""Simulated data with the design of the private best-subset papers' simulations.

The design of Behdin, Prastakos and Mazumder (2024), section 3, and Prastakos, Behdin and
Mazumder (2025), section 5: rows x_i ~ N(0, Sigma) with the Toeplitz covariance
Sigma_jk = rho^|j - k|, true coefficients beta*_j = 1/sqrt(s) at the 0-based indices
1, 3, ..., 2s - 1 (as in the authors' reference code), and Gaussian noise scaled so that
the realised signal-to-noise ratio ||X beta*||^2 / ||noise||^2 equals ``snr`` exactly.

``family="binomial"`` (Prastakos, Behdin and Mazumder 2025, Appendix D.2, sparse
classification with the hinge loss): the same design, coefficients and noise give the latent score
z = X beta* + noise, and the response is the class y = 1 if z > 0 else 0 (coded 0/1,
which ``dp_select(..., loss="hinge")`` reads as the levels (0, 1) -> (-1, +1)).  The
authors' reference code (hinge_neurips.py) instead draws y = +1 with probability
1 / (1 + exp(-z)); ``link="logistic"`` reproduces that variant.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import InvalidArgumentError
from .method_options import is_integer
from .privacy.randomness import RandomSource


@dataclass
class SimulatedData:
    """A simulated data set and its truth.

    Attributes
    ----------
    data : pandas.DataFrame
        Columns ``y``, ``x0`` .. ``x{p-1}``.
    beta : pandas.Series
        True coefficients indexed by term name.
    support : list of str
        Names of the terms with non-zero coefficient.
    sigma : float
        Realised noise scale ||noise|| / sqrt(n).
    """

    data: pd.DataFrame
    beta: pd.Series
    support: list
    sigma: float
    snr: float
    rho: float


def toeplitz_covariance(p, rho):
    idx = np.arange(p)
    return rho ** np.abs(idx[:, None] - idx[None, :])


def ar1_columns(Z, rho):
    """Z L' for L the Cholesky factor of :func:`toeplitz_covariance`, in O(n p) time and memory.

    The covariance rho^|i - j| is that of a stationary AR(1) sequence, and its Cholesky
    factor has L_j0 = rho^j and L_jk = rho^(j - k) sqrt(1 - rho^2) for 1 <= k <= j, so row by
    row x_0 = z_0 and x_j = rho x_(j-1) + sqrt(1 - rho^2) z_j: the same draws as the matrix
    product (to rounding) without the p x p matrix, which does not fit in memory for the
    wide designs (p = 10^5 is 80 GB).  Returns a new Fortran-ordered array.
    """
    X = np.asfortranarray(Z, dtype=np.float64)
    if X is Z:
        X = X.copy(order="F")
    c = np.sqrt(1.0 - rho * rho)
    for j in range(1, X.shape[1]):
        col = X[:, j]
        col *= c
        col += rho * X[:, j - 1]
    return X


FAMILIES = ("gaussian", "binomial")
LINKS = ("sign", "logistic")


def response_sd(p, s, rho, snr) -> float:
    """The standard deviation of y in :func:`simulate`'s design (public: from the design alone).

    The signal is x_S' beta with beta = 1 / sqrt(s) on the odd-numbered terms x1, x3, ..., whose
    covariance is rho^|j - k|; the noise variance is the signal's divided by ``snr``."""
    idx = np.arange(1, 2 * s, 2)
    cov = rho ** np.abs(idx[:, None] - idx[None, :])
    signal = float(np.full(s, 1.0 / np.sqrt(s)) @ cov @ np.full(s, 1.0 / np.sqrt(s)))
    return float(np.sqrt(signal * (1.0 + 1.0 / snr)))


def snr_of_r2(r2) -> float:
    """The signal-to-noise ratio of :func:`simulate` (signal variance over noise variance) whose
    population R^2 = snr / (1 + snr) is ``r2``."""
    return r2 / (1.0 - r2)


def simulate(n, p, s, *, rho=0.1, snr=5.0, random_state=None, family="gaussian", link="sign") -> SimulatedData:
    """Draw a sparse linear-regression data set with the private best-subset papers' design.

    Parameters
    ----------
    n, p, s : int
        Rows, columns, true support size (requires 2s - 1 < p).
    rho : float, default 0.1
        Toeplitz correlation, |rho| < 1.
    snr : float, default 5
        ||X beta*||^2 / ||noise||^2 of the realised draw.
    random_state : None, int or numpy.random.Generator
    family : "gaussian" or "binomial"
        ``"binomial"``: y = 1 if x'beta* + noise > 0 else 0 (module docstring).
    link : "sign" or "logistic"
        Binomial only: the class is the sign of the noisy score (default), or drawn with
        probability 1 / (1 + exp(-score)) as in the authors' reference code.

    Returns
    -------
    SimulatedData

    References
    ----------
    Prastakos, Behdin and Mazumder (2025), Differentially private high-dimensional
    variable selection via integer programming, section 5 and its reference code;
    Behdin, Prastakos and Mazumder (2024), Differentially private best subset selection
    via integer programming, section 3.
    """
    _check_arguments(n, p, s, rho, snr, family, link)
    source = RandomSource(random_state)
    return _complete(_design_rows(source, n, p, rho), source, s, rho, snr, family, link)


def _check_arguments(n, p, s, rho, snr, family, link):
    for name, value in (("n", n), ("p", p), ("s", s)):
        if not is_integer(value) or value < 1:
            raise InvalidArgumentError(f"{name} must be a positive integer; got {value!r}.")
    if 2 * s - 1 >= p:
        raise InvalidArgumentError(f"the true support uses indices 1, 3, ..., 2s-1 = {2 * s - 1}; p must exceed it (p={p}).")
    if not (-1 < rho < 1):
        raise InvalidArgumentError(f"rho must lie in (-1, 1); got {rho!r}.")
    if not (snr > 0 and np.isfinite(snr)):
        raise InvalidArgumentError(f"snr must be a positive finite number; got {snr!r}.")
    if family not in FAMILIES:
        raise InvalidArgumentError(f"family must be 'gaussian' or 'binomial'; got {family!r}.")
    if link not in LINKS:
        raise InvalidArgumentError(f"link must be 'sign' or 'logistic'; got {link!r}.")


def _design_rows(source, rows, p, rho):
    """The next ``rows`` rows of X from ``source`` (rows * p uniforms, row by row), Fortran-ordered.

    Normals by inverse CDF of the call's uniforms keep one random source per call.  Row i
    uses uniforms i p .. (i + 1) p - 1 of the stream only (the AR(1) recursion runs along a
    row), which :class:`NestedDraws` relies on."""
    from scipy.special import ndtri

    Z = source.uniform((rows, p))
    return ar1_columns(ndtri(Z, out=Z), rho)


def _complete(X, source, s, rho, snr, family, link) -> SimulatedData:
    """The response of the design X (n rows) from ``source``'s next n (or 2 n) uniforms."""
    from scipy.special import ndtri

    n, p = X.shape
    beta = np.zeros(p)
    beta[np.arange(1, 2 * s, 2)] = 1.0 / np.sqrt(s)
    signal = X @ beta
    noise = ndtri(source.uniform(n))
    noise *= np.linalg.norm(signal) / (np.sqrt(snr) * np.linalg.norm(noise))
    names = [f"x{j}" for j in range(p)]
    data = pd.DataFrame(X, columns=names, copy=False)  # X is this call's own array
    response = signal + noise
    if family == "binomial":
        if link == "sign":
            response = (response > 0).astype(np.int64)
        else:
            response = (source.uniform(n) < 1.0 / (1.0 + np.exp(-response))).astype(np.int64)
    data.insert(0, "y", response)
    return SimulatedData(data=data, beta=pd.Series(beta, index=names), support=[names[j] for j in np.nonzero(beta)[0]],
                         sigma=float(np.linalg.norm(noise) / np.sqrt(n)), snr=float(snr), rho=float(rho))


def _stream_at(seed, position):
    """A RandomSource that continues ``RandomSource(seed)`` after ``position`` uniforms.

    A seeded source draws each uniform from one 64-bit output of numpy's PCG64 (the top 53
    bits), so skipping ``position`` uniforms is ``PCG64.advance(position)``;
    :func:`_skipping_matches` checks that on the installed numpy."""
    bits = np.random.PCG64(seed)
    bits.advance(int(position))
    return RandomSource(np.random.Generator(bits))


_SKIP_CHECKED = None


def _skipping_matches():
    """Whether :func:`_stream_at` continues the stream of a seeded RandomSource (checked once)."""
    global _SKIP_CHECKED
    if _SKIP_CHECKED is None:
        whole = RandomSource(12345).uniform(1000)
        _SKIP_CHECKED = all(np.array_equal(whole[k:k + 3], _stream_at(12345, k).uniform(3)) for k in (1, 7, 500, 997))
    return _SKIP_CHECKED


class NestedDraws:
    """``simulate(n, p, s, ..., random_state=seed)`` for many n, drawing the first rows of X once.

    Row i of X uses uniforms i p .. (i + 1) p - 1 of the seed's stream whatever n is, so the
    X of a smaller n is the first rows of the X of a larger one; only the response (the noise
    scaled to the realised signal-to-noise ratio of all n rows, drawn after the n p uniforms
    of X) is drawn again for each n, from the stream skipped to n p.  The first
    ``max_rows`` rows drawn are kept (all when None); rows beyond them are drawn again when
    asked for.  ``simulate(n)`` returns a data set equal, value for value and in the same
    memory layout, to :func:`simulate`'s with the same arguments (a test checks it), so
    whatever is computed from it is the same too.  ``dpstats.plan`` keeps one per simulated
    data set for all the points of its searches: drawing X (mostly the inverse normal CDF)
    is about half of a ``dp_sis`` call at p = 1000.
    """

    def __init__(self, p, s, *, seed, rho=0.1, snr=5.0, family="gaussian", link="sign", max_rows=None):
        _check_arguments(2, p, s, rho, snr, family, link)
        if not is_integer(seed) or seed < 0:
            raise InvalidArgumentError(f"seed must be a non-negative integer; got {seed!r}.")
        self.p, self.s, self.seed = int(p), int(s), int(seed)
        self.rho, self.snr, self.family, self.link = rho, snr, family, link
        self.max_rows = None if max_rows is None else int(max_rows)
        self._X = np.empty((0, self.p), order="F")

    @property
    def rows(self) -> int:
        """Rows of X kept."""
        return self._X.shape[0]

    def simulate(self, n) -> SimulatedData:
        _check_arguments(n, self.p, self.s, self.rho, self.snr, self.family, self.link)
        if not _skipping_matches():
            return simulate(n, self.p, self.s, rho=self.rho, snr=self.snr, random_state=self.seed,
                            family=self.family, link=self.link)
        keep = n if self.max_rows is None else min(n, self.max_rows)
        if keep > self.rows:
            self._X = self._stacked(keep)
        X = self._stacked(n) if n > self.rows else np.array(self._X[:n], order="F")  # a copy, laid out as simulate's
        return _complete(X, _stream_at(self.seed, n * self.p), self.s, self.rho, self.snr, self.family, self.link)

    def _stacked(self, n):
        """X of n > rows rows: the kept rows and the next ones, drawn from the stream skipped to them."""
        X = np.empty((n, self.p), order="F")
        X[:self.rows] = self._X
        X[self.rows:] = _design_rows(_stream_at(self.seed, self.rows * self.p), n - self.rows, self.p, self.rho)
        return X
