"""Install footprint of dpstats with each MILP-solver option (issue 15, item 8).

For every option and every interpreter asked for, in a fresh virtual environment:

* the wall time of ``pip install <repo> <extra requirements>`` (by default with
  ``--no-cache-dir``, so downloads count, as on a first install);
* the size of the environment (files counted once, symlinks not followed) and of the
  solver packages in it (mip, cbcbox, highspy);
* the versions pip chose, and a tiny MILP solved through python-mip with CBC (and with
  HiGHS for the HiGHS option) -- the solver actually loads and answers.

Options (each is dpstats' own requirements plus the specifiers shown, so pip resolves
exactly what a user asking for them would get):

``today``      nothing added: whatever ``install_requires`` says now.
``mip115``     ``mip>=1.15,<1.16``: python-mip 1.15's bundled CBC (Requires-Python < 3.12,
               cffi 1.15 only: expected to fail on 3.12 and 3.13).
``mip2-highs`` ``mip[highs]>=2``: python-mip 2 with HiGHS through highspy (python-mip 2
               still requires cbcbox).
``cbc-release`` ``mip>=1.17.4,<2`` and ``cbcbox>=2.924,<2.929``: python-mip 1.17 with the
               cbcbox releases that ship only the generic and AVX2 release builds of CBC
               (cbcbox 2.929 added the debug builds).
``highspy``    ``highspy`` alone (not a dpstats configuration: the size of HiGHS itself).

Recorded on the 2-core machine (Linux x86-64, pip --no-cache-dir, issue 15 item 8), size
of the environment in MiB for ``pip install .`` (``.[test]`` in brackets):

=============  ==========  ==========  ==========  =============================================
option         3.11        3.12        3.13        notes
=============  ==========  ==========  ==========  =============================================
today          907 (1330)  885         881         mip 2.0.0 + cbcbox 2.935: cbcbox alone 595 MiB
mip115         350         fails       fails       mip 1.15.0 needs Python < 3.12 and cffi 1.15.*
mip2-highs     915         893         889         cbcbox still 595 MiB; HiGHS does not load from
                                                   highspy 1.16 (C API not exported; highsbox,
                                                   24 MiB more, is needed)
cbc-release    525 (947)   503         499         mip 1.17.5 + cbcbox 2.927: cbcbox 213 MiB
highspy        97          83          80          highspy 1.16.0 alone (8 MiB of it HiGHS)
=============  ==========  ==========  ==========  =============================================

Since 2026-11-25 install_requires asks for python-mip 2 and cbcbox >= 2.935 again (the row
"today" above): cbc-release's CBC (cbcbox 2.927) aborted the interpreter on an assertion
inside its branching in one of our hinge-loss tests and solved hinge MILPs about six times
slower (benchmarks/README.md, bench_public.py).

Install wall times were 20 to 27 s for every option once PyPI's files were warm upstream
(the first, cold run on 3.11: 125 s for today, 52 s for mip115, 35 s for cbc-release), so
the time depends on the network more than on the option; ``.[test]`` took 48 s (today) and
56 s (cbc-release).  Every installed option solved the MILP check with CBC.

Run from anywhere (it takes minutes: each option downloads and unpacks its wheels)::

    python benchmarks/bench_install.py [--python PATH ...] [--options today,cbc-release]
                                       [--cache] [--extras test] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

OPTIONS = {
    "today": [],
    "mip115": ["mip>=1.15,<1.16"],
    "mip2-highs": ["mip[highs]>=2"],
    "cbc-release": ["mip>=1.17.4,<2", "cbcbox>=2.924,<2.929"],
    "highspy": None,  # highspy alone, without dpstats
}

MILP_CHECK = r"""
import json, sys, time
t0 = time.perf_counter()
import mip
out = {"import_s": round(time.perf_counter() - t0, 2), "mip": mip.__version__ if hasattr(mip, "__version__") else "?"}
for solver in sys.argv[1:]:
    try:
        m = mip.Model(sense=mip.MAXIMIZE, solver_name=solver)
        m.verbose = 0
        x = [m.add_var(var_type=mip.BINARY) for _ in range(4)]
        m.objective = mip.xsum(c * v for c, v in zip([5, 4, 3, 2], x))
        m += mip.xsum(w * v for w, v in zip([2, 3, 1, 4], x)) <= 5
        status = m.optimize()
        out[solver] = f"{status.name} {m.objective_value:g} " + "".join(str(int(round(v.x))) for v in x)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        out[solver] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
