"""Labelling cost and the label budget.

Cost of a label: the cost the label record carries, else the configured cost of its class, else the
cost per request. A request's *expected* cost (shown to annotators) uses the predicted class.

Budget: what the operator sets (``ACTIVESTREAM_QUERY_RATE_TARGET``, ``ACTIVESTREAM_LABELS__BUDGET``,
``ACTIVESTREAM_LABELS__COST_BUDGET`` per ``__BUDGET_WINDOW_S``) is held by the learner's
:class:`learners.budget.BudgetController`, inside each decision (:func:`controller_for`). Its windows
advance on record time where it agrees with processing time (:func:`record_times`) and never
backwards (:func:`learners.budget.advance_clock`), so no producer's clock moves the budget others get.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from learners.budget import BudgetController

__all__ = ["CostModel", "controller_for", "record_times"]


@dataclass(frozen=True, slots=True)
class CostModel:
    per_request: float
    per_class: Mapping[str, float]

    def of_many(self, labels: Sequence[Any], stated: np.ndarray | None = None) -> np.ndarray:
        """The cost of each label: the one it carries (``stated``, NaN where it carries none), else
        its class's, else the cost per request."""
        if self.per_class:
            costs = np.array([self.per_class.get(str(label), self.per_request) for label in labels], dtype=np.float64)
        else:
            costs = np.full(len(labels), self.per_request, dtype=np.float64)
        return costs if stated is None else np.where(np.isnan(stated), costs, stated)


def record_times(ts: np.ndarray, now: float, tolerance: float) -> np.ndarray:
    """The time each record gives the budget's clock: its own where it is at most ``tolerance``
    before processing time ``now``, else ``now`` (NaN, no time, too).

    Never ahead of processing time: clamped to ``now + tolerance`` instead, one record stamped in the
    future moved every producer's windows by the whole tolerance, and the clock never goes back.
    """
    t = np.asarray(ts, dtype=np.float64)
    agrees = (t <= now) & (t >= now - tolerance)  # False for NaN
    return np.where(agrees, t, now)


def controller_for(settings: Any, classes: Sequence[Any]) -> BudgetController | None:
    """The budget controller the settings ask for (None when they set no target, cap or cost cap)."""
    labels = settings.labels
    if settings.query_rate_target is None and labels.budget is None and labels.cost_budget is None:
        return None
    class_costs = None
    if labels.cost_budget is not None:
        if not classes and labels.cost_per_class:
            raise ValueError("a cost per class needs the classes in advance (ACTIVESTREAM_CLASSES): they are "
                             "otherwise learnt from the labels")
        # classes learnt from the labels (none yet): a binary model's two, at the cost per request
        class_costs = [labels.cost_per_class.get(str(c), labels.cost_per_request) for c in classes or (0, 1)]
        if min(class_costs) <= 0:
            raise ValueError("a cost budget needs every class to cost more than 0 "
                             "(ACTIVESTREAM_LABELS__COST_PER_REQUEST / __COST_PER_CLASS)")
    return BudgetController(target=settings.query_rate_target, max_requests=labels.budget,
                            max_cost=labels.cost_budget, window_s=labels.budget_window_s, class_costs=class_costs,
                            warmup=settings.budget_warmup, warmup_boost=settings.budget_warmup_boost)
