"""method="samp_agg": block votes, their sensitivity, privacy audits and the dp_select path."""
import math

import numpy as np
import pytest

import dpstats
from dpstats import Accountant
from dpstats.errors import DataError, InvalidArgumentError, InvalidTypeError
from dpstats.mechanisms.gumbel import peeling_set_distribution
from dpstats.privacy.ledger import REPLACE_ONE
from dpstats.privacy.randomness import RandomSource
from dpstats.screening import samp_agg

pytest.importorskip("sklearn")


def data(n=40, d=5, seed=0, b=1.0):
    gen = np.random.default_rng(seed)
    X = np.clip(gen.normal(scale=0.5, size=(n, d)), -b, b)
    y = np.clip(X[:, 0] - X[:, 2] + 0.2 * gen.normal(size=n), -b, b)
    return X, y


def test_votes_follow_each_blocks_lasso():
    from sklearn.linear_model import Lasso

    X, y = data(n=36, d=6)
    k, blocks = 2, 4
    votes = samp_agg.block_votes(X, y, k, blocks, RandomSource(3), alpha=0.01)
    order = RandomSource(3).permutation(36)  # the same draws: the same blocks
    for b, rows in enumerate(np.array_split(order, blocks)):
        coef = Lasso(alpha=0.01, max_iter=5000).fit(X[rows], y[rows]).coef_
        top = np.argsort(-np.abs(coef), kind="stable")[:k]
        expected = np.zeros(6, dtype=int)
        expected[top[np.abs(coef[top]) > 0]] = 1
        np.testing.assert_array_equal(votes[b], expected)
    assert (votes.sum(axis=1) <= k).all()


def test_replacing_one_record_moves_each_count_by_at_most_one():
    X, y = data(n=30, d=5)
    k, blocks = 2, 5
    base = samp_agg.block_votes(X, y, k, blocks, RandomSource(8)).sum(axis=0)
    gen = np.random.default_rng(1)
    moved = 0
    for i in range(30):
        for x_new, y_new in [(np.ones(5), -1.0), (-np.ones(5), 1.0), (gen.uniform(-1, 1, 5), gen.uniform(-1, 1))]:
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = x_new, y_new
            other = samp_agg.block_votes(X2, y2, k, blocks, RandomSource(8)).sum(axis=0)
            assert np.max(np.abs(other - base)) <= 1
            moved += int(np.any(other != base))
    assert moved > 0


@pytest.mark.parametrize("eps, k", [(1.0, 2), (2.5, 1)])
def test_audit_replace_one(eps, k):
    # Exact output distribution: the set chosen by peeling on the counts, for a fixed block
    # split (the split is independent of the data, so conditioning on it is the audit).
    X, y = data(n=30, d=5, seed=2)
    blocks = 6
    counts = samp_agg.block_votes(X, y, k, blocks, RandomSource(5)).sum(axis=0).astype(float)
    base = peeling_set_distribution(counts, 5, k, eps, samp_agg.VOTE_SENSITIVITY)
    gen = np.random.default_rng(3)
    worst = 0.0
    for i in range(0, 30, 3):
        for x_new, y_new in [(np.ones(5), -1.0), (np.array([1, -1, 1, -1, 1.0]), 1.0), (gen.uniform(-1, 1, 5), 0.3)]:
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = x_new, y_new
            c2 = samp_agg.block_votes(X2, y2, k, blocks, RandomSource(5)).sum(axis=0).astype(float)
            other = peeling_set_distribution(c2, 5, k, eps, samp_agg.VOTE_SENSITIVITY)
            worst = max(worst, max(abs(base[s] - other[s]) for s in base))
    assert worst <= eps * (1 + 1e-9)


def sim(n=100, p=15, seed=0):
    return dpstats.simulate(n, p, 3, random_state=seed, snr=10)


def test_infinite_epsilon_is_the_plain_vote_and_default_blocks():
    s = sim()
    r = dpstats.dp_select("y ~ .", s.data, method="samp_agg", epsilon=math.inf, k=3, bounds=(3, 5), random_state=0)
    assert r.curator["blocks"] == 10  # floor(sqrt(100))
    assert sorted(r.support) == sorted(r.curator["non_private_topk"])
    assert r.ledger.entries[0].details["blocks"] == 10


def test_dp_select_ledger_and_options():
    s = sim()
    acc = Accountant(epsilon=4)
    r = dpstats.dp_select("y ~ .", s.data, method="samp_agg", epsilon=2.0, k=3, bounds=(3, 5), blocks=5,
                          alpha=0.05, random_state=1, accountant=acc)
    assert len(r.support) == 3
    assert r.epsilon_spent == pytest.approx(2.0) and acc.remaining()[0] == pytest.approx(2.0)
    assert all(e.neighbours == REPLACE_ONE for e in r.ledger.entries)
    assert r.ledger.entries[0].details["blocks"] == 5
    assert "signs" in r.ledger.entries[-1].released
    assert "vote counts" in str(r.summary())
    assert "vote_counts" not in str(r.release())


def test_bad_input():
    s = sim()
    acc = Accountant(epsilon=5)
    df = s.data.copy()
    for kw, err in [(dict(k=0), InvalidArgumentError), (dict(k=16), InvalidArgumentError),
                    (dict(k=2, blocks=0), InvalidArgumentError), (dict(k=2, blocks=1.5), InvalidTypeError),
                    (dict(k=2, blocks=101), InvalidArgumentError), (dict(k=2, alpha=-1.0), InvalidArgumentError),
                    (dict(k=2, alpha="cv"), InvalidArgumentError)]:
        with pytest.raises(err):
            dpstats.dp_select("y ~ .", df, method="samp_agg", epsilon=1.0, bounds=(3, 5), accountant=acc, **kw)
    df["c"] = 2.0
    with pytest.raises(DataError, match="constant"):
        dpstats.dp_select("y ~ .", df, method="samp_agg", epsilon=1.0, k=2, bounds=(3, 5), accountant=acc)
    assert acc.remaining()[0] == pytest.approx(5)
