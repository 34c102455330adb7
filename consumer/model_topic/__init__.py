"""A learner's state on a Kafka topic, in numbered versions, and followers that load it atomically.

One trainer publishes ``learner.state_dict()`` to the *model topic* (one partition, partition 0,
``cleanup.policy=compact`` in production); many scorers follow it. A publication is some chunk
records, then, once every chunk is acknowledged, one manifest record:

- chunks: key ``model/<version>/<i>``, value a slice of at most ``chunk_bytes`` of the payload (an
  ``.npz`` archive of the full state, or of a :func:`delta` against the previous version);
- manifest: key ``model/manifest/<version>``, a JSON object naming the chunks' offsets, their
  count, size and SHA-256, the version the delta applies to (``base_version``) and the offset of
  the full snapshot its chain starts from (``snapshot_offset``).

The manifest key carries the version because compaction keeps one record per key: under a single
``model/manifest`` key every manifest but the newest would be compacted away, and a follower
reading a chain from its snapshot could no longer verify the deltas in between.

Checkpoints (:meth:`ModelPublisher.publish_checkpoint`) use the prefix ``checkpoint/`` instead of
``model/`` and take version numbers from the same sequence (a delta names its base, so the model's
versions need not be consecutive); followers skip them by key, never reading their values.

Once a full snapshot's chunks are acknowledged, the publisher tombstones the records of the chains
before the previous one (those it published itself), so compaction keeps about two chains.

A checkpoint's *parts* (groups of arrays that never change once made, as in
:mod:`consumer.checkpoint`) are published once each, as chunks keyed ``part/<number>/<i>`` in the
transaction of the first checkpoint that holds them; every checkpoint's manifest lists the parts it
holds (``parts``: name → number, offsets, chunk count, size and SHA-256), and a reader assembles them
into the state. A part neither the newest checkpoint nor the one before holds is tombstoned.

A follower only ever holds a complete, verified model: a full snapshot replaces what it holds, a
delta applies only to the exact version it was computed against, anything else waits for the next
full snapshot. Whether a state fits the caller's learner (learner, dimension, format version) is not
this module's business: ``learner.load_state_dict`` raises on a mismatch.
"""

from __future__ import annotations

from consumer.model_topic.codec import apply_delta, decode_state, delta, encode_state
from consumer.model_topic.follow import Model, ModelFollower
from consumer.model_topic.publish import DEFAULT_CHUNK_BYTES, ModelPublisher, Published
from consumer.model_topic.read import newest_manifest, read_model_checkpoint

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "Model",
    "ModelFollower",
    "ModelPublisher",
    "Published",
    "apply_delta",
    "decode_state",
    "delta",
    "encode_state",
    "newest_manifest",
    "read_model_checkpoint",
]
