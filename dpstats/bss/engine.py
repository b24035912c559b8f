"""Certified best-subset queries by outer approximation on CBC.

The convex function of the indicators

    g(z) = min_{||b|| <= r} ||y - X b||^2 + lam sum_j b_j^2 / z_j,    g(1_S) = R(S),

is minimised over {z binary, sum z = s} by a MILP in (z, eta) whose constraints are
linear under-estimators (cuts) of R at binary z, taken at supports S:

    eta >= R(S) - sum_{j in S} w_j b*_j^2 (z_j - 1) - sum_{j not in S} m_j z_j,
    m_j = (X_j'a)^2 / w_j  if |X_j'a| <= w_j r,  else 2 |X_j'a| r - w_j r^2,

with b* the minimiser on S, a = y - X_S b* its residual and w_j = lam (Bertsimas and Van
Parys 2020) plus two strengthenings that keep every cut valid and tight at S
(:meth:`dpstats.bss.gram._SquaredLossMethods.cut_at` derives them as dual bounds): S's ball
multiplier, and the data's curvature d_j (a certified diagonal under X'X, positive when
there are more rows than terms), asked for once before the first MILP
(:meth:`OuterApproximationEngine._use_curvature`); and the cap, from the box |b_j| <= r the
ball implies, which keeps the slopes finite as lam -> 0 (without it the LP bound fell to
about -2 x 10^5 below an optimum of 208 at lam = 0.006: benchmarks/README.md).  Every cut
is a global under-estimator, so one pool serves every query on the same data.

Design choices, measured with benchmarks/bench_top_r.py (the numbers are in
benchmarks/README.md):

* **Re-solve, not lazy constraints.**  After each MILP solve the engine evaluates the
  solver's solutions exactly, adds cuts there, and solves again with the cuts as ordinary
  constraints.  python-mip's lazy-constraint path on CBC has open reports of ignored
  constraints and wrong "optimal" answers (python-mip issues 175, 274, 331), and a
  certificate is only as good as the bound behind it.
* **Strong initial pool.**  IHT start (Prastakos, Behdin and Mazumder 2025, Appendix B.2),
  then 1-swap local search; cuts
  at every support visited and at the best 1-swap neighbours of the local optimum.
* **Many cuts per round.**  Cuts at every distinct solution in CBC's solution pool, plus
  at the best few 1-swap neighbours of each new solution.
* **Exact block search first (squared loss).**  Every support lies in one mistakes block
  of a fixed anchor, and :mod:`dpstats.bss.blocks` bounds a whole block by Schur
  complements without a solver.  So the best support (anchor: the local optimum), the
  top-R list (threshold v_R - tau_mip / 2) and every S^(i) are certified by that
  search when it stays small, and by the MILP otherwise.  A top-R query asked first searches
  around the local optimum directly: any anchor's blocks cover every support, so the list's
  first entry is the certified best and the best's own pass (whose threshold, the best
  value, lies below v_R, so its blocks are searched again anyway) is skipped.  With small ridges it certifies
  in a fraction of a second what the MILP alone takes minutes for or does not finish
  (benchmarks/README.md): the MILP's LP bound is what small ridges make weak; the block
  bound does not depend on it.
* **Dual branch and bound (hinge loss).**  Outside the 1-swap ball of S_1 the top-R query
  bounds the supports by weak duality, branching on the columns that keep a block's bound
  low (:meth:`dpstats.bss.hinge_source.HingeSource.search_blocks`): supports it meets below
  v_R join the candidates, and a search that finds none certifies the list.  The MILP's
  cuts are the same dual bounds made linear in z, but its LP relaxation sits far below them
  at fractional z (simulate(1000, 250, 7), rho 0.7, R = 100: root bound about 20 below the
  optimum, some 300 nodes per solve), so CBC met the near-optimal supports one solve at a
  time (162 solves, 110 s); the search needed about 3000 hinge solves (12 s in all).
  It gives way to the MILP after :attr:`EngineSettings.dual_search_solves` solves.
* **Shifted objective.**  eta is stored minus a constant (the first incumbent's value), so
  CBC's absolute gap tolerance acts on numbers of the size of the gap, not of y'y.

Certificates: a query is certified when the MILP's proven lower
bound LB over the query's feasible set satisfies LB >= target - tau_mip.  Solver bounds
are never trusted blindly: every incumbent is re-evaluated exactly by
:class:`~dpstats.bss.objective.RidgeBallObjective`, a quarter of tau_mip is reserved for
the solver's numerical error, and a bound above an exactly evaluated feasible value raises
:class:`~dpstats.errors.SolverError`.

Solver slack and epsilon
------------------------
The top-R and mistakes mechanisms assume exact optimisation; the engine certifies within
a public tolerance instead, and the ledger pays for the difference.  Suppose a list L of
R supports has values within tau_eval of the true ones, and the certificate shows that
every support outside L has R(S) >= v_R - tau_mip (v_R the largest value in L).  Put
tau = tau_mip + 2 tau_eval.  The top-R score built from L then differs from the one built
from the exact top R by at most tau at every support: for S in L but not in the exact top
set T*, some U in T* is missing from L, so R(S_R) >= R(U) >= v_R - tau_mip; for S in T*
but not in L, the certificate gives R(S) >= v_R - tau_mip and R(S) <= v_R + tau_eval; the
remaining cases are alike.  So the score's sensitivity is at most Delta + 2 tau, and
sampling with exp(-eps score / (2 Delta)) is eps (1 + 2 tau / Delta)-DP; the same holds
for the block scores of the mistakes mechanism.  tau = tolerance * Delta must be a public
constant fixed before the data is seen (the argument needs one bound valid on a data set
and on every neighbour): the engine certifies within it or raises SolverError, and the
gap it actually achieved is curator-only.

References
----------
Prastakos, Behdin and Mazumder (2025), Differentially private high-dimensional variable
selection via integer programming, section 4 and Appendix B; Bertsimas and Van Parys
(2020), Sparse high-dimensional regression: exact scalable algorithms and phase transitions;
Duran and Grossmann (1986), An outer-approximation algorithm for a class of MINLPs.
"""
from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass, field, fields, replace

import mip
import numpy as np

from ..deadline import Deadline
from ..errors import InvalidArgumentError, SolverError
from ..privacy.progress import Progress, curator_printer
from .gram import GramSource, MatrixFreeSource
from .checked_cbc import CheckedCbc, UnreliableSolve
from .iht import iht_support
from .objective import SufficientStats



@dataclass
class EngineSettings:
    """The engine's declared switches: public, fixed before the data, the same for every query.

    Which certificate routes the engine tries is decided by these and by what the source can
    do (:class:`~dpstats.bss.gram.SourceCapabilities`); whichever route certifies, the
    certified quantities are the same (module docstring), so these change speed, never the
    mechanism's output distribution.

    exact_blocks, exact_block_nodes
        The Schur-complement block search (sources with ``block_search``), and its node
        budget per block before the MILP takes over.
    dual_bounds
        One certified dual per block (sources with ``dual_blocks``).
    dual_search, dual_search_solves
        The dual branch and bound over the blocks (sources with ``dual_blocks``), and the
        hinge solves one search may spend before the MILP takes over.
    init_neighbour_cuts
        Cuts at this many best 1-swap neighbours of the first local optimum (None: 2 s).
    round_neighbour_cuts
        Cuts at this many best 1-swap neighbours of each new MILP solution.
    list_cuts
        Cuts at the listed supports with two or more mistakes before a top-R MILP.
    threads
        CBC threads.
    cbc_settings
        Extra python-mip Model attributes (e.g. ``{"preprocess": 0}``), for measurements;
        CBC's own cutting planes are off unless this sets ``cuts``.
    milp_solver
        The class of the checked MILP solver (:class:`CheckedCbc` or a subclass, built as
        ``milp_solver(s, cbc_settings=..., threads=..., gap_abs=...)``).
    """

    exact_blocks: bool = True
    exact_block_nodes: int = 200_000
    dual_bounds: bool = True
    dual_search: bool = True
    dual_search_solves: int = 4000
    init_neighbour_cuts: int | None = None
    round_neighbour_cuts: int = 2
    list_cuts: bool = True
    threads: int = 1
    cbc_settings: dict = field(default_factory=dict)
    milp_solver: type = CheckedCbc

    @classmethod
    def names(cls):
        return tuple(f.name for f in fields(cls))


#: The settings of engines built without explicit ones (the methods' engines); a test or a
#: measurement may swap it for another declared EngineSettings.
DEFAULT_SETTINGS = EngineSettings()


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


#: The engine scores every feasible support itself when CBC's output contradicts its cuts,
#: up to this many supports (above it, a SolverError as before).
FALLBACK_MAX_SUPPORTS = 200_000


