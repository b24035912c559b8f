"""method="kendall_forward": the statistic against brute force, its sensitivity brute-forced, the exact
audit of the joint release (rounds and Laplace taus) on neighbours, sampling against the exact laws, and
epsilon = inf against an independent forward selection."""
import itertools
import math
from itertools import product

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpstats
from dpstats.mechanisms import gumbel
from dpstats.privacy.randomness import RandomSource
from dpstats.screening import kendall_forward as kf

ALPHA = 1e-4
EPS = 1.0


def brute_numerator(u, v):
    """sum_{i<j} sign(u_i - u_j) sign(v_i - v_j), pair by pair."""
    n = len(u)
    return float(sum(np.sign(u[i] - u[j]) * np.sign(v[i] - v[j]) for i in range(n) for j in range(i + 1, n)))


def brute_table(X, y, n_input):
    """The whole K matrix of (terms, response) by brute force; the response is the last index."""
    Z = np.column_stack([X, y])
    q = Z.shape[1]
    denom = n_input * (n_input - 1) / 2
    return np.array([[brute_numerator(Z[:, a], Z[:, b]) / denom for b in range(q)] for a in range(q)])


def _tied_data(gen, n, p):
    X = np.round(gen.normal(size=(n, p)), 0)  # many ties
    X[:, 0] = gen.integers(0, 2, size=n)  # a 0/1 term
    y = np.round(X[:, 1] + gen.normal(size=n), 1)
    return X, y


def test_the_numerator_equals_the_pair_sum_with_ties_and_constants():
    gen = np.random.default_rng(0)
    for _ in range(20):
        n = int(gen.integers(2, 30))
        u = np.round(gen.normal(size=n), int(gen.integers(0, 2)))
        v = np.round(gen.normal(size=n) + u, int(gen.integers(0, 2)))
        assert kf.kendall_numerator(u, v) == brute_numerator(u, v)
    assert kf.kendall_numerator(np.ones(5), np.arange(5.0)) == 0.0
    assert kf.kendall_numerator(np.arange(1.0), np.arange(1.0)) == 0.0
    big = gen.normal(size=3000)
    assert kf.kendall_numerator(big, -big) == -3000 * 2999 / 2


def test_statistic_sensitivity_by_brute_force_and_attained():
    gen = np.random.default_rng(1)
    n, p = 9, 2
    bound = kf.statistic_sensitivity(n)
    worst = 0.0
    for trial in range(4):
        X, y = _tied_data(gen, n, p)
        base = brute_table(X, y, n)
        values = [-1e300, -2.0, 0.0, 0.5, 1.0, 1e300] + list(np.unique(X))[:3]
        for i in range(n):
            for vx in product(values[:4], repeat=p):
                for vy in (-1e300, float(y[(i + 1) % n]), 1e300):
                    X2, y2 = X.copy(), y.copy()
                    X2[i], y2[i] = vx, vy
                    moved = np.abs(brute_table(X2, y2, n) - base).max()
                    worst = max(worst, moved)
                    assert moved <= bound + 1e-12
            keep = np.delete(np.arange(n), i)  # the record becomes incomplete: omitted, N stays public
            assert np.abs(brute_table(X[keep], y[keep], n) - base).max() <= bound + 1e-12
    assert worst == pytest.approx(bound)


def test_the_table_equals_brute_force():
    gen = np.random.default_rng(2)
    X, y = _tied_data(gen, 25, 4)
    table = kf.TauTable(X, y, 27)  # two input rows omitted: the denominator uses the input count
    K = brute_table(X, y, 27)
    np.testing.assert_allclose(table.with_response, K[:4, 4], atol=1e-15)
    for l in range(4):
        np.testing.assert_allclose(table.with_term(l), K[:4, l], atol=1e-15)


