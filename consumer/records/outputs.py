"""What the outputs (predictions, label requests) carry besides their scores: keys and ``source``."""

from __future__ import annotations

from collections.abc import Sequence

from consumer.fastwrite import Packed
from consumer.fastwrite import write_predictions as encode_predictions  # one compiled pass per batch
from learners.coin import utf8_spans

__all__ = ["encode_predictions", "pack_keys", "parse_source", "source_of"]


def pack_keys(ids: Sequence[str]) -> Packed:
    """The Kafka key of each output, its id in UTF-8, laid end to end (one encode for the batch)."""
    return Packed(*utf8_spans(ids))


def source_of(topic: str, partition: int, offset: int) -> str:
    """The ``source`` field of an output: the feature record it answers."""
    return f"{topic}:{partition}:{offset}"


def parse_source(value: str) -> tuple[str, int, int]:
    topic, partition, offset = value.rsplit(":", 2)
    return topic, int(partition), int(offset)
