"""How a peer's knob lands a budget: bisected on the first permutation, then corrected over all."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks import peers

SEEDS = list(range(5))


def _pass(first_factor: float, calls: list):
    """A knob whose ratio is value/100, times ``first_factor`` on permutation 0: the first
    permutation asks more than the others at the same value."""

    def one(value: float, seed: int):
        calls.append((value, seed))
        ratio = min(1.0, value / 100 * (first_factor if seed == 0 else 1.0))
        return SimpleNamespace(query_ratio=ratio), 0.0

    return one


def _mean(run: peers.PeerRun) -> float:
    return float(np.mean([m.query_ratio for m in run.metrics]))


def test_a_knob_found_on_the_first_permutation_is_corrected_until_the_mean_lands():
    target, land = 0.1, 0.005
    kwargs = {"bounds": (2.0**-10, 2.0**10), "rising": True, "tol": land / 2, "params": {}}
    plain = peers.landed_on_first("p", "k", _pass(1.5, []), target, SEEDS, **kwargs)
    assert abs(_mean(plain) - target) > land  # landed on permutation 0 alone: 0.73 of the target overall
    calls: list = []
    fixed = peers.landed_on_first("p", "k", _pass(1.5, calls), target, SEEDS, corrections=3, land=land, **kwargs)
    assert abs(_mean(fixed) - target) <= land
    assert fixed.value > plain.value and len(fixed.metrics) == len(SEEDS)
    extra = [c for c in calls if c[0] != plain.value and c[1] != 0]
    assert 0 < len(extra) <= 3 * (len(SEEDS) - 1)


def test_no_correction_when_the_first_value_already_lands():
    calls: list = []
    run = peers.landed_on_first("p", "k", _pass(1.0, calls), 0.1, SEEDS, bounds=(2.0**-10, 2.0**10), rising=True,
                                tol=0.0025, params={}, corrections=3, land=0.005)
    assert abs(_mean(run) - 0.1) <= 0.005
    assert len({v for v, s in calls if s != 0}) == 1  # the others ran once, at the value found


@pytest.mark.parametrize("rising", [True, False])
def test_corrections_never_return_a_value_further_off_than_the_first(rising):
    """A knob that overshoots either way: the closest mean is kept."""

    def one(value: float, seed: int):
        ratio = value / 100 if rising else 100 / value / 1000
        return SimpleNamespace(query_ratio=min(1.0, ratio * (3.0 if seed == 0 else 0.2))), 0.0

    kwargs = {"bounds": (2.0**-12, 2.0**12), "rising": rising, "tol": 0.0025, "params": {}}
    plain = peers.landed_on_first("p", "k", one, 0.1, SEEDS, **kwargs)
    fixed = peers.landed_on_first("p", "k", one, 0.1, SEEDS, corrections=2, land=0.005, **kwargs)
    assert abs(_mean(fixed) - 0.1) <= abs(_mean(plain) - 0.1)
