"""The search of :meth:`Plan.required_n <dpstats.planning.Plan.required_n>` and
:meth:`~dpstats.planning.Plan.required_epsilon`: bracket, refine, regimes, pilot.

It evaluates the plan at new points (:meth:`Plan.evaluate <dpstats.planning.Plan>`, which
simulates calls) and reads the answer from the evaluated points' predictions made
non-decreasing (pool-adjacent-violators).  Nothing here touches data or spends budget.
"""
from __future__ import annotations

import math

import numpy as np

def isotonic(values, weights):
    """Pool-adjacent-violators: the non-decreasing fit to ``values`` (weighted least squares)."""
    blocks = []  # [mean, weight, count]
    for v, w in zip(values, weights):
        blocks.append([float(v), float(w), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return [m for m, _, c in blocks for _ in range(c)]


#: required_n / required_epsilon: doubling steps to bracket the target, refinements inside
#: the bracket, and the bracket's width (a ratio) at which the search stops.
_MAX_EXPAND = 6
_MAX_REFINE = 4
#: brackets extended again after a refinement found no point reaching the target (_search)
_MAX_REBRACKET = 4
_REFINE_RATIO = 1.1
#: The search's pilot: new points first get the first max(PILOT_MIN, reps / PILOT_FRACTION)
#: seeds; only the points the answer is read from get all ``reps`` (RequiredSearch.run).
_PILOT_MIN = 10
_PILOT_FRACTION = 3


#: The answer's Monte Carlo precision that required_n / required_epsilon aim for by default: the
#: estimated standard error of log(answer) (about the relative standard error).  Where the recovery
#: curve is flat, a point's Monte Carlo error moves the crossing far (benchmarks/README.md, "plan
#: precision": with 30 data sets per point, answers of 9,860 to 19,901 rows, depending on the seed,
#: where direct calls cross near 14,000); the two points the answer is read from then get as many
#: data sets as the error estimate asks for (at least twice as many), up to _MAX_REPS_FACTOR times
#: ``reps``.  Steep curves (most designs) meet it with ``reps``.
DEFAULT_PRECISION = 0.05
_MAX_REPS_FACTOR = 4


#: An answer's estimated error above which :func:`answer_lines` gives no number: the estimate
#: divides by the curve's fitted slope, itself noisy where the curve is nearly flat.
_LARGE_ERROR = 0.25


def pilot_reps(reps):
    return min(reps, max(_PILOT_MIN, int(math.ceil(reps / _PILOT_FRACTION))))


def logistic_crossing(x0, x1, p0, p1, target, reps):
    """Where the curve logit(P) = a + b log x through (x0, p0) and (x1, p1) reaches ``target``
    (probabilities kept 1/(2 reps) away from 0 and 1)."""
    c = 0.5 / reps

    def logit(v):
        v = min(max(float(v), c), 1 - c)
        return math.log(v / (1 - v))

    l0, l1, lt = logit(p0), logit(p1), logit(target)
    t = 1.0 if l1 <= l0 else min(max((lt - l0) / (l1 - l0), 0.0), 1.0)
    return math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0)))



def logit_slope(x, fitted, reps):
    """The slope of logit(P) against log x: weighted least squares over the points whose fitted
    probability lies strictly inside (0, 1), weights reps P (1 - P) (the inverse variance of a
    logit); nan with fewer than two such points at distinct x."""
    x, fitted, reps = (np.asarray(v, dtype=float) for v in (x, fitted, reps))
    inside = (fitted > 0) & (fitted < 1)
    if np.unique(x[inside]).size < 2:
        return math.nan
    u, p = np.log(x[inside]), fitted[inside]
    w = reps[inside] * p * (1 - p)
    v = np.log(p / (1 - p))
    um, vm = np.average(u, weights=w), np.average(v, weights=w)
    return float(np.sum(w * (u - um) * (v - vm)) / np.sum(w * (u - um) ** 2))


def crossing_error(lo, hi, guess, se_lo, se_hi, slope, target):
    """The standard error of log(guess), the crossing interpolated between ``lo`` and ``hi``
    whose predictions have Monte Carlo standard errors ``se_lo`` and ``se_hi``: the error of the
    interpolated prediction (weights 1 - t and t, t the guess's position in log x; the two
    points' seeds overlap, so the weights' squares understate a positive covariance slightly)
    over the curve's slope there, slope * target * (1 - target) for a logistic curve in log x
    with logit ``slope``; infinite when the slope is not positive (a flat or falling curve)."""
    if not slope > 0:
        return math.inf
    t = math.log(guess / lo) / math.log(hi / lo) if hi > lo else 0.5
    se = math.hypot((1 - t) * se_lo, t * se_hi)
    return se / (slope * target * (1 - target))


