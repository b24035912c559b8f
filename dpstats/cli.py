"""Command line: ``python -m dpstats select|plan|demo|datasets``.

``select`` runs :func:`dpstats.dp_select` on a CSV file (or a bundled dataset) and prints
the summary, or with ``--json`` the releasable output only.  Every argument of
``dp_select`` has a flag; method options without one go through ``--option NAME=VALUE``.
With ``--estimate EPSILON`` it then refits the selected terms privately
(``fit.estimate``, its own budget) and prints the estimate too.

``plan`` runs :func:`dpstats.plan` (public inputs only, no data) and prints the predicted
probability of returning the true support, optionally the n or epsilon needed for a
target probability, and with ``--plot FILE`` saves the curve.

The CSV file is read against a declared schema (:func:`_read_csv`): its header and line count are public;
every column is numeric unless ``--factor COL=L1,L2,...`` declares it categorical (or ``--infer-levels`` reads
its levels, not DP); a cell or a line that does not fit is missing, never a refusal, since a cell is data.

Bad input (an unreadable file or header, malformed ``--bounds`` or ``--option`` values, or any error dpstats
raises for its arguments or the data's schema) is reported as one ``error:`` line on stderr with exit
status 2, as argparse does, never as a traceback.

Examples::

    python -m dpstats select "y ~ ." --data d.csv --method exponential --epsilon 1 --s 2 --bounds 1,1
    python -m dpstats select "y ~ ." --data d.csv --method dpvote --epsilon 1 --k 3 --machines 10
    python -m dpstats select "z ~ ." --data d.csv --method exponential --epsilon 1 --s 2 --bounds 1,1 --loss hinge
    python -m dpstats select "y ~ ." --data d.csv --method top_r --epsilon 1 --s 2 --bounds b.json \\
        --time-limit 60
    python -m dpstats select "y ~ ." --dataset diabetes --bounds dataset:diabetes --method exponential \\
        --epsilon 1 --s 3 --estimate 1 --level 0.9
    python -m dpstats plan --method exponential --n 500 --p 10 --s 2 --epsilon 1 --required-n 0.8
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import inspect
import json
import math
import os
import sys
import warnings

from .api import dp_select
from .bss.losses import LOSSES
from .datasets import dataset_bounds, list_datasets, load_dataset
from .errors import CuratorWarning, DPStatsError
from .privacy.progress import curator_printer

_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")


class _UsageError(Exception):
    """Bad command-line input found after argparse: reported like an argparse error (status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser with its errors as one ``error:`` line on stderr (status 2), like every other
    error of the command line (the module docstring): argparse would print the whole usage block first.
    The subcommands' parsers are of this class too (``add_subparsers`` uses the parent's class)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ----------------------------------------------------------------------------- value parsers
def _epsilon(text):
    if text.strip().lower() in ("inf", "+inf", "infinity"):
        return math.inf
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number or 'inf'; got {text!r}") from None


def _auto_or(convert, what):
    """An argparse type: the word 'auto', or ``convert(text)`` (``what`` names the other values in the error)."""
    def parse(text):
        if text == "auto":
            return text
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be 'auto' or {what}; got {text!r}") from None
    return parse


#: --ridge: 'auto' or a number >= 0; --s / --k: 'auto' (the size chosen privately) or a positive integer.
_ridge = _auto_or(float, "a number >= 0")
_size = _auto_or(int, "an integer >= 1")


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
def _factor(text):
    """``COL=L1,L2,...`` (or ``COL=["a,b", "c"]``) of --factor: (column, levels)."""
    name, sep, levels = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"--factor takes COL=L1,L2,...; got {text!r}")
    if levels.strip().startswith("["):
        try:
            parsed = json.loads(levels)
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, list) or not all(isinstance(v, str) for v in parsed):
            raise argparse.ArgumentTypeError(f"--factor {name}: the levels are not a JSON list of strings: {levels!r}")
    else:
        parsed = levels.split(",")
    if not parsed or any(v == "" for v in parsed) or len(set(parsed)) != len(parsed):
        raise argparse.ArgumentTypeError(f"--factor {name}: give distinct, non-empty levels; got {levels!r}")
    return name.strip(), parsed


