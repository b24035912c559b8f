"""The MILP master of the outer approximation: the solve loop over the checked CBC seam.

One query minimises R over a feasible set of supports {z binary, sum z = s, the query's
linear constraints} by re-solving a MILP in (z, eta) whose constraints are the pool's cuts
(:mod:`dpstats.bss.cut_pool`): after each solve the solver's solutions are evaluated
exactly, cuts are added there and at their best neighbours, and the MILP is solved again,
until its proven bound reaches the query's target within tau_mip.

* **Re-solve, not lazy constraints.**  python-mip's lazy-constraint path on CBC has open
  reports of ignored constraints and wrong "optimal" answers (python-mip issues 175, 274,
  331), and a certificate is only as good as the bound behind it.
* **Shifted objective.**  eta is stored minus a constant (the first incumbent's value), so
  CBC's absolute gap tolerance acts on numbers of the size of the gap, not of y'y.
* **Solver bounds are never trusted blindly**: every incumbent is re-evaluated exactly, a
  quarter of tau_mip is reserved for the solver's numerical error, and a bound above an
  exactly evaluated feasible value, or no progress, falls back to scoring every feasible
  support (:meth:`MilpMaster.enumerated_minimum`) or raises
  :class:`~dpstats.errors.SolverError`.  Which route certified is curator-only; the
  certified quantities are the same, so the mechanism's output distribution does not depend
  on it.
"""
from __future__ import annotations

import itertools
import math

import mip
import numpy as np

from ..errors import SolverError
from .checked_cbc import UnreliableSolve

#: The engine scores every feasible support itself when CBC's output contradicts its cuts,
#: up to this many supports (above it, a SolverError as before).
FALLBACK_MAX_SUPPORTS = 200_000


