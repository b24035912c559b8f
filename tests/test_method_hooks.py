"""A method brings its own sign policy, Conditions table, verdict and planning (#27 item 5).

A method registered with :func:`dpstats.methods.register_method` that declares them shows
them in ``fit.curator["conditions"]``, ``curator_report()``, the sign step and
``dpstats.plan``; one that declares none shows the defaults documented on
:class:`dpstats.methods.SelectionMethod`.  The methods here read no data (they pick
public terms), so they need no privacy statement of their own.
"""
import math

import numpy as np
import pytest

import dpstats
from dpstats import api, conditions
from dpstats.method_options import Custom
from dpstats.methods import (MethodOutcome, SelectionMethod, SignPolicy, get_method, register_method,
                             registered_methods)
from dpstats.privacy.ledger import LedgerEntry
from conftest import make_regression


def _pick_terms(value):
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise dpstats.InvalidArgumentError("option pick must be a list of term names.")
    return list(value)


class PickTerms(SelectionMethod):
    """Returns the terms named by its option (reads no data); declares nothing optional."""

    name = "pick_terms_plain"
    title = "the named terms (a test method)"
    size_argument = "s"
    uses = ()
    options = (Custom("pick", default=(), check_value=_pick_terms, accepted="a list of term names"),)

    def run(self, task):
        chosen = sorted(task.terms.index(t) for t in task.options["pick"][:task.size])
        entry = LedgerEntry("constant choice (reads no data)", 0.0,
                            released={"support": [task.terms[j] for j in chosen]})
        listed = [{"support": [task.terms[j] for j in chosen], "objective": 0.0, "probability": 1.0}]
        return MethodOutcome(support=np.array(chosen, dtype=np.int64), entries=[entry],
                             curator={"top_supports": listed})


class PickTermsWithHooks(PickTerms):
    """The same choice, with its own conditions, verdict, sign policy and planning."""

    name = "pick_terms_hooks"
    uses = ("bounds", "radius", "ridge")
    sign_policy = SignPolicy(block_fit="least_squares")

    def condition_rows(self, curator, ctx):
        return [conditions.row(conditions.RECOVERY, "the named terms are the true ones", f"p = {ctx.p}",
                               "public knowledge", conditions.HOLDS, "the test's own reference")]

    def recovery_probability(self, curator, p, size):
        return 1.0, "the named terms", "by construction", conditions.uniform_subset(p, size)

    def planning_kind(self, p, s, options, auto_size=False):
        return "exact"


class NativeSigns(PickTerms):
    name = "pick_terms_native"
    sign_policy = SignPolicy(native=True)

    def run(self, task):
        outcome = super().run(task)
        outcome.signs = np.ones(len(task.terms), dtype=np.int64)
        return outcome


@pytest.fixture
def registered():
    methods = [PickTerms(), PickTermsWithHooks(), NativeSigns()]
    for m in methods:
        register_method(m, replace=True)
    yield {m.name: m for m in methods}
    from dpstats import methods as registry
    for m in methods:
        registry._REGISTERED.pop(m.name, None)


def _fit(method, **kw):
    args = dict(method=method, epsilon=1.0, s=2, pick=["x1", "x3"], random_state=0)
    if "bounds" in get_method(method).uses:
        args["bounds"] = (3, 3)
    args.update(kw)
    return dpstats.dp_select("y ~ .", make_regression(n=80), **args)


def test_a_method_without_hooks_shows_the_documented_defaults(registered):
    fit = _fit("pick_terms_plain", signs=False)
    assert fit.support == ["x1", "x3"]
    (only,) = fit.curator["conditions"]
    assert only["verdict"] == conditions.NOT_CHECKABLE and only["measured"] == "no sufficient conditions declared"
    assert "pick_terms_plain" in only["note"]
    report = " ".join(str(fit.curator_report()).split())
    assert "the non-private answer is not computed for this call" in report
    assert "Conditions (curator only)" in report and "not checkable" in report
    # Signs: the shared step; a method that uses neither ridge nor radius fits plain least squares.
    assert registered["pick_terms_plain"].sign_step() == SignPolicy(block_fit="least_squares")
    # Planning: empirical hits.
    plan = dpstats.plan(method="pick_terms_plain", n=60, p=6, s=2, epsilon=1.0, reps=2, random_state=0,
                        pick=["x1", "x3"])
    assert plan.computed == "empirical" and plan.table["computed"].tolist() == ["empirical"]
    assert plan.probability == 1.0


