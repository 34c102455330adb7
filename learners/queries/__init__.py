"""Query strategies, one kind per module."""

from learners.queries.adaptive import DecayingMarginQuery, SelAdaQuery
from learners.queries.fixed import AlwaysQuery, FixedRateQuery
from learners.queries.gap import GapQuery
from learners.queries.margin import MarginQuery

__all__ = ["AlwaysQuery", "DecayingMarginQuery", "FixedRateQuery", "GapQuery", "MarginQuery", "SelAdaQuery"]
