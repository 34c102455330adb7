"""Query strategies, one kind per module."""

from learners.queries.adaptive import DecayingMarginQuery, SelAdaQuery
from learners.queries.bbq import BBQQuery
from learners.queries.discrimination import DiscriminationQuery, GapDiscriminationQuery
from learners.queries.entropy import EntropyQuery, GapEntropyQuery
from learners.queries.fixed import AlwaysQuery, FixedRateQuery
from learners.queries.gap import GapQuery
from learners.queries.iwal import GapIWALQuery, IWALQuery
from learners.queries.margin import MarginQuery
from learners.queries.soal import SOALQuery

__all__ = [
    "AlwaysQuery",
    "BBQQuery",
    "DecayingMarginQuery",
    "DiscriminationQuery",
    "EntropyQuery",
    "FixedRateQuery",
    "GapDiscriminationQuery",
    "GapEntropyQuery",
    "GapIWALQuery",
    "GapQuery",
    "IWALQuery",
    "MarginQuery",
    "SOALQuery",
    "SelAdaQuery",
]
