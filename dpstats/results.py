"""The result of ``dp_select``: what was selected, what it cost, and what only the curator may see.

Modelled on statsmodels' results: the object knows its call, prints a compact table,
and offers :meth:`SelectionResult.summary`.  Only :meth:`SelectionResult.release`
output is covered by the privacy ledger; everything under ``curator`` (the non-private
optimum, objective values, exact outcome probabilities) is for the data curator and
must not be published.
"""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
from tabulate import tabulate

from .display import Summary, _fmt  # noqa: F401  (re-exported)
from .published import PublishedResult

#: The last line of ``print(fit)``: where the curator report is (the same on every data set).
CURATOR_POINTER = "Curator-only diagnostics (computed outside the budget, never publish): fit.curator_report()"
CURATOR_BANNER = "CURATOR ONLY - not differentially private, do not publish"


def _sign_symbol(value):
    if value is pd.NA or value is None or (isinstance(value, float) and math.isnan(value)):
        return "?"
    return {1: "+", -1: "-", 0: "0"}[int(value)]


def _public_text(value):
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_public_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
    return _fmt(value)


#: Ranges listed inline by ``print(fit)`` (all of them are in ``summary()``).
BOUNDS_SHOWN = 6


class SelectionResult(PublishedResult):
    """Outcome of one :func:`dpstats.dp_select` call.

    Attributes
    ----------
    support : list of str
        Selected terms (private).
    signs : pandas.Series
        Over all candidate terms: 0 for terms not selected; for selected terms the
        private sign (-1 or +1), 0 when the sign step drew "undetermined", and <NA>
        when no private sign was computed (``signs=False``).
    ledger : Ledger
        Every mechanism that touched the data and what it spent: the call's own entries, then
        one or more entries per follow-up query made through this result (``estimate``),
        labelled "follow-up estimate: ...".
    epsilon_spent, delta_spent : float
        Ledger totals (basic composition): the call and its follow-up queries.  When
        ``ledger.conditions`` is not empty the guarantee is conditional on the data (e.g.
        ``method="mistakes"`` with ``guard="none"``), and the printed result, the summary and
        ``release()`` say so.
    method : str
    call : str
        The call, R style.
    curator : dict
        Curator-only diagnostics (not private).
    """

    def __init__(self, *, call, method, title, formula, response, terms, support, signs, signs_private,
                 ledger, public_call, released_extras, curator, intercept, _refit=None, guarantee=None):
        self.call = call
        self.method = method
        self.title = title
        self.formula = formula
        self.response = response
        self.terms = list(terms)
        self.support = list(support)
        self.signs = signs
        self.signs_private = signs_private
        self.ledger = ledger
        self.curator = curator
        self.intercept = intercept
        self._public_call = public_call
        self._released_extras = dict(released_extras)
        #: What the released set controls, and under which assumptions (public), for methods that
        #: state it (``method="bh"``: the false discovery rate); None otherwise.
        self.guarantee = guarantee
        # What fit.estimate() needs to refit on the same data (data, formula, design plan, ranges,
        # the selection's accountant): private, never released; the data and the accountant are
        # never pickled (__getstate__).
        # ``estimates`` is set by dp_select(..., estimate=share).
        self._refit = _refit
        self.estimates = None

    @property
    def holds_data(self) -> bool:
        """Whether this result still holds the data of its selection (for :meth:`estimate`)."""
        return bool(self._refit) and self._refit.get("data") is not None

    def drop_data(self):
        """Forget the data of the selection (kept only so that :meth:`estimate` can refit it).

        Afterwards ``estimate(..., data=...)`` needs the same data set again (checked against the
        selection's schema) and still charges the selection's accountant.  Pickling drops the
        data too, and the accountant (``estimate`` then needs ``accountant=``); ``copy.copy`` and
        ``copy.deepcopy`` drop the data and share the accountant object.  Returns ``self``.
        """
        if self._refit:
            self._refit = _without_data(self._refit)
        return self

    def __getstate__(self):
        # The data stays with the curator's process: a pickled result (saved, sent to a
        # colleague) carries no raw rows.  Nor does it carry the selection's accountant: a copy
        # charging a copy of it could overspend the shared budget.  The accountant stays with
        # this result, and the unpickled copy's estimate() asks for accountant=
        # (dpstats.estimation.follow_up).
        return self._state(keep_accountant=False)

    def __copy__(self):
        # A copy in this process shares the accountant object (and, being shallow, the ledger).
        new = type(self).__new__(type(self))
        new.__dict__.update(self._state(keep_accountant=True))
        return new

    def __deepcopy__(self, memo):
        # A deep copy in this process shares the accountant object (Accountant.__deepcopy__ returns
        # itself), so the budget holds across the copies; everything else is copied (the copy records
        # its own follow-up queries on its own ledger), and the data is dropped as by pickling.
        import copy

        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self._state(keep_accountant=True), memo))
        return new

    def _state(self, *, keep_accountant):
        """The attributes without the data (and, unless ``keep_accountant``, without the accountant)."""
        state = dict(self.__dict__)
        if state.get("_refit"):
            state["_refit"] = _without_data(state["_refit"])
            if not keep_accountant and state["_refit"].get("accountant") is not None:
                from .estimation.follow_up import ACCOUNTANT_LEFT_BEHIND

                state["_refit"]["accountant"] = None
                state["_refit"][ACCOUNTANT_LEFT_BEHIND] = True
        return state

    def _epsilon_text(self) -> str:
        """The epsilon spent, saying so when the guarantee is conditional (wherever the total is shown).

        The conditions themselves follow: as "Condition:" lines in ``print(fit)``, and in the
        ledger table of the summary.
        """
        text = _fmt(self.epsilon_spent)
        follow_ups = self._follow_up_entries()
        if follow_ups:
            from .estimation.follow_up import selection_ledger
            from .privacy.ledger import Ledger

            calls = len({e.details.get("follow_up") for e in follow_ups})
            text += (f" (this call {_fmt(selection_ledger(self.ledger).total_epsilon)}, {calls} follow-up "
                     f"estimate{'' if calls == 1 else 's'} {_fmt(Ledger(follow_ups).total_epsilon)})")
        return text + (" (CONDITIONAL, see below)" if self.ledger.conditions else "")

    def _follow_up_entries(self) -> list:
        """The ledger entries of follow-up queries (``estimate`` after the call), oldest first."""
        from .estimation.follow_up import follow_up_entries

        return follow_up_entries(self.ledger)

    @property
    def public_call(self) -> dict:
        """The call's public parameters (``release()["call"]``)."""
        return dict(self._public_call)

    def release(self) -> dict:
        """What may be published: public call parameters, private outputs and the ledger.

        Every data-derived item here is covered by a ledger entry.  The ledger includes the
        follow-up queries made so far through this result (``estimate``): their spending, not
        their released values, which are in each estimate's own ``release()``.
        """
        out = {
            "call": dict(self._public_call),
            "selected": list(self.support),
            "signs": ({t: int(self.signs[t]) if self.signs[t] is not pd.NA else None for t in self.support}
                      if self.signs_private else None),
        }
        out.update(self._released_extras)
        if self.estimates is not None:  # its ledger entry is in self.ledger too
            out["estimates"] = self.estimates.release()
        out["ledger"] = self.ledger.to_dict()
        return out

    def estimate(self, *, epsilon, delta=0.0, method="adassp", bounds=None, random_state=None, accountant=None,
                 level=0.95, bootstrap=1000, radius=None, data=None, rows_per_model=None, ranges="public"):
        """Private coefficients of the selected terms, with intervals and predictions; a new ledger entry.

        Refits the selected terms (and the intercept) on the same data, formula and ranges,
        with its own budget ``epsilon``, charged to the accountant of the selection
        (``dp_select(..., accountant=...)``), so that follow-up queries on the kept data draw on
        the same budget and are refused, before anything is read, once it is spent; another
        accountant is refused where the selection had one (it would let the data be read past
        that cap), and is charged where it had none.  Whatever is charged, the call is recorded on this result's
        ledger as a follow-up query (entries labelled "follow-up estimate: ..."), so that
        ``ledger``, ``epsilon_spent``, ``release()`` and ``summary()`` show the total spent on
        the data through this result; a refused call records nothing.  ``data``: only after
        the result lost its data (pickled, or :meth:`drop_data`); the same data set again,
        checked against the selection's schema.  A pickle does not carry the selection's
        accountant: after unpickling, a selection made with one needs ``accountant=`` (the
        same Accountant object in the process that holds it, or a new one).

        * ``method="adassp"`` (default, least-squares selections): AdaSSP
          (``help(dpstats.estimation.adassp)``), Laplace noise and pure epsilon-DP for
          ``delta=0``, Gaussian noise for ``delta > 0``;
        * ``method="adassp_residual"`` (least-squares selections, ``delta=0``):
          AdaSSP with 45 % of epsilon, then one Newton step from its fit whose noise scales
          with the residuals (a private clipping level, then noisy ``Z'r`` and ``r'r``;
          ``help(dpstats.estimation.residual_step)``): much narrower intervals with several
          terms and enough rows, more refusals with few rows or wide ranges (docs/methods.md);
        * ``method="objective_perturbation"``: objective perturbation (Kifer, Smith and
          Thakurta 2012; ``help(dpstats.estimation.objective_perturbation)``), pure epsilon-DP
          (``delta`` must be 0).  After a least-squares selection, least squares over the
          public ball ``||theta|| <= radius`` on the mapped scale (default: the selection's
          radius, else 1), with 20 % of epsilon spent on a noisy Gram matrix for the
          intervals; after a hinge-loss selection, logistic regression (a smooth surrogate
          of the hinge) with ``predict(type="response" | "class" | "link")`` and no intervals;
        * ``method="tukey"`` (least-squares selections): the Tukey-depth mechanism (Amin,
          Joseph, Ribero and Vassilvitskii 2023, with the test and private number of models
          of Dick, Gillenwater and Joseph 2023; ``help(dpstats.estimation.tukey)``),
          (epsilon, delta)-DP with ``delta > 0`` (e.g. 1e-6), needs no bounds (``bounds=`` is
          refused; the terms and the response are used unclipped, in original units) and
          gives one point, no intervals.  Under replace-one neighbours it runs at
          ``(epsilon / 2, delta / (1 + exp(epsilon / 2)))`` add/remove (group privacy).  Its
          test can fail (too few rows for epsilon): the result then has NaN coefficients and
          says so (``status``); the budget is spent.  ``rows_per_model`` (tukey only): rows
          per least-squares model, ``None`` for 2 d (d = design columns), ``"d"`` for the
          paper's rule (passes its test from about half the rows, with a biased point:
          docs/methods.md), or a number.

        ``bounds`` only for selections without ranges (kendall, dpvote) with ``adassp`` or
        ``objective_perturbation``.  ``ranges="private"`` (``adassp``, replace-one selections): 10 % of epsilon
        buys each selected term's and the response's range, intersected with the public ones,
        when the draw is reliable (a public rule on epsilon, s and the row count; else the
        public ranges are kept and the notes say so): with ranges wider than the data it gives
        intervals where the public ranges make them unavailable
        (``help(dpstats.estimation.private_ranges)``).  Intervals:
        parametric bootstrap at ``level`` with ``bootstrap`` draws, no extra budget.  Returns
        an :class:`~dpstats.estimation.EstimateResult`; docs/methods.md, "Estimates after
        selection".
        """
        from .estimation import estimate_after_selection

        return estimate_after_selection(self, epsilon=epsilon, delta=delta, method=method, bounds=bounds,
                                        random_state=random_state, accountant=accountant, level=level,
                                        bootstrap=bootstrap, radius=radius, data=data,
                                        rows_per_model=rows_per_model, ranges=ranges)

    def to_frame(self) -> pd.DataFrame:
        """One row per candidate term: selected (bool) and sign."""
        return pd.DataFrame({
            "term": self.terms,
            "selected": [t in self.support for t in self.terms],
            "sign": self.signs.reindex(self.terms).astype("Int64").to_numpy(),
        }).set_index("term")

    def _selection_rows(self, only_selected=False):
        rows = []
        for t in self.terms:
            selected = t in self.support
            if only_selected and not selected:
                continue
            sign = _sign_symbol(self.signs[t]) if selected else ""
            if selected and self.signs_private and sign == "0":
                sign = "0 (undetermined)"
            rows.append([t, "yes" if selected else "", sign])
        return rows

    def size_table(self) -> pd.DataFrame:
        """[curator only] ``s="auto"``: the non-private criterion across sizes, like
        ``summary(regsubsets(...))`` in R's leaps: per size the best support, its objective
        (RSS under the call's ridge and radius, mapped units), the criterion the mechanism
        uses, BIC and Cp with the public variance, leaps' BIC n log(RSS / n) + k log n, and the
        exact probabilities of the mechanism.  A size whose best support was not certified
        (``size_certify="needed"``: its score could not win the draw) has NaN values, and
        ``objective_lower`` / ``objective_upper`` bound its objective (equal to ``objective``
        where certified).  Computed from the data outside the budget."""
        rows = self.curator.get("size_table")
        if rows is None:
            from .errors import InvalidArgumentError

            if self._public_call.get("size_selection", {}).get("short_rule"):
                raise InvalidArgumentError(
                    f"size_table() is the size criterion's table of the best-subset methods; method {self.method!r} "
                    "chose its size by stopping its own rounds: curator_report() shows each round's stop level "
                    "and the non-private size.")
            raise InvalidArgumentError("size_table() needs a call with s='auto' of a best-subset method "
                                       "(exponential, top_r or mistakes).")
        frame = pd.DataFrame(rows).set_index("s")
        frame["best_support"] = [", ".join(v) for v in frame["best_support"]]
        frame.attrs["label"] = "[curator only]"
        return frame

    def summary(self) -> Summary:
        """The publishable summary: call, public parameters, selection, signs, ledger.

        Nothing curator-only is in it (the non-private optimum, objective values, exact
        probabilities, solver statistics): those are in :meth:`curator_report`.
        """
        header = [
            ["method", f"{self.method} ({self.title})"],
            ["formula", self.formula],
            ["candidate terms", str(len(self.terms))],
            ["intercept", "in every model, unpenalised" if self.intercept else "none"],
        ]
        for key in ("n", "bounds", "radius", "ridge", "R"):
            if key in self._public_call:
                header.append([f"{key} (public)", _public_text(self._public_call[key])])
        header += [["epsilon spent", self._epsilon_text()], ["delta spent", _fmt(self.delta_spent)]]
        for key, value in self._released_extras.items():
            if key not in ("bounds_used", "bounds_derived"):
                header.append([_RELEASED_LABELS.get(key, key), _released_text(value)])
        sections = [
            ("Call", self.call),
            ("Selection", header, ["", ""]),
            ("Terms", self._selection_rows(), ["term", "selected", "sign"]),
        ]
        if getattr(self, "guarantee", None):
            sections.append(("What is controlled", textwrap.fill(self.guarantee, width=100)))
        used = self._released_extras.get("bounds_used")
        if used:
            derived = self._released_extras.get("bounds_derived") or {}
            if derived:
                # Ranges of derived terms follow from the columns' public ranges: say how.
                rows = [[t, _fmt(lo), _fmt(hi), derived.get(t, "given")] for t, (lo, hi) in used.items()]
                header = ["term", "lower", "upper", "from"]
            else:
                rows = [[t, _fmt(lo), _fmt(hi)] for t, (lo, hi) in used.items()]
                header = ["term", "lower", "upper"]
            sections.append(("Bounds used (each range mapped to [-1, 1]; values outside are clipped)", rows,
                             header))
        sections.append(("Privacy ledger", str(self.ledger)))
        return Summary(sections)

    def curator_report(self) -> Summary:
        """Curator-only diagnostics, visibly marked: never publish them.

        The non-private best support, objective values, exact probabilities of the
        mechanism's outputs, how the solver certified its answer and the sign votes: all
        computed from the data outside the privacy budget.  At the top, a plain-language
        verdict (the probability of returning the non-private answer against a uniform
        random pick, and of each sign equalling the block majority) and a caveat for every
        condition that fails on these data; then the Conditions table
        (``curator["conditions"]``, :mod:`dpstats.conditions`) and the other diagnostics.
        Whether a condition holds is data: ``print(fit)``, ``summary()`` and ``release()``
        never say it.
        """
        if not self.curator:
            return Summary([(CURATOR_BANNER, "(no diagnostics)")], curator=True)
        from .conditions import plain_verdict, table

        eps = self._public_call.get("epsilon")
        size = self._public_call.get("s", self._public_call.get("k"))
        if size == "auto":  # s="auto": compared with a uniform pick among supports of the criterion's size
            size = self.curator.get("criterion_choice", {}).get(
                "s", self._public_call.get("size_selection", {}).get("k", 1))  # k="auto" of dp_sis: public k
        verdict = plain_verdict(_method_of(self.method), self.curator, p=len(self.terms), size=size,
                                epsilon=math.inf if eps == "inf" else eps, support=self.support)
        sections = [(CURATOR_BANNER, "\n".join(textwrap.fill(line, 100) for line in verdict))]
        if self.curator.get("conditions"):
            sections.append(("Conditions (curator only)", *table(self.curator["conditions"])))
        sections.append(("Diagnostics (curator only)", self._curator_text()))
        return Summary(sections, curator=True)

    def plot(self, ax=None, top=20):
        """Curator only: what the mechanism chose among, with the released support marked.

        One horizontal bar per candidate (best first), the released support in red with
        its label in bold:

        * ``exponential``, ``top_r`` (and ``mistakes`` when its guard ran top_r): the
          exact P(returned) of the best supports (``curator["top_supports"]``), with the
          probability of a uniform pick, 1 / C(p, s), as a dashed line;
        * ``mistakes``: P(block i) of the mechanism that ran, each block labelled by its
          best support S^(i);
        * ``mcmc``: the objective R (lower is better) of the chain's start and of the
          released support, and the exact mechanism's most likely support when it was
          computed;
        * ``dp_sis``, ``kendall``, ``samp_agg``: the non-private score of the leading terms
          (``curator["non_private_scores"]``), released terms added when they rank lower;
        * ``dpvote``: the stability st_j of the leading coordinates.

        At most ``top`` candidates, plus the released support or terms when they rank lower
        (for ``top_r``'s uniform draw outside its R best supports, with its exact
        probability P(a = R + 1) / (C(p, s) - R)).  The names are on
        the vertical axis and wrap, so they are readable at any length; a figure made here
        keeps them on ``savefig`` without ``bbox_inches``.  Titled "curator only": never
        publish the figure (it shows non-private numbers).  Returns the matplotlib Axes
        (needs ``pip install "dpstats[plots]"``).
        """
        from .selection_plot import draw_selection

        return draw_selection(self, ax, top)

    def _curator_text(self) -> str:
        c = self.curator
        lines = []
        simple = [[k.replace("_", " "), _fmt(v) if not isinstance(v, (list, tuple)) else ", ".join(_fmt(x) for x in v)]
                  for k, v in c.items() if not isinstance(v, (dict,)) and k not in ("top_supports", "conditions")]
        if isinstance(c.get("certificate"), dict):  # how the solver certified its answer (data-dependent)
            simple.append(["certificate", str(c["certificate"].get("path", ""))])
        if isinstance(c.get("share_clipped"), dict):  # values outside their public range, most clipped first
            clipped = sorted(((v, t) for t, v in c["share_clipped"].items() if v > 0), reverse=True)
            shown = ", ".join(f"{t} {_fmt(v)}" for v, t in clipped[:8]) + (" ..." if len(clipped) > 8 else "")
            simple.append(["share clipped", shown or "none"])
        lines.append(tabulate(simple, tablefmt="plain", disable_numparse=True))
        if c.get("top_supports"):
            rows = [[i + 1, ", ".join(r["support"]), _fmt(r["objective"]), _fmt(r["probability"])]
                    for i, r in enumerate(c["top_supports"])]
            lines.append("")
            lines.append("Best supports (non-private ranking) and the exact probability the mechanism returns each:")
            lines.append(tabulate(rows, headers=["rank", "support", "objective", "P(returned)"], tablefmt="simple",
                                  disable_numparse=True))
        return "\n".join(lines)

    def __str__(self):
        lines = ["Call:", self.call, "",
                 f"Differentially private variable selection: {self.title}",
                 f"epsilon spent: {self._epsilon_text()}   delta: {_fmt(self.delta_spent)}   "
                 f"neighbours: {self._neighbours_text()}", ""]
        public = self._public_parameters_line()
        if public:
            lines[-1:-1] = [public]
        rows = self._selection_rows(only_selected=True)
        what = "with private signs" + self._sign_budget_text() if self.signs_private else "signs not computed"
        if "s_selected" in self._released_extras:  # s="auto": the size is a private output (its ledger entry)
            size = self._public_call.get("size_selection", {})
            noise = self._released_extras.get("size_noise_sd")
            noise = "" if noise is None else f", private noise sd {noise:.4g}" + (
                " (clamped: the noisy residual sum of squares was not positive)" if noise == 0 else "")
            how = (f"criterion {size['criterion']}" if "criterion" in size
                   else size.get("short_rule", "the method's own rule"))
            chosen = "without noise" if self.epsilon_spent == math.inf else "privately"
            noise = noise.replace("private noise sd", "noise sd") if chosen == "without noise" else noise
            lines.append(f"Size chosen {chosen}: s = {self._released_extras['s_selected']} "
                         f"(candidates 1..{size.get('s_max', '?')}, {how}{noise})")
        rule = self._public_call.get("size_selection", {}).get("rule")
        if rule is not None and "s_selected" not in self._released_extras:  # k="auto" of dp_sis: a public rule
            lines.append(f"Size from a public rule: k = {self._public_call['size_selection']['k']} ({rule})")
        lines.append(f"Selected terms ({len(self.support)} of {len(self.terms)}), {what}:")
        lines.append(tabulate([[r[0], r[2]] for r in rows], tablefmt="plain", disable_numparse=True) if rows else "  (none)")
        if getattr(self, "guarantee", None):
            lines.append("")
            lines.append(textwrap.fill(f"Controlled: {self.guarantee}", width=100))
        if self.ledger.conditions or self.ledger.caveats:
            lines.append("")
            lines.extend(f"Condition: {c}" for c in self.ledger.conditions)
            lines.extend(f"Caveat: {c}" for c in self.ledger.caveats)
        lines.append(CURATOR_POINTER)
        return "\n".join(lines)

    def _sign_budget_text(self) -> str:
        """The sign step's public budget per term and, where it is small, the best chance it gives the
        blocks' sign (every block agreeing): a sign drawn at a small budget reads as a vote, not a finding."""
        from .estimation.follow_up import selection_ledger

        entry = next((e for e in selection_ledger(self.ledger).entries
                      if isinstance(e.details, dict) and "epsilon_per_term" in e.details and "blocks" in e.details), None)
        if entry is None or not isinstance(entry.details["blocks"], int):
            return ""
        per_term, blocks = float(entry.details["epsilon_per_term"]), entry.details["blocks"]
        if math.isinf(per_term):
            return ""
        # P(+) with every block voting + (counts 0, 0, B): exp(e B / 2) / (exp(e B / 2) + 2), public
        best = 1.0 / (1.0 + 2.0 * math.exp(-per_term * blocks / 2.0))
        text = f" (epsilon {per_term:.3g} per term over {blocks} block votes"
        if best < SIGN_CLEAR_PROBABILITY:
            text += f"; even with every block agreeing a sign matches them with probability {best:.2f} at most"
        return text + ")"

    def _neighbours_text(self) -> str:
        """The selection's neighbouring relation (its last own entry; follow-up queries may differ)."""
        from .estimation.follow_up import selection_ledger

        own = selection_ledger(self.ledger).entries
        return own[-1].neighbours if own else "n/a"

    def _public_parameters_line(self) -> str:
        """n where public, the ridge and radius used, and the ranges (public or drawn): all public
        inputs or ledger-covered outputs."""
        call = self._public_call
        parts = [f"{k} = {_fmt(call[k])}" for k in ("n", "ridge", "radius") if k in call]
        used = self._released_extras.get("bounds_used")
        if used:
            shown = [f"{t} [{_fmt(lo)}, {_fmt(hi)}]" for t, (lo, hi) in list(used.items())[:BOUNDS_SHOWN]]
            more = f", ... ({len(used)} in all, see summary())" if len(used) > BOUNDS_SHOWN else ""
            origin = "drawn privately" if call.get("bounds") == "auto" else "public"
            derived = self._released_extras.get("bounds_derived") or {}
            if derived:
                origin += f"; {len(derived)} derived from the given ones, see summary()"
            parts.append(f"ranges ({origin}): " + ", ".join(shown) + more)
        return ("Public parameters: " + "; ".join(parts)) if parts else ""

    def __repr__(self):
        cond = " (conditional)" if self.ledger.conditions else ""
        return (f"<SelectionResult method={self.method!r} support={self.support} "
                f"epsilon_spent={_fmt(self.epsilon_spent)}{cond}>")


