"""The drivers of a learner with a scaler (:mod:`learners.scaling`) and no budget controller.

Each record goes through the scaler first (its statistics observed, the rule's state moved to the
new units, x̃ computed: dense under ``scale="standard"``), then as in :mod:`learners.drivers.plain`.
:func:`decide_rows` and :func:`replay_rows` take their plain sibling's arguments, then the scaler's
(:meth:`learners.scaler.Scaler.decide_arguments`, :meth:`~learners.scaler.Scaler.replay_arguments`).
They allocate their dense buffers, so they run with numba's runtime.
"""

from __future__ import annotations

import numpy as np

from learners.coin import draw
from learners.jit import signature
from learners.kernels import IDX, LABEL_FN, PROB_FN, ROUND_FN, SCORE_FN, STATE, UPDATE_FN, VAL, VEC
from learners.loop_parts import B1, I64, U64, driver, pending_rounds, predict, row_of, widest
from learners.scaling import (
    _OBSERVE_NONE,
    _PRESENT,
    _STANDARD,
    RESCALE_FN,
    _prepare,
    _scaled,
    dense_buffers,
    mark_learnt,
    scale_values,
    standardise,
    standardise_present,
)

__all__ = ["SCALER", "decide_rows", "learn_rows", "replay_rows", "scale_row", "score_rows"]

# the scaler's arguments after the levels its statistics read rows at: its state (Z, zs, zp) and the
# rule's rescaling (its layout R, its kernel)
SCALER = (STATE, VEC, VEC, VEC, RESCALE_FN)


@driver(signature("none", I64, IDX, VAL, STATE, VEC, VEC, STATE, VEC, VEC, SCORE_FN, VEC, VEC, VEC, I64), nrt=True)
def score_rows(indptr, indices, data, Z, zs, zp, S, a, P, score, out_p, out_gap, out_v, out_top):
    """:func:`learners.drivers.plain.score_rows` on x̃; nothing changes."""
    out, dense = dense_buffers(zp, widest(indptr))
    for i in range(indptr.size - 1):
        lo, hi = indptr[i], indptr[i + 1]
        if zp[0] == _STANDARD:
            width = standardise(Z, zs, zp, _OBSERVE_NONE, indices[lo:hi], data[lo:hi], out)
            p, gap, v, top = score(S, a, P, dense[:width], out[:width])
        else:
            x = out[: hi - lo]
            if zp[0] == _PRESENT:
                standardise_present(Z, zs, zp, _OBSERVE_NONE, indices[lo:hi], data[lo:hi], x)
            else:
                scale_values(Z, zp, indices[lo:hi], data[lo:hi], x)
            p, gap, v, top = score(S, a, P, indices[lo:hi], x)
        out_p[i] = p
        out_gap[i] = gap
        out_v[i] = v
        out_top[i] = top


@driver(signature("int64", IDX, VAL, "int64", STATE, VEC, VEC, STATE, VEC, VEC, VEC, RESCALE_FN, VAL), nrt=True)
def scale_row(idx, val, level, Z, zs, zp, S, a, P, R, rescale, out):
    """One record (River-style ``ask``/``learn``): observe at ``level``, rescale, out ← x̃.
    Returns x̃'s length: the row's (sparse modes) or the dense width ("standard")."""
    if zp[0] == _STANDARD:
        return standardise(Z, zs, zp, level, idx, val, out)
    if zp[0] == _PRESENT:
        standardise_present(Z, zs, zp, level, idx, val, out)
        return idx.size
    changed = np.empty(max(idx.size, 1), dtype=np.int32)
    ratio = np.empty(max(idx.size, 1))
    _prepare(Z, zs, zp, level, idx, val, S, a, P, R, rescale, changed, ratio, out)
    return idx.size


@driver(
    signature(
        "none",
        I64, IDX, VAL, U64, "uint64", "int64", "boolean",
        STATE, VEC, VEC, SCORE_FN, VEC, VEC, PROB_FN, ROUND_FN,
        I64, VEC, VEC, VEC, VEC, B1,
        "int64", *SCALER,
    ), nrt=True
)
def decide_rows(
    indptr, indices, data, keys, seed, tie, multiclass,
    S, a, P, score, qp, qs, probability, after_round,
    out_yhat, out_p, out_gap, out_v, out_prob, out_query,
    level, Z, zs, zp, R, rescale,
):
    """:func:`learners.drivers.plain.decide_rows` on x̃, the scale observed at ``level`` row by row."""
    width = widest(indptr)
    changed, ratio = np.empty(width, dtype=np.int32), np.empty(width)
    out, dense = dense_buffers(zp, width)
    for i in range(indptr.size - 1):
        lo, hi = indptr[i], indptr[i + 1]
        idx, x = _scaled(Z, zs, zp, level, indices[lo:hi], data[lo:hi], S, a, P, R, rescale, changed, ratio, out,
                         dense)
        p, gap, v, top = score(S, a, P, idx, x)
        q = probability(p, gap, v, qp, qs)
        after_round(qp, qs)
        out_yhat[i] = predict(p, top, tie, multiclass)
        out_p[i] = p
        out_gap[i] = gap
        out_v[i] = v
        out_prob[i] = q
        out_query[i] = draw(seed, keys[i]) < q


