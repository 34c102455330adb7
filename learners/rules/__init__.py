"""Update rules, one family per module."""

from learners.rules.pa import PARule
from learners.rules.perceptron import PerceptronRule

__all__ = ["PARule", "PerceptronRule"]
