"""Exact mistakes blocks by Schur-complement branch and bound against brute force (issue 3)."""
import numpy as np
import pytest

from dpstats.bss.blocks import minimise_block
from dpstats.bss.engine import OuterApproximationEngine
from dpstats.bss.gram import GramSource, MatrixFreeSource
from dpstats.bss.objective import RidgeBallObjective

from test_engine import brute, instance


def block_oracle(stats, s, lam, r, anchor):
    sups, vals, _ = brute(stats, s, lam, r)
    in0 = np.zeros(stats.candidates.size, dtype=bool)
    in0[list(anchor)] = True
    count = (~in0[sups]).sum(axis=1)
    return sups, vals, count


CASES = [
    # seed, p, s, rho, snr, lam, r, intercept
    (0, 10, 3, 0.1, 5.0, 20.0, 1.1, True),    # ball inactive near the optimum
    (1, 11, 4, 0.5, 1.0, 5.0, 0.4, False),    # ball active: the weak-duality bound with mu > 0
    (2, 12, 3, 0.8, 0.5, 1.0, 50.0, True),    # small ridge, strong correlation
    (3, 9, 4, 0.0, 10.0, 100.0, 0.3, False),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("matrix_free", [False, True])
def test_block_minimum_matches_brute_force(case, matrix_free):
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, Xf, y = instance(seed, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    source = MatrixFreeSource(Xf, y, icpt) if matrix_free else GramSource(stats)
    obj = RidgeBallObjective(stats, lam, r)
    sups, vals, _ = brute(stats, s, lam, r)
    rng = np.random.default_rng(seed)
    offset = 1 if icpt else 0
    evaluate = lambda a: obj.values(obj.full_support(stats.candidates[np.asarray(a)]))  # noqa: E731
    slack = 1e-7
    for anchor in [tuple(sups[np.argmin(vals)]), tuple(sorted(rng.choice(p, s, replace=False)))]:
        _, _, count = block_oracle(stats, s, lam, r, anchor)
        full = np.concatenate([[0] * offset, np.array(anchor) + offset]).astype(np.int64)
        for i in range(1, min(s, p - s) + 1):
            members = np.nonzero(count == i)[0]
            truth = vals[members].min()
            # a deliberately poor incumbent: the worst member of the block
            worst = members[np.argmax(vals[members])]
            for mu in (0.0, 3.0):
                res = minimise_block(source, full, offset, i, lam, r, (tuple(sups[worst]), vals[worst]), slack,
                                     evaluate, mu=mu)
                assert res is not None
                assert len(set(res.support) - set(anchor)) == i
                assert res.value == pytest.approx(evaluate(np.array([res.support]))[0], abs=1e-9)
                assert res.value <= truth + slack + 1e-9
                assert res.lower_bound <= truth + 1e-9  # never above the exact block minimum
                assert res.lower_bound >= res.value - slack - 1e-9


def test_node_cap_gives_up_and_engine_falls_back():
    stats, _, _ = instance(4, p=12, s=4, rho=0.3, snr=0.5, intercept=True)
    lam, r = 2.0, 100.0
    sups, vals, order = brute(stats, 4, lam, r)
    anchor = tuple(sups[order[0]])
    full = np.concatenate([[0], np.array(anchor) + 1]).astype(np.int64)
    obj = RidgeBallObjective(stats, lam, r)
    evaluate = lambda a: obj.values(obj.full_support(stats.candidates[np.asarray(a)]))  # noqa: E731
    _, _, count = block_oracle(stats, 4, lam, r, anchor)
    worst = np.nonzero(count == 3)[0][np.argmax(vals[count == 3])]
    assert minimise_block(GramSource(stats), full, 1, 3, lam, r, (tuple(sups[worst]), vals[worst]), 1e-7,
                          evaluate, max_nodes=1) is None
    # the engine on the MILP path only (exact blocks off, and with a one-node cap) agrees
    for setting in ({"exact_blocks": False}, {"exact_block_nodes": 1}):
        eng = OuterApproximationEngine.from_stats(stats, 4, lam, r, 1e-6)
        for k, v in setting.items():
            setattr(eng, k, v)
        mis = eng.mistakes()
        for i, c in enumerate(mis, 1):
            assert c.value <= vals[count == i].min() + 1e-6
            assert c.lower_bound <= vals[count == i].min() + 1e-9
        assert all(not e.get("exact", False) for e in eng.stats.log if "block" in e)