@dataclass
class _TopQuery:
    """A top-R query in progress: S_1, its 1-swap ball (values, certified lower and upper
    bounds of screened neighbours) and the list as last ranked."""

    R: int
    s1: tuple
    in1: np.ndarray
    nb: np.ndarray
    vals: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    tightened: np.ndarray
    members: set = field(default_factory=set)
    v_R: float = math.inf

    @classmethod
    def around(cls, engine, s1, R):
        in1 = np.zeros(engine.p, dtype=bool)
        in1[list(s1)] = True
        nb, vals, lower = engine._expand_with_bounds(s1, keep=-1)  # the full 1-swap ball, memoised
        return cls(R, s1, in1, nb, vals.copy(), lower.copy(), np.full(vals.size, np.inf),
                   np.zeros(vals.size, dtype=bool))

    def mistakes(self, support):
        return int((~self.in1[list(support)]).sum())

    def rank(self, engine):
        L = heapq.nsmallest(self.R, engine.evaluated.items(), key=lambda kv: (kv[1], kv[0]))
        if len(L) < self.R:
            raise InvalidArgumentError(f"R={self.R} is at least the number of supports; use the exact path.")
        self.members = {k for k, _ in L}
        self.v_R = L[-1][1]


@dataclass
class _Far:
    """A route's answer for the supports with two or more mistakes from S_1 outside the list."""

    bound: float = math.inf
    solves: int = 0
    #: new supports entered the candidates (or the MILP met a better one): rank again
    rank_again: bool = False
    #: the bound covers the evaluated supports with two or more mistakes too (the MILP's)
    covers_evaluated: bool = False


class BlockSearchRoute:
    """The exact Schur-complement block search below v_R (squared loss)."""

    @staticmethod
    def bound(engine, q):
        b = engine._top_far_by_blocks(q.s1, q.R)
        return None if b is None else _Far(b)


class DualBoundsRoute:
    """One certified dual per block (hinge loss)."""

    @staticmethod
    def bound(engine, q):
        b = engine._far_by_dual_bounds(q.s1, q.v_R - engine.tau_mip)
        return None if b is None else _Far(b)


class DualSearchRoute:
    """The dual branch and bound over the blocks (hinge loss): its hits join the candidates."""

    @staticmethod
    def bound(engine, q):
        found = engine._far_by_dual_search(q.s1, q.v_R - engine.tau_mip, q.members)
        if found is None:
            return None
        bound, hits = found
        new = [(k, v) for k, v in hits if k not in engine.evaluated]
        for k, v in new:
            engine.evaluated[k] = v
        if new:
            return _Far(rank_again=True)
        return None if hits else _Far(bound)


class MilpRoute:
    """The outer-approximation MILP over the far region; always answers."""

    @staticmethod
    def bound(engine, q):
        return engine._top_far_by_milp(q)


#: The far-region routes of a top-R query, in the order they are asked; each declines
#: (None) when the engine's settings or the source's capabilities rule it out or it gives up.
TOP_ROUTES = (BlockSearchRoute(), DualBoundsRoute(), DualSearchRoute(), MilpRoute())


class BlockSearchBlock:
    """A mistakes block by the exact Schur-complement branch and bound (squared loss)."""

    @staticmethod
    def certify(engine, anchor, i, incumbent, cap, feasible):
        return engine._exact_block(anchor, i, incumbent, cap)


class DualSearchBlock:
    """A mistakes block by the dual branch and bound (hinge loss)."""

    @staticmethod
    def certify(engine, anchor, i, incumbent, cap, feasible):
        return engine._dual_block(anchor, i, incumbent, cap)


class MilpBlock:
    """A mistakes block by the outer-approximation MILP; always answers."""

    @staticmethod
    def certify(engine, anchor, i, incumbent, cap, feasible):
        return engine._block_by_milp(anchor, i, incumbent, cap, feasible)


#: The routes of a mistakes block, in the order they are asked.
BLOCK_ROUTES = (BlockSearchBlock(), DualSearchBlock(), MilpBlock())


