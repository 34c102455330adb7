"""The drivers of a learner with a budget controller (:mod:`learners.budget`) and no scaler.

Each round goes as in :mod:`learners.drivers.plain`, with the controller between the query
probability and the coin: it moves the query's knob so the label budget holds, and books what was
asked for.
"""

from __future__ import annotations

from learners.budget import _SEEN, _account, _forget_scores, _step
from learners.coin import draw
from learners.jit import signature
from learners.kernels import IDX, LABEL_FN, PROB_FN, ROUND_FN, SCORE_FN, STATE, UPDATE_FN, VAL, VEC
from learners.loop_parts import B1, I64, U64, driver, pending_rounds, predict, row_of
from learners.prefetch import AHEAD, prefetch_row

__all__ = ["decide_rows", "replay_rows"]


@driver(
    signature(
        "none",
        "int64[::1]", IDX, VAL, U64, "uint64", "int64", "boolean", VEC,
        STATE, VEC, VEC, SCORE_FN, VEC, PROB_FN, ROUND_FN,
        VEC, VEC, STATE, STATE, VEC, VEC,
        I64, VEC, VEC, VEC, VEC, B1,
    )
)
def decide_rows(
    indptr, indices, data, keys, seed, tie, multiclass, times,
    S, a, P, score, qs, probability, after_round,
    cs, cp, win, ring, recent, qw,
    out_yhat, out_p, out_gap, out_v, out_prob, out_query,
):
    """:func:`learners.drivers.plain.decide_rows` with the controller between probability and draw."""
    for i in range(indptr.size - 1):
        lo, hi = indptr[i], indptr[i + 1]
        p, gap, v, top = score(S, a, P, indices[lo:hi], data[lo:hi])
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
        "int64[::1]", IDX, VAL, I64, I64, U64, "uint64", "int64", "boolean", "int64",
        "float64", "int64", "int64", "boolean", "boolean", "boolean",
        STATE, VEC, VEC, SCORE_FN, UPDATE_FN, VEC, PROB_FN, ROUND_FN, LABEL_FN,
        VEC, VEC, STATE, STATE, VEC, VEC,
        I64, VEC, VEC, B1, I64, IDX, VAL,
    )
)
def replay_rows(
    indptr, indices, data, order, y, keys, seed, tie, multiclass, delay, bias, column, first, final, weighted, fresh,
    S, a, P, score, update, qs, probability, after_round, after_label,
    cs, cp, win, ring, recent, qw,
    out_yhat, out_p, out_prob, out_query, fifo, idx_buf, val_buf,
):
    """:func:`learners.drivers.plain.replay_rows` with the controller; the clock counts the rounds the
    controller has seen. ``fresh``: the model has never changed, so its first change empties the
    window of scores (:meth:`BudgetController.forget_scores`). Scratch as the plain driver's."""
    n = order.size
    head = 0
    tail = pending_rounds(out_query, first, fifo)
    changed = 0
    start = cs[_SEEN] - first
    for t in range(first, n + delay if final else n):
        if t < n:
            if t + AHEAD < n:
                prefetch_row(S, indptr, indices, order[t + AHEAD])
            i = order[t]
            idx, val = row_of(indptr, indices, data, i, bias, column, idx_buf, val_buf)
            p, gap, v, top = score(S, a, P, idx, val)
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
            weight = 1.0 / out_prob[s] if weighted else 1.0
            if update(S, a, P, idx, val, y[i], weight):
                if fresh and changed == 0:
                    _forget_scores(cs)
                changed += 1
            after_label(qw, qs, out_yhat[s] != y[i], weight)
    return changed


# -- the controller ----------------------------------------------------------------------------
