"""The stated sensitivity of the best-subset score is a maximum, not just an upper bound.

The score (dpstats.bss.objective, spec 01 sections 1.2, 1.3 and 1.10) is
R(S; D) = min_{||b||_2 <= r} sum_i (y_i - x_i,S'b)^2. Data are mapped to |x_ij| <= 1 and |y_i| <= 1.
The stated sensitivity is Delta = (1 + r sqrt(s))^2 with no intercept, and
(1 + r sqrt(s + v^2))^2 with the centred intercept (a forced constant column of value v = 1/2 inside
the ball). The exponential mechanism uses exp(-eps R / (2 Delta)), so its privacy loss is
bounded by eps (max_S d(S) - min_S d(S)) / (2 Delta), where d(S) = R(S; D') - R(S; D).
An audit on ordinary data found max |d| at only 0.44-0.65 of Delta. The constructions below show
that this gap comes from the data the audit used. The worst case over data sets reaches Delta
exactly, with n about 17 (no intercept) or 33 (centred).

Derivation (no intercept; s = 2, r = 1, B = 1 + r sqrt(s) = 1 + sqrt(2), Delta = B^2)
--------------------------------------------------------------------------------
Let u = (1, 1) / sqrt(2) be a point on the ball's boundary, aligned with the corner x = (1, 1).
A row (x, y) has residual y - x'u. Its loss has gradient -2 (y - x'u) x in b.

* Common rows (t, t), y = 1, with t = 1 / (2 sqrt 2): their fit at u is 1/2, so each residual
  is 1/2, each loss is 1/4, and each gradient is -(t, t) = -u / 2.
  KKT for the ball: grad f(u) = -2 mu u with mu >= 0. Each such row adds 1/4 to mu.
  So k rows pin the minimiser at u with multiplier k/4. The fit wants b1 + b2 = 2 sqrt 2 > sqrt 2.
  Rows (1, -1), y = 0 have residual 0 and gradient 0. They only make X_S of full rank.
* Old row: x = (1/sqrt 2, 1/sqrt 2), y = 1. Its residual at u is 0.
  New row: x = (1, 1), y = -1. Its residual is -1 - sqrt 2 = -B, so its loss is exactly Delta.
  Its gradient is 2 B (1, 1) = 2 B sqrt(2) u. It pulls b inward, which lowers the multiplier
  by B sqrt 2 = 2 + sqrt 2.
* Hence, if k/4 >= 2 + sqrt 2 (k >= 14), u still satisfies KKT on D'. The problem is convex,
  so u is still the minimiser, and R(S; D') - R(S; D) = Delta - 0 = Delta exactly. With
  k = 13 the multiplier runs out and the ratio falls just below 1.
  In general the ball pins b* = r sign(x) / sqrt(s) once the common rows' multiplier is at
  least B sqrt(s) / r. The only requirements are that the old row fits exactly and the new row
  sits at the aligned corner with the opposite response sign. The supremum is therefore
  attained at finite n. It does not need n -> oo.
  Pinning by curvature instead (mu = 0 on D; rows that fit u exactly) gives
  1 - ratio ~ 6 / n (0.60, 0.89, 0.94, 0.97, 0.985 at n = 10, 50, 100, 200, 400).
* The range 2 Delta: columns 3, 4 repeat columns 1, 2 in the common rows. The old row is
  (1/sqrt2, 1/sqrt2, -1, -1), y = 1, and the new row is (1, 1, -1/sqrt2, -1/sqrt2), y = -1.
  Then S1 = {1, 2} gains Delta, as above. S2 = {3, 4} is the same construction with D and D'
  swapped: the old row has residual +B there, the new row has residual 0, and the old row's
  pull is again 2 + sqrt 2 <= k/4. So S2 loses exactly Delta and max d - min d = 2 Delta.
  Rows (0, 0, 1/sqrt2, 1/sqrt2), y = 1 leave both KKT systems unchanged, because they have
  gradient 0 on S1 and residual 0 on S2. They make S2 the best support of D, which puts the
  exponential mechanism's mass there. The mechanism's realised log-ratio on S1 then tends to
  eps/2 + eps/2 = eps. Neither Delta nor the factor 2 in exp(-eps R / (2 Delta)) has slack
  under replace-one.

Centred intercept (v = 1/2, Delta = (1 + sqrt(2 + 1/4))^2 = 6.25 at s = 2, r = 1)
------------------------------------------------------------------------------
Here w = (v, 1, 1) and u = w / ||w|| = (1/3, 2/3, 2/3). The argument is the same:
* The new row is (v, 1, 1), y = -1. Its fit is 3/2, its residual is -5/2, and its pull on
  the multiplier is 2 (5/2) (3/2) / 2 = 15/4.
* The common rows form blocks of 9 rows (v, .5, .5), y = 1 (residual 1/6) and 1 row
  (v, -.5, -.5), y = -1 (residual -1/2). Each block adds (v, 1, 1) to the sum of r_i x_i,
  which gives mu = 3/2. Three blocks pin u.
* The old row is (v, -7/8, -7/8, 1, 1), y = -1. The new row is (v, 1, 1, -7/8, -7/8), y = -1.
  Each of them fits exactly on one of S1, S2 and has residual -5/2 on the other.
"""
import itertools
import math

import numpy as np
import pytest

from dpstats.bss.intercept import in_ball_sensitivity
from dpstats.bss.objective import RidgeBallObjective, SufficientStats, least_squares_sensitivity
from dpstats.mechanisms.exponential import exponential_log_probabilities

