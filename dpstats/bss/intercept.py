"""The intercept of the squared-loss best-subset methods: centred by private means, or profiled.

A formula with an intercept (``y ~ .``) fits an unpenalised constant in every model.  Two
treatments are offered (option ``intercept=``; ``exponential``, ``top_r``, ``mistakes``,
``mcmc``, squared loss):

``"centred"`` (the default where it is expected to pay, see below)
    1. A share ``means_share`` (default: the rule below, 10 % to 30 %) of the selection's epsilon buys the means of
       every mapped term and of the response in one draw
       (:mod:`dpstats.mechanisms.private_means`; one ledger entry).
    2. Every row is centred with them, on the scale where each public range is [-1, 1]
       (x - m lies in [-1 - m, 1 - m]).  A term is brought back into [-1, 1] by a
       public-after-release scale, x~_ij = (x_ij - m~_j) / (1 + |m~_j|): nothing is clipped,
       so least squares sees the same column up to scale (clipping the centred terms instead
       changed real data wherever a value lies more than half a range from its mean: ordinal
       scales and counts).  The response is clipped, y~_i = clip(y_i - m~_y, -1, 1)
       (:func:`centre_response` says why it is not rescaled).
    3. The objective gets a forced constant column of value v = ``INTERCEPT_COLUMN`` (0.5)
       whose coefficient lies in the l2 ball with the others:

           R(S) = min_{||(b0, b)||_2 <= r}  ||y~ - v b0 1 - X~_S b||^2 + lam ||(b0, b)||^2.

       After centring the intercept left to fit is small (the means' noise), so the ball
       costs the fit nothing in practice, and at ``epsilon = inf`` the means are exact, the
       centred columns have mean 0 and b0 = 0 is optimal: the answer is ordinary least
       squares best subset with an intercept (on the response clipped within half a range of
       its mean, which changes nothing for a two-valued response) wherever the ball does not
       cut the fit (as for
       the profiled intercept; the scale 1 / (1 + |m|) lengthens the coefficients of
       off-centre terms, tests/test_real_data.py lists where the default radius 1 matters).

``"profiled"``
    The intercept is unpenalised, unconstrained and profiled out (centred statistics, see
    :mod:`dpstats.bss.objective`); nothing is spent on means, but the sensitivity is
    4 (b_y + b_x r sqrt(s))^2, four times that of a model without intercept.

Sensitivity of the centred objective (replace-one neighbours)
-------------------------------------------------------------
Given the released means, step 2 is a fixed row-wise map, so neighbours stay neighbours,
and every mapped row has |x~_ij| <= 1, |y~_i| <= 1 (|x - m| <= 1 + |m| for x, m in
[-1, 1]; y~ is clipped).  Let b' = (b0', b') minimise the objective on the neighbour D'.  For every row,
|v b0' + x~_iS'b'| <= ||(v, x~_iS)||_2 r <= r sqrt(s + v^2) (Cauchy-Schwarz), so each
residual lies in [-B, B] with B = 1 + r sqrt(s + v^2).  Evaluating D's objective at b' changes only record n's term:
R(S; D) <= R(S; D') + (residual of the new record)^2 - (that of the old) <= R(S; D') + B^2;
the ridge term cancels.  By symmetry

    Delta = (b_y + r sqrt(s b_x^2 + v^2))^2   with b_x = b_y = 1,

i.e. (1 + r sqrt(s + 1/4))^2: 3 % above a model without intercept at s = 5, r = 1, against
a factor 4 for the profiled intercept.  A record that becomes incomplete
(``na_action="omit"``) is the same kind of change (its residual is removed).  The
selection is epsilon_sel-DP for every value of the means, so with the means' epsilon_m the
call's selection costs epsilon_m + epsilon_sel = its selection share (basic composition).
tests/test_centred_intercept.py checks Delta by brute force and audits the composed
release.

Why v = 1/2: the needed offset is the means' error, about |e_y| + |e_x,S' b|; the ball gives
the constant column up to v r.  v = 1 (the former in-ball intercept of the papers) costs
14 % in Delta at s = 5; v = 1/2 costs 3 % and still covers offsets up to r / 2 on the
mapped scale; in a pilot (exact exponential mechanism, 8 seeds, n = 1500-3000) v = 1/2 gave
the same or higher P(best) than v = 1.

The means' share (option ``means_share=None``, :func:`default_means_share`): the share of the
selection's epsilon that brings the means' expected noise radius E||Z||_inf = (p + 1) (2 / n) /
epsilon_m to ``TARGET_NOISE_RADIUS`` = 0.2, kept within [0.1, 0.3] (public: the number of terms,
the input row count and the budget).  Why: the constant column absorbs an offset of at most v r
(1/2 at the default radius), and the means' error moves the centred response and every term at
once.  With a few terms per hundred rows the floor 0.1 applies (the radius is then below 0.2
anyway); with hundreds of terms a fixed 0.1 left radii of 0.4 to 1.7, and on some draws terms whose
own means' noise was largest stood in for the intercept.  The target and the cap come from scans
with ``plan``'s model (benchmarks/README.md, "The intercept's share"): where recovery was likely,
the best share put the radius near 0.15-0.4, and a larger share than 0.3 mostly cost the selection
more than the means gained.

The default (option ``intercept=None``): ``"centred"`` when the means' expected noise
radius at that share (public) is at most ``MAX_NOISE_RADIUS`` = 1, else ``"profiled"``.  With
a noise radius above half a public range the centring is a random shift that squeezes every
column by up to 1/2 (and the response's RSS by up to 1/4), and the factor 4 is then the
better price (a rule of thumb; the measured case, p = 30, has radius 0.16 at n = 4000).  Where the MIP engine
runs, its ridge (a computational device) also shrinks b0; with exact means the optimum is
b0 = 0 whatever the ridge.

Hinge loss: unchanged.  Its response is a class label coded -1 / +1, which no mean
centres, and its intercept already lies in a box (sensitivity 2 (1 + b_x r sqrt(s)),
linear, not squared; :mod:`dpstats.bss.hinge`).

References
----------
Hardt and Talwar (2010), the K-norm mechanism (the means).  Behdin, Prastakos and
Mazumder (2024) and Prastakos, Behdin and Mazumder (2025) put a constant column of value 1
in the ball on uncentred data; on real data that made near-constant columns act as
substitute intercepts, which the private centring removes.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import replace

import numpy as np

from .._linalg import gram
from ..errors import InvalidArgumentError
from ..mechanisms.private_means import (MAX_NOISE_RADIUS, MEANS_SHARE, centre_values, column_sums,  # noqa: F401
                                        column_sums_and_count, expected_noise_radius, means_affordable,
                                        private_means)
from ..method_options import Choice, Real
from ..privacy.bounds import ClippedData
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..sufficient_stats import SufficientStats

#: Value v of the forced constant column whose coefficient lies in the ball.
INTERCEPT_COLUMN = 0.5
#: The default means share aims the means' expected noise radius (mapped scale) at this ...
TARGET_NOISE_RADIUS = 0.2
#: ... spending at most this share of the selection's epsilon (and at least MEANS_SHARE).
MAX_MEANS_SHARE = 0.3

INTERCEPT_OPTIONS = (
    Choice("intercept", default=None, choices=("centred", "profiled"), allow_none=True,
           doc="squared loss, formula with an intercept: 'centred' (private means, then a constant column in the "
               "ball; sensitivity about that of a model without intercept) or 'profiled' (free intercept, 4 times "
               "the sensitivity); default: centred unless the means would be too noisy (dpstats.bss.intercept)"),
    Real("means_share", default=None, low=0, high=1, allow_none=True,
         doc="share of the selection's epsilon spent on the means with intercept='centred'; None: the public "
             "rule of dpstats.bss.intercept.default_means_share (0.1 to 0.3, more with more terms per row)"),
)


def check_intercept_options(options, least_squares=True):
    """Cross-option rules (public values only): a loss other than least squares (the hinge loss,
    ``least_squares=False``: :attr:`dpstats.bss.losses.Loss.least_squares`) keeps its box intercept."""
    if not least_squares and options.get("intercept") is not None:
        raise InvalidArgumentError(
            "intercept= applies to the squared loss; loss='hinge' fits its intercept in a box "
            "(help(dpstats.bss.hinge)). Leave intercept unset.")
    return options


def resolved_intercept(options, *, intercept, n, p, epsilon):
    """"centred", "profiled" or None (no intercept in the formula), from public inputs only."""
    if not intercept:
        return None
    chosen = options.get("intercept")
    if chosen is not None:
        return chosen
    share = resolved_means_share(options, n=n, p=p, epsilon=epsilon)
    return "centred" if means_affordable(p + 1, n, share * epsilon) else "profiled"


def default_means_share(d, n, epsilon) -> float:
    """The share of the selection's epsilon that brings the d means' expected noise radius
    2 d / (n share epsilon) to :data:`TARGET_NOISE_RADIUS`, within [MEANS_SHARE, MAX_MEANS_SHARE]
    (public: d, the input row count n and epsilon; module docstring, "The means' share")."""
    if math.isinf(epsilon):
        return MEANS_SHARE
    wanted = expected_noise_radius(d, n, epsilon) / TARGET_NOISE_RADIUS
    return min(MAX_MEANS_SHARE, max(MEANS_SHARE, wanted))


def resolved_means_share(options, *, n, p, epsilon) -> float:
    """The ``means_share`` given, or :func:`default_means_share` for the p + 1 means at (n, epsilon)."""
    given = options.get("means_share")
    return default_means_share(p + 1, n, epsilon) if given is None else float(given)


def in_ball_sensitivity(b_x, b_y, radius, s, v=INTERCEPT_COLUMN) -> float:
    """Delta = (b_y + r sqrt(s b_x^2 + v^2))^2: the centred objective with its constant column in the ball."""
    return (float(b_y) + float(radius) * math.sqrt(s * float(b_x) ** 2 + float(v) ** 2)) ** 2


def centre_response(y, mean):
    """clip(y - m, -1, 1): the response centred by its private mean, clipped, not rescaled.

    A scale 1 / (1 + |m|) would multiply every objective value by 1 / (1 + |m|)^2 at an
    unchanged sensitivity, i.e. spend epsilon / (1 + |m|)^2: real responses often sit near an
    end of their range (counts, rates, 0/1 outcomes: |m| of 0.7 to 0.99 on the mapped scale
    of the statsmodels data sets), which would bring back most of the profiled intercept's
    factor 4.  Clipping changes only values more than half a range from the mean, and for a
    two-valued response it is an affine map, which least squares with an intercept ignores."""
    return np.clip(np.asarray(y, dtype=np.float64) - float(mean), -1.0, 1.0)


class CentredRanges:
    """The public ranges' map to [-1, 1], then :func:`centre_values` with the released means.

    A row-wise map given the means (so it applies partition by partition on Dask)."""

    def __init__(self, base, x_means, y_mean):
        self.base = base
        self.x_means = np.asarray(x_means, dtype=np.float64)
        self.y_mean = float(y_mean)

    def map_design(self, X, in_place=False):
        return centre_values(self.base.map_design(X, in_place=in_place), self.x_means)

    def map_response(self, y):
        mapped = self.base.map_response(y)
        return None if mapped is None else centre_response(mapped, self.y_mean)

    def used(self):
        return self.base.used()

    def __getattr__(self, name):  # terms, lower, upper, ... of the public ranges
        return getattr(self.base, name)


def centre_for_intercept(data, epsilon_m, rng, *, n_input, v=INTERCEPT_COLUMN):
    """(centred data, ledger entry): the private means of ``data`` (mapped to [-1, 1]) and the
    data centred with them, with a constant column of value ``v`` in the ball.

    ``n_input`` is the public input row count: at a finite epsilon the sums over the complete rows are divided
    by it (rows omitted by ``na_action`` count as 0, and the constant column takes up the rest); at
    ``epsilon_m = inf`` by the complete rows' own count, so the means are exact."""
    if math.isinf(epsilon_m):
        *sums, complete = data.backend.sum_over_rows(data, column_sums_and_count)
        means = private_means(np.asarray(sums), complete, epsilon_m, rng)
    else:
        means = private_means(data.backend.sum_over_rows(data, column_sums), n_input, epsilon_m, rng)
    x_means, y_mean = means[:-1], float(means[-1])
    entry = LedgerEntry(
        mechanism="private means of the mapped terms and response (l-infinity K-norm mechanism), for the intercept",
        epsilon=epsilon_m, neighbours=REPLACE_ONE, released={},
        details={"columns": int(means.size), "sensitivity_linf": 2.0 / max(n_input, 1),
                 "use": f"centre and rescale every row; constant column {v:g} in the ball"})
    if data.backend.rows_in_memory:  # centred a block at a time where the values are needed
        centred = CentredRows(data, x_means, y_mean, v)
    else:  # each partition is centred as it is read
        centred = replace(data, clip=CentredRanges(data.clip, x_means, y_mean), intercept_column=v, _stats=None)
    return centred, entry


