"""The drivers of a learner with both a scaler and a budget controller, in one compiled pass per batch.

Each record goes through the scaler first, as in :mod:`learners.drivers.scaled`, then through the
controller exactly as in :mod:`learners.drivers.budgeted` (the knob solved from the window of
recent scores, the ledger, the caps), then the coin. The scores the controller sees are those of
x̃, the ones the query probability is computed from, so its feed-forward step solves the same
equation as without scaling. Each driver takes its budgeted sibling's arguments, then the scaler's.
"""

from __future__ import annotations

import numpy as np

from learners.budget import _SEEN, _account, _forget_scores, _step
from learners.coin import draw
from learners.drivers.scaled import SCALER
from learners.jit import signature
from learners.kernels import IDX, LABEL_FN, PROB_FN, ROUND_FN, SCORE_FN, STATE, UPDATE_FN, VAL, VEC
from learners.loop_parts import B1, I64, U64, driver, pending_rounds, predict, row_of, widest
from learners.scaling import _scaled, dense_buffers, mark_learnt

__all__ = ["decide_rows", "replay_rows"]


@driver(
    signature(
        "none",
        I64, IDX, VAL, U64, "uint64", "int64", "boolean", VEC,
        STATE, VEC, VEC, SCORE_FN, VEC, PROB_FN, ROUND_FN,
        VEC, VEC, STATE, STATE, VEC, VEC,
        I64, VEC, VEC, VEC, VEC, B1,
        "int64", *SCALER,
    ), nrt=True
)
def decide_rows(
    indptr, indices, data, keys, seed, tie, multiclass, times,
    S, a, P, score, qs, probability, after_round,
    cs, cp, win, ring, recent, qw,
    out_yhat, out_p, out_gap, out_v, out_prob, out_query,
    level, Z, zs, zp, R, rescale,
):
    """:func:`learners.drivers.budgeted.decide_rows` on x̃, the scale observed at ``level`` row by row."""
    width = widest(indptr)
    changed, ratio = np.empty(width, dtype=np.int32), np.empty(width)
    out, dense = dense_buffers(zp, width)
    for i in range(indptr.size - 1):
        lo, hi = indptr[i], indptr[i + 1]
        idx, x = _scaled(Z, zs, zp, level, indices[lo:hi], data[lo:hi], S, a, P, R, rescale, changed, ratio, out,
                         dense)
        p, gap, v, top = score(S, a, P, idx, x)
        q, free = _step(cs, cp, win, ring, recent, qw, qs, probability, p, gap, v, times[i])
        after_round(qw, qs)
        u = draw(seed, keys[i])
        _account(cs, cp, ring, recent, u < q, u < free and q == 0.0)
        out_yhat[i] = predict(p, top, tie, multiclass)
        out_p[i] = p
        out_gap[i] = gap
        out_v[i] = v
        out_prob[i] = q
        out_query[i] = u < q


@driver(
    signature(
        "int64",
        I64, IDX, VAL, I64, I64, U64, "uint64", "int64", "boolean", "int64",
        "float64", "int64", "int64", "boolean", "boolean", "boolean",
        STATE, VEC, VEC, SCORE_FN, UPDATE_FN, VEC, PROB_FN, ROUND_FN, LABEL_FN,
        VEC, VEC, STATE, STATE, VEC, VEC,
        I64, VEC, VEC, B1, I64, IDX, VAL,
        "int64", "int64", *SCALER,
    ), nrt=True
)
def replay_rows(
    indptr, indices, data, order, y, keys, seed, tie, multiclass, delay, bias, column, first, final, weighted, fresh,
    S, a, P, score, update, qs, probability, after_round, after_label,
    cs, cp, win, ring, recent, qw,
    out_yhat, out_p, out_prob, out_query, fifo, idx_buf, val_buf,
    score_level, learn_level, Z, zs, zp, R, rescale,
):
    """:func:`learners.drivers.budgeted.replay_rows` on x̃: a round observes its row at ``score_level``
    before scoring it, a label observes its row at ``learn_level`` before the update."""
    n = order.size
    width = widest(indptr) + 1
    changed, ratio = np.empty(width, dtype=np.int32), np.empty(width)
    out, dense = dense_buffers(zp, width)
    head = 0
    tail = pending_rounds(out_query, first, fifo)
    n_changed = 0
    start = cs[_SEEN] - first
    for t in range(first, n + delay if final else n):
        if t < n:
            i = order[t]
            idx, val = row_of(indptr, indices, data, i, bias, column, idx_buf, val_buf)
            idx, x = _scaled(Z, zs, zp, score_level, idx, val, S, a, P, R, rescale, changed, ratio, out, dense)
            p, gap, v, top = score(S, a, P, idx, x)
            q, free = _step(cs, cp, win, ring, recent, qw, qs, probability, p, gap, v, start + t)
            after_round(qw, qs)
            u = draw(seed, keys[i])
            queried = u < q
            _account(cs, cp, ring, recent, queried, u < free and q == 0.0)
            out_yhat[t] = predict(p, top, tie, multiclass)
            out_p[t] = p
            out_prob[t] = q
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
                if fresh and n_changed == 0:
                    _forget_scores(cs)
                n_changed += 1
                mark_learnt(Z, zp, idx)
            after_label(qw, qs, out_yhat[s] != y[i], weight)
    return n_changed
