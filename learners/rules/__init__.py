"""Update rules, one family per module."""

from learners.rules.cost_sensitive import CPARule, CSPARule, PAUMRule
from learners.rules.multiclass import MaxScorePerceptronRule, MPARule
from learners.rules.pa import PARule
from learners.rules.perceptron import PerceptronRule

__all__ = ["CPARule", "CSPARule", "MPARule", "MaxScorePerceptronRule", "PARule", "PAUMRule", "PerceptronRule"]
