import numpy as np

from learners.loop_parts import scratch


def test_the_scratch_of_a_replay_holds_every_round_and_the_widest_row_with_its_intercept():
    fifo, idx_buf, val_buf = scratch(np.array([0, 3, 3, 8, 9], dtype=np.int64), 6)
    assert fifo.shape == (6,) and fifo.dtype == np.int64
    assert idx_buf.shape == val_buf.shape == (6,)  # 5 non-zeros, then the intercept
    assert idx_buf.dtype == np.int32 and val_buf.dtype == np.float64


def test_the_scratch_of_rows_without_non_zeros_still_holds_the_intercept():
    for indptr in (np.zeros(1, dtype=np.int64), np.zeros(4, dtype=np.int64)):
        _, idx_buf, val_buf = scratch(indptr, indptr.size - 1)
        assert idx_buf.size == val_buf.size == 2
