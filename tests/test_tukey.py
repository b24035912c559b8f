"""The Tukey-depth mechanism (dpstats.estimation.tukey): exact audits on tiny instances,
the sampler, the depth geometry against brute force, accuracy and failure outcomes.

The brute-force oracle below never calls the module's geometry: it cuts R^d into the
cells between consecutive model coordinates, on which the depth (and so every density of
the exponential mechanism) is constant, and integrates exactly.
"""
import itertools
import math

import numpy as np
import pytest
from scipy.stats import binomtest, chisquare

from dpstats.errors import DataContentError, InvalidArgumentError, InvalidTypeError
from dpstats.estimation import tukey
from dpstats.privacy.randomness import RandomSource

ALPHA = 1e-4  # false-alarm rate of each fixed-seed distribution test


# --------------------------------------------------------------------------- oracle
def brute_depth(models, x):
    """Approximate Tukey depth straight from the definition."""
    models = np.asarray(models, dtype=float)
    best = len(models)
    for j in range(models.shape[1]):
        below = sum(1 for v in models[:, j] if v <= x[j])
        above = sum(1 for v in models[:, j] if v >= x[j])
        best = min(best, below, above)
    return best


def brute_depths(models, points):
    """:func:`brute_depth` of each row of ``points`` (the same counts, for all points at once)."""
    models, points = np.asarray(models, dtype=float), np.asarray(points, dtype=float)
    below = (models[None, :, :] <= points[:, None, :]).sum(axis=1)
    above = (models[None, :, :] >= points[:, None, :]).sum(axis=1)
    return np.minimum(np.minimum(below, above).min(axis=1), len(models))


class Cells:
    """Exact piecewise-constant integration over the cells cut by the given coordinates."""

    def __init__(self, *model_sets):
        allm = np.vstack(model_sets)
        d = allm.shape[1]
        self.edges = [np.unique(allm[:, j]) for j in range(d)]
        self.boxes = []  # (midpoint, volume, lows, highs)
        for idx in itertools.product(*[range(len(e) - 1) for e in self.edges]):
            lo = np.array([self.edges[j][i] for j, i in enumerate(idx)])
            hi = np.array([self.edges[j][i + 1] for j, i in enumerate(idx)])
            self.boxes.append(((lo + hi) / 2, float(np.prod(hi - lo)), lo, hi))

    def depths(self, models):
        return np.array([brute_depth(models, mid) for mid, _, _, _ in self.boxes])

    def volumes(self):
        return np.array([vol for _, vol, _, _ in self.boxes])


def em_cell_probabilities(models, cells, c, t):
    """P(cell) under the restricted exponential mechanism (density prop. to e^{c h} on h >= t)."""
    h = cells.depths(models)
    vol = cells.volumes()
    logmass = np.where(h >= t, c * h + np.log(vol), -np.inf)
    top = np.max(logmass)
    if not np.isfinite(top):  # empty restricted region
        return np.zeros(len(vol)), h
    mass = np.exp(logmass - top)
    return mass / mass.sum(), h


def brute_ratio(models, c, t, k):
    """R_k = V_{t-k-1} e^{c(t+k+1)} / w(S_{t+k+1}) by exact integration."""
    cells = Cells(models)
    h = cells.depths(models)
    vol = cells.volumes()
    V = vol[h >= t - k - 1].sum()
    sel = h >= t + k + 1
    if not sel.any():
        return math.inf
    log_w = np.logaddexp.reduce(c * h[sel] + np.log(vol[sel]))
    return math.exp(math.log(V) + c * (t + k + 1) - log_w)


def hockey_stick(p, q, eps):
    return float(np.sum(np.maximum(0.0, p - math.exp(eps) * q)))


def max_log_ratio(p, q, vol):
    both = (p > 0) & (q > 0)
    return float(np.max(np.log(p[both] / vol[both]) - np.log(q[both] / vol[both]))) if both.any() else -np.inf


