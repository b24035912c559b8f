"""Private signs for a selected support: the shared sign step (docs/privacy.md, "Private signs").

Rows are split into m blocks by a uniformly random assignment (m = floor(sqrt(n)) by
default; a public ``blocks`` value when n is private).  Each block fits least squares
restricted to the selected terms (same ball; ridge scaled to the block's share of the
rows, so the per-row penalty is the method's) and votes the sign of each coefficient,
0 when its fit is degenerate.  For each selected term a sign t in {-1, 0, +1} is drawn
with probability proportional to exp((epsilon / |S|) count_t / 2).

Privacy statement: replacing (or adding or removing) one record changes one block's
votes, so every count moves by at most 1: each term's draw is an exponential mechanism
with sensitivity 1 and budget epsilon/|S|, and the |S| draws compose to epsilon-DP.
t = 0 is reported as "sign undetermined".
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from .partition import split_rows

SIGN_VALUES = np.array([-1, 0, 1])
SIGNS_SHARE = 0.10


def default_sign_blocks(n: int) -> int:
    return max(1, int(math.isqrt(int(n))))


def block_rows(n, blocks, rng, assignment, kept_rows=None, n_input=None):
    if assignment == "iid":
        # i.i.d. uniform labels: adding or removing a record changes exactly one block.  With
        # ``kept_rows`` a label is drawn per input row and the kept rows keep theirs, so a
        # record that becomes incomplete leaves its block and moves no other row.
        if kept_rows is not None:
            labels = rng.integers(blocks, size=int(n_input))[np.asarray(kept_rows, dtype=np.int64)]
        else:
            labels = rng.integers(blocks, size=n) if n else np.zeros(0, dtype=np.int64)
        return [np.flatnonzero(labels == b) for b in range(blocks)]
    return split_rows(n, blocks, rng, kept_rows, n_input)


def vote_counts(votes):
    """Counts of -1, 0, +1 votes per term, shape (terms, 3)."""
    return np.stack([(votes == v).sum(axis=0) for v in SIGN_VALUES], axis=1)


def sign_log_probabilities(counts, epsilon):
    """Exact log P(t) for t in (-1, 0, +1), per term, shape (terms, 3)."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape[0] == 0:
        return counts
    if math.isinf(epsilon):
        out = np.full(counts.shape, -np.inf)
        best = counts == counts.max(axis=1, keepdims=True)
        out[best] = -np.log(best.sum(axis=1, keepdims=True) * np.ones_like(counts))[best]
        return out
    logw = (epsilon / counts.shape[0]) * counts / 2.0
    return logw - logsumexp(logw, axis=1, keepdims=True)


def sample_signs(counts, epsilon, rng):
    """Draw one sign per term from the exact distribution (ties at epsilon=inf uniform)."""
    logp = sign_log_probabilities(counts, epsilon)
    return np.array([SIGN_VALUES[rng.categorical_log(row)] for row in logp], dtype=np.int64)

