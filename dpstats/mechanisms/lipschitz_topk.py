"""The canonical Lipschitz top-k mechanism, sampled exactly.

Privacy statement
-----------------
Input: scores z_1..z_d already divided by their sensitivity, so that
|z_j(D) - z_j(D')| <= 1 for every j and neighbours D, D'.  Output: a k-subset S.
Its canonical loss is the sup-norm distance from z to the score vectors whose top-k is S,

    loss(S) = max(0, max_{j not in S} z_j - min_{i in S} z_i) / 2,

which is 1-Lipschitz in z (a distance to a fixed set), hence has sensitivity 1.  Drawing
S with P(S) proportional to exp(-(epsilon/2) loss(S)) is the exponential mechanism: the
scores are not monotone, so the factor 2 stays; epsilon-DP.

Classes (Shekelyan and Loukides 2022; Swope et al. 2024, Appendix A, q = 1/2): sort z descending,
ties broken by a uniformly random permutation, giving i_1..i_d.  Every k-subset other
than the true top-k {i_1..i_k} is in exactly one class (h, t), 0 <= h <= k-1,
k+1 <= t <= d: it contains i_1..i_h but not i_{h+1} (the best excluded), its worst
member is i_t, and its other k-h-1 members B are in {i_{h+2}..i_{t-1}}.  All members of
a class share the loss (z_[h+1] - z_[t]) / 2, and the class has C(t-h-2, k-h-1) members.
So the mechanism samples one of the k (d-k) + 1 classes from the log-weights

    log C(t-h-2, k-h-1) - epsilon (z_[h+1] - z_[t]) / 4      (0 for the top-k class)

and then a uniform body B.  Weights stay in log space (``gammaln``), never as raw
binomials.  Because the loss of a set does not depend on how ties were ordered, the
per-set probabilities are the same for every tie-break.  ``epsilon = inf`` returns the
true top-k (ties broken at random).

References
----------
Shekelyan and Loukides (2022), Differentially private top-k selection via canonical
Lipschitz mechanism.  Swope, Khanna, Doldo, Roy and Raff (2024), Feature selection from
differentially private correlations, Algorithm 2 and Appendix A.
"""
from __future__ import annotations

import math
from itertools import combinations

import numpy as np
from scipy.special import gammaln, logsumexp


def canonical_order(z, rng=None) -> np.ndarray:
    """Indices of z sorted descending; ties by a random permutation (stable if rng is None)."""
    z = np.asarray(z, dtype=np.float64)
    tiebreak = rng.permutation(z.size) if rng is not None else np.arange(z.size)
    return np.lexsort((tiebreak, -z))


def class_log_weights(z_sorted, k, epsilon):
    """Log-weights of the classes, given scores sorted descending.

    Returns
    -------
    h, t : int arrays of shape (k, d-k)
        The class indices (t 1-based, as in the spec).
    log_size : array (k, d-k)
        log C(t-h-2, k-h-1).
    log_weight : array (k, d-k)
        ``log_size - epsilon (z_[h+1] - z_[t]) / 4``.  The top-k class has log-weight 0.
    """
    zs = np.asarray(z_sorted, dtype=np.float64)
    d = zs.size
    h = np.arange(k)[:, None]
    t = np.arange(k + 1, d + 1)[None, :]
    # log C(t-h-2, k-h-1) with t-h-2 >= k-h-1 >= 0 always.
    log_size = gammaln(t - h - 1.0) - gammaln(k - h + 0.0) - gammaln(t - k + 0.0)
    loss = (zs[h] - zs[t - 1]) / 2.0
    h, t = np.broadcast_arrays(h, t)
    return h, t, log_size, log_size - (float(epsilon) / 2.0) * loss


def _class_rows(zs, k, epsilon):
    """(h, t, log_size, log_weight) of each row h = 0..k-1 of :func:`class_log_weights`, one row at a time.

    The same elementwise arithmetic as the whole table (so the same bits), in O(d) memory: the
    table has k (d - k) entries (0.2 GB at k = 263, d = 10^5 for each array built from it)."""
    d = zs.size
    t = np.arange(k + 1, d + 1)
    tail = gammaln(t - k + 0.0)
    for h in range(k):
        log_size = gammaln(t - h - 1.0) - gammaln(k - h + 0.0) - tail
        loss = (zs[h] - zs[t - 1]) / 2.0
        yield h, t, log_size, log_size - (float(epsilon) / 2.0) * loss


