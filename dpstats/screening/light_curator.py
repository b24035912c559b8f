"""Leaving out costly curator-only summaries in calls whose fit nobody reads.

:func:`dpstats.plan` runs hundreds of ``dp_select`` calls on simulated data and reads from
each only the returned support and the mechanism's own probability of the true support
(:func:`dpstats.planning.truth_probability`).  Two screening methods spend much of such a
call on curator-only summaries that plan never reads: ``kendall``'s exact probabilities of
the non-private and released sequences (one pass over every feature per chosen feature,
about three quarters of a call at p = 1000) and its non-private greedy rounds, and ``dp_sis``'s correlation summary (the SIS
ranking by correlation and the mechanism's exact law against it).  Inside
:func:`light_curator` kendall's two probabilities hold a note instead and its
``non_private_selection`` and ``round_score_gaps`` are absent (its conditions table then
gives no probability), and dp_sis's correlation items are absent (as on a Dask frame);
the selection, its random draws, the
ledger and every other curator item are those of the same call outside it.  A user's
``dp_select`` call never runs inside it, so its curator report is complete.

A context variable rather than an argument of ``dp_select``: only ``plan`` sets it, around
its own calls, and it stays with the thread or task that set it.
"""
from __future__ import annotations

import contextlib
import contextvars

_LIGHT = contextvars.ContextVar("dpstats_light_curator", default=False)

#: What a left-out curator item holds inside :func:`light_curator`.
LEFT_OUT = "not computed: an internal call of dpstats.plan, which reads only the support"


def light_curator_active() -> bool:
    """True inside :func:`light_curator`."""
    return _LIGHT.get()


@contextlib.contextmanager
def light_curator():
    """Within the block, screening methods leave out their costly curator-only summaries."""
    token = _LIGHT.set(True)
    try:
        yield
    finally:
        _LIGHT.reset(token)
