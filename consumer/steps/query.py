"""Query: how the service decides whether to ask for a record's label.

1. The learner decides, for the whole batch in one compiled call (:meth:`learners.base.Learner.decide`):
   its query strategy turns each record's scores into a query probability p, a coin keyed by the
   record's id says yes with probability p, and the budget controller (the rate, count or cost an
   operator set, :mod:`consumer.budget`) moves the strategy's knob so that the requests keep to it.
   The controller's clock runs on the records' times where they agree with the processing time.
2. After a restart, a record decided before it keeps that decision (:class:`consumer.recovery.Recovery`):
   its prediction and request are not made again, and the controller counts the decision kept.
3. Granted: of the records asked for, those whose id is not already waiting for its label, the first
   record of an id seen twice in the batch.
4. Requested: a label request each (with its features, prediction, p and expiry), and, where this
   process joins the labels itself, a pending entry each.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from consumer import messages
from consumer.budget import CostModel, record_times
from consumer.config import Settings
from consumer.fastwrite import write_label_requests
from consumer.pending import Entry, PendingStore
from consumer.records import pack_keys
from consumer.recovery import Recovery
from consumer.steps.batch import Batch
from learners.budget import advance_clock

if TYPE_CHECKING:
    from consumer.output_formats import OutputFormat

__all__ = ["Decided", "Query"]


class Decided(NamedTuple):
    """Each record's decision: its label (class values), score, query probability, class code,
    whether its label was requested, and (after a restart) whether its prediction was produced before."""

    labels: np.ndarray
    scores: Any
    probs: Any
    codes: np.ndarray
    requested: np.ndarray
    produced: list[bool] | None


class Query:
    """Decide and grant (see the module docstring). ``keeps_pending``: whether this process joins
    the labels of its requests (a scorer leaves that to the trainer); ``framing()``: how the outputs
    are framed (None: plain JSON)."""

    def __init__(self, learner: Any, pending: PendingStore, recovery: Recovery, costs: CostModel,
                 settings: Settings, *, keeps_pending: bool, framing: Callable[[], OutputFormat | None]) -> None:
        self.learner, self.pending, self.recovery, self.costs = learner, pending, recovery, costs
        self.settings, self.keeps_pending, self.framing = settings, keeps_pending, framing

    def __call__(self, decoded: Any, partitions: np.ndarray, offsets: np.ndarray, now: float,
                 batch: Batch) -> Decided:
        s, learner = self.settings, self.learner
        n = len(decoded.ids)
        ts = np.asarray(decoded.ts, dtype=np.float64)
        controller = learner.budget
        times = None if controller is None else advance_clock(
            record_times(ts, now, s.labels.clock_tolerance_s), now, s.labels.clock_tolerance_s, controller.clock)
        d = learner.decide(decoded.rows, ids=decoded.keys(), times=times)  # step 1
        labels, scores, probs, codes = d.label, d.scores.p, d.probability, d.predicted
        produced = None  # the prediction is already in the topic (recovery)
        requested = np.zeros(n, dtype=np.bool_)
        if self.recovery.recorded:  # step 2
            labels, scores, probs, codes = labels.tolist(), scores.tolist(), probs.tolist(), codes.tolist()
            wants, produced = d.query.tolist(), [False] * n
            for i in range(n):
                recorded = self.recovery.take((s.topics.features, int(partitions[i]), int(offsets[i])))
                if recorded is not None:
                    self._keep_recorded(i, recorded, labels, scores, probs, wants, codes, produced, requested,
                                        decoded, batch)
            asked = [i for i in range(n) if wants[i] and not requested[i]]
            codes = np.asarray(codes, dtype=np.int64)
            labels = learner.decode(codes)
        else:
            asked = np.flatnonzero(d.query).tolist()
        granted = self._grant(asked, decoded, batch)  # step 3
        if granted:
            self._request(granted, labels, scores, probs, codes, now, d, decoded, partitions, offsets, batch)
            requested[granted] = True
        return Decided(labels, scores, probs, codes, requested, produced)

    def _grant(self, asked: list[int], decoded: Any, batch: Batch) -> list[int]:
        """Step 3: the records among ``asked`` whose label is requested."""
        ids, requested, waiting = decoded.ids, batch.requested_ids, self.pending.ids()
        fresh = [i for i in asked if ids[i] not in waiting and ids[i] not in requested]
        if len({ids[i] for i in fresh}) < len(fresh):  # an id twice in the batch: its first record asks
            first: dict[str, int] = {}
            for i in fresh:
                first.setdefault(ids[i], i)
            fresh = list(first.values())
        requested.update(ids[i] for i in fresh)
        batch.suppressed += len(asked) - len(fresh)  # already waiting for its label
        return fresh

    def _request(self, granted: list[int], labels: np.ndarray, scores: Any, probs: Any, codes: np.ndarray,
                 now: float, decisions: Any, decoded: Any, partitions: np.ndarray, offsets: np.ndarray,
                 batch: Batch) -> None:
        """Step 4: a label request and a pending entry for each of the ``granted`` records, all
        sharing one copy of their features (one gather for all of them)."""
        s, version = self.settings, self.learner.labels_
        expires_at = now + s.labels.ttl_s
        at = np.asarray(granted)
        rows = decoded.rows.take(at)
        score, probability = np.asarray(scores, dtype=np.float64)[at], np.asarray(probs, dtype=np.float64)[at]
        gap = decisions.scores.gap
        uncertainty = messages.uncertainty(score, None if gap is None else gap[at])
        ids, predicted = list(map(decoded.ids.__getitem__, granted)), labels[at].tolist()
        costs = self.costs.of_many(predicted)
        if self.keeps_pending:
            # tuple.__new__ makes each Entry without a Python call per entry (Entry._make costs twice as much)
            entries = map(tuple.__new__, repeat(Entry), zip(repeat(rows), range(len(granted)), codes[at].tolist(),
                                                            probability.tolist(), score.tolist(), repeat(now),
                                                            repeat(expires_at), costs.tolist(), strict=False))
            batch.pending += zip(ids, entries, strict=True)
        framing, topic = self.framing(), s.topics.label_requests
        requests = write_label_requests(ids, decoded.features_packed(granted), predicted, score, probability,
                                        uncertainty, costs, now, expires_at, version, s.topics.features,
                                        partitions[at], offsets[at], b"" if framing is None else framing.prefix(topic))
        if framing is not None:
            requests = framing.frame(topic, requests)
        batch.outputs.append((s.topics.label_requests, pack_keys(ids), requests, partitions[at]))
        batch.requests += len(granted)

    def _keep_recorded(self, i: int, recorded: Any, labels: list, scores: list, probs: list, wants: list,
                       codes: list, produced: list, requested: Any, decoded: Any, batch: Batch) -> None:
        """Step 2 for record i, decided before the restart: keep that decision, do not produce it again."""
        made = recorded.prediction or recorded.request
        labels[i] = made["label"] if recorded.prediction else made["prediction"]
        scores[i], probs[i] = made["score"], made["probability"]
        codes[i] = self.learner.code_of_prediction(labels[i])
        produced[i] = recorded.prediction is not None
        decided_now = wants[i]
        wants[i] = recorded.prediction["label_requested"] if recorded.prediction else True
        controller = self.learner.budget
        if controller is not None and decided_now != wants[i]:
            # the controller counts the decision kept, not the one it just made: a request made before
            # the restart (or one whose prediction landed and whose request was lost with the process,
            # made again below) is counted, one not made is taken back
            if wants[i]:
                controller.count_request()
            else:
                controller.uncount_request()
        if wants[i] and recorded.request is not None:
            r = recorded.request
            if self.keeps_pending:
                batch.pending.append((decoded.ids[i], Entry(decoded.rows.take([i]), 0, codes[i], probs[i], scores[i],
                                                            r["requested_at"], r["expires_at"], r["cost"])))
            batch.requested_ids.add(decoded.ids[i])
            batch.requests += 1  # made after the checkpoint whose totals were restored: count it again
            requested[i] = True  # asked before the restart: nothing more to do for it
