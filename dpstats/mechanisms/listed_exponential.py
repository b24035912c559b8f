"""The exponential mechanism over outputs given as groups of scored lists with uniform tails.

Privacy statement
-----------------
The outputs are partitioned into groups g = 1..G (for example the supports of each size).
Group g consists of R_g *listed* outputs o_{g,1..R_g} with losses L_{g,k}(D) and a *tail* of
m_g >= 0 further outputs that all carry one loss T_g(D); every output of group g has the same
public log base weight b_g.  Let Lhat(o; D) be the loss so assigned to every output (listed or
tail).  Drawing o with

    P(o) proportional to exp(b_g - epsilon * Lhat(o; D) / (2 Delta))

is epsilon-DP whenever ``|Lhat(o; D) - Lhat(o; D')| <= Delta`` for every output o and
neighbours D, D': it is the exponential mechanism with the public base measure exp(b_g)
(McSherry and Talwar 2007), whose numerator moves by at most exp(epsilon/2) and whose
normaliser moves by at most exp(epsilon/2).  The condition is on Lhat as a function on
*all* outputs: which outputs are listed may depend on the data (a certified top-R list per
group, with the tail scored by the R-th value, has this property: Behdin, Prastakos and
Mazumder 2024, Lemmas A.1-A.2).

Sampling is done on the sum_g (R_g + [m_g > 0]) entries with log-weights
b_g - epsilon L_{g,k} / (2 Delta) and b_g + log m_g - epsilon T_g / (2 Delta); a tail entry
stands for m_g outputs of equal probability, so the caller returns a uniform member of that
tail (e.g. uniform draws rejected while listed).  Weights stay in log space (log m_g may be
log C(10^4, 10)).

``epsilon = inf`` is the non-private limit: the listed output of smallest loss over all groups,
ties broken by the first entry in group order (tails are never chosen: in the uses here a
tail's loss is never below its group's listed losses).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp


@dataclass(frozen=True)
class ListedGroup:
    """One group of outputs: listed losses, a tail of exp(log_tail_count) outputs, a base weight."""

    losses: np.ndarray
    log_base: float = 0.0
    #: log m_g, the number of tail outputs (-inf: no tail).
    log_tail_count: float = -math.inf
    tail_loss: float = math.inf

    @property
    def has_tail(self) -> bool:
        return self.log_tail_count > -math.inf


def listed_entries(groups):
    """(group index, position) per entry; position -1 is the group's tail."""
    out = []
    for g, group in enumerate(groups):
        out += [(g, k) for k in range(len(group.losses))]
        if group.has_tail:
            out.append((g, -1))
    return out


def listed_log_weights(groups, epsilon, sensitivity) -> np.ndarray:
    """Unnormalised log-weights of the entries, in the order of :func:`listed_entries`."""
    scale = float(epsilon) / (2.0 * float(sensitivity))
    parts = []
    for group in groups:
        parts.append(group.log_base - scale * np.asarray(group.losses, dtype=np.float64))
        if group.has_tail:
            parts.append(np.array([group.log_base + group.log_tail_count - scale * group.tail_loss]))
    return np.concatenate(parts) if parts else np.zeros(0)


def listed_log_probabilities(groups, epsilon, sensitivity) -> np.ndarray:
    """Exact log P(entry) (a tail entry: the whole tail's mass); the audit oracle."""
    if math.isinf(epsilon):
        entries = listed_entries(groups)
        out = np.full(len(entries), -np.inf)
        out[_best_listed(groups, entries)] = 0.0
        return out
    logw = listed_log_weights(groups, epsilon, sensitivity)
    return logw - logsumexp(logw)


def _best_listed(groups, entries):
    losses = np.array([groups[g].losses[k] if k >= 0 else np.inf for g, k in entries], dtype=np.float64)
    return int(np.argmin(losses))  # first minimiser: group order, then list order


def sample_listed(groups, epsilon, sensitivity, rng):
    """One draw: (group index, position), position -1 for "a uniform member of the tail"."""
    entries = listed_entries(groups)
    if math.isinf(epsilon):
        return entries[_best_listed(groups, entries)]
    return entries[rng.categorical_log(listed_log_weights(groups, epsilon, sensitivity))]
