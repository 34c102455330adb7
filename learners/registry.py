"""Every algorithm of the papers by name: an update rule, a query strategy, defaults, a citation.

``make("paa-1")`` builds PAA-I with our measured best configuration; ``make("paa-1",
**paper_protocol("paa-1"))`` the learner as the paper ran it (no intercept, unit-norm rows).
Names are lower-case, hyphenated, with arabic numerals (``"paa-1"``); the papers' spellings
(``"PAA-I"``, ``"LEPE"``, ``"SELada"``) are accepted as aliases.

Examples
--------
>>> make("PAA-I").name
'paa-1'
>>> make("paa-1", C=0.25).rule.C
0.25
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from learners.base import Learner, QueryStrategy, UpdateRule
from learners.defaults import DEFAULT_LEARNERS, default_learner
from learners.queries import (
    AlwaysQuery,
    BBQQuery,
    DecayingMarginQuery,
    DiscriminationQuery,
    EntropyQuery,
    FixedRateQuery,
    GapDiscriminationQuery,
    GapEntropyQuery,
    GapIWALQuery,
    GapQuery,
    IWALQuery,
    MarginQuery,
    SelAdaQuery,
    SOALQuery,
)
from learners.rules import (
    AROWDiagRule,
    AROWRule,
    CPARule,
    CSPARule,
    CWDiagRule,
    CWRule,
    DualAveragingRule,
    KernelPARule,
    LASECDiagRule,
    LASECRule,
    LogisticRule,
    MaxScorePerceptronRule,
    MirrorDescentRule,
    ModifiedPerceptronRule,
    MPARule,
    MulticlassDualAveragingRule,
    MulticlassMirrorDescentRule,
    PairedFactoredSoftmaxRule,
    PairedLogisticRule,
    PARule,
    PAUMRule,
    PerceptronRule,
    RandomizedBudgetPerceptronRule,
    RLSRule,
    ShiftingPerceptronRule,
    SOALDiagRule,
    SOALRule,
    SoftmaxRule,
    SOPDiagRule,
    SOPRule,
)
from learners.rules.matrix import MatrixTooLargeError

__all__ = [
    "ALGORITHMS", "DEFAULT_LEARNERS", "LEARNER_DEFAULTS", "PAPER_PROTOCOL", "PAPER_SPELLINGS", "Spec",
    "canonical_name", "default_learner", "make", "paper_protocol",
]


# The data model a learner gets by default: an intercept of 1 on raw (unnormalised) rows, ties
# broken towards the negative class: the best mean F1 of PAA-I and PAA-II on tuning permutations of
# the PAA paper's datasets (docs: learners, "Defaults"). Without an intercept an empty row has p = 0
# and is always queried.
LEARNER_DEFAULTS: dict[str, Any] = {"bias": 1.0, "normalize": False, "tie": "negative", "seed": 0}

# Default C and δ of the PA family, same measurement with the data model above: the C with the best
# mean F1, and a δ that lands about 10 % of queries across the datasets. SEL-ada's β and PEA's δ likewise.
_C_PA1, _C_PA2, _DELTA_PA = 0.25, 0.125, 0.125

# The protocol of the papers' experiments: a linear model without intercept, every row scaled to
# unit norm (the PAA paper's Sect. 3.3 remark, and the default of its authors' group's reference
# code); its tables are reproduced closer with unit-norm rows than with raw ones (docs: reproductions).
PAPER_PROTOCOL: dict[str, Any] = {"bias": 0.0, "normalize": True, "tie": "negative"}
# ... and the query rule of Sect. 3.2 of the PAA paper, δ/(δ+|p|), for the learners that take it.
PAPER_QUERY: dict[str, Any] = {"offset": 0.0}

_PAA = "Lu, Zhao & Hoi, Online Passive-Aggressive Active learning, Mach. Learn. 103(2), 2016"
_SOP = "Cesa-Bianchi, Conconi & Gentile, A second-order perceptron algorithm, SIAM J. Comput. 34(3), 2005"
_SOAL = "Hao, Zhao, Lu, Hoi, Miao & Zhang, SOAL: Second-order Online Active Learning, ICDM 2016"
_HD = "Online active learning for high-dimensional classification (D-ADA / D-AMD)"
_SEL = ("Cesa-Bianchi, Gentile & Zaniboni, Worst-case analysis of selective sampling for linear classification, "
        "JMLR 7, 2006")
_DRIFT = "Moroshko & Crammer, Selective Sampling with Drift, AISTATS 2014"
_TRACK = "Cavallanti, Cesa-Bianchi & Gentile, Mach. Learn. 69, 2007"
_KPA = "Ezukwoke & Zareian, Online Learning and Active Learning: PA vs SVM"
_IWAL = ("IWAL: Beygelzimer, Hsu, Langford & Zhang, Agnostic Active Learning Without Constraints, NIPS 2010, "
         "Algorithm 1, as Vowpal Wabbit's --active")
# IWAL's c₀ (binary, multiclass): chosen like δ of the PAA family, for a typical query ratio on tuning
# permutations rather than VW's default, which asks for nearly every label here (docs/learners.md, Defaults)
_MELLOW, _MELLOW_GAP = 2.0**-5, 2.0**-10
_LOG = "online logistic regression (Zhang, ICML 2004)"
_ADAGRAD = "diagonal AdaGrad (Duchi, Hazan & Singer, JMLR 12, 2011)"
_PAIRED = ("paired with a reactive twin (Bach & Maloof, ICDM 2008) that replaces it by Page's CUSUM on their "
           "mistakes (Biometrika 41, 1954)")
_PAIR = {"reactive_beta": 0.99, "reactive_lam": 0.005, "replace_after": 10.0}
_RFF = "random Fourier features (Rahimi & Recht, NIPS 2007, Algorithm 1)"
_ENTROPY = ("River active.EntropySampler (entropy^discount); Settles, Active Learning Literature Survey, 2009, "
            "Sect. 3.1")
# LASEC's (b, c): the best of a 36-point grid on three draws of the synthetic shifting stream
# (d = 50, target switched every 500 rows), tuned as Moroshko & Crammer tune theirs "using a random
# draw of the data", on raw rows. Under the paper protocol (unit-norm rows) the same grid picks
# (0.01, 3) on that stream and (10, 10⁶) on USPS: benchmarks/results/004_drift.md.
_LASEC = {"b": 0.01, "c": 1000.0}


@dataclass(frozen=True, slots=True)
class Spec:
    """One named algorithm: its rule, its query, their defaults and where they come from."""

    rule: type[UpdateRule]
    query: type[QueryStrategy]
    cite: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)  # parameters that define the algorithm
    aliases: tuple[str, ...] = ()

    @property
    def scalable(self) -> bool:
        """Whether the entry takes online feature scaling (``scale``): its rule can move its state to
        a feature's new scale (before a random feature map, the scale is an input transform)."""
        return self.rule.scaling is not None


