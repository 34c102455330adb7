"""The entropy query H₂(σ(s·p))^k of River's EntropySampler, binary and on the multiclass top-2 gap."""

import functools
import itertools
import math
import warnings
from decimal import MAX_EMAX, MIN_EMIN, Decimal, localcontext

import numpy as np
import pytest

from learners import make
from learners.base import Learner
from learners.budget import BudgetController
from learners.datasets import Dataset
from learners.inputs import as_rows
from learners.queries import EntropyQuery, GapEntropyQuery
from learners.replay import find_budget, replay, run
from learners.rules import PARule
from learners.synthetic import synthetic_sparse
from learners.values import Scores

# 0, the smallest margins, moderate ones, the edge of float64's exp and far beyond it
GRID = np.array([0.0, 1e-12, -1e-12, 0.1, -0.5, 1.0, -2.0, 5.0, -30.0, 700.0, -700.0, 1e6, -1e6])
DISCOUNTS = [0.25, 1.0, 3.0, 10.0]
RIVER = {"min_probability": 0.0}  # River's rule, without the floor


def sigma(x: float) -> float:
    """σ(x) = 1/(1 + e^{−x}), evaluated on the side where e^{−|x|} cannot overflow."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    return math.exp(x) / (1.0 + math.exp(x))


def transcription(x: float, k: float) -> float:
    """(−Σ_q q log₂ q / log₂ #{q > 0})^k over q ∈ {σ(x), σ(−x)} = {σ, 1 − σ}, as written, in float64."""
    probs = [q for q in (sigma(x), sigma(-x)) if q > 0]
    entropy = -sum(q * math.log2(q) for q in probs)
    if entropy == 0.0:
        return 0.0
    return (entropy / math.log2(len(probs))) ** k


@functools.cache
def exact_entropy(a: float) -> Decimal:
    """H₂(σ(a)) = −Σ_q q log₂ q over q ∈ {σ(a), σ(−a)} in decimal arithmetic: the reference the float
    versions approximate.

    The precision keeps σ(a) apart from 1 (e^{−a} has a/ln 10 leading zeros) up to a = 4600; beyond,
    H^k is below float64's smallest number for every discount the tests use, and 80 digits will do."""
    with localcontext() as ctx:
        ctx.prec = 80 + (math.ceil(a / math.log(10)) if a <= 4600 else 0)
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        one = Decimal(1)
        probs = [one / (one + (-Decimal(a)).exp()), one / (one + Decimal(a).exp())]
        return -sum(q * q.ln() for q in probs) / Decimal(2).ln()


def exact(x: float, k: float) -> float:
    with localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = 80, MAX_EMAX, MIN_EMIN
        return float(exact_entropy(abs(x)) ** Decimal(k))


# A float64 σ near 1 carries an absolute error of an ulp of 1, which −σ log₂ σ turns into an error
# of ~1e-16 in the entropy (relative 1e-4 at |x| = 30): the written-out formula and River are held
# to that, on the entropy H = Pr^(1/k); the kernel (log1p of e^{−|x|}) to the exact value.
FLOAT_ENTROPY_ERROR = 1e-15


def assert_same_entropy(got, want, k):
    np.testing.assert_allclose(np.power(got, 1.0 / k), np.power(want, 1.0 / k), rtol=1e-12, atol=FLOAT_ENTROPY_ERROR)


@pytest.mark.parametrize("margin_scale", [1.0, 0.25, 4.0])
@pytest.mark.parametrize("discount", DISCOUNTS)
def test_entropy_probability_equals_the_exact_formula(discount, margin_scale):
    got = EntropyQuery(discount=discount, margin_scale=margin_scale, **RIVER).probability(Scores(p=GRID))
    want = [exact(margin_scale * x, discount) for x in GRID]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0.0)


