"""dpstats.plan in the user's units (issue 44, item 3): design=dict(rho=, r2=, spread=), plan(like=fit),
and a printout that states what was assumed.

``dp_select`` maps every term and the response by its public range, so a plan that simulates
standardised data with the bounds (spread, spread * sd(y)) is the plan of data in any units
whose ranges span +-spread standard deviations; these tests check that at the same seeds,
that r2 and snr state the same effect, that the default does not clip the simulated design,
and that ``like=fit`` reads the fit's public call only.
"""

import numpy as np
import pytest
from scipy import stats

import dpstats
from dpstats.simulate import response_sd
from dpstats.planning import DEFAULT_SPREAD, truth_probability

SMALL = dict(method="exponential", n=300, p=6, s=2, epsilon=2.0, reps=6, random_state=5)


# ---------------------------------------------------------------------------- argument errors
@pytest.mark.parametrize("kwargs, error, words", [
    (dict(design=dict(r2=0.5, snr=1.0)), dpstats.InvalidArgumentError, ["r2 or snr"]),
    (dict(design=dict(r2=1.0)), dpstats.InvalidArgumentError, ["design['r2']", "(0, 1)"]),
    (dict(design=dict(r2=0.0)), dpstats.InvalidArgumentError, ["design['r2']"]),
    (dict(design=dict(r2="half")), dpstats.InvalidTypeError, ["design['r2']"]),
    (dict(design=dict(spread=0)), dpstats.InvalidArgumentError, ["design['spread']"]),
    (dict(design=dict(spread=-2.0)), dpstats.InvalidArgumentError, ["design['spread']"]),
    (dict(design=dict(spread=3.0), bounds=(3, 3)), dpstats.InvalidArgumentError, ["bounds", "design['spread']"]),
    (dict(design=dict(spread_y=3.0), bounds=(3, 3)), dpstats.InvalidArgumentError, ["bounds", "design['spread_y']"]),
    (dict(design=dict(spread_y=0)), dpstats.InvalidArgumentError, ["design['spread_y']"]),
    (dict(design=dict(sd=2)), dpstats.InvalidArgumentError, ["unknown keys", "spread", "r2"]),
    (dict(like="a fit"), dpstats.InvalidTypeError, ["like must be a dp_select result"]),
])
def test_argument_errors_name_the_arguments(kwargs, error, words):
    with pytest.raises(error) as info:
        dpstats.plan(**{**SMALL, **kwargs})
    assert isinstance(info.value, dpstats.DPStatsError)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_required_arguments_without_like():
    args = {k: v for k, v in SMALL.items() if k != "n"}
    with pytest.raises(dpstats.InvalidTypeError, match="plan needs n"):
        dpstats.plan(**args)


# ---------------------------------------------------------------------------- r2 and snr
def test_r2_and_snr_state_the_same_effect():
    by_r2 = dpstats.plan(**SMALL, design=dict(rho=0.2, r2=0.5))
    by_snr = dpstats.plan(**SMALL, design=dict(rho=0.2, snr=1.0))
    assert by_r2.design["snr"] == 1.0 and by_r2.bounds == by_snr.bounds
    assert by_r2.probability == by_snr.probability
    # 0.8 / (1 - 0.8) is 4 only to rounding
    strong = dpstats.plan(**SMALL, design=dict(rho=0.2, r2=0.8))
    assert strong.probability == pytest.approx(dpstats.plan(**SMALL, design=dict(rho=0.2, snr=4.0)).probability,
                                               rel=1e-9)
    # and r2 is not read as an snr: snr 0.8 is a weaker effect, hence a lower prediction
    weak = dpstats.plan(**SMALL, design=dict(rho=0.2, snr=0.8))
    assert weak.probability < strong.probability - 0.05
    # compare and method="auto" take the same key
    from dpstats.method_choice import check_design

    assert check_design(dict(r2=0.5)) == {"r2": 0.5}
    with pytest.raises(dpstats.InvalidArgumentError, match="r2 or snr"):
        check_design(dict(r2=0.5, snr=1.0))


