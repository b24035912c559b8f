"""Private per-term ranges (dpstats.privacy.auto_bounds): exact audit, sensitivity,
counts, sampler and usefulness on real data (docs/privacy.md, "How the mechanisms are
checked")."""
import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from dpstats.privacy import auto_bounds as ab
from dpstats.privacy.ledger import REPLACE_ONE
from dpstats.privacy.randomness import RandomSource

#: A small public grid for exact enumeration: 8 points, 28 candidate ranges.
SMALL_GRID = np.array([-10.0, -1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 100.0])
SMALL_OPTS = {"interior_steps": 1, "interior_weight": 0.25, "width_cost": 0.05}
DATA = np.array([1.5, 2.0, 3.0, 3.5, 4.0, 6.0, 7.0, 0.5, 9.0, 1.0, 2.5, 4.5])


def corner_values(grid):
    """Values a replaced record can take that move the loss most: every grid point, the
    midpoints, beyond both ends, and non-finite values."""
    mids = (grid[1:] + grid[:-1]) / 2
    return list(grid) + list(mids) + [grid[0] - 1e3, grid[-1] + 1e3, np.nan, np.inf, -np.inf]


def neighbours(x, rng, n_random=30):
    """Random replace-one neighbours, then every record moved to every corner value."""
    out = []
    for _ in range(n_random):
        i = rng.integers(len(x))
        x2 = x.copy()
        x2[i] = rng.uniform(-20, 120)
        out.append(x2)
    for i in range(len(x)):
        for v in corner_values(SMALL_GRID):
            x2 = x.copy()
            x2[i] = v
            out.append(x2)
    return out


def small_logp(x, eps, **opts):
    counts = ab.column_grid_counts(x, SMALL_GRID)[0]
    return ab.range_log_probabilities(counts, len(x), eps, SMALL_GRID, **{**SMALL_OPTS, **opts})


# ------------------------------------------------------------------ grid and counts


def test_default_grid_is_public_symmetric_and_documented():
    g = ab.default_grid()
    assert g.size == 163 and np.all(np.diff(g) > 0)
    np.testing.assert_array_equal(g, -g[::-1])
    assert 0.0 in g and g[-1] == 1e6 and g[82] == 0.01
    for v in (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 125, 300, 8e5):
        assert v in g and -v in g
    assert ab.default_grid(per_decade=3).size == 2 * (8 * 3 + 1) + 1
    with pytest.raises(ValueError):
        ab.default_grid(per_decade=7)


def test_counts_add_up_over_row_blocks():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(50, 20, 301), rng.choice(SMALL_GRID, 301), rng.exponential(3, 301)])
    X[5, 0], X[17, 1], X[40, 2], X[41, 2] = np.nan, np.inf, -np.inf, 2.0
    grid = ab.default_grid()
    full = ab.column_grid_counts(X, grid)
    labels = rng.integers(0, 4, X.shape[0])
    parts = sum(ab.column_grid_counts(X[labels == k], grid) for k in range(4))
    np.testing.assert_array_equal(full, parts)
    # The counts are what they say, and a non-finite value is in neither count.
    col = X[:, 2]
    finite = col[np.isfinite(col)]
    np.testing.assert_array_equal(full[2, 0], [(finite < g).sum() for g in grid])
    np.testing.assert_array_equal(full[2, 1], [(finite <= g).sum() for g in grid])


def brute_force_loss(x, grid, a, b, interior_weight, interior_steps, width_cost):
    """The loss of one candidate, record by record (independent of the counts)."""
    lo, hi = grid[a], grid[b]
    total = 0.0
    for v in x:
        if not (np.isfinite(v) and lo <= v <= hi):
            total += 1.0
        elif a + interior_steps < b - interior_steps and grid[a + interior_steps] < v < grid[b - interior_steps]:
            total += interior_weight
    return total + width_cost * len(x) * math.log(hi - lo)


