"""What the analyst is told at the call: the curator's notes that change the non-private answer.

``fit.curator`` already holds them (the ball or the ridge cutting the least-squares fit, a score
ranked differently from the correlations, the share of values each range clipped, the rows left
after ``na_action``), but an analyst who does not open ``fit.curator_report()`` would believe
the answer is least squares'.  :func:`warn_at_the_call` turns them into one
:class:`~dpstats.errors.CuratorWarning` on the curator's console (the command line prints it as
one stderr line).  It is computed from the data outside the budget, like everything in the
curator report: it never enters ``release()``, ``print(fit)`` or ``summary()``, which only say
where the curator report is.
"""
from __future__ import annotations

from .errors import CuratorWarning, warn_after_the_charge

#: A range that clips more than this share of a term's values is reported.
CLIPPED_SHARE_NOTE = 0.05
#: More than this share of input rows dropped as incomplete is reported.
DROPPED_SHARE_NOTE = 0.05


def answer_notes(curator) -> list:
    """The notes of one call's curator dict that the analyst should see at the call."""
    notes = [str(n) for n in curator.get("fit_warnings", ()) or ()]
    clipped = curator.get("share_clipped")
    if isinstance(clipped, dict):
        heavy = sorted(((v, t) for t, v in clipped.items() if v > CLIPPED_SHARE_NOTE), reverse=True)
        if heavy:
            shown = ", ".join(f"{t} {v:.0%}" for v, t in heavy[:5]) + (", ..." if len(heavy) > 5 else "")
            notes.append(f"the public ranges clip more than {CLIPPED_SHARE_NOTE:.0%} of the values of {len(heavy)} "
                         f"term(s) ({shown}): the selection sees the clipped values; check the ranges' units")
    n_in, n_ok = curator.get("rows_input"), curator.get("rows_complete")
    if isinstance(n_in, int) and n_in < 2:
        # a method whose row count is private (add/remove neighbours) runs on 0 or 1 input rows too
        notes.append(f"the data have {n_in} row{'' if n_in == 1 else 's'}: the selection is a draw from the "
                     "mechanism's noise alone")
    elif isinstance(n_in, int) and isinstance(n_ok, int) and n_in > 0 and (n_in - n_ok) / n_in > DROPPED_SHARE_NOTE:
        notes.append(f"na_action dropped {n_in - n_ok} of {n_in} rows as incomplete ({(n_in - n_ok) / n_in:.0%}): "
                     "the selection uses the complete rows only; na_action={column: value} imputes public values")
    return notes


def warn_at_the_call(method, curator, stacklevel=4):
    """One CuratorWarning listing :func:`answer_notes`, or nothing when there are none."""
    notes = answer_notes(curator)
    if notes:
        warn_after_the_charge(f"curator only, do not publish (method={method!r}): " + "; ".join(notes)
                              + ". See fit.curator_report().", CuratorWarning, stacklevel=stacklevel)
