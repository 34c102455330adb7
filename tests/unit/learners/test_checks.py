"""The generic check suite, run on every registry entry, without and with online scaling."""

import pytest

from learners import ALGORITHMS
from learners.checks import CHECKS
from learners.registry import LEARNER_DEFAULTS

# entries whose rule can move its state when a feature's scale changes (the others refuse scaling)
SCALABLE = sorted(name for name, spec in ALGORITHMS.items() if spec.rule.scaling is not None)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_registry_entry_passes_check(name, check):
    check(name)


# one mode per code path of the scaled drivers: sparse (rms; maxabs differs only in its statistic,
# tested in test_scaling.py) and dense (standard)
@pytest.mark.parametrize("scale", ["rms", "standard"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("name", SCALABLE)
def test_registry_entry_with_scaling_passes_check(name, check, scale, monkeypatch):
    monkeypatch.setitem(LEARNER_DEFAULTS, "scale", scale)
    check(name)
