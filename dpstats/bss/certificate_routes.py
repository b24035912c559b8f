"""The certificate routes of the engine: block search, dual bounds and search, the MILP.

Each query of :class:`dpstats.bss.engine.OuterApproximationEngine` (the best support, the
top-R list, the mistakes blocks) asks its routes in order; a route declines (returns None)
when the engine's settings or the source's declared capabilities rule it out or when it gives
up within its budget, and the MILP always answers.  Whichever route certifies, the certified
quantities are the same (engine module docstring, "Solver slack and epsilon"), so the routes
change speed, never the mechanism's output distribution; which one certified is curator-only.

* :class:`BlockSearchRoute` (squared loss): every support lies in one mistakes block of a
  fixed anchor, and :mod:`dpstats.bss.blocks` bounds a whole block by Schur complements
  without a solver.  The best support (anchor: the local optimum), the top-R list's far region
  (threshold v_R - tau_mip / 2) and every S^(i) are certified by that search when it stays
  within its node budget (:attr:`EngineSettings.block_search`).
* :class:`DualRoute` (hinge loss): one certified dual per block (``block_lower_bounds``),
  then a branch and bound with certified dual bounds over the blocks (``search_blocks``),
  within :attr:`EngineSettings.dual_search_solves` solves.  The MILP's cuts are the same dual
  bounds made linear in z, but its LP relaxation sits far below them at fractional z, so the
  search certifies what CBC meets one solve at a time.
* :class:`MilpRoute`: the outer-approximation MILP (:mod:`dpstats.bss.milp_master`) with the
  query's constraints: none for the best support, sum_{j in S_1} z_j <= s - 2 and a no-good
  per listed far support for the top-R list's far region, sum_{j in S^(0)} z_j = s - i for
  block i.

A route is handed the engine, whose parts it uses by name: ``problem`` (source, s, the
tolerance's split), ``candidates`` (exact values and expansions), ``pool`` (cuts),
``master`` (the MILP), ``settings``, ``stats`` and ``clock``.
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from itertools import combinations, islice

import numpy as np

from .engine_problem import Certificate


class KthSmallest:
    """The k-th smallest of the memoised values (a dict that only grows), as a callable.

    The block searches read their threshold from it once per removed set; it is computed
    again only when values were added since the last read, so the reads cost nothing while a
    search scores no new support."""

    def __init__(self, values, k):
        self.values, self.k = values, int(k)
        self._count, self._value = -1, math.inf

    def __call__(self):
        if len(self.values) != self._count:
            self._count = len(self.values)
            self._value = heapq.nsmallest(self.k, self.values.values())[-1]
        return self._value


@dataclass
class Far:
    """A route's answer for the supports with two or more mistakes from S_1 outside the list."""

    bound: float = math.inf
    solves: int = 0
    #: new supports entered the candidates (or the MILP met a better one): rank again
    rank_again: bool = False
    #: the bound covers the evaluated supports with two or more mistakes too (the MILP's)
    covers_evaluated: bool = False


