"""Progress output of long computations (curator-only).

Progress lines report objective values, bounds, gaps and counts of solves, nodes or cuts:
deterministic functions of the data, exactly like the solver statistics kept in
``fit.curator``.  They are printed only through :func:`curator_printer`, which labels
every line curator-only, so that a log captured from ``verbose=True`` cannot be mistaken
for something covered by the ledger.
"""
from __future__ import annotations

CURATOR_LABEL = "[curator only] "


def curator_printer(printer=print):
    """A print function that prefixes every line of its text with :data:`CURATOR_LABEL`."""
    def emit(text):
        printer("\n".join(CURATOR_LABEL + line for line in str(text).splitlines()))
    return emit


class Progress:
    """Readable progress of one stage of long work: done of total, elapsed, time left.

    ``update(done)`` prints at most one line per ``every`` seconds (always the last one),
    e.g. ``[curator only] [mistakes] block 3 of 7 certified, elapsed 12.4 s, about 21 s
    left``.  The estimate of the time left assumes the remaining units take as long as the
    ones done so far on average; when later units are known to be harder (mistakes blocks)
    the caller says so in ``note``.  Disabled (prints nothing) unless ``enabled``.
    """

    def __init__(self, stage, total, unit, *, enabled=True, printer=print, every=2.0, start=None, note=""):
        import time

        self._clock = time.perf_counter
        self.stage, self.total, self.unit = stage, int(total), unit
        self.enabled = bool(enabled)
        self._print = curator_printer(printer)
        self.every = float(every)
        self._own_start = self._clock()  # the rate of this stage's units
        self.start = self._own_start if start is None else start  # elapsed is shown from here (the call's start)
        self._last = -float("inf")
        self.note = note

    def update(self, done, detail=""):
        if not self.enabled or done <= 0:
            return
        now = self._clock()
        if done < self.total and now - self._last < self.every:
            return
        self._last = now
        elapsed = now - self.start
        line = f"[{self.stage}] {self.unit} {done:,} of {self.total:,}"
        if detail:
            line += f" ({detail})"
        line += f", elapsed {_duration(elapsed)}"
        if 0 < done < self.total:
            line += f", about {_duration((now - self._own_start) / done * (self.total - done))} left"
            if self.note:
                line += f" ({self.note})"
        elif done >= self.total:
            line += ", done"
        self._print(line)


def _duration(seconds):
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"