def test_a_method_with_hooks_shows_its_own(registered):
    fit = _fit("pick_terms_hooks", signs=False)
    (only,) = fit.curator["conditions"]
    assert (only["condition"], only["verdict"], only["measured"]) == (
        "the named terms are the true ones", conditions.HOLDS, "p = 6")
    report = " ".join(str(fit.curator_report()).split())
    assert "returns the named terms with probability 1 (by construction)" in report
    plan = dpstats.plan(method="pick_terms_hooks", n=60, p=6, s=2, epsilon=1.0, reps=2, random_state=0,
                        pick=["x1", "x3"], bounds=(3, 3))
    assert plan.computed == "exact" and plan.table["computed"].tolist() == ["exact"]
    assert plan.probability == 1.0  # the listed probability of the true support x1, x3


@pytest.mark.parametrize("policy, expected", [
    (SignPolicy(block_fit="least_squares"), (0.0, math.inf)),
    (SignPolicy(block_fit="selection"), (0.5, 2.0)),
])
def test_the_sign_step_follows_the_declared_policy(registered, monkeypatch, policy, expected):
    seen = []
    real = api.block_sign_votes

    def spy(design, y, columns, report, ridge, radius, *args, **kwargs):
        seen.append((ridge, radius))
        return real(design, y, columns, report, ridge, radius, *args, **kwargs)

    monkeypatch.setattr(api, "block_sign_votes", spy)
    monkeypatch.setattr(registered["pick_terms_hooks"], "sign_policy", policy)
    fit = _fit("pick_terms_hooks", radius=2.0, ridge=0.5)
    assert seen == [expected]
    assert fit.signs_private and fit.signs[["x1", "x3"]].notna().all()


def test_native_signs_skip_the_sign_step_and_refuse_signs(registered):
    fit = _fit("pick_terms_native")
    assert fit.signs.tolist() == [1] * 6
    assert "signs_share" not in fit.release()["call"]
    with pytest.raises(dpstats.InvalidArgumentError, match="computes its signs"):
        _fit("pick_terms_native", signs=False)


def test_register_method_refuses_a_policy_of_the_wrong_type():
    bad = PickTerms()
    bad.name = "pick_terms_bad_policy"
    bad.sign_policy = ("native",)
    with pytest.raises(dpstats.InvalidTypeError, match="sign_policy"):
        register_method(bad)
    with pytest.raises(dpstats.InvalidArgumentError, match="block_fit"):
        SignPolicy(block_fit="ridge")


def test_every_built_in_method_declares_its_hooks():
    """A built-in method is one class: none relies on the defaults meant for user methods."""
    for name in registered_methods():
        meth = type(get_method(name))
        assert meth.sign_policy is not None, name
        assert meth.condition_rows is not SelectionMethod.condition_rows, name
        assert meth.recovery_probability is not SelectionMethod.recovery_probability, name
    exact = [n for n in registered_methods()
             if type(get_method(n)).planning_kind is not SelectionMethod.planning_kind]
    assert exact == ["exponential", "top_r"]