def log_normaliser(zs, k, epsilon) -> float:
    """log(1 + sum of exp(log_weight) over every class), the log of the mechanism's normalising
    constant, streamed over rows (two passes: the maximum, then the sum)."""
    top = 0.0
    for _, _, _, logw in _class_rows(zs, k, epsilon):
        top = max(top, float(np.max(logw)))
    total = math.exp(-top)
    for _, _, _, logw in _class_rows(zs, k, epsilon):
        total += float(np.sum(np.exp(logw - top)))
    return top + math.log(total)


def class_log_probabilities(z, k, epsilon, order=None):
    """Exact class probabilities: ``(order, h, t, log_size, log_prob, log_prob_topk)``.

    ``order`` defaults to the stable descending order (index tie-break); the set
    probabilities do not depend on it.
    """
    z = np.asarray(z, dtype=np.float64)
    if order is None:
        order = canonical_order(z)
    h, t, log_size, logw = class_log_weights(z[order], k, epsilon)
    if math.isinf(epsilon):
        return order, h, t, log_size, np.full(logw.shape, -np.inf), 0.0
    norm = logsumexp(np.concatenate([[0.0], logw.ravel()]))
    return order, h, t, log_size, logw - norm, -norm


def sample_lipschitz_topk(z, k, epsilon, rng) -> np.ndarray:
    """Draw a k-subset (sorted indices) from the canonical Lipschitz mechanism."""
    z = np.asarray(z, dtype=np.float64)
    d = z.size
    order = canonical_order(z, rng)
    if math.isinf(epsilon) or k == d:
        return np.sort(order[:k])
    index = categorical_over_classes(z[order], k, epsilon, rng)
    if index == 0:
        return np.sort(order[:k])
    h, col = divmod(index - 1, d - k)
    t = k + 1 + col
    # Positions (0-based) i_{h+2}..i_{t-1} are h+1 .. t-2: choose k-h-1 of those t-h-2.
    body = h + 1 + rng.sample_without_replacement(t - h - 2, k - h - 1)
    positions = np.concatenate([np.arange(h), body, [t - 1]]).astype(np.int64)
    return np.sort(order[positions])


def categorical_over_classes(zs, k, epsilon, rng) -> int:
    """The index :meth:`RandomSource.categorical_log` draws from ``[0] + log_weight.ravel()`` (the
    top-k class first, then the classes row by row), with the same bits and one uniform, streamed
    over rows instead of building the k x (d - k) table.

    categorical_log takes top = the largest log-weight, the sequential cumulative sums of
    exp(log_weight - top) (``np.cumsum`` adds in order), target = u * total and the index of the
    first cumulative sum above the target.  Here the rows' cumulative sums start from the carry
    of the rows before (``np.cumsum`` of [carry, row...]), which adds in the same order, so every
    cumulative sum, the total, the target and the index are those of the whole table."""
    top = 0.0
    for _, _, _, logw in _class_rows(zs, k, epsilon):
        top = max(top, float(np.max(logw)))
    if not math.isfinite(top):
        raise ValueError("log-weights must contain a finite maximum")
    carry = float(np.exp(np.array([0.0]) - top)[0])
    for _, _, _, logw in _class_rows(zs, k, epsilon):
        carry = float(np.cumsum(np.concatenate([[carry], np.exp(logw - top)]))[-1])
    target = rng.uniform() * carry
    size = 1 + k * (zs.size - k)
    carry = float(np.exp(np.array([0.0]) - top)[0])
    if carry > target:
        return 0
    for h, _, _, logw in _class_rows(zs, k, epsilon):
        cumulative = np.cumsum(np.concatenate([[carry], np.exp(logw - top)]))
        if cumulative[-1] > target:
            inside = int(np.searchsorted(cumulative[1:], target, side="right"))
            return min(1 + h * (zs.size - k) + inside, size - 1)
        carry = float(cumulative[-1])
    return size - 1


def subset_log_probabilities(z, k, epsilon):
    """Exact log P(S) of every k-subset (small d), from the class probabilities.

    Returns ``(subsets, log_prob)`` with subsets in lexicographic order, shape (C(d,k), k).
    """
    z = np.asarray(z, dtype=np.float64)
    d = z.size
    order, h, t, log_size, logp, logp_top = class_log_probabilities(z, k, epsilon)
    position = np.empty(d, dtype=np.int64)
    position[order] = np.arange(d)
    subsets = np.array(list(combinations(range(d), k)), dtype=np.int64).reshape(-1, k)
    out = np.empty(subsets.shape[0])
    for row, subset in enumerate(subsets):
        pos = np.sort(position[subset])
        lead = int(np.sum(pos == np.arange(k)))  # i_1..i_h present, i_{h+1} absent
        if lead == k:
            out[row] = logp_top
            continue
        worst = int(pos[-1]) + 1  # 1-based t
        out[row] = logp[lead, worst - k - 1] - log_size[lead, worst - k - 1]
    return subsets, out


