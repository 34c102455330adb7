"""Recovery after a crash: the decisions made since the last checkpoint, read back from the outputs.

A checkpoint holds the model and the input offsets; records consumed after it are consumed again on
restart. Their predictions and label requests were already produced, and the model that made them
had learnt labels since the checkpoint, so scoring them again could decide differently, request a
label twice, or - worse - not request a label that an annotator has already been asked for (and
whose answer would then be thrown away as unknown).

So on restart the service reads the predictions and label-requests topics from where they ended
at the checkpoint. Every output carries the feature record it answers in its ``source`` field;
a replayed feature record whose decision is found there gets the
same decision back, its outputs are not produced again, and a label request already made is put
back into the pending store as it was (same request time, same expiry). Labels for such requests
that arrive before their feature record is replayed are parked until it is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
from confluent_kafka import KafkaError, TopicPartition

from consumer.errors import InvalidRecord
from consumer.records import parse_source

if TYPE_CHECKING:  # the registry's modules are loaded only where a framed format asks for them
    from consumer.output_formats import OutputReader

__all__ = ["Recorded", "Recovery", "read_tail"]

log = logging.getLogger(__name__)

_OLD_SOURCE_HEADER = "activestream.source"  # where outputs written before the "source" field kept it
_FRAMED = b"\x00"  # the first byte of a value in the schema registry's wire format (a JSON record starts with "{")


@dataclass(slots=True)
class Recorded:
    """What was produced for one feature record before the restart."""

    prediction: dict | None = None  # the prediction record, if it was produced
    request: dict | None = None  # the label request record, if one was produced


def read_tail(make_consumer: Callable[[], Any], topic: str, start: Mapping[int, int],
              partitions: list[int], timeout_s: float) -> list[Any]:
    """Every message of ``topic`` from ``start[p]`` (0 where unknown) to the end of each partition.

    The end is where the fetch reports end-of-partition (not ListOffsets, which some brokers get
    wrong). Raises ``TimeoutError`` if the end is not reached within ``timeout_s``.
    """
    if not partitions:
        return []
    consumer = make_consumer()
    try:
        begin = {}
        for p in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
            at = start.get(p, 0)
            # a start outside the log: the log was truncated or re-created (a broker that lost its
            # data), and what it holds now was all written after the start
            begin[p] = at if low <= at <= high else low
        consumer.assign([TopicPartition(topic, p, begin[p]) for p in partitions])
        at_end: set[int] = set()
        out = []
        deadline = time.monotonic() + timeout_s
        while len(at_end) < len(partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} to its end took longer than {timeout_s} s")
            for msg in consumer.consume(10_000, 0.2):
                err = msg.error()
                if err is None:
                    out.append(msg)
                elif err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                else:
                    log.warning("reading %s for recovery: %s", topic, err.str())
        return out
    finally:
        consumer.close()


class Recovery:
    """The decisions found in the outputs, by feature record (topic, partition, offset)."""

    def __init__(self) -> None:
        self.recorded: dict[tuple[str, int, int], Recorded] = {}
        self.expected_ids: dict[str, tuple[str, int, int]] = {}  # request id → its feature record

    def __len__(self) -> int:
        return len(self.recorded)

    def clear(self) -> None:
        """Forget what was read back (a read-back that failed half-way is made again)."""
        self.recorded.clear()
        self.expected_ids.clear()

    def add_outputs(self, messages: list[Any], kind: str, reader: OutputReader | None = None) -> None:
        """Index produced predictions (``kind="prediction"``) or label requests (``"request"``).

        ``reader`` reads outputs in the schema registry's wire format (ACTIVESTREAM_OUTPUT_FORMAT
        json-schema or avro, now or before a restart); without one (no registry configured), a framed
        output is skipped, and its record decided again. Raises
        :class:`~consumer.errors.RegistryUnavailable` if the registry is needed and does not answer."""
        skipped = 0
        for msg in messages:
            raw = msg.value()
            if raw is None:  # a retraction
                continue
            if reader is not None:
                try:
                    raw = reader.plain(raw)
                except InvalidRecord as err:  # not written by this service: nothing to keep
                    log.warning("%s[%d]@%d read back: %s", msg.topic(), msg.partition(), msg.offset(), err)
                    continue
            elif raw[:1] == _FRAMED:
                skipped += 1
                continue
            value = orjson.loads(raw)
            if not isinstance(value, dict):
                continue
            where = value.get("source") or dict(msg.headers() or []).get(_OLD_SOURCE_HEADER, b"").decode()
            if not where:
                continue
            source = parse_source(where)
            record = self.recorded.setdefault(source, Recorded())
            if kind == "prediction":
                record.prediction = value
            else:
                record.request = value
                self.expected_ids[value["id"]] = source
        if skipped:
            log.warning("%d outputs in the schema registry's wire format skipped: reading them back needs "
                        "ACTIVESTREAM_SCHEMA_REGISTRY__URL; their records are decided again", skipped)

    def take(self, source: tuple[str, int, int]) -> Recorded | None:
        """The record's recorded decision, handed out once."""
        record = self.recorded.pop(source, None)
        if record is not None and record.request is not None:
            self.expected_ids.pop(record.request["id"], None)
        return record

    def expects(self, rid: str) -> bool:
        return rid in self.expected_ids

    def forget_before(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Drop recorded decisions for records that will not be replayed any more."""
        stale = [s for s in self.recorded if s[2] < offsets.get((s[0], s[1]), -1)]
        for source in stale:
            self.take(source)

    # -- checkpoint form (consumer.state.Stateful): what is left of a recovery in progress ----------
    namespace = "recovery"
    format_version = 1

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"decisions": np.frombuffer(orjson.dumps({
            "recorded": [[list(s), r.prediction, r.request] for s, r in self.recorded.items()],
        }), dtype=np.uint8)}

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        data = orjson.loads(state["decisions"].tobytes())
        for source, prediction, request in data["recorded"]:
            key = (source[0], int(source[1]), int(source[2]))
            self.recorded[key] = Recorded(prediction, request)
            if request is not None:
                self.expected_ids[request["id"]] = key
