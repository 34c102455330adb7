"""A batch of feature records: the usable ones in input order as one CSR batch, the others named."""

from consumer.records import decode_feature_batch


def test_a_batch_keeps_the_usable_records_in_input_order_and_names_the_others():
    values = [b'{"id": "a", "features": [1, 0]}', b'{"id": "b"}',
              b'{"id": "c", "features": {"indices": [1], "values": [2]}, "ts": 5}']
    batch = decode_feature_batch(values, 2, lambda ks: 100.0 + ks)
    assert batch.ids == ["a", "c"] and batch.positions == [0, 2] and batch.ts == [100.0, 5.0]
    assert [(k, e.reason) for k, e in batch.rejected] == [(1, "missing_features")]
    assert batch.rows.to_csr().toarray().tolist() == [[1.0, 0.0], [0.0, 2.0]]
