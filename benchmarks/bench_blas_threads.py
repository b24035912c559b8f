"""BLAS threads in the certified engine: one thread (the default) against BLAS's own count.

Each run is one ``dp_select`` call in a fresh process (formula, clipping and the engine
included), timed from inside by ``time.perf_counter`` around the call; the two settings
alternate (A B A B ...) so that a drifting load hits both alike, and the script prints each
setting's median wall time and the median of the pairwise ratios.  ``EngineSettings.blas_one_thread``
is the only difference: the released supports are printed to show they agree.

    python benchmarks/bench_blas_threads.py [--pairs 5]

Say the machine's load (printed at the start and the end): on an idle machine the two should be
close; on a loaded one OpenBLAS's threads busy-wait for a core.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time, warnings
import dpstats
from dpstats.bss import engine
warnings.simplefilter("ignore")
n, p, s, rho, method, one = json.loads(sys.argv[1])
engine.DEFAULT_SETTINGS = engine.EngineSettings(blas_one_thread=one)
sim = dpstats.simulate(n, p, s, rho=rho, snr=5.0, random_state=1)
t = time.perf_counter()
fit = dpstats.dp_select("y ~ .", sim.data, method=method, s=s, epsilon=2.0, bounds=(4.0, 8.0), random_state=1,
                        max_enumerate=1)
print(json.dumps([time.perf_counter() - t, list(fit.support)]))
"""

DESIGNS = [(1000, 250, 7, 0.5, "top_r"), (1000, 250, 7, 0.7, "top_r"), (2000, 100, 10, 0.5, "top_r"),
           (1000, 250, 7, 0.5, "mistakes")]


def run(design, one):
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(list(design) + [one])], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    print("| design (n, p, s, rho, method) | one thread: median s | BLAS default: median s | ratio default / one (median of pairs) | same support |")
    print("|---|---|---|---|---|")
    for design in DESIGNS:
        one, default, ratios, same = [], [], [], True
        for _ in range(args.pairs):
            a, sup_a = run(design, True)
            b, sup_b = run(design, False)
            one.append(a)
            default.append(b)
            ratios.append(b / a)
            same &= sup_a == sup_b
        print(f"| {design} | {statistics.median(one):.2f} | {statistics.median(default):.2f} | "
              f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}) | {same} |", flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
