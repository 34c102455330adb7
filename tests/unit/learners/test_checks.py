"""The generic check suite, run on every registry entry, without and with online scaling."""

import pytest

from learners import ALGORITHMS
from learners.checks import CHECKS
from learners.registry import LEARNER_DEFAULTS

# entries whose rule can move its state when a feature's scale changes (the others refuse scaling)
SCALABLE = sorted(name for name, spec in ALGORITHMS.items() if spec.scalable)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_registry_entry_passes_check(name, check):
    check(name)


# The sparse path of the scaled drivers on every scalable entry (rms; maxabs differs only in its
# statistic, tested in test_scaling.py) ...
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("name", SCALABLE)
def test_registry_entry_with_scaling_passes_check(name, check, monkeypatch):
    monkeypatch.setitem(LEARNER_DEFAULTS, "scale", "rms")
    check(name)


# ... and the dense path ("standard") on one entry per rule and fixed parameters: the path differs
# from the sparse one only in the rows it hands to the rule's own kernels, which the entry selects
DENSE = sorted({(spec.rule.__name__, tuple(sorted(spec.fixed.items()))): name
                for name, spec in reversed(sorted(ALGORITHMS.items())) if name in SCALABLE}.values())


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("name", DENSE)
def test_registry_entry_with_standardisation_passes_check(name, check, monkeypatch):
    monkeypatch.setitem(LEARNER_DEFAULTS, "scale", "standard")
    check(name)
