"""The small value types that rules, queries, the learner and the budget controller pass each other.

:class:`Scores` (a rule's view of a batch), :class:`Decisions` (the learner's answer for it) and
:class:`Knob` (the query parameter a budget controller moves). This module imports nothing of the
package, so every other module can use them without importing the one that makes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Decisions", "Knob", "Scores"]


@dataclass(frozen=True, slots=True)
class Scores:
    """A rule's output for a batch; query strategies read it."""

    p: np.ndarray  # signed margin (binary) or top-1 score, shape (n,)
    gap: np.ndarray | None = None  # top-1 minus top-2 score (multiclass)
    # the rule's scale term of x: xᵀΣx (SOAL), xᵀH⁻¹x (D-ADA), the squared radius X'² (Perceptron,
    # for SEL-ada); None if the rule has no such term
    v: np.ndarray | None = None
    top: np.ndarray | None = None  # index of the highest-scoring class (multiclass)


@dataclass(frozen=True, slots=True)
class Decisions:
    """What the learner decided for a batch of records."""

    scores: Scores
    predicted: np.ndarray  # internal codes: ±1 (binary) or class index
    label: np.ndarray  # the same prediction in the user's labels
    probability: np.ndarray  # query probability
    query: np.ndarray  # bool: ask for this label

    @property
    def weight(self) -> np.ndarray:
        """Importance weight 1/probability of each queried record (0 where not queried)."""
        with np.errstate(divide="ignore"):
            return np.where(self.query, 1.0 / self.probability, 0.0)


@dataclass(frozen=True, slots=True)
class Knob:
    """A query strategy's parameter that its probability is monotone in.

    Attributes
    ----------
    name : str
        The parameter's name (``"delta"``, ``"b"``, ``"rate"``, ``"kappa"``).
    index : int
        Its position in the strategy's packed parameters ``qp``.
    low, high : float > 0
        The range the controller searches (on a log scale).
    increasing : bool
        True if a larger value asks for more labels.
    floor : int or None
        Position in ``qp`` of the strategy's floor under its probability (``min_probability``), if
        it has one: under a controller the floor is lowered to ``query_floor`` · r, so that a low
        rate is not spent on the floor alone.
    """

    name: str
    index: int
    low: float
    high: float
    increasing: bool = True
    floor: int | None = None

    def value(self, position: float) -> float:
        """The knob at ``position`` ∈ [0, 1] of its range, 0 asking least and 1 most."""
        s = position if self.increasing else 1.0 - position
        return math.exp(math.log(self.low) + s * (math.log(self.high) - math.log(self.low)))