def curve(plan, axis, span):
    """The evaluated points of ``plan`` along ``axis`` (the other axis at its planned value) inside
    ``span``, sorted, with their non-decreasing fit (pool-adjacent-violators)."""
    other = "epsilon" if axis == "n" else "n"
    rows = sorted((r for r in plan._rows.values()
                   if r[other] == getattr(plan, other) and span[0] <= r[axis] <= span[1]), key=lambda r: r[axis])
    x = np.array([float(r[axis]) for r in rows])
    fitted = np.array(isotonic([r["probability"] for r in rows], [r["reps"] for r in rows]))
    return x, fitted


class RequiredSearch:
    """The smallest n (or epsilon) at which a plan's predicted probability reaches a target."""

    def __init__(self, plan, precision=None):
        self.plan = plan
        #: the standard error of log(answer) aimed for (None: ``reps`` data sets only)
        self.precision = precision
        #: data sets at the points the answer is read from: ``reps``, more where precision asks
        self.deciding = plan.reps
        #: the answer's estimated standard error of log(answer), once the search has answered
        self.error = None

    def curve(self, axis, span):
        return curve(self.plan, axis, span)

    def run(self, axis, target, grid):
        """Search for the smallest value of ``axis`` whose predicted probability reaches ``target``.

        Bracket: the given grid, or (grid None) the planned value, doubled or halved until
        the target lies between two evaluated points (at most ``_MAX_EXPAND`` steps each
        way).  Refine: evaluate inside the bracket where the logistic curve through its two
        ends (logit of the probability linear in log ``axis``, the shape of recovery against
        n or epsilon for the exponential-type mechanisms) reaches the target, until the ends
        are within a factor ``_REFINE_RATIO`` (at most ``_MAX_REFINE`` evaluations).  The
        answer interpolates the same logistic curve between the final ends; a linear
        interpolation between points a factor 2 apart missed the crossing of these steep
        curves by up to a third (benchmarks/README.md, "plan calibration").

        Regimes: the planned call's defaults switch from a free choice to private means at
        public values of n and epsilon (:meth:`Plan.regime <dpstats.planning.Plan>`), where recovery can fall; the
        search takes the stretches between switches in increasing order and answers in the
        first whose top reaches the target, so the answer is the smallest value, not a
        crossing past a fall.

        Pilot (``reps`` above ``_PILOT_MIN``): the search first runs with new points
        evaluated on the first ``pilot_reps(reps)`` seeds (a third of them, at least 10);
        the points the answer is read from (the final bracket's ends) then get every seed
        (only the missing ones are simulated) and the search resumes from there with all
        seeds, so the answer is always read from points with ``reps`` data sets.  Points the
        search merely passed through keep their pilot count (the table's ``reps``); they
        cost a third as much, which is where most of a search's points are
        (benchmarks/README.md gives the times).

        Precision (``precision`` not None): once the bracket is final, the answer's Monte
        Carlo standard error is estimated (:func:`crossing_error`: the two points' standard
        errors over the slope of the logistic curve fitted to every point of the stretch,
        :func:`logit_slope`); while it exceeds ``precision``, the two points get more data
        sets (what the estimate says precision needs, at least twice as many, up to
        ``_MAX_REPS_FACTOR`` times ``reps``; new seeds from the same root) and the search
        resumes from them.  The estimate is kept in :attr:`error`.
        """
        if grid is not None:
            self.plan.evaluate(**{f"{axis}_grid": grid})
            span = (min(float(v) for v in grid), max(float(v) for v in grid))
        else:
            span = (-math.inf, math.inf)
            self._evaluate_at(axis, getattr(self.plan, axis))
        pilot = pilot_reps(self.plan.reps)
        if pilot < self.plan.reps:
            # Pilot: the whole search with the first ``pilot`` seeds; the search then resumes
            # with all of them, and extends the points it reads its answer from first.
            self._regime_search(axis, target, grid is None, span, pilot)
        return self._regime_search(axis, target, grid is None, span, None)

    def regimes(self, axis, span):
        """The stretches of ``axis`` inside ``span`` on which the plan's ``regime`` is constant, in
        increasing order, as closed (low, high) spans (public arithmetic, no simulation)."""
        def regime(v):
            plan = self.plan
            return plan.regime(int(v), plan.epsilon) if axis == "n" else plan.regime(plan.n, float(v))

        if axis == "n":
            lo, hi = max(2, span[0]), (span[1] if math.isfinite(span[1]) else 2**40)
            lo, hi = int(math.ceil(lo)), int(hi)
        else:
            lo = span[0] if span[0] > 0 else 1e-12
            hi = span[1] if math.isfinite(span[1]) else 1e12
        starts = []
        while lo < hi and regime(lo) != regime(hi):
            a, b = lo, hi  # regime(a) != regime(b): find the first value whose regime differs from a's
            while (b - a > 1) if axis == "n" else (b > np.nextafter(a, math.inf)):
                mid = (a + b) // 2 if axis == "n" else math.sqrt(a * b) if b / a > 1 + 1e-9 else (a + b) / 2
                if regime(mid) == regime(a):
                    a = mid
                else:
                    b = mid
            starts.append(b)
            lo = b
        edges = [span[0]] + starts
        out = []
        for k, start in enumerate(edges):
            end = span[1] if k == len(starts) else (starts[k] - 1 if axis == "n" else np.nextafter(starts[k], 0.0))
            out.append((start, end))
        return out

    def _regime_search(self, axis, target, expand, span, reps):
        """The smallest value reaching ``target``: the regimes of :meth:`_regimes` in increasing
        order; a regime below the last is searched only when its top reaches the target (its
        top evaluated on the pilot's seeds), else the next is tried."""
        regimes = self.regimes(axis, span)
        planned = float(getattr(self.plan, axis))
        check = pilot_reps(self.plan.reps)
        for k, (lo, hi) in enumerate(regimes):
            last = k == len(regimes) - 1
            if not last:
                x, fitted = self.curve(axis, (lo, hi))
                if expand and (x.size == 0 or fitted[-1] < target):
                    self._evaluate_at(axis, hi, check)
                    x, fitted = self.curve(axis, (lo, hi))
                if x.size == 0 or fitted[-1] < target:
                    continue
            elif expand and not lo <= planned <= hi:
                self._evaluate_at(axis, lo, reps)
            answer = self._search(axis, target, expand, (lo, hi), reps)
            if answer is not None or last:
                return answer
        return None

    def _search(self, axis, target, expand, span, reps):
        """Bracket (when ``expand``) and refine as :meth:`_required` says, evaluating new
        points with the first ``reps`` seeds (all for None).  Points extended to more seeds
        can fall below the target where fewer seeds reached it (a pilot point, or a deciding
        point given more data sets for precision): the refinement then finds no point reaching
        it, and the bracket is extended again from the new top (a search answered None there
        before, for a target the curve reaches further on)."""
        for attempt in range(_MAX_REBRACKET):
            added = self._bracket(axis, target, span, reps) if expand else 0
            answer = self._refine(axis, target, span, reps)
            if answer is not None or not expand or (attempt > 0 and added == 0):
                return answer
        return None

    def _bracket(self, axis, target, span, reps):
        """Double (or halve) the axis inside the regime's span until the curve crosses the
        target; the number of points evaluated."""
        integer = axis == "n"
        floor = 2 if integer else 0.0
        added = 0
        for _ in range(_MAX_EXPAND):
            x, fitted = self.curve(axis, span)
            if fitted[-1] < target:
                step = min(x[-1] * 2, span[1])  # doubling stays inside the regime
            elif fitted[0] >= target and x[0] / 2 >= max(floor, 1e-12):
                step = max(floor, x[0] / 2, span[0])
            else:
                return added
            if integer:
                step = int(round(step))
            if step in x:
                return added  # the regime's end is reached
            self._evaluate_at(axis, step, reps)
            added += 1
        return added

    def _short_points(self, axis, x, reached, reps):
        """The points that decide the answer and were evaluated with fewer than all seeds."""
        deciding = [x[-1]] if reached.size == 0 else [x[0]] if reached[0] == 0 else [x[reached[0] - 1],
                                                                                      x[reached[0]]]
        return [v for v in deciding if reps is None and self._reps_at(axis, v) < self.deciding]

    def _refine(self, axis, target, span, reps):
        """Probe inside the bracket around the target until it is narrow enough; the crossing."""
        probes = 0
        while True:
            x, fitted = self.curve(axis, span)
            if x.size == 0:
                return None
            reached = np.nonzero(fitted >= target)[0]
            short = self._short_points(axis, x, reached, reps)
            if short:  # the answer is read from points with every seed: extend pilot points first
                for v in short:
                    self._evaluate_at(axis, v, self.deciding)
                continue
            if reached.size == 0:
                return None
            i = int(reached[0])
            if i == 0:
                return float(x[0])
            lo, hi = x[i - 1], x[i]
            guess = logistic_crossing(lo, hi, fitted[i - 1], fitted[i], target, self.plan.reps)
            probes += 1
            final = probes > _MAX_REFINE + 1 or hi / lo <= _REFINE_RATIO
            probe = None if final else _inner_probe(lo, hi, guess, integer=axis == "n")
            if probe is None:
                if reps is None and self._needs_more_data(axis, span, x, fitted, lo, hi, guess, target):
                    continue  # the deciding points get more data sets (_short_points) and the search resumes
                return guess
            self._evaluate_at(axis, probe, reps)

    def _needs_more_data(self, axis, span, x, fitted, lo, hi, guess, target):
        """Record the answer's Monte Carlo error; True (and more deciding data sets: as many as the
        estimate says precision needs, at least twice as many, at most the cap) while it exceeds
        ``precision`` below the cap."""
        rows = [self.plan._rows[self._key(axis, v)] for v in x]
        slope = logit_slope(x, fitted, [r["reps"] for r in rows])
        lo_row, hi_row = self.plan._rows[self._key(axis, lo)], self.plan._rows[self._key(axis, hi)]
        self.error = crossing_error(lo, hi, guess, lo_row["se"], hi_row["se"], slope, target)
        cap = _MAX_REPS_FACTOR * self.plan.reps
        if self.precision is None or self.error <= self.precision or self.deciding >= cap:
            return False
        # the error falls as 1 / sqrt(data sets): ask at once for what the estimate says it needs
        # (at least twice as many), instead of doubling through points the bracket then leaves
        wanted = self.deciding * (self.error / self.precision) ** 2 if math.isfinite(self.error) else cap
        self.deciding = int(min(cap, max(2 * self.deciding, math.ceil(wanted))))
        return True

    def _key(self, axis, value):
        return (int(value), float(self.plan.epsilon)) if axis == "n" else (int(self.plan.n), float(value))

    def _reps_at(self, axis, value):
        return self.plan._rows[self._key(axis, value)]["reps"]

    def _evaluate_at(self, axis, value, reps=None):
        if axis == "n":
            return self.plan.evaluate_point(max(2, int(round(value))), self.plan.epsilon, reps)
        return self.plan.evaluate_point(self.plan.n, float(value), reps)


