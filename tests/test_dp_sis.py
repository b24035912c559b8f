"""method="dp_sis": scores, sensitivities, privacy audits and the dp_select path."""
import math

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats import Accountant
from dpstats.errors import InvalidArgumentError, InvalidTypeError
from dpstats.mechanisms.lipschitz_topk import subset_log_probabilities
from dpstats.privacy.ledger import REPLACE_ONE
from dpstats.screening import dp_sis


def small_data(n=12, d=4, seed=0, b=1.0):
    gen = np.random.default_rng(seed)
    X = np.clip(gen.normal(scale=0.6, size=(n, d)), -b, b)
    y = np.clip(X[:, 0] - 0.5 * X[:, 2] + gen.normal(scale=0.3, size=n), -b, b)
    return X, y


def test_scores_match_direct_formulas():
    X, y = small_data(n=30, d=5)
    np.testing.assert_allclose(dp_sis.sis_scores(X, y), np.abs(X.T @ y))
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    np.testing.assert_allclose(dp_sis.sis_scores(X, y, "data"), np.abs(Xc.T @ yc), atol=1e-12)
    cx, cy = np.array([0.1, -0.2, 0.0, 0.3, 0.5]), 0.25
    np.testing.assert_allclose(dp_sis.sis_scores(X, y, None, cx, cy), np.abs((X - cx).T @ (y - cy)), atol=1e-12)


def replace_one_neighbours(X, y, b_x, b_y, gen, random=10):
    """Every row replaced by adversarial corners (at the bounds) and by random records."""
    d = X.shape[1]
    corners = [(np.full(d, s1 * b_x), s2 * b_y) for s1 in (-1, 1) for s2 in (-1, 1)]
    corners += [(np.where(np.arange(d) % 2 == 0, b_x, -b_x), b_y), (np.zeros(d), 0.0)]
    for i in range(X.shape[0]):
        for x_new, y_new in corners + [(gen.uniform(-b_x, b_x, d), gen.uniform(-b_y, b_y)) for _ in range(random)]:
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = x_new, y_new
            yield X2, y2


@pytest.mark.parametrize("center", [None, "data", "public"])
def test_audit_replace_one(center):
    b_x, b_y, eps, k = 1.0, 1.0, 1.0, 2
    X, y = small_data(n=8, d=4, b=b_x)
    cx, cy = (np.array([0.2, -0.4, 0.0, 0.1]), 0.3) if center == "public" else (None, 0.0)
    mode = "data" if center == "data" else None
    delta = dp_sis.sis_sensitivity(b_x, b_y, mode, cx, cy)
    z = dp_sis.sis_scores(X, y, mode, cx, cy) / delta
    _, logp = subset_log_probabilities(z, k, eps)
    gen = np.random.default_rng(1)
    worst, worst_score_move = 0.0, 0.0
    for X2, y2 in replace_one_neighbours(X, y, b_x, b_y, gen):
        z2 = dp_sis.sis_scores(X2, y2, mode, cx, cy) / delta
        worst_score_move = max(worst_score_move, np.max(np.abs(z2 - z)))
        _, logp2 = subset_log_probabilities(z2, k, eps)
        worst = max(worst, np.max(np.abs(logp - logp2)))
    assert worst_score_move <= 1 + 1e-12  # the stated sensitivity holds on these neighbours
    assert worst <= eps * (1 + 1e-9)


def test_center_data_needs_more_than_the_plain_sensitivity():
    # With center="data", 2 b_x b_y would be too small: a column and y all at +b, then one
    # record moved to (-b, -b), moves the centred cross-product by 4 b^2 (n - 1) / n.
    b, n = 1.0, 10
    X, y = np.full((n, 2), b), np.full(n, b)
    gen = np.random.default_rng(2)
    z = dp_sis.sis_scores(X, y, "data")
    moves = [np.max(np.abs(dp_sis.sis_scores(X2, y2, "data") - z)) for X2, y2 in replace_one_neighbours(X, y, b, b, gen)]
    assert max(moves) == pytest.approx(4 * b * b * (n - 1) / n)
    assert max(moves) > dp_sis.PLAIN_FACTOR * b * b
    assert max(moves) <= dp_sis.CENTER_DATA_FACTOR * b * b


def frame(n=80, p=30, seed=0):
    return dpstats.simulate(n, p, 3, random_state=seed)


def test_infinite_epsilon_is_plain_sis():
    sim = frame()
    df = sim.data
    r = dpstats.dp_select("y ~ .", df, method="dp_sis", epsilon=math.inf, k=3, bounds=(3, 6), random_state=0)
    X = np.clip(df.drop(columns="y").to_numpy(), -3, 3)
    y = np.clip(df["y"].to_numpy(), -6, 6)
    # the default score is centred by the data's means
    top = np.argsort(-np.abs((X - X.mean(axis=0)).T @ (y - y.mean())))[:3]
    assert sorted(r.support) == sorted(df.columns[1:][top])
    assert r.curator["probability_true_topk"] == 1.0


