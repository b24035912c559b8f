"""How an estimate prints: ``summary()`` (a statsmodels-like table), ``str()`` and the notes on how
to read it.

A part of :class:`dpstats.estimation.result.EstimateResult` (its base); each estimator family adds
its own header rows and notes through the hooks the result declares (``_header_rows``,
``_family_notes``, ``_constraint_notes``, ``_interval_note``).  Everything printed is public: it
depends on released values only.
"""
from __future__ import annotations

import math

import pandas as pd

from ..display import Summary, _fmt


class EstimateText:
    """Printing of an estimate (see the module docstring)."""

    def summary(self) -> Summary:
        """A statsmodels-like table: coefficients, bootstrap std errors, intervals, and the ledger."""
        a = (1 - self.level) / 2
        if self.has_intervals:
            ci = self.confint()
            shifted = self._centre_differs
            rows = [[name, _fmt(float(self.coef[name]))] + ([_fmt(float(self.coef_corrected[name]))] if shifted else [])
                    + [_fmt(float(self.bse[name])), _fmt(float(ci.loc[name].iloc[0])),
                       _fmt(float(ci.loc[name].iloc[1]))] for name in self.names]
            columns = (["", "coef"] + (["corrected"] if shifted else [])
                       + ["std err", f"[{_fmt(a)}", f"{_fmt(1 - a)}]"])
        else:
            rows = [[name, _fmt(float(self.coef[name]))] for name in self.names]
            columns = ["", "coef"]
        header = [
            ["response", str(self.response)],
            ["formula", self.formula],
            ["mechanism", self.mechanism],
            ["epsilon spent", _fmt(self.epsilon_spent)],
            ["delta spent", _fmt(self.delta_spent)],
        ]
        header.extend(self._header_rows())
        header.append(["intervals", {"ols": f"least squares t intervals, level {_fmt(self.level)}",
                                     "bootstrap": f"bias-corrected parametric bootstrap, {self.n_draws} draws, level "
                                                  f"{_fmt(self.level)}"}.get(self.interval_method, "none (see Notes)")])
        if self._fit_statistics() is not None:
            tag = "" if self.interval_method == "ols" else " (private: ledger entry)"
            header.append(["rows" + tag, _fmt(self.nobs)])
            none = "none: the noisy statistics give no estimate (e.g. a residual sum of squares below 0)"
            header.append(["residual variance" + tag, none if math.isnan(self.sigma2) else _fmt(self.sigma2)])
            header.append(["R-squared" + tag, none if math.isnan(self.rsquared) else _fmt(self.rsquared)])
        if self.selection_epsilon is not None:
            header.append(["selection epsilon (its ledger)", _fmt(self.selection_epsilon)])
        if self._rows_public is not None:
            header.insert(5, ["input rows (public)", str(self._rows_public)])
        if self._ranges is None:
            bounds_section = ("Bounds used", "none (bound-free): the terms and the response were used unclipped, in "
                                             "their original units")
        else:
            used = [[t, _fmt(lo), _fmt(hi)] for t, (lo, hi) in self.bounds_used.items()]
            bounds_section = ("Bounds used (each range mapped to [-1, 1]; values outside are clipped)", used,
                              ["term", "lower", "upper"])
        sections = [
            ("Call", self.call),
            (f"Private {'least squares' if self.model == 'linear' else 'logistic regression'} after selection",
             header, ["", ""]),
            ("Coefficients (original units" + (", log-odds of the second level)" if self.model == "logistic"
                                                else ")"), rows, columns),
            bounds_section,
            ("Notes", "\n".join(self.notes)),
            ("Privacy ledger", str(self.ledger)),
        ]
        return Summary(sections)

    def __str__(self):
        lines = ["Call:", self.call, "", f"Private coefficients ({self.family}) after selection:"]
        if self.has_intervals:
            ci = self.confint()
            table = pd.DataFrame({"coef": self.coef, **({"corrected": self.coef_corrected} if self._centre_differs
                                                         else {}),
                                  ci.columns[0]: ci.iloc[:, 0], ci.columns[1]: ci.iloc[:, 1]})
        else:
            table = pd.DataFrame({"coef": self.coef})
        lines.append(table.to_string(float_format=lambda v: f"{v:.6g}"))
        lines.append("")
        lines.append(f"epsilon spent: {_fmt(self.epsilon_spent)}   delta: {_fmt(self.delta_spent)}   "
                     f"neighbours: {self.ledger.entries[-1].neighbours}")
        lines.extend(f"Note: {c}" for c in self.notes)
        lines.extend(f"Caveat: {c}" for c in self.ledger.caveats)
        return "\n".join(lines)

    @property
    def notes(self) -> list:
        """How to read the estimate and its intervals (public: they depend on released values only)."""
        out = []
        if not self.has_intervals:
            out.append(self.no_interval_reason[0].upper() + self.no_interval_reason[1:] + ".")
        elif self.interval_method == "ols":
            out.append("epsilon = inf: ordinary least squares on the selected terms; the intervals are its t "
                       "intervals (as statsmodels and R's confint).")
        else:
            out.append(self._interval_note())
        out.extend(self._family_notes())
        if self.ridge is not None and self.ridge > 0 and self.model == "linear":
            shrink = self.shrinkage
            if self.has_intervals:
                out.append(f"A public constraint binds: {shrink} shrinks the released coefficients, so coef may lie "
                           "outside the intervals, which are for the coefficients and centred at coef_corrected "
                           "(the ridge undone); more rows, a larger epsilon or tighter public ranges make the two "
                           "agree.")
            else:
                out.append(f"A public constraint binds: {shrink} shrinks the coefficients; more rows, a larger "
                           "epsilon or tighter public ranges reduce it. Without intervals the noise and the ridge "
                           "(on the mapped scale, the intercept's column included) are not bounded here: even a "
                           "coefficient's sign may be wrong (on MASS Boston at epsilon 1, rm's, t about 10 in least "
                           "squares, came out negative in 18 % of draws).")
        elif self.ridge is not None and self.ridge > 0:
            out.append("Objective perturbation adds a public ridge (Delta on the mapped scale), which shrinks the "
                       "coefficients, the more so with few rows.")
        out.extend(self._constraint_notes())
        if self._public_call.get("ranges") == "private":
            if self._public_call.get("ranges_bought"):
                out.append("The ranges were bought privately (10 % of epsilon, the first ledger entry) and intersected "
                           "with the public ones: the estimate describes the data clipped to them.")
            else:
                out.append("ranges='private' kept the public ranges: too few rows for this epsilon to draw them "
                           "reliably (dpstats.estimation.private_ranges), so all of epsilon went to the estimate.")
        out.append("The coefficients and intervals are conditional on the selected terms, chosen on the same data "
                   "(confint(selection_adjusted=True) gives Zrnic and Jordan's (2020) correction where it is "
                   "useful); they describe the clipped variables.")
        if self.selection_epsilon is not None:
            out.append(f"Privacy: the selection spent epsilon = {_fmt(self.selection_epsilon)} (its ledger), this "
                       f"estimate epsilon = {_fmt(self.epsilon_spent)} (the ledger below).")
        return out
