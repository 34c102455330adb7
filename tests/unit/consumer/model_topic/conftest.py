"""The in-memory broker each model-topic test publishes to."""

from __future__ import annotations

import pytest

from tests.fakes import LocalBroker
from tests.unit.consumer.model_topic.topic import TOPIC


@pytest.fixture
def broker() -> LocalBroker:
    b = LocalBroker()
    b.create(TOPIC)
    return b

