"""Update rules, one family per module."""

from learners.rules.adaptive import DualAveragingRule, MirrorDescentRule
from learners.rules.adaptive_multiclass import MulticlassDualAveragingRule, MulticlassMirrorDescentRule
from learners.rules.arow import AROWDiagRule, AROWRule
from learners.rules.cost_sensitive import CPARule, CSPARule, PAUMRule
from learners.rules.cw import CWDiagRule, CWRule
from learners.rules.factored import FactoredSoftmaxRule
from learners.rules.kernel_pa import KernelPARule
from learners.rules.lasec import LASECDiagRule, LASECRule
from learners.rules.logistic import LogisticRule, SoftmaxRule
from learners.rules.multiclass import MaxScorePerceptronRule, MPARule
from learners.rules.pa import PARule
from learners.rules.paired import PairedFactoredSoftmaxRule, PairedLogisticRule
from learners.rules.perceptron import PerceptronRule
from learners.rules.rls import RLSRule
from learners.rules.soal import SOALDiagRule, SOALRule
from learners.rules.sop import SOPDiagRule, SOPRule
from learners.rules.tracking import ModifiedPerceptronRule, RandomizedBudgetPerceptronRule, ShiftingPerceptronRule

__all__ = [
    "AROWDiagRule",
    "AROWRule",
    "CPARule",
    "CSPARule",
    "CWDiagRule",
    "CWRule",
    "DualAveragingRule",
    "FactoredSoftmaxRule",
    "KernelPARule",
    "LASECDiagRule",
    "LASECRule",
    "LogisticRule",
    "MPARule",
    "MaxScorePerceptronRule",
    "MirrorDescentRule",
    "ModifiedPerceptronRule",
    "MulticlassDualAveragingRule",
    "MulticlassMirrorDescentRule",
    "PARule",
    "PAUMRule",
    "PairedFactoredSoftmaxRule",
    "PairedLogisticRule",
    "PerceptronRule",
    "RLSRule",
    "RandomizedBudgetPerceptronRule",
    "SOALDiagRule",
    "SOALRule",
    "SOPDiagRule",
    "SOPRule",
    "ShiftingPerceptronRule",
    "SoftmaxRule",
]
