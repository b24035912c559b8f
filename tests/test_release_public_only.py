"""What a call publishes carries public information only (issue 14, privacy audit; spec 05, 5.5 and 5.8).

1. Ledger entries (and so ``release()``) hold public parameters only: on neighbouring data
   sets (one row replaced) with the same random_state, everything in the release except the
   released outputs themselves is identical.  Solver statistics (route, number of MILP
   solves, achieved gaps) are deterministic functions of the data and stay in ``fit.curator``.
2. ``verbose=True`` progress lines quote objective values, bounds and gaps: every line is
   labelled curator-only.
3. ``method="mistakes"`` with ``guard="none"`` is only conditionally private: the ledger
   total, ``release()``, ``print(fit)``, the summary and the accountant say so.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats import Accountant
from dpstats.bss import mistakes as M
from dpstats.privacy.ledger import Ledger, LedgerEntry
from dpstats.privacy.progress import CURATOR_LABEL
from dpstats.results import CURATOR_BANNER
from release_checks import assert_release_equivalent

N, P, S = 80, 30, 3  # C(30, 3) = 4060 supports > max_enumerate: the certified engine runs
ENGINE = dict(s=S, bounds=(1, 1), R=10, max_enumerate=10)


def data(seed=0, hinge=False, n=N, p=P):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, p)), -1, 1)
    signal = X[:, 0] - X[:, 1] + 0.6 * X[:, 2] + 0.8 * rng.normal(size=n)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", signal > 0 if hinge else np.clip(signal, -1, 1))
    return frame


def neighbours(frame, count, seed=5):
    """Replace-one neighbours: a random row becomes a corner record with the response flipped."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        other = frame.copy()
        i = int(rng.integers(len(frame)))
        other.iloc[i, 1:] = rng.choice([-1.0, 1.0], size=frame.shape[1] - 1)
        other.iloc[i, 0] = (not frame.iloc[i, 0]) if frame["y"].dtype == bool else -frame.iloc[i, 0]
        out.append(other)
    return out


def certificates(curator):
    """Every curator "certificate" dict (also those of a PTR fallback's nested curator)."""
    for key, value in curator.items():
        if key == "certificate":
            yield value
        elif isinstance(value, dict):
            yield from certificates(value)


CASES = [("top_r", {}), ("top_r", {"loss": "hinge"}), ("mistakes", {"guard": "none"}),
         ("mistakes", {"guard": "none", "loss": "hinge"})]


@pytest.mark.parametrize("method,options", CASES, ids=lambda c: c if isinstance(c, str) else
                         ",".join(f"{k}={v}" for k, v in c.items()) or "squared")
def test_ledger_is_identical_on_neighbouring_data(method, options):
    """mechanism, epsilon, delta, neighbours, caveats, details, conditional and totals do not move."""
    frame = data(hinge="loss" in options)
    fits = [dpstats.dp_select("y ~ .", d, method=method, epsilon=1, random_state=1, **ENGINE, **options)
            for d in [frame] + neighbours(frame, 4)]
    reference = fits[0].release()
    assert reference["ledger"]["entries"][0]["details"]["loss"] == ("hinge" if options.get("loss") else
                                                                   "least squares")
    for k, fit in enumerate(fits[1:]):
        assert not assert_release_equivalent(reference, fit.release(), label=f"neighbour {k + 1}")
    # the engine did run, and its statistics went to the curator, not to the release
    for fit in fits:
        (cert,) = certificates(fit.curator)
        assert cert["path"].startswith("certified by")
        assert cert["path"] not in fit.release_json()
        assert cert["path"] in fit.curator_report().as_text().split(CURATOR_BANNER)[1]  # shown, labelled


@pytest.mark.parametrize("options", [{}, {"loss": "hinge"}], ids=["squared", "hinge"])
def test_engine_statistics_stay_curator_only(options):
    """Also for the PTR guard's top_r fallback and the mistakes block count (from p and s)."""
    frame = data(seed=3, hinge="loss" in options)
    fit = dpstats.dp_select("y ~ .", frame, method="mistakes", epsilon=1, random_state=2, **ENGINE, **options)
    found = list(certificates(fit.curator))
    assert found and all(c["path"].startswith("certified by") for c in found)
    text = fit.release_json()
    for cert in found:
        assert cert["path"] not in text
        for key in ("tau_mip", "tau_eval", "solver", "gap_achieved", "block_gaps_achieved"):
            assert f'"{key}"' not in text  # as a JSON key
    fit = dpstats.dp_select("y ~ .", frame, method="mistakes", epsilon=1, random_state=2, guard="none", **ENGINE,
                            **options)
    assert fit.ledger.entries[0].details["n_blocks"] == min(S, P - S) + 1