_SOAL_DEFAULTS = {"eta": 1.0, "gamma": 1.0}
_ADA_DEFAULTS = {"delta": 1.0, "eta": 1.0}
# a_t of the discrimination query (Remark 3 of the high-dimensional paper), fixed per entry
_MARGIN, _DISCRIMINATION, _DISCRIMINATION_I = {"a": "zero"}, {"a": "inverse-norm"}, {"a": "one"}


def _adaptive_family(rule: type, query: type, update: str, *, multiclass: bool = False) -> dict[str, Spec]:
    """One update's rows of the high-dimensional paper: supervised, R- (random), M- (margin, a_t = 0),
    D- (a_t = 1/max(1, xᵀx)) and D-…-I (a_t = 1), e.g. da, r-ada, m-ada, d-ada, d-ada-i."""
    m = "m" if multiclass else ""
    up, algorithm = update.upper(), "Algorithm 2" if multiclass else "Algorithm 1"
    supervised = m + {"ada": "da", "amd": "md"}[update]
    margin = "multiclass margin query" if multiclass else "margin query"
    queried = {**_ADA_DEFAULTS, "b": 1.0}
    return {
        supervised: Spec(rule, AlwaysQuery, defaults=_ADA_DEFAULTS, cite=f"{_HD}: {supervised.upper()}, supervised"),
        f"{m}r-{update}": Spec(rule, FixedRateQuery, defaults={**_ADA_DEFAULTS, "rate": 0.1},
                               cite=f"{_HD}: {m.upper()}R-{up}, random queries"),
        f"{m}m-{update}": Spec(rule, query, defaults=queried, fixed=_MARGIN,
                               cite=f"{_HD}: {m.upper()}M-{up}, {margin} (a_t = 0)"),
        f"{m}d-{update}": Spec(rule, query, defaults=queried, fixed=_DISCRIMINATION,
                               cite=f"{_HD}: {m.upper()}D-{up}, {algorithm}, a_t = 1/max(1, xᵀx)"),
        f"{m}d-{update}-i": Spec(rule, query, defaults=queried, fixed=_DISCRIMINATION_I,
                                 cite=f"{_HD}: {m.upper()}D-{up}-I, {algorithm}, a_t = 1"),
    }