def test_built_in_sign_policies_keep_the_previous_rule():
    """Before the policies were declared, the sign step fitted plain least squares per block for
    the screening methods (size argument k) and the call's ridge and radius otherwise.  The
    gradient methods (frank_wolfe, peeling) and kendall_forward select with s but use neither ridge nor
    radius: plain least squares, like the screening methods."""
    for name in registered_methods():
        meth = get_method(name)
        policy = meth.sign_step()
        # bh, bh_ols (new): the signs of their released noisy statistics, native (their releases have a
        # variable size)
        assert policy.native == (name in ("dpvote", "bh", "bh_ols")), name
        if not policy.native:
            plain = meth.size_argument == "k" or name in ("frank_wolfe", "peeling", "kendall_forward")
            assert policy.block_fit == ("least_squares" if plain else "selection"), name


def test_planning_names_no_method():
    """plan reads each method through its hooks (planning_kind, truth_probability, planning_regime): no
    comparison or membership test in dpstats/planning.py names a built-in method, so a new method plans
    without editing it (issue 45, item 3)."""
    import ast
    import inspect

    from dpstats import planning

    names = set(registered_methods())
    tree = ast.parse(inspect.getsource(planning))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for part in [node.left, *node.comparators]:
                for const in ast.walk(part):
                    if isinstance(const, ast.Constant) and const.value in names:
                        found.append((node.lineno, const.value))
    assert found == []


