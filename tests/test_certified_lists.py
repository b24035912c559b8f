"""Every certificate route certifies the same top-R lists and mistakes blocks as before the
redesign of the best-subset core (issue 27).

tests/data/certified_lists.json was recorded by tests/data/make_certified_lists.py on the
engine before the redesign (commit d65055d): small and medium versions of the
benchmarks/bench_public.py designs, each certified by its default route (the block search
for the squared loss; dual bounds and the dual branch and bound for the hinge loss) and by
the MILP with those routes switched off.  The refactored engine, on the same data and
settings, must return the same supports in the same order, values within the evaluation
error, and a certificate that still holds (lower bound >= v_R - tau_mip).
"""
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from dpstats.bss.engine import EngineSettings, OuterApproximationEngine

DATA = Path(__file__).parent / "data"
RECORDS = json.loads((DATA / "certified_lists.json").read_text())["cases"]
#: Routes recorded in more than this many seconds on the reference code run only with -m slow.
FAST_SECONDS = 5.0


def _maker():
    spec = importlib.util.spec_from_file_location("make_certified_lists", DATA / "make_certified_lists.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKER = _maker()
CASES = {case[0]: case for case in MAKER.CASES}


def build_engine(record):
    """The engine of a record, its route chosen by the engine's declared settings."""
    name, loss, n, p, s, rho, snr, R, _ = CASES[record["case"]]
    source, tau, ridge = MAKER.case_data(loss, n, p, s, rho, snr)
    assert tau == pytest.approx(record["tau"], rel=1e-12) and ridge == record["ridge"]
    routes = {"default": EngineSettings(),
              "milp": EngineSettings(exact_blocks=False, dual_bounds=False, dual_search=False)}
    assert source.ridge == ridge and source.radius == MAKER.RADIUS  # the objective is the source's
    return OuterApproximationEngine(source, s, tau, settings=routes[record["route"]])


def _param(record):
    slow = record["seconds"] > FAST_SECONDS
    return pytest.param(record, id=f"{record['case']}-{record['route']}",
                        marks=(pytest.mark.slow,) if slow else ())


@pytest.mark.parametrize("record", [_param(r) for r in RECORDS])
def test_route_certifies_the_recorded_lists(record):
    engine = build_engine(record)
    top = engine.top(record["R"])
    # the same supports in the same order; values within the evaluation error (exact up to
    # rounding for the squared loss, certified duality gaps for the hinge loss)
    atol = 2 * engine.tau_eval
    assert [list(k) for k in top.supports] == record["top_supports"]
    np.testing.assert_allclose(top.values, record["top_values"], rtol=0, atol=atol)
    assert top.lower_bound >= top.values[-1] - engine.tau_mip  # the certificate holds
    assert top.lower_bound == pytest.approx(record["top_lower_bound"], abs=engine.tau_mip)
    blocks = engine.mistakes(top.supports[0])
    assert [list(c.support) for c in blocks] == record["mistakes_supports"]
    np.testing.assert_allclose([c.value for c in blocks], record["mistakes_values"], rtol=0, atol=atol)
    for c in blocks:
        assert c.lower_bound >= c.value - engine.tau_mip
    # the routes that certified them are the recorded ones (counts of blocks and solves aside)
    assert _route_kinds(engine.certificate_route()) == _route_kinds(record["certificate_route"])


def _route_kinds(text):
    return re.sub(r" \([^)]*\)", "", text)


def test_fixture_covers_every_route():
    routes = {(r["loss"], r["route"]) for r in RECORDS}
    assert routes == {("squared", "default"), ("squared", "milp"), ("hinge", "default"), ("hinge", "milp")}
    kinds = " ".join(r["certificate_route"] for r in RECORDS)
    for part in ("block search", "dual bounds on every block", "dual branch and bound", "outer approximation"):
        assert part in kinds
    assert sum(r["seconds"] <= FAST_SECONDS for r in RECORDS) >= 8
