"""Spans of a batch's joined values: gathered into lines, compared byte for byte."""

import numpy as np

from consumer.fastjson import gather_lines, spans_differ


def test_gather_lines_joins_the_spans_with_newlines():
    blob = b"xxabyycdezz"
    lo, hi = np.array([2, 6, 11], dtype=np.int64), np.array([4, 9, 11], dtype=np.int64)
    assert gather_lines(blob, lo, hi) == b"ab\ncde\n"
    assert gather_lines(blob, lo[:0], hi[:0]) == b""


def test_spans_differ_compares_lengths_and_bytes():
    a, b = np.frombuffer(b"abcabd", dtype=np.uint8), np.frombuffer(b"abcab", dtype=np.uint8)
    a_lo, a_hi = np.array([0, 3, 0]), np.array([3, 6, 2])
    b_lo, b_hi = np.array([0, 0, 0]), np.array([3, 3, 3])
    out = np.zeros(3, dtype=np.bool_)
    spans_differ(a, a_lo, a_hi, b, b_lo, b_hi, out)
    assert out.tolist() == [False, True, True]
