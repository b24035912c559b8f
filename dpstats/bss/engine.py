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
(:meth:`dpstats.bss.cut_pool.CutPool.use_curvature`); and the cap, from the box |b_j| <= r the
ball implies, which keeps the slopes finite as lam -> 0 (without it the LP bound fell to
about -2 x 10^5 below an optimum of 208 at lam = 0.006: benchmarks/README.md).  Every cut
is a global under-estimator, so one pool serves every query on the same data.

The engine is split along its concerns (:mod:`dpstats.bss.engine_problem` names what they
share): the candidates and their exact values (:mod:`dpstats.bss.candidates`), the pool of
cuts (:mod:`dpstats.bss.cut_pool`), the MILP master (:mod:`dpstats.bss.milp_master`: the
re-solve loop over the checked CBC seam, its shifted objective and its fallbacks) and the
certificate routes (:mod:`dpstats.bss.certificate_routes`); this module holds the settings
and the three queries, each asking its routes in order.

Design choices, measured with benchmarks/bench_top_r.py (the numbers are in
benchmarks/README.md):

* **Strong initial pool.**  IHT start (Prastakos, Behdin and Mazumder 2025, Appendix B.2),
  then 1-swap local search; cuts
  at every support visited and at the best 1-swap neighbours of the local optimum.
* **Many cuts per round.**  Cuts at every distinct solution in CBC's solution pool, plus
  at the best few 1-swap neighbours of each new solution.
* **Exact block search first (squared loss).**  The best support (anchor: the local
  optimum), the top-R list (threshold v_R - tau_mip / 2) and every S^(i) are certified by
  the Schur-complement block search when it stays small, and by the MILP otherwise.  A
  top-R query asked first searches
  around the local optimum directly: any anchor's blocks cover every support, so the list's
  first entry is the certified best and the best's own pass (whose threshold, the best
  value, lies below v_R, so its blocks are searched again anyway) is skipped.  With small ridges it certifies
  in a fraction of a second what the MILP alone takes minutes for or does not finish
  (benchmarks/README.md): the MILP's LP bound is what small ridges make weak; the block
  bound does not depend on it.
* **Whole blocks bounded by the cut pool (squared loss).**  Before the block search takes
  block i of an anchor S_1 (the supports with i mistakes), the pool's cuts bound the whole
  block: a support there keeps s - i columns of S_1 and takes i others, so each cut's minimum
  over the block is its constant plus its s - i smallest slopes on S_1 and its i smallest
  elsewhere (:meth:`OuterApproximationEngine.block_lower_bounds`, with the data's curvature in
  the slopes).  A block whose bound reaches the threshold is not searched.  The bound grows with
  i (dropping many terms with large coefficients costs at least d_j b_j^2 each), which is where
  the Schur-complement search prunes late; it is weak where the curvature d is small against
  the Gram matrix's diagonal (correlated columns, p near n).  The model-size stage of
  ``s="auto"`` asks the same pool for bounds on the sizes it did not certify
  (:meth:`OuterApproximationEngine.lower_bounds`).
* **Removals bounded by the model with every column (squared loss).**  Inside each block the
  search first bounds every removal prefix, the whole block first, by the ridge fit on all
  columns with the removed anchor columns set to zero (:mod:`dpstats.bss.full_model_bound`):
  with more rows than columns, dropping many strong terms costs that fit more than any other
  columns can win back, which decides the blocks far from the anchor at once, correlated
  columns included (the curvature the cuts need is not).
* **Dual branch and bound (hinge loss).**  Outside the 1-swap ball of S_1 the top-R query
  bounds the supports by weak duality, branching on the columns that keep a block's bound
  low (:meth:`dpstats.bss.hinge_source.HingeSource.search_blocks`): supports it meets below
  v_R join the candidates, and a search that finds none certifies the list.  On
  simulate(1000, 250, 7), rho 0.7, R = 100 the MILP's root bound sat about 20 below the
  optimum (some 300 nodes per solve), so CBC met the near-optimal supports one solve at a
  time (162 solves, 110 s); the search needed about 3000 hinge solves (12 s in all).
  It gives way to the MILP after :attr:`EngineSettings.dual_search_solves` solves.

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

import contextlib
import heapq
import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..deadline import Deadline
from .._linalg import single_threaded_blas
from ..errors import InvalidArgumentError, SolverError
from .blocks import BlockSearchSettings
from .candidates import Candidates, TopQuery
from .certificate_routes import BlockSearchRoute, DualRoute, MilpRoute
from .checked_cbc import CheckedCbc
from .cut_pool import CutPool
from .engine_problem import Certificate, EngineClock, EngineStats, Problem, TopCertificate  # noqa: F401 (re-exported)
from .smaller_sizes import SmallerSizes
from .gram import GramSource, MatrixFreeSource
from .milp_master import FALLBACK_MAX_SUPPORTS, MilpMaster  # noqa: F401 (re-exported)
from .objective import SufficientStats
from .source import check_source