class MilpMaster:
    """Outer approximation over one feasible set at a time, on the shared cut pool.

    ``milp`` is the checked solver (:class:`~dpstats.bss.checked_cbc.CheckedCbc` or the
    settings' subclass); ``round_neighbour_cuts`` cuts are added at the best feasible
    neighbours of each new solution.
    """

    def __init__(self, problem, candidates, pool, milp, stats, clock, round_neighbour_cuts):
        self.problem = problem
        self.candidates = candidates
        self.pool = pool
        self.milp = milp
        self.stats = stats
        self.clock = clock
        self.round_neighbour_cuts = int(round_neighbour_cuts)

    def build(self, constraints):
        p, s = self.problem.p, self.problem.s
        m = mip.Model(sense=mip.MINIMIZE, solver_name=mip.CBC)
        z = [m.add_var(var_type=mip.BINARY) for _ in range(p)]
        eta = m.add_var(lb=-mip.INF)
        m.objective = mip.minimize(eta)
        m += mip.xsum(z) == s
        for kind, members, rhs in constraints:
            expr = mip.xsum(z[j] for j in members)
            if kind == "<=":
                m += expr <= rhs
            else:
                m += expr == rhs
        self.milp.configure(m)
        self.stats.model_builds += 1
        return m, z, eta

    def add_cuts_to(self, m, z, eta, first):
        vars_ = z + [eta]
        base = self.candidates.base
        for k in range(first, len(self.pool)):
            coef = self.pool.coef[k]
            m.add_constr(mip.LinExpr(variables=vars_, coeffs=list(-coef) + [1.0],
                                     const=-(self.pool.const[k] - base), sense=">"))
        return len(self.pool)

    def solve(self, m, z, start, label):
        """(lower bound, distinct solutions) of one MILP solve by the settings' checked solver
        (:class:`CheckedCbc`); the bound is shifted back by the stored constant."""
        self.clock.check()
        answer = self.milp.solve(m, z, start=start, max_seconds=self.clock.remaining(), label=label)
        self.stats.milp_seconds += answer.seconds
        self.stats.milp_solves += answer.attempts
        self.stats.invalid_solutions += answer.invalid
        if answer.status == "infeasible":
            # Never a certificate by itself: every query passes a feasible incumbent, and
            # minimise treats a bound above it as a solver failure.
            return math.inf, []
        if answer.status != "optimal":
            self.clock.check()
            # Not the time limit: an answer the engine cannot use, which falls back like
            # solutions outside the binaries' bounds (a failure here would depend on the data).
            raise UnreliableSolve(f"{label}: CBC status {answer.status}")
        return answer.bound + self.candidates.base, answer.solutions

    def minimise(self, label, constraints, feasible, incumbent, target=None, early_exit=None, cap=math.inf):
        """Outer approximation over one feasible set.

        ``feasible(array of supports) -> bool mask``; ``incumbent`` = (support, value) with
        the support feasible; ``target`` (default: the smaller of the incumbent's value and
        ``cap``) is what the lower bound must reach within tau_mip.  Returns (certified, support, value, lb,
        solves); certified is False only when ``early_exit(value)`` fired.
        """
        tau_mip, tau_eval = self.problem.tau_mip, self.problem.tau_eval
        self.pool.use_curvature()
        self.pool.add_deferred()
        m, z, eta = self.build(constraints)
        n_in = self.add_cuts_to(m, z, eta, 0)
        inc, inc_val = incumbent
        solves = 0
        reserve = tau_mip / 4.0
        # Supports cut off by no-good constraints (see exclude_repeated) and the smallest
        # certified lower bound of their values: the bound over the feasible set is the smaller
        # of the MILP's bound over the rest and this floor.
        excluded = {"supports": set(), "floor": math.inf}
        while True:
            n_in = self.add_cuts_to(m, z, eta, n_in)
            try:
                lb, sols = self.solve(m, z, inc, label)
            except UnreliableSolve:
                return self._fallback(feasible, early_exit, solves + 1, SolverError(
                    f"unreliable solver in {label}: CBC stopped with a status other than optimal, or "
                    "reported solutions outside the binaries' bounds with and without preprocessing; "
                    "nothing was released."), from_none=True)
            solves += 1
            self.clock.reached = f"{solves} MILP solves in {label}, not yet certified"
            lb = min(lb - reserve, excluded["floor"])
            thr = min(inc_val, cap) if target is None else target
            self.clock.say(f"[engine] {label} iter {solves:3d}  incumbent {inc_val:.6f}  bound {lb:.6f}  "
                           f"gap {inc_val - lb:.3g}  cuts {len(self.pool)}  "
                           f"elapsed {self.clock.elapsed():.2f}s")
            if lb > inc_val + reserve + tau_eval:
                # CBC claimed a bound above a feasible support's certified value (seen with
                # the CBC of cbcbox 2.927 on steep hinge cuts): its bound cannot be trusted.
                return self._fallback(feasible, early_exit, solves, SolverError(
                    f"inconsistent certificate in {label}: the solver's bound exceeds the exact "
                    "value of a feasible support (solver numerics); nothing was released."))
            if lb >= thr - tau_mip:
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
        """Every feasible support scored (:meth:`enumerated_minimum`) when CBC's answer cannot
        be used, or ``error`` raised when there are too many."""
        fallback = self.enumerated_minimum(feasible, early_exit)
        if fallback is not None:
            return (*fallback, solves)
        if from_none:
            raise error from None
        raise error

    def _absorb_solutions(self, sols, feasible, inc, inc_val):
        """Cuts at the MILP's solutions and their best feasible neighbours; a better feasible
        incumbent among them.  Returns (incumbent, value, whether a new cut was added)."""
        cand_ = self.candidates
        progress = False
        for sup in sols:
            new = sup not in self.pool
            nb, vals = cand_.expand(sup, keep=max(cand_.keep, 1))
            progress |= new
            cand = np.vstack([np.array(sup)[None, :], nb])
            cvals = np.concatenate([cand_.evaluate([sup]), vals])
            ok = feasible(cand)
            if np.any(ok):
                k = int(np.argmin(np.where(ok, cvals, np.inf)))
                if cvals[k] < inc_val:
                    inc, inc_val = tuple(int(j) for j in cand[k]), float(cvals[k])
                    cand_.values.setdefault(inc, inc_val)
            # cuts at the best few feasible neighbours as well
            if self.round_neighbour_cuts and vals.size:
                okn = feasible(nb)
                order = np.argsort(np.where(okn, vals, np.inf), kind="stable")[:self.round_neighbour_cuts]
                for k in order:
                    if okn[k]:
                        progress |= self.pool.add(tuple(int(j) for j in nb[k]))
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
            if sup not in self.pool or sup in excluded["supports"]:
                continue  # returned again despite its no-good: CBC cannot be trusted here
            floor = float(self.candidates.evaluate([sup])[0]) - self.problem.tau_eval
            if floor >= thr - self.problem.tau_mip:
                excluded["supports"].add(sup)
                m += mip.xsum(z[j] for j in sup) <= self.problem.s - 1
                excluded["floor"] = min(excluded["floor"], floor)
                cleared = True
        return cleared

    def enumerated_minimum(self, feasible, early_exit):
        """(certified, support, value, lower bound) by scoring every feasible support, or None
        when there are more than :data:`FALLBACK_MAX_SUPPORTS`.

        The fallback when CBC's answer is inconsistent with the cuts: each value is a
        certified upper bound within tau_eval, so min(value) - tau_eval bounds the feasible
        set's minimum from below.
        """
        p, s, tau_eval = self.problem.p, self.problem.s, self.problem.tau_eval
        if math.comb(p, s) > FALLBACK_MAX_SUPPORTS:
            return None
        supports = np.array(list(itertools.combinations(range(p), s)), dtype=np.int64).reshape(-1, s)
        supports = supports[feasible(supports)]
        if supports.shape[0] == 0:
            return True, None, math.inf, math.inf
        values = np.concatenate([np.asarray(self.candidates.evaluate(supports[i:i + 4096]), dtype=np.float64)
                                 for i in range(0, supports.shape[0], 4096)])
        k = int(np.argmin(values))
        best, value = tuple(int(j) for j in supports[k]), float(values[k])
        self.candidates.values.setdefault(best, value)
        self.stats.log.append({"enumerated_fallback": int(supports.shape[0]), "exact": False})
        if early_exit is not None and early_exit(value):
            return False, best, value, float(values.min()) - tau_eval
        return True, best, value, float(values.min()) - tau_eval
