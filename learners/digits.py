"""Runs of decimal digits read eight bytes at a time, for the LIBSVM parser.

A byte-at-a-time loop pays a mispredicted branch where each run of digits ends, and LIBSVM text is
mostly short runs (``17:1.0000``). Here the run's length comes from one 64-bit word, and its value
from three multiplications: the SWAR conversion of Lemire, "Number parsing at a gigabyte per
second", Software: Practice and Experience 51(8), 2021, Sect. 5 (eight digits in a word). The
parser takes this path for runs of at most seven digits with their end inside the word, and its
byte loop for everything else, so both give the same numbers.
"""

from __future__ import annotations

import numpy as np

from learners.jit import external, intrinsic, jit

__all__ = ["digit_run", "digits_value", "word_at"]

_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH = np.uint64(0x8080808080808080)
_FROM_0 = np.uint64(0x5050505050505050)  # a byte of at most 0x7F plus 0x50 has its high bit iff ≥ '0'
_ABOVE_9 = np.uint64(0x4646464646464646)  # … plus 0x46: iff > '9'; neither sum carries into the next byte
_ZEROS = np.uint64(0x3030303030303030)
_PAIRS = np.uint64(0x000000FF000000FF)
_TIMES_100 = np.uint64(100 + (1_000_000 << 32))
_TIMES_1 = np.uint64(1 + (10_000 << 32))


trailing_zeros = external("numba.cpython.unsafe.numbers", "trailing_zeros")


@intrinsic
def word_at(typingctx, text, i):
    """The eight bytes ``text[i:i + 8]`` as one little-endian uint64 (the first byte lowest). The
    caller keeps ``i + 8 <= text.size``: nothing is checked."""
    from llvmlite import ir
    from numba.core import types

    sig = types.uint64(text, types.intp)

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        at = builder.gep(array.data, [args[1]])
        return builder.load(builder.bitcast(at, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@jit(inline="always")
def digit_run(word):
    """How many of the word's bytes, from its first, are decimal digits (0 – 8)."""
    low7 = word & _LOW7
    digits = (low7 + _FROM_0) & ~(low7 + _ABOVE_9) & ~word & _HIGH
    others = ~digits & _HIGH
    if others == 0:
        return 8
    return np.int64(trailing_zeros(others)) >> 3


@jit(inline="always")
def digits_value(word, k):
    """The value of the ``k`` (1 – 7) digits at the word's start: shifted to its top so that they
    read as eight digits with leading zeros (the bytes after them drop out), then Lemire's three
    multiplications: pairs of digits, then fours, then eight."""
    d = (word - _ZEROS) << np.uint64(8 * (8 - k))  # a borrow only runs to later bytes, shifted out
    d = d * np.uint64(10) + (d >> np.uint64(8))
    d = ((d & _PAIRS) * _TIMES_100 + ((d >> np.uint64(16)) & _PAIRS) * _TIMES_1) >> np.uint64(32)
    return d & np.uint64(0xFFFFFFFF)
