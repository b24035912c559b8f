"""Kendall's statistic on a Dask DataFrame, exactly, without collecting the data.

What DP-Kendall needs from the data are the discordant-pair counts D(X_j, v) for every
candidate column j against one reference variable v (the response in round 1, a chosen
column l later), with ties broken by the mechanism's i.i.d. keys
(:class:`dpstats.screening.kendall_statistic.TieBreak`).  A discordant pair may straddle
two partitions, so the counts of the partitions alone are not enough.  Every pair of
rows lies in one partition or in exactly one union of two partitions, hence with P
partitions

    D = sum_{p < q} D(p u q) - (P - 2) sum_p D(p)        (P >= 2),

since a pair inside partition p is counted by the P - 1 unions that contain p and a pair
across p and q by the union p u q alone.  The same holds for groups of partitions: the
partitions are joined into G contiguous groups, as few as keep a union of two groups
within :data:`UNION_BYTES` of design (:func:`union_groups`).  The keys of a row depend only on its input-row
index and the variable (a counter-based generator), so a union orders its rows exactly
as the whole data would, and D is the integer the pandas path computes: the scores, and
with them every Gumbel draw and the release, are the same for the same ``random_state``.

Cost: each pass reads every group G times (in G - 1 unions and once alone), about G
times the sorting work of the pandas path, with at most two groups in a task; only
integer p-vectors reach the client.  DP-Kendall makes one pass for the response and one
per chosen column (k passes), and its curator diagnostics at most k - 1 more.

This is the exact statistic of the pandas path, so the privacy statement of
:mod:`dpstats.screening.kendall` holds unchanged.  n (private under add/remove
neighbours) is used only inside the mechanism, as on pandas.
"""
from __future__ import annotations

import numpy as np

from ..dask_engine import partition_design, require_dask, shared_argument
from .kendall_statistic import KendallPanel, TieBreak, scaled_tau_from_discordant

#: Bytes of design a task may hold (a union of two groups of partitions; :func:`union_groups`).
UNION_BYTES = 256 * 2**20


def _rows_design(pdf, spec, offset):
    """(X, y, input-row indices) of one partition's complete rows."""
    X, y, kept = partition_design(pdf, spec, with_rows=True)
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), offset + kept


def _discordant(key, reference, *designs):
    """D(X_j, reference) on the union of the given partitions' rows (in input-row order), and its n."""
    X = np.concatenate([d[0] for d in designs]) if len(designs) > 1 else designs[0][0]
    y = np.concatenate([d[1] for d in designs]) if len(designs) > 1 else designs[0][1]
    rows = np.concatenate([d[2] for d in designs]) if len(designs) > 1 else designs[0][2]
    n, d = X.shape
    if n < 2:
        return np.append(np.zeros(d, dtype=np.int64), n)
    panel = KendallPanel(X, y, tiebreak=TieBreak(key).subset(rows), response=reference is None)
    out = panel.discordant_with_response() if reference is None else panel.discordant_with_feature(reference)
    return np.append(out, n).astype(np.int64)


def union_groups(partition_rows, d, budget=None) -> list:
    """Contiguous groups of partitions (lists of partition indices) whose unions of two fit ``budget``.

    The formula holds for any partition of the rows into groups, so the partitions are
    joined into G groups, the fewest (at least 2, at most P) such that a union of two
    groups holds about ``budget`` bytes of design (default :data:`UNION_BYTES`).  The
    work is about G - 1 times the pandas path's.  Decided from the input row counts and
    d; it changes how the work is split, never the counts.
    """
    budget = UNION_BYTES if budget is None else budget
    P = len(partition_rows)
    if P <= 2:
        return [[p] for p in range(P)]
    total = float(np.sum(partition_rows)) * (d + 2) * 8
    G = int(min(P, max(2, np.ceil(2 * total / budget))))
    bounds = np.linspace(0, P, G + 1).round().astype(int)
    return [list(range(bounds[g], bounds[g + 1])) for g in range(G) if bounds[g + 1] > bounds[g]]


def _sum(*arrays):
    return np.sum(np.stack(arrays), axis=0)


class DaskKendallPanel:
    """The interface of :class:`KendallPanel` that DP-Kendall uses, computed on Dask.

    Parameters
    ----------
    frame : dpstats.dask_engine.DaskModelFrame
    tiebreak : TieBreak
        The call's keys (drawn once from the call's random source, as on pandas).

    ``tau_with_response`` and ``tau_with_feature(l)`` compute every column's statistic
    in one pass (the formula above) and keep it; asking for some features only reads
    the kept vector.
    """

    def __init__(self, frame, tiebreak: TieBreak, before_pass=None, budget=None):
        self.frame = frame
        self.key = tiebreak.key
        self.d = len(frame.terms)
        self.groups = union_groups(frame.partition_rows, self.d, budget)
        self.before_pass = before_pass
        self._cache: dict = {}
        counts = self._pass(None)
        self.n = int(counts[-1])
        self._dis = {None: counts[:-1]}

    def _pass(self, reference):
        dask, _ = require_dask()
        if self.before_pass is not None:
            self.before_pass(reference)
        offsets = np.concatenate([[0], np.cumsum(self.frame.partition_rows)[:-1]])
        spec = shared_argument(self.frame.spec)
        designs = [dask.delayed(_rows_design, pure=False)(part, spec, int(off))
                   for part, off in zip(self.frame.ddf.to_delayed(), offsets)]
        groups = [[designs[p] for p in members] for members in self.groups]
        G = len(groups)
        singles = [dask.delayed(_discordant, pure=False)(self.key, reference, *groups[g]) for g in range(G)]
        if G == 1:
            return singles[0].compute()
        pairs = [dask.delayed(_discordant, pure=False)(self.key, reference, *groups[g], *groups[h])
                 for g in range(G) for h in range(g + 1, G)]
        single_sum, pair_sum = dask.compute(_tree(dask, singles), _tree(dask, pairs))
        total = pair_sum - (G - 2) * single_sum
        total[-1] = single_sum[-1]  # n: each row once
        return total

    def _discordant_of(self, reference):
        if reference not in self._dis:
            self._dis[reference] = self._pass(int(reference))[:-1]
        return self._dis[reference]

    def tau_with_response(self, features=None) -> np.ndarray:
        tau = scaled_tau_from_discordant(self._dis[None], self.n)
        return tau if features is None else tau[np.asarray(features, dtype=np.intp)]

    def tau_with_feature(self, l, features=None) -> np.ndarray:
        tau = scaled_tau_from_discordant(self._discordant_of(int(l)), self.n)
        return tau if features is None else tau[np.asarray(features, dtype=np.intp)]

    def has_pass(self, l) -> bool:
        return int(l) in self._dis


def _tree(dask, items, split_every=8):
    items = list(items)
    while len(items) > 1:
        items = [dask.delayed(_sum, pure=False)(*items[i:i + split_every]) for i in range(0, len(items), split_every)]
    return items[0]
