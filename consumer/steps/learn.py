"""Learn: labels joined with their requests, learnt in one call, and what they tell counted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from consumer.budget import CostModel
from consumer.metrics import Metrics
from consumer.pending import Entry
from consumer.records import Label
from consumer.totals import Totals
from learners.inputs import Rows

__all__ = ["Learn"]


class Learn:
    """Learn from joined labels, in arrival order.

    ``scored``: whether this process decided on the records whose labels it learns (a trainer did
    not, so an online scale learns from the labelled rows there). ``learnt(n)`` is told how many
    labels were learnt (the checkpoint that counts them); ``audit(outcome, joined)``, if given, each
    batch learnt (a trainer's audit log)."""

    def __init__(self, learner: Any, n_features: int, costs: CostModel, totals: Totals, metrics: Metrics, *,
                 scored: bool, learnt: Callable[[int], None],
                 audit: Callable[[str, list[tuple[Entry, Label]]], None] | None = None) -> None:
        self.learner, self.n_features, self.costs = learner, n_features, costs
        self.totals, self.metrics = totals, metrics
        self.scored, self.learnt, self.audit = scored, learnt, audit

    def __call__(self, joined: list[tuple[Entry, Label]], now: float, outcome: str) -> None:
        entries, labels = zip(*joined, strict=True)
        column = Entry._make(zip(*entries, strict=True))  # each field of the entries, as a tuple
        _, values, stated, _ = zip(*labels, strict=True)  # each field of the labels
        rows = Rows.gather(column.rows, column.row, self.n_features)
        predicted = np.array(column.predicted, dtype=np.int64)
        codes = self.learner.encode(values)
        self.learner.learn_many(rows, codes, predicted=predicted, encoded=True, scored=self.scored,
                                probability=np.array(column.probability, dtype=np.float64))
        costs = self.costs.of_many(values, np.array(stated, dtype=np.float64))  # None (no cost stated): NaN
        weights = 1.0 / np.array(column.probability)
        mistakes = predicted != codes
        t = self.totals
        t.add(f"labels.{outcome}", len(joined))
        t.add("labelling_cost", float(costs.sum()))
        if self.learner.budget is not None and outcome == "applied":
            self.learner.budget.observe_costs(costs)  # what the next requests are planned to cost
        t.add("labelled_mistakes", int(mistakes.sum()))
        t.add("importance_weighted_labels", float(weights.sum()))
        t.add("importance_weighted_mistakes", float(weights[mistakes].sum()))
        if outcome == "applied":
            self._confusion(codes, predicted)
        self.metrics.label_delay.observe_many(now - np.array(column.requested_at))
        self.learnt(len(joined))
        if self.audit is not None:
            self.audit(outcome, joined)

    def _confusion(self, codes: np.ndarray, predicted: np.ndarray) -> None:
        """Each (class, predicted) pair once, counted in one pass over a combined code (codes are >= -1)."""
        base = int(max(codes.max(), predicted.max())) + 2
        pairs, counts = np.unique((codes + 1) * base + predicted + 1, return_counts=True)
        decode = self.learner.decode  # both sides as the model's class values (1.0 and 1 are one class)
        for actual, guessed, n in zip(decode(pairs // base - 1).tolist(), decode(pairs % base - 1).tolist(),
                                      counts.tolist(), strict=True):
            self.totals.add(Totals.labelled_key(actual, guessed), n)