def random_models(gen, m, d, kind):
    if kind == "normal":
        return gen.normal(size=(m, d))
    if kind == "heavy":
        return gen.standard_t(1.5, size=(m, d))
    if kind == "grid":  # ties
        return np.round(gen.normal(size=(m, d)) * 2) / 2
    raise ValueError(kind)


def substitution_pairs(seed, count):
    """Neighbouring model multisets: one model replaced (what one record does)."""
    gen = np.random.default_rng(seed)
    for i in range(count):
        d = 1 + i % 2
        m = int(gen.choice([8, 9, 10, 12, 13, 16, 20]))
        kind = ["normal", "heavy", "grid"][i % 3]
        models = random_models(gen, m, d, kind)
        other = models.copy()
        which = int(gen.integers(m))
        move = i % 4
        if move == 0:
            other[which] = gen.normal(size=d) * 3
        elif move == 1:  # far outlier
            other[which] = gen.choice([-1, 1], size=d) * 50
        elif move == 2:  # onto the median
            other[which] = np.median(models, axis=0)
        else:  # extreme model moved to the other side
            j = int(gen.integers(d))
            which = int(np.argmin(models[:, j]))
            other[which] = models[which]
            other[which, j] = np.max(models[:, j]) + gen.uniform(0.01, 2)
        yield models, other


# --------------------------------------------------------------------------- (3) geometry
def test_depth_matches_definition_including_ties_and_breakpoints():
    gen = np.random.default_rng(3)
    for m, d, kind in [(7, 1, "normal"), (10, 2, "grid"), (13, 3, "heavy"), (8, 2, "grid")]:
        models = random_models(gen, m, d, kind)
        pts = np.vstack([gen.normal(size=(200, d)) * 2, models, models[::-1] + 0.0, np.median(models, axis=0)[None]])
        got = tukey.approximate_depth(models, pts)
        want = [brute_depth(models, x) for x in pts]
        assert got.tolist() == want


def test_boxes_volumes_and_rings_match_exact_integration():
    gen = np.random.default_rng(4)
    for m, d, kind in [(8, 1, "normal"), (9, 1, "grid"), (10, 2, "normal"), (13, 2, "heavy"), (12, 2, "grid")]:
        models = random_models(gen, m, d, kind)
        proj = tukey.sorted_projections(models)
        boxes = tukey.log_box_volumes(proj)
        rings = tukey.log_ring_volumes(proj)
        cells = Cells(models)
        h, vol = cells.depths(models), cells.volumes()
        K = m // 2
        assert len(boxes) == K + 2 and len(rings) == K + 1
        for k in range(1, K + 2):
            exact = vol[h >= k].sum()
            assert np.exp(boxes[k]) == pytest.approx(exact, rel=1e-9, abs=1e-300)
        for k in range(1, K + 1):
            exact = vol[h == k].sum()
            assert np.exp(rings[k]) == pytest.approx(exact, rel=1e-9, abs=1e-300)
        # Depth-k cells lie exactly in box k minus box k+1.
        lo, hi = proj[:, :], proj[:, ::-1]
        for mid, _, _, _ in cells.boxes[:50]:
            k = brute_depth(models, mid)
            if 1 <= k:
                assert np.all(lo[:, k - 1] <= mid) and np.all(mid <= hi[:, k - 1])


def test_log_space_survives_dimension_twenty():
    gen = np.random.default_rng(5)
    models = gen.normal(size=(400, 20)) * 1e-3  # volumes near 1e-100
    proj = tukey.sorted_projections(models)
    rings = tukey.log_ring_volumes(proj)
    assert np.all(np.isfinite(rings[1:]))
    boxes = tukey.log_box_volumes(proj)
    # ln(V_k - V_{k+1}) = ln V_k + ln(1 - V_{k+1}/V_k)
    k = 50
    assert rings[k] == pytest.approx(boxes[k] + np.log1p(-np.exp(boxes[k + 1] - boxes[k])), rel=1e-10)


