"""consumer.kafka: closing a producer on every confluent-kafka the project allows."""

from __future__ import annotations

from consumer.kafka import close_producer


class _Before213:
    """A producer of confluent-kafka before 2.13: no ``close``."""

    def __init__(self) -> None:
        self.purged: list[dict] = []

    def purge(self, **kwargs) -> None:
        self.purged.append(kwargs)


class _Since213(_Before213):
    closed = False

    def close(self) -> None:
        self.closed = True


def test_close_producer_closes_where_it_can_and_otherwise_drops_what_the_producer_holds():
    new, old = _Since213(), _Before213()
    close_producer(new)
    close_producer(old)
    assert new.closed and new.purged == []
    assert old.purged == [{"in_queue": True, "in_flight": True, "blocking": False}]
