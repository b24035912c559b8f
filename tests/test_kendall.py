"""method="kendall": the statistic against scipy, tie-breaking, audits, the dp_select path."""
import math
from itertools import permutations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency, chisquare, kendalltau

import dpstats
from dpstats import Accountant
from dpstats.errors import DataError, InvalidArgumentError, InvalidTypeError
from dpstats.mechanisms.gumbel import report_noisy_max
from dpstats.privacy.ledger import ADD_REMOVE
from dpstats.privacy.randomness import RandomSource
from dpstats.screening import kendall, kendall_statistic
from dpstats.screening.kendall_statistic import KendallPanel, count_inversions

ALPHA = 1e-4  # false-alarm rate of each fixed-seed distribution test


def brute_discordant(order_x, order_v):
    """Discordant pairs of two tie-broken orders (row numbers in increasing order), pair by pair."""
    n = len(order_x)
    rx, rv = np.empty(n, dtype=int), np.empty(n, dtype=int)
    rx[np.asarray(order_x)] = np.arange(n)
    rv[np.asarray(order_v)] = np.arange(n)
    return sum(int((rx[a] - rx[b]) * (rv[a] - rv[b]) < 0) for a in range(n) for b in range(a + 1, n))


def brute_tau(order_x, order_v):
    n = len(order_x)
    return n / 2 if n < 2 else n / 2 - 2 * brute_discordant(order_x, order_v) / (n - 1)


def awkward_columns(n, gen):
    """Columns that exercise every path of the statistic: ties, constants, -0.0 against
    +0.0, distinct values that agree in all but their last bits, huge and tiny magnitudes."""
    base = gen.normal(size=n)
    ulp_steps = 1.0 + np.spacing(1.0) * gen.permutation(n)  # distinct, equal in their high bits
    zeros = np.where(gen.uniform(size=n) < 0.5, -0.0, 0.0)
    zeros[: n // 3] = gen.normal(size=n // 3)
    return np.column_stack([
        base,
        np.round(base),  # ties
        np.full(n, 3.0),  # constant
        ulp_steps,
        zeros,  # -0.0 and +0.0 are one tied value
        base * 1e300,
        base * 1e-300,
        -np.abs(base),  # negative values only
        gen.integers(0, 2, size=n).astype(float),  # binary
        np.where(np.arange(n) % 2 == 0, np.inf, -np.inf) if n > 1 else np.array([np.inf]),
    ])


def test_count_inversions_against_brute_force():
    gen = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 16, 17, 100, 333):
        rows = np.array([gen.permutation(n) for _ in range(5)])
        brute = [sum(int(r[i] > r[j]) for i in range(n) for j in range(i + 1, n)) for r in rows]
        assert list(count_inversions(rows)) == brute
        # every counting path (scipy's compiled counter, the numpy merge sort fallback, pair by pair)
        assert list(kendall_statistic.count_inversions_numpy(rows)) == brute
        if n > 1:
            assert list(kendall_statistic.count_inversions_pairwise(rows)) == brute
            many = np.array([gen.permutation(n) for _ in range(kendall_statistic.PAIRWISE_MIN_ROWS + 3)])
            assert list(count_inversions(many)) == list(kendall_statistic.count_inversions_numpy(many))
        if n > 1 and kendall_statistic.compiled_discordant is not None:
            assert list(kendall_statistic.count_inversions_compiled(rows)) == brute


@pytest.mark.parametrize("n", [2, 3, 10, 101, 1000])
def test_statistic_equals_scaled_scipy_tau_b_without_ties(n):
    gen = np.random.default_rng(n)
    X = gen.normal(size=(n, 4))
    y = X[:, 0] - X[:, 1] + gen.normal(size=n)
    panel = KendallPanel(X, y, RandomSource(1))
    expected = [(n / 2) * kendalltau(X[:, j], y, variant="b")[0] for j in range(4)]
    np.testing.assert_allclose(panel.tau_with_response(), expected, atol=1e-9)
    expected = [(n / 2) * kendalltau(X[:, j], X[:, 2], variant="b")[0] for j in range(4)]
    np.testing.assert_allclose(panel.tau_with_feature(2), expected, atol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 17, 64])
