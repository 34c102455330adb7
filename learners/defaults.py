"""The learners a user gets without naming one: the service without ``ACTIVESTREAM_LEARNER`` and
``activestream replay`` without ``--learner`` (docs: learners, "Defaults").

A module of its own because choosing a default changes no learner: the leaderboard, whose rows are
reused only while the code they depend on is unchanged (``benchmarks.leaderboard.learner_key``), does
not hash it, so the default can be set from its results without running them again.
"""

from __future__ import annotations

from learners.memory import MAX_STATE_BYTES

__all__ = ["DEFAULT_LEARNERS", "KERNEL_MAX_FEATURES", "default_learner"]

# registry names (tests/unit/learners/test_registry.py checks them): the binary default, the binary
# default for rows wider than KERNEL_MAX_FEATURES, the multiclass default
DEFAULT_LEARNERS: dict[str, str] = {"binary": "lr-ada-entropy-rff", "binary, wide rows": "lr-ada-entropy",
                                    "multiclass": "mlr-factored-entropy"}

# The widest rows the binary default maps: its Ω, (d + 1) × 512 floats, is then made whole (a quarter
# of MAX_STATE_BYTES, as learners.features keeps it). Past it, on hashed names (d = 2²⁰), most of a
# row's features would have their entries recomputed at every use, and the leaderboard's wide text
# sets gained a point at most from the map.
KERNEL_MAX_FEATURES = MAX_STATE_BYTES // 4 // (8 * 512) - 1


def default_learner(n_classes: int, n_features: int | None = None) -> str:
    """The registry name of the default learner for ``n_classes`` classes and rows of ``n_features``
    features (None: as wide as the service's hashed names, past :data:`KERNEL_MAX_FEATURES`)."""
    if n_classes > 2:
        return DEFAULT_LEARNERS["multiclass"]
    narrow = n_features is not None and n_features <= KERNEL_MAX_FEATURES
    return DEFAULT_LEARNERS["binary" if narrow else "binary, wide rows"]
