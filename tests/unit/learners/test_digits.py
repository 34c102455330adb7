"""Digit runs read a word at a time, against a byte loop; the parser's word path against its byte path."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from learners.datasets import _index, _index_bytes, _number_bytes, _parse_number
from learners.digits import digit_run, digits_value, word_at


@njit
def _word_run_and_value(text, i):
    word = word_at(text, i)
    k = digit_run(word)
    return k, digits_value(word, k) if 0 < k < 8 else np.uint64(0)


def _bytes_of(text: bytes) -> np.ndarray:
    return np.frombuffer(text, dtype=np.uint8)


@settings(deadline=None)  # the first example compiles
@given(st.binary(min_size=8, max_size=8), st.integers(0, 8), st.text("0123456789", min_size=8, max_size=8))
def test_a_words_digit_run_and_value_are_those_a_byte_loop_finds(tail, k, digits):
    text = (digits[:k].encode() + tail)[:8]  # any byte, 0x00 – 0xFF, may follow the digits
    run = next((j for j, c in enumerate(text) if not 48 <= c <= 57), 8)
    got_run, value = _word_run_and_value(_bytes_of(text + b"pad"), 0)
    assert got_run == run
    if 0 < run < 8:
        assert value == int(text[:run])


def test_a_word_read_at_an_unaligned_offset():
    text = _bytes_of(b"x12345:0.2036 \n")
    assert _word_run_and_value(text, 1) == (5, 12345)
    assert _word_run_and_value(text, 7) == (1, 0)  # '0' then '.'


_TOKENS = st.text("0123456789.-+eE:x", max_size=22)
_ENDS = st.sampled_from([b" ", b"\n", b"\t", b":", b"e5 ", b"", b"7 ", b"\r\n"])


@settings(max_examples=2000, deadline=None)
@given(_TOKENS, _ENDS, st.integers(0, 12))
def test_the_parsers_word_path_reads_every_token_as_its_byte_path(token, end, padding):
    """The same (value, end, status) and the same index or error, wherever the token sits against the
    buffer's end (the word path is taken only with eight bytes left)."""
    text = _bytes_of(token.encode() + end + b" " * padding)
    n = text.size
    fast, slow = _parse_number(text, 0, n), _number_bytes(text, 0, n)
    assert fast[1:] == slow[1:]
    if slow[2] >= 0:
        assert fast[0] == slow[0] and np.signbit(fast[0]) == np.signbit(slow[0])
    for one_based in (0, 1):
        assert _index(text, 0, n, one_based) == _index_bytes(text, 0, n, one_based)