def _inner_probe(lo, hi, guess, integer):
    """The next point to evaluate: ``guess`` kept inside the bracket's middle 60 % on the log scale (so
    the bracket shrinks whatever the curve's shape), rounded for an integer axis; None when rounding
    leaves the open bracket."""
    log_lo, log_hi = math.log(lo), math.log(hi)
    margin = 0.2 * (log_hi - log_lo)
    probe = math.exp(min(max(math.log(guess), log_lo + margin), log_hi - margin))
    if integer:
        probe = round(probe)
        if probe <= lo or probe >= hi:
            return None
    return probe


def answer_lines(answers, level):
    """One printed line per required_n / required_epsilon answer (:attr:`Plan.answers
    <dpstats.planning.Plan>`), with its Monte Carlo error and ``level`` range."""
    from scipy import stats

    lines = []
    for (axis, target), a in answers.items():
        call = f"required_{axis}({target:g})"
        if a["value"] is None:
            lines.append(f"{call}: not reached at any evaluated point (give a wider grid)")
            continue
        shown = f"{math.ceil(a['value'] - 1e-9)}" if axis == "n" else f"{a['value']:.4g}"
        if a["error"] is None:
            lines.append(f"{call} = {shown} (at most: the first evaluated point already reaches it)")
            continue
        if a["error"] <= _LARGE_ERROR:
            half = stats.norm.ppf(0.5 + level / 2) * a["error"]  # on the log scale
            low, high = a["value"] * math.exp(-half), a["value"] * math.exp(half)
            span = f"{math.ceil(low - 1e-9)}-{math.ceil(high - 1e-9)}" if axis == "n" else f"{low:.3g}-{high:.3g}"
            error = f"about {100 * a['error']:.1f} % ({level:.0%} Monte Carlo range {span})"
        else:
            error = f"over {100 * _LARGE_ERROR:.0f} % (the curve is nearly flat near the target: a rough guide)"
        short = a["precision"] is not None and a["error"] > a["precision"]
        lines.append(f"{call} = {shown}; Monte Carlo standard error {error}, from {a['reps']} data sets at each "
                     f"of the two points it is read from" + ("; above the precision asked: raise reps" if short else ""))
    return lines
