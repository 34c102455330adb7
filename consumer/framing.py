"""Framing: how a process reads and writes records in the schema registry's wire format.

With ``ACTIVESTREAM_FORMAT`` json-schema or avro, features and labels are read through framed
readers; with ``ACTIVESTREAM_OUTPUT_FORMAT`` json-schema or avro, the outputs are framed once their
schemas are registered (at start-up). With a registry, outputs read back (recovery, a trainer's
requests) may be framed whatever the format is now. The registry's modules are loaded only where a
framed format asks for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from consumer.config import Settings

if TYPE_CHECKING:
    from consumer.output_formats import OutputFormat, OutputReader

__all__ = ["Framing"]


class Framing:
    """``registry``: a client already made (e.g. confluent-kafka's in-memory one), else one for the
    settings where a framed format needs it. ``backoffs``: when each input may be read again after
    the registry failed, by input (features, labels; requests for a trainer that reads framed ones)."""

    def __init__(self, settings: Settings, registry: Any = None) -> None:
        self.settings = s = settings
        self.registry = registry
        self.features: Any = None  # the readers of framed features and labels (None: plain JSON)
        self.labels: Any = None
        self.backoffs: dict[str, Any] = {}
        self.outputs: OutputFormat | None = None  # how outputs are framed (None: plain JSON)
        self.output_reader: OutputReader | None = None
        if s.format != "json" or s.output_format != "json":
            from consumer.registry_formats import registry_client

            self.registry = registry_client(s) if registry is None else registry
        if s.format != "json":
            from consumer.registry_formats import Backoff, readers_for

            self.features, self.labels = readers_for(s, self.registry)
            self.backoffs = {role: Backoff(s.schema_registry.retry_max_s) for role in ("features", "labels")}
        if self.registry is not None:
            from consumer.output_formats import OutputReader

            self.output_reader = OutputReader(self.registry)

    def back_off_requests(self, backoffs: dict[str, Any]) -> None:
        """A trainer reads requests that may name a schema to be asked for: they wait as inputs do
        (``backoffs``: the held step's)."""
        if self.output_reader is not None:
            from consumer.registry_formats import Backoff

            backoffs["requests"] = Backoff(self.settings.schema_registry.retry_max_s)

    def register_outputs(self, wait: Callable[[float], bool]) -> bool:
        """Register the outputs' schemas where they are framed, waiting for the registry while it does
        not answer (``wait(seconds)``: whether to stop); False if asked to stop first."""
        if self.settings.output_format == "json":
            return True
        from consumer.output_formats import OutputReader, register_outputs

        self.outputs = register_outputs(self.settings, self.registry, wait)
        if self.outputs is None:
            return False
        self.output_reader = OutputReader(self.registry, self.outputs.known_schemas())
        return True
