"""Every decoding path's verdict on one record, for tests that all paths must agree on."""

from __future__ import annotations

import numpy as np
import orjson

from consumer.errors import InvalidRecord
from consumer.records import REASONS, decode_feature, decode_feature_batch, decode_label, decode_label_batch

N_FEATURES = 8
CLASSES = {-1: 0, 1: 1, "spam": 2}
# neighbours that the compiled scanner reads, and one it leaves to the batch path (named features)
COMPILED_FEATURE = orjson.dumps({"id": "good-1", "features": {"indices": [1], "values": [1.5]}})
NAMED_FEATURE = orjson.dumps({"id": "good-2", "features": {"colour": "red"}})
LABEL_NEIGHBOUR = orjson.dumps({"id": "good-3", "label": 1})


def no_times(ks: np.ndarray) -> np.ndarray:
    return np.full(len(ks), 5.0)


def feature_verdicts(value: bytes | None) -> dict[str, object]:
    """path → the reason it rejects ``value`` for, or (id, indices, values bytes, ts) it decodes."""
    out: dict[str, object] = {}
    try:
        f = decode_feature(value, N_FEATURES, 5.0)
        out["careful"] = (f.id, f.idx.tolist(), f.val.tobytes(), np.float64(f.ts).tobytes())
    except InvalidRecord as err:
        out["careful"] = err.reason
    for path, neighbours in (("compiled", [COMPILED_FEATURE]), ("batch", [NAMED_FEATURE]),
                             ("alone", [])):
        batch = decode_feature_batch([*neighbours, value], N_FEATURES, no_times)
        last = len(neighbours)
        if batch.rejected and batch.rejected[-1][0] == last:
            out[path] = batch.rejected[-1][1].reason
        else:
            j = batch.positions.index(last)
            idx, val = batch.rows.row(j)
            out[path] = (batch.ids[j], idx.tolist(), val.tobytes(), np.float64(batch.ts[j]).tobytes())
        assert batch.positions[:last] == list(range(last)), "a neighbour was lost"
    return out


def label_verdicts(value: bytes | None, classes: dict = CLASSES) -> dict[str, object]:
    """path → the reason it rejects ``value`` for, or (id, label type, label, cost bytes, ts bytes)."""
    out: dict[str, object] = {}
    try:
        lab = decode_label(value, classes, 5.0)
        out["careful"] = _label_fields(lab)
    except InvalidRecord as err:
        out["careful"] = err.reason
    for path, neighbours in (("compiled", [LABEL_NEIGHBOUR]), ("alone", [])):
        labels, positions, rejected = decode_label_batch([*neighbours, value], classes, no_times)
        last = len(neighbours)
        out[path] = (rejected[-1][1].reason if rejected and rejected[-1][0] == last
                     else _label_fields(labels[positions.index(last)]))
    return out


def _label_fields(lab) -> tuple:
    cost = None if lab.cost is None else np.float64(lab.cost).tobytes()
    return (lab.id, type(lab.label).__name__, lab.label, cost, np.float64(lab.ts).tobytes())


def one_verdict(verdicts: dict[str, object]) -> object:
    """The verdict every path gave; fails naming the paths when they disagree."""
    distinct = set(map(repr, verdicts.values()))
    assert len(distinct) == 1, f"paths disagree: {verdicts}"
    return next(iter(verdicts.values()))


def check_feature(value: bytes | None) -> None:
    """One verdict on every path; an accepted record's numbers are orjson's, bit for bit."""
    verdict = one_verdict(feature_verdicts(value))
    if isinstance(verdict, str):
        assert verdict in REASONS
        return
    _, idx, val, ts = verdict
    obj = orjson.loads(value)  # accepted: the numbers must be orjson's
    assert np.frombuffer(ts, dtype=np.float64)[0] == float(obj.get("ts") if type(obj.get("ts")) in (int, float)
                                                            else np.frombuffer(ts, dtype=np.float64)[0])
    values = np.frombuffer(val, dtype=np.float64)
    assert np.isfinite(values).all() and (values != 0).all() and list(idx) == sorted(set(idx))
    features = obj["features"]
    if isinstance(features, list):
        want = [float(x) for x in features]
        assert values.tobytes() == np.array([want[i] for i in idx], dtype=np.float64).tobytes()
    elif set(features) == {"indices", "values"}:
        sums: dict[int, float] = {}
        for i, x in zip(features["indices"], features["values"], strict=True):  # left to right
            sums[i] = sums.get(i, 0.0) + float(x)
        kept = sorted(i for i, x in sums.items() if x != 0.0)
        assert list(idx) == kept
        assert values.tobytes() == np.array([sums[i] for i in kept], dtype=np.float64).tobytes()