# ------------------------------------------------------------------ exact audit of the joint release
def _log_density(table, n_input, order, values, s, eps, scale_factor=1.0, stop=False):
    """log of the joint density of (ordered selection, released taus) on data (X, y).

    ``values``: the released taus in the order the mechanism releases them.  The rounds' betas are
    functions of the released values only, so the density is the product of the rounds' softmaxes at
    those betas and the Laplace densities of the values around the data's taus.  ``stop``: the
    ``s="auto"`` mechanism with s_max = s, the order ending with the stop when shorter than s.
    ``scale_factor`` multiplies every noise scale (Gumbel and Laplace)."""
    if stop:
        budget = kf.stopping_budget(s, eps, n_input)
    else:
        budget = kf.fixed_budget(s, eps, n_input)
    release = kf.ForwardRelease(budget=budget, stopped=stop and len(order) < s)
    beta, chosen, it, logf = np.zeros(0), [], iter(values), 0.0
    for t in range(len(order) + release.stopped):
        delta = kf.round_sensitivity(n_input, beta)
        release.betas.append(beta)
        release.sensitivities.append(delta * scale_factor)
        # the stop level is computed at the method's own scale (a public constant either way)
        release.stop_levels.append(kf.stop_level(n_input, table.d - t, budget.select[t], delta, budget.alpha)
                                   if stop and t > 0 else None)
        if t == len(order):
            break
        a = order[t]
        chosen.append(a)
        release.order = list(chosen)
        if t == s - 1:
            break
        b = budget.laplace[t] * scale_factor
        for key in [(a, l) for l in chosen] + [(a, "y")]:
            z = next(it)
            exact = table.with_response[a] if key[1] == "y" else table.with_term(a)[key[1]]
            logf += stats.laplace.logpdf(z, loc=exact, scale=b)
            release.noisy[key] = z
        beta = kf.fit_in_tau_space(kf.released_matrix(release),
                                   [release.noisy[(l, "y")] for l in chosen], True)
    return logf + kf.order_log_probability(table, release)


def _neighbours(X, y, gen, count=6):
    n = X.shape[0]
    for j in range(count):
        i = int(gen.integers(n))
        X2, y2 = X.copy(), y.copy()
        if j % 3 == 0:
            X2[i], y2[i] = 1e6, -1e6
        elif j % 3 == 1:
            X2[i], y2[i] = -X[i], -3 * y[i]
        else:
            X2[i], y2[i] = gen.normal(size=X.shape[1]), gen.normal()
        yield X2, y2
    keep = np.arange(1, n)  # row 0 incomplete: omitted
    yield X[keep], y[keep]


def _strong(gen, n, p):
    X = gen.normal(size=(n, p))
    y = X[:, 0] + 0.5 * X[:, 1] + 0.3 * gen.normal(size=n)
    return X, y


@pytest.mark.parametrize("s", [1, 2, 3])
def test_exact_audit_of_the_joint_release_on_neighbours(s):
    gen = np.random.default_rng(3)
    n, p = 12, 4
    X, y = _strong(gen, n, p)
    m = kf.released_count(s)
    worst = 0.0
    table = kf.TauTable(X, y, n)
    for trial in range(3):
        values = list(gen.normal(0.3, 0.4, size=m))
        for X2, y2 in _neighbours(X, y, gen):
            table2 = kf.TauTable(X2, y2, n)
            for order in itertools.permutations(range(p), s):
                base = _log_density(table, n, order, values, s, EPS)
                other = _log_density(table2, n, order, values, s, EPS)
                ratio = abs(base - other)
                worst = max(worst, ratio)
                assert ratio <= EPS * (1 + 1e-9)
    assert worst > 0.1 * EPS  # the audit sees the data


def _extreme_data():
    """Data whose taus sit at the extremes (a term in perfect agreement with the response, one in perfect
    disagreement), and every neighbour that replaces one record by a corner row."""
    gen = np.random.default_rng(4)
    n, p = 6, 3
    y = np.arange(n, dtype=float)
    X = np.column_stack([y, -y, gen.normal(size=n)])
    neighbours = []
    for i in range(n):
        for corner in product([-1e6, 1e6], repeat=p + 1):
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = corner[:p], corner[p]
            neighbours.append(kf.TauTable(X2, y2, n))
    return kf.TauTable(X, y, n), neighbours, n, p