ALGORITHMS: dict[str, Spec] = {
    # fully supervised: every label is requested
    "pe": Spec(PerceptronRule, AlwaysQuery, cite=f"Rosenblatt 1958; baseline PE of {_PAA}", aliases=("perceptron",)),
    "pa": Spec(PARule, AlwaysQuery, fixed={"mode": 0}, cite="Crammer et al., JMLR 7, 2006: PA"),
    "pa-1": Spec(PARule, AlwaysQuery, fixed={"mode": 1}, defaults={"C": _C_PA1}, cite="Crammer et al. 2006: PA-I"),
    "pa-2": Spec(PARule, AlwaysQuery, fixed={"mode": 2}, defaults={"C": _C_PA2}, cite="Crammer et al. 2006: PA-II"),
    # random queries at a fixed rate (Sect. 6.1.1: RPE, RPA)
    "rpe": Spec(PerceptronRule, FixedRateQuery, defaults={"rate": 0.1},
                cite=f"Cesa-Bianchi & Lugosi 2006; RPE of {_PAA}, Sect. 6.1.1"),
    "rpa": Spec(PARule, FixedRateQuery, fixed={"mode": 0}, defaults={"rate": 0.1},
                cite=f"RPA of {_PAA}, Sect. 6.1.1"),
    "rpa-1": Spec(PARule, FixedRateQuery, fixed={"mode": 1}, defaults={"C": _C_PA1, "rate": 0.1},
                  cite=f"RPA-I of {_PAA}, Sect. 6.1.1"),
    "rpa-2": Spec(PARule, FixedRateQuery, fixed={"mode": 2}, defaults={"C": _C_PA2, "rate": 0.1},
                  cite=f"RPA-II of {_PAA}, Sect. 6.1.1"),
    # margin queries δ/(δ+|p|)
    "pea": Spec(PerceptronRule, MarginQuery, defaults={"delta": 1.0}, aliases=("lepe", "perceptron-ss", "ape"),
                cite="Cesa-Bianchi, Gentile & Zaniboni, JMLR 7, 2006: selective sampling Perceptron (PEA/LEPE)"),
    "sel-ada": Spec(PerceptronRule, SelAdaQuery, defaults={"delta": 2.0**-8}, aliases=("selada",),
                    cite="Cesa-Bianchi, Gentile & Zaniboni, JMLR 7, 2006, Fig. 2: adaptive selective sampling "
                         "(SEL-ada), b_t = β X'² √(1 + K)"),
    # APA, APA-I/II: the active PA of Ezukwoke & Zareian and of Hao et al. ("APAI" and "APAII" in its text)
    "paa": Spec(PARule, MarginQuery, fixed={"mode": 0}, defaults={"delta": _DELTA_PA}, aliases=("apa",),
                cite=f"{_PAA}: PAA, Algorithm 2"),
    "paa-1": Spec(PARule, MarginQuery, fixed={"mode": 1}, defaults={"C": _C_PA1, "delta": _DELTA_PA},
                  aliases=("apa-1", "apai"),
                  cite=f"{_PAA}: PAA-I, Algorithm 2"),
    "paa-2": Spec(PARule, MarginQuery, fixed={"mode": 2}, defaults={"C": _C_PA2, "delta": _DELTA_PA},
                  aliases=("apa-2", "apaii"),
                  cite=f"{_PAA}: PAA-II, Algorithm 2"),
    # beyond the papers: the PA updates with River's entropy query H₂(σ(p))^k, which decays like
    # |p|e^(−|p|) where δ/(δ+|p|) decays like 1/|p| (k = River's default discount factor)
    # beyond the papers: the log loss at every label, whose score is a log-odds the entropy query reads as
    # a probability; lr-entropy is River's LogisticRegression step, lr-ada-entropy AdaGrad's, its η and
    # δ and mlr-ada-entropy's unit-norm rows chosen on the tuning permutations (benchmarks.logistic_defaults)
    "lr-entropy": Spec(LogisticRule, EntropyQuery, fixed={"step": "sgd"}, defaults={"eta": 0.01, "discount": 3.0},
                       cite=f"SGD step of {_LOG}; entropy query H₂(σ(p))^k after {_ENTROPY}"),
    # the defaults follow a change of concept by a reactive twin that forgets (β_r, λ_r) and replaces the
    # model after h = replace_after mistakes more than it: per default, the best rank on drifting streams
    # among the settings that lose no stationary set more than 0.01 to AdaGrad (benchmarks.drift_defaults);
    # a λ > 0 in the model itself bounds the weights, which a long stream (ijcnn1) pays for
    "lr-ada-entropy": Spec(PairedLogisticRule, EntropyQuery, fixed={"step": "adagrad"},
                           defaults={"eta": 0.5, "damping": 0.1, "discount": 3.0, "scale": "auto", "beta": 0.999,
                                     **_PAIR},
                           cite=f"{_ADAGRAD} step of {_LOG}, {_PAIRED}; entropy query H₂(σ(p))^k after {_ENTROPY}"),
    # lr-ada-entropy on [x, z(u)]: the row beside random Fourier features of the row lifted onto the
    # sphere, u = [x, 1]/‖[x, 1]‖; m and γ chosen on the tuning permutations (benchmarks.kernel_defaults)
    "lr-ada-entropy-rff": Spec(PairedLogisticRule, EntropyQuery, fixed={"step": "adagrad"},
                               defaults={"eta": 0.5, "damping": 0.1, "discount": 3.0, "rff_components": 512,
                                         "rff_gamma": 4.0, "rff_lift": 1.0, "rff_keep": True, "scale": "auto",
                                         "beta": 0.999, **_PAIR, "replace_after": 20.0},
                               cite=f"{_ADAGRAD} step of {_LOG} on the row and {_RFF} of the row lifted onto the "
                                    f"unit sphere, {_PAIRED}; entropy query H₂(σ(p))^k after {_ENTROPY}"),
    "paa-1-entropy": Spec(PARule, EntropyQuery, fixed={"mode": 1}, defaults={"C": _C_PA1, "discount": 3.0},
                          cite=f"PA-I update of {_PAA}; entropy query H₂(σ(p))^k after {_ENTROPY}"),
    # beyond the papers: IWAL's query, each label learnt with importance weight 1/P (C ω for C);
    # mellowness: _MELLOW above
    "paa-1-iwal": Spec(PARule, IWALQuery, fixed={"mode": 1}, defaults={"C": _C_PA1, "mellowness": _MELLOW},
                       cite=f"importance-weighted PA-I update of {_PAA}; query and weights of {_IWAL}"),
    "paa-2-iwal": Spec(PARule, IWALQuery, fixed={"mode": 2}, defaults={"C": _C_PA2, "mellowness": _MELLOW},
                       cite=f"importance-weighted PA-II update of {_PAA}; query and weights of {_IWAL}"),
    # multiclass (Sect. 4): max-score Perceptron and MPA over one weight row per class
    "mpe": Spec(MaxScorePerceptronRule, AlwaysQuery,
                cite="Crammer & Singer, JMLR 3, 2003: max-score multiclass Perceptron"),
    "mpa": Spec(MPARule, AlwaysQuery, fixed={"mode": 0},
                cite=f"Crammer et al. 2006: multiclass PA, Eqs. (3)-(4) of {_PAA}"),
    "mpa-1": Spec(MPARule, AlwaysQuery, fixed={"mode": 1}, defaults={"C": 1.0}, cite="Crammer et al. 2006: MPA-I"),
    "mpa-2": Spec(MPARule, AlwaysQuery, fixed={"mode": 2}, defaults={"C": 1.0}, cite="Crammer et al. 2006: MPA-II"),
    "mrpe": Spec(MaxScorePerceptronRule, FixedRateQuery, defaults={"rate": 0.1}, cite=f"MRPE of {_PAA}, Sect. 6.2.1"),
    "mrpa": Spec(MPARule, FixedRateQuery, fixed={"mode": 0}, defaults={"rate": 0.1},
                 cite=f"MRPA of {_PAA}, Sect. 6.2.1"),
    "mrpa-1": Spec(MPARule, FixedRateQuery, fixed={"mode": 1}, defaults={"C": 1.0, "rate": 0.1},
                   cite=f"MRPA-I of {_PAA}, Sect. 6.2.1"),
    "mrpa-2": Spec(MPARule, FixedRateQuery, fixed={"mode": 2}, defaults={"C": 1.0, "rate": 0.1},
                   cite=f"MRPA-II of {_PAA}, Sect. 6.2.1"),
    "mpea": Spec(MaxScorePerceptronRule, GapQuery, defaults={"delta": 1.0},
                 cite=f"MPEA of {_PAA}, Sect. 6.2.1: max-score Perceptron + top-2 gap query"),
    "mpaa": Spec(MPARule, GapQuery, fixed={"mode": 0}, defaults={"delta": 1.0},
                 cite=f"{_PAA}: MPAA, Algorithm 3 (gap query, Eq. 5)"),
    "mpaa-1": Spec(MPARule, GapQuery, fixed={"mode": 1}, defaults={"C": 1.0, "delta": 1.0},
                   cite=f"{_PAA}: MPAA-I, Algorithm 3"),
    "mpaa-2": Spec(MPARule, GapQuery, fixed={"mode": 2}, defaults={"C": 1.0, "delta": 1.0},
                   cite=f"{_PAA}: MPAA-II, Algorithm 3"),
    "mpaa-1-entropy": Spec(MPARule, GapEntropyQuery, fixed={"mode": 1}, defaults={"C": 1.0, "discount": 3.0},
                           cite=f"MPA-I update of {_PAA}; entropy query H₂(σ(gap))^k, gap = top-1 − top-2 score, "
                                f"after {_ENTROPY}"),
    "mlr-ada-entropy": Spec(SoftmaxRule, GapEntropyQuery, fixed={"step": "adagrad"},
                            defaults={"eta": 0.5, "normalize": True, "discount": 3.0},
                            cite=f"{_ADAGRAD} step of softmax {_LOG}; entropy query H₂(σ(gap))^k, gap = the "
                                 f"top-1 − top-2 log-odds, after {_ENTROPY}"),
    # mlr-ada-entropy with AdaGrad's k·D sums factored into one per class and one per feature; η and
    # the unit-norm rows chosen on the tuning permutations (benchmarks.logistic_defaults); paired as the
    # binary defaults, its twin's λ_r chosen on the relabelled multiclass streams (benchmarks.drift_defaults)
    "mlr-factored-entropy": Spec(PairedFactoredSoftmaxRule, GapEntropyQuery,
                                 defaults={"eta": 0.5, "normalize": True, "discount": 3.0, "scale": "auto",
                                           "beta": 0.999, **_PAIR, "reactive_lam": 0.02},
                                 cite=f"AdaGrad step of softmax {_LOG} with the sums of squared gradients "
                                      f"factored as Adafactor's (Shazeer & Stern, ICML 2018, Sect. 3), {_PAIRED}; "
                                      f"entropy query H₂(σ(gap))^k, gap = the top-1 − top-2 log-odds, after "
                                      f"{_ENTROPY}"),
    "mpaa-1-iwal": Spec(MPARule, GapIWALQuery, fixed={"mode": 1}, defaults={"C": 1.0, "mellowness": _MELLOW_GAP},
                        cite=f"importance-weighted MPA-I update of {_PAA}; {_IWAL}, G from the top-2 gap"),
    "mpaa-2-iwal": Spec(MPARule, GapIWALQuery, fixed={"mode": 2}, defaults={"C": 1.0, "mellowness": _MELLOW_GAP},
                        cite=f"importance-weighted MPA-II update of {_PAA}; {_IWAL}, G from the top-2 gap"),
    # cost-sensitive (Sect. 5): ρ from the sum or cost objective; C = ρ unless set (Sect. 6.3.2)
    "paum": Spec(PAUMRule, AlwaysQuery, defaults={"objective": "sum"},
                 cite=f"Li et al., ICML 2002: Perceptron with uneven margins; baseline of {_PAA}, Sect. 6.3.2"),
    "cpa": Spec(CPARule, AlwaysQuery, defaults={"objective": "sum"},
                cite=f"Crammer et al. 2006: cost-sensitive PA, prediction-based; baseline of {_PAA}, Sect. 6.3.2"),
    "csrnd": Spec(CSPARule, FixedRateQuery, defaults={"objective": "sum", "rate": 0.1},
                  cite=f"CSRND of {_PAA}, Sect. 6.3.2: CSPAA update + random queries"),
    # the paper's plain "CSPAA" (Tables 6-8) is the sum objective; Table 7's cost objective gives the
    # same ρ = T_n/T_p with its c_p = T_n/T, c_n = T_p/T
    "cspaa-sum": Spec(CSPARule, MarginQuery, fixed={"objective": "sum"}, defaults={"delta": 1.0}, aliases=("cspaa",),
                      cite=f"{_PAA}: CSPAA_sum, Algorithm 4 (Eq. 11, ρ = η_p T_n/(η_n T_p))"),
    # c_p = 0.9 is the paper's c_p = T_n/T on its 1:9 set URL1 (Table 7)
    "cspaa-cost": Spec(CSPARule, MarginQuery, fixed={"objective": "cost"}, defaults={"c_p": 0.9, "delta": 1.0},
                       aliases=("cspaa-cos",), cite=f"{_PAA}: CSPAA_cos, Algorithm 4 (Eq. 11, ρ = c_p/c_n)"),
    "cspaa-a": Spec(CSPARule, DecayingMarginQuery, defaults={"objective": "sum", "delta": 2.0**14},
                    aliases=("cspaa(a)",), cite=f"{_PAA}: CSPAA(a), Sect. 6.3.5 (δ_t = δ_(t-1)·t/(t+1), δ_0 = 2^14)"),
    # second-order Perceptron: full matrix (X) and diagonal (X-diag)
    "sop": Spec(SOPRule, AlwaysQuery, defaults={"a": 1.0}, cite=f"{_SOP}: SOP"),
    "sop-diag": Spec(SOPDiagRule, AlwaysQuery, defaults={"a": 1.0}, cite=f"{_SOP}: SOP, diagonal"),
    "sop-ss": Spec(SOPRule, MarginQuery, defaults={"a": 1.0, "delta": 1.0}, aliases=("sel-2nd", "sel2nd", "asop"),
                   cite=f"{_SEL}: selective sampling SOP (SEL-2nd of {_PAA}; ASOP of Hao et al. 2016)"),
    "sop-ss-diag": Spec(SOPDiagRule, MarginQuery, defaults={"a": 1.0, "delta": 1.0},
                        cite=f"{_SEL}: selective sampling SOP, diagonal (SOP of the high-dimensional paper, Table 2)"),
    # SOAL and its ablations (Hao et al. 2016, Sect. IV-A): full Σ (Eqs. 1, 3) and diagonal Σ (Eqs. 4-5)
    "sol": Spec(SOALRule, AlwaysQuery, defaults=_SOAL_DEFAULTS, cite=f"{_SOAL}: SOL, passive SOAL"),
    "sorl": Spec(SOALRule, FixedRateQuery, defaults={**_SOAL_DEFAULTS, "rate": 0.1},
                 cite=f"{_SOAL}: SORL, random queries"),
    "soal-m": Spec(SOALRule, MarginQuery, defaults={**_SOAL_DEFAULTS, "delta": 1.0},
                   cite=f"{_SOAL}: SOAL-M, margin query δ/(δ+|p|)"),
    "soal": Spec(SOALRule, SOALQuery, defaults={**_SOAL_DEFAULTS, "delta": 1.0}, cite=f"{_SOAL}: SOAL, Algorithm 1"),
    "soal-entropy": Spec(SOALRule, EntropyQuery, defaults={**_SOAL_DEFAULTS, "discount": 3.0},
                         cite=f"SOAL update of {_SOAL}; entropy query H₂(σ(p))^k after {_ENTROPY}"),
    "sol-diag": Spec(SOALDiagRule, AlwaysQuery, defaults=_SOAL_DEFAULTS, cite=f"{_SOAL}: SOL, diagonal"),
    "sorl-diag": Spec(SOALDiagRule, FixedRateQuery, defaults={**_SOAL_DEFAULTS, "rate": 0.1},
                      cite=f"{_SOAL}: SORL, diagonal"),
    "soal-m-diag": Spec(SOALDiagRule, MarginQuery, defaults={**_SOAL_DEFAULTS, "delta": 1.0},
                        cite=f"{_SOAL}: SOAL-M, diagonal"),
    "soal-diag": Spec(SOALDiagRule, SOALQuery, defaults={**_SOAL_DEFAULTS, "delta": 1.0},
                      cite=f"{_SOAL}: SOAL, diagonal (as run in the high-dimensional paper, Table 2)"),
    # beyond the papers: the diagonal SOAL update (the one that runs on wide data) with River's entropy query
    "soal-diag-entropy": Spec(SOALDiagRule, EntropyQuery, defaults={**_SOAL_DEFAULTS, "discount": 3.0},
                              cite=f"diagonal SOAL update of {_SOAL}; entropy query H₂(σ(p))^k after {_ENTROPY}"),
    # supervised second-order baselines
    "arow": Spec(AROWRule, AlwaysQuery, defaults={"r": 1.0},
                 cite="Crammer, Kulesza & Dredze, Adaptive regularization of weight vectors, Mach. Learn. 91, 2013"),
    "arow-diag": Spec(AROWDiagRule, AlwaysQuery, defaults={"r": 1.0}, cite="Crammer, Kulesza & Dredze 2013, diagonal"),
    "cw": Spec(CWRule, AlwaysQuery, defaults={"eta": 0.7},
               cite="Crammer, Dredze & Pereira, Exact convex confidence-weighted learning, NIPS 2008"),
    "cw-diag": Spec(CWDiagRule, AlwaysQuery, defaults={"eta": 0.7},
                    cite=f"Crammer, Dredze & Pereira 2008, diagonal: the CW-diag baseline of {_PAA}, Sect. 6.3.2"),
    # adaptive subgradient methods with a diagonal H (the high-dimensional paper, Algorithm 1, Sect. 5.1),
    # and their multiclass versions with one H per class (Algorithm 2, Sect. 5.2.2)
    **_adaptive_family(DualAveragingRule, DiscriminationQuery, "ada"),
    **_adaptive_family(MirrorDescentRule, DiscriminationQuery, "amd"),
    **_adaptive_family(MulticlassDualAveragingRule, GapDiscriminationQuery, "ada", multiclass=True),
    **_adaptive_family(MulticlassMirrorDescentRule, GapDiscriminationQuery, "amd", multiclass=True),
    # drifting targets: LASEC (full D×D matrix; -diag: diagonal with lazy drift, O(nnz)) and baselines
    "lasec": Spec(LASECRule, AlwaysQuery, defaults=_LASEC, cite=f"{_DRIFT}: LASEC, Fig. 1 with a = ∞"),
    "lasec-ss": Spec(LASECRule, MarginQuery, defaults={**_LASEC, "delta": 1.0},
                     cite=f"{_DRIFT}: LASEC-SS, Fig. 1 (query a/(a + |p̂|), a = delta)"),
    "lasec-diag": Spec(LASECDiagRule, AlwaysQuery, defaults=_LASEC, cite=f"{_DRIFT}: LASEC, diagonal"),
    "lasec-ss-diag": Spec(LASECDiagRule, MarginQuery, defaults={**_LASEC, "delta": 1.0},
                          cite=f"{_DRIFT}: LASEC-SS, diagonal"),
    "bbq": Spec(RLSRule, BBQQuery, defaults={"a": 1.0, "kappa": 0.5},
                cite="Cesa-Bianchi, Gentile & Orabona, ICML 2009: BBQ, Fig. 1"),
    "bbq-i": Spec(SOPRule, BBQQuery, defaults={"a": 1.0, "kappa": 0.5},
                  cite=f"{_DRIFT}, Sect. 5: BBQ-I (BBQ updating on queried mistakes only: the SOP update)"),
    "shifting-perceptron": Spec(ShiftingPerceptronRule, AlwaysQuery, defaults={"lam": 0.01},
                                cite=f"{_TRACK}: Shifting Perceptron"),
    "modified-perceptron": Spec(ModifiedPerceptronRule, AlwaysQuery,
                                cite="Blum, Frieze, Kannan & Vempala, Algorithmica 22, 1998: Modified Perceptron"),
    "randomized-budget-perceptron": Spec(RandomizedBudgetPerceptronRule, AlwaysQuery, defaults={"budget": 500},
                                         cite=f"{_TRACK}: Randomized Budget Perceptron"),
    # kernel PA with a budget of support vectors (the paper's "classic", F1 and F2 relaxations)
    "kpa": Spec(KernelPARule, AlwaysQuery, fixed={"mode": 0}, cite=f"{_KPA}: kernel PA, Algorithm 3"),
    "kpa-1": Spec(KernelPARule, AlwaysQuery, fixed={"mode": 1}, defaults={"C": 1.0},
                  cite=f"{_KPA}: kernel PA, Algorithm 3 (τ = min(C, ℓ/κ(x, x)))"),
    "kpa-2": Spec(KernelPARule, AlwaysQuery, fixed={"mode": 2}, defaults={"C": 1.0},
                  cite=f"{_KPA}: kernel PA-II"),
    "kapa": Spec(KernelPARule, MarginQuery, fixed={"mode": 0}, defaults={"delta": 1.0},
                 cite=f"{_KPA}: kernel active PA, Algorithms 2-3"),
    "kapa-1": Spec(KernelPARule, MarginQuery, fixed={"mode": 1}, defaults={"C": 1.0, "delta": 1.0},
                   cite=f"{_KPA}: kernel active PA-I"),
    "kapa-2": Spec(KernelPARule, MarginQuery, fixed={"mode": 2}, defaults={"C": 1.0, "delta": 1.0},
                   cite=f"{_KPA}: kernel active PA-II"),
}

