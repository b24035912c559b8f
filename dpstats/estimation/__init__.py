"""Private estimates after a selection: coefficients, intervals and predictions.

``fit.estimate(epsilon=...)`` on a :class:`~dpstats.results.SelectionResult` refits the
selected terms (and the intercept) on the same data with AdaSSP (least-squares
selections; ``method="adassp_residual"`` adds one residual step) or objective
perturbation (``method="objective_perturbation"``: least squares over a public ball, or
logistic regression after a hinge-loss selection) or, without any
bounds, the Tukey-depth mechanism (``method="tukey"``, (epsilon, delta)-DP), as its own
ledger entry, and returns an
:class:`~dpstats.estimation.result.EstimateResult`; ``dp_select(..., estimate=share)``
does both in one call.  One concept per module:

* :mod:`~dpstats.estimation.adassp` -- the mechanism, its sensitivities and privacy statement;
* :mod:`~dpstats.estimation.residual_step` -- AdaSSP followed by one residual step (``method="adassp_residual"``),
  its sensitivities, privacy statement and bootstrap;
* :mod:`~dpstats.estimation.objective_perturbation` -- objective perturbation, its constants and privacy statement;
* :mod:`~dpstats.estimation.op_bootstrap` -- its noisy Gram release for the intervals (squared loss);
* :mod:`~dpstats.estimation.tukey` -- the Tukey-depth mechanism (bound-free), its privacy statement;
* :mod:`~dpstats.estimation.gaussian_dp` -- exact calibration of Gaussian noise to (epsilon, delta);
* :mod:`~dpstats.estimation.bootstrap` -- AdaSSP's parametric bootstrap draws from the release;
* :mod:`~dpstats.estimation.intervals` -- intervals covering sampling, noise and the ridge's shrinkage
  (bias-corrected symmetric bootstrap; t intervals at epsilon = inf), or a plain refusal; validity after
  the selection (Zrnic and Jordan 2020);
* :mod:`~dpstats.estimation.design` -- public ranges, the refit's statistics, prediction designs;
* :mod:`~dpstats.estimation.refit` -- the order of work of ``estimate`` (checks, charge, release) and the
  per-method dispatch (``ESTIMATORS``);
* :mod:`~dpstats.estimation.follow_up` -- follow-up queries recorded on the selection's ledger; a pickled result
  leaves its selection's accountant behind;
* :mod:`~dpstats.estimation.result` -- :class:`EstimateResult`;
* :mod:`~dpstats.estimation.combined` -- ``dp_select(..., estimate=share)``.

docs/methods.md, "Estimates after selection", is the user's guide.
"""
from .refit import estimate_after_selection
from .result import EstimateResult

__all__ = ["EstimateResult", "estimate_after_selection"]