@dataclass
class EngineSettings:
    """The engine's declared switches: public, fixed before the data, the same for every query.

    Which certificate routes the engine tries is decided by these and by what the source can
    do (:class:`~dpstats.bss.gram.SourceCapabilities`); whichever route certifies, the
    certified quantities are the same (module docstring), so these change speed, never the
    mechanism's output distribution.

    exact_blocks, block_search
        The Schur-complement block search (sources with ``block_search``), and its budgets
        and switches (:class:`~dpstats.bss.blocks.BlockSearchSettings`: among them the node
        budget per block before the MILP takes over; None: the block search's defaults).
    block_cut_bounds, block_cut_bounds_after_nodes, block_cut_bounds_min_edge
        Before each block of the block search, the cut pool's bound over the block
        (:meth:`OuterApproximationEngine.block_lower_bounds`): a block whose bound reaches the
        threshold is certified without a search.  Asked once a query's search has spent this
        many nodes: the bounds need the data's curvature (one smallest eigenvalue, 0.3 s at
        p = 1000), which searches that prune at once do not repay; and only where the design's
        shape leaves room for curvature: (1 - sqrt(p / n))^2, the lower edge of the
        Marchenko-Pastur law (the smallest eigenvalue of an n x p Gram matrix of independent
        standardised columns, over n), at least ``block_cut_bounds_min_edge``.  At p = n / 2 the
        edge is 0.086: the curvature is then too weak for a cut's bound to reach a threshold
        and its eigenvalue was the list's largest extra cost (benchmarks/README.md,
        "bench_block_cut_bounds.py").
    size_bounds
        :meth:`OuterApproximationEngine.size_bounds`: the model-size stage's bounds on smaller
        sizes from the certified best support's columns (:mod:`dpstats.bss.size_bounds`).
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
    blas_one_thread
        Run the queries with BLAS and LAPACK on one thread (:func:`dpstats._linalg.single_threaded_blas`):
        their work is many small products and factorisations, which OpenBLAS's threads slow
        down, badly on a loaded machine (benchmarks/bench_blas_threads.py); False keeps BLAS's own
        thread count.
    milp_solver
        The class of the checked MILP solver (:class:`CheckedCbc` or a subclass, built as
        ``milp_solver(s, cbc_settings=..., threads=..., gap_abs=...)``).
    """

    exact_blocks: bool = True
    block_search: BlockSearchSettings | None = None
    block_cut_bounds: bool = True
    block_cut_bounds_after_nodes: int = 100
    block_cut_bounds_min_edge: float = 0.15
    size_bounds: bool = True
    dual_bounds: bool = True
    dual_search: bool = True
    dual_search_solves: int = 4000
    init_neighbour_cuts: int | None = None
    round_neighbour_cuts: int = 2
    list_cuts: bool = True
    threads: int = 1
    cbc_settings: dict = field(default_factory=dict)
    milp_solver: type = CheckedCbc
    blas_one_thread: bool = True

    @classmethod
    def names(cls):
        return tuple(f.name for f in fields(cls))


#: The settings of engines built without explicit ones (the methods' engines); a test or a
#: measurement may swap it for another declared EngineSettings.
DEFAULT_SETTINGS = EngineSettings()