# ---------------------------------------------------------------------------- the default spread
@pytest.mark.parametrize("method", ["exponential", "top_r", "dp_sis"])
def test_the_default_spread_does_not_clip_the_simulated_design(method):
    planned = dpstats.plan(**{**SMALL, "method": method, "reps": 2}, design=dict(rho=0.3, snr=2.0))
    b_x, b_y = planned.bounds
    assert planned.design["spread"] == DEFAULT_SPREAD == b_x
    sd_y = response_sd(6, 2, 0.3, 2.0)
    assert b_y == pytest.approx(DEFAULT_SPREAD * sd_y)
    # terms have standard deviation 1, the response sd_y: each range clips 2 Phi(-b) of a normal
    assert 2 * stats.norm.sf(b_x) <= 1e-4 and 2 * stats.norm.sf(b_y / sd_y) <= 1e-4
    # the simulated calls clipped (almost) nothing: the data sets a plan draws, and its bounds
    seed = planned._seeds[0][0]
    data = planned._simulate(planned.n, seed).data
    assert np.mean(np.abs(data.drop(columns="y").to_numpy()) > b_x) <= 1e-3
    assert np.mean(np.abs(data["y"].to_numpy()) > b_y) <= 1e-3
    # methods without ranges get none, whatever the design says
    assert dpstats.plan(**{**SMALL, "method": "kendall", "reps": 2}, design=dict(spread=2.0)).bounds is None


def test_the_response_has_its_own_spread():
    """spread_y sets the response's bound (spread_y * sd(y)), the terms keep spread; and it reaches the printout
    and the compare suggestion (a documented response range is often many more of its standard deviations)."""
    planned = dpstats.plan(**SMALL, design=dict(rho=0.2, r2=0.5, spread=2.0, spread_y=10.0))
    assert planned.bounds == (2.0, 10.0 * response_sd(6, 2, 0.2, 1.0))
    text = str(planned)
    assert "spread_y" in text and "spread_y=10" in text
    same = dpstats.plan(**SMALL, design=dict(rho=0.2, r2=0.5, spread=2.0))
    assert same.bounds == (2.0, 2.0 * response_sd(6, 2, 0.2, 1.0))


def test_bounds_still_set_the_simulated_bounds_directly():
    old = dpstats.plan(**SMALL, bounds=(1, 1))
    assert old.bounds == (1.0, 1.0) and "spread" not in old.design
    assert old.probability != dpstats.plan(**SMALL).probability


# ---------------------------------------------------------------------------- units
def test_a_plan_is_the_same_in_any_units_with_correspondingly_rescaled_ranges():
    """The plan's per-data-set values equal those of dp_select on the same simulated data set
    rescaled to other units (each column a + b x) with ranges of +-spread of its standard
    deviation around a (the response: spread * sd(y) * b), at the same seeds."""
    n, p, s, eps, rho, r2, spread = 250, 6, 2, 3.0, 0.3, 0.6, 2.5
    planned = dpstats.plan(method="exponential", n=n, p=p, s=s, epsilon=eps, reps=4, random_state=9,
                           design=dict(rho=rho, r2=r2, spread=spread))
    sd_y = response_sd(p, s, rho, r2 / (1 - r2))
    rng = np.random.default_rng(0)
    centre = {c: float(v) for c, v in zip(["y"] + [f"x{j}" for j in range(p)], rng.uniform(-50, 200, p + 1))}
    scale = {c: float(v) for c, v in zip(centre, 10.0 ** rng.uniform(-3, 3, p + 1))}
    truth = frozenset(planned.truth)
    got = planned._values[(n, eps)][0]
    for i, (data_seed, mech_seed) in enumerate(planned._seeds):
        sim = dpstats.simulate(n, p, s, rho=rho, snr=r2 / (1 - r2), random_state=data_seed)
        units = sim.data.copy()
        ranges = {}
        for c in units.columns:
            half = spread * (sd_y if c == "y" else 1.0) * scale[c]
            units[c] = centre[c] + scale[c] * units[c]
            ranges[c] = (centre[c] - half, centre[c] + half)
        fit = dpstats.dp_select("y ~ .", units, method="exponential", epsilon=eps, s=s, bounds=ranges,
                                random_state=mech_seed, signs=False)
        q = truth_probability("exponential", fit.curator, truth, p, {})
        assert q is not None and q == pytest.approx(got[i], rel=1e-6, abs=1e-12), (i, q, got[i])
    assert 0.02 < planned.probability < 0.98  # a point where the ranges' width matters


# ---------------------------------------------------------------------------- like=fit
class _Tripwire(dict):
    """A curator that fails the test when anything reads it."""

    def _fail(self, *a, **k):
        raise AssertionError("plan(like=fit) read the fit's curator")

    __getitem__ = get = keys = items = values = __iter__ = __contains__ = __len__ = _fail