class BlockSearchRoute:
    """The exact Schur-complement block search (squared loss)."""

    def __init__(self, engine):
        self.engine = engine
        # the search met a block too large for it: the top-R queries go to the MILP
        self.far_too_large = False

    def on(self):
        eng = self.engine
        return eng.settings.exact_blocks and eng.problem.capabilities.block_search

    def _ball_multiplier(self, support):
        problem = self.engine.problem
        full = problem.full(np.array(support))
        obj, local = problem.source.local_objective(full[None, :])
        return full, float(obj.solve(local[0]).mu)

    def _search_blocks_below(self, anchor, first_i, reference, label, log_key):
        """Search blocks i = first_i..min(s, p - s) of ``anchor`` below reference() - tau_mip / 2.

        :func:`dpstats.bss.blocks.block_supports_below` scores exactly every support of the
        block that could lie below the threshold; the others have R >= it.  reference() is
        read afresh per removed set (not only per block) and only falls as scored supports
        enter the candidates, so each search prunes against the best list found so far, and
        the smallest threshold used (returned) bounds every support of these blocks not scored.
        None when a block is too large for the search (the caller then runs the MILP).
        """
        from .blocks import block_supports_below

        eng = self.engine
        problem, clock, stats = eng.problem, eng.clock, eng.stats
        full, mu = self._ball_multiplier(anchor)
        bound = math.inf
        last = min(problem.s, problem.p - problem.s)
        n_blocks = last - first_i + 1
        progress = clock.progress(f"{label} block search", n_blocks, "block",
                                  note="rough: the middle blocks are usually the slowest")
        # largest block first: a removal prefix it prunes is pruned in every smaller block
        # (blocks.block_supports_below, ``pruned_prefixes``; the thresholds never rise)
        pruned_prefixes, prefix_budgets = {}, {}
        # the pool's cuts bound whole blocks at once (strongest far from the anchor, where the
        # Schur-complement search prunes late): a block whose bound reaches the threshold holds no
        # support below it.  Asked once the search has spent some nodes (EngineSettings).
        cut_bounds, nodes = None, 0
        for done, i in enumerate(range(last, first_i - 1, -1)):
            clock.reached = f"{done} of {n_blocks} blocks of the exact search done"
            progress.update(done)
            clock.check()
            t0 = time.perf_counter()
            if (cut_bounds is None and nodes >= eng.settings.block_cut_bounds_after_nodes
                    and eng.block_cut_bounds_apply()):
                cut_bounds = eng.block_lower_bounds(anchor, range(first_i, i + 1))
            threshold = reference() - problem.tau_mip / 2.0
            if (cut_bounds or {}).get(i, -math.inf) >= threshold:
                stats.log.append({log_key: i, "exact": True, "seconds": time.perf_counter() - t0, "nodes": 0,
                                  "leaves": 0, "by_cuts": True})
                clock.say(f"[engine] {label} block i={i}: bounded by the cut pool")
                bound = min(bound, threshold)
                continue
            res = block_supports_below(problem.source, full, problem.offset, i,
                                       lambda: reference() - problem.tau_mip / 2.0,
                                       eng.candidates.evaluate, mu=mu, settings=eng.settings.block_search,
                                       check_time=clock.check, pruned_prefixes=pruned_prefixes,
                                       prefix_budgets=prefix_budgets, nodes_before=nodes)
            stats.log.append({log_key: i, "exact": res is not None, "seconds": time.perf_counter() - t0,
                              **({"nodes": res.nodes, "leaves": res.leaves, "removed_sets": res.sets,
                                  "pruned_sets": res.pruned_sets, "full_model_pruned_sets": res.full_pruned_sets}
                                 if res is not None else {})})
            clock.say(f"[engine] {label} block i={i}: "
                      + (f"{res.leaves} supports below the threshold scored ({res.nodes} nodes; {res.pruned_sets} of "
                         f"{res.sets} removed sets pruned, {res.full_pruned_sets} by the model with every column)"
                         if res is not None else "too large, MILP") + f" in {time.perf_counter() - t0:.2f}s")
            if res is None:
                return None
            nodes += res.nodes
            bound = min(bound, res.threshold)
        progress.update(last - first_i + 1)
        return bound

    def best(self, anchor):
        """Certify the best support by searching every mistakes block of ``anchor``, or None.

        Every support lies in exactly one block i = 1..min(s, p - s) of the anchor (the
        local optimum of :meth:`Candidates.initialise`); each is searched below the best value
        known (:meth:`_search_blocks_below`).
        """
        if not self.on():
            return None
        cand = self.engine.candidates
        bound = self._search_blocks_below(anchor, 1, KthSmallest(cand.values, 1), "best", "best_block")
        if bound is None:
            return None
        sup, val = cand.best_known()
        val = float(cand.evaluate([sup])[0])
        return Certificate(sup, val, min(bound, val), self.engine.problem.tau_mip, 0)

    def far(self, q):
        """Certify the top-R list against supports with >= 2 mistakes from S_1, without MILP.

        Blocks i >= 2 of S_1 are searched below v_R, taken from the list as it stands
        (:meth:`_search_blocks_below`); leaves below v_R enter the list, which only lowers
        v_R, so blocks done earlier stay covered.  Returns the smallest threshold used, or
        None when a block is too large for the search (the caller then runs the MILP).
        """
        problem, R = self.engine.problem, q.R
        if not self.on() or problem.s < 2 or problem.p - problem.s < 2 or self.far_too_large:
            return None
        bound = self._search_blocks_below(q.s1, 2, KthSmallest(self.engine.candidates.values, R),
                                          f"top-{R}", "top_block")
        if bound is None:
            self.far_too_large = True  # the MILP takes over; do not search again
            return None
        return Far(bound)

    def block(self, anchor, i, incumbent, cap, feasible):
        """Block i by Schur-complement branch and bound (:mod:`dpstats.bss.blocks`), or None.

        Squared loss only (GramSource / MatrixFreeSource); exact up to tau_mip / 2, no MILP.
        Returns None (the caller falls back to the MILP) when the settings switch
        ``exact_blocks`` off (or the source has no ``block_search``) or the search exceeds
        its node budget (``EngineSettings.block_search.max_nodes``).  With
        an incumbent above ``cap`` the search starts from the cap as its value (it prunes
        every support it can bound above cap - tau_mip / 2); when no support below the cap
        turns up, the block is certified capped.
        """
        if not self.on():
            return None
        from .blocks import minimise_block

        eng = self.engine
        problem, clock, cand = eng.problem, eng.clock, eng.candidates
        clock.check()
        t0 = time.perf_counter()
        inc_sup, inc_val = incumbent
        full_inc = problem.full(np.array(inc_sup))
        obj, local = problem.source.local_objective(full_inc[None, :])
        mu = float(obj.solve(local[0]).mu)  # any mu >= 0 is valid; this one is tight near the incumbent
        res = minimise_block(problem.source, problem.full(np.array(anchor)), problem.offset, i,
                             (inc_sup, min(inc_val, cap)), problem.tau_mip / 2.0, cand.evaluate, mu=mu,
                             settings=eng.settings.block_search, check_time=clock.check)
        eng.stats.log.append({"block": i, "exact": res is not None, "seconds": time.perf_counter() - t0,
                              **({"nodes": res.nodes, "leaves": res.leaves, "removed_sets": res.dropped_sets,
                                  "pruned_sets": res.pruned_sets, "full_model_pruned_sets": res.full_pruned_sets}
                                 if res is not None else {})})
        clock.say(f"[engine] mistakes i={i} exact block: "
                  f"{'done' if res is not None else 'too large, MILP'} in {time.perf_counter() - t0:.2f}s"
                  + (f" ({res.nodes} nodes, {res.leaves} leaves)" if res is not None else ""))
        clock.check()
        if res is None:
            return None
        val = float(cand.evaluate([res.support])[0])
        if val > cap:
            # nothing below the cap: every support of the block is >= cap - tau_mip / 2
            return Certificate(res.support, val, res.lower_bound, problem.tau_mip, 0, capped=True)
        return Certificate(res.support, val, min(res.lower_bound, val), problem.tau_mip, 0)


