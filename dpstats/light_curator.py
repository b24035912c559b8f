"""Leaving out costly curator-only summaries in calls whose fit nobody reads.

:func:`dpstats.plan` runs hundreds of ``dp_select`` calls on simulated data and reads from
each only the returned support and the mechanism's own probability of the true support
(:func:`dpstats.planning.truth_probability`: the top-R list, the mistakes blocks and guard
branch, dp_sis's probability of the non-private top k).  Several methods spend part of such
a call on curator-only summaries that plan never reads.  Inside :func:`light_curator`:

* ``kendall``'s exact probabilities of the non-private and released sequences (one pass
  over every feature per chosen feature, about three quarters of a call at p = 1000) hold
  a note (:data:`LEFT_OUT`) instead, and its ``non_private_selection`` and
  ``round_score_gaps`` (the non-private greedy rounds) are absent, so its conditions table
  gives no probability;
* ``dp_sis``'s correlation summary (the SIS ranking by correlation and the mechanism's
  exact law against it) is absent (as on a Dask frame);
* ``top_r``'s (and ``mistakes``' top-R fallback's) margin items on the exact path
  (``tau_hat`` from the best support of every mistake block, the concentration bound
  ``bound_probability_not_best`` and ``tau_hat_needed``) and ``mistakes``'
  ``tau_hat_needed`` are absent, so the margin row of the conditions table says "not
  computed" (about a tenth of a call at p = 100, s = 3).

* the shared private sign step (stage 7 of ``dp_select``) is left out: its share of epsilon
  is still set aside before the selection, and its votes draw from the random source only
  after the selection, so the support is that of the same call outside; the fit's signs on
  the support are missing and its ledger has no sign entry (about two thirds of the CPU of
  an ``exponential`` plan with ``signs=True`` at p = 10).

The selection, its random draws and every other curator item are those of the same call
outside it; the ledger differs only by the left-out sign entry.  A user's ``dp_select`` call
never runs inside it, so its curator report is complete.

A context variable rather than an argument of ``dp_select``: only ``plan`` sets it, around
its own calls, and it stays with the thread or task that set it.  It lives here, outside
the method families, so that both ``dpstats.screening`` and ``dpstats.bss`` read it
without importing each other.
"""
from __future__ import annotations

import contextlib
import contextvars

_LIGHT = contextvars.ContextVar("dpstats_light_curator", default=False)

#: What a left-out curator item holds inside :func:`light_curator` (where it is not simply absent).
LEFT_OUT = "not computed: an internal call of dpstats.plan, which reads only the support"


def light_curator_active() -> bool:
    """True inside :func:`light_curator`."""
    return _LIGHT.get()


@contextlib.contextmanager
def light_curator():
    """Within the block, methods leave out their costly curator-only summaries (module docstring)."""
    token = _LIGHT.set(True)
    try:
        yield
    finally:
        _LIGHT.reset(token)