#: Below this best-case chance of the blocks' sign (every block agreeing), print(fit) says so next to the signs.
SIGN_CLEAR_PROBABILITY = 0.9

#: Labels of released items in the summary (the release itself keeps the keys).
_RELEASED_LABELS = {"taus": "taus (released; 'a, a' is a's tau with itself)"}


def _released_text(value) -> str:
    """A released item as the summary prints it: numbers to 4 significant digits (the release keeps them all)."""
    if isinstance(value, dict) and value and all(isinstance(v, (float, np.floating)) for v in value.values()):
        return "; ".join(f"{k}: {float(v):.4g}" for k, v in value.items())
    if isinstance(value, (float, np.floating)) and not math.isinf(value):
        return f"{float(value):.4g}"
    return str(value)


def _without_data(refit):
    """The refit context without the data (and, on Dask, without the lazy frame, whose graph may
    hold the rows); what remains is public: the formula, the design planned from the schema,
    the ranges and the accountant (which pickling removes too: ``SelectionResult._state``)."""
    out = dict(refit)
    out["data"] = None
    plan = out.get("plan")
    if plan is not None and not plan.backend.rows_in_memory:
        out["plan"], out["dask"] = plan.plan, True
    return out


def _method_of(name):
    """The registered method ``name``, or the contract's defaults when it is no longer registered
    (a result kept after its method was removed): the report then shows the default verdict."""
    from .errors import InvalidArgumentError
    from .methods import SelectionMethod, get_method

    try:
        return get_method(name)
    except InvalidArgumentError:
        default = SelectionMethod()
        default.name = str(name)
        return default