class DualRoute:
    """Certified dual bounds over the mistakes blocks, then a dual branch and bound (hinge loss)."""

    def __init__(self, engine):
        self.engine = engine
        self.block_bounds = {}  # (anchor, i) -> certified bounds per base

    def bounds_on(self):
        eng = self.engine
        return eng.settings.dual_bounds and eng.problem.capabilities.dual_blocks

    def search_on(self):
        eng = self.engine
        return eng.settings.dual_search and eng.problem.capabilities.dual_blocks

    def best(self, anchor):
        """Certify the best support by certified lower bounds alone, or None.

        The 1-swap ball of the anchor (the local optimum) is covered by the lower bounds of
        its expansion (evaluated neighbours: value minus their gap; screened ones: a dual
        bound), and every support with two or more mistakes by one dual per block
        (:meth:`far_bounds`) or, where that falls short, by the dual branch and bound
        (:meth:`far_search`; the supports it solves are candidates too); the anchor's own
        value is within tau_eval.  The certificate holds when all of them reach
        v_1 - tau_mip; otherwise the MILP decides.
        """
        if not (self.bounds_on() or self.search_on()):
            return None
        problem, cand = self.engine.problem, self.engine.candidates
        _, _, lower = cand.expand_with_bounds(anchor, keep=1)
        sup, val = cand.best_known()
        threshold = val - problem.tau_mip
        ball = float(np.min(lower)) if lower.size else math.inf
        if ball < threshold:
            return None
        far = self.far_bounds(anchor, threshold) if problem.s >= 2 and problem.p - problem.s >= 2 else math.inf
        if far is None:
            # the branch and bound: supports it meets below the threshold are solved, and the
            # best of them and the incumbent is the best support (all others are bounded)
            found = self.far_search(anchor, threshold, set())
            if found is None:
                return None
            far, hits = found
            for key, v in hits:
                cand.values.setdefault(key, v)
            if hits:
                far = min([far] + [v - problem.tau_eval for _, v in hits])
                sup, val = cand.best_known()
        lower = min(ball, far, val - problem.tau_eval)
        if lower < val - problem.tau_mip:
            return None
        return Certificate(sup, val, lower, problem.tau_mip, 0)

    def far_by_bounds(self, q):
        """The top-R list's far region by one dual per block."""
        b = self.far_bounds(q.s1, q.v_R - self.engine.problem.tau_mip)
        return None if b is None else Far(b)

    def far_by_search(self, q):
        """The top-R list's far region by the branch and bound: its hits join the candidates."""
        found = self.far_search(q.s1, q.v_R - self.engine.problem.tau_mip, q.members)
        if found is None:
            return None
        bound, hits = found
        values = self.engine.candidates.values
        new = [(k, v) for k, v in hits if k not in values]
        for k, v in new:
            values[k] = v
        if new:
            return Far(rank_again=True)
        return None if hits else Far(bound)

    def far_bounds(self, anchor, threshold):
        """Bound every support with >= 2 mistakes from ``anchor`` by one dual per block, or None.

        For sources with ``block_lower_bounds`` (the hinge loss): for each D (an i-subset of
        the anchor, i >= 2) the certified dual at T = anchor minus D bounds R over the whole
        block T + B (:meth:`HingeSource.block_lower_bounds`), 2^s - s - 1 solves in all.
        Returns the smallest bound when it reaches ``threshold``, else None (the caller
        then runs the MILP).
        """
        eng = self.engine
        problem, clock = eng.problem, eng.clock
        if not self.bounds_on() or problem.s < 2 or problem.p - problem.s < 2:
            return None
        t0 = time.perf_counter()
        full = problem.full(np.array(anchor))
        forced, movable, outside = problem.anchor_columns(anchor)
        # duals already at hand from the anchor's expansion: its own and its drop-one supports'
        hints = [full] + [np.delete(full, P) for P in range(problem.offset, full.size)]
        bound = math.inf
        memo = self.block_bounds
        for i in range(2, min(problem.s, problem.p - problem.s) + 1):
            clock.check()
            bases = [np.concatenate([forced, np.delete(movable, D)]) for D in combinations(range(movable.size), i)]
            # the bounds of an earlier call at this anchor (best, then top-R) are still certified
            known = memo.get((tuple(anchor), i))
            if known is not None and np.min(known) >= threshold:
                block = known
            else:
                block = problem.source.block_lower_bounds(bases, outside, i, threshold, hints, known=known)
                memo[(tuple(anchor), i)] = block
            bound = min(bound, float(np.min(block)))
            if bound < threshold:
                break
        ok = bound >= threshold
        eng.stats.log.append({"dual_blocks": True, "exact": ok, "seconds": time.perf_counter() - t0})
        clock.say(f"[engine] supports with >= 2 mistakes: dual block bound {bound:.6f} "
                  f"{'>=' if ok else '<'} {threshold:.6f} in {time.perf_counter() - t0:.2f}s")
        return bound if ok else None

    def far_search(self, anchor, threshold, skip):
        """(bound, hits) over every support with >= 2 mistakes from ``anchor``, or None.

        For sources with ``search_blocks`` (the hinge loss): a branch and bound with
        certified dual bounds over the blocks (anchor minus D) + B, |D| = |B| = i >= 2
        (:meth:`_search`).  ``hits``: supports outside ``skip`` whose certified lower
        bound is below ``threshold``, with their values; ``bound``: a certified lower bound on
        R over all the others outside ``skip``.  None when the search needs more than
        :attr:`EngineSettings.dual_search_solves` solves (the MILP then decides).
        """
        eng = self.engine
        problem = eng.problem
        if not self.search_on() or problem.s < 2 or problem.p - problem.s < 2:
            return None
        t0 = time.perf_counter()
        found = self._search(anchor, range(2, min(problem.s, problem.p - problem.s) + 1), threshold, skip)
        done = found is not None
        bound, hits, solves = found if done else (math.inf, [], eng.settings.dual_search_solves)
        eng.stats.log.append({"dual_search": True, "solves": solves, "hits": len(hits), "exact": done and not hits,
                              "seconds": time.perf_counter() - t0})
        if eng.clock.verbose:
            what = (f"{len(hits)} below the threshold" if hits else f"bound {bound:.6f} >= {threshold:.6f}") if done \
                else f"gave up after {solves} solves"
            eng.clock.say(f"[engine] supports with >= 2 mistakes: dual branch and bound, {what}, "
                          f"{solves} solves in {time.perf_counter() - t0:.2f}s")
        return (bound, hits) if done else None

    def block(self, anchor, i, incumbent, cap, feasible):
        """Block i by the dual branch and bound, or None.

        One search at threshold t = min(incumbent, cap) - tau_mip: every support of the block
        is either a hit (solved, certified within tau_eval) or bounded by >= t.  So with v the
        smallest of the hits' values and the incumbent's, every support has R >= min(t,
        v - tau_eval) >= min(v, cap) - tau_mip (tau_eval <= tau_mip is checked), which is the
        certificate of the block's minimum below the cap, and of a capped block above it.
        None when the source cannot search or the search gives up.
        """
        if not self.search_on():
            return None
        eng = self.engine
        problem, cand = eng.problem, eng.candidates
        t0 = time.perf_counter()
        inc_sup, inc_val = incumbent
        threshold = min(inc_val, cap) - problem.tau_mip
        found = self._search(anchor, [i], threshold)
        eng.stats.log.append({"dual_search": True, "block": i, "exact": found is not None,
                              "solves": found[2] if found is not None else eng.settings.dual_search_solves,
                              "seconds": time.perf_counter() - t0})
        eng.clock.say(f"[engine] mistakes i={i} dual branch and bound: "
                      f"{'done' if found is not None else 'too large, MILP'} in {time.perf_counter() - t0:.2f}s")
        if found is None:
            return None
        bound, hits, _ = found
        for key, v in hits:
            cand.values.setdefault(key, v)
        sup, val = min(hits + [(tuple(inc_sup), float(inc_val))], key=lambda kv: (kv[1], kv[0]))
        val = float(cand.evaluate([sup])[0])
        lower = min([bound] + [v - problem.tau_eval for _, v in hits])
        if lower < min(val, cap) - problem.tau_mip:
            return None  # only when tau_eval > tau_mip: the MILP decides
        return Certificate(sup, val, min(lower, val), problem.tau_mip, 0, capped=bool(val > cap))

    def _search(self, anchor, sizes, threshold, skip=()):
        """:meth:`HingeSource.search_blocks` over the blocks (anchor minus D) + B, |D| = |B| = i
        for each i in ``sizes``, within :attr:`EngineSettings.dual_search_solves` solves in all.

        Returns (bound, hits as (candidate support, value), solves), or None when the budget
        runs out.  ``skip``: candidate supports left out (neither hits nor bounded).
        """
        eng = self.engine
        problem = eng.problem
        off = problem.offset
        forced, movable, outside = problem.anchor_columns(anchor)
        skip_full = {tuple(range(off)) + tuple(int(j) + off for j in k) for k in skip}
        bound, hits, solves = math.inf, [], 0
        for i in sizes:
            bases = [np.concatenate([forced, np.delete(movable, D)]) for D in combinations(range(movable.size), i)]
            found = problem.source.search_blocks(bases, outside, i, threshold, skip=skip_full,
                                                 node_limit=eng.settings.dual_search_solves - solves,
                                                 check=eng.clock.check)
            if found is None:
                return None
            b, h, used = found
            solves += used
            bound = min(bound, b)
            hits += [(tuple(j - off for j in key[off:]), v) for key, v in h]
        return bound, hits, solves