def _read_csv(path, factors=None, text=()):
    """A CSV file read against a declared schema, so that no cell decides whether the call is refused.

    The header (the column names) and the number of lines are the public schema: a header with a blank or
    repeated name is refused.  Every line after it is one record.  A line that does not parse, or has
    another number of fields than the header, is a record with every field missing.  Columns named in
    ``factors`` (``--factor COL=L1,L2,...``) are categorical, with those declared levels; other values are
    missing.  Columns in ``text`` (``--infer-levels``) keep their text.  Every other column is numeric: a
    cell that is not a number (TRUE and FALSE read as 1 and 0) is missing.  Missing fields then go through
    ``--na-action``, after the charge, like any other missing value."""
    import numpy as np
    import pandas as pd

    flag = f"--data {path!r}"
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        raise _UsageError(f"{flag}: no such file") from None
    except IsADirectoryError:
        raise _UsageError(f"{flag}: is a directory, not a CSV file") from None
    except OSError as exc:
        raise _UsageError(f"{flag}: cannot read the file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise _UsageError(f"{flag}: is not a UTF-8 text file (save the CSV as UTF-8)") from None
    if not lines or not lines[0].strip():
        raise _UsageError(f"{flag}: the file is empty, or its first line is (a CSV file with a header row is needed)")
    header = _csv_header(lines[0], flag)
    factors = dict(factors or {})
    unknown = [c for c in list(factors) + list(text) if c not in header]
    if unknown:
        raise _UsageError(f"{flag}: --factor or --infer-levels names {unknown}, which are not columns of its header "
                          f"{header[:20]}")
    width = len(header)
    cells = np.full((len(lines) - 1, width), "", dtype=object)
    for i, line in enumerate(lines[1:]):
        try:
            fields = next(csv.reader([line]), [])
        except csv.Error:
            continue  # a record that does not parse: every field missing
        if len(fields) == width:
            cells[i] = fields
    frame = {}
    for j, name in enumerate(header):
        column = cells[:, j]
        if name in factors:
            levels = factors[name]
            frame[name] = pd.Categorical(np.where(np.isin(column, levels), column, None), categories=levels)
        elif name in text:
            frame[name] = pd.Series(np.where(column == "", None, column), dtype=object)
        else:
            frame[name] = _numbers(column)
    return pd.DataFrame(frame, columns=header)


def _csv_header(line, flag):
    """The column names of the header line; refused when one is blank or repeated (the schema)."""
    try:
        header = next(csv.reader([line]))
    except csv.Error as exc:
        raise _UsageError(f"{flag}: its header line is not well-formed CSV ({exc})") from None
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
    return header


def _numbers(column):
    """Text cells as float64, exactly as Python reads them; a cell that is not a number is NaN (TRUE / FALSE,
    in any case, are 1 and 0)."""
    import numpy as np

    try:
        return column.astype(str).astype(np.float64)  # the common case: every cell a number
    except ValueError:
        pass
    out = np.empty(column.shape[0])
    for i, cell in enumerate(column):
        text = str(cell).strip()
        try:
            out[i] = float(text)
        except ValueError:
            out[i] = {"TRUE": 1.0, "FALSE": 0.0}.get(text.upper(), math.nan)
    return out


# ----------------------------------------------------------------------------- parser
def _build_parser():
    parser = _Parser(prog="python -m dpstats", description="Differentially private variable selection.")
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
    sel.add_argument("--s", type=_size, help="subset size (best-subset methods, kendall_forward), or 'auto' to "
                     "choose it privately")
    sel.add_argument("--k", type=_size, help="number of features to select (screening methods, dpvote), or 'auto'")
    sel.add_argument("--s-max", type=int, help="with --s auto: the largest size considered (default min(p, 10))")
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
    sel.add_argument("--factor", type=_factor, action="append", metavar="COL=L1,L2,...",
                     help="with --data: a categorical column and its levels, declared (repeatable; a JSON list for "
                          "levels holding commas: COL=[\"a,b\",\"c\"]). Every other column is read as numbers: "
                          "a cell that is not one is missing")
    sel.add_argument("--infer-levels", type=_name_list, metavar="COL[,COL...]",
                     help="columns whose levels may be read from the data (the result is then not DP)")
    sel.add_argument("--loss", choices=tuple(LOSSES), help="method option loss (best-subset methods)")
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
    est = sel.add_argument_group("private estimate of the selected terms (fit.estimate, its own budget)")
    est.add_argument("--estimate", type=_epsilon, metavar="EPSILON",
                     help="refit the selected terms privately with this epsilon (added to the selection's)")
    est.add_argument("--estimate-method", choices=("adassp", "adassp_residual", "objective_perturbation", "tukey"),
                     help="the refit's mechanism (default adassp)")
    est.add_argument("--estimate-delta", type=float, metavar="DELTA", help="the refit's delta (default 0; tukey "
                     "needs > 0)")
    est.add_argument("--estimate-bounds", help="public ranges for the refit after a selection without them "
                     "(kendall, dpvote); same forms as --bounds")
    est.add_argument("--level", type=float, help="level of the intervals (default 0.95)")
    est.add_argument("--bootstrap", type=int, help="bootstrap draws of the intervals (default 1000)")
    _plan_parser(sub)
    sub.add_parser("demo", help="private best subset selection on the bundled diabetes data")
    sub.add_parser("datasets", help="list the bundled datasets")
    return parser


def _plan_parser(sub):
    pl = sub.add_parser(
        "plan", help="predict the chance of recovering the true support, from public inputs only",
        description="Run dpstats.plan: simulate the planned design and predict the probability that the "
                    "planned dp_select call returns the true support. No data, no budget.",
        epilog="Errors are reported on stderr with exit status 2.")
    pl.add_argument("--method", required=True, help="the planned dp_select method, or 'auto': the one dp_select's "
                    "method='auto' would take for this call")
    pl.add_argument("--n", required=True, type=int, help="planned number of rows")
    pl.add_argument("--p", required=True, type=int, help="planned number of candidate terms")
    pl.add_argument("--s", required=True, type=int, help="size of the true support (the call selects s terms)")
    pl.add_argument("--epsilon", required=True, type=_epsilon, help="budget of the planned call")
    pl.add_argument("--bounds", help="public bounds of the planned call on the simulated (standardised) scale: "
                    "'BX,BY', 'auto' or a JSON file (default: from --spread; none for kendall and dpvote)")
    pl.add_argument("--rho", type=float, help="Toeplitz correlation of the design (default 0.1)")
    pl.add_argument("--snr", type=float, help="signal-to-noise ratio of the design (default 5)")
    pl.add_argument("--r2", type=float, help="the model's R^2, instead of --snr (snr = r2 / (1 - r2))")
    pl.add_argument("--spread", type=float, help="the public ranges span +-SPREAD standard deviations of each "
                    "term's data (default 4)")
    pl.add_argument("--spread-y", type=float, help="the same for the response (default: --spread)")
    pl.add_argument("--reps", type=int, help="simulated data sets per point (default 100)")
    pl.add_argument("--level", type=float, help="level of the Monte Carlo interval (default 0.95)")
    pl.add_argument("--signs", type=_signs, metavar="{true,false,SHARE}",
                    help="plan a call that also releases signs (default false)")
    pl.add_argument("--random-state", type=int, help="seed of the simulation (default: fresh randomness)")
    pl.add_argument("--option", action="append", metavar="NAME=VALUE",
                    help="other arguments of the planned dp_select call (R, radius, ridge, method options)")
    target = pl.add_mutually_exclusive_group()
    target.add_argument("--required-n", type=float, metavar="TARGET",
                        help="also find the smallest n reaching probability TARGET (at the planned epsilon)")
    target.add_argument("--required-epsilon", type=float, metavar="TARGET",
                        help="also find the smallest epsilon reaching probability TARGET (at the planned n)")
    pl.add_argument("--verbose", action="store_true", help="print a line per evaluated point (to stderr)")
    pl.add_argument("--precision", type=_precision, metavar="{none,SE}", default=_UNSET,
                    help="with --required-n / --required-epsilon: the answer's Monte Carlo standard error (of its "
                         "log) that the search aims for (default 0.05; none: reps data sets only)")
    grid = pl.add_mutually_exclusive_group()
    grid.add_argument("--n-grid", type=_number_list(int), metavar="N[,N...]", help="values of n to evaluate")
    grid.add_argument("--epsilon-grid", type=_number_list(float), metavar="EPS[,EPS...]",
                      help="values of epsilon to evaluate")
    pl.add_argument("--plot", metavar="FILE", help="save plan.plot() to FILE (png, pdf, svg; needs matplotlib)")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    return pl


#: --precision not given (None means "none")
_UNSET = object()


def _precision(text):
    """--precision: a number, or none (the search keeps reps data sets at every point)."""
    if text.strip().lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a number such as 0.05, or none; got {text!r}") from None


def _number_list(kind):
    def parse(text):
        try:
            return [kind(part) for part in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be a comma-separated list of {'integers' if kind is int else 'numbers'}; got {text!r}") from None
    return parse


def _plan_arguments(args):
    """Keyword arguments of dpstats.plan from the parsed flags (only those given)."""
    kwargs = {"method": args.method, "n": args.n, "p": args.p, "s": args.s, "epsilon": args.epsilon}
    for name in ("reps", "level", "signs", "random_state"):
        if getattr(args, name) is not None:
            kwargs[name] = getattr(args, name)
    if args.bounds is not None:
        kwargs["bounds"] = _parse_bounds(args.bounds)
    design = {name: getattr(args, name) for name in ("rho", "snr", "r2", "spread", "spread_y")
              if getattr(args, name) is not None}
    if design:
        kwargs["design"] = design
    options = _parse_options(args.option, {})
    refused = sorted(set(options) & {"reps", "level", "design", "bounds", "signs"})
    if refused:
        raise _UsageError(f"--option {refused[0]}=...: use --{refused[0].replace('_', '-')}")
    kwargs.update(options)
    if args.n_grid and args.required_epsilon is not None:
        raise _UsageError("--n-grid goes with --required-n (or alone); --required-epsilon uses --epsilon-grid")
    if args.epsilon_grid and args.required_n is not None:
        raise _UsageError("--epsilon-grid goes with --required-epsilon (or alone); --required-n uses --n-grid")
    if args.precision is not _UNSET and args.required_n is None and args.required_epsilon is None:
        raise _UsageError("--precision goes with --required-n or --required-epsilon")
    return kwargs


def _run_plan(args):
    """The plan and what was asked of it; returns (plan, {"required_n": ...} or {})."""
    from .planning import plan

    kwargs = _plan_arguments(args)
    if args.verbose:  # the progress lines go to stderr, so that stdout stays the plan (or its JSON)
        with contextlib.redirect_stdout(sys.stderr):
            return _plan_and_answers(plan(verbose=True, **kwargs), args)
    return _plan_and_answers(plan(**kwargs), args)


def _plan_and_answers(planned, args):
    """What was asked of the plan: required_n / required_epsilon (with the answer's error), a grid, a plot."""
    found = {}
    precision = {} if args.precision is _UNSET else {"precision": args.precision}
    if args.required_n is not None:
        found["required_n"] = planned.required_n(target=args.required_n, n_grid=args.n_grid, **precision)
        found["target"] = args.required_n
    elif args.required_epsilon is not None:
        found["required_epsilon"] = planned.required_epsilon(target=args.required_epsilon,
                                                             epsilon_grid=args.epsilon_grid, **precision)
        found["target"] = args.required_epsilon
    elif args.n_grid:
        planned.evaluate(n_grid=args.n_grid)
    elif args.epsilon_grid:
        planned.evaluate(epsilon_grid=args.epsilon_grid)
    if found:  # the answer's estimated Monte Carlo error (Plan.answers)
        axis = "n" if "required_n" in found else "epsilon"
        error = planned.answers[(axis, float(found["target"]))]["error"]
        found["standard_error"] = "inf" if error is not None and math.isinf(error) else error
    if args.plot:
        axis = "epsilon" if (args.required_epsilon is not None or args.epsilon_grid) else "n"
        ax = planned.plot(axis=axis)
        try:
            ax.figure.savefig(args.plot)
        except (OSError, ValueError) as exc:
            raise _UsageError(f"--plot: cannot save {args.plot!r} ({exc})") from None
        finally:
            import matplotlib.pyplot as plt

            plt.close(ax.figure)
    return planned, found


def _plan_output(planned, found, as_json):
    if as_json:
        table = planned.table.to_dict(orient="records")
        out = {"method": planned.method, "n": planned.n, "p": planned.p, "s": planned.s,
               "epsilon": "inf" if math.isinf(planned.epsilon) else planned.epsilon,
               "bounds": list(planned.bounds) if isinstance(planned.bounds, tuple) else planned.bounds,
               "design": planned.design, "reps": planned.reps, "truth": planned.truth,
               "probability": planned.probability, "interval": list(planned.interval), "table": table, **found,
               **({"method_choice": planned.method_choice} if planned.method_choice is not None else {})}
        return json.dumps(out, indent=2, default=str)
    text = str(planned)
    if "required_n" in found:
        value = found["required_n"]
        text += (f"\nrequired n for P(true support) >= {found['target']:g}: "
                 + (f"{value}" if value is not None else "not reached on the grid (extend --n-grid)"))
    if "required_epsilon" in found:
        value = found["required_epsilon"]
        text += (f"\nrequired epsilon for P(true support) >= {found['target']:g}: "
                 + (f"{value:.4g}" if value is not None else "not reached on the grid (extend --epsilon-grid)"))
    return text


def _estimate_arguments(args):
    """Keyword arguments of fit.estimate from the flags, checked before anything runs; None without --estimate."""
    from .estimation.result import check_level

    extra = [flag for flag, name in (("--estimate-method", "estimate_method"), ("--estimate-delta", "estimate_delta"),
                                     ("--estimate-bounds", "estimate_bounds"), ("--level", "level"),
                                     ("--bootstrap", "bootstrap")) if getattr(args, name) is not None]
    if args.estimate is None:
        if extra:
            raise _UsageError(f"{extra[0]} needs --estimate EPSILON (the refit's budget)")
        return None
    if not args.estimate > 0:
        raise _UsageError(f"--estimate must be a positive epsilon or 'inf'; got {args.estimate!r}")
    kwargs = {"epsilon": args.estimate}
    if args.estimate_method is not None:
        kwargs["method"] = args.estimate_method
    if args.estimate_delta is not None:
        if not (math.isfinite(args.estimate_delta) and 0 <= args.estimate_delta < 1):
            raise _UsageError(f"--estimate-delta must be in [0, 1); got {args.estimate_delta!r}")
        kwargs["delta"] = args.estimate_delta
    if args.estimate_bounds is not None:
        kwargs["bounds"] = _parse_bounds(args.estimate_bounds)
    if args.level is not None:
        try:
            kwargs["level"] = check_level(args.level, "--level")
        except DPStatsError as exc:
            raise _UsageError(str(exc)) from None
    if args.bootstrap is not None:
        if args.bootstrap < 1:
            raise _UsageError(f"--bootstrap must be a positive number of draws; got {args.bootstrap}")
        kwargs["bootstrap"] = args.bootstrap
    if args.random_state is not None:
        kwargs["random_state"] = args.random_state
    return kwargs


def _select_arguments(args):
    """Keyword arguments of dp_select from the parsed flags (only those given)."""
    kwargs = {"method": args.method, "epsilon": args.epsilon}
    for name in ("s", "k", "s_max", "radius", "ridge", "R", "random_state", "time_limit"):
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
    """Two selections, each planned first: one too small to say anything, one large enough.

    Case 1 is the package's main job (the bundled diabetes data, its summary); case 2 a study
    sized by ``plan(...).required_n``.  The plans use public inputs only (a simulated design
    like the data: p = 10, s = 3, Toeplitz rho 0.3, snr 1, an R^2 of about one half); the
    verdicts are curator-only and labelled so.
    """
    from .planning import plan
    from .simulate import simulate

    design = dict(rho=0.3, snr=1.0)
    data = load_dataset("diabetes")
    n = len(data)
    print("Private best subset of 3 predictors of diabetes progression (Efron et al. 2004), epsilon = 1\n")
    planned = plan(method="exponential", n=n, p=10, s=3, epsilon=1, signs=True, design=design, reps=10,
                   random_state=1)
    print(f"1. Plan first (public inputs, no budget; a simulated design like these data: p = 10, s = 3, "
          f"rho = 0.3, snr = 1):\n   at n = {n} the private selection returns the true support with "
          f"probability {planned.probability:.2f}: expect a random pick.\n")
    bounds = dataset_bounds("diabetes")
    fit = dp_select("y ~ .", data, method="exponential", epsilon=1, s=3, bounds=bounds)
    print(fit.summary())
    print(_verdict(fit))
    curator = curator_printer()  # exact probabilities are computed from the data: labelled lines
    curator(f"How the chance of returning the best subset grows with epsilon at n = {n}")
    for eps in (1, 10, 100, 1000):
        other = dp_select("y ~ .", data, method="exponential", epsilon=eps, s=3, bounds=bounds, signs=False)
        curator(f"  epsilon = {eps:>4}: P(best subset) = {other.curator['probability_best']:.3f}")

    needed = planned.required_n(target=0.9)
    print(f"\n2. A study planned to be large enough: the same plan reaches P = 0.9 at n = {needed} rows "
          "(plan(...).required_n(0.9)).\n   Its data (simulated here with the planned design; in a study, "
          "the data collected):")
    sim = simulate(needed, 10, 3, random_state=2, **design)
    large = dp_select("y ~ .", sim.data, method="exponential", epsilon=1, s=3, bounds=planned.bounds,
                      random_state=3)
    print(f"   selected {large.support}; the true support is {sim.support}.\n")
    print(_verdict(large))
    return fit


def _verdict(fit):
    """The curator report's verdict: its first section, under the curator-only banner."""
    banner, body = fit.curator_report().sections[0]
    return f"{banner}\n{body}\n"


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
    prog = f"{parser.prog} {args.command}"
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        # the curator's note at the call is one stderr line here (labelled curator only; a repeat once)
        warnings.simplefilter("default", CuratorWarning)
        if args.command == "demo":
            demo()
            return 0
        try:
            if args.command == "plan":
                planned, found = _run_plan(args)
                print(_plan_output(planned, found, args.json))
                return 0
            kwargs = _select_arguments(args)
            estimate = _estimate_arguments(args)  # checked before the data is read
            if args.factor and not args.data:
                raise _UsageError("--factor declares a column of a --data file; a bundled --dataset has its schema")
            data = (_read_csv(args.data, factors=dict(args.factor or ()), text=tuple(args.infer_levels or ()))
                    if args.data else load_dataset(args.dataset))
            fit = dp_select(args.formula, data, **kwargs)
            est = fit.estimate(**estimate) if estimate is not None else None
        except (_UsageError, DPStatsError) as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
    if est is None:
        print(fit.release_json(indent=2) if args.json else fit.summary())
    elif args.json:
        print(json.dumps({"selection": fit.release(), "estimate": est.release()}, indent=2))
    else:
        print(fit.summary())
        print()
        print(est.summary())
        total = fit.epsilon_spent  # the selection's ledger records the follow-up estimate (Result.estimate)
        print(f"\nepsilon spent in all (selection + estimate, basic composition): {total:g}")
    if args.curator:
        print(fit.curator_report())
    return 0
