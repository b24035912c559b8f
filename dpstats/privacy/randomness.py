"""The single source of randomness of a ``dp_select`` call.

Every mechanism draws only from the :class:`RandomSource` it is handed.  The default
source builds 53-bit uniforms from the operating system's CSPRNG (``os.urandom``), as
diffprivlib (``secrets.SystemRandom``), Tumult (RDRAND / ``os.urandom``) and OpenDP
(OpenSSL) do: numpy's PCG64 is fast but its state can be recovered from its outputs,
which a privacy library should not rely on.  A seed or a ``numpy.random.Generator``
gives reproducible runs for research and tests; the ledger then marks the call
"seeded: reproducible, not for release".

Continuous variates (Gumbel, exponential, Laplace) are drawn by inverse CDF from the
uniforms, and Gaussian ones by the Box-Muller transform, so both sources produce them the
same way.
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import InvalidArgumentError, InvalidTypeError
from ..method_options import is_integer

_TWO_POW_53 = float(2**53)


class RandomSource:
    """Uniforms and derived variates from the OS CSPRNG or from a seeded generator.

    Parameters
    ----------
    random_state : None, int or numpy.random.Generator
        ``None`` (default) uses the operating system's CSPRNG.  An integer or a
        ``Generator`` makes the call reproducible and marks it as seeded.
    """

    def __init__(self, random_state=None):
        if random_state is None:
            self._gen = None
        elif isinstance(random_state, np.random.Generator):
            self._gen = random_state
        elif is_integer(random_state):
            if random_state < 0:
                # The right type with a wrong value: a value error, not a type error.
                raise InvalidArgumentError(
                    f"random_state must be a non-negative integer seed; got {random_state!r}. Use a seed >= 0, "
                    "a numpy.random.Generator, or None for the operating system's randomness (for release)."
                )
            self._gen = np.random.default_rng(int(random_state))
        else:
            hint = ""
            if isinstance(random_state, np.random.RandomState):
                hint = " (a legacy RandomState is not accepted: pass numpy.random.default_rng(seed))"
            elif isinstance(random_state, (bool, np.bool_)):
                hint = " (True and False are not seeds)"
            raise InvalidTypeError(
                "random_state must be None (OS randomness), a non-negative integer or a "
                f"numpy.random.Generator; got {random_state!r} ({type(random_state).__name__}){hint}."
            )

    @property
    def seeded(self) -> bool:
        """True when draws are reproducible (a seed or a Generator was given)."""
        return self._gen is not None

    def uniform(self, size=None):
        """Uniform(0, 1) draws, never exactly 0 or 1 (safe for logs)."""
        shape = () if size is None else size
        count = int(np.prod(shape, dtype=np.int64))
        if self._gen is None:
            raw = np.frombuffer(os.urandom(8 * max(count, 1)), dtype=np.uint64)[:count]
            ints = raw >> np.uint64(11)
        else:
            ints = self._gen.integers(0, 2**53, size=count, dtype=np.uint64)
        # Midpoints of the 2^53 cells: strictly inside (0, 1).
        u = (ints.astype(np.float64) + 0.5) / _TWO_POW_53
        return float(u[0]) if size is None else u.reshape(shape)

    def gumbel(self, size=None):
        """Standard Gumbel draws, -log(-log U)."""
        return -np.log(-np.log(self.uniform(size)))

    def exponential(self, size=None):
        """Standard exponential draws, -log U."""
        return -np.log(self.uniform(size))

    def laplace(self, scale, size=None):
        """Laplace(0, scale) draws by inverse CDF."""
        u = self.uniform(size) - 0.5
        return -scale * np.sign(u) * np.log1p(-2.0 * np.abs(u))

    def gaussian(self, scale=1.0, size=None):
        """Normal(0, scale^2) draws by the Box-Muller transform of two uniforms each.

        Built from :meth:`uniform` (not numpy's normal sampler) so that the OS CSPRNG and a
        seeded generator produce them the same way.  The uniforms lie strictly inside (0, 1)
        on the 2^-53 grid, so |draw| <= scale * sqrt(2 log 2^54), about 8.7 scale: the tail
        beyond is lost (probability about 1e-17), which is part of the floating-point delta
        of docs/privacy.md ("Randomness").
        """
        shape = () if size is None else size
        count = int(np.prod(shape, dtype=np.int64))
        u1 = np.atleast_1d(self.uniform(max(count, 1)))[:count]
        u2 = np.atleast_1d(self.uniform(max(count, 1)))[:count]
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        out = scale * z
        return float(out[0]) if size is None else out.reshape(shape)

    def integers(self, high, size=None):
        """Uniform integers in ``[0, high)`` without modulo bias."""
        high = int(high)
        if high < 1:
            raise ValueError("high must be >= 1")
        if self._gen is not None:
            out = self._gen.integers(0, high, size=size)
            return int(out) if size is None else out
        import secrets

        if size is None:
            return secrets.randbelow(high)
        count = int(np.prod(size, dtype=np.int64))
        return np.array([secrets.randbelow(high) for _ in range(count)], dtype=np.int64).reshape(size)

    def permutation(self, n):
        """A uniformly random permutation of ``range(n)``."""
        # Sorting i.i.d. uniforms gives a uniform permutation; ties have probability 2^-53 per pair.
        return np.argsort(self.uniform(n), kind="stable")

    def sample_without_replacement(self, population_size, k):
        """A uniform k-subset of ``range(population_size)``, returned sorted."""
        if k > population_size:
            raise ValueError("k exceeds the population size")
        if k * 4 > population_size:
            return np.sort(self.permutation(population_size)[:k])
        chosen: set[int] = set()
        while len(chosen) < k:
            chosen.add(self.integers(population_size))
        return np.array(sorted(chosen), dtype=np.int64)

    def categorical_log(self, log_weights):
        """Index drawn with probability proportional to ``exp(log_weights)``.

        Inverse CDF on weights normalised in log space, so huge or tiny log-weights
        (log-binomials of C(10^4, 10) and the like) neither overflow nor underflow.
        """
        logw = np.asarray(log_weights, dtype=np.float64).ravel()
        if logw.size == 0:
            raise ValueError("no outcomes to sample from")
        top = np.max(logw)
        if not np.isfinite(top):
            raise ValueError("log-weights must contain a finite maximum")
        weights = np.exp(logw - top)
        cumulative = np.cumsum(weights)
        target = self.uniform() * cumulative[-1]
        index = int(np.searchsorted(cumulative, target, side="right"))
        return min(index, logw.size - 1)

    def __repr__(self):
        return "RandomSource(seeded)" if self.seeded else "RandomSource(os.urandom)"
