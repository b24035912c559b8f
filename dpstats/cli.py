"""Command line: ``python -m dpstats select|demo|datasets``.

``select`` runs :func:`dpstats.dp_select` on a CSV file (or a bundled dataset) and prints
the summary, or with ``--json`` the releasable output only.  Every argument of
``dp_select`` has a flag; method options without one go through ``--option NAME=VALUE``.

Bad input (an unreadable or malformed CSV file, malformed ``--bounds`` or ``--option``
values, or any error dpstats raises for its arguments or the data) is reported as one
``error:`` line on stderr with exit status 2, as argparse does, never as a traceback.

Examples::

    python -m dpstats select "y ~ ." --data d.csv --method exponential --epsilon 1 --s 2 --bounds 1,1
    python -m dpstats select "y ~ ." --data d.csv --method dpvote --epsilon 1 --k 3 --machines 10
    python -m dpstats select "z ~ ." --data d.csv --method exponential --epsilon 1 --s 2 --bounds 1,1 --loss hinge
    python -m dpstats select "y ~ ." --data d.csv --method top_r --epsilon 1 --s 2 --bounds b.json \\
        --time-limit 60
"""
from __future__ import annotations

import argparse
import csv
import inspect
import json
import math
import os
import sys
import warnings

from .api import dp_select
from .datasets import EXACT_FLOATS, dataset_bounds, list_datasets, load_dataset
from .errors import DPStatsError
from .privacy.progress import curator_printer

_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")


class _UsageError(Exception):
    """Bad command-line input found after argparse: reported like an argparse error (status 2)."""


# ----------------------------------------------------------------------------- value parsers
def _epsilon(text):
    if text.strip().lower() in ("inf", "+inf", "infinity"):
        return math.inf
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number or 'inf'; got {text!r}") from None


def _ridge(text):
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a number >= 0; got {text!r}") from None


def _signs(text):
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be true, false or the budget share of the sign step in (0, 1); got {text!r}") from None