def _worst_log_ratios(cases, factor, stop=False):
    """(worst log-ratio at the method's scales, worst at ``factor`` times every noise scale) over the corner
    neighbours of :func:`_extreme_data`; ``cases``: (s, released values, lengths of the orders).  Every ratio at
    the method's scales is checked against epsilon."""
    table, neighbours, n, p = _extreme_data()
    worst, worst_scaled = 0.0, 0.0
    for table2 in neighbours:
        for s, values, lengths in cases:
            for length in lengths:
                for order in itertools.permutations(range(p), length):
                    full = abs(_log_density(table, n, order, values, s, EPS, stop=stop)
                               - _log_density(table2, n, order, values, s, EPS, stop=stop))
                    assert full <= EPS * (1 + 1e-9)
                    worst = max(worst, full)
                    worst_scaled = max(worst_scaled, abs(_log_density(table, n, order, values, s, EPS, factor, stop)
                                                         - _log_density(table2, n, order, values, s, EPS, factor,
                                                                        stop)))
    return worst, worst_scaled


def test_the_audit_fails_at_half_the_sensitivity():
    # The adversarial record on data whose taus sit at the extremes: every corner row replaces every record.
    # With the method's scales the log-ratio stays within epsilon; with half of them it exceeds it (s = 1).
    worst, _ = _worst_log_ratios([(2, [1.0, 1.0], [2])], 1.0)
    worst_one, worst_half = _worst_log_ratios([(1, [], [1])], 0.5)
    assert max(worst, worst_one) > 0.5 * EPS
    assert worst_half > EPS


def test_the_rounds_sample_their_softmax_and_the_taus_their_laplace_law():
    gen = np.random.default_rng(5)
    n, p, s = 40, 5, 2
    X, y = _strong(gen, n, p)
    table = kf.TauTable(X, y, n)
    eps = 3.0
    rng = RandomSource(11)
    draws = 4000
    first = np.zeros(p)
    noise = []
    for _ in range(draws):
        rel = kf.forward_select(table, s, eps, rng)
        first[rel.order[0]] += 1
        a = rel.order[0]
        noise.append(rel.noisy[(a, a)] - table.with_term(a)[a])
        noise.append(rel.noisy[(a, "y")] - table.with_response[a])
    eps_round = (1 - kf.DEFAULT_RELEASE_SHARE) * eps / s
    law = np.exp(gumbel.noisy_max_log_probabilities(np.abs(table.with_response), eps_round,
                                                     kf.statistic_sensitivity(n)))
    keep = law * draws >= 5
    obs = np.append(first[keep], first[~keep].sum())
    exp = np.append(law[keep], law[~keep].sum()) * draws
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > ALPHA
    b = kf.statistic_sensitivity(n) * kf.released_count(s) / (kf.DEFAULT_RELEASE_SHARE * eps)
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > ALPHA
    assert stats.kstest(noise, stats.laplace(scale=b / 2).cdf).pvalue < ALPHA  # the test can fail


# ------------------------------------------------------------------ epsilon = inf
def oracle_forward(X, y, s):
    """Forward selection in tau space from the brute-force K matrix (independent of the module)."""
    n, p = X.shape
    K = brute_table(X, y, n)
    chosen = []
    for _ in range(s):
        if chosen:
            beta = np.linalg.lstsq(K[np.ix_(chosen, chosen)], K[chosen, p], rcond=None)[0]
            g = K[:p, p] - K[:p, chosen] @ beta
        else:
            g = K[:p, p].copy()
        g = np.abs(g)
        g[chosen] = -np.inf
        chosen.append(int(np.argmax(g)))
    return chosen


