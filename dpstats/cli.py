"""Command line: ``python -m dpstats select|demo|datasets``.

``select`` runs :func:`dpstats.dp_select` on a CSV file (or a bundled dataset) and prints
the summary, or with ``--json`` the releasable output only.
"""
from __future__ import annotations

import argparse
import json
import math
import sys

from .api import dp_select
from .datasets import dataset_bounds, list_datasets, load_dataset
from .errors import DPStatsError
from .privacy.progress import curator_printer


def _parse_bounds(text):
    if text is None or text == "auto":
        return text
    if text.startswith("dataset:"):
        return dataset_bounds(text.split(":", 1)[1])
    if text.endswith(".json"):
        with open(text, encoding="utf-8") as fh:
            return json.load(fh)
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError("--bounds takes 'auto', 'BX,BY', a .json file of per-term bounds, or dataset:NAME")
    return (float(parts[0]), float(parts[1]))


def _epsilon(text):
    return math.inf if text in ("inf", "Inf", "infinity") else float(text)


def _build_parser():
    parser = argparse.ArgumentParser(prog="python -m dpstats", description="Differentially private variable selection.")
    sub = parser.add_subparsers(dest="command", required=True)
    sel = sub.add_parser("select", help="run dp_select on a CSV file or a bundled dataset")
    sel.add_argument("formula", help='a formula such as "y ~ ."')
    src = sel.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="CSV file with a header row")
    src.add_argument("--dataset", help=f"a bundled dataset: {', '.join(list_datasets())}")
    sel.add_argument("--method", required=True)
    sel.add_argument("--epsilon", required=True, type=_epsilon)
    sel.add_argument("--s", type=int)
    sel.add_argument("--k", type=int)
    sel.add_argument("--bounds", help="'auto', 'BX,BY', per-term bounds in a .json file, or dataset:NAME")
    sel.add_argument("--radius", type=float, default=1.0)
    sel.add_argument("--random-state", type=int)
    sel.add_argument("--no-signs", action="store_true")
    sel.add_argument("--json", action="store_true", help="print release() as JSON instead of the summary")
    sub.add_parser("demo", help="private best subset selection on the bundled diabetes data")
    sub.add_parser("datasets", help="list the bundled datasets")
    return parser


def demo():
    data = load_dataset("diabetes")
    print("Private best subset of 3 predictors of diabetes progression (Efron et al. 2004), epsilon = 1\n")
    bounds = dataset_bounds("diabetes")
    fit = dp_select("y ~ .", data, method="exponential", epsilon=1, s=3, bounds=bounds)
    print(fit.summary())
    curator = curator_printer()  # exact probabilities are computed from the data: labelled lines
    curator("How the chance of returning the best subset grows with epsilon at n = 442")
    for eps in (1, 10, 100, 1000):
        other = dp_select("y ~ .", data, method="exponential", epsilon=eps, s=3, bounds=bounds, signs=False)
        curator(f"  epsilon = {eps:>4}: P(best subset) = {other.curator['probability_best']:.3f}")
    return fit


def main(argv=None):
    args = _build_parser().parse_args(argv)
    try:
        if args.command == "datasets":
            for name in list_datasets():
                print(name)
            return 0
        if args.command == "demo":
            demo()
            return 0
        if args.data:
            import pandas as pd

            data = pd.read_csv(args.data)
        else:
            data = load_dataset(args.dataset)
        fit = dp_select(args.formula, data, method=args.method, epsilon=args.epsilon, s=args.s, k=args.k,
                        bounds=_parse_bounds(args.bounds), radius=args.radius, random_state=args.random_state,
                        signs=not args.no_signs)
    except (DPStatsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(fit.release_json(indent=2) if args.json else fit.summary())
    return 0