def _centred_design(X, x_means, v):
    """(centred X, the design with its constant column v first): one n x (p + 1) array filled a
    block of columns at a time, and X the view of its columns 1..p.  The values are those of
    :func:`centre_values` (an elementwise map, so blocks change no bit)."""
    from ..private_scale import column_blocks

    X = np.asarray(X, dtype=np.float64)
    x_means = np.asarray(x_means, dtype=np.float64)
    full = np.empty((X.shape[0], X.shape[1] + 1))
    full[:, 0] = v
    centred = full[:, 1:]
    for block in column_blocks(X.shape[0], X.shape[1]):
        centred[:, block] = centre_values(X[:, block], x_means[block])
    return centred, full


class CentredRows(ClippedData):
    """Rows in memory centred by the private means, without a second array the size of X.

    The mapped design stays as it is: the sign step reads its selected columns uncentred
    (``dp_select`` keeps the mapped data for it), so a centred copy beside it would hold two
    arrays the size of X (2.6 X at the peak of a top_r call at n = 10^5, p = 200; issue 46).
    The centred values (:func:`centre_values`, elementwise) are formed where they are needed
    instead: the squared loss's statistics summed over blocks of rows
    (:meth:`stats_with_intercept_column`), a support's columns (:meth:`columns`), and the whole
    centred design with its constant column only when a method reads the design itself
    (:attr:`X`, :meth:`design_with_intercept`: the matrix-free engine of wide designs).
    """

    def __init__(self, mapped: ClippedData, x_means, y_mean, v):
        values = {f.name: getattr(mapped, f.name) for f in dataclasses.fields(ClippedData)}
        values.update(X=None, y=centre_response(mapped.y, y_mean), intercept_column=v)
        self._mapped = np.asarray(mapped.X, dtype=np.float64)
        self._x_means = np.asarray(x_means, dtype=np.float64)
        self._full = None
        super().__init__(**values)

    @property
    def X(self):
        """The centred design (columns 1..p of :meth:`design_with_intercept`), built on first use."""
        return self.design_with_intercept()[:, 1:]

    @X.setter
    def X(self, value):
        if value is not None:  # only ClippedData's constructor assigns X here (None: built on first use)
            raise AttributeError("the centred design is derived from the mapped design")

    def __repr__(self):
        return f"CentredRows(n={self.n_rows}, p={self._mapped.shape[1]}, intercept_column={self.intercept_column})"

    @property
    def n_rows(self) -> int:
        return int(self._mapped.shape[0])

    def design_with_intercept(self) -> np.ndarray:
        """The constant column and the centred design in one n x (p + 1) array, built on first use."""
        if self._full is None:
            _, self._full = _centred_design(self._mapped, self._x_means, self.intercept_column)
        return self._full

    def columns(self, index) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        return centre_values(self._mapped[:, index], self._x_means[index])

    def stats_with_intercept_column(self) -> SufficientStats:
        """The statistics of (v, centred design) and y summed over blocks of rows of about
        :data:`dpstats.private_scale.BLOCK_BYTES`: the same values as the whole array's (bit for bit
        when the rows fit in one block; otherwise up to the order of the floating-point sums)."""
        if self._full is not None:
            return super().stats_with_intercept_column()
        from ..private_scale import BLOCK_BYTES

        n, p = self._mapped.shape
        step = max(1, BLOCK_BYTES // (8 * (p + 1)))
        G = np.zeros((p + 1, p + 1))
        c = np.zeros(p + 1)
        buffer = np.empty((min(step, n), p + 1))
        buffer[:, 0] = self.intercept_column
        for start in range(0, n, step):
            rows = slice(start, min(start + step, n))
            block = buffer[:rows.stop - rows.start]
            block[:, 1:] = centre_values(self._mapped[rows], self._x_means)
            G += gram(block)
            c += block.T @ self.y[rows]
        return SufficientStats(G=G, c=c, yy=float(self.y @ self.y), n=int(n), intercept=True)


def intercept_step(meth, options, data, epsilon, rng, *, n_input, p, least_squares=True):
    """``dp_select``'s step before a squared-loss selection: (data, epsilon left, ledger entries).

    Does nothing unless the method declares the ``intercept`` option, the loss is least squares
    (``least_squares``, the loss's own attribute), the formula has an intercept and the public
    rule picks "centred".
    """
    if "means_share" not in options or not least_squares or data is None:
        return data, epsilon, []
    mode = resolved_intercept(options, intercept=bool(getattr(data, "intercept", False)), n=n_input, p=p,
                              epsilon=epsilon)
    if mode != "centred":
        return data, epsilon, []
    if math.isinf(epsilon):
        epsilon_m, rest = math.inf, math.inf
    else:
        epsilon_m = resolved_means_share(options, n=n_input, p=p, epsilon=epsilon) * epsilon
        rest = epsilon - epsilon_m
    centred, entry = centre_for_intercept(data, epsilon_m, rng, n_input=n_input)
    return centred, rest, [entry]