def test_infinite_epsilon_is_forward_selection_in_tau_space():
    gen = np.random.default_rng(6)
    for trial in range(5):
        n, p = 40, 6
        X = gen.normal(size=(n, p))
        X[:, 1] += 0.8 * X[:, 0]  # correlated terms: the fit matters
        y = X[:, 0] - X[:, 1] + 0.7 * X[:, 3] + 0.5 * gen.normal(size=n)
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
        frame["y"] = y
        fit = dpstats.dp_select("y ~ .", frame, method="kendall_forward", epsilon=math.inf, s=3, signs=False,
                                random_state=trial)
        want = oracle_forward(X, y, 3)
        assert sorted(fit.support) == sorted(f"x{j}" for j in want)
        assert fit.curator["private_selection_order"] == [f"x{j}" for j in want]


def test_infinite_epsilon_on_real_data_against_the_oracle():
    sk = pytest.importorskip("sklearn.datasets")
    data = sk.load_diabetes(as_frame=True).frame
    X = data.drop(columns="target").to_numpy(float)[:150]
    y = data["target"].to_numpy(float)[:150]
    fit = dpstats.dp_select("target ~ .", data.iloc[:150], method="kendall_forward", epsilon=math.inf, s=4,
                            signs=False)
    names = list(data.drop(columns="target").columns)
    assert fit.curator["private_selection_order"] == [names[j] for j in oracle_forward(X, y, 4)]


def test_the_fit_is_floored_and_capped_only_at_finite_epsilon():
    K = np.array([[1.0, 0.999], [0.999, 1.0]])
    rhs = np.array([0.9, -0.9])
    exact = kf.fit_in_tau_space(K, rhs, finite=False)
    np.testing.assert_allclose(K @ exact, rhs, atol=1e-9)
    capped = kf.fit_in_tau_space(K, rhs, finite=True, cap=1.0)
    assert np.abs(capped).sum() == pytest.approx(1.0)
    small = kf.fit_in_tau_space(np.eye(2), np.array([0.2, 0.1]), finite=True)
    np.testing.assert_allclose(small, [0.2, 0.1])


# ------------------------------------------------------------------ s="auto": rounds that may stop
@pytest.mark.parametrize("s_max, n, eps", [(1, 50, 1.0), (2, 50, 2.0), (4, 30, 3.0), (10, 500, 5.0)])
def test_the_stopping_budget_adds_up_to_epsilon(s_max, n, eps):
    b = kf.stopping_budget(s_max, eps, n)
    released = sum((t + 2) * kf.statistic_sensitivity(n) / b.laplace[t] for t in range(s_max - 1))
    assert sum(b.select) + released == pytest.approx(eps, rel=1e-12)
    assert b.laplace[-1] == 0.0 and b.stops
    w = kf.round_weights(s_max)
    assert np.all(np.diff(w) < 0) or s_max == 1
    for t in range(s_max - 1):  # round t spends w_t epsilon: (1 - r) of it selects, r releases its t + 2 taus
        assert b.select[t] + (t + 2) * kf.statistic_sensitivity(n) / b.laplace[t] == pytest.approx(w[t] * eps)


def test_the_stop_level_is_public_and_grows_with_the_noise():
    n, r = 200, 9
    base = kf.stop_level(n, r, math.inf, 0.0)
    assert base == pytest.approx(kf.null_sd(n) * math.sqrt(math.log(n) + 2 * math.log(r)))
    assert kf.null_sd(n) == pytest.approx(math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1))))
    # the null sd against simulation: tau-a of independent continuous columns
    gen = np.random.default_rng(0)
    taus = [kf.kendall_column(gen.normal(size=(60, 1)), gen.normal(size=60), 60)[0] for _ in range(3000)]
    assert np.std(taus) == pytest.approx(kf.null_sd(60), rel=0.06)
    beta = gumbel.gumbel_scale(0.5, 0.02)
    assert kf.stop_level(n, r, 0.5, 0.02) == pytest.approx(base + beta * (math.log(r) + math.log(1 / 0.3)))