_ALIASES = {alias: name for name, spec in ALGORITHMS.items() for alias in spec.aliases}

# Spellings that one paper uses for another algorithm than the name's own: the high-dimensional
# paper's "SOP" is the selective-sampling second-order Perceptron and it runs SOP and SOAL with
# diagonal matrices (its Sect. 5.1.3), where "SOP" elsewhere (Cesa-Bianchi et al. 2005; Moroshko &
# Crammer) is the supervised algorithm. Keys are the reproductions' page names (docs/reproductions).
PAPER_SPELLINGS: dict[str, dict[str, str]] = {
    "high-dimensional": {"sop": "sop-ss-diag", "soal": "soal-diag"},
}


def canonical_name(name: str, *, paper: str | None = None) -> str:
    """The registry name for a user's spelling: case, underscores and roman numerals forgiven;
    ``paper`` (a key of :data:`PAPER_SPELLINGS`) reads the spelling as that paper uses it."""
    s = re.sub(r"[\s_]+", "-", name.strip().lower())
    if paper is not None:
        s = PAPER_SPELLINGS[paper].get(s, s)
    if s not in ALGORITHMS:  # "d-ada-i" is a name of its own, "paa-i" is "paa-1"
        s = re.sub(r"-(i{1,3})$", lambda m: f"-{len(m.group(1))}", s)
    s = _ALIASES.get(s, s)
    if s not in ALGORITHMS:
        close = difflib.get_close_matches(s, list(ALGORITHMS) + list(_ALIASES), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"unknown learner {name!r}{hint} (known: {', '.join(ALGORITHMS)})")
    return s


