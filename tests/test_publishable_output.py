"""summary(), str(fit), the notebook display and the CLI's default output are publishable:
nothing curator-only is in them; curator_report() holds it, visibly marked."""
import io
import json
import contextlib

import numpy as np
import pytest

import dpstats
from dpstats import cli
from dpstats.methods import get_method, registered_methods
from dpstats.curator_keys import CURATOR_KEYS
from dpstats.results import CURATOR_BANNER, CURATOR_POINTER
from conftest import make_regression
from test_conformance import base_call


def _curator_strings(curator):
    """Distinctive renderings of curator values: numbers with 6 significant digits."""
    out = set()

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, (float, np.floating)) and np.isfinite(v) and v not in (0.0, 1.0) and abs(v) > 1e-3:
            out.add(f"{float(v):.6g}")
    walk(curator)
    return {s for s in out if len(s.replace("-", "").replace(".", "")) >= 4}


@pytest.mark.parametrize("name", registered_methods())
def test_publishable_outputs_hold_no_curator_item(name, tmp_path):
    data = make_regression(n=80, p=5)
    fit = dpstats.dp_select("y ~ .", data, method=name, epsilon=1.0, random_state=0, **base_call(name))
    assert fit.curator  # there is something to hide
    secrets = _curator_strings(fit.curator)
    texts = {"summary": str(fit.summary()), "str": str(fit), "html": fit._repr_html_()}
    assert str(fit).splitlines()[-1] == CURATOR_POINTER  # where the curator report is, no data in it
    for where, text in texts.items():
        assert CURATOR_BANNER not in text, where
        assert "curator" not in text.replace(CURATOR_POINTER, "").lower(), where
        leaked = [s for s in secrets if s in text]
        assert not leaked, (where, leaked)
        # No curator item by its key either (multi-word keys; names that are also public
        # parameters or released items, such as guard_branch or tv_chains, are not secrets).
        public = json.dumps(fit.release())
        named = [k for k in CURATOR_KEYS if "_" in k and k in text and k not in public]
        assert not named, (where, named)
    report = fit.curator_report()
    assert CURATOR_BANNER in str(report) and "border" in report._repr_html_()


def test_cli_prints_the_curator_report_only_when_asked(tmp_path):
    path = tmp_path / "d.csv"
    make_regression(n=80, p=4).to_csv(path, index=False)
    args = ["select", "y ~ .", "--data", str(path), "--method", "exponential", "--epsilon", "1", "--s", "2",
            "--bounds", "3,3", "--random-state", "0"]
    for extra, shown in (([], False), (["--curator"], True)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cli.main(args + extra)
        assert (CURATOR_BANNER in out.getvalue()) == shown