@pytest.mark.parametrize("s_max", [2, 3])
def test_exact_audit_with_the_stop_on_neighbours(s_max):
    gen = np.random.default_rng(8)
    n, p = 12, 4
    X, y = _strong(gen, n, p)
    table = kf.TauTable(X, y, n)
    worst, stops = 0.0, []
    for trial in range(2):
        values = list(gen.normal(0.3, 0.4, size=kf.released_count(s_max)))
        for X2, y2 in _neighbours(X, y, gen):
            table2 = kf.TauTable(X2, y2, n)
            for length in range(1, s_max + 1):
                for order in itertools.permutations(range(p), length):
                    base = _log_density(table, n, order, values, s_max, EPS, stop=True)
                    other = _log_density(table2, n, order, values, s_max, EPS, stop=True)
                    worst = max(worst, abs(base - other))
                    assert abs(base - other) <= EPS * (1 + 1e-9)
                    if length < s_max:
                        stops.append(abs(base - other))
    assert worst > 0.1 * EPS  # the audit sees the data
    assert max(stops) > 0.1 * EPS  # and the outcomes that stop


def test_the_audit_with_the_stop_fails_at_a_quarter_of_the_noise():
    # The same corner rows: the stop's rounds leave the log-ratio at about 0.36 epsilon here (each round's share
    # is below epsilon and report-noisy-max rarely attains its bound), so a quarter of every noise scale is what
    # takes it past epsilon.
    worst, worst_quarter = _worst_log_ratios([(2, [1.0, 1.0], [1, 2])], 0.25, stop=True)
    assert worst > 0.3 * EPS
    assert worst_quarter > EPS


def test_the_stop_is_drawn_with_its_softmax_probability():
    # E[1{stop in round 2}] = E[P(stop | the released values)]: the draws against the exact conditional law.
    gen = np.random.default_rng(9)
    n, p = 60, 6
    X = gen.normal(size=(n, p))
    y = X[:, 0] + X[:, 1] + 0.8 * gen.normal(size=n)
    table = kf.TauTable(X, y, n)
    eps, draws = 12.0, 3000
    budget = kf.stopping_budget(3, eps, n)
    rng = RandomSource(12)
    stops, expected, var = 0, 0.0, 0.0
    for _ in range(draws):
        rel = kf.forward_select(table, 3, eps, rng, budget=budget)
        scores = np.append(np.abs(table.gradient(rel.order[:1], rel.betas[1])), rel.stop_levels[1])
        pr = float(np.exp(gumbel.noisy_max_log_probabilities(scores, budget.select[1], rel.sensitivities[1],
                                                            exclude=rel.order[:1]))[p])
        stops += int(rel.stopped and len(rel.order) == 1)
        expected += pr
        var += pr * (1 - pr)
    assert 0.1 < expected / draws < 0.9  # the stop is neither sure nor impossible here
    assert abs(stops - expected) / math.sqrt(var) < 4


def oracle_forward_stop(X, y, s_max):
    """Forward selection in tau space from the brute-force K matrix, stopping at the first round (from the second)
    whose best |g| is below sd0 sqrt(log N + 2 log r), sd0 Kendall's null sd (independent of the module)."""
    n, p = X.shape
    K = brute_table(X, y, n)
    sd0 = math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))
    chosen = []
    for t in range(s_max):
        if chosen:
            beta = np.linalg.lstsq(K[np.ix_(chosen, chosen)], K[chosen, p], rcond=None)[0]
            g = np.abs(K[:p, p] - K[:p, chosen] @ beta)
        else:
            g = np.abs(K[:p, p])
        g[chosen] = -np.inf
        if t > 0 and g.max() < sd0 * math.sqrt(math.log(n) + 2 * math.log(p - t)):
            break
        chosen.append(int(np.argmax(g)))
    return chosen


def test_infinite_epsilon_with_the_stop_against_the_oracle():
    gen = np.random.default_rng(10)
    sizes = set()
    for trial in range(8):
        n, p = 50, 7
        X = gen.normal(size=(n, p))
        k = 1 + trial % 4
        y = X[:, :k] @ np.linspace(1.0, 0.5, k) + 0.6 * gen.normal(size=n)
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
        frame["y"] = y
        fit = dpstats.dp_select("y ~ .", frame, method="kendall_forward", epsilon=math.inf, s="auto", signs=False,
                                random_state=trial)
        want = oracle_forward_stop(X, y, min(p, 10))
        assert fit.curator["private_selection_order"] == [f"x{j}" for j in want]
        assert fit.release()["s_selected"] == len(want) == len(fit.support)
        sizes.add(len(want))
    assert len(sizes) >= 3  # the rule follows the data


