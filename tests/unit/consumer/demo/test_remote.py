"""RemoteTotals: a running service's totals read from its /metrics, relative to the first reading, and
its query-rate target."""

from __future__ import annotations

import math

from consumer.clock import ManualClock
from consumer.demo.remote import RemoteTotals
from consumer.health import Health, HealthServer
from consumer.metrics import Metrics
from consumer.totals import Totals


def test_remote_totals_match_the_services_own_counted_from_the_first_reading():
    metrics = Metrics()
    totals = Totals(metrics)
    server = HealthServer(Health(ManualClock(), 30), metrics.registry, port=0, host="127.0.0.1").start()
    try:
        totals.add("records_scored", 100)
        totals.add("labels.applied", 7)
        remote = RemoteTotals(f"http://127.0.0.1:{server.port}")
        assert math.isnan(remote.estimated_error_rate())  # nothing read since the first reading
        for key, amount in (("records_scored", 50), ("label_requests", 12), ("labels.applied", 10),
                            ("labels.expired", 2), ("labelling_cost", 5.5), ("importance_weighted_labels", 40.0),
                            ("importance_weighted_mistakes", 10.0), ("dead_letters.features.bad_index", 3)):
            totals.add(key, amount)
        remote.refresh()
    finally:
        server.close()
    assert remote.get("records_scored") == 50 and remote.get("labels.applied") == 10
    assert remote.get("label_requests") == 12 and remote.get("labels.expired") == 2
    assert remote.get("labelling_cost") == 5.5 and remote.get("dead_letters.features.bad_index") == 3
    assert remote.estimated_error_rate() == 0.25


def test_remote_totals_read_the_services_own_query_rate_target():
    metrics = Metrics()
    server = HealthServer(Health(ManualClock(), 30), metrics.registry, port=0, host="127.0.0.1").start()
    try:
        metrics.query_rate_target.set(math.nan)  # the service without a target
        remote = RemoteTotals(f"http://127.0.0.1:{server.port}")
        assert remote.query_rate_target is None
        metrics.query_rate_target.set(0.3)
        remote.refresh()
    finally:
        server.close()
    assert remote.query_rate_target == 0.3