@pytest.mark.parametrize("margin_scale", [1.0, 0.25, 4.0])
@pytest.mark.parametrize("discount", DISCOUNTS)
def test_entropy_probability_equals_the_formula_written_out(discount, margin_scale):
    got = EntropyQuery(discount=discount, margin_scale=margin_scale, **RIVER).probability(Scores(p=GRID))
    want = [transcription(margin_scale * x, discount) for x in GRID]
    assert_same_entropy(got, want, discount)


@pytest.mark.parametrize("discount", DISCOUNTS)
def test_entropy_probability_equals_river_entropy_sampler(discount):
    river = pytest.importorskip("river.active")
    sampler = river.EntropySampler(classifier=None, discount_factor=discount)
    got = EntropyQuery(discount=discount, **RIVER).probability(Scores(p=GRID))
    # σ(−x) is 1 − σ(x) without the cancellation of computing 1 − σ in floating point
    want = [sampler._p({-1: sigma(-x), 1: sigma(x)}) for x in GRID]
    assert_same_entropy(got, want, discount)


def test_entropy_probability_at_zero_margin_is_one_and_far_margins_give_zero_without_warnings():
    q = EntropyQuery(discount=3.0, **RIVER)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = q.probability(Scores(p=np.array([0.0, -0.0, 1e-300, 745.0, 1e6, -1e300, np.inf, -np.inf])))
    assert got[:3].tolist() == [1.0, 1.0, 1.0]
    assert got[3:].tolist() == [0.0] * 5


def test_entropy_probability_is_symmetric_in_the_sign_of_the_margin():
    q = EntropyQuery(discount=2.0)
    np.testing.assert_array_equal(q.probability(Scores(p=GRID)), q.probability(Scores(p=-GRID)))


def test_entropy_probability_falls_as_the_discount_grows():
    p = np.concatenate([GRID, np.linspace(-20, 20, 81)])
    discounts = 2.0 ** np.arange(-12, 13)
    probs = np.array([EntropyQuery(discount=k, **RIVER).probability(Scores(p=p)) for k in discounts])
    assert np.all(np.diff(probs, axis=0) <= 0)
    assert np.all((probs >= 0) & (probs <= 1))
    assert np.all(probs[:, p == 0] == 1.0)  # a tie is asked for at every discount


def test_entropy_probability_falls_as_the_margin_grows():
    margins = np.concatenate([[0.0, 1e-12], np.geomspace(1e-6, 800, 200)])
    for k in DISCOUNTS:
        probs = EntropyQuery(discount=k, **RIVER).probability(Scores(p=margins))
        assert np.all(np.diff(probs) <= 0)


def test_entropy_probability_decays_exponentially_where_the_margin_rule_decays_like_one_over_p():
    q = EntropyQuery(discount=1.0, **RIVER)
    far = q.probability(Scores(p=np.array([10.0, 20.0])))
    # H₂(σ(x)) ≈ (x + 1) e^{−x} / ln 2 for large x
    np.testing.assert_allclose(far, [(x + 1) * math.exp(-x) / math.log(2) for x in (10.0, 20.0)], rtol=1e-3)


def test_gap_entropy_reads_the_gap_not_the_top_score():
    s = Scores(p=np.array([100.0, -3.0, 0.0]), gap=np.array([1.0, 1.0, 0.0]))
    got = GapEntropyQuery(discount=1.0, **RIVER).probability(s)
    assert got[0] == got[1] == pytest.approx(transcription(1.0, 1.0)) and got[2] == 1.0


def test_gap_entropy_of_two_classes_equals_the_binary_query():
    margins = np.array([-2.0, -0.1, 0.0, 0.3, 5.0, 900.0])
    gap = GapEntropyQuery(discount=2.0, margin_scale=0.5).probability(Scores(p=margins, gap=np.abs(margins)))
    np.testing.assert_array_equal(gap, EntropyQuery(discount=2.0, margin_scale=0.5).probability(Scores(p=margins)))