def test_loss_from_counts_equals_record_by_record_loss():
    x = np.concatenate([DATA, [np.nan, 100.0, -10.0, 1e4]])
    for steps in (1, 2, 3):
        opts = {**SMALL_OPTS, "interior_steps": steps}
        a, b, loss = ab.range_loss(ab.column_grid_counts(x, SMALL_GRID)[0], len(x), SMALL_GRID, **opts)
        ref = [brute_force_loss(x, SMALL_GRID, i, j, **opts) for i, j in zip(a, b)]
        np.testing.assert_allclose(loss, ref, rtol=0, atol=1e-9)
    assert [tuple(p) for p in zip(*ab.candidate_pairs(SMALL_GRID.size))] == list(
        itertools.combinations(range(SMALL_GRID.size), 2))


@pytest.mark.parametrize("weight", [0.25, 1.0])
def test_loss_sensitivity_is_one_by_brute_force(weight):
    """Every record replaced by every corner value: max_(a,b) |L(D) - L(D')| <= 1, attained."""
    x = DATA.copy()
    opts = {**SMALL_OPTS, "interior_weight": weight}
    base = ab.range_loss(ab.column_grid_counts(x, SMALL_GRID)[0], len(x), SMALL_GRID, **opts)[2]
    worst = 0.0
    for x2 in neighbours(x, np.random.default_rng(1)):
        loss = ab.range_loss(ab.column_grid_counts(x2, SMALL_GRID)[0], len(x2), SMALL_GRID, **opts)[2]
        worst = max(worst, float(np.max(np.abs(loss - base))))
    assert worst <= 1.0 + 1e-12
    assert worst == pytest.approx(1.0)


# ------------------------------------------------------------------ exact audit


@pytest.mark.parametrize("eps", [0.4, 2.5])
def test_privacy_audit_one_term_random_and_adversarial_neighbours(eps):
    x = DATA.copy()
    _, _, logp = small_logp(x, eps)
    assert logp.size == 28 and np.isclose(np.exp(logp).sum(), 1.0)
    worst = 0.0
    for x2 in neighbours(x, np.random.default_rng(7)):
        _, _, logp2 = small_logp(x2, eps)
        worst = max(worst, float(np.max(np.abs(logp - logp2))))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.3 * eps  # non-vacuous: the neighbours do move the distribution


def test_privacy_audit_of_a_whole_call_composes_over_terms():
    """Three terms drawn at epsilon / 3 each; one record changes in every term.

    The output is the triple of ranges and the terms are independent, so
    max_o |log P(o | D) - log P(o | D')| is the sum over terms of the per-term maxima:
    it must stay below the call's epsilon.  joint_log_probability is checked against the
    sum on the whole enumerated product space of a smaller grid.
    """
    rng = np.random.default_rng(11)
    X = np.column_stack([DATA, DATA[::-1] * 3 - 8, np.round(DATA) - 2])
    eps = 1.5
    k = X.shape[1]

    def per_term(Xd):
        counts = ab.column_grid_counts(Xd, SMALL_GRID)
        return [small_logp(Xd[:, j], eps / k)[2] for j in range(k)], counts

    base, counts = per_term(X)
    worst = 0.0
    cases = [(i, rng.uniform(-20, 120, k)) for i in rng.integers(0, len(X), 15)]
    cases += [(i, np.array(c)) for i in (0, 5, 11) for c in itertools.product([-1e3, 0.0, 5.0, 1e3], repeat=k)]
    for i, row in cases:
        X2 = X.copy()
        X2[i] = row
        other, _ = per_term(X2)
        worst = max(worst, sum(float(np.max(np.abs(p - q))) for p, q in zip(base, other)))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.3 * eps
    # joint_log_probability = the sum, over all 28^3 outputs' marginals (checked on a sample)
    a, b = ab.candidate_pairs(SMALL_GRID.size)
    for idx in itertools.islice(itertools.product(range(28), repeat=k), 0, 28 ** 3, 997):
        ranges = [(SMALL_GRID[a[t]], SMALL_GRID[b[t]]) for t in idx]
        joint = ab.joint_log_probability(list(counts), len(X), eps, ranges, SMALL_GRID, **SMALL_OPTS)
        assert joint == pytest.approx(sum(base[j][t] for j, t in enumerate(idx)), abs=1e-9)


