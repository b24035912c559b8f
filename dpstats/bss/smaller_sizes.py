"""What an engine's certified best support says about smaller sizes of the same objective, for the
model-size stage (:mod:`dpstats.bss.model_size`, "Sizes certified as needed"): bounds on their best
values and, with top_r, their whole top-R lists (:mod:`dpstats.bss.size_bounds` does the arithmetic;
this module holds the engine's side: when it applies, the anchor, and the widening by the evaluation
error).  An :class:`~dpstats.bss.engine.OuterApproximationEngine` keeps one :class:`SmallerSizes`.
"""
from __future__ import annotations

import numpy as np

from .blocks import DEFAULT_BLOCK_SETTINGS
from .engine_problem import TopCertificate


class SmallerSizes:
    """The smaller sizes' bounds and lists of one engine (``engine``: its source, settings, problem,
    certified best support, tau_eval, cut pool and BLAS guard are read, never changed)."""

    def __init__(self, engine):
        self.engine = engine
        self._anchor = None  # the AnchorBounds of the certified best support, built once per support
        self._path = None  # (the anchor's full columns, its elimination_values), once per support

    def applies(self) -> bool:
        """Setting ``size_bounds``, the best support certified, the Gram matrix, at most the block
        search's ``floor_max_columns``."""
        eng = self.engine
        block = eng.settings.block_search or DEFAULT_BLOCK_SETTINGS
        src = eng.source
        return bool(eng.settings.size_bounds and eng._best is not None and eng.capabilities.block_search
                    and src.G is not None and src.n_columns <= block.floor_max_columns)

    def anchor(self):
        """The :class:`~dpstats.bss.size_bounds.AnchorBounds` of the certified best support."""
        from .size_bounds import AnchorBounds

        eng = self.engine
        full = eng.problem.full(np.array(eng._best.support, dtype=np.int64))
        if self._anchor is None or not np.array_equal(self._anchor.full, full):
            block = eng.settings.block_search or DEFAULT_BLOCK_SETTINGS
            self._anchor = AnchorBounds.at_anchor(eng.source, full, eng.offset, block, check_time=eng.clock.check)
        return self._anchor

    def unwidened(self, value) -> float:
        """A raw bound at least this high is still at least ``value`` after the engine's ``_widened``
        (with room to spare: it only sets how much a search needs to prove)."""
        eng = self.engine
        magnitude = max((abs(c) for c in eng.pool.const), default=0.0)
        return float(value) + eng.tau_eval + 1e-6 * (1.0 + abs(float(value)) + magnitude)

    def bounds(self, sizes, need=None) -> dict:
        """:meth:`~dpstats.bss.engine.OuterApproximationEngine.size_bounds`."""
        if not self.applies():
            return {}
        eng = self.engine
        with eng._blas():
            try:
                anchor = self.anchor()
                raw = {k: self.unwidened(x) for k, x in (need or {}).items()}
                found = {k: anchor.bounds(k, raw.get(k)) for k in sorted({int(k) for k in sizes}) if 1 <= k < anchor.m}
            except np.linalg.LinAlgError:
                # a solve that fails in floating point (collinear columns at a tiny ridge): no bounds,
                # the size is certified instead (never an error after the charge)
                return {}
        return {k: (eng._widened({k: low})[k], high + eng.tau_eval + 1e-9 * (1.0 + abs(high)))
                for k, (low, high) in found.items()}

    def estimates(self, sizes) -> dict:
        """{k: an upper bound on the best value over supports of k candidates} for the smaller sizes k in
        ``sizes``: the values along backward elimination from the engine's certified best support
        (:func:`~dpstats.bss.size_bounds.elimination_values`, m (m + 1) / 2 evaluations), raised by the
        evaluation error as :meth:`bounds`' upper ends; {} where :meth:`bounds` gives none."""
        if not self.applies():
            return {}
        from .size_bounds import elimination_values

        eng = self.engine
        with eng._blas():
            full = eng.problem.full(np.array(eng._best.support, dtype=np.int64))
            if self._path is None or not np.array_equal(self._path[0], full):
                self._path = (full, elimination_values(eng.source, full, eng.offset, check_time=eng.clock.check))
        wanted = {int(k) for k in sizes}
        return {k: high + eng.tau_eval + 1e-9 * (1.0 + abs(high)) for k, high in self._path[1].items()
                if k in wanted and np.isfinite(high)}

    def top_list(self, k, R, tolerance) -> TopCertificate | None:
        """:meth:`~dpstats.bss.engine.OuterApproximationEngine.smaller_size_list`."""
        if not self.applies():
            return None
        eng = self.engine
        tau_mip = float(tolerance) - 2.0 * eng.tau_eval
        if not tau_mip > 0:
            return None
        k, R = int(k), int(R)
        with eng._blas():
            for added in (0, 1):  # the subsets of A alone, then with one column from outside as well
                try:
                    anchor = self.anchor()
                    got = anchor.top_list(k, R, added)
                    if got is None:
                        continue
                    rows, values, following = got
                    need = float(values[-1]) - tau_mip
                    low = eng._widened({k: anchor.outside_bound(k, self.unwidened(need), added)})[k]
                except np.linalg.LinAlgError:  # a solve that fails in floating point: the engine certifies instead
                    return None
                bound = min(low, following - eng.tau_eval)
                if bound >= need:
                    supports = [tuple(int(j) - eng.offset for j in row[eng.offset:]) for row in rows]
                    return TopCertificate(supports, np.asarray(values, dtype=np.float64), bound, tau_mip, 0)
        return None