@pytest.fixture(scope="module")
def fit():
    sim = dpstats.simulate(400, 8, 2, rho=0.2, snr=1.0, random_state=21)
    data = sim.data * 7.0 + 100.0  # other units: the ranges below are the public ones
    ranges = {c: (100.0 - 7.0 * 3.0 * (2.0 if c == "y" else 1.0), 100.0 + 7.0 * 3.0 * (2.0 if c == "y" else 1.0))
              for c in data.columns}
    return dpstats.dp_select("y ~ .", data, method="exponential", epsilon=2.0, s=2, bounds=ranges, random_state=3)


DESIGN = dict(rho=0.2, r2=0.5, spread=3.0)


def test_like_reproduces_a_plan_built_by_hand_from_the_public_call(fit):
    call = fit.release()["call"]
    assert call["n"] == 400 and call["s"] == 2 and call["signs_share"] == 0.1
    fit.curator = _Tripwire()  # not public: never read
    fit.drop_data()
    like = dpstats.plan(like=fit, design=DESIGN, reps=5, random_state=2)
    by_hand = dpstats.plan(method="exponential", n=400, p=8, s=2, epsilon=2.0, signs=True, design=DESIGN, reps=5,
                           random_state=2)
    assert (like.method, like.n, like.p, like.s, like.epsilon, like.signs) == ("exponential", 400, 8, 2, 2.0, True)
    assert like.bounds == by_hand.bounds and like.design == by_hand.design
    assert like.table.equals(by_hand.table)
    # arguments given replace the fit's: a follow-up with a larger budget
    more = dpstats.plan(like=fit, design=DESIGN, reps=5, random_state=2, epsilon=6.0)
    assert more.table.equals(dpstats.plan(method="exponential", n=400, p=8, s=2, epsilon=6.0, signs=True,
                                          design=DESIGN, reps=5, random_state=2).table)
    assert more.probability > like.probability


def test_like_needs_the_design_stated_and_a_public_row_count(fit):
    with pytest.raises(dpstats.InvalidArgumentError, match=r"needs design= stating rho, r2 \(or snr\), spread"):
        dpstats.plan(like=fit, reps=2)
    with pytest.raises(dpstats.InvalidArgumentError, match="stating spread"):
        dpstats.plan(like=fit, design=dict(rho=0.2, snr=1.0), reps=2)
    sim = dpstats.simulate(120, 6, 2, random_state=1)
    kendall = dpstats.dp_select("y ~ .", sim.data, method="kendall", epsilon=2.0, s=2, random_state=0)
    assert "n" not in kendall.release()["call"]  # add/remove neighbours: the row count is private
    with pytest.raises(dpstats.InvalidArgumentError, match="row count is not public"):
        dpstats.plan(like=kendall, design=dict(rho=0.1, r2=0.5), reps=2)
    planned = dpstats.plan(like=kendall, n=300, design=dict(rho=0.1, r2=0.5), reps=2, random_state=0)
    assert (planned.method, planned.n, planned.p, planned.s, planned.bounds) == ("kendall", 300, 6, 2, None)


# ---------------------------------------------------------------------------- the printout
def test_the_printout_names_the_assumptions(fit):
    text = str(dpstats.plan(**SMALL, design=dict(rho=0.3, r2=0.4, spread=2.5)))
    sd_y = response_sd(6, 2, 0.3, 0.4 / 0.6)
    for part in ("method: exponential", "rho = 0.3", "R^2 = 0.4", "snr = 0.6667",
                 "public ranges span +-2.5 standard deviations of the data", "spread = 2.5, stated",
                 f"bounds = (2.5, {2.5 * sd_y:.4g})", "not public"):
        assert part in text, (part, text)
    default = str(dpstats.plan(**SMALL))
    assert "snr = 5 (R^2 = 0.833)" in default and "spread = 4, the default" in default and "0.0063 %" in default
    old = str(dpstats.plan(**SMALL, bounds=(1, 1)))
    assert "bounds = (1, 1) given directly" in old and "clip 32 % of a normal term" in old
    fit.curator = {}
    like = str(dpstats.plan(like=fit, design=DESIGN, reps=2, random_state=0))
    assert "planned like a fit's public call (method, n, p, s, epsilon, options)" in like
    assert "not read from the fit" in like and "R^2 = 0.5" in like and "+-3 standard deviations" in like