def test_ptr_ratios_match_exact_integration():
    gen = np.random.default_rng(6)
    for m, d in [(16, 1), (20, 2), (17, 2)]:
        models = gen.normal(size=(m, d))
        proj = tukey.sorted_projections(models)
        t = tukey.depth_floor(m)
        for c in (0.3, 2.0):
            got = tukey.ptr_log_ratios(tukey.log_box_volumes(proj), tukey.log_ring_volumes(proj), c, t)
            assert len(got) == t - 1
            for k in range(t - 1):
                want = brute_ratio(models, c, t, k)
                assert np.exp(got[k]) == pytest.approx(want, rel=1e-9)


def test_fit_models_is_lstsq_minimum_norm_per_class():
    gen = np.random.default_rng(7)
    n, d, m = 60, 4, 12
    X = gen.normal(size=(n, d))
    X[:, 3] = X[:, 2]  # singular everywhere
    y = gen.normal(size=n)
    labels = gen.integers(m, size=n)
    labels[labels == 5] = 6  # class 5 empty
    for cls, size in ((7, 1), (8, 2), (9, 3)):  # fewer rows than columns
        labels[labels == cls] = 0
        labels[np.flatnonzero(labels == 0)[:size]] = cls
    assert [int((labels == c).sum()) for c in (5, 7, 8, 9)] == [0, 1, 2, 3]
    models = tukey.fit_models(X, y, labels, m)
    for j in range(m):
        rows = labels == j
        want = np.zeros(d) if not rows.any() else np.linalg.lstsq(X[rows], y[rows], rcond=None)[0]
        np.testing.assert_allclose(models[j], want, atol=1e-10)


def test_labels_do_not_depend_on_data_values():
    a = tukey.assign_subsets(500, 17, RandomSource(11))
    b = tukey.assign_subsets(500, 17, RandomSource(11))
    assert np.array_equal(a, b) and a.min() >= 0 and a.max() < 17
    # One more record: the common rows keep their labels (the coupling of the statement).
    c = tukey.assign_subsets(501, 17, RandomSource(11))
    assert np.array_equal(c[:500], a)


# --------------------------------------------------------------------------- (1) exact audits
def test_budget_parts_sum_exactly_and_constants():
    for eps, delta in [(1.0, 1e-5), (0.3, 1e-6), (10.0, 1e-8), (7.123456789, 0.0123), (1e6, 1e-9)]:
        b = tukey.split_budget(eps, delta)
        assert math.fsum(b.epsilon_split().values()) == eps
        assert math.fsum(b.delta_split().values()) == delta
        assert b.eps_n == pytest.approx(0.05 * eps)
        assert b.eps_ptr == b.eps_em == (eps - b.eps_n) / 2
        assert b.em_coefficient == b.eps_em / 2 and b.laplace_scale == 1 / b.eps_ptr
        assert b.delta_p + b.delta_s == delta
        # An unsafe input (A <= -1) passes with probability <= delta_p.
        assert 0.5 * math.exp(-(b.ptr_threshold + 1) / b.laplace_scale) <= b.delta_p * (1 + 1e-12)
        # The published threshold is below the delta_s / (1 + e^c) that safety needs.
        assert b.log_check_threshold == pytest.approx(math.log(b.delta_s / 8) - b.em_coefficient)
        assert b.log_check_threshold <= math.log(b.delta_s) - np.logaddexp(0, b.em_coefficient)
    b = tukey.split_budget(2.0, 1e-5, choose_m=False)
    assert b.eps_n == 0 and b.eps_ptr + b.eps_em == 2.0