def test_dp_select_ledger_signs_and_curator():
    sim = frame()
    r = dpstats.dp_select("y ~ .", sim.data, method="dp_sis", epsilon=2.0, k=3, bounds=(3, 6), random_state=1)
    assert len(r.support) == 3
    assert r.epsilon_spent == pytest.approx(2.0)
    entries = r.ledger.entries
    # center="auto": 31 means from 80 rows would be noise (expected radius 2 * 31 / (80 * 0.18) > 1),
    # so the public midpoints centre for free; mapped to [-1, 1]
    assert entries[0].details["sensitivity"] == pytest.approx(2 * 1 * 1)
    assert entries[0].details["center"] == "public midpoints"
    assert entries[0].neighbours == REPLACE_ONE and entries[-1].neighbours == REPLACE_ONE
    assert "signs" in entries[-1].released
    rel = r.release()
    assert set(rel["selected"]) == set(r.support)
    assert "probability_true_topk" not in str(rel)
    text = str(r.curator_report())
    assert "probability true topk" in text and "non private ranking" in text
    assert 0 < r.curator["probability_true_topk"] < 1


def test_center_options_in_dp_select():
    sim = frame()
    df = sim.data
    r = dpstats.dp_select("y ~ .", df, method="dp_sis", epsilon=2.0, k=2, bounds=(3, 6), center="data", random_state=1)
    assert r.ledger.entries[0].details["sensitivity"] == pytest.approx(6 * 1 * 1)  # bounds (3, 6) map to [-1, 1]
    r = dpstats.dp_select("y ~ .", df, method="dp_sis", epsilon=2.0, k=2, bounds=(3, 6), center=(0.5, -1.0),
                          random_state=1)
    # the public centres are mapped like the data: 0.5 / 3 and -1 / 6
    assert r.ledger.entries[0].details["sensitivity"] == pytest.approx(2 * (1 + 0.5 / 3) * (1 + 1 / 6))
    r = dpstats.dp_select("y ~ x0 + x1 + x2", df, method="dp_sis", epsilon=2.0, k=2,
                          bounds={"x0": 2, "x1": 2, "x2": 4, "y": 5}, center={"x2": 2.0, "y": 1.0}, random_state=1)
    # dict bounds rescale to [-1, 1]; the centres are rescaled by the same public bounds
    assert r.ledger.entries[0].details["sensitivity"] == pytest.approx(2 * (1 + 0.5) * (1 + 0.2))


def test_bad_input_raises_before_charging():
    sim = frame()
    df = sim.data
    acc = Accountant(epsilon=10)
    for kw, err in [(dict(k=0), InvalidArgumentError), (dict(k=31), InvalidArgumentError),
                    (dict(k=2, center="mean"), InvalidArgumentError), (dict(k=2, center=3), InvalidTypeError),
                    (dict(k=2, center={"nope": 1.0}), InvalidArgumentError)]:
        with pytest.raises(err):
            dpstats.dp_select("y ~ .", df, method="dp_sis", epsilon=1.0, bounds=(3, 6), accountant=acc, **kw)
    with pytest.raises(InvalidArgumentError, match="bounds"):
        dpstats.dp_select("y ~ .", df, method="dp_sis", epsilon=1.0, k=2, accountant=acc)
    assert acc.remaining()[0] == pytest.approx(10)


def test_constant_column_is_handled_totally():
    # Whether a column varies is data: no free error; a constant term carries no signal.
    sim = frame()
    df = sim.data.copy()
    df["const"] = 1.0
    acc = Accountant(epsilon=5)
    fit = dpstats.dp_select("y ~ .", df, method="dp_sis", epsilon=math.inf, k=3, bounds=(3, 6))
    assert "const" not in fit.support
    dpstats.dp_select("y ~ .", df, method="dp_sis", epsilon=1.0, k=3, bounds=(3, 6), accountant=acc)
    assert acc.remaining()[0] == pytest.approx(4)


def test_bounds_auto_spends_its_share():
    sim = frame()
    r = dpstats.dp_select("y ~ .", sim.data, method="dp_sis", epsilon=2.0, k=2, bounds="auto", random_state=3)
    assert r.epsilon_spent == pytest.approx(2.0)
    assert r.ledger.entries[0].mechanism.startswith("private ranges")
    assert r.ledger.entries[0].epsilon == pytest.approx(0.2)  # 10 % of epsilon
    assert set(r.release()["bounds_used"]) == set(r.ledger.entries[0].released)


