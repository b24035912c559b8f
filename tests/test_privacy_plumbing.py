"""Ledger, accountant, randomness, private bounds and the sign step (spec 05)."""
import itertools
import json
import math
from datetime import datetime

import numpy as np
import pytest
from scipy import stats as sps

import dpstats
from release_checks import check_bounds_used
from dpstats.mechanisms.signs import SIGN_VALUES, sample_signs, sign_log_probabilities, vote_counts
from dpstats.privacy.ledger import Ledger, LedgerEntry
from dpstats.privacy.randomness import RandomSource
from conftest import make_regression


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
    assert set(rel) == {"call", "selected", "signs", "ledger", "bounds_used"}
    check_bounds_used(rel)  # the drawn ranges, each number released by an auto-bounds entry
    entries = rel["ledger"]["entries"]
    released = {}
    for e in entries:
        released.update(e["released"])
    assert rel["selected"] == released["support"]
    assert rel["signs"] == released["signs"]
    assert set(rel["bounds_used"]) <= set(released)  # every drawn range is released by the auto-bounds entry
    # Every number in the call is a public input (ridge "auto" is 0 for the exhaustive method).
    def numbers(obj):
        if isinstance(obj, dict):
            for v in obj.values():
                yield from numbers(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                yield from numbers(v)
        elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
            yield float(obj)
    public = {2.0, 1.0, 0.0, 100.0, 0.1, 1e6, 80.0}  # 80 = n, public under replace-one
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
    # the selection (and the intercept's private means where the default centres) spend it all
    assert fit.epsilon_spent == 1.0
    assert not any("signs" in e.mechanism for e in fit.ledger.entries)
    assert fit.signs[fit.support].isna().all() and fit.release()["signs"] is None
    with_signs = dpstats.dp_select("y ~ .", make_regression(), method="exponential", epsilon=1, s=2, bounds=(1, 1),
                                   random_state=0)
    assert len(with_signs.ledger) == len(fit.ledger) + 1 and "signs" in with_signs.ledger.entries[-1].mechanism


def test_omit_sign_blocks_a_record_that_drops_out_changes_one_block():
    # Under na_action="omit" labels are drawn per input row and kept rows keep theirs: a
    # record that becomes incomplete leaves its block and no other block changes (the
    # premise of the sign step's audit over all changes of one block).
    from dpstats.mechanisms.signs import block_rows
    from dpstats.privacy.randomness import RandomSource

    n, blocks = 100, 10
    kept = np.delete(np.arange(n), 7)

    def members(rows_of_blocks, positions):
        return [set(positions[r].tolist()) for r in rows_of_blocks]

    full = members(block_rows(n, blocks, RandomSource(3), "iid", np.arange(n), n), np.arange(n))
    dropped = members(block_rows(n - 1, blocks, RandomSource(3), "iid", kept, n), kept)
    changed = [b for b in range(blocks) if full[b] != dropped[b]]
    assert len(changed) == 1 and full[changed[0]] - dropped[changed[0]] == {7}
    # Without input-row labels every later row would move: many blocks change.
    shifted = members(block_rows(n - 1, blocks, RandomSource(3), "iid"), kept)
    assert sum(full[b] != shifted[b] for b in range(blocks)) > 1


# ---------------------------------------------------------------------------- accountant history
def test_accountant_history_tells_calls_apart():
    data = make_regression(n=60, p=5)
    acc = dpstats.Accountant(epsilon=2.0)
    before = datetime.now().astimezone()
    dpstats.dp_select("y ~ .", data, method="exponential", epsilon=0.5, s=2, bounds=(1, 1), accountant=acc,
                      random_state=0)
    dpstats.dp_select("y ~ x0 + x1 + x2", data, method="exponential", epsilon=0.25, s=1, bounds=(1, 1),
                      accountant=acc, random_state=0)
    dpstats.dp_select("y ~ .", data, method="top_r", epsilon=0.75, s=3, bounds=(1, 1), R=5, accountant=acc,
                      random_state=0)
    first, second, third = acc.history
    assert (first.method, first.formula, first.size, first.epsilon, first.delta) == ("exponential", "y ~ .", ("s", 2),
                                                                                      0.5, 0.0)
    assert (second.formula, second.size, second.epsilon) == ("y ~ x0 + x1 + x2", ("s", 1), 0.25)
    assert (third.method, third.size, third.epsilon) == ("top_r", ("s", 3), 0.75)  # exactly the request
    assert before <= first.time <= second.time <= third.time <= datetime.now().astimezone()
    table = acc.history_table()
    for text in ("time", "formula", "size", "y ~ x0 + x1 + x2", "s = 1", "s = 3", "dp_select(method='top_r')",
                 "0.75", "spent", "remaining", first.time.strftime("%Y-%m-%d %H:%M:%S")):
        assert text in table, text
    spent_row = [line for line in table.splitlines() if "spent" in line][0]
    remaining_row = [line for line in table.splitlines() if "remaining" in line][0]
    assert spent_row.split()[-2:] == ["1.5", "0"] and "0.5" in remaining_row.split()
    assert table in str(acc) and "3 charges" in str(acc)
    records = acc.history_records()
    assert json.loads(json.dumps(records)) == records
    assert records[1]["size"] == {"s": 1} and records[2]["method"] == "top_r" and records[0]["formula"] == "y ~ ."


def test_accountant_history_records_k_and_shortens_long_formulas():
    data = make_regression(n=60, p=5)
    acc = dpstats.Accountant(epsilon=2.0)
    formula = "y ~ " + " + ".join(f"x{j}" for j in range(5)) + " + I(x0**2) + I(x1**2) + I(x2**2)"
    dpstats.dp_select(formula, data, method="kendall", epsilon=0.5, k=2, accountant=acc, random_state=0)
    charge = acc.history[0]
    assert charge.size == ("k", 2) and charge.formula == formula and charge.method == "kendall"
    table = acc.history_table()
    assert "k = 2" in table and formula not in table and formula[:20] in table and "..." in table


def test_accountant_hand_made_charges_keep_the_old_api():
    acc = dpstats.Accountant(epsilon=1.0, delta=1e-5)
    record = acc.charge(0.25, 1e-6, "my query")
    assert (record.label, record.epsilon, record.delta, record.condition) == ("my query", 0.25, 1e-6, None)
    assert record.method is None and record.formula is None and record.size is None and record.time is not None
    record = acc.charge(0.25, label="described", method="custom", formula="y ~ x", size=("k", 4))
    assert record.size_text == "k = 4"
    with pytest.raises(dpstats.InvalidTypeError):
        acc.charge(0.1, size=4)
    with pytest.raises(dpstats.InvalidTypeError):
        acc.charge(0.1, formula=3)
    assert len(acc.history) == 2 and acc.spent() == (0.5, 1e-6)
    assert "my query" in acc.history_table() and "k = 4" in acc.history_table()


def test_print_states_the_sign_budget_and_its_best_case_beside_the_signs():
    # the best case is every block agreeing: counts (0, 0, B) give the blocks' sign with probability
    # exp(e B / 2) / (exp(e B / 2) + 2), e the sign step's epsilon per term (public, like B)
    df = dpstats.simulate(500, 8, 3, rho=0.3, snr=5, random_state=1).data
    fit = dpstats.dp_select("y ~ .", df, method="exponential", epsilon=2.0, s=3, bounds=(4, 4), random_state=1)
    entry = [e for e in fit.ledger if "private signs" in e.mechanism][0]
    per_term, blocks = entry.details["epsilon_per_term"], entry.details["blocks"]
    # sign_log_probabilities splits its epsilon over the rows (terms): three terms at per_term each
    best = float(np.exp(sign_log_probabilities(np.array([[0, 0, blocks]] * 3), per_term * 3)[0, 2]))
    line = [ln for ln in str(fit).splitlines() if ln.startswith("Selected terms")][0]
    assert f"epsilon {per_term:.3g} per term over {blocks} block votes" in line
    assert f"probability {best:.2f} at most" in line and best < 0.9
    # a large budget: no best-case note; epsilon = inf: nothing
    big = dpstats.dp_select("y ~ .", dpstats.simulate(5000, 8, 3, rho=0.3, snr=5, random_state=1).data,
                            method="exponential", epsilon=5.0, s=3, bounds=(4, 4), random_state=1)
    line = [ln for ln in str(big).splitlines() if ln.startswith("Selected terms")][0]
    assert "per term over" in line and "at most" not in line
    inf = dpstats.dp_select("y ~ .", df, method="exponential", epsilon=math.inf, s=3, bounds=(4, 4))
    assert [ln for ln in str(inf).splitlines() if ln.startswith("Selected terms")][0].endswith("with private signs:")