@pytest.mark.parametrize("epsilon", [4.0, 12.0, 30.0])
def test_exponential_mechanism_exact_audit_on_substitution_neighbours(epsilon):
    """One record changes one model: audit the exact densities of M_t on those pairs.

    Pointwise, on the common support: ln p/p' <= eps_em + ln(1 + e^{-eps_em} R_0(Theta)).
    Overall (the supports differ, so this is (eps, delta)): the hockey-stick divergence at
    eps_em is at most (1 + e^c) R_0(Theta), both ways.  Also records that the factor 1/2
    is needed (ratio beyond e^c).
    """
    b = tukey.split_budget(epsilon, 1e-3, choose_m=False)
    c, eps_em = b.em_coefficient, b.eps_em
    worst = 0.0
    checked_hs = 0
    for models, other in substitution_pairs(seed=int(epsilon * 10), count=60):
        m = len(models)
        t = tukey.depth_floor(m)
        cells = Cells(models, other)
        vol = cells.volumes()
        p, _ = em_cell_probabilities(models, cells, c, t)
        q, _ = em_cell_probabilities(other, cells, c, t)
        r0 = brute_ratio(models, c, t, 0) if t >= 2 else math.inf
        r0_other = brute_ratio(other, c, t, 0) if t >= 2 else math.inf
        bound = eps_em + math.log1p(math.exp(-eps_em) * r0)
        bound_back = eps_em + math.log1p(math.exp(-eps_em) * r0_other)
        forward, backward = max_log_ratio(p, q, vol), max_log_ratio(q, p, vol)
        assert forward <= bound + 1e-9
        assert backward <= bound_back + 1e-9
        # The same bound from Theta's side only (substitution is symmetric, (c)).
        assert backward <= bound + 1e-9
        worst = max(worst, forward, backward)
        if t >= 2:
            slack = (1 + math.exp(c)) * r0
            assert hockey_stick(p, q, eps_em) <= slack + 1e-12
            assert hockey_stick(q, p, eps_em) <= slack + 1e-12
            checked_hs += slack < 0.5
    if epsilon >= 12:
        assert checked_hs >= 10  # instances where the hockey-stick bound is not vacuous
    # The substitution is not monotone: some pair exceeds e^c, so exp(eps_em * depth)
    # (no factor 1/2) would break eps_em on the common support.
    assert worst > 1.8 * c


def _distance(models, b):
    proj = tukey.sorted_projections(models)
    t = tukey.depth_floor(len(models))
    return tukey.ptr_distance(
        tukey.log_box_volumes(proj), tukey.log_ring_volumes(proj), b.em_coefficient, t, b.log_check_threshold
    )


def test_ptr_distance_sensitivity_and_laplace_release_ratio():
    """A moves by <= 1 when one model is substituted (one record added or removed), at
    every threshold; the released A + Laplace(scale) then has log density ratio <= eps_ptr."""
    gen = np.random.default_rng(31)
    b = tukey.split_budget(8.0, 0.2, choose_m=False)
    seen = set()
    for i in range(120):
        d = 1 + i % 2
        m = int(gen.choice([20, 24, 30, 40]))
        c = float(gen.choice([0.5, 1.0, 2.0, 4.0]))
        models = random_models(gen, m, d, ["normal", "heavy"][i % 2])
        t = tukey.depth_floor(m)
        if i % 3 == 0:  # a central model goes far out
            which = int(np.argmin(np.abs(models[:, 0] - np.median(models[:, 0]))))
            new = np.full((1, d), 50.0)
        elif i % 3 == 1:
            which = int(gen.integers(m))
            new = gen.normal(size=(1, d)) * gen.choice([0.01, 1, 30])
        else:  # an extreme model goes to the median
            which = int(np.argmax(models[:, 0]))
            new = np.median(models, axis=0)[None]
        other = np.vstack([np.delete(models, which, axis=0), new])

        def ratios(mod):
            proj = tukey.sorted_projections(mod)
            return tukey.ptr_log_ratios(tukey.log_box_volumes(proj), tukey.log_ring_volumes(proj), c, t)

        r, r_other = ratios(models), ratios(other)
        # (b): R_k(Theta') <= R_{k+1}(Theta), both ways.
        assert np.all(r_other[:-1] <= r[1:] + 1e-9) and np.all(r[:-1] <= r_other[1:] + 1e-9)
        assert np.all(np.diff(r) >= -1e-12)  # R_k increases with k
        for log_tau in np.linspace(-30, 5, 60):
            a = np.flatnonzero(r <= log_tau)
            a = int(a[-1]) if a.size else -1
            a_other = np.flatnonzero(r_other <= log_tau)
            a_other = int(a_other[-1]) if a_other.size else -1
            assert abs(a - a_other) <= 1
            seen.add(abs(a - a_other))
    assert 1 in seen
    # Laplace densities centred at A and A +- 1, scale s: sup |log ratio| = 1 / s.
    s_ = b.laplace_scale
    zs = np.linspace(-5, 6, 1101)
    log_ratio = (np.abs(zs - 1) - np.abs(zs)) / s_
    assert np.max(np.abs(log_ratio)) <= b.eps_ptr + 1e-12
    # And the implemented ptr_distance is the largest k with ln R_k <= ln tau.
    proj = tukey.sorted_projections(random_models(gen, 30, 2, "normal"))
    boxes, rings = tukey.log_box_volumes(proj), tukey.log_ring_volumes(proj)
    r = tukey.ptr_log_ratios(boxes, rings, 1.0, 7)
    for log_tau in (r[0] - 1, r[2], (r[3] + r[4]) / 2, r[-1] + 1):
        want = np.flatnonzero(r <= log_tau)
        assert tukey.ptr_distance(boxes, rings, 1.0, 7, log_tau) == (int(want[-1]) if want.size else -1)


