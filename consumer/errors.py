"""The service's exceptions, one class per failure mode."""

from __future__ import annotations

__all__ = [
    "Backpressure",
    "CheckpointError",
    "ConfigError",
    "Fenced",
    "IncompatibleCheckpoint",
    "InvalidRecord",
    "LeaseLost",
    "OffsetOutOfRange",
    "OffsetsNotIncreasing",
    "ProduceFailed",
    "PublishFailed",
    "RegistryUnavailable",
]


class ConfigError(Exception):
    """A setting is invalid; the message names the environment variable."""


class InvalidRecord(Exception):
    """A consumed record cannot be used; it goes to the dead-letter topic with ``reason``."""

    def __init__(self, reason: str, detail: str, topic: str = "", partition: int = -1, offset: int = -1) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail
        self.topic, self.partition, self.offset = topic, partition, offset


class RegistryUnavailable(Exception):
    """The schema registry did not answer (down, unreachable, refusing the credentials): the records
    that need it are held back and read again, never sent to the dead-letter topic."""


class Backpressure(Exception):
    """The producer holds too many unacknowledged messages; nothing of the batch was sent."""


class CheckpointError(Exception):
    """A checkpoint could not be made durable; no offset was committed."""


class IncompatibleCheckpoint(Exception):
    """A checkpoint on disk was made by another learner, format or configuration."""


class OffsetsNotIncreasing(Exception):
    """A partition's stored offset would move backwards."""


class LeaseLost(Exception):
    """The trainer lease was taken away from this process while it ran."""


class OffsetOutOfRange(Exception):
    """A partition's position is not in its log, and ``auto.offset.reset`` is ``error``."""


class ProduceFailed(Exception):
    """A message could not be delivered after retries; the error is not retriable."""


class PublishFailed(Exception):
    """A model publication was not acknowledged in time; the next one is a full snapshot."""


class Fenced(PublishFailed):
    """The model producer's transactional id was taken by a newer trainer: this one is a zombie."""
