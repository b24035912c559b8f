"""``s="auto"``: the model size and the support chosen together by one exponential mechanism.

The mechanism
-------------
Candidates: every pair (s, S) with s in 1..s_max (``s_max`` public; default min(p, 10)) and S a
support of s candidate terms (a formula's intercept is profiled out, as for fixed s).  Loss

    L(s, S; D) = R(S; D) + pen(s),     pen(s) = sigma0^2 k_n s,

R the ridge-and-ball least-squares objective of :mod:`dpstats.bss.objective` on the clipped,
public-range-mapped data, sigma0 a public noise standard deviation in the mapped units and
k_n = log n (``criterion="bic"``: the Bayesian information criterion of a Gaussian linear model
with known variance sigma0^2, RSS / sigma0^2 + s log n, scaled by sigma0^2) or k_n = 2
(``criterion="cp"``: Mallows' Cp with the public variance sigma0^2, equivalently AIC with known
variance).  n is the input row count (public under replace-one neighbours).  ``noise_sd`` is
given in the response's units and divided by the response's public half-range; by default
sigma0 is bought privately (next section).

The noise scale
---------------
BIC and Cp need the noise variance.  A public guess tied to the ranges (the former default, sigma0 =
1/2 mapped, a quarter of the response's public range) is many times the noise when the honest ranges
are wider than the data, and then every extra term looks like noise: at epsilon = inf it chose a smaller
size than BIC on every real data set tried (benchmarks/README.md, "bench_auto_size_real_data.py").
The textbook plug-in is the residual variance of the largest model (Mallows 1973; the ``scale`` of
R's ``step`` and leaps' Cp); here the largest model the mechanism fits, the best support of s_max
terms, whose objective v(s_max) is computed anyway:

    sigma0^2 = min(1, max(0, v(s_max) + Lap(Delta'(s_max) / eps_scale)) / (n - s_max - 1)),

one less degree of freedom without an intercept, eps_scale = ``RESIDUAL_SCALE_SHARE`` (5 %) of the
selection epsilon.  Privacy: v(s_max) is the minimum over supports of values that each move by at most
Delta(s_max) under replace-one neighbours, so it moves by at most Delta(s_max); read within [v, v + tau]
on the engine path, the read value moves by at most Delta'(s_max) = Delta(s_max) + tau.  The Laplace
release is eps_scale-DP (Dwork, McSherry, Nissim and Smith 2006); clipping to [0, 1] (a mapped response
lies in [-1, 1], so no residual variance exceeds 1) and the division by the public n - s_max - 1 are
post-processing.  Everything after it (the penalty, the default prior or extra penalty, the draws) is
the mechanism of this module with sigma0 public, run with the rest of epsilon: basic composition, one
more ledger entry, exactly epsilon in all.  The quantities that follow from the released sigma0 are
listed among the released items of the next entry, not among its public details.  The released sigma0 is
``release()["size_noise_sd"]`` (in the response's units).

Why 5 %.  The scale matters only once the criterion's penalty is large on the mechanism's scale, eps
sigma0^2 log n of the order of Delta(s_max) (below that the extra penalty or the prior of the next sections
decides); there the Laplace noise, Delta'(s_max) / eps_scale, is a share of about log n / (20 n) of
v(s_max) ~ n sigma0^2: negligible.  Where the noise is large the released scale is large or capped, and
the call is as conservative as the range/4 rule.  At epsilon = inf sigma0^2 = v(s_max) / (n - s_max - 1)
exactly, and the size is BIC's (Cp's) with the residual variance of the best s_max-term model.  plan()
averages the exact conditional probability given one released scale per simulated data set: still an
unbiased estimate of the probability of recovery.

Base measure: a geometric prior over sizes, uniform over the supports of each size,

    mu(s, S) = exp(-kappa s) / C(p, s),      kappa = ``size_prior`` (public),

and the draw is

    P(s, S) proportional to mu(s, S) exp(-eps Lhat(s, S; D) / (2 Delta_max)).

Size prior.  A support with one superfluous term has nearly the RSS of the right one, so only
the per-term penalty on the mechanism's scale, kappa + eps pen(1) / (2 Delta_max), keeps the
supersets away: the C(s* + j, j) supersets with j extra terms carry, relative to the right
support, about C(s* + j, j) exp(-j (kappa + eps pen(1) / (2 Delta_max))) (base measure
included), at most (s* + 1) e^-k / (1 - (s* + 1) e^-k) in all for k the per-term penalty.  By
default kappa = max(0, log((s_max + 1) / 0.05) - eps pen(1) / (2 Delta_max)), which makes that
share at most about 5 % for every s* <= s_max; eps is the sampling (nominal) epsilon, and every
input is public (kappa is shown in the ledger entry).  ``size_prior=`` fixes kappa instead.

``method="exponential"``: Lhat = L over every support of every size (sum_s C(p, s) <=
``max_enumerate``).  ``method="top_r"``: for each size whose C(p, s) exceeds R, Lhat(s, S) = L(s, S)
for the R best supports of size s (the list ``top_r`` uses: exact enumeration up to
``max_enumerate``, the certified MIP engine above) and R(S_R^(s)) + pen(s) for the other
C(p, s) - R supports of that size, which are drawn uniformly (rejection as in ``top_r``); sizes
with C(p, s) <= R are scored over every support.  Sampling is
:mod:`dpstats.mechanisms.listed_exponential` (log-space weights, log C(p, s) counts).

Privacy (replace-one neighbours, n public)
------------------------------------------
For fixed s, R(S; .) moves by at most Delta(s) = (b_y + b_x r sqrt(s))^2, times 4 with a
profiled intercept (:func:`dpstats.bss.objective.least_squares_sensitivity`); Delta(s) increases
with s, so every R(S; .) with |S| <= s_max moves by at most Delta_max = Delta(s_max).  pen(s) is
public, so L(s, S; .) moves by at most Delta_max for every pair.  On the top_r lists, Lhat moves
by at most Delta(s) + 2 tau_s per size (Behdin, Prastakos and Mazumder 2024, Lemmas A.1-A.2: the
R-th smallest of values that each move by Delta moves by Delta; tau_s = tolerance Delta(s) the
certified solver slack, 0 on exact enumeration), hence by Delta_max (1 + 2 tolerance) overall.
The base measure is public.  So the draw is the exponential mechanism with base measure mu on a
loss of sensitivity Delta_max (1 + 2 tolerance): sampled with eps_nom, it is
eps_nom (1 + 2 tolerance)-DP; the method samples with eps_nom = eps / (1 + 2 tolerance) rounded
down (:func:`dpstats.bss.exhaustive.slack_split`) when some size runs the engine (decided by p,
s_max, R and ``max_enumerate``: public), and with eps itself otherwise.  It spends exactly the
selection share eps, in one ledger entry, releasing the support and its size.

The price of not knowing s: every size is scored on the scale of Delta_max, not Delta(s)
(at s = 3 and s_max = 10 with r = 1 that is (1 + sqrt(10))^2 / (1 + sqrt(3))^2 = 2.3 times).
The measured cost is in benchmarks/README.md; "Where the factor comes from" below.

Generalised exponential mechanism (``size_mechanism="generalized"``)
--------------------------------------------------------------------
Each size keeps its own sensitivity (Raskhodnikova and Smith 2016, with their shift t = 0).
Write Lhat(s, S) for the loss above (L, or on top_r lists the R-th value of the size for the
unlisted supports) and v(s') = min_S Lhat(s', S).  The score of (s, S) is

    q(s, S; D) = max over s' in 1..s_max of (Lhat(s, S; D) - v(s'; D)) / (Delta(s) + Delta(s')),

and the draw is P(s, S) proportional to mu(s, S) exp(-eps q(s, S) / 2), mu the base measure
exp(-K(s)) / C(p, s).

Privacy.  Lhat(s, S; .) moves by at most Delta(s) (1 + 2 tolerance) and v(s'; .), the minimum of
values that each move by at most Delta(s') (1 + 2 tolerance), by at most that much too; so each
term of the max moves by at most 1 + 2 tolerance, and so does the max.  q is a score of
sensitivity 1 (times 1 + 2 tolerance on the engine path, handled by sampling with the nominal
eps / (1 + 2 tolerance) as above), the base measure is public: the exponential mechanism with
exp(-eps q / 2) is eps-DP (McSherry and Talwar 2007).  One ledger entry of exactly eps.

epsilon = inf.  q >= 0 (s' = s gives (Lhat - v(s)) / (2 Delta(s)) >= 0) and q = 0 exactly when
Lhat(s, S) <= v(s') for every s', i.e. on the minimisers of L over all sizes and supports: the
same BIC (or Cp) answer as the joint mechanism, with the same tie rule.

Default prior.  K(s) = sum_{u <= s} kappa_u, kappa_u = max(0, log((s_max + 1) / 0.05) -
eps pen(1) / (2 (Delta(u - 1) + Delta(u)))): between sizes u - 1 and u a superset is compared on
the scale Delta(u - 1) + Delta(u), so the step that keeps supersets below 5 % depends on u
(public inputs only; ``size_prior=`` gives a geometric prior instead).

When it helps.  For two candidates i, j the joint weight ratio is exp(-eps (L_i - L_j) /
(2 Delta_max)), the GEM's exp(-eps (L_i - L_j) / (2 (Delta_i + Delta_j))).  The GEM is the better
of the two near the true size s* only when 2 Delta(s*) < Delta(s_max), i.e. (1 + r sqrt(s_max)) >
sqrt(2) (1 + r sqrt(s*)): with r = 1 and s_max = 10 for s* <= 3 only, with s_max = 20 for
s* <= 6.  Its scale does not depend on s_max, so it is the choice when s_max must be large and
the model is expected to be small.  Dividing each size's loss by Delta(s) alone (no pairwise
difference) would keep every candidate's sensitivity at 1 and the within-size scale of s known,
but its epsilon = inf answer is argmin (RSS(S) + pen(s)) / Delta(s): not BIC or Cp, and not
consistent (RSS grows like n sigma^2, so for large n the larger Delta(s) wins and the largest
size is chosen); it is not offered.

Where the factor comes from
---------------------------
Write v(s) for the best value of size s, pen = pen(1), s* the criterion's size, and measure three
margins of the data (curator-side, non-private; benchmarks/bench_model_size_margins.py prints them):

    sub  = v(s* - 1) - v(s*)    the weakest true term's drop in R (what a missing term costs),
    sup  = v(s*) - v(s* + 1)    the best superfluous term's drop (noise),
    swap = the second-best value of size s* minus v(s*)    (top_r's margin with s known),

and tail = the R-th listed value of size s* minus v(s*).  With s known, top_r (scale Delta(s*),
A = eps / (2 Delta(s*))) fails with probability about

    s* (p - s*) exp(-A swap) + (C(p, s*) - R) exp(-A tail).

A size decision must separate s* from s* - 1 with margin sub - pen and from s* + 1 with margin
pen - sup; a prior exp(-kappa s) moves kappa from one margin to the other.  An exponential mechanism
over sizes on the scale D (A_1 = eps_1 / (2 D)) fails with about

    exp(kappa - A_1 (sub - pen)) + exp(-kappa - A_1 (pen - sup)) >= 2 exp(-A_1 (sub - sup) / 2),

with equality at the best kappa.  Whatever the penalty, the two margins share sub - sup, which is
about swap (a swap trades the weakest true term for the best noise term): the size decision has
half of top_r's margin, against a count of 2 instead of s* (p - s*).  So the size decision alone
needs eps_1(0.9) ~ 4 D log(20) / (sub - sup), and a mechanism in two stages (both must succeed)

    eps >= eps_1(0.9) + eps_known(0.9),      ratio to s known >= 1 + eps_1(0.9) / eps_known(0.9).

These two formulas predicted every measured epsilon of ``known`` and ``two_stage`` on the
benchmark's designs within 5 %.  The ratio is largest where eps_known is small against the scale:
small p and small s*, where top_r's count log(s* (p - s*)) is small and Delta_max / Delta(s*) large
(2.3 at s* = 3, s_max = 10).  What each mechanism pays:

1. the scale D of the size decision: Delta_max for ``two_stage`` and ``joint``; Delta(s) + Delta(s')
   for a pair of sizes in ``margin`` (66 against 2 Delta_max = 139 at s = 3, 4 with radius 1), with
   both margins of the pair counted (below); its size stage needs half of ``two_stage``'s at s* = 3;
2. for two stages, the split: the size stage's share is lost to the support stage, and the best share
   depends on s*, which is unknown (0.5 at s* = 3 and 0.3 at s* = 8 for p = 30);
3. for ``joint``, both decisions in one draw on Delta_max, and on top_r lists the tails: the unlisted
   supports of a size above s* are scored like its R-th listed support, a superset of the right one
   when R < C(p - s*, j), so they weigh like C(p, s*) supersets.

For the margin stage, eps_1 ~ 2 (Delta(s*) + Delta(s* + 1)) log(2 / beta_1) / (sub - sup) against
eps_known ~ 2 Delta(s*) log(s* (p - s*) / beta) / swap, swap ~ sub - sup: the ratio eps_1 / eps_known is
about 2.2 log(2 / beta_1) / log(s* (p - s*) / beta) at s* = 3, near 1 at p = 30, and the issue's target
(0.9 recovery at no more than 1.5x the epsilon of s known) needs it at 0.5.  Measured on
simulate(1000, p, s0): ``margin`` needs 1.41x to 1.51x at p = 250, 1.56x to 1.67x at p = 100 and 2.03x
to 2.31x at p = 30; its size stage alone needs 1.08 times eps_known at p = 30, s0 = 3, so every
two-stage mechanism with it needs at least 2.08x there whatever the share; an exponential size stage
on the criterion at the true size's scale Delta(s*), which no private mechanism can use without
knowing s*, still 1.91x; the joint mechanism on that scale with the best prior in hindsight 1.79x.
So the target is out of reach at p = 30 and 100 for the families built here, and met to within 1 % at p = 250 (a measured curve, not a lower
bound for every mechanism): benchmarks/README.md, "bench_model_size_margins.py".

Margin size stage (``size_mechanism="margin"``, the default for ``top_r`` and ``mistakes``)
-------------------------------------------------------------------------------------------
Two stages as in ``two_stage`` below, with another score in the size stage.  Write L(s) = v(s) +
pen(s), v(s) the certified best value of size s, and score each size by its smallest margin over
the other sizes, each pair on its own scale:

    q(s; D) = min over s' != s in 1..s_max of (L(s'; D) - L(s; D)) / (Delta(s) + Delta(s')),

drawn with P(s) proportional to exp(-kappa s + eps_1 q(s) / 2) (a lone size, s_max = 1, scores 0).

Privacy.  L(s; .) moves by at most Delta(s) under replace-one neighbours (the minimum of values
that each move by at most Delta(s); pen(s) is public), so each term of the min moves by at most
(Delta(s) + Delta(s')) / (Delta(s) + Delta(s')) = 1, and so does their minimum: q is a score of
sensitivity 1 and the exponential mechanism with exp(eps_1 q / 2) and the public base measure
exp(-kappa s) is eps_1-DP (McSherry and Talwar 2007).  On the engine path v(s) is read within
tau_s = tolerance Delta(s), so each term moves by at most 1 + tolerance: sampled with the nominal
eps_1 / (1 + 2 tolerance) as for ``two_stage``.  Unlike the generalised exponential mechanism
(whose max includes s' = s and so scores every minimiser 0), the min leaves s' = s out: the
criterion's size scores its margin to the nearest competitor, every other size a negative number,
so a pair of sizes is separated by both margins on the scale Delta(s) + Delta(s') instead of one
margin on 2 Delta_max.

epsilon = inf.  q(s) > 0 exactly when L(s) < L(s') for every s' != s, i.e. at the unique minimiser
of the criterion; on ties every minimiser scores 0 and the first (smallest) size is returned.  So the
size is BIC's (or Cp's) choice, and top_r at that size returns the best support: the same answer
as the joint mechanism, checked against statsmodels on ten real data sets.

Recovery.  P(size stage returns s*) >= 1 - sum_{s != s*} exp(-kappa (s - s*) - eps_1 (q(s*) - q(s)) /
2), and q(s*) - q(s) >= q(s*) + (L(s) - L(s*)) / (Delta(s) + Delta(s*)) (two-sided).

Defaults (public inputs only).  No prior (kappa = 0); instead the margins are taken on L(s) + lambda s
with lambda = max(0, 2 (Delta(s_max - 1) + Delta(s_max)) / eps_1 - pen(1)) (:func:`margin_extra_penalty`;
the nominal eps_1 on the engine path): the per-term penalty inside the margins is max(pen(1), 2
(Delta(s_max - 1) + Delta(s_max)) / eps_1), raised only while the criterion's own penalty is small on
the mechanism's scale, and equal to it from eps_1 = 2 (Delta(s_max - 1) + Delta(s_max)) / pen(1) on, so
epsilon = inf is still BIC's (Cp's) choice.  Inside the score a penalty counts on both sides of a pair
of sizes (the smaller size's margin grows and the larger size's shrinks by lambda each), where a prior
counts once: the size stage alone needed 0.76 of the epsilon it needed with the prior max(0, log 20 -
eps_1 pen(1) / (Delta(s_max - 1) + Delta(s_max))) at s0 = 3 (benchmarks/README.md).  An extra penalty
that does not vanish on the mechanism's scale (lambda = c (Delta(s_max - 1) + Delta(s_max)) / eps_1
always added) shifts every comparison by a fixed number of nats towards smaller sizes and cost 8x at
simulate(500, 20, 8), where the last true term's drop barely exceeds pen(1); the max avoids that.
``size_prior=`` gives a geometric prior instead and no lambda.  The
share of eps for the size stage is :func:`default_margin_share` (1.45 / (1.45 + max(0, log p - 2))
within [0.25, 0.7], fitted to the benchmark like :func:`default_size_share`).  Basic composition, two
ledger entries, exactly eps.

Sizes certified as needed (``size_certify="needed"``, the default)
--------------------------------------------------------------------
The size is drawn in the Gumbel-max form of the exponential mechanism: G(s) standard Gumbel draws,
one per size, and the size argmax_s (log w(s) + G(s)) with log w(s) = eps_1 q(s) / 2 - kappa s, which
has the law above (Gumbel 1954; the exponential mechanism as "report noisy max" with Gumbel noise).
The draws are made before the sizes are certified, so the draw can be decided from bounds: v(s) does
not increase with s (a superset fits at least as well with the same ball and ridge), and a certified
value lies within tau_s above the best, so a size not yet certified has v(s'') - tau(s'') <= v(s) <=
v(s') + tau(s) for certified s' < s < s'' (0 and +inf where there is none).  Each q(s) then lies
between the minima of its pairs' bounds, and once the winner's lower bound exceeds every other size's
upper bound the draw is the argmax that certifying every size would give with the same G: the release
is the same (tests/test_model_size.py checks it against ``size_certify="all"`` and against brute force
over subsets of certified sizes).  Those bounds come from larger sizes only, so showing that a small
size loses (a large v(s)) would need its certificate, and undersized problems are the engine's hardest
on strong designs (which true terms to leave out; benchmarks/README.md, "bench_auto_size_cost.py").
So the engine's cuts also bound the sizes it did not certify: every cut is a global under-estimator of
the objective (:mod:`dpstats.bss.engine`), so its minimum over the supports of s terms, its constant
plus its s smallest slopes, is a lower bound on v(s) for every s
(:meth:`~dpstats.bss.engine.OuterApproximationEngine.lower_bounds`, lowered by the evaluation error and
rounding); with the data's curvature in the slopes, dropping a term with a large coefficient costs at
least d_j b_j^2 there.  A size is certified next when it can still win (its upper bound reaches the
leader's lower bound), after s_max when the residual scale needs v(s_max) (below, which one); with
the extra penalty lambda large against the spread of v(s) on real data, the larger sizes rarely need a
certificate.  Before a smaller size is certified, the largest certified
size's best support bounds it (:meth:`~dpstats.bss.engine.OuterApproximationEngine.size_bounds`,
:mod:`dpstats.bss.size_bounds`): its subsets of that size are scored exactly (an upper bound on v(s)),
and the supports holding other columns are bounded from below (what those columns can add to a
subset's ridge fit; the model with every column, the left-out ones' removal cost exact).  Where the
signal is strong the two meet (one more true term left out costs more than any other column wins back)
and the size is decided without its certificate.  The same support also gives every smaller size an
upper bound at once, the values along backward elimination from it
(:meth:`~dpstats.bss.smaller_sizes.SmallerSizes.estimates`, the engine's ``smaller_sizes``).  Where these name a leader w with
room to spare, every other size is first bounded only as high as decides the draw for w
(:func:`leader_needs`: lower(s) >= upper(w) + Q (Delta(w) + Delta(s)) with Q just above what the drawn
Gumbels require), whether or not it could still win at the time: one size's own exclusion is measured
against the leader's worst margin, which the other sizes' loose lower bounds drag down, so asking the
sizes one at a time would bound each of them nearly to its value.  Then the bounds are asked only for
what would take a size out of the draw (:func:`contender_need`: the lower bound at which it could no
longer win, the other bounds as they are), which spares most of their work where a size is far from
winning, and only
for a size still in the draw then as tight as they go, and for a size out of it only where its lower bound
sets the leader's worst margin (:func:`leader_binding`), the one place where it still matters.  Every size
that can still win is bounded so before any is certified; then the size that can still win with the
widest bounds is certified (a size bounded to within its tolerance gains little from its certificate;
the smallest on ties).  With top_r, a size certified after a larger one (the released size included)
first tries the larger size's best support A for its whole top-R list
(:meth:`~dpstats.bss.engine.OuterApproximationEngine.smaller_size_list`): its subsets of A, and where
those are too few or fall short its supports with one column outside A, are scored exactly, every other
support is bounded from below as above, and where that bound reaches the R-th value less the size's
tau_mip the list meets the certificate of a top-R query (:mod:`dpstats.bss.engine`, "Solver slack and
epsilon"), so its law is the one the size's own engine would certify.  Where the signal is strong the
best supports of an undersized problem lie inside A, which is where the engine is slowest.  What is lost is
curator-only: the sizes left out have NaN values in ``size_table()`` (its ``objective_lower`` and
``objective_upper`` give what the bounds say of them), the size stage's exact law is
unknown (the recovery rows say "not checkable"), and the criterion's choice is reported only when the
bounds decide it; ``size_certify="all"`` certifies every size and gives them.  At epsilon = inf every size is
certified (the argmax of the criterion).

Two stages (``size_mechanism="two_stage"``, the default for ``top_r`` before ``margin``)
----------------------------------------------------------------------------------------
With ``top_r`` lists the joint draw above scores the C(p, s) - R supports outside each size's
list like the list's R-th; when R is below the number of supersets of the right support (R < p - s*,
e.g. p = 250), the R-th of size s* + 1 is itself a superset, so that size's whole tail (almost all
of its supports, most of them wrong) is scored like the right support plus one term, and no
practical size prior outweighs log C(p, s*) (measured: simulate(1000, 250, 5) put 0.99 of the mass
on size 6's tail).  The two-stage mechanism avoids tails in the size decision:

1. size stage, share ``size_share`` of eps (default 2.4 / (2.4 + max(0, log p - 2)) within
   [0.25, 0.7], :func:`default_size_share`: 0.7 at p = 20, 0.48 at p = 100, 0.41 at p = 250):
   the exponential mechanism over s = 1..s_max with loss v(s) + pen(s), v(s) the certified best value of size s (exact
   enumeration, or the engine's best within tau_s = tolerance Delta(s)), base measure
   exp(-kappa_1 s) with kappa_1 = max(0, log(1 / 0.05) - eps_1 pen(1) / (2 Delta_max)), sampled with
   Delta_max: v(s) moves by at most Delta(s) + tau_s (the minimum of values that each move by
   Delta(s), read within tau_s), so the stage is eps_1-DP (eps_nom (1 + 2 tolerance) <= eps_1 with
   slack), and it releases s;
2. the method (``top_r``) at the released s with the rest of eps, eps-DP as documented there.

Basic composition: eps_1 + eps_2 = eps, two ledger entries.  At epsilon = inf the size stage
returns argmin_s v(s) + pen(s) and top_r the best support of that size: the same answer as the
joint mechanism.  Recovery: the size stage needs A_1 (v(s* - 1) - v(s*) - pen(1)) >= kappa_1 +
log(1 / beta) and A_1 pen(1) + kappa_1 >= log(1 / 0.05) (A_1 = eps_1 / (2 Delta_max)), with no
log p term; the second stage needs top_r's own condition at s* with eps_2.

epsilon = inf
-------------
The base measure does not move the argmin: the answer is the (s, S) of smallest
R(S) + pen(s) over all sizes 1..s_max and all supports (first size, then the lexicographic
order of supports, on ties): best-subset BIC (or Cp) with the variance sigma0^2 (by default the
residual variance of the best s_max-term model), the ``regsubsets`` choice of R's leaps with that
criterion.  With ``top_r`` on the engine path the
list's first support is the certified best within tau.

Recovery condition
------------------
Let (s*, S*) minimise L, A = eps_nom / (2 Delta'), Delta' the sampling sensitivity, and for
i = |S* minus S|, j = |S minus S*| (so s = s* - i + j) let g_ij be the smallest L(s, S) - L(s*, S*)
over such pairs (on top_r lists, outputs of a tail score R(S_R^(s)) + pen(s)).  Then

    P(output != (s*, S*)) <= sum_{(i, j) != (0, 0)} C(s*, i) C(p - s*, j) exp(-kappa (j - i))
                              * C(p, s*) / C(p, s* - i + j) * exp(-A g_ij).

The leading terms: one superfluous term (i = 0, j = 1) costs (s* + 1) exp(-kappa - A g_01), and
g_01 >= pen(1) minus the drop in R from one more term, which is why kappa must exceed
log(s* + 1); one missing term (i = 1, j = 0) costs (p - s* + 1) exp(kappa - A g_10); one swap
(i = j = 1) costs s* (p - s*) exp(-A g_11).  So recovery with probability 1 - beta needs,
roughly, A g_10 >= kappa + log((p - s*) / beta) and A g_11 >= log(s* (p - s*) / beta): the margin
of the fixed-s mechanism plus kappa, on the Delta_max scale.  The curator's Conditions table
shows the exact probability that (s*, S*) is returned (exact on every path, given the lists).

Hinge loss (``loss="hinge"``)
-----------------------------
Every mechanism above runs with the hinge objective R_h of :mod:`dpstats.bss.hinge` in place of
R, its sensitivity Delta_h(s) = 2 (1 + b_x r sqrt(s)) (box intercept; it increases with s, so
Delta_max = Delta_h(s_max) as above) and its certified values (slack on every path: sampled with
the nominal eps / (1 + 2 tolerance)).  The criterion is

    R_h(S) + k_n s / 2,     k_n = log n (``criterion="bic"``) or 2 (``criterion="cp"``),

i.e. the hinge loss taken as a negative log-likelihood: BIC = 2 R_h + s log n and AIC = 2 R_h + 2 s,
halved.  It is the L0-penalised hinge loss of L0Learn (Dedieu, Hazimeh and Mazumder 2021) with
lambda_0 = log(n) / 2 (or 1) fixed in advance instead of tuned by cross-validation; the hinge loss
is not a likelihood, so this is a BIC-type rule, not Schwarz's approximation.  ``noise_sd`` does
not apply (refused before the charge).  At epsilon = inf the answer is the exhaustive minimiser of
this criterion over sizes 1..s_max (up to the certified tau; checked against scipy in the tests).

``max_tries`` is refused with ``s="auto"``.  ``mistakes`` runs in two stages only (its block
scores rest on the gap of one fixed size): the size stage, then ``mistakes`` with its own guard at
the released size.

References
----------
McSherry and Talwar (2007); Behdin, Prastakos and Mazumder (2024), Algorithm 1 and Lemmas
A.1-A.2; Schwarz (1978) for BIC; Mallows (1973) for Cp and the largest model's residual variance; Dwork,
McSherry, Nissim and Smith (2006) for the Laplace mechanism; Raskhodnikova and Smith (2016) for the
generalised exponential mechanism (``size_mechanism="generalized"``); Dedieu, Hazimeh and Mazumder (2021)
for the L0-penalised hinge loss; Fan and Lv (2008) for the screening size of ``k="auto"``; Lumley's
leaps package (``regsubsets``) for the table.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import comb, logsumexp

from ..errors import InvalidArgumentError
from ..mechanisms.listed_exponential import ListedGroup, listed_entries, listed_log_probabilities, sample_listed
from ..method_options import Choice, Integer, Real, validate_options
from ..methods import MethodOutcome, SelectionMethod, get_method, registered_methods
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from .class_weight import refuse_with_auto_size
from .enumeration import log_n_supports, slack_parts
from .losses import LOSS_OPTION, loss_named, loss_of

#: two_stage: the largest default share of the selection epsilon for the size stage (p <= 20; see
#: :func:`default_size_share`).
DEFAULT_SIZE_SHARE = 0.7
#: two_stage: the smallest default share (very large p).
MIN_SIZE_SHARE = 0.25


def default_size_share(p) -> float:
    """The size stage's default share of epsilon, from the public number of candidate terms p:
    2.4 / (2.4 + max(0, log p - 2)), within [0.25, 0.7].

    The size stage's need does not grow with p (it compares s_max sizes), top_r's does (about
    log C(p, s) competitors), so the share falls with log p.  Fitted to measurements (benchmarks/
    README.md): p = 20 (n = 500) was best near 0.7, and on simulate(1000, p, s0), s0 in 3, 5, 8,
    the worst ratio to s known over s0 was smallest near 0.6 at p = 30, 0.5 at p = 100 and 0.4 at
    p = 250; the rule gives 0.70, 0.63, 0.48 and 0.41."""
    share = 2.4 / (2.4 + max(0.0, math.log(max(int(p), 1)) - 2.0))
    return min(DEFAULT_SIZE_SHARE, max(MIN_SIZE_SHARE, share))
def default_margin_share(p) -> float:
    """``size_mechanism="margin"``'s default share of epsilon for its size stage, from the public p:
    1.45 / (1.45 + max(0, log p - 2)), within [0.25, 0.7].

    The margin stage needs less than the criterion stage of ``two_stage`` (at p = 100 about 0.5, 0.35 and
    0.25 of top_r's epsilon for s0 = 3, 5, 8, against 1.0, 0.5 and 0.26), so its share is smaller.  Fitted
    like :func:`default_size_share`: on simulate(1000, p, s0), s0 in 3, 5, 8, the worst ratio to s known
    over s0 was smallest near 0.5 at p = 30, 0.35 at p = 100 and 0.3 at p = 250, on two disjoint sets of
    data sets (benchmarks/README.md, bench_model_size_margins.py); the rule gives 0.51, 0.36 and 0.29."""
    share = MARGIN_SHARE_SCALE / (MARGIN_SHARE_SCALE + max(0.0, math.log(max(int(p), 1)) - 2.0))
    return min(DEFAULT_SIZE_SHARE, max(MIN_SIZE_SHARE, share))


#: margin: the constant c of default_margin_share, c / (c + max(0, log p - 2)).
MARGIN_SHARE_SCALE = 1.45
#: margin: the default per-term penalty inside the margins is at least this many (Delta(s_max - 1) +
#: Delta(s_max)) / eps_1 (module docstring, "Margin size stage").
MARGIN_PENALTY_SCALE = 2.0


#: two_stage: the size stage's prior keeps the sizes above the chosen one under this share of its mass.
LARGER_SIZE_MASS = 0.05
#: Outputs listed in the curator's ``top_supports`` (the most probable, across sizes).
TOP_SHOWN = 50
#: s_max when not given: min(p, DEFAULT_S_MAX).
DEFAULT_S_MAX = 10
#: :attr:`SelectionMethod.auto_size_kind` of the methods whose s="auto" is this module's size criterion.
BEST_SUBSET = "best_subset"
#: :attr:`SelectionMethod.auto_size_kind` of the methods whose k="auto" is the screening size (:class:`ScreeningSize`).
SCREENING = "screening"
#: :attr:`SelectionMethod.auto_size_kind` of the methods that choose their size inside their own mechanism
#: (:meth:`SelectionMethod.auto_size_settings` gives the settings object, with :class:`AutoSize`'s protocol).
OWN = "own"
#: sigma0 in mapped units of the range/4 rule (a quarter of the response's public range), the default before the
#: private residual scale; give ``noise_sd`` equal to a quarter of the range to use it.
DEFAULT_MAPPED_NOISE_SD = 0.5
#: Share of the selection epsilon that buys the residual scale when ``noise_sd`` is not given (module
#: docstring, "The noise scale").
RESIDUAL_SCALE_SHARE = 0.05
#: The mapped response lies in [-1, 1], so no residual variance exceeds 1: the released variance is capped there.
MAX_MAPPED_VARIANCE = 1.0
#: The default size prior keeps the supersets of the chosen support below this share of the mass
#: (module docstring, "Size prior").
SUPERSET_MASS = 0.05

SIZE_OPTIONS = (
    Choice("criterion", default="bic", choices=("bic", "cp"),
           doc="s='auto' only: the size criterion, BIC (penalty sigma0^2 log n per term) or Cp (2 sigma0^2 per term) "
               "with the public noise variance sigma0^2"),
    Real("noise_sd", default=None, low=0.0, allow_none=True,
         doc="s='auto' only: public noise standard deviation in the response's units (default: bought privately "
             "with 5 % of epsilon from the best fit of s_max terms, the residual scale of the largest model; "
             "see dpstats.bss.model_size, 'The noise scale')"),
    Choice("size_mechanism", default=None, choices=("joint", "generalized", "two_stage", "margin"), allow_none=True,
           doc="s='auto' only: one exponential mechanism over (s, support) pairs on the scale of Delta(s_max) "
               "('joint'), the generalised exponential mechanism over the same pairs with each size's own "
               "sensitivity ('generalized'), a size stage on the criterion then the method at that size "
               "('two_stage'), or a size stage on each size's smallest pairwise margin then the method ('margin') "
               "(default: joint for exponential, margin for top_r and mistakes; module docstring)"),
    Real("size_share", default=None, low=0.0, high=1.0, allow_none=True,
         doc="s='auto', two_stage and margin only: the share of the selection epsilon for the size stage (default: "
             "from p, 0.7 at p <= 20 down to 0.25; dpstats.bss.model_size.default_size_share and "
             "default_margin_share)"),
    Choice("size_certify", default="needed", choices=("needed", "all"),
           doc="s='auto' with size_mechanism='margin' only: 'needed' certifies a size's best support only while its "
               "score could still win the size stage's draw (the same release as 'all', which certifies every size "
               "1..s_max and gives the curator's exact size probabilities; module docstring, 'Sizes certified as "
               "needed')"),
    Real("size_prior", default=None, low=0.0, low_open=False, allow_none=True,
         doc="s='auto' only: kappa of the size prior exp(-kappa s) (default: max(0, log((s_max + 1) / 0.05) - "
             "eps pen(1) / (2 Delta_max)); with size_mechanism='margin' no prior but the extra penalty lambda, "
             "and a given kappa replaces lambda; see dpstats.bss.model_size)"),
)
SIZE_OPTION_NAMES = tuple(o.name for o in SIZE_OPTIONS)


def default_size_prior(s_max, epsilon, penalty_per_term, sensitivity) -> float:
    """kappa = max(0, log((s_max + 1) / SUPERSET_MASS) - eps pen(1) / (2 Delta_max)): public inputs only.

    Module docstring, "Size prior": the per-term penalty on the mechanism's scale,
    kappa + eps pen(1) / (2 Delta_max), is at least log((s_max + 1) / 0.05)."""
    if math.isinf(epsilon):
        return 0.0  # the argmin does not depend on the prior
    target = math.log((s_max + 1) / SUPERSET_MASS)
    return max(0.0, target - float(epsilon) * float(penalty_per_term) / (2.0 * float(sensitivity)))


def size_penalty(s, n, criterion, sigma2) -> float:
    """pen(s) = sigma0^2 k_n s, k_n = log n (BIC) or 2 (Cp); mapped units."""
    k_n = math.log(max(n, 1)) if criterion == "bic" else 2.0
    return float(sigma2) * k_n * s


def as_method(method) -> SelectionMethod:
    """The :class:`SelectionMethod` itself, or the one registered under a name (the functions below take either)."""
    return get_method(method) if isinstance(method, str) else method


def auto_size_methods(kinds=(BEST_SUBSET, OWN)) -> list:
    """The registered methods that offer a size "auto" of these kinds (s="auto" by default: ``auto_size_kind``
    "best_subset" or "own"), in registry order; a method whose module cannot be imported is left out."""
    out = []
    for name in registered_methods():
        try:
            meth = get_method(name)
        except (InvalidArgumentError, ImportError):
            continue
        if meth.auto_size_kind in kinds:
            out.append(name)
    return out


def _auto_size_offers() -> str:
    """Which methods take s="auto" and which k="auto" (a refusal's text)."""
    sizes = ", ".join(auto_size_methods())
    screening = ", ".join(auto_size_methods((SCREENING,)))
    return f"s='auto' is available for {sizes}" + (f", and k='auto' for {screening}" if screening else "")


def joint_groups(scored, p, n, criterion, sigma2, kappa):
    """The :class:`ListedGroup` of each size: ``scored`` maps s -> (values ascending, listed count
    taken as all supports when it equals C(p, s)).  Returns (sizes, groups)."""
    sizes, groups = [], []
    for s in sorted(scored):
        values = np.asarray(scored[s], dtype=np.float64)
        pen = size_penalty(s, n, criterion, sigma2)
        log_count = log_n_supports(p, s)
        R = values.size
        n_sup = int(comb(p, s, exact=True)) if log_count < 40 else None
        if n_sup is not None and R >= n_sup:
            log_tail, tail = -math.inf, math.inf
        else:
            log_tail = log_count + math.log1p(-math.exp(math.log(R) - log_count))  # log(C(p, s) - R)
            tail = float(values[-1]) + pen
        groups.append(ListedGroup(losses=values + pen, log_base=-kappa * s - log_count,
                                  log_tail_count=log_tail, tail_loss=tail))
        sizes.append(s)
    return sizes, groups



def size_sensitivities(data, radius, s_max, options=None):
    """Delta(s) for s = 0..s_max (index s): the loss's sensitivity over supports of s terms, public."""
    loss = loss_of(options or {})
    return [loss.sensitivity(data, radius, s) for s in range(s_max + 1)]


def gem_size_prior(s_max, epsilon, penalty_per_term, deltas) -> np.ndarray:
    """Default log base weights -K(s), s = 1..s_max, of ``size_mechanism="generalized"`` (public inputs only).

    K(s) = sum_{u <= s} kappa_u with kappa_u = max(0, log((s_max + 1) / 0.05) - eps pen(1) / (2 (Delta(u - 1)
    + Delta(u)))): the per-term penalty on the mechanism's scale between sizes u - 1 and u (module docstring,
    "Generalised exponential mechanism")."""
    if math.isinf(epsilon):
        return np.zeros(s_max)
    target = math.log((s_max + 1) / SUPERSET_MASS)
    steps = [max(0.0, target - float(epsilon) * float(penalty_per_term) / (2.0 * (deltas[u - 1] + deltas[u])))
             for u in range(1, s_max + 1)]
    return -np.cumsum(steps)


def gem_scores(losses, s, best, deltas):
    """q(s, S) = max over sizes s' of (L(s, S) - v(s')) / (Delta(s) + Delta(s')), v(s') the best loss of size s'.

    ``best`` maps s' -> v(s'); q >= 0 (s' = s gives (L - v(s)) / (2 Delta(s)) >= 0), and q = 0 exactly on the
    global minimisers of L (Raskhodnikova and Smith 2016, with their shift t = 0)."""
    losses = np.asarray(losses, dtype=np.float64)
    out = np.zeros_like(losses)
    for s2, v in best.items():
        out = np.maximum(out, (losses - v) / (deltas[s] + deltas[s2]))
    return out


def gem_groups(scored, p, n, criterion, sigma2, log_prior, deltas):
    """The :class:`ListedGroup` of each size for the generalised exponential mechanism: the losses of
    :func:`joint_groups` replaced by their GEM scores (sensitivity 1), the base measure
    exp(log_prior[s - 1]) / C(p, s).  Sample with sensitivity 1.  Returns (sizes, groups)."""
    sizes, plain = joint_groups(scored, p, n, criterion, sigma2, 0.0)
    best = {s: float(g.losses[0]) for s, g in zip(sizes, plain)}
    groups = []
    for s, g in zip(sizes, plain):
        tail = float(gem_scores([g.tail_loss], s, best, deltas)[0]) if g.has_tail else math.inf
        groups.append(ListedGroup(losses=gem_scores(g.losses, s, best, deltas),
                                  log_base=float(log_prior[s - 1]) + g.log_base,
                                  log_tail_count=g.log_tail_count, tail_loss=tail))
    return sizes, groups

def margin_scores(criterion_values, deltas) -> np.ndarray:
    """q(s) = min over s' != s of (L(s') - L(s)) / (Delta(s) + Delta(s')), s = 1..s_max (index s - 1).

    ``criterion_values``: L(s) = v(s) + pen(s) for s = 1..s_max; ``deltas``: Delta(s) for s = 0..s_max.
    Module docstring, "Margin size stage".  A lone size scores 0 (nothing to compare)."""
    L = np.asarray(criterion_values, dtype=np.float64)
    if L.size == 1:
        return np.zeros(1)
    d = np.asarray(deltas, dtype=np.float64)[1:L.size + 1]
    pair = (L[None, :] - L[:, None]) / (d[:, None] + d[None, :])  # row s, column s'
    np.fill_diagonal(pair, np.inf)
    return pair.min(axis=1)


def margin_extra_penalty(s_max, epsilon, deltas, penalty_per_term) -> float:
    """lambda of ``size_mechanism="margin"``: max(0, 2 (Delta(s_max - 1) + Delta(s_max)) / eps_1 - pen(1)) per
    term, added to the criterion inside the margins, so that the per-term penalty is max(pen(1), 2 (Delta(s_max
    - 1) + Delta(s_max)) / eps_1); 0 at epsilon = inf (the criterion itself), with one size, and wherever the
    criterion's own penalty is large enough on the mechanism's scale.  Public inputs only (module docstring,
    "Margin size stage")."""
    if math.isinf(epsilon) or s_max < 2:
        return 0.0
    floor = MARGIN_PENALTY_SCALE * (float(deltas[s_max - 1]) + float(deltas[s_max])) / float(epsilon)
    return max(0.0, floor - float(penalty_per_term))


# ------------------------------------------------------------------ the call's size settings
@dataclass
class AutoSize:
    """The validated ``s="auto"`` settings of one call (public values only)."""

    s_max: int | None
    options: dict
    p: int | None = None
    kappa: float | None = None
    details: dict = field(default_factory=dict)

    @classmethod
    def check(cls, meth, size, s_max, method_options, name=None):
        """(AutoSize or None, the method's own options).  Before the charge, values only.  ``name``: the size's
        argument as the call gave it (s or k; both are accepted), for the messages."""
        name = name or meth.size_argument
        given = {k: method_options[k] for k in SIZE_OPTION_NAMES if k in method_options}
        rest = {k: v for k, v in method_options.items() if k not in SIZE_OPTION_NAMES}
        if size != "auto":
            if s_max is not None:
                raise InvalidArgumentError(f"s_max applies to s='auto' only; got s={size!r} and s_max={s_max!r}.")
            return None, method_options
        if meth.auto_size_refusal is not None:
            raise InvalidArgumentError(f"{name}='auto' is not available for method {meth.name!r}: "
                                       f"{meth.auto_size_refusal}. Give {name}= as a positive integer.")
        if meth.auto_size_kind == SCREENING:
            return ScreeningSize.check(meth, s_max, given), rest
        if meth.auto_size_kind == OWN:
            return meth.auto_size_settings(s_max, given), rest
        if meth.auto_size_kind != BEST_SUBSET:
            raise InvalidArgumentError(
                f"{name}='auto' is not available for method {meth.name!r} ({_auto_size_offers()}): give {name}= as "
                "a positive integer.")
        if s_max is not None:
            s_max = Integer("s_max", minimum=1).check(s_max)
        loss = loss_named(rest.get("loss", LOSS_OPTION.default))  # unvalidated: None for a value refused later
        if loss is not None and loss.size_criterion_variance is not None and given.get("noise_sd") is not None:
            raise InvalidArgumentError("noise_sd applies to loss='squared' only; with loss='hinge' the size criterion is "
                                       "the hinge objective plus k_n s / 2 (see dpstats.bss.model_size), no noise scale.")
        if rest.get("max_tries") is not None:
            raise InvalidArgumentError("s='auto' needs max_tries=None (unlimited retries: the exact top-R mechanism).")
        refuse_with_auto_size(rest)  # the size criterion is calibrated on the unweighted hinge loss
        options = validate_options(SIZE_OPTIONS, given, "s='auto'")
        if options["size_mechanism"] in meth.refused_size_mechanisms:
            raise InvalidArgumentError(meth.refused_size_mechanism_message)
        return cls(s_max=s_max, options=options), rest

    def resolve(self, p, options, n_rows=None):
        """After the formula: s_max (default min(p, 10)) and the size the method's public hooks
        (radius, ridge, size checks) see: the size with the most supports, min(s_max, p // 2)."""
        if self.s_max is None:
            self.s_max = min(p, DEFAULT_S_MAX)
        if self.s_max > p:
            raise InvalidArgumentError(f"s_max={self.s_max} exceeds the number of candidate terms ({p}).")
        self.p = p
        self.kappa = self.options["size_prior"]  # None: chosen at run time from public values (default_size_prior)
        return max(1, min(self.s_max, p // 2))

    def check_size(self, meth, options):
        """The method's own check of the sizes 1..s_max together (:meth:`SelectionMethod.check_auto_size`: e.g.
        a method that enumerates every support of every size; public p, s_max)."""
        meth.check_auto_size(self.p, self.s_max, options)

    def given_options(self):
        """The size options that differ from their defaults (for the call's text)."""
        defaults = {o.name: o.default for o in SIZE_OPTIONS}
        return {k: v for k, v in self.options.items() if v != defaults[k]}

    def public_items(self):
        """What the call records about the size choice (public)."""
        return {"s_max": self.s_max, "criterion": self.options["criterion"], "noise_sd": self.options["noise_sd"],
                "size_prior": "default" if self.kappa is None else self.kappa}

    # -------------------------------------------------------------- the mechanism
    def mechanism(self, meth):
        return self.options["size_mechanism"] or meth.default_size_mechanism

    def run(self, meth, task) -> MethodOutcome:
        mechanism = self.mechanism(meth)
        if mechanism in ("two_stage", "margin"):
            rule = default_margin_share if mechanism == "margin" else default_size_share
            share = rule(self.p) if self.options["size_share"] is None else self.options["size_share"]
            score = "margin" if mechanism == "margin" else "criterion"
            return run_two_stage(meth, task, self.s_max, self.options["criterion"], self.options["noise_sd"],
                                 self.kappa, share, score, self.options["size_certify"])
        return run_auto(meth, task, self.s_max, self.options["criterion"], self.options["noise_sd"],
                        self.kappa, self.mechanism(meth))

    def condition_rows(self, curator, epsilon):
        return condition_rows(curator, epsilon)


@dataclass
class ScreeningSize:
    """``k="auto"`` for the screening methods (``auto_size_kind="screening"``): k = floor(n / log n), Fan and
    Lv's (2008) screening size for sure independence screening, n the input row count.

    Not a private choice: n is public under the method's replace-one neighbours and p comes from the
    formula, so k costs no budget and nothing about it depends on the data values.  Screening keeps
    more terms than the model has (it is followed by a selection method on the kept terms), which is
    why a model-size criterion such as BIC is not used.  When floor(n / log n) >= p screening would
    keep every term: refused before the charge."""

    method: object  # the SelectionMethod (its Conditions rows at the resolved k)
    s_max: int | None = None
    k: int | None = None
    n: int | None = None
    p: int | None = None
    options: dict = field(default_factory=dict)

    @classmethod
    def check(cls, meth, s_max, given):
        if s_max is not None or given:
            raise InvalidArgumentError(f"k='auto' for method {meth.name!r} is the screening size floor(n / log n) "
                                       f"(Fan and Lv 2008); s_max and the size options ({', '.join(SIZE_OPTION_NAMES)}) "
                                       "apply to the best-subset methods only.")
        return cls(method=meth)

    def resolve(self, p, options, n_rows=None):
        n = int(n_rows)
        k = max(1, math.floor(n / math.log(n))) if n >= 3 else 1
        if k >= p:
            raise InvalidArgumentError(
                f"k='auto' is floor(n / log n) = {k} for the {n} input rows, not below the {p} candidate terms: "
                f"screening would keep every term. Give k= below {p}, or select with a best-subset method.")
        self.k, self.n, self.p, self.options = k, n, p, options
        return k

    def check_size(self, meth, options):
        pass

    def run(self, meth, task) -> MethodOutcome:
        return meth.run(task)

    def condition_rows(self, curator, epsilon):
        from ..conditions import condition_rows as method_condition_rows

        return method_condition_rows(self.method, curator, p=self.p, size=self.k, epsilon=epsilon,
                                     options=self.options)

    def given_options(self):
        return {}

    def public_items(self):
        return {"rule": "floor(n / log n) (Fan and Lv 2008), n the input row count", "k": self.k}


def mapped_noise_variance(data, noise_sd, options=None) -> float:
    """sigma0^2 in mapped units: noise_sd / (the response's public half-range), squared.

    A loss with a fixed variance (:attr:`~dpstats.bss.losses.Loss.size_criterion_variance`; the hinge loss: 1/2,
    so that pen(s) = k_n s / 2, module docstring, "Hinge loss") uses it."""
    fixed = loss_of(options or {}).size_criterion_variance
    if fixed is not None:
        return fixed
    if noise_sd is None:
        return DEFAULT_MAPPED_NOISE_SD**2
    return (float(noise_sd) / response_half_range(data)) ** 2


def response_half_range(data) -> float:
    """The response's public half-range (1 when the data carry no ranges): mapped units to the response's."""
    ranges = getattr(data, "ranges", None)
    half = getattr(ranges, "response_half", None) if ranges is not None else None
    return float(half) if half else 1.0


def buys_residual_scale(noise_sd, options) -> bool:
    """Whether the call buys sigma0 privately: a loss whose criterion has a noise scale (the squared loss) with no
    public ``noise_sd`` (public inputs only)."""
    return noise_sd is None and loss_of(options or {}).size_criterion_variance is None


def residual_scale_epsilon(epsilon, noise_sd, options) -> float:
    """The share of ``epsilon`` that buys the residual scale: RESIDUAL_SCALE_SHARE of it, or 0 when sigma0 is
    public (a given ``noise_sd``, the hinge loss).  At epsilon = inf every stage runs with inf."""
    if not buys_residual_scale(noise_sd, options):
        return 0.0
    return math.inf if math.isinf(epsilon) else RESIDUAL_SCALE_SHARE * float(epsilon)


@dataclass
class ResidualScale:
    """sigma0^2 of the size criterion, public (``noise_sd`` given, or the hinge loss's 1/2) or bought with the
    Laplace mechanism from the best objective of s_max terms (module docstring, "The noise scale")."""

    sigma2: float
    entry: LedgerEntry | None = None
    released: dict = field(default_factory=dict)

    def route(self, items):
        """(public details, released items): what follows from sigma0 (the penalty, a default prior) is a public
        parameter when sigma0 is public, and post-processing of the release when it was bought."""
        return (dict(items), {}) if self.entry is None else ({}, dict(items))


def _row_count(x, y):
    """The number of rows of a block (module level: it pickles for Dask partitions)."""
    return np.array([float(np.asarray(x).shape[0])])


def criterion_rows(task) -> int:
    """n of the size criterion (its penalty, and the residual scale's degrees of freedom): the public input row
    count; at ``epsilon = inf`` the rows the fits use (no privacy to keep; R's BIC counts those), so that rows
    omitted for missing values do not count."""
    if task.n_input is None:
        return int(task.stats.n)
    if math.isinf(task.epsilon):
        return int(task.data.backend.sum_over_rows(task.data, _row_count)[0])
    return int(task.n_input)


def residual_scale(task, noise_sd, s_max, v_smax, tau, epsilon) -> ResidualScale:
    """sigma0^2 for one call.  ``v_smax``: the certified best objective of size s_max (read within ``tau``
    above the minimum); ``epsilon``: :func:`residual_scale_epsilon`'s share (0: public sigma0)."""
    data, options = task.data, task.options
    if epsilon == 0.0:
        return ResidualScale(mapped_noise_variance(data, noise_sd, options))
    n = criterion_rows(task)
    df = max(int(n) - s_max - (1 if data.intercept else 0), 1)
    # v(s_max) moves by at most Delta(s_max) under replace-one neighbours (the minimum of values that each move
    # by at most that much); read within [v, v + tau], the read value moves by at most Delta(s_max) + tau.
    sensitivity = loss_of(options).sensitivity(data, task.radius, s_max) + tau
    noisy = float(v_smax) if math.isinf(epsilon) else float(v_smax) + float(task.rng.laplace(sensitivity / epsilon))
    sigma2 = min(MAX_MAPPED_VARIANCE, max(0.0, noisy) / df)
    noise_sd_units = math.sqrt(sigma2) * response_half_range(data)
    entry = LedgerEntry(
        mechanism=f"residual scale: Laplace mechanism on the best objective of {s_max} terms",
        epsilon=epsilon, neighbours=REPLACE_ONE, released={"size_noise_sd": noise_sd_units},
        caveats=(("best objective certified within tau = tolerance Delta(s_max); the Laplace scale counts tau"
                  if tau > 0 else "best objective of size s_max scored exactly"),),
        details={"sensitivity": sensitivity, "scale": (0.0 if math.isinf(epsilon) else sensitivity / epsilon),
                 "degrees of freedom": df, "share of epsilon": RESIDUAL_SCALE_SHARE,
                 "variance cap (mapped units)": MAX_MAPPED_VARIANCE})
    return ResidualScale(sigma2, entry, {"size_noise_sd": noise_sd_units})


def _size_slack(p, s, R, options):
    from .certified import top_r_uses_slack

    return top_r_uses_slack(p, s, R, options)


def score_sizes(method, task, s_max):
    """s -> (supports (K, s) candidate indices, values ascending) for every size, and the tau per size.

    ``method`` (a :class:`SelectionMethod` or its name): every support when it declares
    ``auto_size_enumerates`` (exponential); otherwise top_r's certified list (every support when C(p, s) <= R).
    """
    from .certified import certified_top

    enumerates = as_method(method).auto_size_enumerates
    p, R = len(task.terms), int(task.R)
    loss = loss_of(task.options)
    scored, taus = {}, {}
    for s in range(1, s_max + 1):
        n_sup = int(comb(p, s, exact=True)) if log_n_supports(p, s) < 40 else None
        task_s = dataclasses.replace(task, size=s)
        delta_s = loss.sensitivity(task.data, task.radius, s)
        if enumerates or (n_sup is not None and R >= n_sup):
            # Every support; the hinge loss's values are certified within tau / 2 (exact_value_slack).
            tau = task.options["tolerance"] * delta_s if loss.slack_on_every_path else 0.0
            supports, values = loss.score_all_supports(task_s, tau, f"s='auto' (s = {s})")
            order = np.lexsort((np.arange(values.size), values))
            scored[s] = (np.asarray(supports)[order], np.asarray(values, dtype=np.float64)[order])
            taus[s] = loss.exact_value_slack(tau)
            continue
        tau = task.options["tolerance"] * delta_s if _size_slack(p, s, R, task.options) else 0.0
        sups, vals, _, _ = certified_top(task_s, R, tau)
        scored[s] = (np.asarray(sups, dtype=np.int64).reshape(len(sups), s), np.asarray(vals, dtype=np.float64))
        taus[s] = tau
    return scored, taus


@dataclass
class JointLaw:
    """Everything the joint draw needs, computed once (the scored lists, the groups and the scale).

    ``groups`` are what is sampled (with ``sensitivity``); ``criterion_groups`` carry the criterion
    L = R + pen itself (the same as ``groups`` for ``joint``; for ``generalized`` ``groups`` hold the
    GEM scores and ``sensitivity`` is 1)."""

    scored: dict
    taus: dict
    sizes: list
    groups: list
    nominal: float
    parts: tuple
    sensitivity: float
    sigma2: float
    n: int
    slack: bool
    kappa: object
    criterion_groups: list = None
    mechanism: str = "joint"
    delta_max: float = None
    epsilon: float = None  # what the draw spends (the selection epsilon less the residual scale's share)
    scale: ResidualScale = None


def joint_law(method, task, s_max, criterion, noise_sd, kappa, mechanism="joint") -> JointLaw:
    """The groups and the sampling scale of the joint (or generalised) mechanism for a task (module docstring).

    When sigma0 is bought (:func:`residual_scale_epsilon`), its share comes off ``task.epsilon`` first and the
    law is that of the rest given the released sigma0.  ``method``: a :class:`SelectionMethod` or its name."""
    method = as_method(method)
    p, R = len(task.terms), int(task.R)
    n = criterion_rows(task)
    data = task.data
    deltas = size_sensitivities(data, task.radius, s_max, task.options)
    delta_max = deltas[s_max]
    # Public: the loss, p, s_max, R, max_enumerate (top_r's own rule per size, on top-R lists).
    slack = loss_of(task.options).slack_on_every_path or (
        not method.auto_size_enumerates and any(_size_slack(p, s, R, task.options) for s in range(1, s_max + 1)))
    eps_scale = residual_scale_epsilon(task.epsilon, noise_sd, task.options)
    eps = task.epsilon if math.isinf(task.epsilon) else task.epsilon - eps_scale
    name = ("joint (s, support) exponential mechanism" if mechanism == "joint"
            else "generalised exponential mechanism over (s, support)")
    if slack:
        nominal, parts = slack_parts(eps, task.options["tolerance"], name)
    else:
        nominal, parts = eps, ()
    scored, taus = score_sizes(method, task, s_max)
    values = {s: v for s, (_, v) in scored.items()}
    scale = residual_scale(task, noise_sd, s_max, float(values[s_max][0]), taus[s_max], eps_scale)
    sigma2 = scale.sigma2
    pen1 = size_penalty(1, n, criterion, sigma2)
    if mechanism == "joint":
        if kappa is None:
            kappa = default_size_prior(s_max, nominal, pen1, delta_max)
        sizes, groups = joint_groups(values, p, n, criterion, sigma2, kappa)
        return JointLaw(scored, taus, sizes, groups, nominal, parts, delta_max, sigma2, n, slack, kappa,
                        criterion_groups=groups, mechanism=mechanism, delta_max=delta_max, epsilon=eps, scale=scale)
    if kappa is None:
        log_prior = gem_size_prior(s_max, nominal, pen1, deltas)
        shown = {str(s): round(-float(v), 6) for s, v in zip(range(1, s_max + 1), log_prior)}
    else:
        log_prior = -float(kappa) * np.arange(1, s_max + 1, dtype=np.float64)
        shown = kappa
    sizes, plain = joint_groups(values, p, n, criterion, sigma2, 0.0)
    _, groups = gem_groups(values, p, n, criterion, sigma2, log_prior, deltas)
    return JointLaw(scored, taus, sizes, groups, nominal, parts, 1.0, sigma2, n, slack, shown,
                    criterion_groups=plain, mechanism=mechanism, delta_max=delta_max, epsilon=eps, scale=scale)


def output_log_probabilities(law: JointLaw, p) -> dict:
    """Exact log P(output = S) for every support S of every size (small p): the audit oracle.

    A tail's mass is spread evenly over the supports of its size that are not listed.
    """
    from itertools import combinations

    logp = listed_log_probabilities(law.groups, law.nominal, law.sensitivity)
    out = {}
    for (g, k), lp in zip(listed_entries(law.groups), logp):
        s = law.sizes[g]
        supports = law.scored[s][0]
        if k >= 0:
            out[tuple(int(j) for j in supports[k])] = float(lp)
        else:
            listed = set(map(tuple, supports.tolist()))
            each = float(lp) - law.groups[g].log_tail_count
            for sup in combinations(range(p), s):
                if sup not in listed:
                    out[sup] = each
    return out


def draw_from_joint_law(law, p, rng):
    """One draw (size, support, tries) from a joint or generalised law over ``p`` terms: a listed group and
    position, or a uniform support of that size outside its list (the group's tail)."""
    from .certified import draw_uniform_outside

    g, k = sample_listed(law.groups, law.nominal, law.sensitivity, rng)
    s_chosen = law.sizes[g]
    supports = law.scored[s_chosen][0]
    if k >= 0:
        return s_chosen, tuple(int(j) for j in supports[k]), 0
    chosen, tries, _ = draw_uniform_outside(p, s_chosen, set(map(tuple, supports.tolist())), rng)
    return s_chosen, chosen, tries


def run_auto(method, task, s_max, criterion, noise_sd, kappa, mechanism="joint") -> MethodOutcome:
    """The joint (s, S) exponential mechanism, or the generalised one (module docstring); ``method``: a
    :class:`SelectionMethod` or its name."""
    method = as_method(method)
    p, R = len(task.terms), int(task.R)
    law = joint_law(method, task, s_max, criterion, noise_sd, kappa, mechanism)
    s_chosen, chosen, tries = draw_from_joint_law(law, p, task.rng)
    terms = [task.terms[j] for j in sorted(chosen)]
    from_scale, released_scale = law.scale.route({
        "penalty_per_term (mapped units)": size_penalty(1, law.n, criterion, law.sigma2),
        "noise_sd (mapped units)": math.sqrt(law.sigma2), "size_prior kappa": law.kappa})
    details = {"s_max": s_max, "sizes": list(law.sizes), "criterion": criterion, **from_scale,
               "sensitivity (Delta at s_max)": law.delta_max, "nominal_epsilon": law.nominal,
               "ridge": task.ridge, "radius": task.radius, "loss": loss_of(task.options).label}
    if mechanism == "generalized":
        details["sensitivity per size"] = {str(s): d for s, d in
                                           enumerate(size_sensitivities(task.data, task.radius, s_max,
                                                                        task.options)) if s}
        details["scores"] = "max over sizes s' of (L - v(s')) / (Delta(s) + Delta(s')), sampled with sensitivity 1"
    if not method.auto_size_enumerates:  # top-R lists per size
        details["R"] = R
        details["tau per size"] = {str(s): law.taus[s] for s in law.sizes}
    caveat = ("every support of every size scored exactly: no solver slack" if not law.slack else
              f"certified values (top-{R} lists per size for top_r) within tau = {task.options['tolerance']:g} "
              "Delta(s); sampled with the nominal eps / (1 + 2 tolerance), so the guarantee is eps")
    title = ("joint (s, support) exponential mechanism" if mechanism == "joint"
             else "generalised exponential mechanism over (s, support)")
    entry = LedgerEntry(
        mechanism=f"{title}, s in 1..{s_max} ({method.name})",
        epsilon=law.epsilon, neighbours=REPLACE_ONE,
        released={"support": terms, "s_selected": int(s_chosen), **released_scale}, caveats=(caveat,), details=details,
        parts=law.parts)
    curator = _curator(task, law.scored, law.sizes, law.groups, law.nominal, law.sensitivity, law.n, law.sigma2,
                       criterion, law.criterion_groups)
    if mechanism == "generalized":
        curator["privacy_condition"] = "GEM scores of sensitivity 1, each size on its own Delta(s)"
        curator["method_detail"] = (f"generalised exponential mechanism over sizes 1..{s_max} and their supports "
                                    "(each size on its own sensitivity)")
    curator["outside_top_r_draws"] = tries
    scale_entries = [law.scale.entry] if law.scale.entry is not None else []
    return MethodOutcome(support=np.array(sorted(chosen), dtype=np.int64), entries=scale_entries + [entry],
                         curator=curator, released={"s_selected": int(s_chosen), **law.scale.released})


def size_stage(method, task, s_max, criterion, noise_sd, kappa, epsilon, score="criterion", scale_epsilon=0.0,
               draw=None, certify="all", list_R=None):
    """The size stage of ``two_stage`` (``score="criterion"``) or ``margin`` (``score="margin"``): (sizes,
    losses v(s) + pen(s), the sampled scores and their sensitivity, best supports, log-weights, nominal
    epsilon, parts, kappa, scorers, taus, the residual scale) (module docstring, "Two stages" and "Margin size
    stage").  ``scale_epsilon`` > 0 buys sigma0 from v(s_max) before the stage (:func:`residual_scale`).  The
    stage is the same for every method (``method``, a :class:`SelectionMethod` or its name, is not read): each
    size's certified best support, scored like top_r's list of one.

    ``draw`` (the call's :class:`~dpstats.privacy.randomness.RandomSource`; margin score, finite epsilon): the
    size is drawn here by the Gumbel-max form of the exponential mechanism, ``index`` in the result; with
    ``certify="needed"`` a size is certified only while its score's bounds could still win that draw (module
    docstring, "Sizes certified as needed"), and the sizes left out have NaN values and no support.

    ``list_R``: the length of the certified list the second stage reads at the released size (top_r); with
    sizes certified as needed, a larger certified size's best support may then certify a size's list, and so
    its best value, without that size's own engine (module docstring, "Sizes certified as needed")."""
    from .certified import certified_top
    from .engine import OuterApproximationEngine
    from .engine_problem import SmallerSizeList

    p = len(task.terms)
    n = criterion_rows(task)
    data = task.data
    loss = loss_of(task.options)
    delta_max = loss.sensitivity(data, task.radius, s_max)
    # Public: whether a size's best comes from the engine (the loss, p, s, max_enumerate).
    slack = any(_size_slack(p, s, 1, task.options) for s in range(1, s_max + 1))
    if slack:
        nominal, parts = slack_parts(epsilon, task.options["tolerance"], "size stage (exponential mechanism)")
    else:
        nominal, parts = epsilon, ()
    sizes = list(range(1, s_max + 1))
    taus = {s: (task.options["tolerance"] * loss.sensitivity(data, task.radius, s)
                if _size_slack(p, s, 1, task.options) else 0.0) for s in sizes}
    found, scorers = {}, {}
    lazy = draw is not None and score == "margin" and certify == "needed" and not math.isinf(nominal)
    # size -> the best lower / upper bound on its value from the certified sizes' engines (lazy only:
    # their cuts, and their best supports' columns, OuterApproximationEngine.size_bounds)
    known_lower, known_upper = {}, {}

    def certify_size(s):
        # where the second stage reads a list, a larger certified size's best support may certify this size's
        # list (and so its best value) without an engine of its own: undersized problems are the engine's
        # hardest, and their best supports mostly lie inside the larger size's
        if s not in found and not (lazy and list_R is not None and listed_from_larger(s, list_R)):
            sups, vals, _, scorer = certified_top(dataclasses.replace(task, size=s), 1, taus[s])
            found[s] = (float(vals[0]), tuple(int(j) for j in sups[0]))
            scorers[s] = scorer
            missing = [k for k in sizes if k not in found]
            if lazy and missing and isinstance(scorer, OuterApproximationEngine):
                for k, bound in scorer.lower_bounds(missing).items():
                    known_lower[k] = max(known_lower.get(k, -math.inf), bound)
                # the smaller sizes' values along backward elimination from its best support: upper
                # bounds, and the estimates leader_needs reads
                for k, bound in scorer.smaller_sizes.estimates([k for k in missing if k < s]).items():
                    known_upper[k] = min(known_upper.get(k, math.inf), bound)

    bounded = {}  # size -> 1: bounded as far as the draw needed at the time, 2: as tightly as it goes

    def bound_size(s, need=None):
        # Before certifying size s: what the largest certified size's best support says about it
        # (OuterApproximationEngine.size_bounds), once per size and level.  ``need``: the lower bound
        # that would take s out of the contenders of the draw, all the search has to prove (level 1);
        # None: as tight as the bounds go (level 2).  True when it gave bounds.
        level = 1 if need is not None else 2
        if bounded.get(s, 0) >= level:
            return False
        bounded[s] = level
        larger = largest_engine_above(s)
        got = (scorers[larger].size_bounds([s], None if need is None else {s: need}).get(s)
               if larger is not None else None)
        if got is None:
            return False
        known_lower[s] = max(known_lower.get(s, -math.inf), got[0])
        known_upper[s] = min(known_upper.get(s, math.inf), got[1])
        return True

    def largest_engine_above(s):
        # the largest certified size above s whose scorer is the engine (it bounds and lists smaller sizes)
        return max((k for k in found if k > s and isinstance(scorers.get(k), OuterApproximationEngine)), default=None)

    def listed_from_larger(s, R):
        # the top-R list of size s certified from the largest certified size's best support
        # (OuterApproximationEngine.smaller_size_list); True when it was
        if s in found or taus[s] <= 0.0:
            return False
        larger = largest_engine_above(s)
        cert = scorers[larger].smaller_size_list(s, R, taus[s]) if larger is not None else None
        if cert is None:
            return False
        found[s] = (float(cert.values[0]), tuple(int(j) for j in cert.supports[0]))
        scorers[s] = SmallerSizeList(s, taus[s], cert, larger)
        return True

    bought = scale_epsilon > 0.0
    for s in ([s_max] if bought else []) if lazy else sizes:
        certify_size(s)
    scale = residual_scale(task, noise_sd, s_max, found[s_max][0] if s_max in found else math.nan, taus[s_max],
                           scale_epsilon)
    sigma2 = scale.sigma2
    pen1 = size_penalty(1, n, criterion, sigma2)
    deltas = size_sensitivities(data, task.radius, s_max, task.options)
    extra = 0.0
    if kappa is None and score == "margin":  # the default: an extra penalty inside the margins, no prior
        kappa, extra = 0.0, margin_extra_penalty(s_max, nominal, deltas, pen1)
    elif kappa is None:
        kappa = 0.0 if math.isinf(nominal) else max(0.0, math.log(1 / LARGER_SIZE_MASS)
                                                    - nominal * pen1 / (2.0 * delta_max))
    size_array = np.asarray(sizes, dtype=np.float64)
    log_base = -kappa * size_array
    penalties = np.asarray([size_penalty(s, n, criterion, sigma2) for s in sizes])
    index = None
    if draw is not None and score == "margin" and not math.isinf(nominal):
        gumbel = np.asarray(draw.gumbel(len(sizes)), dtype=np.float64)
        while True:
            lower, upper = value_bounds(found, taus, s_max, known_lower, known_upper)
            index, contenders = margin_draw_decided(lower + penalties + extra * size_array,
                                                    upper + penalties + extra * size_array, deltas, nominal,
                                                    log_base, gumbel, contenders=True)
            if index is not None:
                break
            # the sizes that could still win, else every size not certified
            open_sizes = [s for s in sizes if s not in found]
            chosen = [s for s in open_sizes if contenders[s - 1]] or open_sizes
            # bounds without a certificate first (where a larger certified size gives them), for every
            # size that can still win: first only as high as would take the size out of the draw, then
            # as tight as they go; then, for a size already out of the draw, as tight as they go where its
            # lower bound sets the leader's margin; a certificate only when none of these is left
            fresh = [s for s in chosen if s not in bounded]
            loose = [s for s in chosen if bounded.get(s) == 1]
            criterion_lower = lower + penalties + extra * size_array
            criterion_upper = upper + penalties + extra * size_array
            # first, where the upper bounds name a leader with room to spare: every other size bounded only
            # as high as decides the draw for it (leader_needs), whether or not it could still win now
            plan = leader_needs(criterion_lower, criterion_upper, deltas, nominal, log_base, gumbel)
            planned = [] if plan is None else [
                s for s in sizes if s not in found and s not in bounded and s - 1 != plan[0]
                and not criterion_lower[s - 1] >= plan[1][s - 1] and largest_engine_above(s) is not None]
            if planned:  # marked as bounded either way, so the plan moves on (or gives way) next time
                s = planned[0]
                bound_size(s, plan[1][s - 1] - penalties[s - 1] - extra * s)
                continue
            if fresh:
                s = fresh[0]
                # the need only where a larger certified size's engine can bound s (else no bound comes)
                need = (contender_need(s - 1, criterion_lower, criterion_upper, deltas, nominal, log_base, gumbel)
                        if largest_engine_above(s) is not None else None)
                done = bound_size(s, None if need is None else need - penalties[s - 1] - extra * s)
            elif loose:
                done = bound_size(loose[0])
            else:
                s = leader_binding(criterion_lower, criterion_upper, deltas, nominal, log_base, gumbel) + 1
                done = bounded.get(s, 0) < 2 and s not in found and bound_size(s)
            if not done:
                # the size whose bounds are widest (a size bounded to within its tolerance gains
                # little from its certificate), the smallest on ties
                width = {s: upper[s - 1] - lower[s - 1] for s in chosen}
                certify_size(max(chosen, key=lambda s: (width[s] > 2.0 * taus[s] + 1e-9 * (1.0 + abs(upper[s - 1])),
                                                        -s)))
        certify_size(sizes[index])  # the released size's scorer runs the second stage
    values = np.asarray([found[s][0] if s in found else math.nan for s in sizes])
    best = [found[s][1] if s in found else None for s in sizes]
    # what is known of the sizes left out (curator-only: size_table's objective_lower / objective_upper)
    value_lower, value_upper = value_bounds(found, taus, s_max, known_lower, known_upper)
    losses = values + penalties
    if score == "margin":  # sampled as a loss: -q(s) on L(s) + lambda s, sensitivity 1
        sampled, sensitivity = -margin_scores(losses + extra * size_array, deltas), 1.0
    else:
        sampled, sensitivity = losses, delta_max
    return dict(sizes=sizes, losses=losses, sampled=sampled, best=best, log_base=log_base, nominal=nominal,
                parts=parts, sensitivity=sensitivity, delta_max=delta_max, kappa=kappa, scorers=scorers, sigma2=sigma2,
                n=n, slack=slack, score=score, extra_penalty=extra, scale=scale, index=index,
                values=values, penalties=penalties, taus=taus, value_lower=value_lower, value_upper=value_upper)


def value_bounds(found, taus, s_max, cut_lower=None, known_upper=None):
    """(lower, upper) of each size's certified best value v(s), s = 1..s_max: the value where certified, else
    v(s) <= v(s') + tau(s) for a certified s' < s and v(s) >= v(s'') - tau(s'') for a certified s'' > s (the best
    value does not increase with s: a support's superset fits at least as well with the same ball and ridge,
    and a certified value lies within its tau above the best), else 0 <= v(s) <= inf.  Bounds that are not
    certified values are widened by 1e-9 of their size against rounding.  ``cut_lower`` (size -> bound): lower
    bounds from the certified sizes' engines (:meth:`~dpstats.bss.engine.OuterApproximationEngine.size_bounds`,
    already widened), used where they are higher; ``known_upper`` (size -> bound): upper bounds on the size's
    best value from the same (the value of a support of that size), used plus tau(s) where they are lower."""
    lower, upper = np.zeros(s_max), np.full(s_max, np.inf)
    cut_lower, known_upper = cut_lower or {}, known_upper or {}
    for s in range(1, s_max + 1):
        if s in found:
            lower[s - 1] = upper[s - 1] = found[s][0]
            continue
        below = [found[k][0] for k in found if k < s]
        above = [found[k][0] - taus[k] for k in found if k > s]
        if below:
            hi = min(below) + taus[s]
            upper[s - 1] = hi + 1e-9 * (1.0 + abs(hi))
        if above:
            lo = max(above)
            lower[s - 1] = max(0.0, lo - 1e-9 * (1.0 + abs(lo)))
        if s in cut_lower:
            lower[s - 1] = max(lower[s - 1], cut_lower[s])
        if s in known_upper:
            hi = known_upper[s] + taus[s]
            upper[s - 1] = min(upper[s - 1], hi + 1e-9 * (1.0 + abs(hi)))
    return lower, upper


def contender_need(index, lower, upper, deltas, epsilon, log_base, gumbel, steps=40):
    """The smallest lower bound on entry ``index``'s criterion value (up to a relative 1e-6) that takes it
    out of the contenders of :func:`margin_draw_decided` with the other bounds as they are, or None when
    even its upper bound would not (or it is the only one left).

    Raising one size's lower bound only lowers its own high log-weight and raises the others' low ones
    (the pair margins are differences), so "could still win" is monotone in it: a doubling search, then
    bisection.  A speed device only: the draw is decided by :func:`margin_draw_decided` on bounds that
    hold, whatever this returns."""
    lower = np.array(lower, dtype=np.float64)

    def could_win(x):
        trial = lower.copy()
        trial[index] = x
        return bool(margin_draw_decided(trial, upper, deltas, epsilon, log_base, gumbel, contenders=True)[1][index])

    low, top = float(lower[index]), float(upper[index])
    if not (math.isfinite(low) and could_win(low)):
        return None
    step = 1.0 + abs(low)
    high = low + step
    while could_win(min(high, top)):
        if high >= top or step > 1e15 * (1.0 + abs(low)):
            return None
        low, step = high, 2.0 * step
        high = low + step
    high = min(high, top)
    for _ in range(steps):
        if high - low <= 1e-6 * (1.0 + abs(high)):
            break
        middle = 0.5 * (low + high)
        if could_win(middle):
            low = middle
        else:
            high = middle
    return high + 1e-9 * (1.0 + abs(high))


#: How far above the least sufficient margin :func:`leader_needs` sets the leader's: at most this many nats of
#: log-weight (and half the estimated lead), so that rounding in the bounds cannot leave the draw undecided.
LEADER_MARGIN_NATS = 0.1


def leader_needs(lower, upper, deltas, epsilon, log_base, gumbel):
    """(w, need): the index w that wins the draw of :func:`margin_draw_decided` if every size's criterion value
    were at its upper bound, and per other index s a value such that lower bounds ``lower`` >= ``need`` decide
    the draw for w with w's upper bound as it is (``need[w]`` = -inf); None where an upper bound is infinite
    or w's estimated lead is too thin for such values.

    Why.  A size's own :func:`contender_need` is measured against the leader's worst log-weight with the
    other sizes' lower bounds as they are, which are loose before they are bounded: the leader's worst pair
    margin then drags it down, and every size has to be bounded nearly to its value.  Here the sizes are asked
    together for what decides the draw: with lower(s) >= upper(w) + Q (Delta(w) + Delta(s)) for every s != w,
    q(w) >= Q at its worst (its pair margins) and q(s) <= (upper(w) - lower(s)) / (Delta(w) + Delta(s)) <= -Q
    at its best, so w's worst log-weight eps Q / 2 + b(w) + G(w) beats every other's best -eps Q / 2 + b(s) +
    G(s) once eps Q > max over s of b(s) + G(s) - b(w) - G(w) (Q_min).  Q is set just above Q_min (at most
    LEADER_MARGIN_NATS / eps, and half the way to w's score at the upper bounds): the lower Q, the less each
    size's bound has to prove.  A speed device only, as :func:`contender_need`."""
    upper = np.asarray(upper, dtype=np.float64)
    if upper.size < 2 or not np.all(np.isfinite(upper)) or not math.isfinite(epsilon) or epsilon <= 0:
        return None
    from ..mechanisms.exponential import exponential_log_weights

    score = margin_scores(upper, deltas)
    base = np.asarray(log_base, dtype=np.float64) + np.asarray(gumbel, dtype=np.float64)
    w = int(np.argmax(exponential_log_weights(-score, epsilon, 1.0, base)))
    q_min = float(np.max(np.delete(base, w)) - base[w]) / float(epsilon)
    if not score[w] > q_min:
        return None
    margin = min(0.5 * (float(score[w]) - q_min), LEADER_MARGIN_NATS / float(epsilon))
    d = np.asarray(deltas, dtype=np.float64)[1:upper.size + 1]
    need = upper[w] + (q_min + margin) * (d[w] + d)
    need[w] = -math.inf
    return w, need


def _margin_draw_bounds(lower, upper, deltas, epsilon, log_base, gumbel):
    """(low, high, low_pair): each size's log-weight plus Gumbel at the worst and the best of its bounds, and
    the lower bounds of the pair margins (row s, column s') that set ``low``."""
    from ..mechanisms.exponential import exponential_log_weights

    d = np.asarray(deltas, dtype=np.float64)[1:lower.size + 1]
    denominator = d[:, None] + d[None, :]
    with np.errstate(invalid="ignore"):
        low_pair = (lower[None, :] - upper[:, None]) / denominator  # row s, column s'
        high_pair = (upper[None, :] - lower[:, None]) / denominator
    np.fill_diagonal(low_pair, np.inf)
    np.fill_diagonal(high_pair, np.inf)
    low = exponential_log_weights(-low_pair.min(axis=1), epsilon, 1.0, log_base) + gumbel
    high = exponential_log_weights(-high_pair.min(axis=1), epsilon, 1.0, log_base) + gumbel
    return low, high, low_pair


def leader_binding(lower, upper, deltas, epsilon, log_base, gumbel):
    """The index whose lower bound sets the leader's worst margin in :func:`margin_draw_decided` (the leader:
    the largest worst log-weight).  Only a higher lower bound there can raise the leader's; the other
    sizes' lower bounds lower their own best log-weights only."""
    low, _, low_pair = _margin_draw_bounds(lower, upper, deltas, epsilon, log_base, gumbel)
    return int(np.argmin(low_pair[int(np.argmax(low))]))


def margin_draw_decided(lower, upper, deltas, epsilon, log_base, gumbel, contenders=False):
    """The index of argmax_s (log w(s) + G(s)) of the margin stage when the criterion values' bounds
    ``lower`` <= L(s) + lambda s <= ``upper`` decide it for the drawn Gumbels ``gumbel``, else None.

    q(s) = min over s' of (L(s') - L(s)) / (Delta(s) + Delta(s')) lies within the min over s' of the pair's
    bounds; log w(s) = epsilon q(s) / 2 + log_base(s) (:func:`~dpstats.mechanisms.exponential.
    exponential_log_weights` on -q, sensitivity 1).  Where every bound is a value the result is the argmax
    itself (first index on ties), computed as the full stage computes it.

    ``contenders=True``: (index or None, a boolean per size: whether its upper bound reaches the leader's
    lower bound, i.e. whether it could still win)."""
    from ..mechanisms.exponential import exponential_log_weights

    if np.array_equal(lower, upper):
        logw = exponential_log_weights(-margin_scores(lower, deltas), epsilon, 1.0, log_base)
        index = int(np.argmax(logw + gumbel))
        return (index, np.arange(lower.size) == index) if contenders else index
    low, high, _ = _margin_draw_bounds(lower, upper, deltas, epsilon, log_base, gumbel)
    winner = int(np.argmax(low))
    others = np.delete(high, winner)
    index = winner if np.all(others < low[winner]) else None
    if not contenders:
        return index
    could_win = high >= low[winner]
    could_win[winner] = True
    return index, could_win


def size_stage_log_probabilities(stage):
    from ..mechanisms.exponential import exponential_log_probabilities

    return exponential_log_probabilities(stage["sampled"], stage["nominal"], stage["sensitivity"], stage["log_base"])


def run_two_stage(meth, task, s_max, criterion, noise_sd, kappa, share, score="criterion",
                  certify="all") -> MethodOutcome:
    """Size stage (exponential mechanism over s = 1..s_max on v(s) + pen(s), or on each size's smallest
    pairwise margin with ``score="margin"``, drawn in its Gumbel-max form with the sizes certified as
    ``certify`` says), then the method at that size."""
    from ..mechanisms.exponential import sample_exponential

    eps_scale = residual_scale_epsilon(task.epsilon, noise_sd, task.options)
    eps = task.epsilon if math.isinf(task.epsilon) else task.epsilon - eps_scale
    eps1, eps2 = (eps, eps) if math.isinf(eps) else (share * eps, eps - share * eps)
    stage = size_stage(meth, task, s_max, criterion, noise_sd, kappa, eps1, score, eps_scale,
                       draw=task.rng if score == "margin" else None, certify=certify,
                       list_R=meth.size_stage_list_length(task))
    index = stage["index"]
    if index is None:  # the criterion score, or epsilon = inf (the argmax)
        index = sample_exponential(stage["sampled"], stage["nominal"], stage["sensitivity"], task.rng,
                                   stage["log_base"])
    s_chosen = stage["sizes"][index]
    on = ("each size's smallest pairwise criterion margin, (L(s') - L(s)) / (Delta(s) + Delta(s')), sensitivity 1"
          if score == "margin" else "the best subset's criterion")
    from_scale, released_scale = stage["scale"].route({
        "penalty_per_term (mapped units)": size_penalty(1, stage["n"], criterion, stage["sigma2"]),
        "noise_sd (mapped units)": math.sqrt(stage["sigma2"]), "size_prior kappa": stage["kappa"],
        "extra penalty per term lambda (mapped units)": stage["extra_penalty"]})
    entry = LedgerEntry(
        mechanism=f"size stage: exponential mechanism over s in 1..{s_max} on {on}",
        epsilon=eps1, neighbours=REPLACE_ONE, released={"s_selected": int(s_chosen), **released_scale},
        caveats=(("best subset per size certified within tau = tolerance Delta(s); sampled with the nominal "
                  "eps / (1 + 2 tolerance)") if stage["slack"] else "best subset per size scored exactly",),
        details={"s_max": s_max, "criterion": criterion, "size_share": share, **from_scale,
                 "sensitivity (Delta at s_max)": stage["delta_max"], "nominal_epsilon": stage["nominal"],
                 "size score": score, "score sensitivity": stage["sensitivity"],
                 "ridge": task.ridge, "radius": task.radius, "loss": loss_of(task.options).label},
        parts=stage["parts"])
    task2 = dataclasses.replace(task, size=s_chosen, epsilon=eps2)
    # the method at the released size (top_r reuses the stage's certificates; mistakes runs its own guard and
    # ledger entries): SelectionMethod.run_at_size
    second = meth.run_at_size(task2, stage["scorers"][s_chosen])
    curator = dict(second.curator)
    # The method's own Conditions rows at the released size (e.g. mistakes' privacy condition with
    # guard="none"), computed before the size keys replace its best-support keys; condition_rows adds them.
    from ..conditions import condition_rows as method_condition_rows

    curator["conditions"] = method_condition_rows(meth, second.curator, p=len(task.terms), size=s_chosen,
                                                  epsilon=eps2, options=task.options)
    complete = all(b is not None for b in stage["best"])
    logp = size_stage_log_probabilities(stage) if complete else np.full(len(stage["sizes"]), np.nan)
    crit_index = criterion_index(stage)
    rows = []
    for i, s in enumerate(stage["sizes"]):
        if stage["best"][i] is None:  # not certified: its score could not win the draw; its value's bounds
            bounds = (float(stage["value_lower"][i]), float(stage["value_upper"][i]))
            rows.append(_table_row(task, s, (), math.nan, math.nan, stage["sigma2"], stage["n"], math.nan, None,
                                   bounds))
            continue
        rss = float(stage["losses"][i] - size_penalty(s, stage["n"], criterion, stage["sigma2"]))
        rows.append(_table_row(task, s, stage["best"][i], rss, float(stage["losses"][i]), stage["sigma2"],
                               stage["n"], float(np.exp(logp[i])), None))
    p_size = float(np.exp(logp[crit_index])) if complete else None
    p_best_given = curator.get("probability_best") if s_chosen == stage["sizes"][crit_index or 0] else None
    skipped = [s for s, b in zip(stage["sizes"], stage["best"]) if b is None]
    curator.update({
        "size_table": rows,
        "probability_criterion_size": p_size,
        "probability_best": None if p_best_given is None or p_size is None else p_size * p_best_given,
        "method_detail": f"size stage{' on pairwise margins' if score == 'margin' else ''} over 1..{s_max} "
                         f"({share:g} of epsilon), then {meth.name} at the chosen size"
                         + (f"; sizes {skipped} not certified (their scores could not win the draw; "
                            "size_certify='all' certifies them)" if skipped else ""),
    })
    if crit_index is None:  # the certified sizes do not decide the criterion's choice
        for key in ("best_support", "best_objective", "probability_best"):
            curator.pop(key, None)
    else:
        curator.update({
            "criterion_choice": {"s": stage["sizes"][crit_index],
                                 "support": [task.terms[j] for j in stage["best"][crit_index]],
                                 "criterion": criterion},
            "best_support": [task.terms[j] for j in stage["best"][crit_index]],
            "best_objective": rows[crit_index]["objective"]})
    if score == "margin":
        curator["privacy_condition"] = ("size stage: pairwise margin scores of sensitivity 1, each pair of sizes on "
                                        "Delta(s) + Delta(s')")
    scale = stage["scale"]
    return MethodOutcome(support=second.support,
                         entries=([scale.entry] if scale.entry is not None else []) + [entry] + list(second.entries),
                         curator=curator, released={"s_selected": int(s_chosen), **scale.released},
                         caveats=list(second.caveats))


def criterion_index(stage):
    """The index of the criterion's size (min of v(s) + pen(s), first on ties) when the certified sizes decide it,
    else None: a size not certified is bounded as in :func:`value_bounds` and must lie above the winner."""
    found = {s: (v, b) for s, v, b in zip(stage["sizes"], stage["values"], stage["best"]) if b is not None}
    lower, upper = value_bounds(found, stage["taus"], len(stage["sizes"]))
    if np.array_equal(lower, upper):
        return int(np.argmin(stage["losses"]))
    winner = int(np.argmin(np.where(np.isnan(stage["losses"]), np.inf, stage["losses"])))
    low = lower + stage["penalties"]
    return winner if np.all(np.delete(low, winner) > stage["losses"][winner]) else None


def _table_row(task, s, support, rss, criterion_value, sigma2, n, p_size, p_best, bounds=None):
    """One row of the criterion table (``regsubsets``-like); the least-squares columns are NaN for the hinge loss.
    ``bounds``: (lower, upper) on the objective of a size not certified (default: the objective itself)."""
    lower, upper = (rss, rss) if bounds is None else bounds
    used = (int(task.stats.n) if task._stats is not None or not task.data.backend.rows_in_memory
            else task.data.n_rows)
    intercept = 1 if task.data.intercept else 0
    squared = loss_of(task.options).least_squares
    return {
        "s": s,
        "best_support": [task.terms[j] for j in support],
        "objective": rss,
        "objective_lower": lower,
        "objective_upper": upper,
        "criterion": criterion_value,
        "bic_known_variance": (rss / sigma2 + s * math.log(max(n, 1)) if sigma2 > 0 else math.inf) if squared
        else math.nan,
        "cp_public_variance": (rss / sigma2 - used + 2 * (s + intercept) if sigma2 > 0 else math.inf) if squared
        else math.nan,
        "bic_leaps": (used * math.log(max(rss, 1e-300) / used) + (s + intercept) * math.log(used)
                      if used > 0 and squared else math.nan),
        "probability_size": p_size,
        "probability_best_of_size": p_best,
    }


def _curator(task, scored, sizes, groups, epsilon, delta, n, sigma2, criterion, criterion_groups=None):
    """Curator-only: the criterion table across sizes (``regsubsets``-like) and the exact law.

    ``groups`` are sampled with ``delta``; ``criterion_groups`` (default ``groups``) carry the criterion."""
    criterion_groups = groups if criterion_groups is None else criterion_groups
    logp = listed_log_probabilities(groups, epsilon, delta)
    entries = listed_entries(groups)
    by_group = {}
    for (g, k), lp in zip(entries, logp):
        by_group.setdefault(g, []).append((k, lp))
    rows = []
    for g, s in enumerate(sizes):
        supports, values = scored[s]
        probs = dict(by_group[g])
        rows.append(_table_row(task, s, supports[0], float(values[0]), float(criterion_groups[g].losses[0]), sigma2,
                               n, float(np.exp(logsumexp([lp for _, lp in by_group[g]]))),
                               float(np.exp(probs[0]))))
    best = int(np.argmin([r["criterion"] for r in rows]))
    choice = rows[best]
    # The most probable listed outputs across sizes (a tail entry is not one output).
    listed = [(lp, g, k) for (g, k), lp in zip(entries, logp) if k >= 0]
    listed.sort(key=lambda x: -x[0])
    top = [{"support": [task.terms[j] for j in scored[sizes[g]][0][k]], "s": sizes[g],
            "objective": float(scored[sizes[g]][1][k]), "probability": float(np.exp(lp))}
           for lp, g, k in listed[:TOP_SHOWN]]
    return {
        "top_supports": top,
        "size_table": rows,
        "criterion_choice": {"s": choice["s"], "support": choice["best_support"], "criterion": criterion},
        "best_support": choice["best_support"],
        "best_objective": choice["objective"],
        "probability_best": choice["probability_best_of_size"],
        "probability_criterion_size": choice["probability_size"],
        "sensitivity": delta,
        **({"sigma2_hat": choice["objective"] / max(n - choice["s"], 1)}
           if loss_of(task.options).least_squares else {}),
        "method_detail": f"joint exponential mechanism over sizes 1..{sizes[-1]} and their supports",
    }


def condition_rows(curator, epsilon):
    """Curator-only Conditions rows of ``s="auto"`` (:mod:`dpstats.conditions`)."""
    from ..conditions import RECOVERY_PROBABILITY, row

    ref = "dpstats.bss.model_size (recovery condition); Behdin, Prastakos and Mazumder (2024)"
    second_stage = list(curator.get("conditions") or ())  # two_stage: the method's rows at the released size
    if math.isinf(epsilon):
        return second_stage + [row("recovery", "epsilon = inf: the criterion's choice is returned", "n/a", "n/a", "holds", ref,
                    note="non-private answer")]
    p_best = curator.get("probability_best")
    p_size = curator["probability_criterion_size"]
    choice = curator.get("criterion_choice")
    if choice is None or p_size is None:  # sizes left uncertified (size_certify="needed"): no exact law
        what = "the criterion's choice" if choice is None else f"the criterion's size s = {choice['s']}"
        return [
            row("privacy", curator.get("privacy_condition", ""), "by construction", "n/a", "holds", ref,
                note="the public penalty and base measure do not depend on the data", required=True),
            row("recovery", f"P({what} is returned) >= {RECOVERY_PROBABILITY:g}", "n/a", RECOVERY_PROBABILITY,
                "not checkable", ref, note="sizes whose scores could not win the draw were not certified, so the "
                                           "size stage's exact law is unknown; size_certify='all' computes it"),
        ] + second_stage
    if p_best is None:  # two_stage: the method ran at another size, so P(its best | that size) is unknown
        best_row = row("recovery", f"P(the criterion's choice, s = {choice['s']} and its best support, is returned) "
                                   f">= {RECOVERY_PROBABILITY:g}", "n/a", RECOVERY_PROBABILITY, "not checkable", ref,
                       note="the size stage chose another size; the second stage's law at the criterion's size "
                            "was not computed")
    else:
        best_row = row("recovery", f"P(the criterion's choice, s = {choice['s']} and its best support, is returned) >= "
                                   f"{RECOVERY_PROBABILITY:g}", p_best, RECOVERY_PROBABILITY,
                       "holds" if p_best >= RECOVERY_PROBABILITY else "fails", ref,
                       note="exact probability given the scored lists")
    return [
        row("privacy", curator.get("privacy_condition", "criterion sensitivity uniform over sizes (Delta_max = "
                                                         "Delta(s_max))"), "by construction", "n/a",
            "holds", ref, note="the public penalty and base measure do not depend on the data", required=True),
        best_row,
        row("recovery", f"P(the criterion's size s = {choice['s']} is returned) >= {RECOVERY_PROBABILITY:g}",
            p_size, RECOVERY_PROBABILITY, "holds" if p_size >= RECOVERY_PROBABILITY else "fails", ref,
            note="exact marginal probability of the size"),
    ] + second_stage
