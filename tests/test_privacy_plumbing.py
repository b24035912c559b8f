"""Ledger, accountant, randomness, private bounds and the sign step (spec 05)."""
import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats as sps

import dpstats
from dpstats.mechanisms.signs import SIGN_VALUES, sample_signs, sign_log_probabilities, vote_counts
from dpstats.privacy.bounds import QUANTILE_GRID, private_quantile, private_quantile_log_probabilities
from dpstats.privacy.ledger import Ledger, LedgerEntry
from dpstats.privacy.randomness import RandomSource
from tests.conftest import make_regression


def test_eleven_calls_at_one_eleventh_fit_exactly():
    acc = dpstats.Accountant(epsilon=1.0)
    for _ in range(11):
        acc.charge(1 / 11)
    # Naive float accumulation overshoots; exact rationals must not refuse.  (Not sum():
    # Python 3.12's sum() of floats is compensated and gives exactly 1.0.)
    naive = 0.0
    for _ in range(11):
        naive += 1 / 11
    assert naive > 1.0
    with pytest.raises(dpstats.BudgetExceededError):
        acc.charge(1e-6)
    assert acc.remaining()[0] == pytest.approx(0.0, abs=1e-15)
    assert "remaining" in acc.history_table() and len(acc.history) == 11


def test_accountant_refuses_before_touching_data():
    acc = dpstats.Accountant(epsilon=1.0)
    data = make_regression()
    dpstats.dp_select("y ~ .", data, method="exponential", epsilon=0.8, s=2, bounds=(1, 1), accountant=acc,
                      random_state=0)
    assert acc.spent()[0] == pytest.approx(0.8)
    # The formula names a missing column: had data been touched, a FormulaError would come first.
    with pytest.raises(dpstats.BudgetExceededError, match="nothing was computed"):
        dpstats.dp_select("y ~ not_a_column", data, method="exponential", epsilon=0.5, s=2, bounds=(1, 1),
                          accountant=acc)
    assert acc.spent()[0] == pytest.approx(0.8) and len(acc.history) == 1
    with pytest.raises(dpstats.BudgetExceededError):
        dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=(1, 1), accountant=acc)


def test_failed_validation_charges_nothing():
    acc = dpstats.Accountant(epsilon=1.0)
    with pytest.raises(dpstats.DataError):
        dpstats.dp_select("y ~ .", make_regression().assign(k="a"), method="exponential", epsilon=0.5, s=2,
                          bounds=(1, 1), accountant=acc)
    assert acc.spent() == (0.0, 0.0)


def test_ledger_totals_and_json():
    ledger = Ledger([LedgerEntry("a", 0.1), LedgerEntry("b", 0.2, 1e-6)], caveats=["c"])
    assert ledger.total_epsilon == pytest.approx(0.3) and ledger.total_delta == 1e-6
    back = json.loads(ledger.to_json())
    assert back["total_epsilon"] == pytest.approx(0.3) and back["caveats"] == ["c"]
    assert "total (basic composition)" in str(ledger)


def test_release_holds_nothing_beyond_ledger_and_public_call():
    data = make_regression(n=80, p=5)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=2, s=2, bounds="auto", random_state=3)
    rel = fit.release()
    assert set(rel) == {"call", "selected", "signs", "ledger"}
    entries = rel["ledger"]["entries"]
    released = {}
    for e in entries:
        released.update(e["released"])
    assert rel["selected"] == released["support"]
    assert rel["signs"] == released["signs"]
    assert {"b_x", "b_y"} <= set(released)
    # Every number in the call is a public input (n is public under replace-one: ridge = 0.1 n).
    def numbers(obj):
        if isinstance(obj, dict):
            for v in obj.values():
                yield from numbers(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                yield from numbers(v)
        elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
            yield float(obj)
    public = {2.0, 1.0, 0.1 * 80, 100.0, 0.1, 1e6}
    assert set(numbers(rel["call"])) <= public
    # Nothing curator-only leaks into the release.
    text = json.dumps(rel)
    assert "objective" not in text and "probability" not in text
    assert str(round(fit.curator["best_objective"], 4)) not in text
    assert rel["ledger"]["total_epsilon"] == pytest.approx(2.0)


def test_seeded_calls_are_reproducible_and_marked():
    data = make_regression(n=60, p=5)
    a = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1, s=2, bounds=(1, 1), random_state=7)
    b = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1, s=2, bounds=(1, 1), random_state=7)
    assert a.support == b.support and a.signs.equals(b.signs)
    assert "seeded: reproducible, not for release" in a.ledger.caveats
    c = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1, s=2, bounds=(1, 1))
    assert not any("seeded" in x for x in c.ledger.caveats)