def make(name: str, *, paper: str | None = None, **overrides: Any) -> Learner:
    """Build the learner registered as ``name`` (as ``paper`` spells it, if given; see
    :func:`canonical_name`) with its defaults, then ``overrides``.

    Each override goes to whichever part takes it: the rule, the query, or the learner itself
    (``seed``, ``bias``, ``normalize``, ``tie``, ``n_features``, ``classes``). Unknown
    parameters and overrides of a parameter that defines the algorithm are refused.
    """
    key = canonical_name(name, paper=paper)
    spec = ALGORITHMS[key]
    for k, v in overrides.items():
        if k in spec.fixed and v != spec.fixed[k]:
            raise ValueError(f"{k}={spec.fixed[k]!r} defines {key!r}; pick another registry entry instead")
    params = {**LEARNER_DEFAULTS, **spec.defaults, **overrides, **spec.fixed}
    rule_names, query_names = set(spec.rule.param_names()), set(spec.query.param_names())
    own_names = set(Learner.param_names()) - {"name"}
    unknown = set(params) - rule_names - query_names - own_names
    if unknown:
        known = sorted(rule_names | query_names | own_names)
        raise ValueError(f"{key!r} takes no parameter {', '.join(sorted(unknown))} (it takes: {', '.join(known)})")
    rule = spec.rule(**{k: v for k, v in params.items() if k in rule_names})
    query = spec.query(**{k: v for k, v in params.items() if k in query_names})
    try:
        return Learner(rule, query, name=key, **{k: v for k, v in params.items() if k in own_names})
    except MatrixTooLargeError as exc:
        twin = f"{key}-diag"
        raise ValueError(exc.message(twin if twin in ALGORITHMS else exc.diagonal)) from None


def paper_protocol(name: str) -> dict[str, Any]:
    """The overrides that make ``make(name, **paper_protocol(name))`` the learner as the papers ran
    it: :data:`PAPER_PROTOCOL`, plus :data:`PAPER_QUERY` where the algorithm's query takes it."""
    spec = ALGORITHMS[canonical_name(name)]
    query = {k: v for k, v in PAPER_QUERY.items() if k in spec.query.param_names()}
    return {**PAPER_PROTOCOL, **query}
