"""The service's learner: the one the settings name, with its budget controller, and its warm-up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from consumer import batch_reader, messages
from consumer.budget import controller_for
from consumer.config import Settings
from consumer.errors import ConfigError
from consumer.records import decode_feature_batch, encode_predictions
from learners import make
from learners.base import FORMAT_VERSION as LEARNER_FORMAT_VERSION
from learners.inputs import Rows
from learners.registry import ALGORITHMS, LEARNER_DEFAULTS, canonical_name, default_learner

__all__ = ["LearnerState", "build_learner", "learns_classes", "warm_up"]


def learns_classes(spec: Any) -> bool:
    """Whether a registry entry learns its classes from the labels when ACTIVESTREAM_CLASSES is unset:
    a binary rule that can swap its two classes. The others keep [-1, 1] (multiclass ones need the list)."""
    return not spec.rule.multiclass and spec.rule.scaling is not None and spec.rule.symmetric


def build_learner(settings: Settings):
    """The configured learner; a wrong name, parameter or class list is a :class:`ConfigError`."""
    try:
        default = default_learner(len(settings.classes or (-1, 1)), settings.n_features)
        name = canonical_name(settings.learner or default)
    except ValueError as exc:
        raise ConfigError(f"ACTIVESTREAM_LEARNER: {exc}") from None
    spec = ALGORITHMS[name]
    known = set(spec.rule.param_names()) | set(spec.query.param_names()) | set(LEARNER_DEFAULTS)
    by_lower = {k.lower(): k for k in known}
    params = {by_lower.get(k.lower(), k): v for k, v in settings.learner_params.items()}
    for fixed in ("n_features", "classes", "seed"):
        if fixed in params:
            env = {"seed": "ACTIVESTREAM_QUERY_SEED"}.get(fixed, f"ACTIVESTREAM_{fixed.upper()}")
            raise ConfigError(f"ACTIVESTREAM_LEARNER_PARAMS: set {fixed} with {env}, not here")
    if settings.classes is not None:
        params["classes"] = settings.classes
    elif learns_classes(spec):
        params["classes"] = []  # learnt from the labels (learners.base.Learner.adopt)
    try:
        learner = make(name, **params, n_features=settings.n_features, seed=settings.query_seed)
    except (ValueError, TypeError) as exc:
        where = "ACTIVESTREAM_CLASSES" if str(exc).startswith("classes") else "ACTIVESTREAM_LEARNER_PARAMS"
        raise ConfigError(f"{where}: {exc}") from None
    try:
        learner.budget = controller_for(settings, learner.classes)
    except ValueError as exc:
        raise ConfigError(f"ACTIVESTREAM_LABELS__COST_BUDGET: {exc}") from None
    _check_fits(settings, learner)
    return learner


def _check_fits(settings: Settings, learner: Any) -> None:
    """The settings that depend on the learner: its scales in a split deployment, the expiry label."""
    s, params = settings, learner.get_params()
    if s.role != "all" and params.get("scale", "none") != "none" and params.get("scale_from") == "scored":
        raise ConfigError("ACTIVESTREAM_LEARNER_PARAMS: scale_from=scored learns the scales from scored records, "
                          f"which a {s.role} does not share with the other role; use scale_from=labelled, "
                          "or ACTIVESTREAM_ROLE=all")
    if s.labels.on_expiry == "default" and learner.learns_classes:
        raise ConfigError("ACTIVESTREAM_LABELS__EXPIRY_LABEL needs ACTIVESTREAM_CLASSES: the classes are "
                          "otherwise learnt from the labels, and the default label must be one of them")
    if s.labels.on_expiry == "default" and s.labels.expiry_label not in learner.codes:
        raise ConfigError(f"ACTIVESTREAM_LABELS__EXPIRY_LABEL: {s.labels.expiry_label!r} is not one of "
                          f"the classes {list(learner.classes)}")


def warm_up(learner: Any, n_features: int, *, batch_reads: bool = True) -> None:
    """Load (or compile into numba's on-disk cache) every loop a service's first batches run: the
    codecs, ``learner``'s scoring, deciding and learning, and with ``batch_reads`` the batch
    reader's. Leaves no trace in the learner, not even in its counters."""
    empty = Rows.stack([], n_features)
    messages.decode_features([], n_features, 0.0)
    # repeated indices and named features: the kernels that sum a row's repeated indices
    decode_feature_batch([b'{"id":"w","features":{"indices":[0,0],"values":[1,2]}}',
                          b'{"id":"v","features":{"warm-up":1}}'], n_features, lambda ks: np.zeros(len(ks)))
    messages.decode_labels([], learner.codes, 0.0)
    learner.score(empty)
    state = learner.state_dict()
    learner.decide(empty, ids=[])
    encode_predictions(["warm-up"], [0], [0.0], [1.0], [False], [0.0], 0, 0.0, "t", [0], [0])
    learner.learn_many(empty, np.array([], dtype=object), predicted=np.array([], dtype=np.int64))
    learner.load_state_dict(state)
    if batch_reads:
        batch_reader.warm_up()


class LearnerState:
    """The learner as a part of a checkpoint (:class:`consumer.state.Stateful`). With
    ``allow_param_change``, a checkpoint saved with other hyper-parameters loads with the new ones."""

    namespace = "learner"
    format_version = LEARNER_FORMAT_VERSION

    def __init__(self, learner: Any, allow_param_change: bool = False) -> None:
        self.learner, self.allow_param_change = learner, allow_param_change

    def state_dict(self) -> dict[str, np.ndarray]:
        return self.learner.state_dict()

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        try:
            self.learner.load_state_dict(state, allow_param_change=self.allow_param_change)
        except ValueError as exc:
            raise ValueError(f"{exc}. Set ACTIVESTREAM_CHECKPOINT__ALLOW_PARAM_CHANGE=true to load it with the new "
                             "hyper-parameters, or point ACTIVESTREAM_CHECKPOINT_DIR elsewhere to start a new model"
                             ) from None