print(json.dumps(out))
"""


def tree_size(path):
    total = 0
    seen = set()
    for root, dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


def site_packages(venv):
    found = list(pathlib.Path(venv).glob("lib/python3*/site-packages"))
    return found[0] if found else None


def run_option(python, name, extra, *, cache, extras, keep):
    base = keep or tempfile.mkdtemp(prefix="bench_install_")
    venv = os.path.join(base, f"venv-{name}-{os.path.basename(os.path.dirname(os.path.dirname(python)))}")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", venv], check=True)
    pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not cache:
        pip.append("--no-cache-dir")
    target = [] if extra is None else [f"{ROOT}[{extras}]" if extras else str(ROOT)]
    reqs = ["highspy"] if extra is None else extra
    t0 = time.perf_counter()
    proc = subprocess.run(pip + target + reqs, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    row = {"option": name, "python": python, "install_s": round(seconds, 1), "rc": proc.returncode}
    if proc.returncode != 0:
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("ERROR")]
        row["error"] = (errors or proc.stderr.strip().splitlines()[-1:] or ["?"])[0][:200]
    else:
        sp = site_packages(venv)
        row["venv_MiB"] = round(tree_size(venv) / 2 ** 20)
        for pkg in ("mip", "cbcbox", "highspy"):
            row[f"{pkg}_MiB"] = round(tree_size(sp / pkg) / 2 ** 20) if (sp / pkg).exists() else 0
        listing = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "list", "--format=json",
                                  "--disable-pip-version-check"], capture_output=True, text=True)
        versions = {d["name"].lower(): d["version"] for d in json.loads(listing.stdout or "[]")}
        row["versions"] = {k: versions[k] for k in ("mip", "cbcbox", "highspy", "cffi", "numpy") if k in versions}
        if extra is not None:
            solvers = ["CBC", "HiGHS"] if name == "mip2-highs" else ["CBC"]
            check = subprocess.run([os.path.join(venv, "bin", "python"), "-c", MILP_CHECK, *solvers],
                                   capture_output=True, text=True, cwd=base)
            row["milp"] = (json.loads(check.stdout.strip().splitlines()[-1]) if check.returncode == 0
                           else f"rc={check.returncode} {check.stderr.strip().splitlines()[-1:]}")
    if not keep:
        shutil.rmtree(base, ignore_errors=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", help="interpreter(s) to test (default: this one)")
    ap.add_argument("--options", default=",".join(OPTIONS), help="comma-separated, from: " + ", ".join(OPTIONS))
    ap.add_argument("--cache", action="store_true", help="let pip use its cache (default: --no-cache-dir)")
    ap.add_argument("--extras", default="", help="install dpstats[EXTRAS] instead of dpstats (e.g. test)")
    ap.add_argument("--keep", help="build the environments in this directory and keep them")
    args = ap.parse_args(argv)
    pythons = args.python or [sys.executable]
    names = [n.strip() for n in args.options.split(",") if n.strip()]
    unknown = [n for n in names if n not in OPTIONS]
    if unknown:
        ap.error(f"unknown options {unknown}")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    print(f"repository: {ROOT}; pip cache: {'on' if args.cache else 'off'}; extras: {args.extras or '-'}")
    print(f"{'option':<12} {'python':<8} {'rc':>3} {'install s':>9} {'venv MiB':>8} {'mip':>5} {'cbcbox':>6} "
          f"{'highspy':>7}  versions / MILP check")
    for python in pythons:
        ver = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
        for name in names:
            row = run_option(python, name, OPTIONS[name], cache=args.cache, extras=args.extras, keep=args.keep)
            if row["rc"]:
                print(f"{name:<12} {ver:<8} {row['rc']:>3} {row['install_s']:>9} {'-':>8} {'-':>5} {'-':>6} {'-':>7}  "
                      f"{row['error']}", flush=True)
                continue
            print(f"{name:<12} {ver:<8} {row['rc']:>3} {row['install_s']:>9} {row['venv_MiB']:>8} {row['mip_MiB']:>5} "
                  f"{row['cbcbox_MiB']:>6} {row['highspy_MiB']:>7}  {row['versions']} {row.get('milp', '')}",
                  flush=True)


if __name__ == "__main__":
    main()
