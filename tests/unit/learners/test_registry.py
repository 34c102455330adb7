"""The registry: names, aliases, defaults, refusals."""

import pytest

from learners import ALGORITHMS, PAPER_PROTOCOL, make
from learners.queries import FixedRateQuery, MarginQuery
from learners.registry import canonical_name
from learners.rules import PARule, PerceptronRule

ISSUE_NAMES = ["pe", "pa", "pa-1", "pa-2", "rpe", "rpa", "rpa-1", "rpa-2", "pea", "sel-ada", "paa", "paa-1", "paa-2"]


def test_registry_holds_the_first_order_family():
    assert set(ISSUE_NAMES) <= set(ALGORITHMS)
    for name in ALGORITHMS:
        assert ALGORITHMS[name].cite


@pytest.mark.parametrize("spelling, name", [
    ("PAA-I", "paa-1"), ("PAA-II", "paa-2"), ("RPA-I", "rpa-1"), ("PA-II", "pa-2"),
    ("LEPE", "pea"), ("SELada", "sel-ada"), ("SEL-ada", "sel-ada"), (" paa_1 ", "paa-1"),
])
def test_paper_spellings_are_aliases(spelling, name):
    assert canonical_name(spelling) == name
    assert make(spelling).name == name


def test_grid_of_rules_and_queries():
    assert isinstance(make("paa-1").rule, PARule) and isinstance(make("paa-1").query, MarginQuery)
    assert make("paa-1").rule.mode == 1 and make("paa-2").rule.mode == 2 and make("paa").rule.mode == 0
    assert isinstance(make("rpe").rule, PerceptronRule) and isinstance(make("rpe").query, FixedRateQuery)


def test_unknown_name_suggests_close_matches():
    with pytest.raises(ValueError, match="did you mean 'paa-2'"):
        make("paa-22")


def test_unknown_parameter_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"takes no parameter gamma \(it takes: .*C.*delta"):
        make("paa-1", gamma=1.0)


def test_parameter_that_defines_the_algorithm_is_refused():
    with pytest.raises(ValueError, match="defines 'paa-1'"):
        make("paa-1", mode=2)


def test_query_that_needs_a_term_the_rule_lacks_is_refused():
    from learners.base import Learner, QueryStrategy
    from learners.queries.margin import margin_probability

    class NeedsV(QueryStrategy):
        requires = frozenset({"v"})
        probability_kernel = margin_probability

        def __init__(self):
            self._setup()

    with pytest.raises(ValueError, match=r"NeedsV needs \['v'\]; PARule provides \['p'\]"):
        Learner(PARule(), NeedsV())


def test_paper_protocol_is_a_set_of_parameters():
    learner = make("paa-1", **PAPER_PROTOCOL)
    assert learner.bias == 0.0 and learner.normalize is True


def test_paper_protocol_sets_the_query_offset_only_where_the_query_takes_it():
    from learners.registry import PAPER_PROTOCOL, paper_protocol

    assert paper_protocol("PAA-I") == {**PAPER_PROTOCOL, "offset": 0.0}
    assert paper_protocol("rpa-1") == PAPER_PROTOCOL and paper_protocol("sel-ada") == PAPER_PROTOCOL
    for name in ("paa-2", "rpe", "sel-ada", "pea"):
        learner = make(name, **paper_protocol(name))
        assert learner.bias == 0.0 and learner.normalize


@pytest.mark.parametrize("spelling, name", [
    ("LASEC-SS", "lasec-ss"), ("BBQ-I", "bbq-i"), ("BBQ", "bbq"), ("Perceptron-SS", "pea"),
    ("Shifting Perceptron", "shifting-perceptron"), ("KAPA", "kapa"), ("kpa-I", "kpa-1"),
])
def test_make_accepts_the_drift_and_kernel_papers_spellings(spelling, name):
    assert make(spelling).name == name


MULTICLASS = ["mpe", "mpa", "mpa-1", "mpa-2", "mrpe", "mrpa", "mrpa-1", "mrpa-2", "mpea", "mpaa", "mpaa-1", "mpaa-2"]
COST_SENSITIVE = ["paum", "cpa", "csrnd", "cspaa-sum", "cspaa-cost", "cspaa-a"]


def test_registry_holds_the_multiclass_and_cost_sensitive_families():
    from learners.queries import DecayingMarginQuery, GapQuery
    from learners.rules import CSPARule, MaxScorePerceptronRule, MPARule

    assert set(MULTICLASS + COST_SENSITIVE) <= set(ALGORITHMS)
    assert all(ALGORITHMS[n].rule.multiclass for n in MULTICLASS)
    assert not any(ALGORITHMS[n].rule.multiclass for n in COST_SENSITIVE)
    assert ALGORITHMS["mpaa-2"].rule is MPARule and ALGORITHMS["mpaa-2"].query is GapQuery
    assert ALGORITHMS["mpea"].rule is MaxScorePerceptronRule and ALGORITHMS["mpea"].query is GapQuery
    assert ALGORITHMS["mrpa-1"].query is FixedRateQuery and ALGORITHMS["csrnd"].query is FixedRateQuery
    assert ALGORITHMS["cspaa-a"].rule is CSPARule and ALGORITHMS["cspaa-a"].query is DecayingMarginQuery
    assert make("cspaa-a").query.delta == 2.0**14


@pytest.mark.parametrize("spelling, name", [
    ("MPAA-I", "mpaa-1"), ("MPAA-II", "mpaa-2"), ("MRPA-I", "mrpa-1"), ("MPEA", "mpea"), ("MRPE", "mrpe"),
    ("CSPAA_sum", "cspaa-sum"), ("CSPAA_cos", "cspaa-cost"), ("CSPAA(a)", "cspaa-a"), ("CSRND", "csrnd"),
    ("PAUM", "paum"), ("CPA", "cpa"),
])
def test_multiclass_and_cost_sensitive_paper_spellings(spelling, name):
    assert canonical_name(spelling) == name


def test_gap_query_needs_a_multiclass_rule():
    from learners.base import Learner
    from learners.queries import GapQuery

    with pytest.raises(ValueError, match="GapQuery needs"):
        Learner(PARule(), GapQuery())


def test_the_default_learners_are_registered_binary_and_multiclass():
    from learners.registry import DEFAULT_LEARNERS, default_learner

    assert default_learner(2, 100) == DEFAULT_LEARNERS["binary"]
    assert default_learner(5) == DEFAULT_LEARNERS["multiclass"] == default_learner(5, 100)
    assert default_learner(2) == DEFAULT_LEARNERS["binary, wide rows"] == default_learner(2, 2**20)
    assert set(DEFAULT_LEARNERS.values()) <= set(ALGORITHMS)
    assert not make(default_learner(2, 100)).multiclass and not make(default_learner(2)).multiclass
    assert make(default_learner(3), classes=[0, 1, 2]).multiclass


def test_the_binary_default_maps_rows_exactly_as_wide_as_its_omega_is_made_whole():
    from learners.defaults import KERNEL_MAX_FEATURES
    from learners.registry import DEFAULT_LEARNERS, default_learner

    assert (default_learner(2, KERNEL_MAX_FEATURES), default_learner(2, KERNEL_MAX_FEATURES + 1)) == (
        DEFAULT_LEARNERS["binary"], DEFAULT_LEARNERS["binary, wide rows"])
    # the rows of Ω the map keeps: the input coordinates and the lift's
    assert make(DEFAULT_LEARNERS["binary"], n_features=KERNEL_MAX_FEATURES)._features._room() == KERNEL_MAX_FEATURES + 1

