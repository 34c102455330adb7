"""Service settings from environment variables (pydantic-settings).

Every field is an environment variable: prefix ``ACTIVESTREAM_``, nested fields joined with ``__``
(``ACTIVESTREAM_CHECKPOINT__EVERY_S`` ↔ ``settings.checkpoint.every_s``). Mappings take either JSON
(``ACTIVESTREAM_KAFKA='{"security.protocol": "SASL_SSL"}'``) or one variable per key
(``ACTIVESTREAM_KAFKA__SASL_MECHANISM=PLAIN`` → ``sasl.mechanism``: Kafka client property names use
dots where environment variables cannot).

A wrong value fails at start-up with :class:`ConfigError`, whose message names the environment
variable, the value and what is expected.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import socket
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from consumer.errors import ConfigError
from consumer.records import MAX_COST
from learners.defaults import DEFAULT_LEARNERS, KERNEL_MAX_FEATURES

__all__ = ["ENV_PREFIX", "NOT_SETTINGS", "Settings", "load_settings", "unknown_variables"]

ENV_PREFIX = "ACTIVESTREAM_"
# ACTIVESTREAM_ variables that are not the service's settings, read elsewhere (their meaning is in
# docs/reference/configuration.md): the learners' kernels, the demo's broker, the benchmarks' datasets
# and the tests' switches. The Label Studio connector's settings are ACTIVESTREAM_ANNOTATE__*.
NOT_SETTINGS = frozenset({
    "ACTIVESTREAM_AOT", "ACTIVESTREAM_TANSU", "ACTIVESTREAM_DATASETS", "ACTIVESTREAM_HYPOTHESIS_PROFILE",
    "ACTIVESTREAM_FUZZ_RECORDS", "ACTIVESTREAM_SKIP_PROMETHEUS", "ACTIVESTREAM_SKIP_BROWSER",
    "ACTIVESTREAM_LABEL_STUDIO_VENV", "ACTIVESTREAM_CHROMIUM", "ACTIVESTREAM_REQUIRE_LABEL_STUDIO",
    "ACTIVESTREAM_REQUIRE_QUIX",
    "ACTIVESTREAM_REQUIRE_IMAGE",
})
_OTHER_PREFIXES = ("ACTIVESTREAM_ANNOTATE__",)
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Topics(_Section):
    """The topics the service reads and writes (model and lease: the scale-out roles)."""

    features: str = Field("features", description="feature records to score (read)")
    predictions: str = Field("predictions", description="one prediction per feature record (written)")
    label_requests: str = Field("label-requests", description="requests for a label, one per query (written)")
    labels: str = Field("labels", description="labels answering the requests (read)")
    dead_letters: str = Field("dead-letters", description="records that could not be used, with the reason (written)")
    model: str = Field("model", description="the trainer's model versions and checkpoints, one partition "
                       "(role trainer writes, scorer reads)")
    lease: str = Field("trainer-lease", description="one partition; its owner in <group_id>-lease is the active "
                       "trainer (roles trainer and all)")

    @model_validator(mode="after")
    def _distinct(self) -> Topics:
        names = list(self.model_dump().values())
        if len(set(names)) != len(names):
            raise ValueError(f"the topics must be distinct, got {names}")
        return self

    @field_validator("*")
    @classmethod
    def _legal(cls, name: str) -> str:
        # Kafka's own rule; it also keeps the names literal (a subscription to "^..." is a pattern)
        # and free of anything JSON would escape, since outputs carry them in "source"
        if not _TOPIC_NAME.fullmatch(name) or name in (".", ".."):
            raise ValueError(f"{name!r} is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)")
        return name


class LabelSettings(_Section):
    """How label requests live and die, what they cost and how many may be asked for."""

    ttl_s: float = Field(3600.0, gt=0, description="a request expires this long after it is made")
    duplicates: Literal["first", "all"] = Field(
        "first", description="first: only an id's first label is applied; all: every label (several annotators)"
    )
    on_expiry: Literal["drop", "default"] = Field(
        "drop", description="drop: forget the request; default: learn expiry_label for it"
    )
    expiry_label: Any = Field(None, description="the label learnt for an expired request when on_expiry=default")
    retract_expired: bool = Field(False, description="produce a tombstone (key = id) to label-requests on expiry")
    # the bounds a label's own cost is held to (a label request carries the cost)
    cost_per_request: float = Field(1.0, ge=0, le=MAX_COST, allow_inf_nan=False,
                                    description="cost of one label, unless per class or the label says")
    cost_per_class: dict[str, Annotated[float, Field(ge=0, le=MAX_COST, allow_inf_nan=False)]] = Field(
        default_factory=dict, description="cost of a label of this class")
    budget: int | None = Field(None, ge=1, description="at most this many label requests in any budget window, "
                               "paced over the window on the most uncertain records")
    cost_budget: float | None = Field(None, gt=0, description="at most this much expected labelling cost in any "
                                      "budget window (per-class costs planned with their expected value)")
    budget_window_s: float = Field(3600.0, gt=0, description="length of a budget window (record time, clamped)")
    clock_tolerance_s: float = Field(
        300.0, gt=0, description="a record time at most this before processing time moves the budget's clock; "
                                 "others, and any ahead of it, count as processing time (at most budget_window_s)")
    max_pending: int = Field(1_000_000, gt=0, description="pending requests kept, the oldest expiring beyond it; "
                             "as many labels wait for their request in a trainer, the oldest dropped beyond it")

    @model_validator(mode="after")
    def _expiry(self) -> LabelSettings:
        if self.on_expiry == "default" and self.expiry_label is None:
            raise ValueError("on_expiry=default needs expiry_label")
        return self

    @model_validator(mode="after")
    def _clock(self) -> LabelSettings:
        # the windows may trail processing time by the tolerance: by more than a whole window, the cap
        # no longer bounds the requests of the window an operator is watching
        if self.clock_tolerance_s > self.budget_window_s:
            raise ValueError(f"ACTIVESTREAM_LABELS__CLOCK_TOLERANCE_S ({self.clock_tolerance_s:g} s) is longer than "
                             f"ACTIVESTREAM_LABELS__BUDGET_WINDOW_S ({self.budget_window_s:g} s): it must be at most "
                             "one budget window")
        return self


class CheckpointSettings(_Section):
    """When checkpoints are made and how many are kept."""

    every_s: float = Field(30.0, gt=0, description="checkpoint at least this often")
    # Labels applied after a checkpoint are read again from Kafka after a crash, so this only bounds
    # that replay; at 10,000 labels/s a lower default would write the model every second.
    every_labels: int = Field(100_000, gt=0, description="... and after this many applied labels")
    keep: int = Field(3, ge=1, description="checkpoints kept on disk")
    allow_param_change: bool = Field(
        False, description="load a checkpoint made with other learner hyper-parameters (same learner, size, classes)"
    )


class ModelSettings(_Section):
    """How the trainer publishes the model to the model topic (role trainer)."""

    publish_every_s: float = Field(1.0, gt=0, description="publish a new model version at least this often "
                                   "(when labels were applied since the last)")
    publish_every_labels: int = Field(1000, gt=0, description="... and after this many applied labels")
    chunk_bytes: int = Field(900_000, ge=1024, le=100_000_000,
                             description="largest model record; under the brokers' message.max.bytes")
    full_every: int = Field(50, ge=1, description="a full snapshot after this many deltas")


class SchemaRegistrySettings(_Section):
    """Where the schema registry is, for ACTIVESTREAM_FORMAT or OUTPUT_FORMAT json-schema or avro (docs: schema
    registry)."""

    url: str | None = Field(None, min_length=1, description="the registry's URL (several: comma-separated); "
                            "required by ACTIVESTREAM_FORMAT and OUTPUT_FORMAT json-schema and avro")
    basic_auth_user_info: SecretStr | None = Field(None, description="`<user>:<password>` for HTTP basic "
                                                   "authentication (Confluent Cloud: `<API key>:<API secret>`)")
    ssl_ca_location: Path | None = Field(None, description="CA certificate(s) the registry's TLS certificate is "
                                         "checked against; unset: the system's")
    ssl_certificate_location: Path | None = Field(None, description="client certificate, for mutual TLS")
    ssl_key_location: Path | None = Field(None, description="the client certificate's private key")
    timeout_s: float = Field(10.0, gt=0, description="how long one request to the registry may take")
    retry_max_s: float = Field(30.0, gt=0, le=120, description="registry down: the records that need it are read "
                               "again (at start-up: the outputs' schemas registered again) after 1 s, then twice as "
                               "long each time, up to this")

    @field_validator("url")
    @classmethod
    def _http(cls, url: str | None) -> str | None:
        if url is not None and not all(u.strip().startswith(("http://", "https://")) for u in url.split(",")):
            raise ValueError(f"{url!r}: each URL must start with http:// or https://")
        return url

    @model_validator(mode="after")
    def _key_with_certificate(self) -> SchemaRegistrySettings:
        if (self.ssl_certificate_location is None) != (self.ssl_key_location is None):
            raise ValueError("ACTIVESTREAM_SCHEMA_REGISTRY__SSL_CERTIFICATE_LOCATION and __SSL_KEY_LOCATION go "
                             "together: set both or neither")
        return self


class Settings(BaseSettings):
    """Everything the service reads at start-up (docs: configuration reference)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True, validate_default=True
    )

    role: Literal["all", "scorer", "trainer"] = Field(
        "all", description="all: one process scores and learns; scorer: scores with the newest published model; "
                           "trainer: learns from labels and publishes the model (docs: running at scale)")
    bootstrap_servers: str = Field("127.0.0.1:9092", min_length=1, description="Kafka bootstrap servers")
    group_id: str = Field("activestream", min_length=1,
                          description="consumer group of the features (the labels use <group_id>-labels)")
    group_instance_id: str | None = Field(None, description="static membership (KIP-345), e.g. the pod name")
    topics: Topics = Topics()
    format: Literal["json", "json-schema", "avro"] = Field(
        "json", description="how the features and labels are written: json: a plain JSON object per record (docs: "
        "record schemas); json-schema, avro: the schema registry's wire format, read with the schema it names "
        "(docs: schema registry)")
    output_format: Literal["json", "json-schema", "avro"] = Field(
        "json", description="how the predictions and label requests are written: json: a plain JSON object per "
        "record, whatever FORMAT says (consumers need no registry); json-schema, avro: the schema registry's wire "
        "format, the schemas registered at start-up under <topic>-value (docs: schema registry)")
    schema_registry: SchemaRegistrySettings = SchemaRegistrySettings()
    kafka: dict[str, str] = Field(default_factory=dict, description="extra client properties, both clients")
    kafka_consumer: dict[str, str] = Field(default_factory=dict, description="extra consumer properties")
    kafka_producer: dict[str, str] = Field(default_factory=dict, description="extra producer properties")
    kafka_labels_consumer: dict[str, str] = Field(
        default_factory=dict, description="extra properties of the labels consumer alone, over KAFKA_CONSUMER"
    )

    learner: str | None = Field(None, description="registry name of the learner (docs: learner registry); unset: "
                                f"{DEFAULT_LEARNERS['binary']} for two classes and N_FEATURES up to "
                                f"{KERNEL_MAX_FEATURES:,}, {DEFAULT_LEARNERS['binary, wide rows']} for wider rows, "
                                f"{DEFAULT_LEARNERS['multiclass']} for more classes")
    learner_params: dict[str, Any] = Field(default_factory=dict,
                                           description="hyper-parameter overrides, e.g. __DELTA=0.5")
    classes: list[Any] | None = Field(None, description="binary: [negative, positive]; multiclass: all classes; unset: "
                                      "a binary model's two classes, learnt from the labels")
    n_features: int = Field(2**20, gt=0, lt=2**31 - 1,
                            description="model dimension; named features are hashed into it")
    query_seed: int = Field(0, ge=0, lt=2**64, description="seed of the query coin, drawn from (seed, record id)")
    query_rate_target: float | None = Field(
        None, gt=0, le=1, description="label requests / records the budget controller holds, from the first record"
    )
    budget_warmup: int = Field(
        0, ge=0, lt=2**31, description="label requests made first, faster than query_rate_target (see "
        "budget_warmup_boost), then repaid at half the rate until the total is back on it"
    )
    budget_warmup_boost: float | None = Field(
        None, ge=1, description="during the warm-up, aim at this multiple of query_rate_target through the query "
        "strategy; unset: ask about every record"
    )
    scale_window_s: float = Field(
        300.0, gt=0, description="window of activestream_scale_moved_features (learner param scale != none)"
    )

    dead_letter_ratio_limit: float = Field(
        0.01, gt=0, le=1, description="dead letters / consumed records above which the dead-letter alert fires"
    )
    labels: LabelSettings = LabelSettings()
    checkpoint_dir: Path = Field(Path("/var/lib/activestream"), description="checkpoint directory (must be writable)")
    checkpoint: CheckpointSettings = CheckpointSettings()
    model: ModelSettings = ModelSettings()

    audit_log: Path | None = Field(None, description="role trainer: append each batch of applied labels (ids and "
                                   "labels, in order) and each checkpoint to this file, as JSON lines, so a "
                                   "model can be rebuilt by an offline replay")
    metrics_port: int = Field(9108, ge=0, le=65535, description="port of /metrics, /healthz and /readyz")
    batch_size: int = Field(2000, gt=0, le=100_000,
                            description="most records per batch (a batch is what has arrived, up to this)")
    poll_timeout_s: float = Field(0.1, gt=0, le=10, description="how long a read waits for the first record")
    max_in_flight: int = Field(100_000, gt=0, description="produced but unacknowledged messages before backpressure")
    healthy_loop_age_s: float = Field(60.0, gt=0, description="/healthz fails when the loop is idle this long")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="log level")
    log_format: Literal["text", "json"] = Field(
        "text", description="text: `<time> <LEVEL> <logger>: <message>` lines; json: one JSON object per line "
                            "(time in ISO 8601 UTC, level, logger, message, exception, extra fields). librdkafka's "
                            "lines go through the same logging, as logger librdkafka")

    @field_validator("kafka", "kafka_consumer", "kafka_producer", "kafka_labels_consumer", mode="after")
    @classmethod
    def _dotted(cls, props: dict[str, str]) -> dict[str, str]:
        return {key.replace("_", ".").lower(): value for key, value in props.items()}

    @field_validator("kafka", "kafka_consumer", "kafka_labels_consumer", mode="after")
    @classmethod
    def _consumer_guarantees(cls, props: dict[str, str]) -> dict[str, str]:
        """Refuse the consumer properties that would break the loop's guarantees."""
        if str(props.get("enable.auto.commit", "false")).lower() == "true":
            raise ValueError("enable.auto.commit must stay false: offsets are committed only after the "
                             "checkpoint that holds them is durable")
        if "cooperative" in str(props.get("partition.assignment.strategy", "")).lower():
            raise ValueError("cooperative rebalancing is not supported: a revocation drops every batch in hand and "
                             "the loop assigns with assign(); use range or roundrobin")
        return props

    @field_validator("learner_params", mode="after")
    @classmethod
    def _json_values(cls, params: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for key, value in params.items():
            if isinstance(value, str):
                with contextlib.suppress(json.JSONDecodeError):
                    value = json.loads(value)
            out[key] = value
        return out

    @model_validator(mode="after")
    def _warmup_needs_a_rate(self) -> Settings:
        if (self.budget_warmup or self.budget_warmup_boost is not None) and self.query_rate_target is None:
            raise ValueError(f"{ENV_PREFIX}BUDGET_WARMUP needs {ENV_PREFIX}QUERY_RATE_TARGET: the requests "
                             "it makes are paid back out of that rate")
        return self

    @model_validator(mode="after")
    def _framed_needs_a_registry(self) -> Settings:
        if self.format != "json" and self.schema_registry.url is None:
            raise ValueError(f"{ENV_PREFIX}FORMAT={self.format} needs {ENV_PREFIX}SCHEMA_REGISTRY__URL: the records "
                             "name their schema by its id in the registry")
        if self.output_format != "json" and self.schema_registry.url is None:
            raise ValueError(f"{ENV_PREFIX}OUTPUT_FORMAT={self.output_format} needs {ENV_PREFIX}SCHEMA_REGISTRY__URL: "
                             "the outputs' schemas are registered there")
        return self

    @property
    def instance(self) -> str:
        """This replica's name: the static group instance id, else the host name."""
        return self.group_instance_id or socket.gethostname()


def _env_name(loc: tuple) -> str:
    return ENV_PREFIX + "__".join(str(part) for part in loc).upper()


def _known_names() -> tuple[frozenset[str], tuple[str, ...]]:
    """The settings' variable names, and the prefixes of the mappings' one-variable-per-key form."""
    names, prefixes = set(), []
    for name, field in Settings.model_fields.items():
        env = ENV_PREFIX + name.upper()
        names.add(env)
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names.update(f"{env}__{sub.upper()}" for sub in kind.model_fields)
        elif getattr(kind, "__origin__", None) is dict:
            prefixes.append(env + "__")
    return frozenset(names), tuple(prefixes)


def unknown_variables(environ: dict[str, str] | None = None) -> list[str]:
    """The ``ACTIVESTREAM_*`` variables of ``environ`` (default: the process's) that nothing reads: a
    misspelt setting would otherwise be ignored and the service start without it."""
    names, prefixes = _known_names()
    environ = os.environ if environ is None else environ
    return sorted(k for k in environ if k.startswith(ENV_PREFIX) and k not in names and k not in NOT_SETTINGS
                  and not k.startswith(prefixes + _OTHER_PREFIXES))


def load_settings(**overrides: Any) -> Settings:
    """Read the settings from the environment (``overrides`` win); raise :class:`ConfigError`
    naming the environment variable on any invalid value, or on an ``ACTIVESTREAM_*`` variable that
    is no setting (with the closest setting's name)."""
    unknown = unknown_variables()
    if unknown:
        names = sorted(_known_names()[0])
        lines = []
        for name in unknown:
            longer = sorted((n for n in names if n.startswith(name)), key=len)  # QUERY_RATE → QUERY_RATE_TARGET
            close = longer[:1] or difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            lines.append(f"{name}: no such setting" + (f" (did you mean {close[0]}?)" if close else "")
                         + "; every setting: docs/reference/configuration.md")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not isinstance(p, int))
            shown = err.get("input")
            shown = "" if isinstance(shown, dict) else f" (got {shown!r})"
            lines.append(f"{_env_name(loc) if loc else ENV_PREFIX + '*'}: {err['msg']}{shown}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