def test_ptr_release_distribution_matches_exact_pass_probability():
    """The implemented test passes an A = -1 multiset with probability 1/2 e^{-(T+1)/s}."""
    b = tukey.split_budget(3.0, 0.4, choose_m=False)
    models = np.zeros((9, 2))  # zero volumes: A = -1
    assert _distance(models, b) == -1
    p_pass = 0.5 * math.exp(-(b.ptr_threshold + 1) / b.laplace_scale)
    rng = RandomSource(41)
    trials = 4000
    passes = 0
    noisy = []
    for _ in range(trials):
        coef, status, z, _ = tukey.run_on_models(models, b, rng)
        assert status in ("ptr_failed", "empty_region") and coef is None
        passes += status == "empty_region"
        noisy.append(z)
    assert binomtest(passes, trials, p_pass).pvalue > ALPHA
    # The released value is -1 + Laplace(scale): median and mean absolute deviation.
    noisy = np.array(noisy)
    assert abs(np.median(noisy) + 1) < 0.15 * b.laplace_scale
    assert np.mean(np.abs(noisy + 1)) == pytest.approx(b.laplace_scale, rel=0.06)


# --------------------------------------------------------------------------- (2) sampler
def _sampler_instance():
    gen = np.random.default_rng(51)
    return gen.normal(size=(14, 2))


def test_sampled_levels_follow_exact_probabilities():
    models = _sampler_instance()
    m = len(models)
    c, t = 0.4, 2
    proj = tukey.sorted_projections(models)
    rings = tukey.log_ring_volumes(proj)
    cells = Cells(models)
    probs, h = em_cell_probabilities(models, cells, c, t)
    K = m // 2
    exact = np.array([probs[h == k].sum() for k in range(t, K + 1)])
    rng = RandomSource(52)
    draws = 20000
    levels = np.array([tukey.sample_level(rings, c, t, rng) for _ in range(draws)])
    counts = np.array([(levels == k).sum() for k in range(t, K + 1)])
    keep = exact * draws >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(exact[keep], exact[~keep].sum()) * draws
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > ALPHA