def test_default_grid_audit_on_a_diabetes_like_column():
    """The default grid and weights: one record moved to a corner of the grid."""
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(95, 14, 60))
    grid = ab.default_grid()
    eps = 0.8
    counts = ab.column_grid_counts(x, grid)[0]
    _, _, logp = ab.range_log_probabilities(counts, len(x), eps, grid)
    worst = 0.0
    for v in [grid[0] - 1, grid[-1] + 1, 0.0, 95.0, 1e3, np.nan]:
        for i in (0, 7):
            x2 = x.copy()
            x2[i] = v
            _, _, logp2 = ab.range_log_probabilities(ab.column_grid_counts(x2, grid)[0], len(x2), eps, grid)
            worst = max(worst, float(np.max(np.abs(logp - logp2))))
    assert 0.3 * eps < worst <= eps * (1 + 1e-9)


# ------------------------------------------------------------------ sampling


def test_sampler_follows_the_exact_distribution():
    """Chi-square goodness of fit of 12,000 draws of draw_ranges against the exact law;
    cells with expected count below 5 are pooled.  False-alarm rate 1e-3 (the seed is
    fixed, so the test is deterministic)."""
    x = DATA.copy()
    eps = 0.6
    counts = ab.column_grid_counts(x, SMALL_GRID)
    a, b, logp = small_logp(x, eps)
    prob = np.exp(logp)
    index = {(SMALL_GRID[i], SMALL_GRID[j]): t for t, (i, j) in enumerate(zip(a, b))}
    rng = RandomSource(2024)
    N = 12000
    observed = np.zeros(prob.size)
    for _ in range(N):
        (rng_range,), _ = ab.draw_ranges(counts, len(x), eps, rng, grid=SMALL_GRID, **SMALL_OPTS)
        observed[index[rng_range]] += 1
    expected = N * prob
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp_ = np.append(expected[big], expected[~big].sum())
    if exp_[-1] == 0:
        obs, exp_ = obs[:-1], exp_[:-1]
    pvalue = sps.chisquare(obs, exp_).pvalue
    assert pvalue > 1e-3, pvalue
    assert big.sum() >= 10  # the test has power: many cells are populated


def test_infinite_epsilon_is_the_minimiser_and_draws_nothing():
    x = DATA.copy()
    counts = ab.column_grid_counts(x, SMALL_GRID)
    a, b, loss = ab.range_loss(counts[0], len(x), SMALL_GRID, **SMALL_OPTS)
    best = int(np.argmin(loss))
    ranges, entries = ab.draw_ranges(counts, len(x), math.inf, RandomSource(0), grid=SMALL_GRID, **SMALL_OPTS)
    assert ranges == [(SMALL_GRID[a[best]], SMALL_GRID[b[best]])]
    assert ranges[0][0] <= x.min() and ranges[0][1] >= x.max()


# ------------------------------------------------------------------ API and ledger


def test_draw_ranges_ledger_entry():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(60, 10, 200), rng.uniform(0, 5, 200)])
    y = rng.normal(150, 60, 200)
    counts = list(ab.column_grid_counts(X)) + list(ab.column_grid_counts(y))
    ranges, entries = ab.draw_ranges(counts, 200, 0.6, RandomSource(3), names=["a", "b", "y"])
    assert len(ranges) == 3 and all(lo < hi for lo, hi in ranges)
    grid = ab.default_grid()
    assert all(lo in grid and hi in grid for lo, hi in ranges)
    (entry,) = entries
    assert entry.epsilon == 0.6 and entry.delta == 0.0 and entry.neighbours == REPLACE_ONE
    assert entry.released == {name: [lo, hi] for name, (lo, hi) in zip(["a", "b", "y"], ranges)}
    assert entry.details["epsilon_per_term"] == pytest.approx(0.2)
    assert entry.details["sensitivity"] == 1.0 and entry.details["n"] == 200
    # details are public parameters only: the same whatever the data
    _, entries2 = ab.draw_ranges(counts[::-1], 200, 0.6, RandomSource(3), names=["a", "b", "y"])
    assert entries2[0].details == entry.details
    entry.to_dict()  # serialisable


