"""Compiled loops over a batch of rows, shared by every (update rule, query strategy) pair.

The rule and query kernels arrive as first-class function arguments with the fixed signatures of
:mod:`learners.kernels`, so each driver is compiled once and cached on disk. A call costs tens of
µs of dispatch on top of its work (the kernels' addresses are looked up once, then cached), which
is why single records go through the kernels directly (:class:`learners.base.Learner.ask`) and
batches through these drivers.

A learner decides and replays with one of four pairs of drivers, :data:`DRIVERS`, keyed by
(budgeted, scaled): whether a :class:`~learners.budget.BudgetController` sits between the query
probability and the coin, and whether a :class:`~learners.scaler.Scaler` turns each row into x̃
first. A budgeted driver takes the controller's clock and arrays besides the plain arguments
(:mod:`learners.drivers.budgeted`); a scaled driver takes its unscaled sibling's arguments, then
the scaler's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from learners.drivers import budget_scaled, budgeted, plain, scaled

__all__ = ["DRIVERS", "Drivers"]


class Drivers(NamedTuple):
    """The loops one kind of learner runs a batch through."""

    decide: Callable  # predict and decide for every row against one model state
    replay: Callable  # prequential replay: predict, decide, learn the queried labels after a delay


DRIVERS: dict[tuple[bool, bool], Drivers] = {
    # (budgeted, scaled)
    (False, False): Drivers(plain.decide_rows, plain.replay_rows),
    (True, False): Drivers(budgeted.decide_rows, budgeted.replay_rows),
    (False, True): Drivers(scaled.decide_rows, scaled.replay_rows),
    (True, True): Drivers(budget_scaled.decide_rows, budget_scaled.replay_rows),
}