@pytest.mark.parametrize("method,options", [("top_r", {}), ("mistakes", {"guard": "none"}),
                                            ("top_r", {"loss": "hinge"})], ids=["top_r", "mistakes", "hinge"])
def test_verbose_lines_are_labelled_curator_only(method, options, capsys):
    frame = data(hinge="loss" in options)
    dpstats.dp_select("y ~ .", frame, method=method, epsilon=1, random_state=1, verbose=True, **ENGINE, **options)
    lines = capsys.readouterr().out.splitlines()
    assert lines, "verbose=True printed nothing: the test would not check anything"
    unlabelled = [line for line in lines if not line.startswith(CURATOR_LABEL)]
    assert not unlabelled
    dpstats.dp_select("y ~ .", frame, method=method, epsilon=1, random_state=1, **ENGINE, **options)
    assert capsys.readouterr().out == ""  # nothing printed without verbose


def _mistakes(guard):
    return dpstats.dp_select("y ~ .", data(n=200, p=6), method="mistakes", epsilon=1, s=2, bounds=(1, 1),
                             random_state=3, guard=guard)


def test_guard_none_is_shown_as_conditional_wherever_the_total_is():
    fit = _mistakes("none")
    entry = [e for e in fit.ledger if e.mechanism.startswith("mistakes")][0]
    assert entry.conditional == M.GAP_CONDITION
    k = fit.ledger.entries.index(entry) + 1
    assert fit.ledger.conditions == [f"entry {k}: {M.GAP_CONDITION}"]
    table = str(fit.ledger)
    assert f"total (basic composition; conditional on entry {k})" in table and "not privately verified" in table
    released = json.loads(fit.release_json())["ledger"]
    assert released["unconditional"] is False and released["conditions"] == fit.ledger.conditions
    assert released["entries"][k - 1]["conditional"] == M.GAP_CONDITION
    printed, summary = str(fit), fit.summary().as_text()
    for text in (printed, summary):
        eps_line = [line for line in text.splitlines() if line.startswith("epsilon spent")][0]
        assert "CONDITIONAL" in eps_line
        assert M.GAP_CONDITION in text.split(eps_line)[1]  # the condition itself follows
    assert f"Condition: entry {k}: {M.GAP_CONDITION}" in printed
    assert "conditional" in repr(fit) and "conditional" in repr(fit.ledger)


def test_guard_ptr_does_not_claim_a_condition():
    fit = _mistakes("ptr")
    assert all(e.conditional is None for e in fit.ledger) and fit.ledger.conditions == []
    released = fit.release()["ledger"]
    assert released["unconditional"] is True and released["conditions"] == []
    for text in (str(fit.ledger), str(fit), fit.summary().as_text(), repr(fit)):
        assert "conditional" not in text.lower().replace("unconditional", "")


def test_accountant_records_a_conditional_charge():
    assert M.charge_condition(M.check_options({"guard": "none"}, {})) == M.GAP_CONDITION
    assert M.charge_condition(M.check_options({}, {})) is None
    acc = Accountant(epsilon=3)
    acc.charge(1, label="plain")
    assert "condition" not in acc.history_table() and acc.conditions == []
    acc.charge(1, label="mistakes", condition=M.GAP_CONDITION)
    assert acc.history[-1].condition == M.GAP_CONDITION and acc.history[0].condition is None
    assert acc.conditions == [f"charge 2: {M.GAP_CONDITION}"]
    table = acc.history_table()
    assert "condition" in table and "not privately verified" in table and "conditional" in str(acc)
    assert acc.remaining() == (1.0, 0.0)


def test_ledger_conditions_unit():
    ledger = Ledger([LedgerEntry("a", 0.5), LedgerEntry("b", 0.5, conditional="if X")])
    assert ledger.conditions == ["entry 2: if X"] and ledger.to_dict()["unconditional"] is False
    assert "conditional on entry 2" in ledger.table() and "CONDITIONAL: if X" in ledger.table()
    assert Ledger([LedgerEntry("a", 1.0)]).to_dict()["unconditional"] is True


def test_cli_demo_labels_its_curator_lines(capsys):
    from dpstats.cli import demo

    demo()
    lines = [line for line in capsys.readouterr().out.splitlines() if "P(best subset)" in line]
    assert lines and all(line.startswith(CURATOR_LABEL) for line in lines)
