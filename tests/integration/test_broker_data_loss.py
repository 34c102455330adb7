"""A broker that comes back without its data (the embedded broker restarted: memory-only storage).
The service's positions now lie beyond the new logs' ends: it must say so in its log and metrics,
read the new records from the start of each log (auto.offset.reset=earliest), and skip none.

The broker forgot the groups too, the trainer lease's among them: a service that finds its lease
gone stops without a checkpoint (exit code 1; another process may hold the lease now), and the one
started after it, from the same checkpoint, finds the logs restarted. The service runs with static
membership, as the shipped deployments do (see ``tests.kafka_helpers.ghost_leader`` for why that
matters on this broker)."""

from __future__ import annotations

import logging

import orjson

from consumer.demo.broker import Broker, create_topics, free_port
from consumer.errors import LeaseLost
from consumer.roles import service_for
from tests.kafka_helpers import (
    Annotator,
    ghost_leader,
    produce_features,
    read_all,
    run_until,
    settings_for,
    stream,
    unique_topics,
)


def test_a_broker_back_without_its_data_is_logged_counted_and_its_new_records_are_all_scored(tmp_path, caplog,
                                                                                              capfd):
    # The broker can stall a group for good (tests.kafka_helpers.ghost_leader); such an attempt, and
    # only such an attempt, is made again.
    for attempt in range(1, 4):
        try:
            scenario(tmp_path / str(attempt), caplog)
            return
        except TimeoutError:
            if attempt == 3 or ghost_leader(capfd.readouterr().err) is None:
                raise


def scenario(tmp_path, caplog) -> None:
    tmp_path.mkdir()
    port = free_port()
    old, truth = stream(300, prefix="old-")
    new, new_truth = stream(100, seed=1, prefix="new-")
    with Broker(port=port) as broker:
        topics = unique_topics(broker.bootstrap)
        settings = settings_for(broker.bootstrap, topics, tmp_path, batch_size=50,
                                kafka={"reconnect.backoff.max.ms": "500", "debug": "cgrp"},
                                group_instance_id="activestream-0")  # as the shipped deployments
        produce_features(broker.bootstrap, topics["features"], old)
        service = service_for(settings, serve_http=False)
        annotator = Annotator(broker.bootstrap, topics, truth)
        service.start()
        run_until(service, lambda: service.totals.get("records_scored") >= 300, what="the old records scored")
        annotator.answer(timeout=1.0)
        run_until(service, lambda: service.totals.get("labels.applied") >= len(annotator.answered), what="labels")
        service.checkpoint()
        annotator.close()
    resets = service.metrics.offset_resets
    with Broker(port=port) as broker, caplog.at_level(logging.INFO, logger="consumer"):  # same port, no data
        create_topics(broker.bootstrap, list(topics.values()))
        produce_features(broker.bootstrap, topics["features"], new)
        try:
            run_until(service, lambda: service.totals.get("records_scored") >= 400, timeout_s=90,
                      what="the new records scored")
        except LeaseLost:  # the orchestrator's restart, from the last checkpoint
            service.close(final_checkpoint=False)
            service = service_for(settings, serve_http=False)
            resets = service.metrics.offset_resets
            service.start()
            run_until(service, lambda: service.totals.get("records_scored") >= 400, timeout_s=90,
                      what="the new records scored after the restart")
        finally:
            service.request_stop()
            service.shutdown()
        predictions = [orjson.loads(m.value())["id"] for m in read_all(broker.bootstrap, topics["predictions"],
                                                                       expect=100)]
    assert sorted(predictions) == sorted(new_truth)  # none skipped, each once
    assert resets.labels(topic=topics["features"])._value.get() == 1
    assert [r for r in caplog.records if r.levelno == logging.ERROR and topics["features"] in r.getMessage()
            and "is not in the log" in r.getMessage()]