def test_points_are_uniform_within_their_level():
    models = _sampler_instance()
    m = len(models)
    proj = tukey.sorted_projections(models)
    # Cells cut also at the midpoints between sorted coordinates: every ring, even the top
    # box, is split into several cells of known area.
    mids = (proj[:, 1:] + proj[:, :-1]).T / 2
    cells = Cells(models, mids)
    h, vol = cells.depths(models), cells.volumes()
    rng = RandomSource(53)
    for k in (2, 4, m // 2):
        pts = np.array([tukey.sample_ring(proj, k, rng) for _ in range(6000)])
        depths = brute_depths(models, pts)
        assert set(depths.tolist()) == {k}
        assert [brute_depth(models, x) for x in pts[:50]] == depths[:50].tolist()
        in_ring = np.flatnonzero(h == k)
        counts = np.zeros(len(in_ring))
        # Each point counts in the first ring cell (closed box) that holds it, as a loop over the
        # points would, with the points of one cell found at once.
        unplaced = np.ones(len(pts), dtype=bool)
        for i, ci in enumerate(in_ring):
            _, _, lo, hi = cells.boxes[ci]
            inside = unplaced & np.all(lo <= pts, axis=1) & np.all(pts <= hi, axis=1)
            counts[i] = inside.sum()
            unplaced &= ~inside
        assert counts.sum() == len(pts)
        expected = vol[in_ring] / vol[in_ring].sum() * len(pts)
        big = expected >= 5
        obs = np.append(counts[big], counts[~big].sum())
        exp = np.append(expected[big], expected[~big].sum())
        if exp[-1] == 0:
            obs, exp = obs[:-1], exp[:-1]
        assert chisquare(obs, exp).pvalue > ALPHA


def test_whole_mechanism_depth_distribution():
    """Points from run_on_models (PTR passing) have the exact depth law of M_t."""
    gen = np.random.default_rng(54)
    m = 80
    models = gen.normal(size=(m, 1))
    b = tukey.TukeyBudget(41.2, 0.3, 0.0, 40.0, 1.2, 0.15, 0.15)  # c = 0.6, PTR passes
    t = tukey.depth_floor(m)
    cells = Cells(models)
    probs, h = em_cell_probabilities(models, cells, b.em_coefficient, t)
    rng = RandomSource(55)
    depths = []
    for _ in range(4000):
        coef, status, _, _ = tukey.run_on_models(models, b, rng)
        assert status == "released"
        depths.append(brute_depth(models, coef))
    depths = np.array(depths)
    levels = np.arange(t, m // 2 + 1)
    exact = np.array([probs[h == k].sum() for k in levels])
    counts = np.array([(depths == k).sum() for k in levels])
    assert counts.sum() == len(depths)
    keep = exact * len(depths) >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(exact[keep], exact[~keep].sum()) * len(depths)
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > ALPHA


def test_mechanism_restricts_sampling_to_the_depth_floor(monkeypatch):
    seen = []
    real = tukey.sample_level

    def spy(log_rings, c, t, rng):
        seen.append(t)
        return real(log_rings, c, t, rng)

    monkeypatch.setattr(tukey, "sample_level", spy)
    models = np.random.default_rng(56).normal(size=(80, 1))
    b = tukey.TukeyBudget(41.2, 0.3, 0.0, 40.0, 1.2, 0.15, 0.15)
    coef, status, _, t = tukey.run_on_models(models, b, RandomSource(57))
    assert status == "released" and seen == [t] == [tukey.depth_floor(80)]
    assert brute_depth(models, coef) >= t


# --------------------------------------------------------------------------- (4) accuracy
def test_huge_epsilon_large_n_is_close_to_ols():
    gen = np.random.default_rng(61)
    n = 60000
    X = np.column_stack([np.ones(n), gen.normal(size=(n, 2))])
    y = X @ np.array([1.0, 2.0, -1.0]) + gen.normal(size=n)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    res = tukey.tukey_estimate(X, y, 1e6, 1e-6, random_state=62)
    assert res.status == "released" and res.ptr_passed
    assert np.max(np.abs(res.coefficients - ols)) < 0.05
    res = tukey.tukey_estimate(X, y, 1e6, 1e-6, random_state=63, num_models=100)
    assert np.max(np.abs(res.coefficients - ols)) < 0.03


# --------------------------------------------------------------------------- (5) failures
def test_ptr_fails_with_few_models_without_exception():
    gen = np.random.default_rng(71)
    n = 300
    X = np.column_stack([np.ones(n), gen.normal(size=(n, 2))])
    y = X @ np.array([1.0, 2.0, -1.0]) + gen.normal(size=n)
    for seed in range(5):
        res = tukey.tukey_estimate(X, y, 1.0, 1e-6, random_state=seed)
        assert res.status == "ptr_failed" and res.coefficients is None and not res.released
        assert 8 <= res.num_models <= 60 and res.noisy_distance is not None
        assert res.noisy_distance <= res.ptr_threshold
    res = tukey.tukey_estimate(X[:30], y[:30], 1.0, 1e-6, random_state=1)
    assert res.status == "too_few_models" and res.coefficients is None and res.noisy_distance is None
    res = tukey.tukey_estimate(np.zeros((500, 3)), np.zeros(500), 1.0, 1e-6, random_state=2)
    assert res.coefficients is None and res.status in ("ptr_failed", "empty_region")
    res = tukey.tukey_estimate(np.zeros((0, 3)), np.zeros(0), 1.0, 1e-6, random_state=2)
    assert res.coefficients is None


def test_result_fields_and_reproducibility():
    gen = np.random.default_rng(81)
    n = 20000
    X = np.column_stack([np.ones(n), gen.normal(size=(n, 2))])
    y = X @ np.array([1.0, 2.0, -1.0]) + gen.normal(size=n)
    a = tukey.tukey_estimate(X, y, 2.0, 1e-6, random_state=5)
    b = tukey.tukey_estimate(X, y, 2.0, 1e-6, random_state=np.random.default_rng(5))
    assert a.released and np.array_equal(a.coefficients, b.coefficients) and a.seeded
    assert a.num_models == int(max(1, math.floor(a.noisy_n_lower)) // 6)
    assert a.depth_floor == (a.num_models // 2) // 2
    assert math.fsum(a.epsilon_split.values()) == 2.0 and math.fsum(a.delta_split.values()) == 1e-6
    d = a.to_dict()
    assert d["status"] == "released" and len(d["coefficients"]) == 3
    paper = tukey.tukey_estimate(X, y, 2.0, 1e-6, random_state=5, rows_per_model=3)
    assert paper.num_models == int(max(1, math.floor(paper.noisy_n_lower)) // 3)


def test_bad_arguments():
    X, y = np.ones((10, 2)), np.ones(10)
    with pytest.raises(InvalidArgumentError, match="epsilon"):
        tukey.tukey_estimate(X, y, 0.0, 1e-6)
    with pytest.raises(InvalidTypeError, match="epsilon"):
        tukey.tukey_estimate(X, y, True, 1e-6)
    with pytest.raises(InvalidArgumentError, match="delta"):
        tukey.tukey_estimate(X, y, 1.0, 0.0)
    with pytest.raises(InvalidArgumentError, match="delta"):
        tukey.tukey_estimate(X, y, 1.0, 1.0)
    with pytest.raises(InvalidArgumentError, match="num_models"):
        tukey.tukey_estimate(X, y, 1.0, 1e-6, num_models=0)
    with pytest.raises(InvalidTypeError, match="num_models"):
        tukey.tukey_estimate(X, y, 1.0, 1e-6, num_models=2.5)
    with pytest.raises(InvalidArgumentError, match="rows_per_model"):
        tukey.tukey_estimate(X, y, 1.0, 1e-6, rows_per_model=-1)
    with pytest.raises(InvalidArgumentError, match="n_share"):
        tukey.tukey_estimate(X, y, 1.0, 1e-6, n_share=1.0)
    with pytest.raises(InvalidArgumentError, match="n_failure_probability"):
        tukey.tukey_estimate(X, y, 1.0, 1e-6, n_failure_probability=0)
    with pytest.raises(InvalidArgumentError, match="y"):
        tukey.tukey_estimate(X, np.ones(9), 1.0, 1e-6)
    with pytest.raises(InvalidArgumentError, match="X"):
        tukey.tukey_estimate(np.ones(10), y, 1.0, 1e-6)
    with pytest.raises(InvalidTypeError, match="random_state"):
        tukey.tukey_estimate(X, y, 1.0, 1e-6, random_state="seed")
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(DataContentError) as info:
        tukey.tukey_estimate(bad, y, 1.0, 1e-6)
    assert "nan" not in str(info.value).lower().replace("missing", "")
