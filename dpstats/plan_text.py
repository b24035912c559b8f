"""How a plan prints (:class:`PlanText`, the printout half of :class:`dpstats.planning.Plan`): the call,
the assumed design and its ranges in the user's units, how the answer was computed, the predicted
probability with its Monte Carlo interval, power and false discovery rate, the answers of
``required_n`` / ``required_epsilon``, the table, and where to compare other methods.
"""
from __future__ import annotations

from ._lazy import lazy_module
from .method_options import is_integer
from .plan_search import answer_lines
from .plan_units import DEFAULT_SPREAD, ZERO_ONE_SD, auto_design, shown_bounds
from .simulate import response_sd

stats = lazy_module("scipy.stats")  # imported on first use (dpstats._lazy)


class PlanText:
    """The printout of a :class:`~dpstats.planning.Plan` (it reads the plan's attributes only)."""

    def __str__(self):
        lo, hi = self.interval
        row = self._rows[(self.n, self.epsilon)]
        kind = row["computed"]
        how = {"exact": "exact: the mechanism's own probability of the true support, averaged over simulated data sets",
               "mixed": "mixed: the mechanism's own probability of the true support where the fit lists it, "
                        "else whether the call returned it",
               "empirical": "empirical: frequency of returning the true support",
               "approximate": None if self.model is None else self.model.describe()}[kind]
        if self.model is not None and kind == self.model.kind:
            how = self.model.describe()
        lines = [
            "Plan (public inputs only; simulated data, no budget spent)",
            f"method: {self.method}   n = {self.n}   p = {self.p}   "
            f"{'s = auto (true size ' + str(self.s) + ')' if self.select_s == 'auto' else 's = ' + str(self.s)}   "
            f"epsilon = {self.epsilon:g}   "
            f"bounds = {shown_bounds(self.bounds)}"
            + ("   loss = hinge" if self.response == "binary" else "")
            + ("" if self.formula == "y ~ ." else "   (no intercept)"),
        ]
        if self.method_choice is not None:
            lines.append(f"method=\"auto\" chose {self.method} (as dp_select would for this call, from public "
                         f"inputs only): {self.method_choice['reason']}")
        if self.like is not None:
            lines.append("planned like a fit's public call (method, " + ("n, " if self.like["n_public"] else "")
                         + "p, s, epsilon, options); the design below is stated by the user, not read from the fit")
        lines += [
            self._design_line(),
            self._ranges_line(),
            f"computed: {how}; {self.reps} data sets per point"
            + (" (more where a search needed them for its answer's precision: the table's reps)"
               if any(r["reps"] > self.reps for r in self._rows.values()) else ""),
            f"predicted P(returns the true support) = {self.probability:.3f}   "
            f"{self.level:.0%} Monte Carlo interval [{lo:.3f}, {hi:.3f}]",
            f"predicted power (share of the true terms returned) = {row['power']:.3f}   false discovery rate "
            f"(share of returned terms not true, 0 when none) = {row['fdr']:.3f}",
            *answer_lines(self.answers, self.level),
            "",
            self.table.to_string(index=False, float_format=lambda v: f"{v:.4g}"),
            "",
            "A prediction for the planned design, not a statement about any real data set.",
            self._other_methods_line(),
        ]
        return "\n".join(lines)

    def _design_line(self) -> str:
        """The assumed design, in the units a statistician states it (R^2 and snr both)."""
        d = self.design
        r2 = d["snr"] / (1.0 + d["snr"])
        effect = (f"R^2 = {d['r2']:g} (snr = {d['snr']:.4g})" if "r2" in d else
                  f"snr = {d['snr']:g} (R^2 = {r2:.3g})")
        line = (f"assumed design (stated, not public): Toeplitz rho = {d['rho']:g}, coefficients 1/sqrt(s) on "
                f"{', '.join(self.truth)}, {effect}")
        if self.response == "continuous":
            return line + (f", family = {d['family']}" if "family" in d else "")
        link = d.get("link", "sign")
        how = ("y = 1 where the latent score x'beta + noise is positive" if link == "sign" else
               "y = 1 with probability 1 / (1 + exp(-score))")
        if self.response == "binary":
            return (line + f" of the latent score; response: binary (family binomial, link {link}: {how}; coded "
                    "0/1, as the hinge loss needs)")
        return (line + f" of the latent score; response: 0/1 (family binomial, link {link}: {how}), analysed as a "
                "numeric response (with the squared loss, a linear probability model)")

    def _ranges_line(self) -> str:
        """What the simulated bounds mean in the user's units (module docstring, "Units")."""
        d, b = self.design, self.bounds
        if b is None:
            return (f"ranges: none ({self.method} uses no public ranges)"
                    + (f"; design['spread'] = {d['spread']:g} is not used" if "spread" in d else ""))
        if self.response == "binary":
            return self._binary_ranges_line()
        if isinstance(b, str):
            return "ranges: private (bounds='auto' spends a share of epsilon on them)"
        if not isinstance(b, tuple):
            return "ranges: the bounds given directly (a dict), on the simulated terms' scale (standard deviation 1)"
        if self.response == "0/1":
            return self._zero_one_ranges_line()
        sd_y = response_sd(self.p, self.s, d["rho"], d["snr"])
        if "spread" in d:
            stated = "the default" if d["spread"] == DEFAULT_SPREAD and self._default_spread else "stated"
            clip = 200 * stats.norm.sf(d["spread"])
            response = (f"the response's +-{d['spread_y']:g} of its (spread_y, stated)" if "spread_y" in d
                        else "the response's too")
            return (f"ranges: the public ranges span +-{d['spread']:g} standard deviations of the data on each side "
                    f"for every term (spread = {d['spread']:g}, {stated}; they clip {clip:.2g} % of a normal term), "
                    f"{response}; simulated bounds ({b[0]:.4g}, {b[1]:.4g}): terms +-{b[0]:.4g}, the response "
                    f"+-{b[1]:.4g} (its standard deviation {sd_y:.4g})")
        return (f"ranges: bounds = ({b[0]:g}, {b[1]:g}) given directly: the terms' ranges span +-{b[0]:.3g} of their "
                f"standard deviations, the response's +-{b[1] / sd_y:.3g} of its ({sd_y:.4g}); they clip "
                f"{200 * stats.norm.sf(b[0]):.2g} % of a normal term")

    def _terms_ranges(self) -> str:
        """The terms' part of the ranges line: their spread, stated or the default, and what it clips."""
        d, b = self.design, self.bounds
        if "spread" not in d:
            return (f"bounds = ({b[0]:g}, ...) given directly: the terms' ranges span +-{b[0]:.3g} of their standard "
                    f"deviations; they clip {200 * stats.norm.sf(b[0]):.2g} % of a normal term")
        stated = "the default" if d["spread"] == DEFAULT_SPREAD and self._default_spread else "stated"
        return (f"the public ranges span +-{d['spread']:g} standard deviations of the data on each side for every "
                f"term (spread = {d['spread']:g}, {stated}; they clip {200 * stats.norm.sf(d['spread']):.2g} % of a "
                "normal term)")

    def _binary_ranges_line(self) -> str:
        """The ranges of a hinge-loss plan: the terms' only; the binary response has none."""
        d, b = self.design, self.bounds
        none = ("the response: none (binary, coded -1 / +1 by the hinge loss and never clipped"
                + (f"; design['spread_y'] = {d['spread_y']:g} is not used)" if "spread_y" in d else ")"))
        if isinstance(b, str):
            return f"ranges: the terms' private (bounds='auto' spends a share of epsilon on them); {none}"
        if not isinstance(b, tuple):
            return ("ranges: the terms' bounds given directly (a dict), on the simulated terms' scale (standard "
                    f"deviation 1); {none}")
        return f"ranges: {self._terms_ranges()}; {none}; simulated bounds ({b[0]:.4g}, {b[1]:.4g}), b_y not used"

    def _zero_one_ranges_line(self) -> str:
        """The ranges of a squared-loss plan of a 0/1 response (family binomial)."""
        d, b = self.design, self.bounds
        half = b[1]
        response = (f"the 0/1 response's range ({0.5 - half:.4g}, {0.5 + half:.4g}) spans +-{half / ZERO_ONE_SD:.3g} "
                    f"of its standard deviation {ZERO_ONE_SD:g}"
                    + (" (spread_y, stated)" if "spread_y" in d else
                       " (given directly)" if "spread" not in d else " (its natural range, the default)"))
        return (f"ranges: {self._terms_ranges()}; {response}; simulated bounds ({b[0]:.4g}, {b[1]:.4g}): terms "
                f"+-{b[0]:.4g}, the response simulated centred (y - 1/2) +-{b[1]:.4g}")

    def _other_methods_line(self) -> str:
        """Where to compare methods on this design, and what method="auto" would take (public)."""
        from .method_choice import choose_method, chosen_options

        d = self.design
        if self.response != "continuous":
            return ("Other methods: dpstats.compare and method=\"auto\" plan a continuous response with the squared "
                    "loss; plan each method for this response here (e.g. plan(method=\"top_r\", ..., loss=\"hinge\")).")
        design = auto_design(d, self.bounds)
        spread = design.get("spread")
        size = self.select_s if is_integer(self.select_s) else None
        auto, _ = choose_method(bounds_given=self.bounds is not None, design=design, epsilon=self.epsilon, p=self.p,
                                s=size, auto_size=self.select_s == "auto")
        options = "".join(f", {k}={v!r}" for k, v in chosen_options(auto, size).items())
        effect = f", r2={d['r2']:g}" if "r2" in d else f", snr={d['snr']:g}"
        return (f"Other methods on this design: dpstats.compare(n={self.n}, p={self.p}, s={self.s}, "
                f"epsilon={self.epsilon:g}, design=dict(rho={d['rho']:g}"
                + (f", spread={spread:g}" if spread is not None else "")
                + (f", spread_y={d['spread_y']:g}" if "spread_y" in d else "") + effect
                + (f")); method=\"auto\" chose {auto!r}{options} for this plan." if self.method_choice is not None
                   else f")); method=\"auto\" would take {auto!r}{options}."))
