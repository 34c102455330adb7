"""Settings of ``activestream annotate label-studio``, from ``ACTIVESTREAM_*`` variables.

The connector reads the same variables as the service for what they share (brokers, topics, Kafka
client properties, classes), so one environment file configures both, and its own under
``ACTIVESTREAM_ANNOTATE__*``. The Label Studio token is a secret: it is never logged or shown.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from consumer.config import ENV_PREFIX, Settings, Topics, _env_name, _Section
from consumer.errors import ConfigError

__all__ = ["AnnotateSettings", "LabelStudioSection", "load_annotate_settings"]


class LabelStudioSection(_Section):
    """Where Label Studio is, which project holds the tasks, how labels are costed."""

    url: str = Field("http://127.0.0.1:8080", description="Label Studio's base URL")
    token: SecretStr = Field(SecretStr(""), description="Label Studio API token (legacy token or personal "
                                                        "access token); a secret, never logged")
    project: str = Field("activestream", min_length=1, max_length=50,
                         description="title of the project that holds the tasks; created if missing")
    group_id: str = Field("activestream-annotate", min_length=1, description="consumer group of the label requests")
    cost: Literal["fixed", "lead_time"] = Field(
        "fixed", description="fixed: every label costs cost_per_label; lead_time: the annotator's seconds × "
                             "cost_per_second")
    cost_per_label: float = Field(1.0, ge=0, description="cost of a label when cost=fixed")
    cost_per_second: float = Field(1.0, ge=0, description="cost of a second of annotator time when cost=lead_time")
    webhook_url: str | None = Field(
        None, description="URL at which Label Studio reaches this connector's /webhook; registered on the project "
                          "at start-up (unset: no webhook, polling only)")
    poll_interval_s: float = Field(30.0, gt=0, description="read every task's annotations this often (the fallback "
                                                           "for webhooks that did not arrive)")
    port: int = Field(9109, ge=0, le=65535, description="port of /webhook, /metrics and /healthz")
    timeout_s: float = Field(10.0, gt=0, le=300, description="timeout of one Label Studio request")
    retry_s: float = Field(5.0, gt=0, le=600, description="wait before trying again after Label Studio failed")

    @field_validator("url", "webhook_url")
    @classmethod
    def _http(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://, got {url!r}")
        return url.rstrip("/") if url else url


class AnnotateSettings(BaseSettings):
    """The connector's settings (docs: Label Studio)."""

    # extra="ignore": the service's own variables live in the same environment
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="ignore",
                                      frozen=True, validate_default=True)

    bootstrap_servers: str = Field("127.0.0.1:9092", min_length=1, description="Kafka bootstrap servers")
    topics: Topics = Topics()
    kafka: dict[str, str] = Field(default_factory=dict, description="extra client properties, both clients")
    kafka_consumer: dict[str, str] = Field(default_factory=dict, description="extra consumer properties")
    kafka_producer: dict[str, str] = Field(default_factory=dict, description="extra producer properties")
    classes: list[Any] | None = Field(None, description="the service's classes (unset: -1 and 1)")
    annotate: LabelStudioSection = LabelStudioSection()
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="log level")
    log_format: Literal["text", "json"] = Settings.model_fields["log_format"]

    _dotted = field_validator("kafka", "kafka_consumer", "kafka_producer", mode="after")(Settings._dotted.__func__)
    # a request's offset is committed only once its task exists: auto-commit would commit it earlier
    _guarantees = field_validator("kafka", "kafka_consumer", mode="after")(Settings._consumer_guarantees.__func__)

    @field_validator("classes")
    @classmethod
    def _distinct(cls, classes: list[Any] | None) -> list[Any] | None:
        if classes is not None and (len(classes) < 2 or len({str(c) for c in classes}) != len(classes)):
            raise ValueError(f"needs at least two classes, distinct as text, got {classes}")
        return classes

    @property
    def class_list(self) -> list[Any]:
        return list(self.classes) if self.classes is not None else [-1, 1]


def load_annotate_settings(**overrides: Any) -> AnnotateSettings:
    """The connector's settings from the environment; :class:`ConfigError` names the variable."""
    try:
        settings = AnnotateSettings(**overrides)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if not isinstance(p, int))
            shown = err.get("input")
            shown = "" if isinstance(shown, dict) or "token" in loc else f" (got {shown!r})"
            lines.append(f"{_env_name(loc) if loc else ENV_PREFIX + '*'}: {err['msg']}{shown}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
    if not settings.annotate.token.get_secret_value():
        raise ConfigError(f"invalid configuration:\n  {ENV_PREFIX}ANNOTATE__TOKEN: a Label Studio API token is "
                          "required")
    return settings