class OuterApproximationEngine:
    """Certified best / top-R / mistakes queries for one data set and subset size.

    The queries are here; the work is in the engine's parts, built once per engine and
    shared by every query on the same data: ``candidates`` (exact values and expansions,
    :mod:`dpstats.bss.candidates`), ``pool`` (the cuts, :mod:`dpstats.bss.cut_pool`),
    ``master`` (the MILP, :mod:`dpstats.bss.milp_master`) and the certificate routes
    ``blocks``, ``duals`` and ``milp_route`` (:mod:`dpstats.bss.certificate_routes`).

    Parameters
    ----------
    source : GramSource, MatrixFreeSource or HingeSource
        The data and the objective: its ridge lam > 0 (the cuts need it) and radius r were
        fixed when it was built (``source.ridge``, ``source.radius``); what it can do is
        declared in ``source.capabilities``, and :mod:`dpstats.bss.source` lists (as typed
        protocols) what each capability needs; a source is checked against its declaration here.  Use :meth:`from_stats` (precomputed sufficient
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

    #: What makes a certificate cheaper (time-limit messages).
    ADVICE = EngineClock.ADVICE

    def __init__(self, source, s, tolerance, *, settings=None, time_limit=None, deadline=None,
                 verbose=False, printer=print, label="engine", **overrides):
        unknown = set(overrides) - set(EngineSettings.names())
        if unknown:
            raise TypeError(f"unknown engine settings: {sorted(unknown)}; see EngineSettings.")
        settings = replace(settings if settings is not None else DEFAULT_SETTINGS, **overrides)
        check_source(source)  # what its declared capabilities need (dpstats.bss.source)
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
        self.settings = settings
        self.problem = Problem(source, self.s, self.offset, self.p, self.tau_mip, self.tau_eval)
        self.clock = EngineClock(Deadline.of(deadline if deadline is not None else time_limit), label, verbose,
                                 printer)
        self.stats = EngineStats()
        self.milp = settings.milp_solver(self.s, cbc_settings=self.cbc_settings, threads=settings.threads,
                                         gap_abs=self.tau_mip / 4.0)
        values: dict = {}  # candidate tuple -> exact R, shared by the candidates and the cut pool
        self.pool = CutPool(self.problem, values, self.stats)
        self.candidates = Candidates(self.problem, values, self.pool, self.stats, self.clock,
                                     self.init_neighbour_cuts)
        self.master = MilpMaster(self.problem, self.candidates, self.pool, self.milp, self.stats, self.clock,
                                 settings.round_neighbour_cuts)
        self.blocks = BlockSearchRoute(self)
        self.duals = DualRoute(self)
        self.milp_route = MilpRoute(self)
        self._best = None
        self._tops = {}  # R -> TopCertificate (a second query for the same R reuses it)
        self.smaller_sizes = SmallerSizes(self)  # bounds and lists of smaller sizes (size_bounds)

    # ------------------------------------------------------------------ construction
    @property
    def ridge(self) -> float:
        """lam of the objective (the source's)."""
        return float(self.source.ridge)

    @property
    def radius(self) -> float:
        """r of the objective's ball (the source's)."""
        return float(self.source.radius)

    @property
    def deadline(self):
        return self.clock.deadline

    @property
    def evaluated(self) -> dict:
        """The exact values known so far (candidate tuple -> R)."""
        return self.candidates.values

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

    def _blas(self):
        """The BLAS thread policy of the queries (:attr:`EngineSettings.blas_one_thread`)."""
        return single_threaded_blas() if self.settings.blas_one_thread else contextlib.nullcontext()

    # ------------------------------------------------------------------ the parts' services
    def evaluate(self, supports) -> np.ndarray:
        """Exact R for candidate supports (2-D array), memoised."""
        return self.candidates.evaluate(supports)

    def cut(self, support):
        """(const, coef): the cut at a candidate support, eta >= const + coef . z."""
        return self.pool.cut(support)

    def initialise(self):
        """IHT start, 1-swap local search, and the initial cut pool."""
        self.candidates.initialise()

    def _stage(self, stage, reached=""):
        self.clock.stage, self.clock.reached = stage, reached

    # ------------------------------------------------------------------ queries
    def best(self) -> Certificate:
        """The certified best support S_1.

        Routes, first that succeeds: the exact block search (squared loss,
        :meth:`BlockSearchRoute.best`), certified dual bounds over the ball and every block
        (hinge loss, :meth:`DualRoute.best`), the outer-approximation MILP.
        """
        if self._best is not None:
            return self._best
        with self._blas():
            return self._certify_best()

    def _certify_best(self) -> Certificate:
        self._stage("certifying the best support")
        self.initialise()
        self.candidates.keep = 1
        anchor = self.candidates.best_local[0]
        cert = self.blocks.best(anchor)
        if cert is None:
            cert = self.duals.best(anchor)
        if cert is None:
            cert = self.milp_route.best()
        self._best = cert
        self._finish()
        return self._best

    def top(self, R) -> TopCertificate:
        """The certified R best supports (guess and certify).

        S_1 is the certified best support, or the local optimum when the block search
        certifies the list around it (:meth:`_top`).
        The whole 1-swap neighbourhood of S_1 is evaluated exactly (s (p - s) supports,
        vectorised), so only the supports with at least two mistakes from S_1 that are not
        in the list remain to be bounded: by the exact block search
        (:meth:`BlockSearchRoute.far`) for the squared loss, else (or when that search is
        too large) by the MILP with constraint sum_{j in S_1} z_j <= s - 2.  Near-optimal
        supports are mostly 1-swaps of S_1 (Prastakos, Behdin and Mazumder 2025, Appendix
        B), so that
        region is usually far above v_R and one or two MILP solves certify the list.
        For the hinge loss the ball is screened by certified lower bounds instead of solved:
        the neighbours that can still enter the list (lower bound below the R-th smallest of
        the known values and the dual ascent's certified upper bounds) are solved in one
        batch, and any whose bound stays below v_R - tau_mip afterwards is solved too; the
        region beyond the ball goes to one dual per block, then to the dual branch and bound
        (:meth:`DualRoute.far_search`), and only then to the MILP.
        """
        R = int(R)
        if R in self._tops:
            return self._tops[R]
        with self._blas():
            cert = self._top(R)
        self._tops[R] = cert
        return cert

    def _top(self, R) -> TopCertificate:
        """The list around the local optimum when the block search certifies it (the list's
        first entry is then the certified best: no separate pass for it), else around the
        certified best support."""
        if self._best is None and self.blocks.on():
            self._stage(f"certifying the top-{R} list")
            self.initialise()
            cert = self._top_around(R, self.candidates.best_local[0], routes=(self.blocks.far,))
            if cert is not None:
                self._best = self._best_of_list(cert)
                return cert
        best = self.best()
        routes = (self.blocks.far, self.duals.far_by_bounds, self.duals.far_by_search, self.milp_route.far)
        return self._top_around(R, best.support, routes=routes)

    def _top_around(self, R, anchor, routes) -> TopCertificate | None:
        """Fill the list, ask the far-region ``routes`` in order, build one certificate; None
        when every route declines.

        ``anchor`` (S_1) need not be the best support: its blocks i = 1..s partition every
        support, so the certificate holds for any anchor; the best makes the far region
        easiest for the MILP, which is why only the block search is asked around an anchor
        that is not yet certified.
        """
        self._stage(f"certifying the top-{R} list")
        cand = self.candidates
        cand.keep = R
        q = TopQuery.around(cand, anchor, R)
        total_solves = 0
        while True:
            cand.fill(q)
            q.rank(cand.values)
            if cand.screen_pending(q):
                continue  # v_R only decreases, so screened neighbours stay screened
            far = None
            for route in routes:
                far = route(q)
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

    def _top_certificate(self, q, far, solves):
        """The one top-R certificate: every support with two or more mistakes from S_1 is
        evaluated or has R >= far.bound >= v_R - tau_mip; the ball is evaluated or screened.

        The bound outside the list is the smallest of far.bound and the lower bounds of the
        evaluated supports outside it (values, less tau_eval where they are upper bounds, and
        the screened neighbours' bounds); where far.bound covers the evaluated supports with
        two or more mistakes as well (the MILP's bound is over all of them), only the ball's
        enter.
        """
        values = self.candidates.values
        L = heapq.nsmallest(q.R, values.items(), key=lambda kv: (kv[1], kv[0]))
        members = {k for k, _ in L}
        sups = [k for k, _ in L]
        vals_L = self.evaluate(np.array(sups))  # exact, canonical evaluation
        rest = [v for k, v in values.items() if k not in members
                and not (far.covers_evaluated and (k == q.s1 or q.mistakes(k) >= 2))]
        if self.capabilities.lower_bounds:
            # values are upper bounds within tau_eval; screened ball neighbours have bounds
            rest = [v - self.tau_eval for v in rest] + [float(x) for x in q.lower[~np.isfinite(q.vals)]]
        return TopCertificate(sups, vals_L, min([far.bound] + rest), self.tau_mip, solves)

    def lower_bounds(self, sizes) -> dict:
        """{k: a lower bound on the certified best value over supports of k candidates} for k in
        ``sizes``: what the pool's cuts say about other sizes of the same objective (the
        model-size stage's sizes not certified, :func:`dpstats.bss.model_size.value_bounds`),
        with the data's curvature where the source offers it (:meth:`CutPool.use_curvature`).
        Each bound (:meth:`CutPool.lower_bounds`) is widened by :meth:`_widened`."""
        with self._blas():
            self.pool.use_curvature()
        return self._widened(self.pool.lower_bounds(sizes))

    def size_bounds(self, sizes, need=None) -> dict:
        """{k: (lower, upper)} on the certified best value over supports of k candidates, for the
        smaller sizes k in ``sizes``, from this size's certified best support's columns
        (:mod:`dpstats.bss.size_bounds`: its k-subsets scored exactly, what outside columns can add
        bounded; setting ``size_bounds``); {} before the best support is certified, without the
        Gram matrix or above the block search's ``floor_max_columns``.  The lower ends are widened
        by :meth:`_widened`; the upper ends (the best subset's value) are raised by the evaluation
        error (a certified value lies at most its tolerance above the size's best: the caller adds
        the tolerance).  ``need`` (k -> value): the caller only needs to know whether the widened
        lower end reaches that value (:meth:`AnchorBounds.bounds`; faster, the lower end then at
        most about that value)."""
        return self.smaller_sizes.bounds(sizes, need)

    def block_cut_bounds_apply(self) -> bool:
        """Whether the block search asks the cut pool for block bounds (settings ``block_cut_bounds``
        and ``block_cut_bounds_min_edge``: the design's shape, rows against candidate columns)."""
        n, p = float(self.source.n), float(self.p)
        return bool(self.settings.block_cut_bounds and n > p
                    and (1.0 - math.sqrt(p / n)) ** 2 >= self.settings.block_cut_bounds_min_edge)

    def block_lower_bounds(self, anchor, blocks) -> dict:
        """{i: a lower bound on R over the supports with exactly i mistakes from ``anchor``} for i in
        ``blocks`` (:meth:`CutPool.block_lower_bounds`), from the pool with a cut at the anchor and the
        data's curvature where the source offers it, widened as :meth:`lower_bounds`; the block
        search skips a block whose bound reaches its threshold (:class:`~dpstats.bss.
        certificate_routes.BlockSearchRoute`)."""
        with self._blas():
            self.pool.add(anchor)
            self.pool.use_curvature()
        return self._widened(self.pool.block_lower_bounds(anchor, blocks))

    def smaller_size_list(self, k, R, tolerance) -> TopCertificate | None:
        """The certified top-R list of the smaller size k from this engine's certified best support A,
        within ``tolerance`` (tau of size k: tau_mip = tau - 2 tau_eval), or None where it does not follow.

        The k-subsets of A are scored exactly (:meth:`AnchorBounds.top_list`; where they are fewer than R or
        the bound below falls short, with every support holding one column outside A as well); the ones
        outside the R best lie at or above the R-th value, and every support with more columns outside A
        is bounded from below as the model-size stage's bounds are (:meth:`AnchorBounds.outside_bound`).  When that bound,
        widened by the evaluation error, reaches v_R - tau_mip, the list meets the certificate of a top-R
        query (module docstring, "Solver slack and epsilon"): every support outside it has R >= v_R -
        tau_mip and its values are exact up to tau_eval.  Where the signal is strong the best supports of
        a size below the true one leave out true terms and keep no other column, so this replaces a
        certificate of an undersized problem (the engine's hardest) by a few thousand evaluations."""
        return self.smaller_sizes.top_list(k, R, tolerance)

    def _widened(self, bounds) -> dict:
        """Cut bounds lowered by tau_eval (a certified value may lie that far below its support's R)
        and by 1e-9 of the pool's magnitudes against rounding."""
        magnitude = max((abs(c) for c in self.pool.const), default=0.0)
        return {k: bound - self.tau_eval - 1e-9 * (1.0 + abs(bound) + magnitude) for k, bound in bounds.items()}

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
        with self._blas():
            return self._certify_blocks(tuple(sorted(anchor)), cap_width)

    def _certify_blocks(self, anchor, cap_width) -> list:
        self.initialise()
        cap = float(self.evaluate([anchor])[0]) + float(cap_width) if math.isfinite(cap_width) else math.inf
        self.candidates.keep = max(self.candidates.keep, 1)
        in0 = np.zeros(self.p, dtype=bool)
        in0[list(anchor)] = True
        out = []
        previous = anchor
        n_blocks = min(self.s, self.p - self.s)
        progress = self.clock.progress("mistakes blocks", n_blocks, "block",
                                       note="rough: later blocks are usually slower")
        for i in range(1, n_blocks + 1):
            self._stage(f"certifying mistakes block {i} of {n_blocks}", f"{i - 1} of {n_blocks} blocks certified")
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
        block routes in order (block search, dual search, MILP); block 1 of the anchor needs none."""
        def feasible(a, i=i):
            a = np.asarray(a, dtype=np.int64)
            return (~in0[a]).sum(axis=1) == i

        cand = self.candidates
        known = [(k, v) for k, v in cand.values.items() if (~in0[list(k)]).sum() == i]
        nb, vals = cand.expand(previous, keep=0)
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
        for route in (self.blocks.block, self.duals.block, self.milp_route.block):
            cert = route(anchor, i, inc, cap, feasible)
            if cert is not None:
                return cert

    @staticmethod
    def _block_route(cert):
        return f"last by {cert.milp_solves} MILP solves" if cert.milp_solves else "last without MILP"

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
        self.stats.total_seconds = self.clock.elapsed()