def test_infinite_epsilon_with_the_stop_on_real_data():
    sk = pytest.importorskip("sklearn.datasets")
    data = sk.load_diabetes(as_frame=True).frame.iloc[:150]
    names = list(data.drop(columns="target").columns)
    X, y = data[names].to_numpy(float), data["target"].to_numpy(float)
    fit = dpstats.dp_select("target ~ .", data, method="kendall_forward", epsilon=math.inf, s="auto", s_max=6,
                            signs=False)
    want = oracle_forward_stop(X, y, 6)
    assert 1 < len(want) < 6
    assert fit.curator["private_selection_order"] == [names[j] for j in want]


def test_s_auto_releases_its_size_and_charges_epsilon():
    gen = np.random.default_rng(11)
    X, y = _strong(gen, 200, 8)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(8)])
    frame["y"] = y
    acc = dpstats.Accountant(epsilon=10)
    fit = dpstats.dp_select("y ~ .", frame, method="kendall_forward", epsilon=4, s="auto", s_max=5, signs=False,
                            random_state=3, accountant=acc)
    entry = fit.ledger.entries[0]
    assert acc.spent()[0] == pytest.approx(4.0) and entry.epsilon == pytest.approx(4.0)
    assert entry.released["s_selected"] == len(fit.support) == fit.release()["s_selected"]
    assert entry.details["s_max"] == 5 and 1 <= entry.details["rounds_run"] <= 5
    assert sum(entry.details["epsilon_of_the_rounds"]) < 4.0  # the rest pays for the taus
    assert "Size chosen privately: s = " in str(fit) and "stop at a public level" in str(fit)
    assert fit.release()["call"]["size_selection"]["s_max"] == 5


@pytest.mark.parametrize("extra, match", [(dict(noise_sd=1.0), "noise_sd"), (dict(size_mechanism="joint"), "size_mechanism"),
                                          (dict(s_max=9), "s_max=9 exceeds"), (dict(s_max=0), "s_max")])
def test_s_auto_options_are_checked_before_the_charge(extra, match):
    gen = np.random.default_rng(12)
    X, y = _strong(gen, 40, 5)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)])
    frame["y"] = y
    acc = dpstats.Accountant(epsilon=10)
    with pytest.raises(dpstats.InvalidArgumentError, match=match):
        dpstats.dp_select("y ~ .", frame, method="kendall_forward", epsilon=1, s="auto", accountant=acc, **extra)
    assert acc.spent()[0] == 0


@pytest.mark.parametrize("kind", ["nan", "inf", "no complete row", "one complete row", "identical rows", "1e300"])
def test_s_auto_releases_on_bad_values(kind):
    from test_totality import _bad

    formula, d = _bad(kind)
    acc = dpstats.Accountant(epsilon=10)
    fit = dpstats.dp_select(formula, d, method="kendall_forward", epsilon=1.0, s="auto", accountant=acc,
                            random_state=0)
    assert 1 <= fit.release()["s_selected"] == len(fit.support)
    assert acc.spent()[0] == pytest.approx(1.0)


def test_size_table_names_what_an_own_size_rule_offers_instead():
    gen = np.random.default_rng(13)
    X, y = _strong(gen, 60, 5)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)])
    frame["y"] = y
    fit = dpstats.dp_select("y ~ .", frame, method="kendall_forward", epsilon=3, s="auto", random_state=1)
    with pytest.raises(dpstats.InvalidArgumentError, match="stopping its own rounds: curator_report"):
        fit.size_table()
    fixed = dpstats.dp_select("y ~ .", frame, method="kendall_forward", epsilon=3, s=2, random_state=1)
    with pytest.raises(dpstats.InvalidArgumentError, match="needs a call with s='auto'"):
        fixed.size_table()
    assert "stop levels of the rounds" in str(fit.curator_report())
