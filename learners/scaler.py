"""The scaler a learner holds: the per-feature scale of its stream (:mod:`learners.scaling`).

The compiled statistics and the rules' rescaling live in :mod:`learners.scaling`; this object holds
their state for one learner, runs its own loops over rows (:mod:`learners.drivers.scaled`) and
hands the scaled decide and replay drivers their arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from learners.drivers import scaled
from learners.inputs import Rows
from learners.scaling import (
    _CANCELLED,
    _CENTRED,
    _COUNT,
    _OBSERVE_ALL,
    _OBSERVE_NONE,
    _OBSERVE_UNSEEN,
    _ROWS,
    _SHIFT,
    _STAT,
    _SUM,
    MODES,
    WARMUP,
    check_width,
    mark_learnt,
    rescale_powers,
    scale_batch,
)
from learners.values import Scores

__all__ = ["Scaler"]


class Scaler:
    """The per-feature scale of one learner, its statistics and the window of the drift metric.

    Parameters
    ----------
    scale : {"maxabs", "rms", "standard"}
        How s_i is estimated, or the running standardisation (:mod:`learners.scaling`).
    scale_from : {"scored", "labelled"}
        Which records update the statistics.
    n_features : int
        Coordinates that are scaled (the intercept, index ``n_features``, is not); at most
        :data:`~learners.scaling.STANDARD_LIMIT` for ``"standard"``.
    normalize : bool
        Scale x̃ to unit L2 norm (over the scaled coordinates) after dividing by s (after
        standardising: over every coordinate of the dense x̃).

    State
    -----
    Z : float64[5, n_features], float64[7, n_features] for ``"standard"``
        Count of non-zeros (``rms``) or of rows observed (``standard``), the statistic (max |x|,
        Σx², or Σ(x − x₀)² for ``standard``), the reference scale and window mark of the drift
        metric, whether a labelled row has changed the rule's state at the coordinate (until then
        a change of scale moves nothing: the state is the prior), then for ``standard`` Σ(x − x₀)
        and x₀, the feature's first value (sums around it do not cancel on an offset).
    zs : float64[3]
        Current window number, features moved more than 10× in it, rows observed ("sparse-standard").

    Complexity
    ----------
    O(nnz) per row for the statistics and the division; the rule's rescaling is O(nnz) for
    per-coordinate state and O(nnz · D) for a full D×D matrix. ``"standard"``: O(n_features) per
    row, and the rule's update touches every coordinate.
    """

    def __init__(self, scale: str, scale_from: str, n_features: int, normalize: bool) -> None:
        self.scale, self.scale_from, self.n_features = scale, scale_from, int(n_features)
        check_width(scale, self.n_features)
        rows = _ROWS + 2 if scale in _CENTRED else _ROWS
        self.Z = np.zeros((rows, self.n_features), dtype=np.float64)
        self.zs = np.zeros(3, dtype=np.float64)
        self.zp = np.array([MODES[scale], float(n_features), float(bool(normalize)), float(WARMUP)])
        self.R = np.empty(0)

    def bind(self, rule: Any, n_classes: int) -> None:
        """Read the layout of the (allocated) rule whose state this scaler moves."""
        self.R = np.ascontiguousarray(rescale_powers(rule, rule.S_.shape[1], n_classes), dtype=np.float64)
        self._rescale = type(rule).rescale_kernel

    # -- the compiled loops, with this scaler's state -------------------------------------------
    def score(self, rows: Any, rule: Any) -> Any:
        """The rule's :class:`~learners.values.Scores` of x̃ for a batch; nothing changes."""
        n = rows.n
        p, gap, v, top = np.empty(n), np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
        scaled.score_rows(rows.indptr, rows.indices, rows.data, self.Z, self.zs, self.zp,
                          *rule.kernel_state(), rule.score_fn, p, gap, v, top)
        return Scores(p=p, gap=gap if "gap" in rule.provides else None, v=v if "v" in rule.provides else None,
                      top=top if rule.multiclass else None)

    def decide_arguments(self) -> tuple:
        """What a scaled decide driver takes after its unscaled sibling's arguments
        (:data:`learners.drivers.DRIVERS`): the level a decided row is observed at, then this
        scaler's state and the rule's rescaling."""
        return (self.score_level, self.Z, self.zs, self.zp, self.R, self._rescale)

    def replay_arguments(self) -> tuple:
        """What a scaled replay driver takes after its unscaled sibling's arguments: the levels a
        round and a label observe their row at, then as :meth:`decide_arguments`."""
        return (self.score_level, self.learn_level, self.Z, self.zs, self.zp, self.R, self._rescale)

    def learn_rows(self, rows: Any, codes: np.ndarray, mistakes: np.ndarray, weights: np.ndarray, rule: Any,
                   query: Any, scored: bool = True) -> int:
        """Apply the labels ``codes`` of every row of ``rows`` in order, with their importance
        ``weights``, on x̃; updates made.
        ``scored``: the rows were decided on first (else they are observed like labelled rows
        under ``scale_from="labelled"``)."""
        level = self.learn_level if scored else _OBSERVE_ALL
        return int(scaled.learn_rows(rows.indptr, rows.indices, rows.data, codes, mistakes, weights, level,
                                      self.Z, self.zs, self.zp, *rule.kernel_state(), self.R, rule.update_fn,
                                      self._rescale, *query.kernel_state(), query.kernels[2]))

    def scaled_row(self, idx: np.ndarray, val: np.ndarray, level: int, rule: Any) -> tuple[np.ndarray, np.ndarray]:
        """(coordinates, x̃) of one row, after observing it at ``level`` (and moving the rule's
        state): the row's own coordinates, or every coordinate (and the intercept) for "standard"."""
        dense = self.scale == "standard"
        out = np.empty(self.n_features + 1 if dense else val.size)
        width = scaled.scale_row(idx, np.ascontiguousarray(val, dtype=np.float64), level, self.Z, self.zs, self.zp,
                                 *rule.kernel_state(), self.R, self._rescale, out)
        if not dense:
            return idx, out
        return np.arange(width, dtype=np.int32), out[:width]

    def scale_row(self, idx: np.ndarray, val: np.ndarray, level: int, rule: Any) -> np.ndarray:
        """x̃ of one row, after observing it at ``level`` (and moving the rule's state); for
        "standard" the dense x̃ of :meth:`scaled_row`."""
        return self.scaled_row(idx, val, level, rule)[1]

    def transform(self, rows: Any, level: int, order: np.ndarray | None = None) -> Any:
        """x̃ of a batch, observed at ``level`` row by row in ``order`` (default: as given): the
        scale before a random feature map (:func:`scale_batch`), with no rule state to move."""
        dense = self.scale == "standard"  # every coordinate of a row
        indptr = np.arange(rows.n + 1, dtype=np.int64) * self.n_features if dense else rows.indptr
        indices, data = np.empty(int(indptr[-1]), dtype=np.int32), np.empty(int(indptr[-1]))
        order = np.arange(rows.n, dtype=np.int64) if order is None else order
        scale_batch(rows.indptr, rows.indices, rows.data, order, level, self.Z, self.zs, self.zp, indptr, indices,
                    data)
        return Rows(indptr, indices, data, rows.n_features)

    def mark_learnt(self, idx: np.ndarray) -> None:
        """Record that an update changed the rule's state at ``idx`` (one record's ``learn``)."""
        mark_learnt(self.Z, self.zp, np.ascontiguousarray(idx, dtype=np.int32))

    # -- the three places a row goes through the scaler ------------------------------------------
    @property
    def score_level(self) -> int:
        """How much of a decided (scored and queried) record the statistics read: all of it under
        ``scale_from="scored"`` and always for "standard" (its statistics are those of the stream)."""
        return _OBSERVE_ALL if self.scale_from == "scored" or self.scale in _CENTRED else _OBSERVE_NONE

    @property
    def learn_level(self) -> int:
        """How much of a labelled record the statistics read. "standard" counts rows, so a row
        scored (and observed) first is not observed again when its label comes."""
        if self.scale in _CENTRED:
            return _OBSERVE_NONE
        return _OBSERVE_UNSEEN if self.scale_from == "scored" else _OBSERVE_ALL

    def scales(self) -> np.ndarray:
        """s_i per feature (0 for features never seen non-zero); σ_i for "standard" (0 while
        constant)."""
        if self.scale == "maxabs":
            return self.Z[_STAT].copy()
        n = self.Z[_COUNT]
        mean_sq = np.divide(self.Z[_STAT], n, out=np.zeros_like(n), where=n > 0)
        if self.scale not in _CENTRED:
            return np.sqrt(mean_sq)
        var = mean_sq - np.divide(self.Z[_SUM], n, out=np.zeros_like(n), where=n > 0) ** 2
        return np.sqrt(np.where(var > _CANCELLED * mean_sq, var, 0.0))

    def means(self) -> np.ndarray:
        """μ_i per feature for "standard" (0 before any row); zeros for the other modes."""
        if self.scale not in _CENTRED:
            return np.zeros(self.n_features)
        n = self.Z[_COUNT]
        return self.Z[_SHIFT] + np.divide(self.Z[_SUM], n, out=np.zeros_like(n), where=n > 0)

    # -- the drift metric ------------------------------------------------------------------------
    @property
    def moved(self) -> int:
        """Features whose scale moved by more than 10× (either way) in the current window."""
        return int(self.zs[1])

    def next_window(self) -> int:
        """Close the current window: returns its :attr:`moved` count and starts a new one. O(1)."""
        moved = self.moved
        self.zs[0] += 1.0
        self.zs[1] = 0.0
        return moved

    # -- state -----------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        return {"Z": self.Z.copy(), "window": self.zs.copy()}

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        Z = np.asarray(state["Z"])
        if Z.shape != self.Z.shape:
            raise ValueError(f"scale state has shape {Z.shape}, the model needs {self.Z.shape}")
        self.Z[...] = Z
        window = np.asarray(state["window"])
        self.zs[...] = 0.0
        self.zs[: window.size] = window  # saved before "sparse-standard" counted its rows: two values