def test_gap_entropy_of_a_one_class_model_is_zero_not_nan():
    got = GapEntropyQuery(**RIVER).probability(Scores(p=np.zeros(1), gap=np.array([np.inf])))
    assert got.tolist() == [0.0]


def test_gap_entropy_query_on_a_binary_rule_is_refused():
    with pytest.raises(ValueError, match=r"GapEntropyQuery needs \['gap'\]; PARule provides \['p'\]"):
        Learner(PARule(), GapEntropyQuery())


@pytest.mark.parametrize("min_probability", [1e-3, 0.01, 0.2])
@pytest.mark.parametrize("query", [EntropyQuery, GapEntropyQuery])
def test_the_floor_lifts_only_the_probabilities_below_it(query, min_probability):
    """max(q_min, H₂(σ(s·x))^k), written out: where the exact value is above the floor it is kept."""
    gaps = np.abs(GRID)
    scores = Scores(p=GRID, gap=gaps)
    got = query(discount=3.0, min_probability=min_probability).probability(scores)
    want = [max(min_probability, exact(x, 3.0)) for x in (GRID if query is EntropyQuery else gaps)]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0.0)
    assert got.min() == min_probability and (got > min_probability).any()


def test_with_a_floor_the_probability_still_falls_as_the_discount_grows():
    scores = Scores(p=GRID)
    q = [EntropyQuery(discount=k, min_probability=0.01).probability(scores) for k in (0.25, 1.0, 3.0, 10.0, 100.0)]
    assert all((a >= b).all() for a, b in itertools.pairwise(q))
    assert (q[-1] == 0.01).sum() > (q[0] == 0.01).sum()


@pytest.mark.parametrize("params", [{"discount": 0.0}, {"discount": -1.0}, {"discount": math.inf},
                                    {"margin_scale": 0.0}, {"margin_scale": math.nan}, {"min_probability": 1.0},
                                    {"min_probability": -0.1}])
def test_entropy_query_rejects_bad_parameters(params):
    with pytest.raises(ValueError):
        EntropyQuery(**params)


def test_entropy_query_knob_is_the_discount_and_asks_less_as_it_grows():
    knob = EntropyQuery.knob
    assert (knob.name, knob.index, knob.increasing) == ("discount", 0, False)
    assert EntropyQuery.budget_param == "discount"


@pytest.mark.parametrize("target", [0.2, 0.4])
def test_find_budget_lands_the_query_ratio_with_the_entropy_query(target):
    data = synthetic_sparse(n=4000, d=1024, seed=3)
    learner, result = find_budget(make("paa-1-entropy", n_features=1024), data, target, permutations=3, tol=0.005)
    assert abs(result.mean("query_ratio") - target) <= 0.005
    assert learner.query.discount == result.params["discount"]


def test_budget_controller_holds_ten_percent_with_the_entropy_query():
    learner = make("paa-1-entropy", n_features=1024)
    learner.budget = BudgetController(target=0.1)
    result = run(learner, synthetic_sparse(n=20000, d=1024, seed=3), permutations=2, delay=100)
    assert abs(result.mean("query_ratio") - 0.1) <= 0.01
    assert max(result.window_ratios) <= 0.2


@pytest.mark.parametrize("name", ["paa-1-entropy", "soal-entropy", "mpaa-1-entropy"])
def test_entropy_registry_entry_builds_and_learns_from_a_replay(name):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 8))
    multiclass = name.startswith("m")
    y = np.argmax(X @ rng.standard_normal((8, 3)), axis=1) if multiclass else np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    learner = make(name, n_features=8, classes=[0, 1, 2] if multiclass else None)
    trace = replay(learner, Dataset(as_rows(X), y))
    first, last = trace.probability[:300].mean(), trace.probability[-300:].mean()
    assert trace.updates > 0 and 0 < trace.queried.mean() < 1
    assert last < 0.5 * first  # a model that has learnt is sure of more records and asks less
    assert trace.metrics(learner).accuracy > 0.8