def test_default_centring_ranks_by_association_not_by_means():
    # Uncentred, |x_j' y| ranks columns by their means as much as by their association
    # with y: on diabetes it picked age, sex, bp.  Centred (the default) it picks the
    # columns with the largest |covariance| on the bounded scale.
    # The codebook's ranges (lower, upper); their symmetric versions (-upper, upper) map
    # each column by division by the upper end, which keeps the columns' means away from
    # 0, so that the uncentred score shows the effect of the means.
    d = dpstats.load_dataset("diabetes")
    bounds = dpstats.dataset_bounds("diabetes")
    symmetric = {t: (-upper, upper) for t, (_, upper) in bounds.items()}
    fit = dpstats.dp_select("y ~ .", d, method="dp_sis", epsilon=math.inf, k=3, bounds=bounds, scale=None)
    plain = dpstats.dp_select("y ~ .", d, method="dp_sis", epsilon=math.inf, k=3, bounds=symmetric,
                              center="none")
    # The default also divides by (here exact) standard deviations: the SIS ranking by correlation.
    default = dpstats.dp_select("y ~ .", d, method="dp_sis", epsilon=math.inf, k=3, bounds=bounds)
    corr = np.abs([np.corrcoef(np.clip(d[t], *bounds[t]), np.clip(d["y"], *bounds["y"]))[0, 1]
                   for t in default.terms])
    assert sorted(default.support) == sorted(default.terms[j] for j in np.argsort(-corr)[:3])
    assert sorted(default.support) == ["bmi", "bp", "s5"]
    assert sorted(plain.support) == ["age", "bp", "sex"]

    def mapped(t):  # clipped to the range, then mapped affinely onto [-1, 1]
        lower, upper = bounds[t]
        return (np.clip(d[t].to_numpy(), lower, upper) - (lower + upper) / 2) / ((upper - lower) / 2)

    X = np.column_stack([mapped(t) for t in fit.terms])
    y = mapped("y")
    cov = np.abs((X - X.mean(axis=0)).T @ (y - y.mean()))
    assert sorted(fit.support) == sorted(fit.terms[j] for j in np.argsort(-cov)[:3])
    assert {"bmi", "bp"} <= set(fit.support)


def test_default_centring_buys_private_means_when_they_are_affordable():
    sim = frame(n=3000, p=10)  # 2 * 22 / (3000 * 0.18) = 0.08 <= 0.1: means and sds bought
    r = dpstats.dp_select("y ~ .", sim.data, method="dp_sis", epsilon=2.0, k=3, bounds=(3, 6), random_state=1)
    means, sis = r.ledger.entries[0], r.ledger.entries[1]
    assert means.mechanism.startswith("private means and second moments") and means.released == {}
    assert means.details["columns"] == 2 * (10 + 1)
    assert means.epsilon == pytest.approx(0.1 * 1.8) and sis.epsilon == pytest.approx(0.9 * 1.8)
    assert sis.details["sensitivity"] == pytest.approx(2.0) and sis.details["center"] == "private means"
    assert sis.details["scale"] == "private standard deviations"
    assert r.epsilon_spent == pytest.approx(2.0)
    # epsilon = inf: exact moments; the score is |clip((x - xbar) / 3 sd_x)' clip((y - ybar) / 3 sd_y)|
    X = np.clip(sim.data.drop(columns="y").to_numpy(), -3, 3) / 3
    y = np.clip(sim.data["y"].to_numpy(), -6, 6) / 6
    for scale, wx, wy in (("sd", 3 * X.std(axis=0), 3 * y.std()), (None, 1.0, 1.0)):
        inf = dpstats.dp_select("y ~ .", sim.data, method="dp_sis", epsilon=math.inf, k=3, bounds=(3, 6),
                                scale=scale)
        score = np.abs(np.clip((X - X.mean(axis=0)) / wx, -1, 1).T @ np.clip((y - y.mean()) / wy, -1, 1))
        assert sorted(inf.support) == sorted(f"x{j}" for j in np.argsort(-score)[:3])


