"""The learners a user gets without naming one: the service without ``ACTIVESTREAM_LEARNER`` and
``activestream replay`` without ``--learner`` (docs: learners, "Defaults").

A module of its own because choosing a default changes no learner: the leaderboard, whose rows are
reused only while the code they depend on is unchanged (``benchmarks.leaderboard.learner_key``), does
not hash it, so the default can be set from its results without running them again.
"""

from __future__ import annotations

__all__ = ["DEFAULT_LEARNERS", "default_learner"]

# one for two classes, one for more; registry names (tests/unit/learners/test_registry.py checks them)
DEFAULT_LEARNERS: dict[str, str] = {"binary": "lr-ada-entropy-rff", "multiclass": "mlr-ada-entropy"}


def default_learner(n_classes: int) -> str:
    """The registry name of the default learner for ``n_classes`` classes."""
    return DEFAULT_LEARNERS["binary" if n_classes <= 2 else "multiclass"]