R_BALL, S = 1.0, 2
A = 1 / math.sqrt(2)
T = A / 2  # common rows (T, T), y = 1: fit 1/2 at u, multiplier 1/4 each
SUPPORTS = np.array(list(itertools.combinations(range(4), S)))  # rows 0 = {1, 2}, 5 = {3, 4}


def _values(X, y, v=None):
    """The package's R(S) for every support of size S: ridge 0, radius 1, forced column v if given."""
    X = np.asarray(X, dtype=np.float64)
    if v is not None:
        X = np.hstack([np.full((X.shape[0], 1), v), X])
    stats = SufficientStats.from_arrays(X, np.asarray(y, dtype=np.float64), intercept=v is not None)
    objective = RidgeBallObjective(stats, 0.0, R_BALL)
    return objective.values(objective.full_support(stats.candidates[SUPPORTS]))


def _pair(common, old, new):
    X = np.array([row for row, _ in common + [old]], dtype=np.float64)
    y = np.array([resp for _, resp in common + [old]], dtype=np.float64)
    X2, y2 = X.copy(), y.copy()
    X2[-1], y2[-1] = new
    return X, y, X2, y2


def _no_intercept_pair(k, tilt=0):
    common = ([([T] * 4, 1.0)] * k + [([1.0, -1.0, 1.0, -1.0], 0.0)] * 2
              + [([0.0, 0.0, A, A], 1.0)] * tilt)
    return _pair(common, ([A, A, -1.0, -1.0], 1.0), ([1.0, 1.0, -A, -A], -1.0))


def _centred_pair(blocks):
    block = [([0.5] * 4, 1.0)] * 9 + [([-0.5] * 4, -1.0)]
    common = block * blocks + [([1.0, -1.0, 1.0, -1.0], 1 / 6)] * 2
    return _pair(common, ([-7 / 8, -7 / 8, 1.0, 1.0], -1.0), ([1.0, 1.0, -7 / 8, -7 / 8], -1.0))


def test_no_intercept_sensitivity_and_range_are_attained():
    delta = least_squares_sensitivity(1.0, 1.0, R_BALL, S)
    assert delta == pytest.approx((1 + math.sqrt(2)) ** 2)
    k = 14
    X, y, X2, y2 = _no_intercept_pair(k)
    before, after = _values(X, y), _values(X2, y2)
    # closed forms (the minimiser stays at u = (1, 1)/sqrt 2 by the KKT argument)
    assert before[0] == pytest.approx(k / 4, rel=1e-12)
    assert after[0] == pytest.approx(k / 4 + delta, rel=1e-12)
    assert after[5] == pytest.approx(k / 4, rel=1e-12)
    d = after - before
    ratio = np.max(np.abs(d)) / delta
    spread = (d.max() - d.min()) / (2 * delta)
    assert 0.95 <= ratio <= 1 + 1e-9
    assert 0.95 <= spread <= 1 + 1e-9
    assert ratio == pytest.approx(1.0, abs=1e-9) and spread == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("k, exact", [(13, False), (14, True)])
def test_the_ball_pins_the_minimiser_exactly_when_its_multiplier_suffices(k, exact):
    # k / 4 >= 2 + sqrt 2 holds for k >= 14 and fails for k = 13
    X, y, X2, y2 = _no_intercept_pair(k)
    ratio = np.max(np.abs(_values(X2, y2) - _values(X, y))) / least_squares_sensitivity(1.0, 1.0, R_BALL, S)
    assert ratio <= 1 + 1e-9
    assert (abs(ratio - 1) < 1e-9) == exact
    assert ratio > 0.99


def test_centred_intercept_sensitivity_and_range_are_attained():
    delta = in_ball_sensitivity(1.0, 1.0, R_BALL, S)
    assert delta == pytest.approx(6.25)
    blocks = 3
    X, y, X2, y2 = _centred_pair(blocks)
    before, after = _values(X, y, v=0.5), _values(X2, y2, v=0.5)
    assert before[0] == pytest.approx(blocks / 2, rel=1e-12)  # per block: 9 (1/6)^2 + (1/2)^2
    assert after[0] == pytest.approx(blocks / 2 + delta, rel=1e-12)
    d = after - before
    ratio = np.max(np.abs(d)) / delta
    spread = (d.max() - d.min()) / (2 * delta)
    assert 0.95 <= ratio <= 1 + 1e-9
    assert 0.95 <= spread <= 1 + 1e-9


def test_exponential_mechanism_privacy_loss_reaches_epsilon():
    # Tilt rows make S2 = {3, 4} the best support of D. The log-ratio at S1 is then about
    # eps/2 + eps/2, so with Delta / 2 in the sensitivity the mechanism would break eps-DP here.
    delta = least_squares_sensitivity(1.0, 1.0, R_BALL, S)
    X, y, X2, y2 = _no_intercept_pair(20, tilt=40)
    before, after = _values(X, y), _values(X2, y2)
    d = after - before
    assert d[0] == pytest.approx(delta, rel=1e-9) and d[5] == pytest.approx(-delta, rel=1e-9)
    eps = 10.0

    def loss(sensitivity):
        return np.max(np.abs(exponential_log_probabilities(before, eps, sensitivity)
                             - exponential_log_probabilities(after, eps, sensitivity)))

    assert 0.95 * eps <= loss(delta) <= eps * (1 + 1e-9)
    assert loss(delta / 2) > 1.5 * eps
