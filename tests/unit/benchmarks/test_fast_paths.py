"""benchmarks.fast_paths: the verdict rule, the run order, and that each alternative does the fast path's job."""

import numpy as np
import orjson
import pytest

from benchmarks.fast_paths import (
    Runs,
    _rounds,
    beats,
    columns,
    compiled_predictions,
    compiled_requests,
    cpu_verdicts,
    dense_records,
    orjson_predictions,
    orjson_requests,
    orjson_rows,
    same_outputs,
    verdict,
    verdicts,
)
from consumer.records import decode_feature_batch


def runs(variant, rates, fast=False):
    return Runs("reader", "dense", variant, fast, "rows/s", list(rates))


def test_a_fast_path_wins_only_when_its_worst_run_beats_the_best_of_every_alternative():
    fast = runs("fast", [10.0, 12.0, 11.0], fast=True)
    assert verdict(fast, [runs("a", [7.0, 9.5]), runs("b", [3.0])]) == "wins"
    assert verdict(fast, [runs("a", [7.0, 10.0])]) == "does not win"  # a tie is no win
    assert verdict(fast, [runs("a", [3.0]), runs("b", [5.0, 10.5])]) == "does not win"  # overlapping spreads
    assert beats([2.0, 3.0], [4.0, 5.0], higher_is_better=False)  # CPU per message: lower is better
    assert not beats([2.0, 4.5], [4.0, 5.0], higher_is_better=False)


def test_verdicts_judge_each_workload_of_each_fast_path_apart():
    table = [runs("fast", [10.0], fast=True), runs("plain", [5.0]),
             Runs("reader", "sparse", "fast", True, "rows/s", [4.0]), Runs("reader", "sparse", "plain", False,
                                                                            "rows/s", [6.0])]
    assert verdicts(table) == {"reader": {"dense": "wins", "sparse": "does not win"}}


def test_the_cpu_verdict_asks_for_less_cpu_in_every_run_and_is_given_only_where_measured():
    fast = Runs("producer", "predictions", "batch", True, "messages/s", [3.0, 3.5], [1.0, 1.2])
    slow = Runs("producer", "predictions", "each", False, "messages/s", [2.0], [1.1, 4.0])
    assert cpu_verdicts([fast, slow, runs("fast", [10.0], fast=True)]) == {"producer": {"predictions": "does not win"}}
    slow.cpu_us = [1.3, 4.0]
    assert cpu_verdicts([fast, slow]) == {"producer": {"predictions": "wins"}}


def test_each_round_runs_every_variant_once_in_a_rotated_order():
    assert _rounds("abc", 3) == list("abcbcacab")


def now(ks):
    return np.full(len(ks), 7.0)


def _same_rows(values, n_features):
    batch = decode_feature_batch(values, n_features, now)
    ids, ts, indptr, indices, data = orjson_rows(values, n_features, now)
    assert ids == batch.ids and ts.tolist() == batch.ts
    np.testing.assert_array_equal(indptr, batch.rows.indptr)
    np.testing.assert_array_equal(indices, batch.rows.indices)
    np.testing.assert_array_equal(data, batch.rows.data)
    assert indices.dtype == batch.rows.indices.dtype and indptr.dtype == batch.rows.indptr.dtype


def test_the_orjson_reader_builds_the_compiled_readers_arrays_from_dense_records():
    values = dense_records(40)
    assert any(b"0.0" in v for v in values)  # zeros, which both drop
    _same_rows(values, 8)


def test_the_orjson_reader_builds_the_compiled_readers_arrays_from_sparse_records():
    values = [b'{"id":"a","features":{"indices":[0,5,122],"values":[1.0,0.0,2.5]}}',
              b'{"id":"b","features":{"indices":[3],"values":[-1]},"ts":12.5}',
              b'{"id":"c","features":{"indices":[1,2],"values":[0.1,0.2]}}']
    _same_rows(values, 123)


@pytest.mark.parametrize(("fast", "plain"), [(compiled_predictions, orjson_predictions),
                                             (compiled_requests, orjson_requests)])
def test_both_writers_write_the_same_json_objects(fast, plain):
    records = [orjson.dumps({"id": f"r{k}", "features": {"indices": [k, k + 3], "values": [0.5, -1.25]}})
               for k in range(5)]
    [decided] = columns(records)
    assert same_outputs(fast(decided), plain(decided)) == (True, True)
