"""What `s="auto"` costs with `top_r` against a fixed-size call at s_max, and where it goes (issue 46, item 3).

ISLR's College (``real_data_cases.CASES["college"]``, n = 777, codebook ranges), its first
``--terms`` numeric terms and all their pairwise interactions (13 terms: p = 91 candidates), through
``dp_select(..., method="top_r", epsilon=2, signs=False, random_state=0)``:

* ``fixed``: s = s_max with the default R = 100 (the call `s="auto"` is compared with);
* ``auto``: ``s="auto", s_max=s_max`` (a size stage that certifies the best support of every size
  1..s_max, then top_r at the released size);
* ``per size``: s = 1..s_max with R = 1, each size's certificate alone (what the size stage runs),
  with the certificate's path.

Each call has ``--time-limit`` seconds (dp_select's own ``time_limit``); a call that runs out says so.

``--public``: instead, simulated designs of ``bench_public.py`` (``dpstats.simulate(n, p, s, rho, snr,
random_state=1)``, bounds (1, 1), radius 1.1 as there; epsilon ``--epsilon``, 1 as there, or a comma-separated
list), the fixed s = s_max = s call (R = 100) against ``s="auto"`` with that s_max, the released size and the
sizes certified; ``--designs`` replaces the designs.

Run:  python benchmarks/bench_auto_size_cost.py [--terms 13] [--s-max 10] [--time-limit 900] [--public] [--no-per-size]
      [--epsilon 1,10,20] [--designs "2000,500,20,0.1,5"]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
warnings.simplefilter("ignore")

import dpstats  # noqa: E402
from real_data_cases import CASES  # noqa: E402


def timed(formula, frame, bounds, limit, **kwargs):
    start = time.perf_counter()
    try:
        fit = dpstats.dp_select(formula, frame, method="top_r", epsilon=2.0, bounds=bounds, random_state=0,
                                signs=False, time_limit=limit, **kwargs)
    except dpstats.DPStatsError as exc:
        return time.perf_counter() - start, f"{type(exc).__name__}"
    return time.perf_counter() - start, f"size {len(fit.support)}; {fit.curator.get('certificate', {}).get('path', 'size stage')[:60]}"


#: (n, p, s, rho, snr) of bench_public.py's squared-loss designs that this script times
PUBLIC_DESIGNS = [(1000, 250, 7, 0.1, 5.0), (1000, 250, 10, 0.1, 5.0), (1000, 250, 7, 0.1, 0.1),
                  (2000, 500, 15, 0.1, 5.0), (2000, 500, 20, 0.3, 5.0)]


def public_designs(limit, epsilons, designs=None):
    for epsilon in epsilons:
        public_designs_at(limit, epsilon, designs or PUBLIC_DESIGNS)


def public_designs_at(limit, epsilon, designs):
    for n, p, s, rho, snr in designs:
        frame = dpstats.simulate(n, p, s, rho=rho, snr=snr, random_state=1).data
        times = {}
        for label, kwargs in (("fixed", dict(s=s)), ("auto", dict(s="auto", s_max=s))):
            start = time.perf_counter()
            try:
                fit = dpstats.dp_select("y ~ .", frame, method="top_r", epsilon=epsilon, bounds=(1.0, 1.0), radius=1.1,
                                        random_state=1, time_limit=limit, **kwargs)
                what = f"size {len(fit.support)}"
                if label == "auto":
                    table = fit.size_table()
                    what += f", certified sizes {list(table.index[table['objective'].notna()])}"
            except dpstats.DPStatsError as exc:
                what = type(exc).__name__
            times[label] = time.perf_counter() - start
            print(f"({n}, {p}, {s}) rho {rho:g} snr {snr:g} epsilon {epsilon:g} {label}: {times[label]:.2f} s ({what})",
                  flush=True)
        print(f"({n}, {p}, {s}) rho {rho:g} snr {snr:g}: ratio auto / fixed {times['auto'] / times['fixed']:.2f}; "
              f"load {os.getloadavg()[0]:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--terms", type=int, default=13)
    ap.add_argument("--s-max", type=int, default=10)
    ap.add_argument("--time-limit", type=float, default=900.0)
    ap.add_argument("--public", action="store_true")
    ap.add_argument("--no-per-size", action="store_true", help="only the fixed call and s='auto'")
    ap.add_argument("--epsilon", default="1", help="with --public (bench_public's is 1); a comma-separated list")
    ap.add_argument("--designs", default=None,
                    help="with --public: 'n,p,s,rho,snr;...' instead of bench_public's designs "
                         "(e.g. '2000,500,20,0.1,5' for twenty terms)")
    args = ap.parse_args()
    if args.public:
        designs = None
        if args.designs:
            designs = [tuple(int(x) if i < 3 else float(x) for i, x in enumerate(d.split(",")))
                       for d in args.designs.split(";")]
        public_designs(args.time_limit, [float(e) for e in args.epsilon.split(',')], designs)
        return
    case = CASES["college"]
    frame = case.frame()
    terms = case.terms[:args.terms]
    formula = f"{case.response} ~ (" + " + ".join(terms) + ")**2"
    bounds = {k: v for k, v in case.ranges.items() if k in terms or k == case.response}
    print(f"college: n = {len(frame)}, {len(terms)} terms and their interactions; load {os.getloadavg()[0]:.2f}",
          flush=True)
    fixed, what = timed(formula, frame, bounds, args.time_limit, s=args.s_max)
    print(f"fixed s = {args.s_max}, R = 100: {fixed:.1f} s ({what})", flush=True)
    auto, what = timed(formula, frame, bounds, args.time_limit, s="auto", s_max=args.s_max)
    print(f's = "auto", s_max = {args.s_max}: {auto:.1f} s ({what}); ratio {auto / fixed:.2f}', flush=True)
    total = 0.0
    for k in range(1, 0 if args.no_per_size else args.s_max + 1):
        seconds, what = timed(formula, frame, bounds, args.time_limit, s=k, R=1)
        total += seconds
        print(f"s = {k}, R = 1: {seconds:.1f} s (cumulative {total:.1f}; {what})", flush=True)
    print(f"load at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