def test_os_randomness_is_uniform():
    u = RandomSource().uniform(20000)
    assert 0 < u.min() and u.max() < 1
    assert sps.kstest(u, "uniform").pvalue > 1e-4  # false-alarm rate 1e-4
    lap = RandomSource(1).laplace(2.0, 20000)
    assert sps.kstest(lap, sps.laplace(scale=2.0).cdf).pvalue > 1e-4
    gum = RandomSource(2).gumbel(20000)
    assert sps.kstest(gum, sps.gumbel_r.cdf).pvalue > 1e-4


def test_private_quantile_audit_and_sampling():
    rng = np.random.default_rng(0)
    values = np.abs(rng.standard_normal(50)) * 3
    eps = 0.7
    logp = private_quantile_log_probabilities(values, 0.95, eps)
    worst = 0.0
    for i in range(0, 50, 5):
        for new in (0.0, 1e-12, 2.0 ** 45, values.max() * 1.01, np.median(values)):
            v2 = values.copy()
            v2[i] = new
            worst = max(worst, np.max(np.abs(logp - private_quantile_log_probabilities(v2, 0.95, eps))))
    assert worst <= eps * (1 + 1e-9) and worst > 0.1 * eps
    src = RandomSource(5)
    draws = [private_quantile(values, 0.95, eps, src) for _ in range(4000)]
    k = np.searchsorted(QUANTILE_GRID, draws)
    p = np.exp(logp)
    keep = p * 4000 >= 5
    observed = np.r_[np.bincount(k, minlength=p.size)[keep], np.sum(~keep[k])]
    expected = np.r_[p[keep], p[~keep].sum()] * 4000
    assert sps.chisquare(observed, expected).pvalue > 1e-3


def test_sign_step_audit_over_all_changes_of_one_block():
    rng = np.random.default_rng(1)
    blocks, terms, eps = 5, 2, 0.9
    votes = rng.choice(SIGN_VALUES, size=(blocks, terms))
    outcomes = list(itertools.product(range(3), repeat=terms))

    def joint(v):
        lp = sign_log_probabilities(vote_counts(v), eps)
        return np.array([sum(lp[t, o[t]] for t in range(terms)) for o in outcomes])

    base = joint(votes)
    worst = 0.0
    for b in range(blocks):
        for new in itertools.product(SIGN_VALUES, repeat=terms):
            v2 = votes.copy()
            v2[b] = new
            worst = max(worst, np.max(np.abs(base - joint(v2))))
    assert worst <= eps * (1 + 1e-9) and worst > 0.3 * eps
    counts = vote_counts(votes)
    src = RandomSource(4)
    draws = np.array([sample_signs(counts, eps, src) for _ in range(3000)])
    for t in range(terms):
        observed = np.array([(draws[:, t] == v).sum() for v in SIGN_VALUES])
        expected = np.exp(sign_log_probabilities(counts, eps)[t]) * 3000
        assert sps.chisquare(observed, expected).pvalue > 1e-3


def test_signs_at_infinite_epsilon_are_block_majority():
    data = make_regression(n=400, p=4, s=2, noise=0.1, seed=2)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=(3, 3), random_state=0)
    assert fit.support == ["x0", "x1"]
    assert fit.signs["x0"] == 1 and fit.signs["x1"] == -1 and fit.signs["x2"] == 0


def test_signs_false_spends_nothing_on_signs():
    fit = dpstats.dp_select("y ~ .", make_regression(), method="exponential", epsilon=1, s=2, bounds=(1, 1),
                            signs=False, random_state=0)
    assert len(fit.ledger) == 1 and fit.epsilon_spent == 1.0
    assert fit.signs[fit.support].isna().all() and fit.release()["signs"] is None


def test_omit_sign_blocks_a_record_that_drops_out_changes_one_block():
    # Under na_action="omit" labels are drawn per input row and kept rows keep theirs: a
    # record that becomes incomplete leaves its block and no other block changes (the
    # premise of the sign step's audit over all changes of one block).
    from dpstats.mechanisms.signs import _block_rows
    from dpstats.privacy.randomness import RandomSource

    n, blocks = 100, 10
    kept = np.delete(np.arange(n), 7)

    def members(rows_of_blocks, positions):
        return [set(positions[r].tolist()) for r in rows_of_blocks]

    full = members(_block_rows(n, blocks, RandomSource(3), "iid", np.arange(n), n), np.arange(n))
    dropped = members(_block_rows(n - 1, blocks, RandomSource(3), "iid", kept, n), kept)
    changed = [b for b in range(blocks) if full[b] != dropped[b]]
    assert len(changed) == 1 and full[changed[0]] - dropped[changed[0]] == {7}
    # Without input-row labels every later row would move: many blocks change.
    shifted = members(_block_rows(n - 1, blocks, RandomSource(3), "iid"), kept)
    assert sum(full[b] != shifted[b] for b in range(blocks)) > 1
