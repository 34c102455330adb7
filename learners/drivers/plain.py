"""The drivers of a learner with neither a budget controller nor a scaler: the rows as given.

Decision of one round (the same in :func:`decide_rows` and :func:`replay_rows`)::

    p, gap, v, top = score(x)                   # the rule's view of x
    ŷ = top (multiclass) or sign(p), with sign(0) = tie
    q = probability(p, gap, v); after_round()   # the query's view, then its per-round state
    Z = draw(seed, key) < q                     # deterministic in (seed, record key)
"""

from __future__ import annotations

from learners.coin import draw
from learners.jit import signature
from learners.kernels import IDX, LABEL_FN, PROB_FN, ROUND_FN, SCORE_FN, STATE, UPDATE_FN, VAL, VEC
from learners.loop_parts import B1, I64, INDPTR, U64, driver, pending_rounds, predict, row_of
from learners.prefetch import AHEAD, prefetch_row

__all__ = ["decide_rows", "learn_rows", "probabilities", "replay_rows", "score_rows"]


@driver(signature("none", INDPTR, IDX, VAL, STATE, VEC, VEC, SCORE_FN, VEC, VEC, VEC, I64))
def score_rows(indptr, indices, data, S, a, P, score, out_p, out_gap, out_v, out_top):
    """Scores of every row with the current state; nothing changes."""
    n = indptr.size - 1
    for i in range(n):
        if i + AHEAD < n:
            prefetch_row(S, indptr, indices, i + AHEAD)
        lo, hi = indptr[i], indptr[i + 1]
        p, gap, v, top = score(S, a, P, indices[lo:hi], data[lo:hi])
        out_p[i] = p
        out_gap[i] = gap
        out_v[i] = v
        out_top[i] = top


@driver(signature("none", VAL, VAL, VAL, VEC, VEC, PROB_FN, ROUND_FN, VEC))
def probabilities(p, gap, v, qp, qs, probability, after_round, out):
    """Query probabilities for a batch of scores, advancing ``qs`` one round per row."""
    for i in range(p.size):
        out[i] = probability(p[i], gap[i], v[i], qp, qs)
        after_round(qp, qs)


@driver(
    signature(
        "none",
        INDPTR, IDX, VAL, U64, "uint64", "int64", "boolean",
        STATE, VEC, VEC, SCORE_FN, VEC, VEC, PROB_FN, ROUND_FN,
        I64, VEC, VEC, VEC, VEC, B1,
    )
)
def decide_rows(
    indptr, indices, data, keys, seed, tie, multiclass,
    S, a, P, score, qp, qs, probability, after_round,
    out_yhat, out_p, out_gap, out_v, out_prob, out_query,
):
    """Predict and decide for every row of a batch against the same model state."""
    n = indptr.size - 1
    for i in range(n):
        if i + AHEAD < n:
            prefetch_row(S, indptr, indices, i + AHEAD)
        lo, hi = indptr[i], indptr[i + 1]
        p, gap, v, top = score(S, a, P, indices[lo:hi], data[lo:hi])
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
        INDPTR, IDX, VAL, I64, I64, B1, VEC, STATE, VEC, VEC, UPDATE_FN, VEC, VEC, LABEL_FN
    )
)
def learn_rows(indptr, indices, data, rows, y, mistakes, weights, S, a, P, update, qp, qs, after_label):
    """Apply the labels ``y`` of ``rows`` in order, with their importance ``weights``; returns how
    many changed the model."""
    changed = 0
    for k in range(rows.size):
        if k + AHEAD < rows.size:
            prefetch_row(S, indptr, indices, rows[k + AHEAD])
        i = rows[k]
        lo, hi = indptr[i], indptr[i + 1]
        if update(S, a, P, indices[lo:hi], data[lo:hi], y[k], weights[k]):
            changed += 1
        after_label(qp, qs, mistakes[k], weights[k])
    return changed


@driver(
    signature(
        "int64",
        INDPTR, IDX, VAL, I64, I64, U64, "uint64", "int64", "boolean", "int64",
        "float64", "int64", "int64", "boolean", "boolean",
        STATE, VEC, VEC, SCORE_FN, UPDATE_FN, VEC, VEC, PROB_FN, ROUND_FN, LABEL_FN,
        I64, VEC, VEC, B1, I64, IDX, VAL,
    )
)
def replay_rows(
    indptr, indices, data, order, y, keys, seed, tie, multiclass, delay, bias, column, first, final, weighted,
    S, a, P, score, update, qp, qs, probability, after_round, after_label,
    out_yhat, out_p, out_prob, out_query, fifo, idx_buf, val_buf,
):
    """Prequential replay: predict, decide, and learn from queried labels after ``delay`` rounds.

    Round t handles row ``order[t]``; with ``bias != 0`` the row is followed by the intercept
    coordinate ``column``. Its label, if queried, is applied once round t + delay has been
    predicted (delay 0: right after its own prediction). Outputs are in stream order. Returns the
    number of updates that changed the model.

    A stream replayed in chunks: rounds ``0 .. first-1`` are the previous chunk's last rounds,
    already predicted (their outputs filled in), carried so their pending labels can be applied;
    labels still pending at the end are applied in order only if ``final``. ``weighted``: a
    label asked with probability q is learnt with importance weight 1/q, else 1.

    Scratch (:func:`learners.loop_parts.scratch`): ``fifo`` holds the rounds whose label is on its way, oldest first;
    ``idx_buf`` and ``val_buf`` a row with its intercept.
    """
    n = order.size
    head = 0
    tail = pending_rounds(out_query, first, fifo)
    changed = 0
    for t in range(first, n + delay if final else n):
        if t < n:
            if t + AHEAD < n:
                prefetch_row(S, indptr, indices, order[t + AHEAD])
            i = order[t]
            idx, val = row_of(indptr, indices, data, i, bias, column, idx_buf, val_buf)
            p, gap, v, top = score(S, a, P, idx, val)
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
            weight = 1.0 / out_prob[s] if weighted else 1.0
            if update(S, a, P, idx, val, y[i], weight):
                changed += 1
            after_label(qp, qs, out_yhat[s] != y[i], weight)
    return changed
