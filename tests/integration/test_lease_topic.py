"""The lease topic the service creates has one partition, on a broker that creates topics it is asked about."""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient

from consumer.lease import ensure_lease_topic


def test_the_lease_topic_is_created_with_one_partition(kafka_bootstrap):
    topic = f"lease-{uuid.uuid4().hex[:8]}"
    ensure_lease_topic({"bootstrap.servers": kafka_bootstrap}, topic)
    listed = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10)
    assert len(listed.topics[topic].partitions) == 1
    ensure_lease_topic({"bootstrap.servers": kafka_bootstrap}, topic)  # there already: left as it is
    listed = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10)
    assert len(listed.topics[topic].partitions) == 1
