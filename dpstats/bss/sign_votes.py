"""The per-block least-squares fits behind the private sign step.

The vote counts and the exponential mechanism on them are :mod:`dpstats.mechanisms.signs`
(with the privacy statement); this module holds what each block computes: the signs of its
ridge-and-ball least-squares fit (:class:`~dpstats.bss.objective.RidgeBallObjective`)
restricted to the selected terms.  It sits above the mechanism so that the mechanism
imports nothing from the best-subset core.
"""
from __future__ import annotations

import numpy as np

from ..mechanisms.signs import block_rows
from .objective import RidgeBallObjective, SufficientStats


def block_sign_votes(design, y, columns, report, ridge, radius, blocks, rng, assignment="split", n_ridge=None,
                     kept_rows=None, intercept=False):
    """Per-block sign votes of the coefficients of ``columns`` (full design indices).

    ``report`` are positions within ``columns`` whose signs are wanted (the forced
    intercept is fitted but not reported).  Returns an int array (blocks, len(report)).
    ``assignment="split"`` (default) cuts a random permutation into equal blocks (for
    replace-one neighbours); ``"iid"`` gives each row an i.i.d. uniform block label (for
    add/remove neighbours, where n is private).  A block's ridge is ``ridge`` times its
    share of ``n_ridge`` rows (default: the design's rows); pass the input row count when
    rows may have been dropped, so that one record leaving changes no other block's ridge.
    ``kept_rows``: the input-row positions of the design's rows (rows dropped by
    ``na_action``); labels, or the permutation of ``"split"``, are then drawn for all
    ``n_ridge`` input rows (:mod:`dpstats.mechanisms.partition`).  ``intercept``: ``columns[0]`` is the
    intercept column, profiled out of each block's fit as in the selection objective
    (unpenalised, outside the ball).
    """
    n = design.shape[0]
    votes = np.zeros((blocks, len(report)), dtype=np.int64)
    cols = np.asarray(columns, dtype=np.int64)
    for b, rows in enumerate(block_rows(n, blocks, rng, assignment, kept_rows, n_ridge)):
        # max(., 1): no rows at all (a data set under add/remove neighbours may have none) leaves empty blocks
        block_ridge = ridge * rows.size / max(n if n_ridge is None else n_ridge, 1)
        votes[b] = block_vote(design[np.ix_(rows, cols)], y[rows], report, block_ridge, radius, intercept=intercept)
    return votes


def block_vote(design, y, report, ridge, radius, intercept=False):
    """One block's votes: the signs of its fit's coefficients at ``report`` (0 if degenerate).

    The one place a block votes, whether the block is a pandas row block or a Dask
    partition.  A block with fewer rows than columns and no ridge, or a rank-deficient
    one, is degenerate: every vote is 0.  With ``intercept`` column 0 is the intercept: the
    block's fit centres its rows instead (the intercept unpenalised and outside the ball).
    """
    out = np.zeros(len(report), dtype=np.int64)
    k = design.shape[1]
    if design.shape[0] == 0 or (ridge == 0 and (design.shape[0] < k or np.linalg.matrix_rank(design) < k)):
        return out
    # Unclipped rows (kendall's sign step uses no bounds) may overflow: numpy's warning must not
    # raise under -W error after the charge, and a non-finite coefficient votes 0 (degenerate)
    # instead of casting NaN to an integer.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if intercept:
            stats = SufficientStats.centred_from_arrays(design[:, 1:], y)
            sol = RidgeBallObjective(stats, ridge, radius).solve(np.arange(k - 1))
            coef = np.concatenate([[0.0], sol.coef])
        else:
            coef = RidgeBallObjective(SufficientStats.from_arrays(design, y), ridge, radius).solve(np.arange(k)).coef
    chosen = np.asarray(coef, dtype=np.float64)[list(report)]
    return np.where(np.isfinite(chosen), np.sign(chosen), 0.0).astype(np.int64)
