"""Query strategies, one kind per module."""

from learners.queries.adaptive import SelAdaQuery
from learners.queries.fixed import AlwaysQuery, FixedRateQuery
from learners.queries.margin import MarginQuery

__all__ = ["AlwaysQuery", "FixedRateQuery", "MarginQuery", "SelAdaQuery"]
