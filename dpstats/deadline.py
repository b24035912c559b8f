"""The whole-call time limit of ``dp_select(..., time_limit=...)``.

One :class:`Deadline` is created per call from the ``time_limit`` argument and handed to
every stage (formula, materialising the design, clipping, the method, the sign step).
Long loops ask it :meth:`Deadline.check` between units of work; when the time is up it
raises :class:`~dpstats.errors.TimeLimitError`.

Why a time-out after the charge keeps the charge.  Once the data's values have been read,
whether the call finishes within the limit depends on them (a hard design takes longer to
certify).  The budget was committed before the first value was read and is not given
back: refunding it would make the time-out a free probe of the data.  The time-out itself
(one bit: finished or not, and the stage it stopped in) is *not* covered by the
mechanism's guarantee, any more than the running time of a call is.  Nothing else about
the data may leave with it: after the charge the message is the same whatever the data
hold (:func:`public_failure`: the time limit, the call, and advice planned from public
inputs), and the stage reached, the elapsed time and the work done go to the exception's
``curator`` attribute, labelled curator-only (on a neighbouring data set the same call may
have stopped at another stage, or finished).  docs/privacy.md, "Time limits", says this
for users.

Before the charge only the formula and the public schema have been used, so a time-out
there is free, says nothing about the data, and its message names the stage.
"""
from __future__ import annotations

import math
import time

from .errors import InvalidArgumentError, InvalidTypeError, SolverError, TimeLimitError
from .method_options import is_real


def check_time_limit(value):
    """Validate ``time_limit``: None (no limit) or a positive number of seconds."""
    if value is None:
        return None
    if not is_real(value):
        raise InvalidTypeError(f"time_limit must be a number of seconds or None; got {value!r}.")
    value = float(value)
    if math.isnan(value) or value <= 0:
        raise InvalidArgumentError(f"time_limit must be a positive number of seconds (or None: no limit); "
                                   f"got {value!r}.")
    return value


class Deadline:
    """A time budget for one call; ``seconds=None`` never expires.

    ``charged`` is set by ``dp_select`` once the budget is charged, so that the message
    says whether the time-out cost anything.
    """

    def __init__(self, seconds=None, *, clock=time.perf_counter):
        self.seconds = None if seconds is None else float(seconds)
        self._clock = clock
        self.start = clock()
        self.charged = False

    @classmethod
    def of(cls, value):
        """A Deadline from a Deadline, a number of seconds or None."""
        return value if isinstance(value, Deadline) else cls(value)

    @property
    def elapsed(self) -> float:
        return self._clock() - self.start

    def remaining(self) -> float:
        """Seconds left (math.inf without a limit, 0 once expired)."""
        if self.seconds is None:
            return math.inf
        return max(self.seconds - self.elapsed, 0.0)

    def expired(self) -> bool:
        return self.seconds is not None and self.elapsed > self.seconds

    def check(self, stage, reached="", advice=""):
        """Raise :class:`~dpstats.errors.TimeLimitError` if the time is up.

        ``stage`` names the work (e.g. "top_r: certifying the top-100 list"), ``reached`` how
        far it got, ``advice`` what would make it finish sooner.
        """
        if not self.expired():
            return
        text = f"time_limit={self.seconds:g} s reached during {stage} after {self.elapsed:.1f} s"
        if reached:
            text += f" ({reached})"
        text += "; nothing was released"
        text += (" and the call's budget stays charged (the data had been read; see docs/privacy.md, "
                 "'Time limits')." if self.charged else "; nothing was charged.")
        text += f" To finish in time: {advice + '; or ' if advice else ''}raise time_limit."
        error = TimeLimitError(text)
        error.curator = {"stage": stage, "reached": reached, "elapsed_seconds": self.elapsed}
        raise error


#: What ``curator`` of an exception raised after the charge holds, and why it is kept apart.
CURATOR_LABEL = ("curator only: how far the work got depends on the data (on a neighbouring data set the same "
                 "call may stop elsewhere or finish); do not release it")


def public_failure(error, *, call_label, time_limit, advice):
    """The exception to raise for a SolverError ``error`` after the charge: public text only.

    The message names the time limit, the call and ``advice`` (all planned from public
    inputs) and is the same whatever the data hold; the original message and its
    progress go to ``.curator`` (a dict labelled curator-only), never into the text.
    """
    curator = dict(getattr(error, "curator", None) or {})
    curator.update(message=str(error), label=CURATOR_LABEL)
    if isinstance(error, TimeLimitError):
        limit = ("a solver's own time limit" if time_limit is None or math.isinf(time_limit)
                 else f"time_limit={time_limit:g} s")
        text = (f"{limit} ran out in {call_label} after the budget was charged; nothing was "
                f"released and the charge stands (docs/privacy.md, 'Time limits'). To finish in time: {advice}, or "
                "raise time_limit. How far the work got is in this exception's .curator (curator only).")
        out = TimeLimitError(text)
    else:
        text = (f"{call_label} could not certify its optimisation after the budget was charged; nothing was released "
                f"and the charge stands (docs/privacy.md). To finish: {advice}. The solver's own report is in this "
                "exception's .curator (curator only).")
        out = type(error)(text) if isinstance(error, SolverError) else SolverError(text)
    out.curator = curator
    return out
