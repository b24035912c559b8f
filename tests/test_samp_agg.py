"""method="samp_agg": block votes, their sensitivity, privacy audits and the dp_select path."""
import math

import numpy as np
import pytest
from scipy import stats as sps

import dpstats
from dpstats import Accountant
from dpstats.errors import InvalidArgumentError, InvalidTypeError
from dpstats.mechanisms.gumbel import peeling_set_distribution
from dpstats.privacy.ledger import REPLACE_ONE
from dpstats.privacy.randomness import RandomSource
from dpstats.screening import samp_agg
from conftest import make_regression
from release_checks import assert_release_equivalent

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
    assert "non private ranking" in str(r.curator_report())
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
    assert acc.remaining()[0] == pytest.approx(5)
    # A constant term is data (whether a column varies): no free error, it carries no signal.
    df["c"] = 2.0
    fit = dpstats.dp_select("y ~ .", df, method="samp_agg", epsilon=1.0, k=2, bounds=(3, 5), accountant=acc)
    assert len(fit.support) == 2 and acc.remaining()[0] == pytest.approx(4)


# ----------------------------------------------------------- na_action="omit" (spec 05, 5.8)
def omit_neighbours(n_input=101, p=6, seed=3):
    """Replace-one neighbours under na_action="omit" that differ in one row's completeness.

    Both data sets have an incomplete row (so both ledgers note the omission); D' also
    makes row 50 incomplete.  D has 100 complete rows (floor(sqrt) = 10), D' 99 (9): a
    block count taken from the complete rows would differ, one from the input row count
    (101, public) cannot.
    """
    D = make_regression(n=n_input, p=p, s=3, seed=seed)
    D.loc[0, "x1"] = np.nan
    D2 = D.copy()
    D2.loc[50, "x3"] = np.nan
    return D, D2


@pytest.mark.parametrize("signs", [False, True])
@pytest.mark.parametrize("blocks", [None, 7])
def test_omit_neighbours_release_the_same_ledger(blocks, signs):
    D, D2 = omit_neighbours()
    fits = [dpstats.dp_select("y ~ .", d, method="samp_agg", epsilon=2.0, k=2, bounds=(3, 5), na_action="omit",
                              blocks=blocks, signs=signs, random_state=5) for d in (D, D2)]
    assert_release_equivalent(fits[0].release(), fits[1].release())
    expected = blocks if blocks is not None else math.isqrt(101)  # from the input row count, not 100 or 99
    for fit in fits:
        details = fit.ledger.entries[0].details
        assert details["blocks"] == expected and fit.curator["blocks"] == expected
        assert details["block assignment"] == samp_agg.ASSIGNMENT_TEXT["split"]


def test_omit_blocks_count_from_input_rows_before_the_charge():
    # check_design runs before the charge: blocks may not exceed the *input* rows, and
    # nothing about the complete rows can make the call fail for free.
    D, _ = omit_neighbours(n_input=30)
    D.loc[1:25, "x2"] = np.nan  # 4 complete rows left, fewer than the blocks
    acc = Accountant(epsilon=5)
    fit = dpstats.dp_select("y ~ .", D, method="samp_agg", epsilon=1.0, k=2, bounds=(3, 5), na_action="omit",
                            blocks=30, signs=False, random_state=0, accountant=acc)
    assert fit.ledger.entries[0].details["blocks"] == 30 and len(fit.support) == 2
    with pytest.raises(InvalidArgumentError, match="exceeds the number of rows"):
        dpstats.dp_select("y ~ .", D, method="samp_agg", epsilon=1.0, k=2, bounds=(3, 5), na_action="omit",
                          blocks=31, accountant=acc)
    assert acc.remaining()[0] == pytest.approx(4)  # the refused call charged nothing


def test_iid_blocks_a_row_that_drops_out_changes_one_block():
    # With i.i.d. labels tied to input positions, the same draws put every other row in the
    # same block whether or not row 17 is complete: one block changes, and every vote count
    # moves by at most 1.  (An equal-size split of the complete rows moves many blocks.)
    X, y = data(n=40, d=5, seed=4)
    keep = np.setdiff1d(np.arange(40), [5])
    keep2 = np.setdiff1d(keep, [17])

    def blocks_of(rows, assignment):
        parts = samp_agg.block_rows(rows.size, 6, RandomSource(2), assignment, n_labels=40,
                                    rows=rows if assignment == "iid" else None)
        return [set(rows[b].tolist()) for b in parts]

    a, b = blocks_of(keep, "iid"), blocks_of(keep2, "iid")
    changed = [i for i in range(6) if a[i] != b[i]]
    assert len(changed) == 1 and a[changed[0]] - b[changed[0]] == {17}
    split_a, split_b = blocks_of(keep, "split"), blocks_of(keep2, "split")
    assert sum(x != z for x, z in zip(split_a, split_b)) > 1  # an equal split of the kept rows moves many
    # the split of the input rows, each kept row in its input position's block: one block changes
    a, b = [[set(rows[blk].tolist()) for blk in samp_agg.block_rows(rows.size, 6, RandomSource(2), "split",
                                                                       n_labels=40, rows=rows)]
            for rows in (keep, keep2)]
    changed = [i for i in range(6) if a[i] != b[i]]
    assert len(changed) == 1 and a[changed[0]] - b[changed[0]] == {17}
    c1 = samp_agg.block_votes(X[keep], y[keep], 2, 6, RandomSource(2), assignment="iid", n_labels=40,
                              input_rows=keep).sum(axis=0)
    c2 = samp_agg.block_votes(X[keep2], y[keep2], 2, 6, RandomSource(2), assignment="iid", n_labels=40,
                              input_rows=keep2).sum(axis=0)
    assert np.max(np.abs(c1 - c2)) <= 1


def test_iid_labels_are_uniform_and_use_a_public_number_of_draws():
    counts = np.zeros(4)
    for seed in range(200):
        rng = RandomSource(seed)
        parts = samp_agg.block_rows(50, 4, rng, "iid", n_labels=60)
        assert sorted(np.concatenate(parts).tolist()) == list(range(50))
        counts += [len(p) for p in parts]
        # the draws consumed do not depend on the complete rows: the next draw matches
        ref = RandomSource(seed)
        ref.integers(4, size=60)
        assert rng.uniform() == ref.uniform()
    assert sps.chisquare(counts).pvalue > 1e-4