def test_centred_score_sensitivity_by_brute_force():
    # Given any released means, |clip(x - m)' clip(y - m_y)| moves by at most 2 when one row is
    # replaced (rows at the corners of the mapped cube are the extreme replacements).
    from dpstats.screening.dp_sis import centred_products

    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(30):
        X, y = rng.uniform(-1, 1, (9, 4)), rng.uniform(-1, 1, 9)
        cx, cy = rng.uniform(-1, 1, 4), rng.uniform(-1, 1)
        # with or without private standard deviations (any released values)
        wx, wy = (1.0, 1.0) if _ % 2 else (rng.uniform(0.05, 1, 4), rng.uniform(0.05, 1))
        base = np.abs(centred_products(X, y, cx, cy, wx, wy))
        for i in range(9):
            for xr in (np.ones(4), -np.ones(4), np.sign(rng.normal(size=4))):
                for yr in (-1.0, 1.0):
                    X2, y2 = X.copy(), y.copy()
                    X2[i], y2[i] = xr, yr
                    moved = np.abs(centred_products(X2, y2, cx, cy, wx, wy))
                    worst = max(worst, float(np.max(np.abs(moved - base))))
    assert 1.5 < worst <= 2.0 + 1e-12


def test_curator_compares_with_the_correlation_ranking():
    # Two terms with the same correlation with y; the first's public range is ten times too
    # wide for its spread, so its covariance on the mapped scale is ten times smaller.
    rng = np.random.default_rng(0)
    n = 500
    a, b, c = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    y = a + b + 0.3 * c + rng.normal(size=n)
    data = pd.DataFrame({"y": y, "a": a, "b": b, "c": c})
    bounds = {"a": (-40, 40), "b": (-4, 4), "c": (-4, 4), "y": (-10, 10)}
    fit = dpstats.dp_select("y ~ .", data, method="dp_sis", epsilon=5.0, k=2, bounds=bounds, random_state=0,
                            scale=None)
    corr = np.abs([np.corrcoef(data[t], y)[0, 1] for t in ("a", "b", "c")])
    assert sorted(fit.curator["correlation_topk"]) == sorted(np.array(["a", "b", "c"])[np.argsort(-corr)[:2]])
    assert sorted(fit.curator["non_private_topk"]) == ["b", "c"]
    assert any("correlation" in w for w in fit.curator["fit_warnings"])
    assert 0 <= fit.curator["probability_correlation_topk"] < fit.curator["probability_true_topk"]
    assert 0 <= fit.curator["expected_overlap_with_correlation_topk"] <= 2

    # The default divides by private standard deviations (affordable here): it ranks by correlation.
    default = dpstats.dp_select("y ~ .", data, method="dp_sis", epsilon=5.0, k=2, bounds=bounds, random_state=0)
    assert sorted(default.curator["non_private_topk"]) == sorted(fit.curator["correlation_topk"])
    assert "fit_warnings" not in default.curator
    assert default.curator["probability_correlation_topk"] > fit.curator["probability_correlation_topk"]


def test_verdict_judges_against_the_correlation_ranking_when_the_ranges_reorder_it():
    from dpstats.conditions import plain_verdict

    curator = {"non_private_topk": ["b", "c"], "probability_true_topk": 0.9,
               "correlation_topk": ["a", "b"], "probability_correlation_topk": 1e-3}
    meth = dpstats.methods.get_method("dp_sis")
    text = " ".join(plain_verdict(meth, curator, p=3, size=2, epsilon=1.0))
    assert "by correlation" in text and "0.001" in text
    curator["correlation_topk"] = ["c", "b"]
    text = " ".join(plain_verdict(meth, curator, p=3, size=2, epsilon=1.0))
    assert "non-private top k with probability 0.9" in text


def test_scale_sd_needs_private_means():
    with pytest.raises(InvalidArgumentError, match="scale='sd' needs center"):
        dpstats.dp_select("y ~ .", frame().data, method="dp_sis", epsilon=1.0, k=2, bounds=(3, 6), center="data",
                          scale="sd")


def test_auto_centring_waits_for_accurate_means():
    # The score clips centred values, so "auto" buys means (and sds) only at expected noise
    # radius <= 0.1: at p = 100, epsilon 0.5 (means share 0.05), 2 (p + 1) / (n 0.05) <= 0.1
    # from n = 40400 on, and the 2 (p + 1) moments from n = 80800.  With the intercept's limit 1
    # the means were bought from n = 4040, where they made recovery collapse (module constant).
    from dpstats.screening.dp_sis import resolved_center, resolved_scale

    d, p, eps = 101, 100, 0.5
    assert resolved_center("auto", d=d, n=40399, epsilon=eps) is None
    assert resolved_center("auto", d=d, n=40400, epsilon=eps) == "means"
    assert resolved_center("auto", d=d, n=4040, epsilon=eps) is None
    assert resolved_scale("auto", "means", p=p, n=80799, epsilon=eps) is None
    assert resolved_scale("auto", "means", p=p, n=80800, epsilon=eps) == "sd"
    assert resolved_scale("auto", None, p=p, n=10**7, epsilon=eps) is None  # sds come with means only
    # explicit choices are kept whatever the noise
    assert resolved_center("means", d=d, n=100, epsilon=eps) == "means"