@driver(
    signature(
        "int64",
        I64, IDX, VAL, I64, B1, VEC, "int64", STATE, VEC, VEC, STATE, VEC, VEC, VEC,
        UPDATE_FN, RESCALE_FN, VEC, VEC, LABEL_FN,
    ), nrt=True
)
def learn_rows(indptr, indices, data, y, mistakes, weights, level, Z, zs, zp, S, a, P, R, update, rescale,
               qp, qs, after_label):
    """:func:`learners.drivers.plain.learn_rows` (every row, in order) on x̃; returns updates made."""
    width = widest(indptr)
    changed, ratio = np.empty(width, dtype=np.int32), np.empty(width)
    out, dense = dense_buffers(zp, width)
    n_changed = 0
    for i in range(indptr.size - 1):
        lo, hi = indptr[i], indptr[i + 1]
        idx, x = _scaled(Z, zs, zp, level, indices[lo:hi], data[lo:hi], S, a, P, R, rescale, changed, ratio, out,
                         dense)
        if update(S, a, P, idx, x, y[i], weights[i]):
            n_changed += 1
            mark_learnt(Z, zp, idx)
        after_label(qp, qs, mistakes[i], weights[i])
    return n_changed


@driver(
    signature(
        "int64",
        I64, IDX, VAL, I64, I64, U64, "uint64", "int64", "boolean", "int64",
        "float64", "int64", "int64", "boolean", "boolean",
        STATE, VEC, VEC, SCORE_FN, UPDATE_FN, VEC, VEC, PROB_FN, ROUND_FN, LABEL_FN,
        I64, VEC, VEC, B1, I64, IDX, VAL,
        "int64", "int64", *SCALER,
    ), nrt=True
)
def replay_rows(
    indptr, indices, data, order, y, keys, seed, tie, multiclass, delay, bias, column, first, final, weighted,
    S, a, P, score, update, qp, qs, probability, after_round, after_label,
    out_yhat, out_p, out_prob, out_query, fifo, idx_buf, val_buf,
    score_level, learn_level, Z, zs, zp, R, rescale,
):
    """:func:`learners.drivers.plain.replay_rows` on x̃: a round observes its row at ``score_level``
    before scoring it, a label observes its row at ``learn_level`` before the update."""
    n = order.size
    width = widest(indptr) + 1
    changed, ratio = np.empty(width, dtype=np.int32), np.empty(width)
    out, dense = dense_buffers(zp, width)
    head = 0
    tail = pending_rounds(out_query, first, fifo)
    n_changed = 0
    for t in range(first, n + delay if final else n):
        if t < n:
            i = order[t]
            idx, val = row_of(indptr, indices, data, i, bias, column, idx_buf, val_buf)
            idx, x = _scaled(Z, zs, zp, score_level, idx, val, S, a, P, R, rescale, changed, ratio, out, dense)
            p, gap, v, top = score(S, a, P, idx, x)
            q = probability(p, gap, v, qp, qs)
            after_round(qp, qs)
            out_yhat[t] = predict(p, top, tie, multiclass)
            out_p[t] = p
            out_prob[t] = q
            queried = draw(seed, keys[i]) < q
            out_query[t] = queried
            if queried:
                fifo[tail] = t
                tail += 1
        while head < tail and fifo[head] <= t - delay:
            s = fifo[head]
            head += 1
            i = order[s]
            idx, val = row_of(indptr, indices, data, i, bias, column, idx_buf, val_buf)
            idx, x = _scaled(Z, zs, zp, learn_level, idx, val, S, a, P, R, rescale, changed, ratio, out, dense)
            weight = 1.0 / out_prob[s] if weighted else 1.0
            if update(S, a, P, idx, x, y[i], weight):
                n_changed += 1
                mark_learnt(Z, zp, idx)
            after_label(qp, qs, out_yhat[s] != y[i], weight)
    return n_changed