def _name_list(text):
    names = [part.strip() for part in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of column names; got {text!r}")
    return names


def _load_json(path, flag):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise _UsageError(f"{flag}: no such file {path!r}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _UsageError(f"{flag}: cannot read {path!r} ({getattr(exc, 'strerror', None) or exc})") from None
    except json.JSONDecodeError as exc:
        raise _UsageError(f"{flag}: {path!r} is not valid JSON ({exc})") from None


def _parse_bounds(text):
    """``auto``, ``BX,BY``, ``dataset:NAME`` or a JSON file holding a dict of per-term bounds."""
    usage = ("--bounds takes 'auto', 'BX,BY' (two positive numbers), a JSON file holding a dict "
             "{term: [lower, upper]} (the response included; a number b means [-b, b]), or dataset:NAME")
    if text is None or text == "auto":
        return text
    if text.startswith("dataset:"):
        try:
            return dataset_bounds(text.split(":", 1)[1])
        except DPStatsError as exc:
            raise _UsageError(f"--bounds: {exc}") from None
    if text.lower().endswith(".json") or os.path.isfile(text):
        value = _load_json(text, "--bounds")
        if isinstance(value, dict):
            return value
        if isinstance(value, list) and len(value) == 2:
            return tuple(value)
        raise _UsageError(f"{usage}; {text!r} holds a JSON {type(value).__name__}, not a dict of per-term bounds")
    parts = text.split(",")
    if len(parts) != 2:
        raise _UsageError(f"{usage}; got {text!r} ({len(parts)} comma-separated value{'s' if len(parts) != 1 else ''})")
    try:
        return (float(parts[0]), float(parts[1]))
    except ValueError:
        raise _UsageError(f"{usage}; got {text!r}") from None


def _parse_na_action(text):
    if text is None or text in ("raise", "omit"):
        return text
    if text.lower().endswith(".json") or os.path.isfile(text):
        value = _load_json(text, "--na-action")
        if not isinstance(value, dict):
            raise _UsageError(f"--na-action: {text!r} must hold a JSON dict {{column: public impute value}}")
        return value
    raise _UsageError(
        "--na-action takes 'omit' (the default) or a JSON file holding a dict {column: public impute value}; "
        f"got {text!r}")


def _option_value(text):
    """VALUE of ``--option NAME=VALUE``: int, float, true/false, a JSON list or dict, else the string."""
    stripped = text.strip()
    low = stripped.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(stripped)
        except ValueError:
            pass
    if stripped[:1] in ("[", "{"):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise _UsageError(f"--option: {text!r} looks like JSON but does not parse ({exc})") from None
    return text


#: How the command line sets dp_select's own arguments (None: it does not).
_ARGUMENT_FLAGS = {"formula": "the FORMULA argument", "data": "--data or --dataset", "signs": "--signs or --no-signs",
                   "accountant": None, "estimate": None}


def _dp_select_parameters():
    return {name for name, p in inspect.signature(dp_select).parameters.items()
            if p.kind is not inspect.Parameter.VAR_KEYWORD}


def _parse_options(items, already):
    """``--option NAME=VALUE`` items as a dict; ``already`` holds options set by dedicated flags."""
    reserved = _dp_select_parameters()
    out = dict(already)
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise _UsageError(f"--option takes NAME=VALUE (e.g. --option max_enumerate=100000); got {item!r}")
        if name in reserved:
            flag = _ARGUMENT_FLAGS.get(name, "--" + name.replace("_", "-"))
            how = f"use {flag}" if flag else "it is not available from the command line"
            raise _UsageError(f"--option {name}=...: {name} is an argument of dp_select, not a method option; {how}")
        if name in out:
            raise _UsageError(f"method option {name!r} is given twice (by --option and by --{name.replace('_', '-')} "
                              "or by two --option flags); give it once")
        out[name] = _option_value(value)
    return out


# ----------------------------------------------------------------------------- data
def _read_csv(path):
    """A CSV file with a header row, every row with as many fields as the header."""
    import pandas as pd

    flag = f"--data {path!r}"
    try:
        _check_csv_shape(path, flag)
        return pd.read_csv(path, encoding="utf-8", **EXACT_FLOATS)
    except FileNotFoundError:
        raise _UsageError(f"{flag}: no such file") from None
    except IsADirectoryError:
        raise _UsageError(f"{flag}: is a directory, not a CSV file") from None
    except OSError as exc:
        raise _UsageError(f"{flag}: cannot read the file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise _UsageError(f"{flag}: is not a UTF-8 text file (save the CSV as UTF-8)") from None
    except pd.errors.EmptyDataError:
        raise _UsageError(f"{flag}: the file is empty (a CSV file with a header row is needed)") from None
    except (csv.Error, pd.errors.ParserError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _UsageError(f"{flag}: is not a well-formed CSV file ({first})") from None


def _check_csv_shape(path, flag):
    """Refuse what pandas would read silently wrong: ragged rows, blank or duplicated column names."""
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return  # empty file: pandas reports it
        blank = [i + 1 for i, name in enumerate(header) if not name.strip()]
        if blank:
            raise _UsageError(
                f"{flag}: header column {blank[0]} has no name (a row-name column, as written by pandas' "
                "to_csv without index=False or R's write.csv without row.names=FALSE?); name every column "
                "or write the file without row names")
        seen = set()
        for name in header:
            if name in seen:
                raise _UsageError(f"{flag}: the header names column {name!r} twice; column names must be unique")
            seen.add(name)
        for row in reader:
            if row and len(row) != len(header):
                raise _UsageError(
                    f"{flag}: is not a well-formed CSV file (line {reader.line_num} has {len(row)} fields, "
                    f"the header has {len(header)})")


# ----------------------------------------------------------------------------- parser
def _build_parser():
    parser = argparse.ArgumentParser(prog="python -m dpstats", description="Differentially private variable selection.")
    sub = parser.add_subparsers(dest="command", required=True)
    sel = sub.add_parser(
        "select", help="run dp_select on a CSV file or a bundled dataset",
        description="Run dpstats.dp_select on a CSV file (with a header row) or a bundled dataset.",
        epilog="Errors are reported on stderr with exit status 2.")
    sel.add_argument("formula", help='a formula such as "y ~ ."')
    src = sel.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="CSV file with a header row (UTF-8, comma-separated)")
    src.add_argument("--dataset", help=f"a bundled dataset: {', '.join(list_datasets())}")
    sel.add_argument("--method", required=True, help="e.g. exponential, top_r, mistakes, mcmc, dpvote, kendall")
    sel.add_argument("--epsilon", required=True, type=_epsilon, help="total epsilon of the call ('inf': non-private)")
    sel.add_argument("--s", type=int, help="subset size (best-subset methods)")
    sel.add_argument("--k", type=int, help="number of features to select (screening methods, dpvote)")
    sel.add_argument("--bounds", help="'auto', 'BX,BY', a JSON file with a dict {term: [lower, upper]} (or {term: b}), or dataset:NAME")
    sel.add_argument("--radius", type=float, help="radius r of the l2 ball on the coefficients (default 1; with --loss hinge 4 where every "
                          "support is scored exactly)")
    sel.add_argument("--ridge", type=_ridge, help="ridge penalty >= 0 or 'auto' (default)")
    sel.add_argument("--R", type=int, help="number of best supports enumerated by top_r (default 100)")
    sel.add_argument("--signs", type=_signs, metavar="{true,false,SHARE}",
                     help="private signs: true (default, 10%% of epsilon), false, or a budget share in (0, 1)")
    sel.add_argument("--no-signs", action="store_true", help="same as --signs false")
    sel.add_argument("--na-action", help="'omit' (default: drop incomplete rows, R's na.omit) or a JSON file {column: public impute value}; "
                     "'raise' is refused: an error on incomplete data would release a fact about the values")
    sel.add_argument("--random-state", type=int, help="seed (reproducible, not for release); default: OS randomness")
    sel.add_argument("--infer-levels", type=_name_list, metavar="COL[,COL...]",
                     help="columns whose levels may be read from the data (the result is then not DP)")
    sel.add_argument("--loss", choices=("squared", "hinge"), help="method option loss (best-subset methods)")
    sel.add_argument("--machines", type=int, help="method option machines (dpvote: number of machines)")
    sel.add_argument("--guard", choices=("ptr", "none"), help="method option guard (mistakes)")
    sel.add_argument("--option", action="append", metavar="NAME=VALUE",
                     help="any other method option (repeatable); VALUE is read as an integer, a number, "
                          "true/false, a JSON list or dict, or else a string")
    sel.add_argument("--verbose", action="store_true",
                     help="progress messages of long computations (labelled [curator only])")
    sel.add_argument("--time-limit", type=float, metavar="SECONDS",
                     help="seconds for the whole call; a time-out names the stage and releases nothing")
    sel.add_argument("--json", action="store_true", help="print release() as JSON instead of the summary")
    sel.add_argument("--curator", action="store_true",
                     help="also print the curator-only report (never publish it: not differentially private)")
    sub.add_parser("demo", help="private best subset selection on the bundled diabetes data")
    sub.add_parser("datasets", help="list the bundled datasets")
    return parser


def _select_arguments(args):
    """Keyword arguments of dp_select from the parsed flags (only those given)."""
    kwargs = {"method": args.method, "epsilon": args.epsilon}
    for name in ("s", "k", "radius", "ridge", "R", "random_state", "time_limit"):
        value = getattr(args, name)
        if value is not None:
            kwargs[name] = value
    if args.bounds is not None:
        kwargs["bounds"] = _parse_bounds(args.bounds)
    if args.no_signs and args.signs not in (None, False):
        raise _UsageError("--no-signs contradicts --signs; give one of them")
    if args.no_signs:
        kwargs["signs"] = False
    elif args.signs is not None:
        kwargs["signs"] = args.signs
    if args.na_action is not None:
        kwargs["na_action"] = _parse_na_action(args.na_action)
    if args.verbose:
        kwargs["verbose"] = True
    if args.infer_levels:
        kwargs["infer_levels"] = args.infer_levels
    flagged = {name: getattr(args, name) for name in ("loss", "machines", "guard") if getattr(args, name) is not None}
    kwargs.update(_parse_options(args.option, flagged))
    return kwargs


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


def _show_warning(message, category, filename, lineno, file=None, line=None):
    # A warning on the command line is one line, without the source location.
    print(f"warning ({category.__name__}): {message}", file=sys.stderr if file is None else file)


def main(argv=None):
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command == "datasets":
        for name in list_datasets():
            print(name)
        return 0
    if args.command == "demo":
        demo()
        return 0
    prog = f"{parser.prog} {args.command}"
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            kwargs = _select_arguments(args)
            data = _read_csv(args.data) if args.data else load_dataset(args.dataset)
            fit = dp_select(args.formula, data, **kwargs)
        except (_UsageError, DPStatsError) as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
    print(fit.release_json(indent=2) if args.json else fit.summary())
    if args.curator:
        print(fit.curator_report())
    return 0
