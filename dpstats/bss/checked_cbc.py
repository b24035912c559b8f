"""CBC through python-mip with every reported solution checked before its bound is used.

The engine's MILP solves (:mod:`dpstats.bss.engine`) go through :class:`CheckedCbc`, chosen by
``EngineSettings.milp_solver``.  Why the check: with preprocessing off, the CBC of cbcbox
2.935 reported "optimal" for a 30-binary model with one binary at 2 (tests/data/
cbc_binary_at_two.npz); a bound from such a solve is not a bound of the MILP, and a
certificate built on it would be wrong.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import mip
import numpy as np


class UnreliableSolve(Exception):
    """CBC reported a solution that breaks the MILP's own bounds, twice (:meth:`CheckedCbc.solve`)."""


@dataclass
class MilpAnswer:
    """One checked MILP solve: ``status`` ("optimal", "infeasible" or CBC's status name), CBC's
    proven lower bound on the model's objective, the distinct supports of its solution pool,
    and the solver calls made (``attempts``), of which ``invalid`` broke the binaries' bounds."""

    status: str
    bound: float = math.inf
    solutions: list = field(default_factory=list)
    attempts: int = 1
    invalid: int = 0
    seconds: float = 0.0


class CheckedCbc:
    """CBC through python-mip, every reported solution checked before its bound is used.

    A solution must have its binaries within :attr:`BINARY_TOLERANCE` of 0 or 1 and exactly s
    ones.  A solver that breaks its own column bounds has not solved the MILP, so its bound is
    not used: a copy of the model is solved once more with CBC's preprocessing toggled
    (re-solving the same object repeated the bad answer), and a second failure raises
    :class:`UnreliableSolve` (the engine then scores every feasible support, or refuses).

    The engine builds one from :attr:`EngineSettings.milp_solver`; a subclass there (a test, a
    measurement) sees every solve through the public :meth:`solve`.

    Parameters
    ----------
    s : int
        Ones in every feasible solution.
    cbc_settings : dict
        python-mip Model attributes set on every model (:attr:`OuterApproximationEngine.cbc_settings`).
    threads : int
        CBC threads.
    gap_abs : float
        CBC's absolute gap tolerance (the engine's tau_mip / 4).
    """

    #: How far from 0 or 1 a binary of a reported solution may be.
    BINARY_TOLERANCE = 1e-6

    def __init__(self, s, *, cbc_settings, threads=1, gap_abs):
        self.s = int(s)
        self.cbc_settings = dict(cbc_settings)
        self.threads = int(threads)
        self.gap_abs = float(gap_abs)

    def configure(self, m, settings=None):
        """Set verbosity, threads, the gaps and ``settings`` (default: :attr:`cbc_settings`) on ``m``."""
        m.verbose = 0
        m.threads = self.threads
        m.max_mip_gap = 1e-12
        for key, value in (self.cbc_settings if settings is None else settings).items():
            setattr(m, key, value)
        m.max_mip_gap_abs = self.gap_abs

    def solve(self, m, z, *, start=None, max_seconds=math.inf, label="MILP") -> MilpAnswer:
        """Solve ``m`` (binaries ``z``) from the optional ``start`` support; a :class:`MilpAnswer`."""
        if start is not None:
            chosen = set(start)
            m.start = [(z[j], 1.0 if j in chosen else 0.0) for j in range(len(z))]
        model, columns = m, z
        seconds, invalid = 0.0, 0
        for attempt in range(2):
            t0 = time.perf_counter()
            status = model.optimize(max_seconds=max_seconds)
            seconds += time.perf_counter() - t0
            if status == mip.OptimizationStatus.INFEASIBLE:
                return MilpAnswer("infeasible", attempts=attempt + 1, invalid=invalid, seconds=seconds)
            if status != mip.OptimizationStatus.OPTIMAL:
                return MilpAnswer(status.name, attempts=attempt + 1, invalid=invalid, seconds=seconds)
            sols = self.solutions(model, columns)
            if sols is not None:
                return MilpAnswer("optimal", float(model.objective_bound), sols, attempt + 1, invalid, seconds)
            invalid += 1
            if attempt == 0:
                model = m.copy()
                toggled = 0 if self.cbc_settings.get("preprocess", -1) != 0 else -1
                self.configure(model, {**self.cbc_settings, "preprocess": toggled})
                columns = model.vars[:len(z)]
        raise UnreliableSolve(label)

    def solutions(self, m, z):
        """Distinct supports of CBC's solution pool, or None when a solution is not binary
        with exactly s ones."""
        sols = []
        for k in range(max(m.num_solutions, 1)):
            try:
                x = np.array([v.xi(k) if k else v.x for v in z], dtype=np.float64)
            except Exception:  # pragma: no cover - CBC without a solution pool
                break
            rounded = np.round(x)
            if (not np.all(np.abs(x - rounded) <= self.BINARY_TOLERANCE)
                    or not np.all((rounded == 0) | (rounded == 1)) or int(rounded.sum()) != self.s):
                return None
            sup = tuple(int(j) for j in np.nonzero(rounded)[0])
            if sup not in sols:
                sols.append(sup)
        return sols
