"""How the hinge objective is solved: smoothing, Newton levels and dual recovery.

:class:`~dpstats.bss.hinge.HingeObjective` states what is certified (a value u(S) and a dual
lower bound with u(S) - R_h(S) <= gap_tolerance, by weak duality); this module is the
machinery that finds them: a smoothed primal (Nesterov smoothing of the hinge, levels
gamma = 1, 0.1, ...), a Newton step per level on a band of rows near the margin, the ball
and intercept box subproblems, a line search over the hinge's breakpoints, and the dual
recovered from the primal iterate.  Nothing here is trusted: every answer goes through the
objective's certified dual before it is used.  The tuning constants below change speed
only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError, SolverError
from .objective import ball_multipliers
from .scratch import work_array

@dataclass(frozen=True)
class HingeSolverSettings:
    """Tuning of the hinge solver (speed only: every answer goes through the certified dual).

    Declared on the objective (``HingeObjective(..., solver_settings=)``, ``HingeSource(...,
    solver_settings=)``); :data:`DEFAULT_HINGE_SOLVER_SETTINGS` where none are given.

    gamma_start, gamma_factor, gamma_min
        The smoothing schedule: first level, reduction factor per level, smallest level tried.
    warm_gamma_range
        First smoothing level of a warm-started solve (:meth:`HingeSolver._solve_rows`): the gap
        tolerance, clipped to this range.  Measured at (n, p, s) = (1000, 250, 5), gap tolerance
        2.3e-4, on 1-swap neighbours started from their drop-one parent: 0.73 ms per solve from 1e-3
        against 1.67 ms cold (from 1e-2: 0.94 ms, from 1e-4: 0.71 ms); the whole top-100 query took
        0.37 s from 3e-4 or 1e-4 and 0.48 s from 3e-5.
    band_rows
        Rows kept in the Newton levels of a warm start (:meth:`HingeSolver.newton_band`).
    cold_levels_on_all_rows
        Levels of a cold solve on all rows before the band takes over.
    warm_first_band_share, warm_all_rows_up_to
        The first level of a warm start keeps at least this share of the rows in its band, and runs
        on all rows when the batch holds at most this many support rows (K n).  Measured at (n, p,
        s) = (1000, 250, 5), top-100: a 128-row band let 3 to 82 held rows cross the margin for ridge
        starts, block bases and neighbours started from their parent, each such support needing a
        second level; with these, 27.5-30.1 ms against 30.5-32.1 ms (seeds 1 and 3), unchanged at
        (500, 100, 5).
    newton_max_iter
        Newton iterations per smoothing level.
    eig_floor
        Relative floor on the model Hessian's eigenvalues: with lam = 0 and no row on the smoothed
        margin the Hessian vanishes and the ball alone decides the step.
    polish_below, margin_band
        Below this smoothing level the primal iterate is accurate enough to recover the dual from it
        (:meth:`HingeDualRecovery.polish_dual`), with the rows on the margin within ``margin_band``.
    polish_widenings
        Factors on the margin band tried in turn by the dual polish once the schedule is spent.
    batch_doubles
        Memory per batch of supports: K n |S| doubles.
    """

    gamma_start: float = 1.0
    gamma_factor: float = 0.1
    gamma_min: float = 1e-13
    warm_gamma_range: tuple = (1e-6, 1e-3)
    band_rows: int = 128
    cold_levels_on_all_rows: int = 2
    warm_first_band_share: float = 0.2
    warm_all_rows_up_to: int = 1500
    newton_max_iter: int = 60
    eig_floor: float = 1e-12
    polish_below: float = 1e-6
    margin_band: float = 1e-9
    polish_widenings: tuple = (1e2, 1e4, 1e6)
    batch_doubles: int = 2_000_000


#: The hinge solver's settings where none are declared.
DEFAULT_HINGE_SOLVER_SETTINGS = HingeSolverSettings()


def _rows_of(A, rows, name):
    """A[rows] for sorted ``rows`` of a read-only batch array, in the work array ``name``
    (:mod:`~dpstats.bss.scratch`), or A itself when ``rows`` is all of them: fresh
    (K, n, |S|) copies cost page faults."""
    if rows.size == A.shape[0]:
        return A
    return np.take(A, rows, axis=0, out=work_array(name, (rows.size,) + A.shape[1:]), mode="clip")


def _smoothed_hessian(ridge_hessian, Ai, u, gamma, Wi, per_support):
    """H = sum over the rows on the smoothed margin (0 < u < gamma) of w_i a_i a_i' / gamma + 2 lam I, per
    support: one batched product A' D A with D the rows' weights (0 off the margin).

    (Gathering the margin's rows and summing their outer products per support touches fewer
    numbers, but its index work cost more than the product where a good share of the rows lies
    on the margin and supports are small, as on the hinge vignette's solves: benchmarks/README.md,
    "the hinge solver's Hessian and line search".)"""
    wgt = ((u > 0) & (u < gamma)) * (1.0 / gamma)
    if Wi is not None:
        wgt = wgt * (Wi if per_support else Wi[None, :])
    K, m, k = Ai.shape
    scaled = np.multiply(np.swapaxes(Ai, 1, 2), wgt[:, None, :], out=work_array("hessian rows", (K, k, m)))
    return ridge_hessian + np.matmul(scaled, Ai)


class HingeSteps:
    """The step machinery of :class:`HingeSolver` (a mixin on the objective's radius, ridge,
    intercept box and row weights): the ball and intercept-box subproblems of a Newton step,
    and the exact line search over the hinge's breakpoints."""

    def _ball_model_minimiser(self, M, w):
        """argmin c'Mc - 2 w'c over the feasible set, row-wise, M symmetric positive semi-definite (K, k, k).

        Without an intercept the feasible set is the ball: :meth:`_ball_qp`.  With one,
        coordinate 0 (b0) lies in the box |c0| <= r0' and the others in the ball.  For fixed
        c_b the best c0 is (w0 - m0'c_b) / m00 (M = [[m00, m0'], [m0, M_b]]); substituting it
        leaves a ball problem in c_b with the Schur complement M_b - m0 m0' / m00 (positive
        semi-definite, and >= lam I because the ridge is on c_b only).  That gives the minimiser
        over the ball times the real line; when its c0 leaves the box, the minimiser over the
        ball times the box has c0 on the nearer end (the minimum over c_b is a convex function
        of c0, minimised at the unconstrained c0), and c_b solves the ball problem with c0
        fixed there.  A vanishing m00 (no row on the smoothed margin) is floored, which sends
        c0 to the end of the box its linear term points to.
        """
        if not self.intercept:
            return self._ball_qp(M, w)
        K, k = w.shape
        r0 = float(self.box_radius(k - 1))
        scale = np.maximum(np.max(np.abs(np.diagonal(M, axis1=1, axis2=2)), axis=1), 1.0)
        m00 = np.maximum(M[:, 0, 0], self.solver_settings.eig_floor * scale)
        if self.ridge > 0 and k > 1:
            # most rows: one linear solve, the answer when it lies in the ball and the box
            Mf = M.copy()
            Mf[:, 0, 0] = m00
            try:
                c = np.linalg.solve(Mf, w[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                c = None
            if c is not None:
                in_box = np.abs(c[:, 0]) <= r0
                in_ball = np.sum(c[:, 1:] * c[:, 1:], axis=1) <= self.radius ** 2
                rest = np.nonzero(~(in_box & in_ball))[0]
                if rest.size:
                    # rows in the box but outside the ball: the free-c0 minimiser is on the
                    # sphere, so its ball problem skips the linear solve
                    c[rest] = self._box_ball_minimiser(M[rest], w[rest], m00[rest], r0, on_sphere=in_box[rest])
                return c
        return self._box_ball_minimiser(M, w, m00, r0)

    def _box_ball_minimiser(self, M, w, m00, r0, on_sphere=None):
        """The Schur-complement route of :meth:`_ball_model_minimiser` (``m00`` floored).

        ``on_sphere``: rows known to have their free-c0 minimiser outside the ball (a hint
        that saves a linear solve; the answer does not depend on it)."""
        K, k = w.shape
        m0, Mb, w0, wb = M[:, 1:, 0], M[:, 1:, 1:], w[:, 0], w[:, 1:]
        out = np.empty_like(w)
        if k > 1:
            schur = Mb - m0[:, :, None] * m0[:, None, :] / m00[:, None, None]
            ws = wb - m0 * (w0 / m00)[:, None]
            cb = self._ball_qp(schur, ws, try_solve=on_sphere is None or 2 * np.count_nonzero(on_sphere) < K)
            c0 = (w0 - np.sum(m0 * cb, axis=1)) / m00
        else:
            cb = np.zeros((K, 0))
            c0 = w0 / m00
        ends = np.nonzero(np.abs(c0) > r0)[0]
        if ends.size:
            c0[ends] = np.clip(c0[ends], -r0, r0)
            if k > 1:
                cb[ends] = self._ball_qp(Mb[ends], wb[ends] - m0[ends] * c0[ends, None])
        out[:, 0] = c0
        out[:, 1:] = cb
        return out

    def _ball_qp(self, M, w, try_solve=True):
        """argmin_{||c|| <= r} c'Mc - 2 w'c row-wise, M symmetric positive semi-definite (K, k, k).

        With lam > 0, M >= lam I: a linear solve gives the unconstrained minimiser, which is
        the answer when it lies in the ball (the ball multiplier is then 0); the other rows,
        and every row when lam = 0, go through an eigendecomposition and the monotone
        multiplier search (:func:`~dpstats.bss.objective.ball_multipliers`), which also
        covers rows inside the ball (multiplier 0): ``try_solve=False`` skips the linear
        solve when the rows are expected outside.
        """
        r = self.radius
        c = None
        if self.ridge > 0 and try_solve:
            try:
                c = np.linalg.solve(M, w[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:  # singular to rounding: every row takes the safe path
                c = None
        if c is not None:
            out = np.nonzero(~(np.sum(c * c, axis=1) <= r * r))[0]  # NaN rows (rounding) too
        else:
            c = np.empty_like(w)
            out = np.arange(w.shape[0])
        if out.size:
            e, Q = np.linalg.eigh(M[out])
            floor = self.solver_settings.eig_floor * np.maximum(np.max(np.abs(e), axis=1, keepdims=True), 1.0)
            e = np.maximum(e, floor)
            wq = np.matmul(np.transpose(Q, (0, 2, 1)), w[out][:, :, None])[:, :, 0]
            mu = ball_multipliers(e, wq, r)
            c[out] = np.matmul(Q, (wq / (e + mu[:, None]))[:, :, None])[:, :, 0]
        # Back into the ball (rounding), without dividing by tiny norms: r / tiny overflows,
        # and a warning raised as an error (python -W error) must not end a charged call.
        nc = np.linalg.norm(c, axis=1)
        big = nc > r
        c[big] *= (r / nc[big])[:, None]
        return c

    def line_search(self, u, ud, d, base, gamma, weights=None):
        """The minimiser of phi(t) = F(b + t d) over t in [0, 1], row-wise (see :meth:`_newton_level`).

        phi is convex and piecewise quadratic, so phi' is continuous, nondecreasing and
        piecewise linear: phi'(t) = base + 2 t sum_j lam_j d_j^2 - sum_i ud_i clip((u_i - t ud_i) / gamma, 0, 1)
        (lam_j = lam, 0 at a forced intercept).
        Row i adds ud_i^2 / gamma to phi'' while its smoothed margin is inside (0, gamma),
        i.e. between the breakpoints u_i / ud_i and (u_i - gamma) / ud_i.  Sorting the
        breakpoints and accumulating the slopes gives phi' at each of them exactly
        (O(m log m) for m rows, against a grid of evaluations at O(m) each), and the root
        is interpolated on the linear piece where phi' changes sign.  Returns 1 when
        phi'(1) <= 0.  Any t in [0, 1] keeps the iterate in the ball, and the caller
        certifies from scratch, so rounding here affects the work only.  ``weights`` (class
        weights w_i of the rows, broadcastable to ``u``): row i's terms in phi' and phi'' are
        multiplied by w_i.
        """
        lamv = self._ridge_weights(d.shape[1])
        K, shape = u.shape[0], u.shape
        # The (K, m) temporaries live in work arrays (:mod:`~dpstats.bss.scratch`): fresh ones
        # are page faults on every call, which cost as much system time as the arithmetic.
        w = np.multiply(ud, ud, out=work_array("line search w", shape))
        w /= gamma
        if weights is not None:
            w *= weights
        t0, t1 = work_array("line search t0", shape), work_array("line search t1", shape)
        with np.errstate(divide="ignore", invalid="ignore"):  # ud_i = 0: NaN or inf, never a breakpoint
            np.divide(u, ud, out=t0)
            np.subtract(u, gamma, out=t1)
            np.divide(t1, ud, out=t1)
        ta = np.minimum(t0, t1, out=work_array("line search ta", shape))
        tb = np.maximum(t0, t1, out=t0)
        mask = work_array("line search mask", shape, dtype=bool)
        other = work_array("line search mask 2", shape, dtype=bool)
        np.less_equal(ta, 0, out=mask)
        mask &= np.greater(tb, 0, out=other)
        slope0 = 2.0 * np.sum(lamv * d * d, axis=1) + np.sum(w, axis=1, where=mask)
        slope_rows = np.divide(u, gamma, out=t1)
        np.clip(slope_rows, 0.0, 1.0, out=slope_rows)
        slope_rows *= ud
        if weights is not None:
            slope_rows *= weights
        dphi0 = base - np.sum(slope_rows, axis=1)
        # the breakpoints inside (0, 1), flattened and sorted by (support, time): few rows
        # cross the margin along one step, so this is much less than K x 2m
        np.greater(ta, 0, out=mask)
        mask &= np.less(ta, 1, out=other)
        ka, ia = np.nonzero(mask)
        np.greater(tb, 0, out=mask)
        mask &= np.less(tb, 1, out=other)
        kb, ib = np.nonzero(mask)
        sup = np.concatenate([ka, kb])
        time = np.concatenate([ta[ka, ia], tb[kb, ib]])
        jump = np.concatenate([w[ka, ia], -w[kb, ib]])
        if sup.size == 0:  # phi' is linear on [0, 1]
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(slope0 > 0, -dphi0 / slope0, np.inf)
            return np.where(dphi0 <= 0, np.clip(t, 0.0, 1.0), 0.0)
        # by (support, then time) through one float key: times lie in (0, 1), so 2 sup + time
        # stays below 2 (sup + 1) even when rounding carries (``sup + time`` could round a time
        # just below 1 into the next support, and the groups would interleave); within a
        # support, times closer than the key's rounding (about 2 K 2^-52) may swap, which moves
        # phi' by rounding only.  (Cheaper than np.lexsort: benchmarks/README.md, "the hinge
        # solver's Hessian and line search".)
        order = np.argsort(sup * 2.0 + time)
        sup, time, jump = sup[order], time[order], jump[order]
        first = np.ones(sup.size, dtype=bool)
        first[1:] = sup[1:] != sup[:-1]
        start = np.flatnonzero(first)
        group = np.cumsum(first) - 1  # index of each breakpoint's group in ``start``

        def within(x):  # cumulative sums restarted at every support
            c = np.cumsum(x)
            return c - (c[start] - x[start])[group]

        def previous(x, at_first):  # the value at the previous breakpoint of the same support
            out = np.empty_like(x)
            out[1:] = x[:-1]
            out[start] = at_first
            return out

        slope_after = slope0[sup] + within(jump)
        at_break = dphi0[sup] + within(previous(slope_after, slope0[sup[start]]) * (time - previous(time, 0.0)))
        # the last knot (0 or a breakpoint) with phi' <= 0, and the piece that follows it
        descends = np.bincount(sup, weights=(at_break <= 0), minlength=K).astype(np.int64)
        n_break = np.bincount(sup, minlength=K)
        first_of = np.zeros(K, dtype=np.int64)
        first_of[sup[start]] = start
        has = descends > 0
        last = np.where(has, first_of + descends - 1, 0)
        left = np.where(has, time[last], 0.0)
        value = np.where(has, at_break[last], dphi0)
        slope = np.where(has, slope_after[last], slope0)
        inner = descends < n_break  # the next knot is a breakpoint, else 1
        nxt = np.where(has, last + 1, first_of)
        right = np.where(inner, time[np.minimum(nxt, time.size - 1)], 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            root = left + np.where(slope > 0, -value / slope, np.inf)
        t = np.minimum(root, right)
        return np.where(value <= 0, np.clip(t, 0.0, 1.0), 0.0)


class HingeDualRecovery:
    """The dual recovered from a primal iterate, for :class:`HingeSolver` (a mixin): candidate
    active sets of margin rows and the polish that certifies a dual from them."""

    def active_set_candidates(self, A, b, gamma):
        """Certified brackets from the exact solution of each support's guessed active set.

        At the optimum of the (unsmoothed) problem the rows split into L (u_i > 0,
        theta_i = 1), E (u_i = 0, theta_i in [0, 1]) and Z (u_i < 0, theta_i = 0), and
        with alpha = 2 (lam + mu) the optimality conditions are linear given the split.
        Without an intercept: A_E b = 1 and alpha b = c_L + A_E' theta_E, c_L = sum_L a_i,
        hence theta_E = G^+ (alpha 1 - A_E c_L) with G = A_E A_E', b = w0 / alpha + w1 is
        affine in t = 1 / alpha, and the ball multiplier solves ||w0 t + w1|| = r, a
        quadratic in t (mu = 0, t = 1 / (2 lam), when that point is inside the ball).  With
        an intercept (A_E, c_L on the candidate columns, y_E the labels of E, sigma_L =
        sum_L y_i), the margin rows read y_E b0 + A_E b = 1 and the intercept's stationarity
        y_E' theta_E = -sigma_L (its box inactive), so with beta = alpha b0

            [G   y_E] [theta_E]   [alpha 1 - A_E c_L]
            [y_E' 0 ] [beta   ] = [-sigma_L         ],

        whose solution is affine in alpha: theta_E = alpha p + q, b0 = p0 + t q0, and again
        b = w0 t + w1.  The split is read off a smoothed iterate at level ``gamma``: E = rows
        with -eps < u_i < gamma (at most |S| of them, else no candidate), L = rows with
        u_i >= gamma.

        This is a guess, so nothing rests on it: the candidate is projected onto the ball
        and the intercept's box, theta is clipped to [0, 1], and the bracket returned is P
        and D evaluated from scratch over all rows (weak duality, module docstring).  When
        the guess is right the bracket closes to rounding; this replaces the smoothing
        levels below ``gamma`` that would otherwise be needed to find the same split.
        Returns (value, lower, coef, theta, mu, v), one row per support; rows without a
        candidate get value +inf and lower -inf.
        """
        lam, r = self.ridge, self.radius
        K, n, k = A.shape
        off = 1 if self.intercept else 0
        u = 1.0 - self._margins(A, b)
        eps = self.solver_settings.margin_band * (1.0 + np.abs(u))
        on_margin = (u > -eps) & (u < gamma)
        on_side = u >= gamma
        W = self.row_weights
        # theta_i = w_i on L (1 unweighted); c_L and sigma_L carry the weights
        side = on_side.astype(np.float64) if W is None else on_side * W
        usable = on_margin.sum(axis=1) <= k
        key = np.where(on_margin, np.abs(u), np.inf)
        size = min(k, n)
        pick = np.argpartition(key, size - 1, axis=1)[:, :size] if size < n else np.argsort(key, axis=1)
        valid = np.take_along_axis(on_margin, pick, axis=1)
        AE_all = np.take_along_axis(A, pick[:, :, None], axis=1) * valid[:, :, None]
        cL_all = np.matmul(side[:, None, :], A)[:, 0, :]
        AE, cL = AE_all[:, :, off:], cL_all[:, off:]
        G = np.matmul(AE, np.transpose(AE, (0, 2, 1)))
        rhs_alpha = valid.astype(np.float64)
        rhs_const = -np.matmul(AE, cL[:, :, None])[:, :, 0]
        if off:  # the bordered system of the intercept
            m = size
            KKT = np.zeros((K, m + 1, m + 1))
            KKT[:, :m, :m] = G
            KKT[:, :m, m] = AE_all[:, :, 0]
            KKT[:, m, :m] = AE_all[:, :, 0]
            G = KKT
            rhs_alpha = np.concatenate([rhs_alpha, np.zeros((K, 1))], axis=1)
            rhs_const = np.concatenate([rhs_const, -cL_all[:, :1]], axis=1)
        # pseudo-inverse on the range (duplicate margin rows make G singular; the bordered
        # matrix is indefinite, hence |e|)
        e, Q = np.linalg.eigh(G)
        big = np.abs(e) > 1e-12 * np.maximum(np.max(np.abs(e), axis=1, keepdims=True), 1e-300)
        inv_e = np.where(big, 1.0 / np.where(big, e, 1.0), 0.0)
        Qt = np.transpose(Q, (0, 2, 1))

        def ginv(x):
            return np.matmul(Q, (inv_e * np.matmul(Qt, x[:, :, None])[:, :, 0])[:, :, None])[:, :, 0]

        p_all = ginv(rhs_alpha)
        q_all = ginv(rhs_const)
        p_vec, q_vec = p_all[:, :size], q_all[:, :size]
        w1 = np.matmul(p_vec[:, None, :], AE)[:, 0, :]
        w0 = cL + np.matmul(q_vec[:, None, :], AE)[:, 0, :]
        t_max = 1.0 / (2.0 * lam) if lam > 0 else np.inf
        t = np.full(K, t_max)
        if lam > 0:
            outside = np.sum((w0 * t_max + w1) ** 2, axis=1) > r * r
        else:
            outside = np.ones(K, dtype=bool)
        a2 = np.sum(w0 * w0, axis=1)
        a1 = 2.0 * np.sum(w0 * w1, axis=1)
        a0 = np.sum(w1 * w1, axis=1) - r * r
        root = outside & (a0 < 0) & (a2 > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            t_root = (-a1 + np.sqrt(np.maximum(a1 * a1 - 4.0 * a2 * a0, 0.0))) / (2.0 * a2)
        t = np.where(root, np.minimum(t_root, t_max), t)
        usable &= np.isfinite(t) & (t > 0)
        t = np.where(usable, t, 1.0)
        coef = np.empty((K, k))
        coef[:, off:] = w0 * t[:, None] + w1
        if off:
            coef[:, 0] = p_all[:, size] + t * q_all[:, size]
        self.project(coef)
        theta = side
        theta_E = np.clip(p_vec / t[:, None] + q_vec, 0.0, 1.0 if W is None else W[pick])
        np.put_along_axis(theta, pick, np.where(valid, theta_E, np.take_along_axis(theta, pick, axis=1)), axis=1)
        value, _ = self._primal(coef, A)
        lower, v, mu, theta = self._certified_dual(theta, A)
        value = np.where(usable & np.isfinite(value), value, np.inf)
        lower = np.where(usable & np.isfinite(lower), lower, -np.inf)
        return value, lower, coef, theta, mu, v

    def polish_dual(self, row, best, A, widenings=(1.0,)):
        """A better dual for one support from its primal iterate, by bounded least squares.

        With (b0, b) fixed, rows off the margin get their optimal theta (1 if u_i > 0, 0 if
        u_i < 0); rows on it (|u_i| <= band) get the theta_E in [0, 1] and mu >= 0 that make
        v = sum_i theta_i a_i closest to 2 (lam + mu) b, the stationarity condition that makes
        b minimise lam ||b||^2 - v'b over the ball, and, under an intercept, e = sum_i
        theta_i y_i closest to 0 (to nu sign(b0), nu >= 0, when b0 is at an end of its box).
        Whatever the least-squares accuracy, the resulting theta is box-feasible, so D(theta)
        is still a certified lower bound.
        """
        b = best["coef"][row]
        u = 1.0 - A @ b
        base = max(self.solver_settings.margin_band, 1e3 * np.finfo(float).eps * (1.0 + float(np.max(np.abs(A @ b)))))
        for widen in widenings:
            self._polish_dual_in_band(row, best, A, b, u, base * widen)
            if best["value"][row] - best["lower"][row] <= self.gap_tolerance:
                return

    def _polish_dual_in_band(self, row, best, A, b, u, band):
        from scipy.optimize import lsq_linear

        k = b.size
        off = 1 if self.intercept else 0
        on = np.abs(u) <= band
        W = self.row_weights
        theta = (u > band).astype(np.float64)
        if W is not None:
            theta *= W
        target = 2.0 * self._ridge_weights(k) * b - A.T @ theta
        cols = [A[on].T]
        upper = [np.ones(int(on.sum())) if W is None else W[on]]
        ball = np.linalg.norm(b[off:]) >= self.radius * (1.0 - 1e-9)
        if ball:
            col = -2.0 * b
            col[:off] = 0.0
            cols.append(col[:, None])
            upper.append(np.array([np.inf]))
        if off:
            r0 = float(self.box_radius(k - 1))
            if abs(b[0]) >= r0 * (1.0 - 1e-9):
                col = np.zeros(k)
                col[0] = -np.sign(b[0])
                cols.append(col[:, None])
                upper.append(np.array([np.inf]))
        C = np.hstack(cols)
        if C.shape[1]:
            ub = np.concatenate(upper)
            sol = lsq_linear(C, target, bounds=(np.zeros(ub.size), ub), method="bvls", tol=1e-14)
            theta[on] = np.clip(sol.x[:int(on.sum())], 0.0, 1.0 if W is None else W[on])
        lower, v, mu, th = self._certified_dual(theta[None, :], A[None])
        theta = th[0]
        if lower[0] > best["lower"][row]:
            best["lower"][row] = lower[0]
            best["theta"][row] = theta
            best["mu"][row] = mu[0]
            best["v"][row] = v[0]


class HingeSolver(HingeSteps, HingeDualRecovery):
    """The solver half of :class:`~dpstats.bss.hinge.HingeObjective` (a mixin: it works on
    the objective's X, y, ridge, radius and gap tolerance)."""

    def _solve_rows(self, supports, start=None, fields=("value", "lower", "coef", "theta", "mu", "v")):
        """Solve every row of ``supports`` in memory-bounded batches, warm rows first.

        A warm start (finite row of ``start``: coefficients of a support one column away,
        e.g. the parent's with the swapped column set to 0) begins the smoothing schedule
        at the gap tolerance (clipped to the settings' ``warm_gamma_range``) instead of ``gamma_start``: the levels above it only serve to
        bring a cold start near the solution.  Rows a warm start leaves above the gap
        tolerance are solved again cold and keep the better of the two brackets, so a warm
        start never does worse than a cold one.  Either way ``value`` is P at a feasible b
        and ``lower`` is D at a box-feasible theta: the certificate does not depend on the
        start.  Only ``fields`` are kept (values of many supports need no n duals each).
        Under a forced intercept every row must hold column 0; the solver works with it in
        front and returns ``coef`` and ``v`` in the rows' own column order.
        """
        K, k = supports.shape
        back = None
        if self.intercept:
            at = supports == 0
            if not np.all(at.any(axis=1)):
                raise InvalidArgumentError("with a forced intercept every support must contain column 0.")
            if not np.all(at[:, 0]):
                order = np.argsort(~at, axis=1, kind="stable")  # column 0 first, the others in order
                back = np.argsort(order, axis=1)
                supports = np.take_along_axis(supports, order, axis=1)
                if start is not None:
                    start = np.take_along_axis(np.asarray(start, dtype=np.float64).reshape(K, k), order, axis=1)
        shapes = {"value": (K,), "lower": (K,), "coef": (K, k), "theta": (K, self.n), "mu": (K,), "v": (K, k)}
        out = {key: np.empty(shapes[key]) for key in fields}
        if start is None:
            warm = np.zeros(K, dtype=bool)
        else:
            start = np.asarray(start, dtype=np.float64).reshape(K, k)
            warm = np.all(np.isfinite(start), axis=1)
        low, high = self.solver_settings.warm_gamma_range
        gamma_warm = min(max(self.gap_tolerance, low), high)
        chunk = max(1, self.solver_settings.batch_doubles // max(self.n * k, 1))
        for rows, is_warm in ((np.nonzero(warm)[0], True), (np.nonzero(~warm)[0], False)):
            for first in range(0, rows.size, chunk):
                part = rows[first:first + chunk]
                if is_warm:
                    res = self.solve_batch(supports[part], start=start[part], gamma_start=gamma_warm,
                                            band=self.solver_settings.band_rows)
                else:
                    res = self.solve_batch(supports[part], band=self.solver_settings.band_rows)
                miss = np.nonzero(res["value"] - res["lower"] > self.gap_tolerance)[0]
                if miss.size:  # the plain schedule: cold, every level on all rows
                    self._keep_better(res, miss, self.solve_batch(supports[part[miss]], rescue=True))
                for key in out:
                    out[key][part] = res[key]
        if back is not None:
            for key in ("coef", "v"):
                if key in out:
                    out[key] = np.take_along_axis(out[key], back, axis=1)
        return out

    @staticmethod
    def _keep_better(res, rows, other):
        """Row-wise best bracket: the lower primal value and the higher dual value (both certified)."""
        up = other["value"] < res["value"][rows]
        res["value"][rows[up]] = other["value"][up]
        res["coef"][rows[up]] = other["coef"][up]
        lo = other["lower"] > res["lower"][rows]
        for key in ("lower", "theta", "mu", "v"):
            res[key][rows[lo]] = other[key][lo]

    @staticmethod
    def _margins(A, b):
        return np.matmul(A, b[:, :, None])[:, :, 0]

    def _primal(self, b, A):
        """P(b) on rows ``A`` (K, n, k) holding every data row (the class weights apply row by row)."""
        m = self._margins(A, b)
        loss = np.maximum(1.0 - m, 0.0)
        if self.row_weights is not None:
            loss *= self.row_weights
        return loss.sum(axis=1) + np.sum(self._ridge_weights(b.shape[1]) * b * b, axis=1), m

    @staticmethod
    def smoothed_loss(u, gamma):
        """Sum over rows of the Moreau envelope of max(0, u) with parameter gamma."""
        return np.where(u >= gamma, u - 0.5 * gamma, np.where(u > 0, u * u / (2.0 * gamma), 0.0)).sum(axis=-1)

    def _newton_level(self, b, A, gamma, active_rows, tol=None, fixed=None, weights=None):
        """Projected Newton on the gamma-smoothed objective over the ball, rows ``active_rows``.

        The rows' data ``A[idx]`` is gathered once and compacted only when supports finish
        (gathering it every iteration cost more than the Newton step at K = 300, n = 1000);
        the margins are updated along the accepted step, and the Hessian is summed over the
        few rows on the smoothed margin only.  Only the iterate b is returned: the caller
        certifies it from scratch (``_primal`` and ``_lower_bound``).

        With ``tol`` a support also stops as soon as its bracket is certified: the iterate b
        is always in the ball (a convex combination of ball points), theta = clip(u / gamma,
        0, 1) is always box-feasible, and v = A'theta is already part of the gradient, so the
        gap P(b) - D(theta) costs O(n) per support.  The smoothed stationarity test alone
        asks for a decrease below 1e-3 gamma, far below what the certificate needs.

        ``fixed = (c, count)`` (per support) stands for rows held on the positive side of
        the margin, whose loss is linear: count - c'b with c the sum of their a_i (see
        :meth:`newton_band`); ``A`` then holds the other rows only.

        Under a forced intercept coordinate 0 is b0: no ridge, not in the ball, in its box.

        ``weights``: the class weights of ``A``'s rows, (m,) shared by every support, or
        (K, m) per support (the band's rows differ by support); None unweighted.  Row i's
        smoothed term, its theta (in [0, w_i]) and its Hessian part are multiplied by w_i.
        """
        K, k = b.shape
        lamv = self._ridge_weights(k)
        ridge_hessian = np.diag(2.0 * lamv)
        box = float(self.box_radius(k - 1)) if self.intercept else 0.0
        idx = active_rows
        Ai, bi = _rows_of(A, idx, "newton rows 0"), b[idx]
        spare = "newton rows 1"  # compaction alternates between two work arrays
        if fixed is None:
            ci, cnt = np.zeros((idx.size, k)), np.zeros(idx.size)
        else:
            ci, cnt = fixed[0][idx], fixed[1][idx]
        per_support = weights is not None and weights.ndim == 2
        Wi = weights[idx] if per_support else weights
        u = 1.0 - self._margins(Ai, bi)

        def drop_finished(keep):
            """Keep the supports ``keep`` of the level's state (rows' data compacted in place)."""
            nonlocal Ai, spare, idx, bi, u, ci, cnt, Wi
            Ai, spare = self._compact(Ai, keep, spare)
            idx, bi, u, ci, cnt = idx[keep], bi[keep], u[keep], ci[keep], cnt[keep]
            if per_support:
                Wi = Wi[keep]

        for _ in range(self.solver_settings.newton_max_iter):
            if idx.size == 0:
                break
            theta = np.clip(u / gamma, 0.0, 1.0)
            loss = np.maximum(u, 0.0)
            if Wi is not None:
                theta *= Wi
                loss *= Wi
            v = np.matmul(theta[:, None, :], Ai)[:, 0, :] + ci
            g = 2.0 * lamv * bi - v
            # the unsmoothed objective: a scale for the stopping test, and the certificate
            primal = loss.sum(axis=1) + np.sum(lamv * bi * bi, axis=1) + cnt - np.sum(ci * bi, axis=1)
            if tol is not None:
                # certified gap at the current pair (the caller re-certifies from scratch)
                const, nv = self._split_dual(v, theta.sum(axis=1) + cnt)
                dual = const + self._h(nv)
                certified = primal - dual <= 0.5 * tol
                if certified.any():
                    keep = ~certified
                    drop_finished(keep)
                    if idx.size == 0:
                        break
                    primal, theta, g = primal[keep], theta[keep], g[keep]
            H = _smoothed_hessian(ridge_hessian, Ai, u, gamma, Wi, per_support)
            # Quadratic model minimised over the ball: min c'Mc - 2 w'c, M = H/2, w = (H b - g)/2.
            c = self._ball_model_minimiser(0.5 * H, 0.5 * (np.matmul(H, bi[:, :, None])[:, :, 0] - g))
            d = c - bi
            slope = np.sum(g * d, axis=1)
            scale = 1.0 + np.abs(primal)
            # Stop when the predicted decrease is far below the smoothing level (the
            # smoothed optimum is then within a small fraction of gamma in value).
            done = slope >= -(1e-3 * gamma + 1e-15 * scale)
            if self.intercept and tol is not None:
                # ... unless the intercept's derivative -e is still far from 0: fixing it
                # barely lowers the primal (e^2 over a curvature of order rows / gamma) but
                # the dual pays r0' |e|, so one more step is worth it
                done &= box * np.abs(g[:, 0]) <= 0.25 * tol
            # Exact line search on phi(t) = F(b + t d), t in [0, 1] (:meth:`line_search`).
            ud = self._margins(Ai, d)
            t = np.zeros(idx.size)
            pending = np.nonzero(~done)[0]
            if pending.size:
                t[pending] = self.line_search(u[pending], ud[pending], d[pending],
                                               np.sum((2.0 * lamv * bi[pending] - ci[pending]) * d[pending], axis=1),
                                               gamma, Wi[pending] if per_support else Wi)
            # Rows whose line search failed cannot improve further in floating point.
            stalled = (t == 0) & ~done
            bi = bi + t[:, None] * d
            u -= t[:, None] * ud
            b[idx] = bi
            finished = done | stalled
            if finished.any():
                drop_finished(~finished)
        return b

    def newton_band(self, b, A, gamma, band, tol, rows):
        """:meth:`_newton_level` for supports ``rows`` on the ``band`` data rows nearest the margin.

        Rows far from the margin at a point close to the solution stay on their side (the
        shrinking of Joachims (1999) and LIBLINEAR): those on the positive side enter as one
        linear term, those on the other side drop out, and each Newton iteration costs
        O(band) instead of O(n).  Nothing here is trusted: the caller certifies the
        returned b over all n rows; a support whose held rows crossed the margin fails that
        certificate and goes on to the next level, whose band is chosen afresh around the
        new point.
        """
        Ar, br = _rows_of(A, rows, "band level rows"), b[rows]
        K, n, k = Ar.shape
        u0 = work_array("band margins", (K, n))
        np.matmul(Ar, br[:, :, None], out=u0[:, :, None])
        np.subtract(1.0, u0, out=u0)
        near = np.argpartition(np.abs(u0, out=work_array("band distances", (K, n))), band - 1, axis=1)[:, :band]
        held = np.greater(u0, 0.0, out=work_array("band held", (K, n), dtype=bool))
        np.put_along_axis(held, near, False, axis=1)  # positive side and outside the band
        flat = (near + (n * np.arange(K))[:, None]).ravel()
        A_band = np.take(Ar.reshape(K * n, k), flat, axis=0, out=work_array("band rows", (K * band, k)), mode="clip")
        W = self.row_weights
        if W is None:
            c = np.matmul(held[:, None, :], Ar, dtype=np.float64)[:, 0, :]
            count, band_weights = held.sum(axis=1).astype(np.float64), None
        else:  # held rows enter with their weights: sum_i w_i (1 - a_i'b)
            held_w = held * W
            c = np.matmul(held_w[:, None, :], Ar)[:, 0, :]
            count, band_weights = held_w.sum(axis=1), W[near]
        b[rows] = self._newton_level(br, A_band.reshape(K, band, k), gamma, np.arange(rows.size), tol=tol,
                                     fixed=(c, count), weights=band_weights)
        return b

    @staticmethod
    def _compact(Ai, keep, spare):
        """(Ai[keep] in the work array ``spare``, the name of the one Ai was in)."""
        other = "newton rows 1" if spare == "newton rows 0" else "newton rows 0"
        m = int(np.count_nonzero(keep))
        return np.compress(keep, Ai, axis=0, out=work_array(spare, (m,) + Ai.shape[1:])), other

    def _band_at(self, level, band, warm, K):
        """Rows of the Newton level's band (None: all rows).  Every level of a warm start, and those of a
        cold one once its iterate has settled, run on the rows near the margin only."""
        if band is None or band >= self.n:
            return None
        if level == 0 and warm:
            # the first level of a warm start: its band must hold the rows that cross the margin on
            # the way from the start, more of them with more rows; a small batch costs about as much
            # per iteration on all rows
            small = K * self.n <= self.solver_settings.warm_all_rows_up_to
            return None if small else max(band, int(self.solver_settings.warm_first_band_share * self.n))
        if warm or level >= self.solver_settings.cold_levels_on_all_rows:
            return band
        return None

    def _certify_level(self, best, rows, A, b, gamma):
        """Certify the level's iterate (primal at the projected iterate, dual at its smoothed derivative,
        then candidate active sets and, at small gamma, the dual polish), keep the best bracket row by
        row in ``best``; the rows still above the gap tolerance."""
        bb = self.project(b[rows])
        Ar = _rows_of(A, rows, "level rows")
        value, m = self._primal(bb, Ar)
        theta = np.clip((1.0 - m) / gamma, 0.0, 1.0)
        if self.row_weights is not None:
            theta *= self.row_weights
        lower, v, mu, theta = self._certified_dual(theta, Ar)
        self._keep_better(best, rows, {"value": value, "coef": bb, "lower": lower, "theta": theta, "mu": mu, "v": v})
        rows = self._open_rows(best, rows)
        if rows.size:
            cand = self.active_set_candidates(_rows_of(A, rows, "level rows"), b[rows], gamma)
            self._keep_better(best, rows, dict(zip(("value", "lower", "coef", "theta", "mu", "v"), cand)))
            rows = self._open_rows(best, rows)
        if gamma <= self.solver_settings.polish_below and rows.size:
            # Degenerate supports (many rows exactly on the margin, typical when clipped entries meet
            # a binding ball) leave the smoothed dual far from optimal even when the primal is
            # accurate: recover the dual from the primal instead.
            for row in rows:
                self.polish_dual(row, best, A[row])
            rows = self._open_rows(best, rows)
        return rows

    def _open_rows(self, best, rows):
        """The rows whose best bracket is still wider than the gap tolerance."""
        gap = best["value"][rows] - best["lower"][rows]
        return rows[gap > self.gap_tolerance]

    def solve_batch(self, supports, start=None, gamma_start=None, band=None, rescue=False):
        supports = np.asarray(supports, dtype=np.int64)
        K, k = supports.shape
        A = self.support_rows(supports, out=work_array("hinge support rows", (K, self.n, k)))
        if start is None:
            b = np.zeros((K, k))
        else:  # any feasible point will do; project in case the start is outside
            b = self.project(np.array(start, dtype=np.float64).reshape(K, k))
        best = {"value": np.full(K, np.inf), "lower": np.full(K, -np.inf), "coef": np.zeros((K, k)),
                "theta": np.zeros((K, self.n)), "mu": np.zeros(K), "v": np.zeros((K, k))}
        rows = np.arange(K)
        gamma = float(self.solver_settings.gamma_start if gamma_start is None else gamma_start)
        level = 0
        while rows.size and gamma >= self.solver_settings.gamma_min:
            # every level of a warm start, and those of a cold one once its iterate has
            # settled, on the rows near the margin only
            band_now = self._band_at(level, band, start is not None, K)
            if band_now is not None and band_now < self.n:
                b = self.newton_band(b, A, gamma, band_now, self.gap_tolerance, rows)
            else:
                b = self._newton_level(b, A, gamma, rows, tol=self.gap_tolerance, weights=self.row_weights)
            level += 1
            rows = self._certify_level(best, rows, A, b, gamma)
            gamma *= self.solver_settings.gamma_factor
        if rescue and rows.size and gamma < self.solver_settings.gamma_min:
            # The last attempt's schedule is spent (:meth:`_solve_rows`: after the warm or
            # banded one).  A row the iterate leaves just off the margin (1e-8
            # away, say, with ridge 0 and an inactive ball) is on it at the optimum, and
            # fixing its theta at 0 or 1 leaves stationarity unmet: wider bands are tried
            # until the gap closes.  Every band gives a box-feasible theta, so each lower
            # bound is certified and the best is kept.
            for row in rows:
                self.polish_dual(row, best, A[row], widenings=self.solver_settings.polish_widenings)
        if not np.all(np.isfinite(best["value"])) or not np.all(np.isfinite(best["lower"])):
            raise SolverError("the hinge objective solve produced a non-finite bound.")
        return best