class MilpRoute:
    """The outer-approximation MILP (:mod:`dpstats.bss.milp_master`); always answers."""

    def __init__(self, engine):
        self.engine = engine

    def best(self):
        """The best support over every support, from the best known one."""
        eng = self.engine
        inc = eng.candidates.best_known()
        _, sup, val, lb, solves = eng.master.minimise("best", [], lambda a: np.ones(len(a), dtype=bool), inc)
        return Certificate(sup, val, lb, eng.problem.tau_mip, solves)

    def far(self, q):
        """The far region by the MILP with sum_{j in S_1} z_j <= s - 2 and a no-good constraint
        per listed far support; always answers (a certificate, or supports to rank again)."""
        eng = self.engine
        problem, cand = eng.problem, eng.candidates
        in1, members = q.in1, q.members
        far = [k for k in members if q.mistakes(k) >= 2]

        def feasible(a, members=members):
            a = np.asarray(a, dtype=np.int64)
            ok = (~in1[a]).sum(axis=1) >= 2
            return ok & np.array([tuple(int(j) for j in row) not in members for row in a], dtype=bool)

        outside = [(k, v) for k, v in cand.values.items() if k not in members and q.mistakes(k) >= 2]
        if not outside:
            outside = self._two_mistakes_start(q, feasible)
        if problem.s < 2 or problem.p - problem.s < 2 or not outside:
            # no support has two mistakes (s = 1 or p - s = 1): the ball is everything
            return Far(math.inf, covers_evaluated=True)
        inc = min(outside, key=lambda kv: (kv[1], kv[0]))
        constraints = [("<=", list(q.s1), problem.s - 2)] + [("<=", list(k), problem.s - 1) for k in far]
        if eng.settings.list_cuts:
            for k in far:
                eng.pool.add(k)
        v_R = q.v_R
        certified, _, _, lb, solves = eng.master.minimise(
            f"top-{q.R}", constraints, feasible, inc, target=v_R,
            early_exit=lambda v, v_R=v_R: v < v_R - 1e-12 * (abs(v_R) + 1.0))
        return Far(lb, solves=solves, covers_evaluated=True, rank_again=not certified)

    def _two_mistakes_start(self, q, feasible):
        """A feasible MILP start: the best 1-swap of the best 1-swap that has 2 mistakes."""
        cand = self.engine.candidates
        k1 = tuple(int(j) for j in q.nb[int(np.argmin(q.vals))])
        nb2, vals2 = cand.expand(k1, keep=0)
        ok2 = feasible(nb2)
        if not np.any(ok2):
            return []
        k = int(np.argmin(np.where(ok2, vals2, np.inf)))
        v2 = float(vals2[k]) if np.isfinite(vals2[k]) else float(cand.evaluate(nb2[k:k + 1])[0])
        return [(tuple(int(j) for j in nb2[k]), v2)]

    def block(self, anchor, i, incumbent, cap, feasible):
        """Block i by the MILP with sum_{j in S^(0)} z_j = s - i; always answers."""
        eng = self.engine
        constraints = [("==", list(anchor), eng.problem.s - i)]
        self._block_cuts(anchor, i)
        _, sup, val, lb, solves = eng.master.minimise(f"mistakes i={i}", constraints, feasible, incumbent, cap=cap)
        val = float(eng.candidates.evaluate([sup])[0])
        # certified below the cap: lb >= val - tau_mip; above it: lb >= cap - tau_mip only
        return Certificate(sup, val, lb, eng.problem.tau_mip, solves, capped=bool(val > cap))

    def _block_cuts(self, anchor, i, max_subsets=60):
        """Cuts at one support per removed i-subset A of the anchor (block i structure).

        Every support of block i is S^(0) minus some A plus some B.  A cut at S^(0) sees
        the cost of removing j only through lam b_j^2, far below the true loss of the
        fit; a cut at a support lacking A sees that loss exactly.  So the pool gets one
        cut per A (B = the i outside columns with the largest |X_j'a| at S^(0), i.e. the
        largest gradients), C(s, i) cuts in all (at most ``max_subsets``).
        """
        eng = self.engine
        problem = eng.problem
        anchor = tuple(sorted(anchor))
        full = problem.full(np.array(anchor))
        obj, local = problem.source.local_objective(full[None, :])
        b = obj.solve(local[0]).coef
        score = np.abs(problem.source.c - problem.source.cross(full) @ b)[problem.offset:]
        score[list(anchor)] = -np.inf
        add = [int(j) for j in np.argsort(-score, kind="stable")[:i]]
        for A in islice(combinations(anchor, i), max_subsets):
            sup = tuple(sorted(set(anchor) - set(A) | set(add)))
            eng.pool.add(sup)
