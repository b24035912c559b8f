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
