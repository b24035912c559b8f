"""Follow-up queries on a selection's data: recorded on the selection's own ledger.

A :class:`~dpstats.results.SelectionResult` can read the data of its selection again
(``fit.estimate(...)`` on the kept data, or with ``data=``): whoever holds the result holds
a query on the data.  Every such query is therefore recorded on the result itself, whether
or not an accountant is attached, so that ``fit.ledger``, ``fit.epsilon_spent``,
``fit.release()["ledger"]`` and the summary show the total privacy loss on the data through
this result (docs/privacy.md, "Follow-up queries draw on the same budget"):

* each ledger entry of the follow-up's own :class:`~dpstats.estimation.EstimateResult` is
  appended to the selection's ledger, its mechanism prefixed ``"follow-up estimate: "`` and
  its details numbered (``details["follow_up"]`` = 1, 2, ... per call).  What the follow-up
  released is in the estimate's own ``release()``, not in the selection's: the selection's
  copy of the entry keeps the epsilon, delta, relation, caveats and public details and drops
  the released values, so publishing ``fit.release()`` publishes no more than it did;
* a follow-up that fails after its charge (the data may have been read) is recorded in full,
  as its accountant keeps the charge;
* a refused follow-up (an argument, the budget, the data's schema) records nothing;
* ``dp_select(..., estimate=share)`` records its estimate as part of the call (no prefix,
  charged once) -- it is not a follow-up.

The selection's own epsilon (Zrnic and Jordan's correction, the estimate's notes) is the
total of the entries that are not follow-ups: :func:`selection_ledger`.

A pickled result does not carry its selection's accountant: a copy that charged a copy of
it could overspend the shared budget (each copy's budget would look untouched).  The
accountant stays with the original result, and the unpickled copy refuses ``estimate``
without ``accountant=`` (:func:`check_accountant`).  ``copy.copy`` and ``copy.deepcopy``
in the same process share the accountant object instead.
"""
from __future__ import annotations

import dataclasses

from ..errors import InvalidArgumentError
from ..privacy.ledger import Ledger, LedgerEntry

#: The label of a follow-up query's entries in the selection's ledger.
FOLLOW_UP_PREFIX = "follow-up estimate: "
#: ``details`` key numbering the follow-up queries of one result (1, 2, ...).
FOLLOW_UP_KEY = "follow_up"
#: ``_refit`` key set on an unpickled result whose selection was charged to an accountant.
ACCOUNTANT_LEFT_BEHIND = "accountant_left_behind"
#: In a follow-up entry's details: where its released values are.
RELEASED_ELSEWHERE = "in the estimate's own release(), not in this selection's release()"


def is_follow_up(entry: LedgerEntry) -> bool:
    """Whether a ledger entry records a follow-up query (not the selection's own call)."""
    return isinstance(entry.details, dict) and FOLLOW_UP_KEY in entry.details


def selection_ledger(ledger: Ledger) -> Ledger:
    """The entries of the call itself (the selection, and the estimate of ``estimate=share``)."""
    return Ledger([e for e in ledger.entries if not is_follow_up(e)], caveats=list(ledger.caveats))


def follow_up_entries(ledger: Ledger) -> list:
    """The entries recorded by follow-up queries, oldest first."""
    return [e for e in ledger.entries if is_follow_up(e)]


def _next_number(ledger: Ledger) -> int:
    return 1 + max((int(e.details[FOLLOW_UP_KEY]) for e in ledger.entries if is_follow_up(e)), default=0)


def record(fit, entries, caveats=()) -> None:
    """Append a successful follow-up's ledger ``entries`` to ``fit``'s ledger (labelled, numbered);
    ``caveats``: the follow-up ledger's own caveats (e.g. a seeded call), kept on each entry."""
    ledger = getattr(fit, "ledger", None)
    if not isinstance(ledger, Ledger):
        return
    number = _next_number(ledger)
    for entry in entries:
        extra = tuple(c for c in caveats if c not in entry.caveats and c not in ledger.caveats)
        details = {FOLLOW_UP_KEY: number, **entry.details, "released": RELEASED_ELSEWHERE}
        ledger.add(dataclasses.replace(entry, mechanism=FOLLOW_UP_PREFIX + entry.mechanism,
                                       caveats=tuple(entry.caveats) + extra, released={}, details=details))


def record_failure(fit, *, method, epsilon, delta, neighbours) -> None:
    """Record a follow-up that failed after its charge: the whole (epsilon, delta), nothing released."""
    ledger = getattr(fit, "ledger", None)
    if not isinstance(ledger, Ledger):
        return
    ledger.add(LedgerEntry(
        mechanism=f"{FOLLOW_UP_PREFIX}estimate(method={method!r}) stopped after its charge (charged in full, "
                  "nothing released)",
        epsilon=epsilon, delta=delta, neighbours=neighbours,
        details={FOLLOW_UP_KEY: _next_number(ledger), "released": "nothing"}))


def check_accountant(ctx, accountant, prepaid) -> None:
    """Refuse, before anything is read or charged, a follow-up on an unpickled result whose
    selection's accountant stayed with the original result, unless ``accountant=`` is given; and one
    that passes another accountant than the one its selection holds (the kept data's budget is that
    one: charging another instead would read the data past its cap)."""
    own = ctx.get("accountant")
    if accountant is not None and not prepaid and own is not None and accountant is not own:
        raise InvalidArgumentError(
            "accountant=: this selection was charged to an Accountant, and follow-up queries on its data draw on "
            "that budget. Leave accountant= out (or pass that same Accountant). Nothing was read or charged.")
    if accountant is None and not prepaid and ctx.get(ACCOUNTANT_LEFT_BEHIND):
        raise InvalidArgumentError(
            "this result was unpickled, and its selection was charged to an Accountant that stayed with the "
            "original result: a pickle never carries a copy of it, which could be charged beyond the shared budget. "
            "Pass accountant=: the same Accountant object, in the process that holds the original, or a new one for "
            "this data set. Nothing was read or charged.")
