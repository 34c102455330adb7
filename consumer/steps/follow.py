"""Follow: a scorer takes the newest complete model version its trainer published, between two batches."""

from __future__ import annotations

import logging
from typing import Any

from consumer.clock import Clock
from consumer.metrics import Metrics
from consumer.model_topic import Model, ModelFollower

__all__ = ["Follow"]

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 60.0


class Follow:
    """The published model a scorer scores with (``model``; None: the initial model). The query
    coin's records and the scorer's budget controller stay its own (:meth:`learners.base.Learner.follow`)."""

    def __init__(self, learner: Any, metrics: Metrics, clock: Clock) -> None:
        self.learner, self.metrics, self.clock = learner, metrics, clock
        self.follower: ModelFollower | None = None  # once the scorer has started
        self.consumer: Any = None  # the follower's
        self.model: Model | None = None
        self.swapping = False  # past the scorer's start: a new version is a swap, not a catch-up

    def open(self, consumer: Any, topic: str) -> None:
        """Follow the model topic with ``consumer`` (a group-less one), from its newest full snapshot;
        and take the model it finds."""
        self.consumer = consumer
        self.follower = ModelFollower(consumer, topic)
        self.follower.start(timeout_s=_START_TIMEOUT_S)
        self()

    def __call__(self) -> None:
        model = self.follower.poll()
        if model is not None:
            self.use(model)
        if self.model is not None:
            self.metrics.model_age.set(max(0.0, self.clock.now() - self.model.manifest["published_at"]))

    def use(self, model: Model) -> None:
        """Score with ``model`` from the next batch on."""
        try:
            self.learner.follow(model.state)
        except (ValueError, KeyError) as exc:
            log.error("model version %d refused, still scoring with version %s: %s (ACTIVESTREAM_LEARNER, "
                      "ACTIVESTREAM_N_FEATURES and ACTIVESTREAM_CLASSES must match the trainer's)", model.version,
                      self.model.version if self.model is not None else "none (the initial model)", exc)
            return
        self.model = model
        self.metrics.model_version_in_use.set(model.version)
        if self.swapping:
            self.metrics.model_swap_delay.observe(max(0.0, self.clock.now() - model.manifest["published_at"]))
        self.metrics.model_version.set(self.learner.labels_)
        log.debug("scoring with model version %d (%d labels)", model.version, self.learner.labels_)
