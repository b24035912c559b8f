"""CPU seconds of one certified `top_r` call through `dp_select`, for two source trees side by side.

    python benchmarks/bench_block_search_cpu.py --source /tmp/new --baseline /tmp/old --runs 3

Each run starts a fresh interpreter per tree (alternating, new first) and times, by
``time.process_time`` (less sensitive to the machine's load than wall time, one BLAS thread):

* case 11 of bench_public.py, (n, p, s) = (100, 1000, 5), rho 0.3, ``y ~ . - 1``: the exact
  block search at n < p, where the nodes' smallest eigenvalues dominated;
* a design of bench_plan_calibration.py (number 3): ``simulate(2493, 1000, 3)``, ``y ~ .``,
  epsilon 4 (one of plan's simulated calls).

It prints the CPU seconds of each and their ratio to the baseline, with the load.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import pandas as pd, dpstats
from bench_public import fast_design
X, y, _ = fast_design(100, 1000, 5, 0.3, 5, 1)
wide = pd.DataFrame(X, columns=[f"x{j}" for j in range(1000)]); wide["y"] = y
sim = dpstats.simulate(2493, 1000, 3, random_state=3)
calls = [lambda: dpstats.dp_select("y ~ . - 1", wide, method="top_r", epsilon=1.0, s=5, bounds=(1.0, 1.0),
                                   radius=1.1, random_state=1),
         lambda: dpstats.dp_select("y ~ .", sim.data, method="top_r", epsilon=4.0, s=3, bounds=(1, 1),
                                   random_state=1)]
out = []
for call in calls:
    t = time.process_time(); fit = call(); out.append(time.process_time() - t)
    out.append(",".join(fit.curator["best_support"]))
print("|".join(str(v) for v in out))
"""


def run(source):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(source), HERE], env=env,
                         capture_output=True, text=True, check=True)
    a, sa, b, sb = res.stdout.strip().splitlines()[-1].split("|")
    return float(a), float(b), (sa, sb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=os.path.dirname(HERE), help="the tree to measure (default: this checkout)")
    ap.add_argument("--baseline", required=True, help="the tree to compare with (e.g. a git archive of main)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f}")
    for r in range(args.runs):
        new, old = run(args.source), run(args.baseline)
        assert new[2] == old[2], ("the certified best supports differ", new[2], old[2])
        print(f"run {r + 1}: case 11 {new[0]:.2f} s vs {old[0]:.2f} s ({new[0] / old[0]:.2f}x); plan design 3 call "
              f"{new[1]:.2f} s vs {old[1]:.2f} s ({new[1] / old[1]:.2f}x); load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
