"""When ``top_r`` and ``mistakes`` score every support: the exact path's cost rule.

The certified best-subset methods have two paths to the same list of best supports: score
every one of the C(p, s) supports exactly (the *exact path*: no solver slack, no ridge
needed, ordinary least-squares best subset at ``epsilon=inf``), or certify the list with
the MIP engine (:mod:`dpstats.bss.engine`).  Scoring takes a time that is known in advance
from the problem's size alone, while the engine's time depends on the data and grows
quickly as the ridge becomes small; so the exact path runs whenever its estimated time is
within a stated budget.

The rule (``max_enumerate=None``, the default).  Score every support when

    C(p, s) * seconds_per_support(loss, n, s) + setup(loss, n, p)  <=  EXACT_PATH_SECONDS

and the supports, with the statistics they are scored from, fit in
:data:`EXACT_PATH_BYTES` (:func:`enumeration_bytes`, the memory plan of
:func:`dpstats.bss.enumeration.check_enumeration_memory`).  An integer ``max_enumerate``
is the user's override and means a count, as before: every support is scored when
C(p, s) <= max_enumerate.

Public inputs only.  The path decides the split of the budget (solver slack or not), the
default radius and ridge and what the ledger says, so it must not depend on data values:
the rule reads n (the input row count, public under replace-one neighbours), p (the number
of terms of the formula), s and the loss, and constants measured once
(benchmarks/bench_exact_cost.py).  Neighbouring data sets therefore always take the same
path, and a machine's speed or load never changes it either: the seconds are estimates on
a reference machine, not a clock.

The constants (reference: one thread of the 2-core machine of benchmarks/README.md):

* squared loss: (0.1 + 0.04 s^2) microseconds per support (a batched Cholesky solve, and
  the ball multiplier's Newton solve on Cholesky factors where the minimiser leaves the
  ball: the constants fit the worst case, the ball active on every support, which costs
  five times the inactive case; whatever n: the scores come from the p x p statistics).
  Until 2026-11-26 every support took a batched eigendecomposition, (0.5 + 0.4 s +
  0.08 s^2) microseconds.  Where the engine works
  matrix-free (p > MATRIX_FREE_ABOVE) the exact path has to form those statistics itself:
  n p^2 multiply-adds at :data:`GRAM_RATE` are added to its time and 8 p^2 bytes to its memory.
* hinge loss: a certified convex solve per support over the n rows,
  3.5 n (1 + (n / 4000)^2) (s + 3) / 6 microseconds (more iterations per solve as n grows,
  since the certified gap is absolute).

The measurements behind them are in benchmarks/README.md ("bench_exact_cost.py").

With :data:`EXACT_PATH_SECONDS` = 2: the squared loss scores about 4.3 million supports
at s = 3 (all of C(91, 3) = 121,485 in about a twentieth of a second), 1.8 million at s = 5
and 490,000 at s = 10; the hinge loss about 1,100 supports at n = 500 and 230 at n = 2000 (s = 3).
"""
from __future__ import annotations

import math

from .enumeration import enumeration_bytes, n_supports
from .losses import MATRIX_FREE_ABOVE

#: Budget of the exact path: the estimated seconds of scoring every support, on the reference
#: machine, below which ``top_r`` and ``mistakes`` score every support instead of certifying.
#: The engine certifies most problems just above this size in 0.5 to a few seconds at the
#: papers' ridge and much more slowly at small ridges (benchmarks/README.md), while
#: scoring is exact (no slack, no ridge) and its time is known in advance.
EXACT_PATH_SECONDS = 2.0
#: Memory the exact path may hold at once by default (supports, values and order; plus the
#: p x p statistics where the engine would not form them).
EXACT_PATH_BYTES = 1 << 30
#: Squared loss: microseconds per scored support, a + b s + c s^2.
SQUARED_US_PER_SUPPORT = (0.1, 0.0, 0.04)
#: Hinge loss: microseconds per scored support and row, with the growth in n and s above.
HINGE_US_PER_ROW = 3.5
HINGE_ROWS_SCALE = 4000.0
#: Multiply-adds per second of forming the p x p statistics (blocked SYRK, one thread:
#: about 1.8e10 measured, rounded down).
GRAM_RATE = 1e10


def seconds_per_support(loss, n, s) -> float:
    """Estimated seconds to score one support of ``s`` terms with ``loss`` on ``n`` rows."""
    if loss.slack_on_every_path:  # the hinge loss: a certified solve over the rows
        n = float(n)
        return 1e-6 * HINGE_US_PER_ROW * n * (1.0 + (n / HINGE_ROWS_SCALE) ** 2) * (s + 3) / 6.0
    a, b, c = SQUARED_US_PER_SUPPORT
    return 1e-6 * (a + b * s + c * s * s)


def _needs_own_statistics(loss, p) -> bool:
    """The squared loss's scores need the p x p statistics; the engine forms them only up to
    MATRIX_FREE_ABOVE columns, so above it they are the exact path's own cost."""
    return not loss.slack_on_every_path and p > MATRIX_FREE_ABOVE


def scoring_seconds(loss, n, p, s) -> float:
    """Estimated seconds of scoring every support (inf when C(p, s) is astronomically large)."""
    count = n_supports(p, s)
    if count is None:
        return math.inf
    setup = float(n) * float(p) ** 2 / GRAM_RATE if _needs_own_statistics(loss, p) else 0.0
    return count * seconds_per_support(loss, n, s) + setup


def scoring_bytes(loss, p, s) -> float:
    """Memory of scoring every support: the enumeration's plan, plus the p x p statistics
    where the exact path forms them itself (inf when C(p, s) is astronomically large)."""
    count = n_supports(p, s)
    if count is None:
        return math.inf
    return enumeration_bytes(count, s) + (8.0 * p * p if _needs_own_statistics(loss, p) else 0.0)


def within_budget(loss, n, p, s) -> bool:
    """The cost rule: every support is scored when its estimated time and memory are within
    :data:`EXACT_PATH_SECONDS` and :data:`EXACT_PATH_BYTES`.  Public inputs only."""
    count = n_supports(p, s)
    return count is not None and count <= exact_path_limit(loss, n, p, s)


def exact_path_limit(loss, n, p, s) -> int:
    """The ``max_enumerate`` the cost rule amounts to at (n, p, s): the largest count of
    supports of size ``s`` it scores (0 when even the setup exceeds the budget)."""
    setup = float(n) * float(p) ** 2 / GRAM_RATE if _needs_own_statistics(loss, p) else 0.0
    by_time = (EXACT_PATH_SECONDS - setup) / seconds_per_support(loss, n, s)
    by_memory = (EXACT_PATH_BYTES - (8.0 * p * p if _needs_own_statistics(loss, p) else 0.0)) \
        / enumeration_bytes(1, s)
    return max(0, int(math.floor(min(by_time, by_memory))))
