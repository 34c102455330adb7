"""Online per-feature scaling in the service: settings, checkpoints and the drift metric."""

from __future__ import annotations

import numpy as np
import pytest

from consumer.errors import IncompatibleCheckpoint
from tests.unit.consumer.conftest import Harness

SCALES = np.array([1e-3, 1.0, 1e3, 1e6])  # raw columns over nine orders of magnitude


def feed(h: Harness, n: int, prefix: str = "r", factor: np.ndarray | float = 1.0) -> dict[str, int]:
    """n raw feature records (columns × SCALES × factor) with a learnable label; truth by id."""
    rng = np.random.default_rng(len(prefix) + n)
    truth = {}
    for i in range(n):
        z = rng.standard_normal(4)
        rid = f"{prefix}{i}"
        truth[rid] = 1 if z[0] + 0.5 * z[3] > 0 else -1
        h.feature(rid, (z * SCALES * factor).tolist())
    return truth


@pytest.fixture
def scaled(tmp_path):
    return Harness(tmp_path, learner_params={"delta": 1.0, "scale": "rms"})


def test_service_learner_params_scale_builds_a_scaled_learner(scaled):
    assert scaled.service.learner.scale == "rms"


def test_service_scaled_checkpoint_round_trip_keeps_scale_and_model(scaled):
    _round_trip(scaled)


def test_service_standardised_checkpoint_round_trip_keeps_statistics_and_model(tmp_path):
    h = Harness(tmp_path, learner_params={"delta": 1.0, "scale": "standard"})
    assert h.service.learner.scale == "standard"
    _round_trip(h)


def _round_trip(h: Harness) -> None:
    h.service.start()
    truth = feed(h, 60)
    h.service.run_once()
    for rid in h.requested_ids()[:20]:
        h.label(rid, truth[rid])
    h.service.run_once()
    h.service.checkpoint()
    before = h.service.learner.state_dict()
    assert np.any(before["scale.Z"] != 0.0)
    h.service.close(final_checkpoint=False)

    again = h.new_service()
    again.start()
    after = again.learner.state_dict()
    assert set(after) == set(before)
    for key in before:
        if key != "meta":
            np.testing.assert_array_equal(before[key], after[key], err_msg=key)
    feed(h, 10, prefix="next")
    again.run_once()
    scored = [p for p in h.out("predictions") if p["id"].startswith("next")]
    assert len(scored) == 10


def test_service_checkpoint_of_another_scale_is_refused_naming_both(scaled):
    h = scaled
    h.service.start()
    feed(h, 5)
    h.service.run_once()
    path = h.service.checkpoint()
    h.service.close(final_checkpoint=False)
    other = h.new_service(learner_params={"delta": 1.0})
    with pytest.raises(IncompatibleCheckpoint, match=rf"{path.name}.*scale: saved 'rms' vs this 'none'"):
        other.start()


@pytest.mark.parametrize("params", [{"scale": "rms", "scale_from": "scored"}, {"scale": "standard"}])
def test_service_scale_moved_gauge_counts_features_that_moved_tenfold_in_the_window(tmp_path, params):
    h = Harness(tmp_path, learner_params={"delta": 1.0, **params})
    sample = lambda: h.service.metrics.registry.get_sample_value("activestream_scale_moved_features")  # noqa: E731
    h.service.start()
    feed(h, 50)
    h.service.run_once()
    h.clock.advance(h.settings.scale_window_s)
    h.service.run_once()
    assert sample() == 0.0  # scales settled within the first window: nothing moved tenfold
    feed(h, 50, prefix="jump", factor=np.array([1.0, 1e3, 1.0, 1e3]))  # two columns change unit
    h.service.run_once()
    assert sample() == 0.0  # the window is still open
    h.clock.advance(h.settings.scale_window_s)
    h.service.run_once()
    assert sample() == 2.0
    h.clock.advance(h.settings.scale_window_s)
    h.service.run_once()
    assert sample() == 0.0  # the next window saw no move


def test_service_scale_moved_gauge_stays_zero_without_scaling(harness):
    h = harness
    h.service.start()
    feed(h, 20, factor=1e3)
    h.service.run_once()
    h.clock.advance(h.settings.scale_window_s)
    h.service.run_once()
    assert h.service.metrics.registry.get_sample_value("activestream_scale_moved_features") == 0.0