def test_statistic_equals_the_pair_count_on_awkward_columns(n):
    # The definition, pair by pair, with the panel's own tie-breaks (panel.order): against
    # the response, against every feature (the full pass) and against feature subsets
    # (the candidates of the bounded search), in any order of the features.
    gen = np.random.default_rng(n)
    X = awkward_columns(n, gen)
    y = np.round(gen.normal(size=n), 1)  # a response with ties too
    panel = KendallPanel(X, y, RandomSource(n))
    d = X.shape[1]
    orders = [panel.order(j) for j in range(d)]
    for j in range(d):  # each order sorts its column (ties in some order)
        assert np.all(X[orders[j][1:], j] >= X[orders[j][:-1], j])
        assert sorted(orders[j]) == list(range(n))
    y_order = np.argsort(panel.y_ranks)
    np.testing.assert_allclose(panel.tau_with_response(), [brute_tau(o, y_order) for o in orders], atol=1e-12)
    for l in range(d):
        expected = [brute_tau(o, orders[l]) for o in orders]
        np.testing.assert_allclose(panel.tau_with_feature(l), expected, atol=1e-12)
        some = gen.permutation(d)[: max(1, d // 3)]
        np.testing.assert_allclose(panel.tau_with_feature(l, some), np.array(expected)[some], atol=1e-12)
    # the orders are fixed for the call: asked again, the same
    assert all(np.array_equal(panel.order(j), orders[j]) for j in range(d))


def test_statistic_equals_scipy_on_many_blocks_and_threads(monkeypatch):
    # Small blocks (many of them, plain and tied columns interleaved) and a design big
    # enough for the threaded path, against scipy's tau-b on the tie-broken ranks.
    monkeypatch.setattr(kendall_statistic, "BLOCK_ELEMENTS", 1 << 12)
    monkeypatch.setattr(kendall_statistic, "PARALLEL_ELEMENTS", 1 << 14)
    gen = np.random.default_rng(11)
    n, d = 300, 90
    X = gen.normal(size=(n, d))
    X[:, ::7] = np.round(X[:, ::7])
    y = X[:, 0] + gen.normal(size=n)
    panel = KendallPanel(X, y, RandomSource(3))
    ranks = np.empty((d, n), dtype=int)
    for j in range(d):
        ranks[j, panel.order(j)] = np.arange(n)
    expected = [(n / 2) * kendalltau(ranks[j], panel.y_ranks)[0] for j in range(d)]
    np.testing.assert_allclose(panel.tau_with_response(), expected, atol=1e-9)
    for l in (0, 7, 50):
        expected = [(n / 2) * kendalltau(ranks[j], ranks[l])[0] for j in range(d)]
        np.testing.assert_allclose(panel.tau_with_feature(l), expected, atol=1e-9)


def test_statistic_without_the_compiled_counter(monkeypatch):
    # The numpy merge sort fallback behind the same panel (scipy's counter is private API).
    monkeypatch.setattr(kendall_statistic, "compiled_discordant", None)
    gen = np.random.default_rng(4)
    n = 40
    X = awkward_columns(n, gen)
    y = gen.normal(size=n)
    panel = KendallPanel(X, y, RandomSource(0))
    orders = [panel.order(j) for j in range(X.shape[1])]
    y_order = np.argsort(panel.y_ranks)
    np.testing.assert_allclose(panel.tau_with_response(), [brute_tau(o, y_order) for o in orders], atol=1e-12)
    np.testing.assert_allclose(panel.tau_with_feature(1), [brute_tau(o, orders[1]) for o in orders], atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 300])
def test_packed_key_sorts_equal_numpy_sorts(n):
    # The packed 64-bit keys order rows exactly as numpy's stable argsort and lexsort do,
    # also on ties, -0.0 against +0.0 and values equal in all but their last bits.
    gen = np.random.default_rng(n)
    V = np.round(gen.normal(size=(40, n)), 1)
    V[0] = 1.0 + np.spacing(1.0) * gen.integers(0, 3, size=n)
    V[1] = np.where(gen.uniform(size=n) < 0.5, -0.0, 0.0)
    V[2] = gen.normal(size=n) * 1e-310  # subnormal
    V[3] = -np.abs(gen.normal(size=n)) * 1e300
    P = np.argsort(gen.uniform(size=V.shape), axis=1)
    np.testing.assert_array_equal(kendall_statistic.stable_order_rows(V), np.argsort(V, axis=1, kind="stable"))
    np.testing.assert_array_equal(kendall_statistic.lexsort_rows(V, P),
                                  np.array([np.lexsort((P[i], V[i])) for i in range(V.shape[0])]))


def test_tied_columns_get_uniform_independent_tie_breaks():
    # A constant column of 3 rows: its order is uniform over the 6 permutations.  A column
    # (0.0, 1.0, -0.0): -0.0 equals +0.0, so rows 0 and 2 tie and come in either order
    # (row 1 last).  The two are drawn together and must be independent (12 cells).
    n, reps = 3, 2400
    X = np.column_stack([np.full(n, 1.0), np.arange(n, dtype=float), np.array([0.0, 1.0, -0.0])])
    y = np.arange(n, dtype=float)
    perms = {p: i for i, p in enumerate(permutations(range(n)))}
    zeros = {(0, 2, 1): 0, (2, 0, 1): 1}
    cells = np.zeros(12, dtype=int)
    for s in range(reps):
        panel = KendallPanel(X, y, RandomSource(s))
        cells[perms[tuple(panel.order(0))] * 2 + zeros[tuple(panel.order(2))]] += 1
        assert list(panel.order(1)) == [0, 1, 2]  # no ties: the unique order
    assert chisquare(cells).pvalue > ALPHA


def test_random_tie_breaking_matches_infinitesimal_jitter_in_distribution():
    # The seed breaks ties by an infinitesimal jitter; our mechanism by a random permutation.
    # Compare the distribution of tau over many tie-breaks with scipy on jittered data.
    gen = np.random.default_rng(5)
    n = 9
    x = gen.integers(0, 3, size=n).astype(float)
    y = gen.integers(0, 3, size=n).astype(float)
    reps = 3000
    ours = np.array([KendallPanel(x[:, None], y, RandomSource(s)).tau_with_response()[0] for s in range(reps)])
    jitter = np.array([(n / 2) * kendalltau(x + 1e-9 * gen.uniform(size=n), y + 1e-9 * gen.uniform(size=n))[0]
                       for _ in range(reps)])
    values = np.unique(np.round(np.concatenate([ours, jitter]), 9))
    table = np.array([[np.sum(np.isclose(ours, v)) for v in values], [np.sum(np.isclose(jitter, v)) for v in values]])
    keep = table.sum(axis=0) >= 10
    table = np.column_stack([table[:, keep], table[:, ~keep].sum(axis=1)]) if (~keep).any() else table[:, keep]
    assert chi2_contingency(table)[1] > ALPHA  # the p-value (a plain tuple before scipy 1.11)
    assert table.shape[1] >= 3  # the tie-break really randomises the statistic


def exact_sequences(X, y, k, eps):
    scores = kendall.KendallScores(KendallPanel(X, y, RandomSource(0)))  # tie-free: rng irrelevant
    d = X.shape[1]
    return {s: kendall.sequence_log_probability(scores, list(s), eps) for s in permutations(range(d), k)}


def add_remove_neighbours(X, y, gen, random=5):
    n, d = X.shape
    for i in range(n):  # remove each record
        keep = np.arange(n) != i
        yield X[keep], y[keep]
    lo, hi = X.min() - 1, X.max() + 1
    extremes = [(np.full(d, s1 * hi), s2 * hi) for s1 in (-1, 1) for s2 in (-1, 1)]
    extremes += [(np.where(np.arange(d) % 2 == 0, hi, lo), hi), (np.where(np.arange(d) % 2 == 0, lo, hi), lo)]
    extremes += [(gen.normal(size=d) * 2, gen.normal() * 2) for _ in range(random)]
    for x_new, y_new in extremes:
        yield np.vstack([X, x_new]), np.append(y, y_new)


@pytest.mark.parametrize("eps, k, seed", [(1.0, 2, 0), (3.0, 3, 1), (0.5, 1, 2)])
def test_audit_add_remove(eps, k, seed):
    gen = np.random.default_rng(seed)
    n, d = 9, 4
    X = gen.normal(size=(n, d))
    y = X[:, 0] + 0.5 * X[:, 1] + 0.3 * gen.normal(size=n)
    base = exact_sequences(X, y, k, eps)
    assert math.isclose(sum(math.exp(v) for v in base.values()), 1.0, rel_tol=1e-9)
    worst = 0.0
    for X2, y2 in add_remove_neighbours(X, y, gen):
        other = exact_sequences(X2, y2, k, eps)
        worst = max(worst, max(abs(base[s] - other[s]) for s in base))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.05 * eps  # the neighbours do move the distribution


def test_peeling_sampler_follows_the_product_of_softmaxes():
    gen = np.random.default_rng(3)
    X = gen.normal(size=(15, 4))
    y = X[:, 0] - X[:, 3] + gen.normal(size=15)
    eps, k = 4.0, 2
    exact = exact_sequences(X, y, k, eps)
    seqs = list(exact)
    index = {s: i for i, s in enumerate(seqs)}
    rng = RandomSource(9)
    draws = np.array([index[tuple(kendall.private_kendall_select(X, y, k, eps, rng)[0])] for _ in range(6000)])
    p = np.exp([exact[s] for s in seqs])
    counts = np.bincount(draws, minlength=len(seqs))
    keep = p * draws.size >= 5
    obs, exp = counts[keep], p[keep] * draws.size
    if (~keep).any():  # pool the rare sequences into one cell
        obs, exp = np.append(obs, counts[~keep].sum()), np.append(exp, p[~keep].sum() * draws.size)
    assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > ALPHA


def full_vector_peel(scores, k, epsilon, rng):
    """DP-Kendall as first written: report-noisy-max on the whole score vector of each round; at
    epsilon = inf the first maximiser (the non-private answer is a function of the data alone)."""
    chosen = []
    for t in range(k):
        if math.isinf(epsilon):
            u = scores(chosen).astype(float)
            u[chosen] = -np.inf
            chosen.append(int(np.argmax(u)))
            continue
        chosen.append(report_noisy_max(scores(chosen), epsilon / k, kendall.round_sensitivity(t), rng, exclude=chosen))
    return chosen


@pytest.mark.parametrize("eps", [0.3, 5.0, 200.0, math.inf])
def test_bounded_peel_draws_what_the_full_vector_peel_draws(eps, monkeypatch):
    # The bounded search scores only the features that can still win; given the same
    # random source it must return exactly what report-noisy-max on every score returns
    # (same draws, same answer), also with tied scores (integer data, eps = inf).  The
    # search is made as eager to stop as it can be (batches of 1, 2, 4, ... from a head of
    # 2), so that a bound that is not one shows up.
    monkeypatch.setattr(kendall, "SEARCH_BATCH", 1)
    monkeypatch.setattr(kendall, "SEARCH_HEAD", 2)
    for seed in range(8):
        gen = np.random.default_rng(seed)
        n, d = 16, 60
        X = gen.normal(size=(n, d))
        if seed % 3 == 0:
            X = np.round(X)  # many tied scores
        y = X[:, 0] - X[:, 1] + gen.normal(size=n)
        panel = KendallPanel(X, y, RandomSource(seed))
        k = 6
        for draw in range(25):
            lazy = kendall.kendall_peel(kendall.KendallScores(panel), k, eps, RandomSource(100 * seed + draw))
            full = full_vector_peel(kendall.KendallScores(panel), k, eps, RandomSource(100 * seed + draw))
            assert lazy == full


def test_bounded_search_finds_the_maximum_its_ties_and_the_second():
    gen = np.random.default_rng(0)
    for trial in range(300):
        d = int(gen.integers(1, 700))
        values = np.round(gen.normal(size=d) * 3)  # ties
        bound = values + np.abs(np.round(gen.normal(size=d) * 2, 1))
        bound[gen.uniform(size=d) < 0.1] = -np.inf
        values[bound == -np.inf] = -np.inf
        if np.all(bound == -np.inf):
            continue
        seen = []

        def evaluate(J):
            seen.extend(J.tolist())
            assert np.all(np.isfinite(bound[J]))  # excluded features are never scored
            return values[J]

        second = bool(trial % 2)
        idx, val = kendall.bounded_search(bound, evaluate, second=second)
        assert len(seen) == len(set(seen))
        np.testing.assert_array_equal(values[idx], val)
        top = values.max()
        assert val.max() == top
        assert set(idx[val == top]) == set(np.flatnonzero(values == top))
        if second and (values > -np.inf).sum() > 1:
            assert np.sort(val)[-2] == np.sort(values)[-2]


def test_bounded_search_scores_one_feature_when_the_largest_bound_wins():
    # The default first step scores one feature, then 2, 4, ...: when the feature with the
    # largest bound beats every other bound, it is the only one scored (a first step of 8
    # scored 8, each costing a pass over the rows per chosen feature); else the steps double.
    bound = np.array([1.0, 5.0, 2.0, 4.9, 3.0, 0.5, 4.0, 1.5, 2.5, 3.5])
    for values, scored in ((bound - 0.05, [1]), (bound - 2.0, [1, 3, 6, 9, 4, 8, 2])):
        calls = []

        def evaluate(J):
            calls.append(J.tolist())
            return values[J]

        idx, _ = kendall.bounded_search(bound, evaluate)
        assert sorted(idx.tolist()) == sorted(scored) and [len(c) for c in calls] == [1, 2, 4][:len(calls)]


def test_curator_greedy_path_and_gaps_match_the_full_vectors(monkeypatch):
    gen = np.random.default_rng(8)
    n, d, k = 60, 40, 5
    X = gen.normal(size=(n, d))
    y = X[:, 0] + X[:, 1] + gen.normal(size=n)
    terms = [f"x{j}" for j in range(d)]
    scores = kendall.KendallScores(KendallPanel(X, y, RandomSource(0)))
    chosen = kendall.kendall_peel(scores, k, 1.0, RandomSource(1))
    out = kendall.curator_summary(terms, scores, chosen, k, 1.0)
    greedy, gaps = [], []
    for t in range(k):
        u = scores(greedy).copy()
        u[greedy] = -np.inf
        best = int(np.argmax(u))
        gaps.append(f"{u[best] - np.partition(u, -2)[-2]:.4g}")
        greedy.append(best)
    assert out["non_private_selection"] == [terms[j] for j in greedy]
    assert out["round_score_gaps"] == gaps
    assert 0 < out["probability_of_released_sequence"] <= 1
    monkeypatch.setattr(kendall, "CURATOR_PASS_LIMIT", 0)
    fresh = kendall.KendallScores(KendallPanel(X, y, RandomSource(0)))
    out = kendall.curator_summary(terms, fresh, chosen, k, 1.0)
    assert out["probability_of_released_sequence"].startswith("not computed")
    assert not fresh._redundancy  # no full pass was made


def kendall_frame(n=120, p=12, seed=0):
    sim = dpstats.simulate(n, p, 3, random_state=seed)
    return sim


def test_infinite_epsilon_is_plain_kendall_with_the_redundancy_rule():
    sim = kendall_frame()
    df = sim.data
    r = dpstats.dp_select("y ~ .", df, method="kendall", epsilon=math.inf, k=3, random_state=0)
    X, y = df.drop(columns="y").to_numpy(), df["y"].to_numpy()
    n = len(y)
    rel = np.abs([(n / 2) * kendalltau(X[:, j], y)[0] for j in range(X.shape[1])])
    chosen = [int(np.argmax(rel))]
    while len(chosen) < 3:
        red = np.mean([[abs((n / 2) * kendalltau(X[:, j], X[:, l])[0]) for j in range(X.shape[1])]
                       for l in chosen], axis=0)
        u = rel - red
        u[chosen] = -np.inf
        chosen.append(int(np.argmax(u)))
    assert sorted(r.support) == sorted(df.columns[1:][chosen])
    assert r.curator["non_private_selection"] == list(df.columns[1:][chosen])


def test_infinite_epsilon_with_tied_data_is_a_function_of_the_data_alone():
    # mtcars-like data: small integer columns tie heavily; before, the tie-break keys and the ties
    # between scores were drawn from random_state, and epsilon = inf gave 5 supports in 8 seeds
    rng = np.random.default_rng(3)
    n = 60
    df = pd.DataFrame({"cyl": rng.choice([4, 6, 8], n), "gear": rng.choice([3, 4, 5], n), "carb": rng.choice([1, 2, 4], n),
                       "am": rng.integers(0, 2, n), "vs": rng.integers(0, 2, n), "wt": rng.normal(3, 1, n)})
    df["mpg"] = (30 - 1.5 * df.cyl - 2 * df.wt + df.am + rng.normal(0, 2, n)).round(0)
    fits = [dpstats.dp_select("mpg ~ .", df, method="kendall", epsilon=math.inf, k=3, random_state=seed)
            for seed in range(6)]
    assert len({tuple(f.support) for f in fits}) == 1
    assert len({tuple(f.curator["non_private_selection"]) for f in fits}) == 1
    assert fits[0].curator["non_private_selection"] == [t for t in fits[0].curator["non_private_selection"]
                                                         if t in fits[0].support]
    # a finite epsilon still draws its tie-break keys from the call's random source
    draws = {tuple(dpstats.dp_select("mpg ~ .", df, method="kendall", epsilon=1e6, k=3, random_state=seed).support)
             for seed in range(8)}
    assert len(draws) > 1


def test_dp_select_needs_no_bounds_and_records_add_remove():
    sim = kendall_frame()
    acc = Accountant(epsilon=3)
    r = dpstats.dp_select("y ~ .", sim.data, method="kendall", epsilon=1.0, k=3, random_state=2, accountant=acc)
    assert len(r.support) == 3
    assert r.epsilon_spent == pytest.approx(1.0)
    assert acc.remaining()[0] == pytest.approx(2.0)
    assert all(e.neighbours == ADD_REMOVE for e in r.ledger.entries)
    assert r.ledger.entries[-1].details["blocks"] == kendall.DEFAULT_SIGN_BLOCKS
    assert r.ledger.entries[0].epsilon == pytest.approx(0.9)
    release = r.release()
    # n is private under add/remove: nothing in the release may be derived from it; kendall
    # uses no bounds, radius, ridge or R, so its call does not record them
    assert not {"ridge", "radius", "R", "bounds"} & set(release["call"])
    assert str(len(sim.data)) not in str(release["call"])
    assert "probability" not in str(release)
    assert "non private ranking" in str(r.curator_report())


def test_sign_step_with_degenerate_blocks_votes_zero():
    sim = kendall_frame(n=30)
    # 1000 blocks for 30 rows: (nearly) every block is empty or has fewer rows than the
    # 4 columns of its fit (intercept + 3 terms), so it votes 0; nothing fails.
    r = dpstats.dp_select("y ~ .", sim.data, method="kendall", epsilon=math.inf, k=3, sign_blocks=1000, random_state=4)
    for votes in r.curator["sign_votes"].values():
        assert sum(votes) == 1000 and votes[1] >= 990
    assert list(r.signs[r.support]) == [0, 0, 0]
    r = dpstats.dp_select("y ~ .", sim.data, method="kendall", epsilon=math.inf, k=2, sign_blocks=3, random_state=4)
    assert set(r.signs[r.support]) <= {-1, 1}


def test_bad_input():
    sim = kendall_frame()
    df = sim.data
    acc = Accountant(epsilon=5)
    for kw, err in [(dict(k=0), InvalidArgumentError), (dict(k=13), InvalidArgumentError),
                    (dict(k=2, sign_blocks=0), InvalidArgumentError), (dict(k=2, sign_blocks=2.5), InvalidTypeError)]:
        with pytest.raises(err):
            dpstats.dp_select("y ~ .", df, method="kendall", epsilon=1.0, accountant=acc, **kw)
    bad = df.copy()
    bad["y"] = np.where(df["y"] > 0, "high", "low")
    with pytest.raises(DataError, match="numeric"):
        dpstats.dp_select("y ~ .", bad, method="kendall", epsilon=1.0, k=2, accountant=acc)
    assert acc.remaining()[0] == pytest.approx(5)
    # A constant term is data (whether a column varies): no free error, it carries no signal.
    const = df.copy()
    const["c"] = 3.0
    fit = dpstats.dp_select("y ~ .", const, method="kendall", epsilon=1.0, k=2, accountant=acc)
    assert len(fit.support) == 2 and acc.remaining()[0] == pytest.approx(4)
