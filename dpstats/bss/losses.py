"""The losses of the best-subset methods and their public defaults.

A bottom module of the best-subset core: methods, the API and planning read the defaults
here, never from each other.
"""
from __future__ import annotations

#: Ridge per row where the objective needs a ridge: ``ridge="auto"`` uses
#: lam = RIDGE_PER_ROW * n when a method's certified MIP engine runs, and lam = 0 where every
#: support is scored exactly (``exponential``, ``mcmc``, and ``top_r`` / ``mistakes`` when
#: C(p, s) <= max_enumerate), so that ``epsilon=inf`` there is ordinary least-squares best
#: subset.  The engine needs lam > 0 (its outer-approximation cuts have slopes
#: -(X_j'a)^2 / lam) and certifies several times faster at lam = 0.1 n than at 0.01 n on
#: the papers' design (benchmarks/README.md, bench_recovery.py --speed).  So the engine
#: keeps the papers' setting, lam = 0.1 n (100 at
#: n = 1000; Behdin, Prastakos and Mazumder 2024, section 3).  On the mapped, centred terms
#: X'X_jj = n var(x_j) <= n, so lam = 0.1 n shrinks a term that spreads over less than
#: about a third of its public range: the curator report flags it
#: (``ridge_share_of_diagonal_at_best``, ``least_squares_best_support``).  With fewer rows
#: than terms the engine's default grows to RIDGE_PER_ROW * sqrt(n p)
#: (:func:`engine_default_ridge`: its bounds need it there).  n is public
#: under replace-one neighbours, p is the formula's number of terms.
RIDGE_PER_ROW = 0.1
