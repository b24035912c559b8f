"""What every result of a charged call shares: the ledger's totals, the release as JSON, the summary as HTML.

:class:`~dpstats.results.SelectionResult` (``dp_select``) and
:class:`~dpstats.estimation.result.EstimateResult` (``fit.estimate``) both hold a ledger, a
``release()`` of ledger-covered items and a ``summary()`` table; what follows from those
three is defined once here.
"""
from __future__ import annotations

import json


class PublishedResult:
    """Base of the results of charged calls.  A subclass defines ``ledger``, ``release()`` and ``summary()``."""

    @property
    def epsilon_spent(self) -> float:
        return self.ledger.total_epsilon

    @property
    def delta_spent(self) -> float:
        return self.ledger.total_delta

    def release_json(self, **kwargs) -> str:
        """:meth:`release` as JSON (``kwargs`` go to :func:`json.dumps`)."""
        return json.dumps(self.release(), **kwargs)

    def _repr_html_(self):
        return self.summary().as_html()