class OuterApproximationEngine:
    """Certified best / top-R / mistakes queries for one data set and subset size.

    Parameters
    ----------
    source : GramSource, MatrixFreeSource or HingeSource
        The data and the objective: its ridge lam > 0 (the cuts need it) and radius r were
        fixed when it was built (``source.ridge``, ``source.radius``); what it can do is
        declared in ``source.capabilities``.  Use :meth:`from_stats` (precomputed sufficient
        statistics, e.g. reduced by Dask) or :meth:`from_arrays` (clipped X and y;
        matrix-free when ``matrix_free``) to build a squared-loss source and the engine at once.
    s : int
        Number of candidate columns in a support (a forced intercept comes on top).
    tolerance : float
        tau, the absolute slack of every certificate (public, fixed before the data).
        tau = tau_mip + 2 tau_eval (module docstring, "Solver slack and epsilon").
    time_limit : float, optional
        Seconds for everything this engine does (direct use); TimeLimitError when exceeded.
    deadline : dpstats.deadline.Deadline, optional
        The whole call's time budget (``dp_select(time_limit=...)``); replaces ``time_limit``.
    verbose : bool
        Print progress: per query, blocks done of the total with elapsed time and an
        estimate of the time left, and one line per MILP solve.  They quote objective
        values, bounds, gaps and counts of solves and nodes, which are functions of the
        data: every line is labelled curator-only (:mod:`dpstats.privacy.progress`).
    label : str
        The method's name in progress lines and time-limit messages.
    printer : callable
        Where progress lines go (default ``print``), after labelling.
    settings : EngineSettings, optional
        The declared switches (routes, budgets, cuts, CBC); keyword arguments named after
        its fields (``threads=2``, ``exact_blocks=False``, ...) replace single fields.
    """

    def __init__(self, source, s, tolerance, *, settings=None, time_limit=None, deadline=None,
                 verbose=False, printer=print, label="engine", **overrides):
        unknown = set(overrides) - set(EngineSettings.names())
        if unknown:
            raise TypeError(f"unknown engine settings: {sorted(unknown)}; see EngineSettings.")
        settings = replace(settings if settings is not None else DEFAULT_SETTINGS, **overrides)
        # The objective (ridge lam, radius r) is the source's, fixed when it was built.
        if not float(source.ridge) > 0:
            raise InvalidArgumentError("the MIP engine needs ridge > 0 (its cuts divide by lam); "
                                       "use method='exponential' for ridge=0 on small problems.")
        if not tolerance > 0:
            raise InvalidArgumentError(f"tolerance must be > 0; got {tolerance!r}.")
        self.source = source
        self.s = int(s)
        self.offset = 1 if source.intercept else 0
        self.p = source.n_columns - self.offset
        if not 1 <= self.s <= self.p:
            raise InvalidArgumentError(f"s={s} must be between 1 and the number of candidates ({self.p}).")
        self.tau = float(tolerance)
        # The certified error of one value: rounding for the squared loss, the duality gaps of
        # the hinge loss.
        self.capabilities = source.capabilities
        self.tau_eval = float(source.evaluation_error)
        self.tau_mip = self.tau - 2.0 * self.tau_eval
        if self.tau_mip <= 0:
            # tau_eval is computed from the data (y'y): the message does not quote it.
            raise SolverError(f"tolerance {self.tau:g} is below twice the floating-point evaluation error "
                              "for data of this scale; raise the tolerance.")
        self.deadline = Deadline.of(deadline if deadline is not None else time_limit)
        self.label = str(label)
        self._stage = "starting the certificate"
        self._reached = ""
        self.verbose = bool(verbose)
        self._printer = printer
        self.settings = settings
        self.milp = settings.milp_solver(self.s, cbc_settings=self.cbc_settings, threads=settings.threads,
                                         gap_abs=self.tau_mip / 4.0)
        self._print = curator_printer(printer)  # progress is curator-only
        self.stats = EngineStats()
        self._start = time.perf_counter()
        self.evaluated: dict = {}  # candidate tuple -> exact R
        self._expanded: set = set()
        self._cut_at: dict = {}  # support -> its position in the pool (insertion order)
        self._cut_const: list = []
        self._cut_coef: list = []
        # whether the source was asked for curvature cuts (once, before the first MILP)
        self._curvature_asked = False
        # Cuts the MILP starts from, added only when a MILP is first built: the block and
        # dual-bound routes certify most queries without one, and a hinge cut costs a solve.
        self._deferred_cuts: list = []
        # The last expansion (support, neighbours, values, lower): initialise() ends with
        # the local optimum's, which best() and top() ask for again.
        self._last_expansion = None
        self._dual_block_bounds = {}  # (anchor, i) -> certified bounds per base (hinge loss)
        self._base = None
        self._best = None
        self._tops = {}  # R -> TopCertificate (a second query for the same R reuses it)
        self._initialised = False
        # supports memoised per expansion inside the MILP rounds (the query's R; 1 for best)
        self._keep = 1
        # the block search met a block too large for it: the top-R queries go to the MILP
        self._far_blocks_too_large = False

    # ------------------------------------------------------------------ construction
    @property
    def ridge(self) -> float:
        """lam of the objective (the source's)."""
        return float(self.source.ridge)

    @property
    def radius(self) -> float:
        """r of the objective's ball (the source's)."""
        return float(self.source.radius)

    @classmethod
    def from_stats(cls, stats: SufficientStats, s, ridge, radius, tolerance, **kwargs):
        """Engine on precomputed sufficient statistics (G, c, yy, n), for the objective with this
        ridge and radius (the source is built here)."""
        return cls(GramSource(stats, ridge, radius), s, tolerance, **kwargs)

    @classmethod
    def from_arrays(cls, X, y, s, ridge, radius, tolerance, *, intercept=False, matrix_free=None, **kwargs):
        """Engine on the clipped design (intercept column first when ``intercept``).

        ``matrix_free=None`` chooses the matrix-free path above 3000 columns, where a
        p x p Gram matrix would dominate memory (:mod:`dpstats.bss.gram`).
        """
        X = np.asarray(X, dtype=np.float64)
        if matrix_free is None:
            matrix_free = X.shape[1] > 3000
        if matrix_free:
            return cls(MatrixFreeSource(X, y, ridge, radius, intercept=intercept), s, tolerance, **kwargs)
        return cls(GramSource(SufficientStats.from_arrays(X, y, intercept), ridge, radius), s, tolerance, **kwargs)

    # ------------------------------------------------------------------ settings
    @property
    def init_neighbour_cuts(self) -> int:
        n = self.settings.init_neighbour_cuts
        return 2 * self.s if n is None else int(n)

    @property
    def cbc_settings(self) -> dict:
        # CBC's own cutting planes cost more than they gain on these small dense MILPs:
        # measured on (1000, 250, 7), block i = 2, 30 s budget: defaults 40 solves (gap left
        # 5.2), cuts=0 138 solves (1.5).  Preprocessing stays on: with preprocess=0 the CBC of
        # cbcbox 2.935 returned "optimal" solutions with a binary at 2 (the fair data's hinge
        # top-R query; CBC issues 734 and 751 report the same class of bug), and it saved
        # little (hinge top-R on (1000, 250, 7), rho 0.7: 110 s without, 123 s with it).
        return {"cuts": 0, **dict(self.settings.cbc_settings)}

    def _block_search_on(self):
        return self.settings.exact_blocks and self.capabilities.block_search

    def _dual_bounds_on(self):
        return self.settings.dual_bounds and self.capabilities.dual_blocks

    def _dual_search_on(self):
        return self.settings.dual_search and self.capabilities.dual_blocks

    # ------------------------------------------------------------------ helpers
    def _full(self, supports):
        sup = np.asarray(supports, dtype=np.int64) + self.offset
        if not self.offset:
            return sup
        if sup.ndim == 1:
            return np.concatenate([[0], sup])
        return np.hstack([np.zeros((sup.shape[0], 1), dtype=np.int64), sup])

    #: What makes a certificate cheaper (time-limit messages): a larger ridge strengthens every
    #: bound, a smaller R or s shrinks what must be certified.
    ADVICE = "a larger ridge (stronger bounds), a smaller R or s, or fewer candidate terms"

    def _check_time(self):
        self.deadline.check(f"{self.label}: {self._stage}", reached=self._reached, advice=self.ADVICE)

    def _remaining(self):
        return self.deadline.remaining()

    def _progress(self, stage, total, unit, note=""):
        """A progress reporter for one query (prints only with ``verbose``)."""
        return Progress(f"{self.label}: {stage}", total, unit, enabled=self.verbose, printer=self._printer,
                        every=0.0, start=self.deadline.start, note=note)

    def evaluate(self, supports) -> np.ndarray:
        """Exact R for candidate supports (2-D array), memoised."""
        supports = np.sort(np.atleast_2d(np.asarray(supports, dtype=np.int64)), axis=1)
        keys = [tuple(int(j) for j in row) for row in supports]
        missing = [k for k in dict.fromkeys(keys) if k not in self.evaluated]
        if missing:
            full = self._full(np.array(missing, dtype=np.int64))
            vals = self.source.values(full)
            self.stats.evaluations += len(missing)
            for k, v in zip(missing, vals):
                self.evaluated[k] = float(v)
        return np.array([self.evaluated[k] for k in keys])

    def _expand(self, support, keep):
        """Values of all 1-swap neighbours of ``support``; a cut at ``support``.

        Returns (neighbour supports (m x s candidate indices, sorted rows), values).  The
        ``keep`` best are memoised: for the top-R query that loses nothing, because a
        neighbour outside the best R of one expansion has R better supports beside it.
        A source with ``provides_lower_bounds`` (the hinge loss) evaluates only the
        neighbours that certified lower bounds cannot rule out; the others have value +inf
        here (see :meth:`_expand_with_bounds`), and the best neighbour is always evaluated.
        """
        nb, vals, _ = self._expand_with_bounds(support, keep)
        return nb, vals

    def _expand_with_bounds(self, support, keep):
        """(neighbours, values, lower): as :meth:`_expand`, with certified lower bounds.

        ``values`` are certified upper bounds (exact values for the squared loss, +inf where
        a neighbour was screened out); ``lower[k] <= R(neighbour k)`` always.
        """
        support = tuple(sorted(support))
        if self._last_expansion is not None and self._last_expansion[0] == support:
            nb, vals, lower = (a.copy() for a in self._last_expansion[1:])
        else:
            nb, vals, lower = self._neighbours_of(support)
            self._last_expansion = (support, nb.copy(), vals.copy(), lower.copy())
        finite = np.isfinite(vals)
        if keep:
            order = np.argsort(vals, kind="stable")[:keep] if keep > 0 else np.arange(vals.size)
            for k in order:
                if finite[k]:  # screened-out neighbours (+inf) are not memoised
                    key = tuple(int(j) for j in nb[k])
                    self.evaluated.setdefault(key, float(vals[k]))
        return nb, vals, lower

    def _outside(self, full):
        """The candidate columns (full indices) not in the full support ``full``."""
        mask = np.ones(self.source.n_columns, dtype=bool)
        mask[full] = False
        mask[:self.offset] = False
        return np.nonzero(mask)[0]

    def _anchor_columns(self, anchor):
        """(forced, movable, outside) full columns of a candidate support: the intercept, the
        anchor's candidate columns, and every other candidate column."""
        full = self._full(np.array(anchor))
        return full[:self.offset], full[self.offset:], self._outside(full)

    def _neighbours_of(self, support):
        """The source's answer for the 1-swap neighbours of ``support``, plus a cut there."""
        full = self._full(np.array(support))
        t0 = time.perf_counter()
        cross = self.source.cross(full)
        self._add_cut(support, full, cross)
        movable = np.arange(self.offset, full.size)
        outside = self._outside(full)
        if outside.size == 0:
            return np.empty((0, self.s), dtype=np.int64), np.empty(0), np.empty(0)
        pos, cols, vals, lower = self.source.neighbour_values(full, movable, outside, cross=cross)
        if lower is None:
            lower = vals - self.tau_eval
        nb = np.broadcast_to(full, (pos.size, full.size)).copy()
        nb[np.arange(pos.size), pos] = cols
        nb = np.sort(nb[:, self.offset:] - self.offset, axis=1)
        self.stats.cut_seconds += time.perf_counter() - t0
        finite = np.isfinite(vals)
        self.stats.evaluations += int(finite.sum())
        self._expanded.add(support)
        if not finite.all():
            # Screened neighbours first: a caller's argmin over a feasible subset that holds
            # only screened (+inf) entries then lands on a +inf entry, never on a finite value
            # of an infeasible neighbour (numpy's argmin of all-inf is index 0).
            first = np.argsort(finite, kind="stable")
            nb, vals, lower = nb[first], vals[first], lower[first]
        return nb, vals, lower

    def cut(self, support):
        """(const, coef): the cut at a candidate support, eta >= const + coef . z."""
        support = tuple(sorted(support))
        full = self._full(np.array(support))
        return self._cut_terms(support, full, self.source.cross(full))

    def _cut_terms(self, support, full, cross):
        # The loss-specific cut (module docstring) comes from the source; its value is
        # a certified upper bound on R(S), its cut a valid under-estimator of g.
        value, const, grad_c = self.source.cut_at(full, cross=cross)
        self.evaluated.setdefault(support, float(value))
        return const, grad_c

    def _add_cut(self, support, full=None, cross=None):
        support = tuple(sorted(support))
        if support in self._cut_at:
            return False
        if full is None:
            full = self._full(np.array(support))
            cross = self.source.cross(full)
        const, coef = self._cut_terms(support, full, cross)
        self._cut_at[support] = len(self._cut_const)
        self._cut_const.append(const)
        self._cut_coef.append(coef)
        self.stats.cuts += 1
        return True

    def _use_curvature(self):
        """Before the first MILP: cuts with the data's curvature where the source offers them.

        The MILP's LP bound is what a small ridge makes weak (cut slopes -(X_j'a)^2 / lam);
        a source with ``curvature_cuts`` can replace lam by lam + d_j with d from the data's
        smallest eigenvalue (:meth:`dpstats.bss.gram._SquaredLossMethods.use_curvature`),
        the tangent of a stronger relaxation with the same values at every support.  The
        pool is then recomputed at the same supports; the values do not change.  Asked only
        here because the eigenvalue costs about as much as a few p x p products and the block
        routes certify most queries without a MILP.
        """
        if self._curvature_asked:
            return
        self._curvature_asked = True
        if not self.source.capabilities.curvature_cuts or not self.source.use_curvature():
            return
        for support, k in self._cut_at.items():
            full = self._full(np.array(support))
            self._cut_const[k], self._cut_coef[k] = self._cut_terms(support, full, self.source.cross(full))

    def _local_search(self, support, max_moves=50):
        """Best-improvement 1-swap descent (cuts at every support visited)."""
        current = tuple(sorted(support))
        value = float(self.evaluate([current])[0])
        nb, vals = self._expand(current, keep=0)
        for _ in range(max_moves):
            if vals.size == 0:
                break
            k = int(np.argmin(vals))
            if not vals[k] < value - 1e-12 * (abs(value) + 1.0):
                break
            current = tuple(int(j) for j in nb[k])
            value = float(self.evaluate([current])[0])
            nb, vals = self._expand(current, keep=0)
        return current, value, nb, vals

    def initialise(self):
        """IHT start, 1-swap local search, and the initial cut pool."""
        if self._initialised:
            return
        start = iht_support(self.source, self.s)
        start = tuple(int(j) - self.offset for j in start[self.offset:])
        best, value, nb, vals = self._local_search(start)
        # Memoise the neighbours of the local optimum (candidates for top-R and mistakes).
        order = np.argsort(vals, kind="stable")
        order = order[np.isfinite(vals[order])]  # screened-out neighbours (hinge) have no value
        for k in order[:max(self.init_neighbour_cuts, 1000)]:
            self.evaluated.setdefault(tuple(int(j) for j in nb[k]), float(vals[k]))
        self._deferred_cuts = [tuple(int(j) for j in nb[k]) for k in order[:self.init_neighbour_cuts]]
        self._base = value
        self._best_local = (best, value)
        self._initialised = True

    # ------------------------------------------------------------------ MILP
    def _build(self, constraints):
        m = mip.Model(sense=mip.MINIMIZE, solver_name=mip.CBC)
        z = [m.add_var(var_type=mip.BINARY) for _ in range(self.p)]
        eta = m.add_var(lb=-mip.INF)
        m.objective = mip.minimize(eta)
        m += mip.xsum(z) == self.s
        for kind, members, rhs in constraints:
            expr = mip.xsum(z[j] for j in members)
            if kind == "<=":
                m += expr <= rhs
            else:
                m += expr == rhs
        self.milp.configure(m)
        self.stats.model_builds += 1
        return m, z, eta

    def _add_cuts_to(self, m, z, eta, first):
        vars_ = z + [eta]
        for k in range(first, len(self._cut_const)):
            coef = self._cut_coef[k]
            m.add_constr(mip.LinExpr(variables=vars_, coeffs=list(-coef) + [1.0],
                                     const=-(self._cut_const[k] - self._base), sense=">"))
        return len(self._cut_const)

    def _solve(self, m, z, start, label):
        """(lower bound, distinct solutions) of one MILP solve by the settings' checked solver
        (:class:`CheckedCbc`); the bound is shifted back by the stored constant."""
        self._check_time()
        answer = self.milp.solve(m, z, start=start, max_seconds=self._remaining(), label=label)
        self.stats.milp_seconds += answer.seconds
        self.stats.milp_solves += answer.attempts
        self.stats.invalid_solutions += answer.invalid
        if answer.status == "infeasible":
            # Never a certificate by itself: every query passes a feasible incumbent, and
            # _minimise treats a bound above it as a solver failure.
            return math.inf, []
        if answer.status != "optimal":
            self._check_time()
            # Not the time limit: an answer the engine cannot use, which falls back like
            # solutions outside the binaries' bounds (a failure here would depend on the data).
            raise UnreliableSolve(f"{label}: CBC status {answer.status}")
        return answer.bound + self._base, answer.solutions

    def _minimise(self, label, constraints, feasible, incumbent, target=None, early_exit=None, cap=math.inf):
        """Outer approximation over one feasible set.

        ``feasible(array of supports) -> bool mask``; ``incumbent`` = (support, value) with
        the support feasible; ``target`` (default: the smaller of the incumbent's value and
        ``cap``) is what the lower bound must reach within tau_mip.  Returns (certified, support, value, lb,
        solves); certified is False only when ``early_exit(value)`` fired.
        """
        self._use_curvature()
        for support in self._deferred_cuts:
            self._add_cut(support)
        self._deferred_cuts = []
        m, z, eta = self._build(constraints)
        n_in = self._add_cuts_to(m, z, eta, 0)
        inc, inc_val = incumbent
        solves = 0
        reserve = self.tau_mip / 4.0
        # Supports cut off by no-good constraints (see _exclude_repeated) and the smallest
        # certified lower bound of their values: the bound over the feasible set is the smaller
        # of the MILP's bound over the rest and this floor.
        excluded = {"supports": set(), "floor": math.inf}
        while True:
            n_in = self._add_cuts_to(m, z, eta, n_in)
            try:
                lb, sols = self._solve(m, z, inc, label)
            except UnreliableSolve:
                return self._fallback(feasible, early_exit, solves + 1, SolverError(
                    f"unreliable solver in {label}: CBC stopped with a status other than optimal, or "
                    "reported solutions outside the binaries' bounds with and without preprocessing; "
                    "nothing was released."), from_none=True)
            solves += 1
            self._reached = f"{solves} MILP solves in {label}, not yet certified"
            lb = min(lb - reserve, excluded["floor"])
            thr = min(inc_val, cap) if target is None else target
            if self.verbose:
                self._print(f"[engine] {label} iter {solves:3d}  incumbent {inc_val:.6f}  bound {lb:.6f}  "
                            f"gap {inc_val - lb:.3g}  cuts {len(self._cut_const)}  "
                            f"elapsed {time.perf_counter() - self._start:.2f}s")
            if lb > inc_val + reserve + self.tau_eval:
                # CBC claimed a bound above a feasible support's certified value (seen with
                # the CBC of cbcbox 2.927 on steep hinge cuts): its bound cannot be trusted.
                return self._fallback(feasible, early_exit, solves, SolverError(
                    f"inconsistent certificate in {label}: the solver's bound exceeds the exact "
                    "value of a feasible support (solver numerics); nothing was released."))
            if lb >= thr - self.tau_mip:
                return True, inc, inc_val, lb, solves
            inc, inc_val, progress = self._absorb_solutions(sols, feasible, inc, inc_val)
            if early_exit is not None and early_exit(inc_val):
                return False, inc, inc_val, lb, solves
            if not progress:
                thr = min(inc_val, cap) if target is None else target
                if not self._exclude_repeated(m, z, sols, excluded, thr):
                    return self._fallback(feasible, early_exit, solves, SolverError(
                        f"no progress in {label}: the MILP returned supports that already carry cuts "
                        "but its bound stays below the target (solver numerics); "
                        "nothing was released. Try a larger tolerance."))

    def _fallback(self, feasible, early_exit, solves, error, from_none=False):
        """Every feasible support scored (:meth:`_enumerated_minimum`) when CBC's answer cannot
        be used, or ``error`` raised when there are too many."""
        fallback = self._enumerated_minimum(feasible, early_exit)
        if fallback is not None:
            return (*fallback, solves)
        if from_none:
            raise error from None
        raise error

    def _absorb_solutions(self, sols, feasible, inc, inc_val):
        """Cuts at the MILP's solutions and their best feasible neighbours; a better feasible
        incumbent among them.  Returns (incumbent, value, whether a new cut was added)."""
        progress = False
        for sup in sols:
            new = sup not in self._cut_at
            nb, vals = self._expand(sup, keep=max(self._keep, 1))
            progress |= new
            cand = np.vstack([np.array(sup)[None, :], nb])
            cvals = np.concatenate([self.evaluate([sup]), vals])
            ok = feasible(cand)
            if np.any(ok):
                k = int(np.argmin(np.where(ok, cvals, np.inf)))
                if cvals[k] < inc_val:
                    inc, inc_val = tuple(int(j) for j in cand[k]), float(cvals[k])
                    self.evaluated.setdefault(inc, inc_val)
            # cuts at the best few feasible neighbours as well
            if self.settings.round_neighbour_cuts and vals.size:
                okn = feasible(nb)
                order = np.argsort(np.where(okn, vals, np.inf), kind="stable")[:self.settings.round_neighbour_cuts]
                for k in order:
                    if okn[k]:
                        progress |= self._add_cut(tuple(int(j) for j in nb[k]))
        return inc, inc_val, progress

    def _exclude_repeated(self, m, z, sols, excluded, thr):
        """The MILP returned supports that already carry a cut, yet its bound is below the
        target: CBC accepted eta below its own cut at that support, within its feasibility
        tolerances (steep cuts, slopes -w^2 / lam, amplify them).  A support whose certified
        value already reaches the target is no counterexample: cut it off with a no-good
        constraint and keep its value's lower bound (value - tau_eval) as a floor of the
        certificate.  False when no support could be cleared (CBC cannot be trusted here)."""
        cleared = False
        for sup in sols:
            if sup not in self._cut_at or sup in excluded["supports"]:
                continue  # returned again despite its no-good: CBC cannot be trusted here
            floor = float(self.evaluate([sup])[0]) - self.tau_eval
            if floor >= thr - self.tau_mip:
                excluded["supports"].add(sup)
                m += mip.xsum(z[j] for j in sup) <= self.s - 1
                excluded["floor"] = min(excluded["floor"], floor)
                cleared = True
        return cleared

    def _enumerated_minimum(self, feasible, early_exit):
        """(certified, support, value, lower bound) by scoring every feasible support, or None
        when there are more than :data:`FALLBACK_MAX_SUPPORTS`.

        The fallback when CBC's answer is inconsistent with the cuts: each value is a
        certified upper bound within tau_eval, so min(value) - tau_eval bounds the feasible
        set's minimum from below.  Which route certified is curator-only; the certified
        quantities are the same, so the mechanism's output distribution does not depend on it.
        """
        if math.comb(self.p, self.s) > FALLBACK_MAX_SUPPORTS:
            return None
        supports = np.array(list(itertools.combinations(range(self.p), self.s)), dtype=np.int64).reshape(-1, self.s)
        supports = supports[feasible(supports)]
        if supports.shape[0] == 0:
            return True, None, math.inf, math.inf
        values = np.concatenate([np.asarray(self.evaluate(supports[i:i + 4096]), dtype=np.float64)
                                 for i in range(0, supports.shape[0], 4096)])
        k = int(np.argmin(values))
        best, value = tuple(int(j) for j in supports[k]), float(values[k])
        self.evaluated.setdefault(best, value)
        self.stats.log.append({"enumerated_fallback": int(supports.shape[0]), "exact": False})
        if early_exit is not None and early_exit(value):
            return False, best, value, float(values.min()) - self.tau_eval
        return True, best, value, float(values.min()) - self.tau_eval

    # ------------------------------------------------------------------ queries
    def best(self) -> Certificate:
        """The certified best support S_1.

        Routes, first that succeeds: the exact block search (squared loss,
        :meth:`_best_by_blocks`), certified dual bounds over the ball and every block
        (hinge loss, :meth:`_best_by_dual_bounds`), the outer-approximation MILP.
        """
        if self._best is not None:
            return self._best
        self._stage, self._reached = "certifying the best support", ""
        self.initialise()
        self._keep = 1
        by_blocks = self._best_by_blocks(self._best_local[0])
        if by_blocks is None:
            by_blocks = self._best_by_dual_bounds(self._best_local[0])
        if by_blocks is not None:
            self._best = by_blocks
            self._finish()
            return self._best
        inc = min(self.evaluated.items(), key=lambda kv: (kv[1], kv[0]))
        _, sup, val, lb, solves = self._minimise("best", [], lambda a: np.ones(len(a), dtype=bool), inc)
        self._best = Certificate(sup, val, lb, self.tau_mip, solves)
        self._finish()
        return self._best

    def top(self, R) -> TopCertificate:
        """The certified R best supports (guess and certify).

        S_1 is the certified best support, or the local optimum when the block search
        certifies the list around it (:meth:`_top`).
        The whole 1-swap neighbourhood of S_1 is evaluated exactly (s (p - s) supports,
        vectorised), so only the supports with at least two mistakes from S_1 that are not
        in the list remain to be bounded: by the exact block search
        (:meth:`_top_far_by_blocks`) for the squared loss, else (or when that search is
        too large) by the MILP with constraint sum_{j in S_1} z_j <= s - 2.  Near-optimal
        supports are mostly 1-swaps of S_1 (Prastakos, Behdin and Mazumder 2025, Appendix
        B), so that
        region is usually far above v_R and one or two MILP solves certify the list.
        For the hinge loss the ball is screened by certified lower bounds instead of solved:
        the neighbours that can still enter the list (lower bound below the R-th smallest of
        the known values and the dual ascent's certified upper bounds) are solved in one
        batch, and any whose bound stays below v_R - tau_mip afterwards is solved too; the
        region beyond the ball goes to one dual per block, then to the dual branch and bound
        (:meth:`_far_by_dual_search`), and only then to the MILP.
        """
        R = int(R)
        if R in self._tops:
            return self._tops[R]
        cert = self._top(R)
        self._tops[R] = cert
        return cert

    def _top(self, R) -> TopCertificate:
        """The list around the local optimum when the block search certifies it (the list's
        first entry is then the certified best: no separate pass for it), else around the
        certified best support."""
        if self._best is None and self._block_search_on():
            self._stage, self._reached = f"certifying the top-{R} list", ""
            self.initialise()
            cert = self._top_around(R, self._best_local[0], routes=(BlockSearchRoute(),))
            if cert is not None:
                self._best = self._best_of_list(cert)
                return cert
        best = self.best()
        return self._top_around(R, best.support, routes=TOP_ROUTES)

    def _top_around(self, R, anchor, routes) -> TopCertificate | None:
        """Fill the list, ask the far-region ``routes`` in order (:data:`TOP_ROUTES`), build one
        certificate; None when every route declines.

        ``anchor`` (S_1) need not be the best support: its blocks i = 1..s partition every
        support, so the certificate holds for any anchor; the best makes the far region
        easiest for the MILP, which is why only the block search is asked around an anchor
        that is not yet certified.
        """
        self._stage, self._reached = f"certifying the top-{R} list", ""
        self._keep = R
        q = _TopQuery.around(self, anchor, R)
        total_solves = 0
        while True:
            self._fill_candidates(q)
            q.rank(self)
            if self._screen_pending(q):
                continue  # v_R only decreases, so screened neighbours stay screened
            far = None
            for route in routes:
                far = route.bound(self, q)
                if far is not None:
                    break
            if far is None:
                return None
            total_solves += far.solves
            if far.rank_again:
                continue  # supports entered the candidates: rank again, then ask again
            self._finish()
            return self._top_certificate(q, far, total_solves)

    def _best_of_list(self, cert) -> Certificate:
        """The best support from a certified top-R list: every support outside the list has
        R >= cert.lower_bound, and the listed ones are evaluated exactly."""
        k = int(np.argmin(cert.values))
        value = float(cert.values[k])
        return Certificate(tuple(cert.supports[k]), value, min(value, float(cert.lower_bound)),
                           self.tau_mip, cert.milp_solves)

    def _fill_candidates(self, q):
        """Expand the best unexpanded supports until R + 1 are known; screened ball neighbours
        (the hinge loss) are solved first, the most promising first."""
        while len(self.evaluated) < q.R + 1:
            unknown = np.nonzero(~np.isfinite(q.vals))[0]
            if unknown.size:
                self._solve_screened(q, unknown)
                continue
            fresh = [k for k, _ in sorted(self.evaluated.items(), key=lambda kv: (kv[1], kv[0]))
                     if k not in self._expanded]
            if not fresh:
                self._fill_in_order(q.R + 1)
                return
            self._expand(fresh[0], keep=q.R)

    def _fill_in_order(self, count):
        """Evaluate supports in lexicographic order until ``count`` are known (at most C(p, s)).

        Expansions memoise only the neighbours they solve, so where a loss screens some out
        (the hinge loss's lower bounds) every reachable support can be expanded with fewer
        than R + 1 known; how many depends on the data, so running short must not end the
        call (spec 5.9): any evaluated support may join the candidates (the certificate
        bounds every support outside the list, known or not).
        """
        want = min(int(count), math.comb(self.p, self.s))
        batch = []
        for key in itertools.combinations(range(self.p), self.s):
            if len(self.evaluated) + len(batch) >= want:
                break
            if key not in self.evaluated:
                batch.append(key)
        if batch:
            self._check_time()
            self.evaluate(np.array(batch, dtype=np.int64))

    def _solve_screened(self, q, unknown):
        """Solve the screened ball neighbours that can still be in the list, ranked by tightened
        bounds (closer to the values than the first ones), at least as many as are missing."""
        R = q.R
        need = R + 1 - len(self.evaluated)
        take = unknown[np.argsort(q.lower[unknown], kind="stable")[:2 * need]]
        if self.capabilities.lower_bounds:
            fresh = take[~q.tightened[take]]
            q.lower[fresh], q.upper[fresh] = self.source.tightened_bounds(self._full(q.nb[fresh]), q.lower[fresh])
            q.tightened[fresh] = True
        # v_R will be at most the R-th smallest of the known values and the candidates'
        # certified upper bounds (up to the evaluation slack), so those with lower bounds above
        # that are out; solving the others now leaves (almost) nothing for the pending step.
        known = np.fromiter(self.evaluated.values(), float)
        pool = np.concatenate([known, q.upper[take]])
        reach = np.partition(pool, R - 1)[R - 1] + self.tau_eval if pool.size >= R else np.inf
        take = take[np.argsort(q.lower[take], kind="stable")]
        take = take[:max(need, int(np.sum(q.lower[take] < reach - self.tau_mip)))]
        q.vals[take] = self.evaluate(q.nb[take])

    def _screen_pending(self, q):
        """Ball neighbours screened out by certified lower bounds (hinge loss) must stay out of
        reach of the list, lower >= v_R - tau_mip ("Solver slack and epsilon").  Evaluates (or
        rules out by dual ascent) the next batch of the others; False when none is left."""
        pending = np.nonzero(~np.isfinite(q.vals) & (q.lower < q.v_R - self.tau_mip))[0]
        if not pending.size:
            return False
        # in batches, most promising first: each batch can only lower v_R
        pending = pending[np.argsort(q.lower[pending], kind="stable")[:48]]
        if self.capabilities.lower_bounds:
            # cheaper than a solve: dual ascent rules many out (hinge loss)
            fresh = pending[~q.tightened[pending]]
            q.lower[fresh] = self.source.tightened_lower_bounds(self._full(q.nb[fresh]), q.lower[fresh])
            q.tightened[fresh] = True
            pending = pending[q.lower[pending] < q.v_R - self.tau_mip]
            if pending.size == 0:
                return True
        q.vals[pending] = self.evaluate(q.nb[pending])
        return True

    def _top_certificate(self, q, far, solves):
        """The one top-R certificate: every support with two or more mistakes from S_1 is
        evaluated or has R >= far.bound >= v_R - tau_mip; the ball is evaluated or screened.

        The bound outside the list is the smallest of far.bound and the lower bounds of the
        evaluated supports outside it (values, less tau_eval where they are upper bounds, and
        the screened neighbours' bounds); where far.bound covers the evaluated supports with
        two or more mistakes as well (the MILP's bound is over all of them), only the ball's
        enter.
        """
        L = heapq.nsmallest(q.R, self.evaluated.items(), key=lambda kv: (kv[1], kv[0]))
        members = {k for k, _ in L}
        sups = [k for k, _ in L]
        vals_L = self.evaluate(np.array(sups))  # exact, canonical evaluation
        rest = [v for k, v in self.evaluated.items() if k not in members
                and not (far.covers_evaluated and (k == q.s1 or q.mistakes(k) >= 2))]
        if self.capabilities.lower_bounds:
            # values are upper bounds within tau_eval; screened ball neighbours have bounds
            rest = [v - self.tau_eval for v in rest] + [float(x) for x in q.lower[~np.isfinite(q.vals)]]
        return TopCertificate(sups, vals_L, min([far.bound] + rest), self.tau_mip, solves)

    def _top_far_by_milp(self, q):
        """The far region by the MILP with sum_{j in S_1} z_j <= s - 2 and a no-good constraint
        per listed far support; always answers (a certificate, or supports to rank again)."""
        in1, members = q.in1, q.members
        far = [k for k in members if q.mistakes(k) >= 2]

        def feasible(a, members=members):
            a = np.asarray(a, dtype=np.int64)
            ok = (~in1[a]).sum(axis=1) >= 2
            return ok & np.array([tuple(int(j) for j in row) not in members for row in a], dtype=bool)

        outside = [(k, v) for k, v in self.evaluated.items() if k not in members and q.mistakes(k) >= 2]
        if not outside:
            outside = self._two_mistakes_start(q, feasible)
        if self.s < 2 or self.p - self.s < 2 or not outside:
            # no support has two mistakes (s = 1 or p - s = 1): the ball is everything
            return _Far(math.inf, covers_evaluated=True)
        inc = min(outside, key=lambda kv: (kv[1], kv[0]))
        constraints = [("<=", list(q.s1), self.s - 2)] + [("<=", list(k), self.s - 1) for k in far]
        if self.settings.list_cuts:
            for k in far:
                self._add_cut(k)
        v_R = q.v_R
        certified, _, _, lb, solves = self._minimise(
            f"top-{q.R}", constraints, feasible, inc, target=v_R,
            early_exit=lambda v, v_R=v_R: v < v_R - 1e-12 * (abs(v_R) + 1.0))
        return _Far(lb, solves=solves, covers_evaluated=True, rank_again=not certified)

    def _two_mistakes_start(self, q, feasible):
        """A feasible MILP start: the best 1-swap of the best 1-swap that has 2 mistakes."""
        k1 = tuple(int(j) for j in q.nb[int(np.argmin(q.vals))])
        nb2, vals2 = self._expand(k1, keep=0)
        ok2 = feasible(nb2)
        if not np.any(ok2):
            return []
        k = int(np.argmin(np.where(ok2, vals2, np.inf)))
        v2 = float(vals2[k]) if np.isfinite(vals2[k]) else float(self.evaluate(nb2[k:k + 1])[0])
        return [(tuple(int(j) for j in nb2[k]), v2)]

    def mistakes(self, anchor=None, cap_width=math.inf) -> list:
        """Certified S^(i) = argmin {R(S): |S minus S^(0)| = i}, i = 1..min(s, p - s).

        Returns a list of Certificates, entry i - 1 for i mistakes.  ``anchor`` defaults
        to the certified best support.  With a finite ``cap_width`` K, a block whose
        minimum is at least cap = R(S^(0)) + K is only bounded: its Certificate has
        ``capped=True`` and lower_bound >= cap - tau_mip (the capped scores of
        :mod:`dpstats.bss.mistakes` need no more); blocks below the cap are minimised as before.
        """
        if anchor is None:
            anchor = self.best().support
        anchor = tuple(sorted(anchor))
        self.initialise()
        cap = float(self.evaluate([anchor])[0]) + float(cap_width) if math.isfinite(cap_width) else math.inf
        self._keep = max(self._keep, 1)
        in0 = np.zeros(self.p, dtype=bool)
        in0[list(anchor)] = True
        out = []
        previous = anchor
        n_blocks = min(self.s, self.p - self.s)
        progress = self._progress("mistakes blocks", n_blocks, "block", note="rough: later blocks are usually slower")
        for i in range(1, n_blocks + 1):
            self._stage = f"certifying mistakes block {i} of {n_blocks}"
            self._reached = f"{i - 1} of {n_blocks} blocks certified"
            if i > 1:
                progress.update(i - 1, detail=self._block_route(out[-1]))
            cert = self._certify_block(anchor, i, in0, previous, cap)
            out.append(cert)
            previous = cert.support
        if out:
            progress.update(len(out), detail=self._block_route(out[-1]))
        self._finish()
        return out

    def _certify_block(self, anchor, i, in0, previous, cap):
        """Block i: an incumbent from the expansion of the previous block's minimiser, then the
        block routes in order (:data:`BLOCK_ROUTES`); block 1 of the anchor needs none."""
        def feasible(a, i=i):
            a = np.asarray(a, dtype=np.int64)
            return (~in0[a]).sum(axis=1) == i

        known = [(k, v) for k, v in self.evaluated.items() if (~in0[list(k)]).sum() == i]
        nb, vals = self._expand(previous, keep=0)
        ok = feasible(nb)
        usable = ok & np.isfinite(vals)  # a screened neighbour (+inf, hinge) has no exact value yet
        if usable.any():
            k = int(np.argmin(np.where(usable, vals, np.inf)))
            known.append((tuple(int(j) for j in nb[k]), float(vals[k])))
        elif not known and ok.any():
            # every feasible neighbour was screened: score one exactly for an incumbent
            sup = tuple(int(j) for j in nb[int(np.argmax(ok))])
            known.append((sup, float(self.evaluate([sup])[0])))
        inc = min(known, key=lambda kv: (kv[1], kv[0]))
        if i == 1 and previous == anchor:
            # the 1-mistake block is the 1-swap neighbourhood of S^(0), evaluated
            # exactly and completely just above: no MILP needed
            sup = inc[0]
            val = float(self.evaluate([sup])[0])
            return Certificate(sup, val, float(np.min(vals[ok])), self.tau_mip, 0)
        for route in BLOCK_ROUTES:
            cert = route.certify(self, anchor, i, inc, cap, feasible)
            if cert is not None:
                return cert

    def _block_by_milp(self, anchor, i, incumbent, cap, feasible):
        """Block i by the MILP with sum_{j in S^(0)} z_j = s - i; always answers."""
        constraints = [("==", list(anchor), self.s - i)]
        self._block_cuts(anchor, i)
        _, sup, val, lb, solves = self._minimise(f"mistakes i={i}", constraints, feasible, incumbent, cap=cap)
        val = float(self.evaluate([sup])[0])
        # certified below the cap: lb >= val - tau_mip; above it: lb >= cap - tau_mip only
        return Certificate(sup, val, lb, self.tau_mip, solves, capped=bool(val > cap))

    @staticmethod
    def _block_route(cert):
        return f"last by {cert.milp_solves} MILP solves" if cert.milp_solves else "last without MILP"

    def _exact_block(self, anchor, i, incumbent, cap=math.inf):
        """Block i by Schur-complement branch and bound (:mod:`dpstats.bss.blocks`), or None.

        Squared loss only (GramSource / MatrixFreeSource); exact up to tau_mip / 2, no MILP.
        Returns None (the caller falls back to the MILP) when the settings switch
        ``exact_blocks`` off (or the source has no ``block_search``) or the search exceeds
        ``exact_block_nodes`` nodes.  With
        an incumbent above ``cap`` the search starts from the cap as its value (it prunes
        every support it can bound above cap - tau_mip / 2); when no support below the cap
        turns up, the block is certified capped.
        """
        if not self._block_search_on():
            return None
        from .blocks import minimise_block

        self._check_time()
        t0 = time.perf_counter()
        inc_sup, inc_val = incumbent
        full_inc = self._full(np.array(inc_sup))
        obj, local = self.source.local_objective(full_inc[None, :])
        mu = float(obj.solve(local[0]).mu)  # any mu >= 0 is valid; this one is tight near the incumbent
        res = minimise_block(self.source, self._full(np.array(anchor)), self.offset, i,
                             (inc_sup, min(inc_val, cap)), self.tau_mip / 2.0, self.evaluate, mu=mu,
                             max_nodes=int(self.settings.exact_block_nodes), check_time=self._check_time)
        self.stats.log.append({"block": i, "exact": res is not None, "seconds": time.perf_counter() - t0,
                               **({"nodes": res.nodes, "leaves": res.leaves} if res is not None else {})})
        if self.verbose:
            self._print(f"[engine] mistakes i={i} exact block: "
                        f"{'done' if res is not None else 'too large, MILP'} in {time.perf_counter() - t0:.2f}s"
                        + (f" ({res.nodes} nodes, {res.leaves} leaves)" if res is not None else ""))
        self._check_time()
        if res is None:
            return None
        val = float(self.evaluate([res.support])[0])
        if val > cap:
            # nothing below the cap: every support of the block is >= cap - tau_mip / 2
            return Certificate(res.support, val, res.lower_bound, self.tau_mip, 0, capped=True)
        return Certificate(res.support, val, min(res.lower_bound, val), self.tau_mip, 0)

    def _dual_block(self, anchor, i, incumbent, cap=math.inf):
        """Block i by the dual branch and bound (hinge loss), or None.

        One search at threshold t = min(incumbent, cap) - tau_mip: every support of the block
        is either a hit (solved, certified within tau_eval) or bounded by >= t.  So with v the
        smallest of the hits' values and the incumbent's, every support has R >= min(t,
        v - tau_eval) >= min(v, cap) - tau_mip (tau_eval <= tau_mip is checked), which is the
        certificate of the block's minimum below the cap, and of a capped block above it.
        None when the source cannot search or the search gives up.
        """
        if not self._dual_search_on():
            return None
        t0 = time.perf_counter()
        inc_sup, inc_val = incumbent
        threshold = min(inc_val, cap) - self.tau_mip
        found = self._dual_search(anchor, [i], threshold)
        self.stats.log.append({"dual_search": True, "block": i, "exact": found is not None,
                               "solves": found[2] if found is not None else self.settings.dual_search_solves,
                               "seconds": time.perf_counter() - t0})
        if self.verbose:
            self._print(f"[engine] mistakes i={i} dual branch and bound: "
                        f"{'done' if found is not None else 'too large, MILP'} in {time.perf_counter() - t0:.2f}s")
        if found is None:
            return None
        bound, hits, _ = found
        for key, v in hits:
            self.evaluated.setdefault(key, v)
        sup, val = min(hits + [(tuple(inc_sup), float(inc_val))], key=lambda kv: (kv[1], kv[0]))
        val = float(self.evaluate([sup])[0])
        lower = min([bound] + [v - self.tau_eval for _, v in hits])
        if lower < min(val, cap) - self.tau_mip:
            return None  # only when tau_eval > tau_mip: the MILP decides
        return Certificate(sup, val, min(lower, val), self.tau_mip, 0, capped=bool(val > cap))


    def _ball_multiplier(self, support):
        full = self._full(np.array(support))
        obj, local = self.source.local_objective(full[None, :])
        return full, float(obj.solve(local[0]).mu)

    def _search_blocks_below(self, anchor, first_i, reference, label, log_key):
        """Search blocks i = first_i..min(s, p - s) of ``anchor`` below reference() - tau_mip / 2.

        :func:`dpstats.bss.blocks.block_supports_below` scores exactly every support of the
        block that could lie below the threshold; the others have R >= it.  reference() is
        read afresh per block and only falls as scored supports enter ``evaluated``, so the
        smallest threshold used (returned) bounds every support of these blocks not scored.
        None when a block is too large for the search (the caller then runs the MILP).
        """
        from .blocks import block_supports_below

        full, mu = self._ball_multiplier(anchor)
        bound = math.inf
        last = min(self.s, self.p - self.s)
        n_blocks = last - first_i + 1
        progress = self._progress(f"{label} block search", n_blocks, "block",
                                  note="rough: the middle blocks are usually the slowest")
        # largest block first: a removal prefix it prunes is pruned in every smaller block
        # (blocks.block_supports_below, ``pruned_prefixes``; the thresholds never rise)
        pruned_prefixes, prefix_budgets = {}, {}
        for done, i in enumerate(range(last, first_i - 1, -1)):
            self._reached = f"{done} of {n_blocks} blocks of the exact search done"
            progress.update(done)
            self._check_time()
            t0 = time.perf_counter()
            thr = reference() - self.tau_mip / 2.0
            res = block_supports_below(self.source, full, self.offset, i, thr,
                                       self.evaluate, mu=mu, max_nodes=int(self.settings.exact_block_nodes),
                                       check_time=self._check_time, pruned_prefixes=pruned_prefixes,
                                       prefix_budgets=prefix_budgets)
            self.stats.log.append({log_key: i, "exact": res is not None, "seconds": time.perf_counter() - t0,
                                   **({"nodes": res.nodes, "leaves": res.leaves} if res is not None else {})})
            if self.verbose:
                self._print(f"[engine] {label} block i={i}: "
                            + (f"{res.leaves} supports below the threshold scored ({res.nodes} nodes)"
                               if res is not None else "too large, MILP") + f" in {time.perf_counter() - t0:.2f}s")
            if res is None:
                return None
            bound = min(bound, thr)
        progress.update(last - first_i + 1)
        return bound

    def _best_by_blocks(self, anchor):
        """Certify the best support by searching every mistakes block of ``anchor``, or None.

        Every support lies in exactly one block i = 1..min(s, p - s) of the anchor (the
        local optimum of :meth:`initialise`); each is searched below the best value known
        (:meth:`_search_blocks_below`).
        """
        if not self._block_search_on():
            return None
        bound = self._search_blocks_below(anchor, 1, lambda: min(self.evaluated.values()), "best", "best_block")
        if bound is None:
            return None
        sup, val = min(self.evaluated.items(), key=lambda kv: (kv[1], kv[0]))
        val = float(self.evaluate([sup])[0])
        return Certificate(sup, val, min(bound, val), self.tau_mip, 0)

    def _best_by_dual_bounds(self, anchor):
        """Certify the best support by certified lower bounds alone (the hinge loss), or None.

        The 1-swap ball of the anchor (the local optimum) is covered by the lower bounds of
        its expansion (evaluated neighbours: value minus their gap; screened ones: a dual
        bound), and every support with two or more mistakes by one dual per block
        (:meth:`_far_by_dual_bounds`) or, where that falls short, by the dual branch and
        bound (:meth:`_far_by_dual_search`; the supports it solves are candidates too); the
        anchor's own value is within tau_eval.  The certificate holds when all of them reach
        v_1 - tau_mip; otherwise the MILP decides.
        """
        if not (self._dual_bounds_on() or self._dual_search_on()):
            return None
        _, _, lower = self._expand_with_bounds(anchor, keep=1)
        sup, val = min(self.evaluated.items(), key=lambda kv: (kv[1], kv[0]))
        threshold = val - self.tau_mip
        ball = float(np.min(lower)) if lower.size else math.inf
        if ball < threshold:
            return None
        far = self._far_by_dual_bounds(anchor, threshold) if self.s >= 2 and self.p - self.s >= 2 else math.inf
        if far is None:
            # the branch and bound: supports it meets below the threshold are solved, and the
            # best of them and the incumbent is the best support (all others are bounded)
            found = self._far_by_dual_search(anchor, threshold, set())
            if found is None:
                return None
            far, hits = found
            for key, v in hits:
                self.evaluated.setdefault(key, v)
            if hits:
                far = min([far] + [v - self.tau_eval for _, v in hits])
                sup, val = min(self.evaluated.items(), key=lambda kv: (kv[1], kv[0]))
        lower = min(ball, far, val - self.tau_eval)
        if lower < val - self.tau_mip:
            return None
        return Certificate(sup, val, lower, self.tau_mip, 0)

    def _far_by_dual_bounds(self, anchor, threshold):
        """Bound every support with >= 2 mistakes from ``anchor`` by one dual per block, or None.

        For sources with ``block_lower_bounds`` (the hinge loss): for each D (an i-subset of
        the anchor, i >= 2) the certified dual at T = anchor minus D bounds R over the whole
        block T + B (:meth:`HingeSource.block_lower_bounds`), 2^s - s - 1 solves in all.
        Returns the smallest bound when it reaches ``threshold``, else None (the caller
        then runs the MILP).
        """
        if not self._dual_bounds_on() or self.s < 2 or self.p - self.s < 2:
            return None
        from itertools import combinations

        t0 = time.perf_counter()
        full = self._full(np.array(anchor))
        forced, movable, outside = self._anchor_columns(anchor)
        # duals already at hand from the anchor's expansion: its own and its drop-one supports'
        hints = [full] + [np.delete(full, P) for P in range(self.offset, full.size)]
        bound = math.inf
        memo = self._dual_block_bounds
        for i in range(2, min(self.s, self.p - self.s) + 1):
            self._check_time()
            bases = [np.concatenate([forced, np.delete(movable, D)]) for D in combinations(range(movable.size), i)]
            # the bounds of an earlier call at this anchor (best, then top-R) are still certified
            known = memo.get((tuple(anchor), i))
            if known is not None and np.min(known) >= threshold:
                block = known
            else:
                block = self.source.block_lower_bounds(bases, outside, i, threshold, hints, known=known)
                memo[(tuple(anchor), i)] = block
            bound = min(bound, float(np.min(block)))
            if bound < threshold:
                break
        ok = bound >= threshold
        self.stats.log.append({"dual_blocks": True, "exact": ok, "seconds": time.perf_counter() - t0})
        if self.verbose:
            self._print(f"[engine] supports with >= 2 mistakes: dual block bound {bound:.6f} "
                        f"{'>=' if ok else '<'} {threshold:.6f} in {time.perf_counter() - t0:.2f}s")
        return bound if ok else None

    def _far_by_dual_search(self, anchor, threshold, skip):
        """(bound, hits) over every support with >= 2 mistakes from ``anchor``, or None.

        For sources with ``search_blocks`` (the hinge loss): a branch and bound with
        certified dual bounds over the blocks (anchor minus D) + B, |D| = |B| = i >= 2
        (:meth:`_dual_search`).  ``hits``: supports outside ``skip`` whose certified lower
        bound is below ``threshold``, with their values; ``bound``: a certified lower bound on
        R over all the others outside ``skip``.  None when the search needs more than
        :attr:`EngineSettings.dual_search_solves` solves (the MILP then decides).
        """
        if not self._dual_search_on() or self.s < 2 or self.p - self.s < 2:
            return None
        t0 = time.perf_counter()
        found = self._dual_search(anchor, range(2, min(self.s, self.p - self.s) + 1), threshold, skip)
        done = found is not None
        bound, hits, solves = found if done else (math.inf, [], self.settings.dual_search_solves)
        self.stats.log.append({"dual_search": True, "solves": solves, "hits": len(hits), "exact": done and not hits,
                               "seconds": time.perf_counter() - t0})
        if self.verbose:
            what = (f"{len(hits)} below the threshold" if hits else f"bound {bound:.6f} >= {threshold:.6f}") if done \
                else f"gave up after {solves} solves"
            self._print(f"[engine] supports with >= 2 mistakes: dual branch and bound, {what}, "
                        f"{solves} solves in {time.perf_counter() - t0:.2f}s")
        return (bound, hits) if done else None

    def _dual_search(self, anchor, sizes, threshold, skip=()):
        """:meth:`HingeSource.search_blocks` over the blocks (anchor minus D) + B, |D| = |B| = i
        for each i in ``sizes``, within :attr:`EngineSettings.dual_search_solves` solves in all.

        Returns (bound, hits as (candidate support, value), solves), or None when the budget
        runs out.  ``skip``: candidate supports left out (neither hits nor bounded).
        """
        from itertools import combinations

        off = self.offset
        forced, movable, outside = self._anchor_columns(anchor)
        skip_full = {tuple(range(off)) + tuple(int(j) + off for j in k) for k in skip}
        bound, hits, solves = math.inf, [], 0
        for i in sizes:
            bases = [np.concatenate([forced, np.delete(movable, D)]) for D in combinations(range(movable.size), i)]
            found = self.source.search_blocks(bases, outside, i, threshold, skip=skip_full,
                                              node_limit=self.settings.dual_search_solves - solves, check=self._check_time)
            if found is None:
                return None
            b, h, used = found
            solves += used
            bound = min(bound, b)
            hits += [(tuple(j - off for j in key[off:]), v) for key, v in h]
        return bound, hits, solves

    def _top_far_by_blocks(self, s1, R):
        """Certify the top-R list against supports with >= 2 mistakes from S_1, without MILP.

        Blocks i >= 2 of S_1 are searched below v_R, taken from the list as it stands
        (:meth:`_search_blocks_below`); leaves below v_R enter the list, which only lowers
        v_R, so blocks done earlier stay covered.  Returns the smallest threshold used, or
        None when a block is too large for the search (the caller then runs the MILP).
        """
        if not self._block_search_on() or self.s < 2 or self.p - self.s < 2 or self._far_blocks_too_large:
            return None
        bound = self._search_blocks_below(s1, 2, lambda: heapq.nsmallest(R, self.evaluated.values())[-1],
                                          f"top-{R}", "top_block")
        if bound is None:
            self._far_blocks_too_large = True  # the MILP takes over; do not search again
        return bound

    def _block_cuts(self, anchor, i, max_subsets=60):
        """Cuts at one support per removed i-subset A of the anchor (block i structure).

        Every support of block i is S^(0) minus some A plus some B.  A cut at S^(0) sees
        the cost of removing j only through lam b_j^2, far below the true loss of the
        fit; a cut at a support lacking A sees that loss exactly.  So the pool gets one
        cut per A (B = the i outside columns with the largest |X_j'a| at S^(0), i.e. the
        largest gradients), C(s, i) cuts in all (at most ``max_subsets``).
        """
        from itertools import combinations, islice

        anchor = tuple(sorted(anchor))
        full = self._full(np.array(anchor))
        obj, local = self.source.local_objective(full[None, :])
        b = obj.solve(local[0]).coef
        score = np.abs(self.source.c - self.source.cross(full) @ b)[self.offset:]
        score[list(anchor)] = -np.inf
        add = [int(j) for j in np.argsort(-score, kind="stable")[:i]]
        for A in islice(combinations(anchor, i), max_subsets):
            sup = tuple(sorted(set(anchor) - set(A) | set(add)))
            self._add_cut(sup)

    def certificate_route(self) -> str:
        """How the certificates so far were obtained (for the curator summary).

        Curator-only: which route certified a query and how many MILP solves it took are
        deterministic functions of the data (docs/privacy.md), so this text must never
        reach a ledger entry or ``release()``.
        """
        searches = sum(1 for e in self.stats.log if e.get("exact") and "dual_blocks" not in e
                       and "dual_search" not in e)
        duals = sum(1 for e in self.stats.log if e.get("exact") and "dual_blocks" in e)
        branched = [e["solves"] for e in self.stats.log if e.get("exact") and "dual_search" in e]
        parts = []
        if searches:
            parts.append(f"exact Schur-complement block search ({searches} blocks)")
        if duals:
            parts.append(f"dual bounds on every block ({duals} {'query' if duals == 1 else 'queries'})")
        if branched:
            parts.append(f"a dual branch and bound over the blocks ({sum(branched)} hinge solves)")
        if self.stats.milp_solves:
            parts.append(f"outer approximation on CBC ({self.stats.milp_solves} MILP solves)")
        return "certified by " + (" and ".join(parts) if parts else "exact evaluation of every candidate")

    def _finish(self):
        self.stats.total_seconds = time.perf_counter() - self._start