def test_invalid_arguments_are_refused():
    counts = ab.column_grid_counts(DATA, SMALL_GRID)
    with pytest.raises(ValueError):
        ab.draw_ranges(counts, len(DATA), 0.0, RandomSource(0), grid=SMALL_GRID)
    with pytest.raises(ValueError):
        ab.draw_ranges(counts, len(DATA), 1.0, RandomSource(0))  # counts are for another grid
    with pytest.raises(ValueError):
        ab.range_loss(counts[0], len(DATA), SMALL_GRID, interior_weight=1.5)
    with pytest.raises(ValueError):
        ab.range_loss(counts[0], len(DATA) - 3, SMALL_GRID)  # not the counts of n records
    with pytest.raises(ValueError):
        ab.column_grid_counts(DATA, [0.0, 0.0, 1.0])


# ------------------------------------------------------------------ curator-only helpers


def test_clipped_fractions_and_caveats():
    X = np.column_stack([np.linspace(60, 130, 100), np.linspace(0, 1, 100), np.linspace(-3, 3, 100)])
    good = [(50.0, 150.0), (0.0, 1.0), (-4.0, 4.0)]
    np.testing.assert_allclose(ab.clipped_fractions(X, good), 0.0)
    assert ab.range_caveats(X, good, ["bp", "u", "z"]) == []
    bad = [(100.0, 1e6), (-5e3, 5e3), (-1.0, 1.0)]
    fr = ab.clipped_fractions(X, bad)
    assert fr[0] == pytest.approx(0.57) and fr[1] == 0.0 and 0.6 < fr[2] < 0.7
    caveats = ab.range_caveats(X, bad, ["bp", "u", "z"])
    assert all(c.startswith("WARNING (curator only)") for c in caveats)
    assert any("'bp'" in c and "edge of the public grid" in c for c in caveats)
    assert any("'bp'" in c and "clips 57%" in c for c in caveats)
    assert any("'u'" in c and "times as wide" in c for c in caveats)
    assert any("'z'" in c and "clips" in c for c in caveats)
    np.testing.assert_allclose(ab.affine_to_unit(X[:, 0], [(60.0, 130.0)]), np.linspace(-1, 1, 100))


# ------------------------------------------------------------------ usefulness on real data


def test_diabetes_unscaled_at_epsilon_10_gives_usable_ranges():
    """Diabetes (sklearn, unscaled: 10 columns and the response, n = 442), epsilon = 10
    for the call, AUTO_RANGE_SHARE = 10 % of it for the ranges, 20 seeds.

    Criterion (fixed before looking at these seeds' draws): for every term, the median
    over seeds of the clipped fraction is at most 5 % and the median width is at most 4
    times the observed spread (max - min); over all 220 draws at most 10 % clip more than
    10 % of a term's values, at most 10 % are more than 10 times as wide as the spread,
    and none is more than 1000 times as wide (the former bounds="auto" drew b_x up to
    5.5e11 for data whose 0.95 quantile is about 250).
    """
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_diabetes(scaled=False)
    X = np.column_stack([d.data, d.target])
    n, k = X.shape
    counts = ab.column_grid_counts(X)
    budget = ab.AUTO_RANGE_SHARE * 10.0
    clipped, width = [], []
    spread = X.max(axis=0) - X.min(axis=0)
    for seed in range(20):
        ranges, _ = ab.draw_ranges(counts, n, budget, RandomSource(seed))
        clipped.append(ab.clipped_fractions(X, ranges))
        width.append(np.array([hi - lo for lo, hi in ranges]) / spread)
    clipped, width = np.array(clipped), np.array(width)
    assert np.all(np.median(clipped, axis=0) <= 0.05), np.median(clipped, axis=0)
    assert np.all(np.median(width, axis=0) <= 4.0), np.median(width, axis=0)
    assert np.mean(clipped > 0.10) <= 0.10
    assert np.mean(width > 10) <= 0.10
    assert width.max() <= 1000
