"""Is ``plan`` calibrated?  Predicted required n (or epsilon) against a direct simulation (issue 29, item 5).

For each design (method, p, s, epsilon, the simulated design's rho and snr) the script

1. times ``dpstats.plan(...).required_n(0.8)`` (or ``.required_epsilon(0.8)`` at a fixed n)
   with ``--plan-reps`` simulated data sets per evaluated point: the prediction x_pred;
2. runs ``dp_select`` directly on ``--seeds`` fresh simulated data sets (seeds disjoint from
   the plan's) at x_pred and at its neighbour a factor 1.15 towards the target (x_pred / 1.15
   when the recovery at x_pred is at least 0.8, else 1.15 x_pred; the same seeds at both),
   counting how often the call returns the true support: the simulated recovery, with its
   standard error sqrt(P (1 - P) / seeds);
3. estimates x_sim, where the simulated recovery reaches 0.8: a logistic curve in log x
   through the two points when they bracket it (the prediction is then within 15 %);
   otherwise x_sim is reported as "<" / ">" the nearer point and the error as "> 15%";
4. prints the relative error x_pred / x_sim - 1.

Both sides call ``dp_select`` with the planned arguments (``signs=False``, default bounds
(1, 1) for the methods that clip); the reference counts hits only (no curator
probability), so it shares no code with the prediction beyond dp_select and simulate.

``--compare issue`` (the design of the issue: top_r, n = 500, p = 10, s = 3, epsilon 5) or
``--compare INDEX`` (a design of the table): the rule before the change (linear
interpolation on the grid n x 1/4 .. 8) against the new search on the same plan, each
checked by ``--seeds`` direct calls at its answer.

``--model-error``: the models at p = 40 with their far terms drawn against the same models with
every column simulated (then q is the call's own probability; for top_r and mistakes every
support is scored, as on the call's exact path), 3 x ``--seeds`` data sets each.

``--exact`` passes ``plan(..., exact=True)``: whole calls simulated even where the method offers a
model of its statistics (``kendall`` from p = 500 on, :mod:`dpstats.screening.kendall_plan`); the
"how" column says what each prediction used.

Run:  nice python benchmarks/bench_plan_calibration.py [--seeds 100] [--plan-reps 30]
                                                       [--workers 2] [--only 0,3,5] [--exact]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TARGET = 0.8
BAND = 1.15

# (method, p, s, epsilon, n, axis, design): axis "n" predicts required_n at epsilon (n is the
# planned starting point of the search); axis "epsilon" predicts required_epsilon at n.
DESIGNS = [
    ("top_r", 100, 3, 4.0, 2000, "n", {}),
    ("top_r", 100, 3, 2.0, 4000, "n", {}),
    ("top_r", 100, 5, 4.0, 3000, "n", {}),
    ("top_r", 1000, 3, 4.0, 2800, "n", {}),
    ("top_r", 100, 3, 2.0, 2000, "epsilon", {}),
    ("mistakes", 100, 3, 4.0, 2400, "n", {}),
    ("mistakes", 100, 5, 2.0, 6000, "n", {}),
    ("mistakes", 1000, 3, 4.0, 3000, "n", {}),
    ("mistakes", 100, 3, 2.0, 2000, "epsilon", {}),
    ("dp_sis", 100, 3, 1.0, 1200, "n", {}),
    ("dp_sis", 1000, 5, 2.0, 1500, "n", {}),
    ("dp_sis", 1000, 10, 4.0, 1500, "n", {}),
    ("dp_sis", 100, 10, 0.5, 8000, "n", {}),
    ("dp_sis", 10000, 3, 4.0, 600, "n", {}),
    ("dp_sis", 1000, 5, 2.0, 1000, "epsilon", {}),
    ("kendall", 100, 3, 1.0, 600, "n", {}),
    ("kendall", 1000, 5, 2.0, 800, "n", {}),
    ("kendall", 1000, 10, 4.0, 800, "n", {}),
    ("kendall", 100, 5, 0.5, 3000, "n", {}),
    ("kendall", 10000, 3, 4.0, 400, "n", {}),
    # correlated and weak-signal designs, added with plan's models of the statistics (seventeenth session)
    ("kendall", 1000, 5, 2.0, 3000, "n", {"rho": 0.8}),
    ("kendall", 1000, 5, 2.0, 3000, "n", {"rho": 0.5, "snr": 0.5}),
    ("dp_sis", 1000, 5, 2.0, 8000, "n", {"rho": 0.5}),
    ("dp_sis", 1000, 5, 2.0, 3000, "n", {"snr": 0.5}),
]


def _bounds_of(method):
    """The bounds of the direct reference calls, given to the plan too: (1, 1) for the methods that
    clip (the calibration was measured at these; plan's own default is now spread 4), none for kendall
    and dpvote."""
    return {} if method in ("kendall", "dpvote") else {"bounds": (1, 1)}


def recovery(method, n, p, s, epsilon, design, seeds):
    """Share of ``seeds`` direct dp_select calls (fresh simulated data each) returning the truth."""
    import dpstats
    from dpstats.light_curator import light_curator

    truth = {f"x{j}" for j in range(1, 2 * s, 2)}
    bounds = _bounds_of(method)
    hits = 0
    for i in range(seeds):
        sim = dpstats.simulate(n, p, s, random_state=7_000_000 + i, **design)
        # only the support is read: the curator summaries that no release depends on are left
        # out (same support, tests/test_light_curator.py), 3-4x faster for kendall at p = 1000
        with light_curator():
            fit = dpstats.dp_select("y ~ .", sim.data, method=method, epsilon=epsilon, s=s, signs=False,
                                    random_state=9_000_000 + i, **bounds)
        hits += set(fit.support) == truth
    return hits / seeds


def crossing(xs, ps):
    """(relation, x) where the simulated curve reaches TARGET: ("=", x) inside the points,
    ("<", x0) below the first or (">", x_last) beyond the last."""
    from dpstats.plan_search import isotonic, logistic_crossing

    fitted = isotonic(ps, [1] * len(ps))
    if fitted[0] >= TARGET:
        return "<", xs[0]
    for i in range(1, len(xs)):
        if fitted[i] >= TARGET:
            return "=", logistic_crossing(xs[i - 1], xs[i], fitted[i - 1], fitted[i], TARGET, 200)
    return ">", xs[-1]


def run_design(args):
    index, (method, p, s, epsilon, n, axis, design), seeds, plan_reps = args[:4]
    plan_only = len(args) > 4 and args[4]
    exact = len(args) > 5 and args[5]
    precision = args[6] if len(args) > 6 else "default"
    import dpstats
    from dpstats.plan_search import DEFAULT_PRECISION

    precision = DEFAULT_PRECISION if precision == "default" else precision

    t0, c0 = time.perf_counter(), time.process_time()
    planned = dpstats.plan(method=method, n=n, p=p, s=s, epsilon=epsilon, design=design or None,
                           reps=plan_reps, random_state=100 + index, exact=exact, **_bounds_of(method))
    pred = (planned.required_n(TARGET, precision=precision) if axis == "n" else
            planned.required_epsilon(TARGET, precision=precision))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    points = len(planned.table)
    calls = int(planned.table["reps"].sum())  # simulated dp_select calls of the prediction
    answer = planned.answers[(axis, TARGET)]
    mc = dict(mc_se=answer["error"], dreps=answer["reps"])  # the plan's own error estimate, deciding data sets
    if pred is None or plan_only:
        return dict(index=index, pred=pred, seconds=seconds, cpu=cpu, points=points, calls=calls,
                    exact=float(planned.table["exact_share"].mean()), computed=planned.computed, **mc)
    def at(x):
        x = max(2, int(round(x))) if axis == "n" else x
        nn, ee = (x, epsilon) if axis == "n" else (n, x)
        return x, recovery(method, nn, p, s, ee, design, seeds)

    # x_pred, then the neighbour a factor 1.15 towards the target: the two bracket x_sim
    # when the prediction is within 15 %.
    x1, p1 = at(pred)
    x2, p2 = at(pred / BAND if p1 >= TARGET else pred * BAND)
    (xs, ps) = ([x2, x1], [p2, p1]) if x2 < x1 else ([x1, x2], [p1, p2])
    rel, x_sim = crossing(xs, ps)
    return dict(index=index, pred=pred, seconds=seconds, cpu=cpu, points=points, x1=x1, p1=p1, x2=x2, p2=p2, rel=rel,
                x_sim=x_sim, exact=float(planned.table["exact_share"].mean()), computed=planned.computed, **mc)


def old_rule(planned, target):
    """The rule before issue 29: the grid n x (1/4, 1/2, 1, 2, 4, 8), non-decreasing fit, then
    linear interpolation of P in log n between the bracketing grid points."""
    from dpstats.plan_search import isotonic

    grid = sorted({max(2, int(round(planned.n * f))) for f in (0.25, 0.5, 1, 2, 4, 8)})
    frame = planned.evaluate(n_grid=grid)
    x = frame["n"].to_numpy(dtype=float)
    fitted = isotonic(list(frame["probability"]), list(frame["reps"]))
    i = next(i for i, v in enumerate(fitted) if v >= target)
    if i == 0:
        return x[0]
    t = (target - fitted[i - 1]) / (fitted[i] - fitted[i - 1])
    return math.ceil(math.exp(math.log(x[i - 1]) + t * (math.log(x[i]) - math.log(x[i - 1]))))


ISSUE_DESIGN = ("top_r", 10, 3, 5.0, 500, "n", {})


def compare_rules(spec, seeds, reps):
    """Old rule against new on the same plan (``reps``), each checked by ``seeds`` direct calls."""
    import dpstats

    method, p, s, epsilon, n, _, design = spec
    planned = dpstats.plan(method=method, n=n, p=p, s=s, epsilon=epsilon, design=design or None, reps=reps,
                           random_state=1, **_bounds_of(method))
    new = planned.required_n(TARGET)
    old = old_rule(planned, TARGET)
    print(f"{method}, planned n = {n}, p = {p}, s = {s}, epsilon {epsilon:g}, plan reps = {reps}:")
    for name, value in (("old rule", old), ("new rule", new)):
        print(f"  {name}: required_n(0.8) = {value}; direct recovery at it = "
              f"{recovery(method, int(value), p, s, epsilon, design, seeds):.3f} ({seeds} calls)", flush=True)


#: --model-error: (method, rho, snr, s, n, epsilon) at p = 40, where every column can be simulated
MODEL_ERROR_CASES = [
    ("kendall", 0.1, 5.0, 3, 150, 1.0), ("kendall", 0.1, 5.0, 3, 300, 1.0), ("kendall", 0.1, 5.0, 3, 150, 8.0),
    ("kendall", 0.5, 5.0, 5, 400, 2.0), ("kendall", 0.5, 5.0, 5, 800, 2.0), ("kendall", 0.1, 0.5, 3, 600, 2.0),
    ("dp_sis", 0.1, 5.0, 3, 200, 1.0), ("dp_sis", 0.1, 5.0, 3, 300, 1.0), ("dp_sis", 0.5, 5.0, 3, 400, 1.0),
    ("dp_sis", 0.5, 5.0, 3, 800, 1.0), ("dp_sis", 0.1, 0.5, 3, 600, 1.0),
    # top_r and mistakes: at p = 40 their calls centre by private means wherever recovery is not ~0
    ("top_r", 0.1, 5.0, 3, 800, 2.0), ("top_r", 0.1, 5.0, 3, 900, 2.0), ("top_r", 0.5, 5.0, 3, 1000, 2.0),
    ("top_r", 0.1, 0.5, 3, 1500, 2.0), ("top_r", 0.1, 5.0, 4, 1200, 2.0),
    ("mistakes", 0.1, 5.0, 3, 900, 2.0), ("mistakes", 0.5, 5.0, 3, 1200, 2.0), ("mistakes", 0.1, 0.5, 3, 2000, 2.0),
]


def model_error(reps, methods=None):
    """plan's models of the statistics at p = 40: far terms drawn against every column simulated
    (no far terms: q is then the call's own probability), the same data and mechanism seeds."""
    from dpstats.bss.mistakes import MistakesPlanModel
    from dpstats.bss.top_r import TopRPlanModel
    from dpstats.screening.dp_sis import sis_sensitivity
    from dpstats.screening.dp_sis_plan import DPSISPlanModel
    from dpstats.screening.kendall_plan import KendallPlanModel

    p = 40
    print(f"model error at p = {p}: mean q over {reps} data sets, far terms drawn / every column simulated; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'method':8} {'rho':>4} {'snr':>4} {'s':>2} {'n':>5} {'eps':>4} {'near':>4}  {'model':>6} {'whole':>6} "
          f"{'diff':>7} {'se':>6}")
    for method, rho, snr, s, n, eps in MODEL_ERROR_CASES:
        if methods is not None and method not in methods:
            continue
        design = dict(rho=rho, snr=snr)
        if method == "kendall":
            model, whole = KendallPlanModel(p, s, design), KendallPlanModel(p, s, design, near=p)
        elif method in ("top_r", "mistakes"):  # every support of the 40 terms scored in ``whole``
            cls = TopRPlanModel if method == "top_r" else MistakesPlanModel
            model, whole = cls(p, s, design, (1, 1)), cls(p, s, design, (1, 1), near=p, enumeration=10**6)
        else:
            delta = sis_sensitivity(1.0, 1.0)
            model, whole = (DPSISPlanModel(p, s, design, (1, 1), {}, delta),
                            DPSISPlanModel(p, s, design, (1, 1), {}, delta, near=p))
        a = [model.simulate_one(n, eps, 10_000 + i, 20_000 + i)[0] for i in range(reps)]
        b = [whole.simulate_one(n, eps, 10_000 + i, 20_000 + i)[0] for i in range(reps)]
        d = [x - y for x, y in zip(a, b)]
        mean_d = sum(d) / reps
        se = math.sqrt(sum((v - mean_d) ** 2 for v in d) / (reps - 1) / reps)
        print(f"{method:8} {rho:>4g} {snr:>4g} {s:>2} {n:>5} {eps:>4g} {model.near:>4}  {sum(a) / reps:>6.3f} "
              f"{sum(b) / reps:>6.3f} {mean_d:>+7.3f} {se:>6.3f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--plan-reps", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=None, help="comma-separated design indices")
    parser.add_argument("--plan-only", action="store_true",
                        help="time the predictions only (no direct simulations, no errors)")
    parser.add_argument("--exact", action="store_true",
                        help="plan(..., exact=True): simulate whole calls where a method offers a model of its statistics")
    parser.add_argument("--model-error", action="store_true",
                        help="the models of the statistics at p = 40 against every column simulated")
    parser.add_argument("--methods", default=None, help="with --model-error: comma-separated methods only")
    parser.add_argument("--precision", default="default",
                        help="required_n's precision: a number, 'none', or 'default' (the package's)")
    parser.add_argument("--compare", default=None,
                        help="'issue' or a design index: the old rule against the new one on that design")
    args = parser.parse_args()
    if args.model_error:
        model_error(max(args.seeds, 2) * 3, None if args.methods is None else args.methods.split(","))
        return
    if args.compare is not None:
        spec = ISSUE_DESIGN if args.compare == "issue" else DESIGNS[int(args.compare)]
        compare_rules(spec, args.seeds, 100 if args.compare == "issue" else args.plan_reps)
        return
    chosen = range(len(DESIGNS)) if args.only is None else [int(v) for v in args.only.split(",")]
    precision = (None if args.precision == "none" else args.precision if args.precision == "default"
                 else float(args.precision))
    jobs = [(i, DESIGNS[i], args.seeds, args.plan_reps, args.plan_only, args.exact, precision) for i in chosen]
    se = math.sqrt(TARGET * (1 - TARGET) / args.seeds)
    print(f"plan calibration: target P = {TARGET}; prediction with plan(reps={args.plan_reps}); reference: "
          f"{args.seeds} direct dp_select calls per point (standard error {se:.3f} at P = {TARGET}) at "
          f"x_pred and x_pred * {BAND}^(+-1) towards the target; precision {args.precision}; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    header = (f"{'#':>2} {'method':8} {'p':>5} {'s':>2} {'eps':>4} {'rho/snr':>7} {'solve':7} {'predicted':>9} "
              f"{'wall s':>6} {'cpu s':>6} {'pts':>3} {'exact':>5} {'how':>6}  {'P(pred)':>7} {'x2':>7} {'P(x2)':>5}  "
              f"{'x_sim':>9} {'rel.err':>7} {'mc.se':>6} {'dreps':>5}")
    print(header, flush=True)
    errors, count, cpu_total = [], 0, 0.0
    if args.workers > 1:
        from multiprocessing import Pool

        pool = Pool(args.workers)
        results = pool.imap(run_design, jobs)
    else:
        pool, results = None, map(run_design, jobs)
    for r in results:
        count += 1
        cpu_total += r["cpu"]
        method, p, s, eps, n, axis, design = DESIGNS[r["index"]]
        rs = f"{design.get('rho', 0.1):g}/{design.get('snr', 5.0):g}"
        solve = "n" if axis == "n" else f"eps@{n}"
        fmt = (lambda v: f"{v:.0f}") if axis == "n" else (lambda v: f"{v:.3g}")
        mc = ("-" if r["mc_se"] is None else f"{r['mc_se']:.1%}") + f" {r['dreps']:>5}"
        if r["pred"] is None or args.plan_only:
            shown = "none" if r["pred"] is None else fmt(r["pred"])
            print(f"{r['index']:>2} {method:8} {p:>5} {s:>2} {eps:>4g} {rs:>7} {solve:7} {shown:>9} "
                  f"{r['seconds']:>6.1f} {r['cpu']:>6.1f} {r['points']:>3} {r['exact']:>5.2f} {r['computed'][:6]:>6}  "
                  f"calls {r['calls']:>4} "
                  f"cpu/call {r['cpu'] / max(r['calls'], 1):.3f}  mc.se {mc}", flush=True)
            continue
        if r["rel"] == "=":
            err = r["pred"] / r["x_sim"] - 1
            errors.append(abs(err))
            xs, es = fmt(r["x_sim"]), f"{err:+.1%}"
        else:
            xs = r["rel"] + fmt(r["x_sim"])
            es = "> 15%"  # the simulated crossing lies outside [x_pred / 1.15, 1.15 x_pred]
        print(f"{r['index']:>2} {method:8} {p:>5} {s:>2} {eps:>4g} {rs:>7} {solve:7} {fmt(r['pred']):>9} "
              f"{r['seconds']:>6.1f} {r['cpu']:>6.1f} {r['points']:>3} {r['exact']:>5.2f} {r['computed'][:6]:>6}  "
              f"{r['p1']:>7.3f} "
              f"{fmt(r['x2']):>7} "
              f"{r['p2']:>5.3f}  {xs:>9} {es:>7} {mc:>12}", flush=True)
    if pool is not None:
        pool.close()
    if args.plan_only:
        print(f"\n{count} predictions, {cpu_total:.1f} CPU s in all; load {os.getloadavg()[0]:.1f}")
        return
    inside = sum(e <= 0.15 for e in errors)
    print(f"\n{inside} of {count} designs within 15 % (x_sim bracketed); median |rel.err| "
          f"{sorted(errors)[len(errors) // 2] if errors else float('nan'):.1%}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
