"""Shared fixtures: where the benchmark datasets live, and one real broker per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATASETS = Path(os.environ.get("ACTIVESTREAM_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    """../shared/datasets (or $ACTIVESTREAM_DATASETS); tests that need it skip without it."""
    if not (DATASETS / "MANIFEST.md").exists():
        pytest.skip(f"benchmark datasets not found at {DATASETS}")
    return DATASETS


@pytest.fixture(scope="session")
def kafka_bootstrap():
    """A real Kafka-protocol broker for the whole session: Tansu on a free 127.0.0.1 port, or
    $KAFKA_BOOTSTRAP (e.g. an Apache Kafka). Tests create their own topics and groups."""
    if env := os.environ.get("KAFKA_BOOTSTRAP"):
        yield env
        return
    from consumer.demo.broker import Broker

    with Broker() as broker:
        yield broker.bootstrap


def _hypothesis_profiles() -> None:
    """"ci" (the default) bounds the property tests; ACTIVESTREAM_HYPOTHESIS_PROFILE=long runs a longer search."""
    try:
        from hypothesis import settings
    except ImportError:  # the property tests need it; the others do not
        return
    settings.register_profile("ci", max_examples=200, derandomize=True)
    settings.register_profile("long", max_examples=20_000)
    settings.load_profile(os.environ.get("ACTIVESTREAM_HYPOTHESIS_PROFILE", "ci"))


_hypothesis_profiles()
