"""method="kendall": the statistic against scipy, tie-breaking, audits, the dp_select path."""
import math
from itertools import permutations

import numpy as np
import pytest
from scipy.stats import chi2_contingency, chisquare, kendalltau

import dpstats
from dpstats import Accountant
from dpstats.errors import DataError, InvalidArgumentError, InvalidTypeError
from dpstats.privacy.ledger import ADD_REMOVE
from dpstats.privacy.randomness import RandomSource
from dpstats.screening import kendall, kendall_statistic
from dpstats.screening.kendall_statistic import KendallPanel, count_inversions

ALPHA = 1e-4  # false-alarm rate of each fixed-seed distribution test


def test_count_inversions_against_brute_force():
    gen = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 16, 17, 100, 333):
        rows = np.array([gen.permutation(n) for _ in range(5)])
        brute = [sum(int(r[i] > r[j]) for i in range(n) for j in range(i + 1, n)) for r in rows]
        assert list(count_inversions(rows)) == brute
        # both counting paths (scipy's compiled counter and the numpy merge sort fallback)
        assert list(kendall_statistic.count_inversions_numpy(rows)) == brute
        if n > 1 and kendall_statistic._scipy_discordant is not None:
            assert list(kendall_statistic.count_inversions_compiled(rows)) == brute


@pytest.mark.parametrize("n", [2, 3, 10, 101, 1000])
def test_statistic_equals_scaled_scipy_tau_b_without_ties(n):
    gen = np.random.default_rng(n)
    X = gen.normal(size=(n, 4))
    y = X[:, 0] - X[:, 1] + gen.normal(size=n)
    panel = KendallPanel(X, y, RandomSource(1))
    expected = [(n / 2) * kendalltau(X[:, j], y, variant="b").statistic for j in range(4)]
    np.testing.assert_allclose(panel.tau_with_response(), expected, atol=1e-9)
    expected = [(n / 2) * kendalltau(X[:, j], X[:, 2], variant="b").statistic for j in range(4)]
    np.testing.assert_allclose(panel.tau_with_feature(2), expected, atol=1e-9)


def test_random_tie_breaking_matches_infinitesimal_jitter_in_distribution():
    # The seed breaks ties by an infinitesimal jitter; our mechanism by a random permutation.
    # Compare the distribution of tau over many tie-breaks with scipy on jittered data.
    gen = np.random.default_rng(5)
    n = 9
    x = gen.integers(0, 3, size=n).astype(float)
    y = gen.integers(0, 3, size=n).astype(float)
    reps = 3000
    ours = np.array([KendallPanel(x[:, None], y, RandomSource(s)).tau_with_response()[0] for s in range(reps)])
    jitter = np.array([(n / 2) * kendalltau(x + 1e-9 * gen.uniform(size=n), y + 1e-9 * gen.uniform(size=n)).statistic
                       for _ in range(reps)])
    values = np.unique(np.round(np.concatenate([ours, jitter]), 9))
    table = np.array([[np.sum(np.isclose(ours, v)) for v in values], [np.sum(np.isclose(jitter, v)) for v in values]])
    keep = table.sum(axis=0) >= 10
    table = np.column_stack([table[:, keep], table[:, ~keep].sum(axis=1)]) if (~keep).any() else table[:, keep]
    assert chi2_contingency(table).pvalue > ALPHA
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


def kendall_frame(n=120, p=12, seed=0):
    sim = dpstats.simulate(n, p, 3, random_state=seed)
    return sim


def test_infinite_epsilon_is_plain_kendall_with_the_redundancy_rule():
    sim = kendall_frame()
    df = sim.data
    r = dpstats.dp_select("y ~ .", df, method="kendall", epsilon=math.inf, k=3, random_state=0)
    X, y = df.drop(columns="y").to_numpy(), df["y"].to_numpy()
    n = len(y)
    rel = np.abs([(n / 2) * kendalltau(X[:, j], y).statistic for j in range(X.shape[1])])
    chosen = [int(np.argmax(rel))]
    while len(chosen) < 3:
        red = np.mean([[abs((n / 2) * kendalltau(X[:, j], X[:, l]).statistic) for j in range(X.shape[1])]
                       for l in chosen], axis=0)
        u = rel - red
        u[chosen] = -np.inf
        chosen.append(int(np.argmax(u)))
    assert sorted(r.support) == sorted(df.columns[1:][chosen])
    assert r.curator["non_private_selection (same redundancy rule)"] == list(df.columns[1:][chosen])


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
    for votes in r.curator["sign_votes (-1, 0, +1)"].values():
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
