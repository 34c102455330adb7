"""The generic check suite, run on every registry entry."""

import pytest

from learners import ALGORITHMS
from learners.checks import CHECKS


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_registry_entry_passes_check(name, check):
    check(name)