def _name_literals(module, names):
    """(line, value) of every string literal of ``module`` equal to one of ``names``: in a comparison, a
    membership test, a tuple or dict of names, a default such as ``options.get("loss", "squared")``, anywhere
    (docstrings and messages mention names inside longer strings, which are not equal to a name)."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(module))
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names)


def test_model_size_names_no_method_and_no_loss():
    """s="auto" / k="auto" read each method through its declarations (auto_size_kind, auto_size_refusal,
    default_size_mechanism, refused_size_mechanisms, auto_size_enumerates, check_auto_size, run_at_size) and
    each loss through its attributes (size_criterion_variance, least_squares): dpstats/bss/model_size.py holds
    no method's or loss's name, so a new method or loss needs no edit there (issue 45, item 3)."""
    from dpstats.bss import model_size
    from dpstats.bss.losses import LOSSES

    assert _name_literals(model_size, set(registered_methods())) == []
    assert _name_literals(model_size, set(LOSSES)) == []


def test_api_and_the_intercept_step_name_no_method_and_no_loss():
    """dp_select's stages and the intercept step read methods and losses through their declarations
    (uses, least_squares): no method's or loss's name in api.py or bss/intercept.py."""
    from dpstats import api
    from dpstats.bss import intercept
    from dpstats.bss.losses import LOSSES

    for module in (api, intercept):
        assert _name_literals(module, set(registered_methods()) | set(LOSSES)) == [], module.__name__


def test_planning_names_no_loss():
    """plan reads the loss through its attributes (least_squares: the intercept's private means apply)."""
    from dpstats import planning
    from dpstats.bss.losses import LOSSES

    assert _name_literals(planning, set(LOSSES)) == []


# ---------------------------------------------------------------- s="auto" declared by a registered method
from dpstats.bss.exhaustive import ExponentialMethod  # noqa: E402


class EnumeratesNoAuto(ExponentialMethod):
    """The exponential mechanism under another name, declaring no s="auto" (the SelectionMethod defaults)."""

    name = "enumerates_no_auto"
    auto_size_kind = None
    default_size_mechanism = SelectionMethod.default_size_mechanism
    auto_size_enumerates = False

    def check_auto_size(self, p, s_max, options):
        pass


class EnumeratesWithAuto(EnumeratesNoAuto):
    """The same method declaring s="auto": sizes scored by enumeration, two stages by default, no GEM."""

    name = "enumerates_with_auto"
    auto_size_kind = "best_subset"
    auto_size_enumerates = True
    default_size_mechanism = "two_stage"
    refused_size_mechanisms = ("generalized",)
    refused_size_mechanism_message = "enumerates_with_auto: no generalised mechanism (a test method)."


class ScreensWithAuto(EnumeratesNoAuto):
    name = "screens_with_auto"
    auto_size_refusal = "a test method refuses it"


@pytest.fixture
def auto_methods():
    methods = [EnumeratesNoAuto(), EnumeratesWithAuto(), ScreensWithAuto()]
    for m in methods:
        register_method(m, replace=True)
    yield {m.name: m for m in methods}
    from dpstats import methods as registry
    for m in methods:
        registry._REGISTERED.pop(m.name, None)


def test_a_registered_method_declares_its_s_auto(auto_methods):
    """s="auto" comes from the method's declarations alone: model_size.py is not edited for it."""
    data = make_regression(n=80, p=6, s=2, seed=5)
    kwargs = dict(epsilon=2.0, s="auto", s_max=3, bounds=(4, 4), random_state=3)
    with pytest.raises(dpstats.InvalidArgumentError,
                       match=r"s='auto' is not available for method 'enumerates_no_auto' \(s='auto' is available for "
                             r"exponential, top_r, mistakes, kendall_forward, enumerates_with_auto, and k='auto' for "
                             r"dp_sis.*\): give s="):
        dpstats.dp_select("y ~ .", data, method="enumerates_no_auto", **kwargs)
    with pytest.raises(dpstats.InvalidArgumentError,
                       match="s='auto' is not available for method 'screens_with_auto': a test method refuses it. "
                             "Give s= as a positive integer."):
        dpstats.dp_select("y ~ .", data, method="screens_with_auto", **kwargs)
    with pytest.raises(dpstats.InvalidArgumentError, match="no generalised mechanism"):
        dpstats.dp_select("y ~ .", data, method="enumerates_with_auto", size_mechanism="generalized", **kwargs)
    # Its declared default mechanism (two_stage) and the joint one give the exponential method's releases.
    for mine, reference in [({}, {"size_mechanism": "two_stage"}),
                            ({"size_mechanism": "joint"}, {"size_mechanism": "joint"})]:
        fit = dpstats.dp_select("y ~ .", data, method="enumerates_with_auto", **kwargs, **mine)
        ref = dpstats.dp_select("y ~ .", data, method="exponential", **kwargs, **reference)
        assert fit.support == ref.support
        assert fit.release()["s_selected"] == ref.release()["s_selected"]
        assert [e.epsilon for e in fit.ledger.entries] == [e.epsilon for e in ref.ledger.entries]
        assert [e.mechanism.replace("enumerates_with_auto", "exponential") for e in fit.ledger.entries] == [
            e.mechanism for e in ref.ledger.entries]
    # max_enumerate is the method's own check_auto_size: this one declares none, so it is not refused.
    fit = dpstats.dp_select("y ~ .", data, method="enumerates_with_auto", max_enumerate=20, **kwargs)
    assert fit.release()["s_selected"] == len(fit.support)


def test_built_in_auto_size_declarations_keep_the_previous_rule():
    """The declarations reproduce the former name switches of model_size.py: s="auto" for exponential (joint by
    default, every support enumerated), top_r and mistakes (margin by default; mistakes in two stages only);
    k="auto" for dp_sis; kendall and samp_agg refuse it with their reasons; kendall_forward chooses its size in
    its own rounds ("own"); the others need an integer size."""
    expected = {"exponential": "best_subset", "top_r": "best_subset", "mistakes": "best_subset",
                "dp_sis": "screening", "mcmc": None, "kendall": None, "samp_agg": None, "dpvote": None,
                "frank_wolfe": None, "peeling": None, "kendall_forward": "own"}
    for name, kind in expected.items():
        meth = get_method(name)
        assert meth.auto_size_kind == kind, name
        assert (meth.auto_size_refusal is not None) == (name in ("kendall", "samp_agg")), name
        assert meth.default_size_mechanism == ("joint" if name == "exponential" else "margin"), name
        assert meth.auto_size_enumerates == (name == "exponential"), name
        assert meth.refused_size_mechanisms == (("joint", "generalized") if name == "mistakes" else ()), name
    assert type(get_method("top_r")).run_at_size is not SelectionMethod.run_at_size
    assert type(get_method("exponential")).check_auto_size is not SelectionMethod.check_auto_size
