"""The MILP route on CBC is installed and exercised on every configuration (issue 15, item 8).

The exact block search certifies almost every squared-loss query without a MILP, so the
default suite could pass with a broken solver; these tests force CBC to answer.
"""
import numpy as np
import pytest

import mip

from dpstats.bss.engine import OuterApproximationEngine
from dpstats.bss.exhaustive import enumerate_supports
from dpstats.bss.objective import RidgeBallObjective, SufficientStats


def test_cbc_loads_and_solves_a_small_milp():
    m = mip.Model(sense=mip.MAXIMIZE, solver_name=mip.CBC)
    m.verbose = 0
    x = [m.add_var(var_type=mip.BINARY) for _ in range(4)]
    m.objective = mip.xsum(c * v for c, v in zip([5, 4, 3, 2], x))
    m += mip.xsum(w * v for w, v in zip([2, 3, 1, 4], x)) <= 5
    assert m.optimize() == mip.OptimizationStatus.OPTIMAL
    assert m.objective_value == pytest.approx(9.0)
    assert [round(v.x) for v in x] == [1, 1, 0, 0]


@pytest.mark.parametrize("seed", [3, 4])
def test_squared_loss_engine_on_the_milp_route_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (60, 10))
    y = np.clip(X[:, :2] @ np.array([0.6, -0.5]) + 0.1 * rng.normal(size=60), -1, 1)
    stats = SufficientStats.from_arrays(X, y)
    obj = RidgeBallObjective(stats, 2.0, 1.0)
    sups = enumerate_supports(10, 3)
    vals = obj.values(obj.full_support(stats.candidates[sups]))
    # the MILP certifies instead of the exact block search
    eng = OuterApproximationEngine.from_stats(stats, 3, 2.0, 1.0, 1e-6, exact_blocks=False)
    best = eng.best()
    top = eng.top(5)
    assert eng.stats.milp_solves > 0 and "CBC" in eng.certificate_route()
    assert best.value <= vals.min() + 1e-6 and best.lower_bound <= vals.min() + 1e-9
    np.testing.assert_allclose(top.values, np.sort(vals)[:5], atol=1e-6)
