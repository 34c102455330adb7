"""Score: a batch of feature records decoded, scored and decided in one call, its predictions written."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import numpy as np

from consumer import messages
from consumer.clock import Clock
from consumer.config import Settings
from consumer.errors import InvalidRecord
from consumer.fastjson import ScanJob, run_scan, scan_result
from consumer.records import encode_predictions
from consumer.steps.batch import Batch
from consumer.steps.query import Query

if TYPE_CHECKING:
    from consumer.output_formats import OutputFormat

__all__ = ["Score"]


class Score:
    """Turn a batch of feature messages into a :class:`Batch` ready to emit: records that cannot be
    decoded go to the dead-letter topic, the others are scored and decided (:mod:`consumer.steps.query`)
    and predicted. ``framing()``: how the outputs are framed (None: plain JSON)."""

    def __init__(self, learner: Any, query: Query, settings: Settings, clock: Clock,
                 framing: Callable[[], OutputFormat | None]) -> None:
        self.learner, self.query, self.settings, self.clock, self.framing = learner, query, settings, clock, framing

    def __call__(self, good: list[Any], values: list[bytes | None], job: ScanJob | None = None,
                 scan: Future | None = None, refused: dict[int, InvalidRecord] | None = None) -> Batch:
        """``good``: messages without an error, ``values`` theirs; ``job``, ``scan``: the compiled scan
        of the values, if it was started when the batch was read; ``refused``: framed values refused
        before decoding."""
        s, topics = self.settings, self.settings.topics
        now = self.clock.now()
        batch = Batch(started=self.clock.monotonic())
        scanned = None if job is None else scan_result(job, *(run_scan(job) if scan is None else scan.result()))
        decoded, positions, rejected = messages.decode_features(good, s.n_features, now, scanned, values, refused)
        for msg, err in rejected:
            batch.outgoing.append((topics.dead_letters, *messages.dead_letter(msg, err)))
            batch.dead[(msg.topic(), err.reason)] += 1
        # one topic (the subscription is a literal name); partitions and offsets as columns
        partitions, offsets = messages.places_of(good)
        batch.offsets = {(topics.features, p): o + 1 for p, o in messages.last_offsets(partitions, offsets).items()}
        n = len(decoded.ids)
        if n == 0:
            return batch
        batch.key_id_mismatches = messages.key_id_mismatches(good, decoded)
        if len(positions) < len(good):
            partitions, offsets = partitions[positions], offsets[positions]
        d = self.query(decoded, partitions, offsets, now, batch)
        ts = np.asarray(decoded.ts, dtype=np.float64)
        framing = self.framing()
        values = encode_predictions(decoded.ids, d.labels.tolist(), d.scores, d.probs, d.requested, ts,
                                    self.learner.labels_, now, topics.features, partitions, offsets,
                                    b"" if framing is None else framing.prefix(topics.predictions))
        keys, sources = decoded.packed_ids(), partitions
        if d.produced is not None and any(d.produced):
            left = ~np.array(d.produced, dtype=np.bool_)
            keys, values, sources = keys.select(left), values.select(left), sources[left]
        if framing is not None:
            values = framing.frame(topics.predictions, values)
        batch.outputs.append((topics.predictions, keys, values, sources))
        batch.predicted = d.codes
        batch.probability = np.asarray(d.probs)
        batch.record_ts = ts
        batch.records = n
        return batch
