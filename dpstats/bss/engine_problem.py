"""What every part of the certified engine shares: the problem, its counters and its clock.

The engine (:mod:`dpstats.bss.engine`) is split along its concerns: the candidates and their
exact values (:mod:`dpstats.bss.candidates`), the pool of cuts (:mod:`dpstats.bss.cut_pool`),
the MILP master (:mod:`dpstats.bss.milp_master`) and the certificate routes
(:mod:`dpstats.bss.certificate_routes`).  Each is handed the pieces below instead of the
engine itself where it can be: :class:`Problem` (the source, the subset size and the split
of the public tolerance, fixed when the engine is built), :class:`EngineStats` (counters and
the curator-only log), :class:`EngineClock` (the call's deadline, the stage reached, and
the curator-only progress lines), and what the queries return (:class:`Certificate`,
:class:`TopCertificate`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..deadline import Deadline
from ..privacy.progress import Progress, curator_printer


@dataclass(frozen=True)
class Problem:
    """One certified query's fixed data: the source, s, and the tolerance's split.

    ``offset`` is 1 when the source's first column is a forced intercept, else 0; ``p``
    counts the candidate columns.  ``tau_mip`` is the MILP's share of the public tolerance
    and ``tau_eval`` the certified error of one value (engine module docstring, "Solver
    slack and epsilon").
    """

    source: object
    s: int
    offset: int
    p: int
    tau_mip: float
    tau_eval: float

    @property
    def capabilities(self):
        return self.source.capabilities

    def full(self, supports) -> np.ndarray:
        """Full column indices (the forced intercept first) of candidate supports (1-D or 2-D)."""
        sup = np.asarray(supports, dtype=np.int64) + self.offset
        if not self.offset:
            return sup
        if sup.ndim == 1:
            return np.concatenate([[0], sup])
        return np.hstack([np.zeros((sup.shape[0], 1), dtype=np.int64), sup])

    def outside(self, full) -> np.ndarray:
        """The candidate columns (full indices) not in the full support ``full``."""
        mask = np.ones(self.source.n_columns, dtype=bool)
        mask[full] = False
        mask[:self.offset] = False
        return np.nonzero(mask)[0]

    def anchor_columns(self, anchor):
        """(forced, movable, outside) full columns of a candidate support: the intercept, the
        anchor's candidate columns, and every other candidate column."""
        full = self.full(np.array(anchor))
        return full[:self.offset], full[self.offset:], self.outside(full)


@dataclass
class Certificate:
    """A certified minimum over a feasible set of supports.

    ``lower_bound`` is the MILP's proven bound over the feasible set (after the reserve for
    solver numerics), ``value`` the exact R of ``support``; certified means
    lower_bound >= value - tolerance (or >= the query's target - tolerance).
    """

    support: tuple
    value: float
    lower_bound: float
    tolerance: float
    milp_solves: int = 0
    #: True when only ``lower_bound >= cap - tolerance`` was certified (a capped mistakes
    #: block, :meth:`OuterApproximationEngine.mistakes`): ``support`` and ``value`` are then an
    #: incumbent, not the minimiser.
    capped: bool = False

    @property
    def gap(self) -> float:
        return self.value - self.lower_bound


@dataclass
class TopCertificate:
    """The certified top-R list: every support outside it has R >= lower_bound >= v_R - tolerance."""

    supports: list
    values: np.ndarray
    lower_bound: float
    tolerance: float
    milp_solves: int = 0


@dataclass
class SmallerSizeList:
    """A top-R list of one size certified without an engine of its own, from a larger size's certified
    best support (:meth:`~dpstats.bss.engine.OuterApproximationEngine.smaller_size_list`): the scorer the
    model-size stage hands to top_r's second stage.  ``size`` and ``tau`` are the task's; ``source_size``
    the larger size whose engine certified it."""

    size: int
    tau: float
    certificate: TopCertificate
    source_size: int


@dataclass
class EngineStats:
    milp_solves: int = 0
    cuts: int = 0
    model_builds: int = 0
    milp_seconds: float = 0.0
    cut_seconds: float = 0.0
    total_seconds: float = 0.0
    evaluations: int = 0
    #: MILP solves whose reported solution broke the binaries' bounds (re-solved or refused)
    invalid_solutions: int = 0
    log: list = field(default_factory=list)

    def as_dict(self):
        return {"milp_solves": self.milp_solves, "cuts": self.cuts, "model_builds": self.model_builds,
                "milp_seconds": round(self.milp_seconds, 4), "cut_seconds": round(self.cut_seconds, 4),
                "total_seconds": round(self.total_seconds, 4), "exact_evaluations": self.evaluations,
                "invalid_solutions": self.invalid_solutions}


class EngineClock:
    """The call's deadline, the stage a query has reached, and its curator-only progress.

    ``stage`` and ``reached`` name what was being certified when a time limit strikes; the
    progress lines quote values and bounds, functions of the data, so every one is labelled
    curator-only (:mod:`dpstats.privacy.progress`).
    """

    #: What makes a certificate cheaper (time-limit messages): a larger ridge strengthens every
    #: bound, a smaller R or s shrinks what must be certified.
    ADVICE = "a larger ridge (stronger bounds), a smaller R or s, or fewer candidate terms"

    def __init__(self, deadline: Deadline, label, verbose, printer):
        self.deadline = deadline
        self.label = str(label)
        self.verbose = bool(verbose)
        self.printer = printer
        self._print = curator_printer(printer)
        self.stage = "starting the certificate"
        self.reached = ""
        self.start = time.perf_counter()

    def check(self):
        self.deadline.check(f"{self.label}: {self.stage}", reached=self.reached, advice=self.ADVICE)

    def remaining(self):
        return self.deadline.remaining()

    def elapsed(self):
        return time.perf_counter() - self.start

    def say(self, text):
        """One curator-only progress line (only with ``verbose``)."""
        if self.verbose:
            self._print(text)

    def progress(self, stage, total, unit, note=""):
        """A progress reporter for one query (prints only with ``verbose``)."""
        return Progress(f"{self.label}: {stage}", total, unit, enabled=self.verbose, printer=self.printer,
                        every=0.0, start=self.deadline.start, note=note)