def inclusion_probabilities(z, k, epsilon) -> np.ndarray:
    """Exact P(j in S) of every item j under the mechanism (curator diagnostics, audits).

    Class (h, t) holds the positions 0..h-1 and t-1 of the descending order, and each of the
    t-h-2 positions h+1..t-2 with probability (k-h-1)/(t-h-2) (its uniform body); the top-k
    class holds positions 0..k-1.  Summed over classes with difference arrays, O(k d).
    """
    z = np.asarray(z, dtype=np.float64)
    d = z.size
    order = canonical_order(z)
    by_position = np.zeros(d + 1)
    if math.isinf(epsilon) or k == d:
        by_position[:k] = 1.0
    else:
        zs = z[order]
        norm = log_normaliser(zs, k, epsilon)
        diff = np.zeros(d + 1)
        diff[0] += math.exp(-norm)  # the top-k class: positions 0..k-1
        diff[k] -= math.exp(-norm)
        for h, t, _, logw in _class_rows(zs, k, epsilon):  # row by row: O(d) memory
            w = np.exp(logw - norm)
            mass = float(np.sum(w))
            diff[0] += mass  # positions 0..h-1
            diff[h] -= mass
            body = w * (k - h - 1.0) / np.maximum(t - h - 2.0, 1.0)  # positions h+1..t-2
            diff[h + 1] += float(np.sum(body))
            diff[t - 1] += w - body  # position t-1 (its own), minus the body's end; t distinct in a row
            diff[t] -= w
        by_position = np.cumsum(diff)
    out = np.empty(d)
    out[order] = by_position[:d]
    return out


def set_log_probability(z, k, epsilon, subset) -> float:
    """Exact log P(S = subset) (a k-subset of item indices)."""
    z = np.asarray(z, dtype=np.float64)
    order = canonical_order(z)
    position = np.empty(z.size, dtype=np.int64)
    position[order] = np.arange(z.size)
    pos = np.sort(position[np.asarray(subset, dtype=np.int64)])
    lead = int(np.sum(pos == np.arange(k)))
    if math.isinf(epsilon) or k == z.size:
        return 0.0 if lead == k else -math.inf
    zs = z[order]
    norm = log_normaliser(zs, k, epsilon)
    if lead == k:
        return -norm
    worst = int(pos[-1]) + 1
    for h, _, log_size, logw in _class_rows(zs, k, epsilon):
        if h == lead:  # a member of class (lead, worst): the class's weight over its size
            return float(logw[worst - k - 1] - norm - log_size[worst - k - 1])
    raise AssertionError("unreachable: lead < k")


def topk_diagnostics(z, k, epsilon) -> dict:
    """Curator diagnostics: exact P(true top-k), expected overlap with it, the boundary gap.

    E|S cap T| over classes: class (h, t) keeps h of the top k, and its uniform body
    draws k-h-1 of t-h-2 positions of which k-h-1 are in the top k.
    """
    z = np.asarray(z, dtype=np.float64)
    d = z.size
    order = canonical_order(z)
    zs = z[order]
    gap = float(zs[k - 1] - zs[k]) if k < d else math.inf
    if math.isinf(epsilon) or k == d:
        return {"probability_true_topk": 1.0, "expected_overlap_with_true_topk": float(k),
                "gap_k_to_k_plus_1_in_sensitivity_units": gap}
    norm = log_normaliser(zs, k, epsilon)
    logp_top = -norm
    expected = math.exp(logp_top) * k
    for h, t, _, logw in _class_rows(zs, k, epsilon):  # row by row: O(d) memory
        overlap = h + (k - h - 1.0) ** 2 / (t - h - 2.0).clip(min=1)
        expected += float(np.sum(np.exp(logw - norm) * overlap))
    return {"probability_true_topk": math.exp(logp_top), "expected_overlap_with_true_topk": expected,
            "gap_k_to_k_plus_1_in_sensitivity_units": gap}
