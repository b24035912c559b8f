"""Record the top-R lists and mistakes blocks the certified engine returns, route by route.

Run from the repository root on the code whose answers are the reference (the engine before
the redesign of issue 27, commit d65055d):

    python tests/data/make_certified_lists.py > tests/data/certified_lists.json

Cases: small and medium versions of the ``benchmarks/bench_public.py`` designs (same
``dpstats.simulate`` draws, bounds=(1, 1), radius 1.1, ridge 0.1 n, tolerance 5e-4, an
intercept), for the squared loss (intercept profiled out, as dp_select does) and the hinge
loss (-1 / +1 response, intercept column forced).  Each case is certified by every route the
engine has: ``default`` (the block search for the squared loss; dual bounds and the dual
branch and bound for the hinge loss) and ``milp`` (those routes switched off, so the
outer-approximation MILP certifies).  tests/test_certified_lists.py checks that the engine
still certifies the same lists with the same values.
"""
from __future__ import annotations

import inspect
import json
import sys
import time

import numpy as np

from dpstats.bss import engine as engine_module
from dpstats.bss.engine import OuterApproximationEngine
from dpstats.errors import TimeLimitError
from dpstats.bss.gram import GramSource
from dpstats.bss.hinge import hinge_sensitivity
from dpstats.bss.hinge_source import HingeSource
from dpstats.bss.objective import SufficientStats, least_squares_sensitivity
from dpstats.simulate import simulate

TOLERANCE = 5e-4
HINGE_EVAL_SHARE = 0.125
RADIUS = 1.1

#: (name, loss, n, p, s, rho, snr, R, routes)
CASES = [
    ("sq-n200-p30-s4-rho0.1", "squared", 200, 30, 4, 0.1, 5.0, 20, ("default", "milp")),
    ("sq-n200-p30-s4-rho0.95", "squared", 200, 30, 4, 0.95, 5.0, 20, ("default", "milp")),
    ("sq-n200-p30-s4-snr0.1", "squared", 200, 30, 4, 0.1, 0.1, 20, ("default",)),
    ("sq-n100-p20-s3-snr0.1", "squared", 100, 20, 3, 0.1, 0.1, 10, ("default", "milp")),
    ("sq-n60-p80-s3-rho0.3", "squared", 60, 80, 3, 0.3, 5.0, 20, ("default", "milp")),
    ("sq-n1000-p250-s7-rho0.1", "squared", 1000, 250, 7, 0.1, 5.0, 100, ("default",)),
    ("sq-n1000-p250-s7-rho0.95", "squared", 1000, 250, 7, 0.95, 5.0, 100, ("default",)),
    ("sq-n1000-p250-s10-rho0.1", "squared", 1000, 250, 10, 0.1, 5.0, 100, ("default",)),
    ("hinge-n200-p24-s3-rho0.1", "hinge", 200, 24, 3, 0.1, 5.0, 10, ("default", "milp")),
    ("hinge-n200-p24-s3-rho0.7", "hinge", 200, 24, 3, 0.7, 2.0, 10, ("default", "milp")),
    ("hinge-n400-p60-s5-rho0.7", "hinge", 400, 60, 5, 0.7, 2.0, 30, ("default",)),
    ("hinge-n1000-p250-s7-rho0.1", "hinge", 1000, 250, 7, 0.1, 5.0, 100, ("default",)),
]
#: A route that takes longer than this (seconds) is left out of the fixture.
TIME_LIMIT = 120


def case_data(loss, n, p, s, rho, snr):
    """(source, tau, ridge) of one case, as dp_select builds them with bounds=(1, 1)."""
    sim = simulate(n, p, s, rho=rho, snr=snr, random_state=1, family="binomial" if loss == "hinge" else "gaussian")
    X = np.clip(sim.data.drop(columns="y").to_numpy(dtype=np.float64), -1.0, 1.0)
    y = sim.data["y"].to_numpy(dtype=np.float64)
    ridge = 0.1 * n
    if loss == "hinge":
        y = np.where(y > 0, 1.0, -1.0)
        tau = TOLERANCE * hinge_sensitivity(1.0, RADIUS, s, True)
        design = np.hstack([np.ones((n, 1)), X])
        source = HingeSource(design, y, ridge, RADIUS, intercept=True, gap_tolerance=HINGE_EVAL_SHARE * tau)
    else:
        y = np.clip(y, -1.0, 1.0)
        tau = TOLERANCE * least_squares_sensitivity(1.0, 1.0, RADIUS, s, True)
        stats = SufficientStats.centred_from_arrays(X, y)
        # the source fixes the objective's ridge and radius (issue 27); before it, the engine took them
        source = (GramSource(stats, ridge, RADIUS) if "ridge" in inspect.signature(GramSource).parameters
                  else GramSource(stats))
    return source, tau, ridge


def certify(case, route):
    name, loss, n, p, s, rho, snr, R, _ = case
    source, tau, ridge = case_data(loss, n, p, s, rho, snr)
    # the objective's ridge and radius: the source's after issue 27, the engine's arguments before
    objective = () if hasattr(source, "ridge") else (ridge, RADIUS)
    if route == "milp" and hasattr(engine_module, "EngineSettings"):  # the engine after issue 27
        engine = OuterApproximationEngine(source, s, *objective, tau, time_limit=TIME_LIMIT, exact_blocks=False,
                                          dual_bounds=False, dual_search=False)
    else:
        engine = OuterApproximationEngine(source, s, *objective, tau, time_limit=TIME_LIMIT)
    if route == "milp" and not hasattr(engine_module, "EngineSettings"):  # the reference engine (d65055d)
        engine.exact_blocks = False
        engine._far_by_dual_bounds = lambda anchor, threshold: None
        engine._far_by_dual_search = lambda anchor, threshold, skip: None
        engine._best_by_dual_bounds = lambda anchor: None
        engine._dual_block = lambda anchor, i, incumbent, cap=np.inf: None
    t0 = time.perf_counter()
    top = engine.top(R)
    blocks = engine.mistakes(top.supports[0])
    return {
        "case": name, "loss": loss, "n": n, "p": p, "s": s, "rho": rho, "snr": snr, "R": R,
        "route": route, "tau": tau, "ridge": ridge, "radius": RADIUS,
        "top_supports": [list(map(int, k)) for k in top.supports],
        "top_values": [float(v) for v in top.values],
        "top_lower_bound": float(top.lower_bound),
        "mistakes_supports": [list(map(int, c.support)) for c in blocks],
        "mistakes_values": [float(c.value) for c in blocks],
        "mistakes_lower_bounds": [float(c.lower_bound) for c in blocks],
        "certificate_route": engine.certificate_route(),
        "seconds": round(time.perf_counter() - t0, 2),
    }


if __name__ == "__main__":
    out = []
    only = sys.argv[1:]
    for case in CASES:
        if only and case[0] not in only:
            continue
        for route in case[-1]:
            try:
                rec = certify(case, route)
            except TimeLimitError:
                print(f"{case[0]:28s} {route:8s} over {TIME_LIMIT} s: left out", file=sys.stderr)
                continue
            print(f"{rec['case']:28s} {route:8s} {rec['seconds']:7.2f}s  {rec['certificate_route']}", file=sys.stderr)
            out.append(rec)
    json.dump({"generated_by": "tests/data/make_certified_lists.py at d65055d", "cases": out}, sys.stdout, indent=1)
    print()
