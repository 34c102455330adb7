"""The compiled number reader: exact, or the text handed to Python's ``float``."""

from __future__ import annotations

import random

import numpy as np
import pytest

from consumer.fastjson.lexing import _number


def _read(text: str) -> tuple[float, int]:
    """(value, status) of the compiled number reader on the whole of ``text``."""
    value, end, status, _ = _number(np.frombuffer(text.encode(), dtype=np.uint8), 0, len(text))
    assert end == len(text)
    return value, status


def _near_midpoints(rng: random.Random, n: int) -> list[str]:
    """Decimal strings within a hair of the midpoint between two neighbouring doubles, where a
    reader that rounds twice goes wrong."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    out = []
    for _ in range(n):
        x = rng.uniform(1.0, 2.0**rng.randrange(1, 52))
        mid = (Decimal(x) + Decimal(np.nextafter(x, np.inf))) / 2
        digits = rng.choice([17, 18, 19])
        scale = digits - len(str(int(mid)))  # digits after the point
        if not 1 <= scale <= 15:
            continue
        text = str(mid.quantize(Decimal(1).scaleb(-scale)))
        out.append(text)
        last = int(text[-1])  # and one unit of the last digit either side
        out += [text[:-1] + str(last + 1)] if last < 9 else []
        out += [text[:-1] + str(last - 1)] if last > 0 else []
    return out


@pytest.mark.parametrize("seed", range(4))
def test_long_decimals_are_read_exactly_or_handed_to_python(seed):
    rng = random.Random(seed)
    stamps = [repr(rng.uniform(1.6e9, 1.9e9)) for _ in range(3000)]
    long = [f"{rng.randrange(1, 10**rng.randrange(16, 20))}" for _ in range(3000)]
    long = [t[: -(k := rng.randrange(1, min(15, len(t) - 1) + 1))] + "." + t[-k:] for t in long]
    tricky = _near_midpoints(rng, 3000)
    fast = {}
    for name, texts in (("stamps", stamps), ("long", long), ("tricky", tricky)):
        statuses = []
        for text in texts:
            value, status = _read(text)
            assert status in (0, 1), text
            if status == 0:
                assert value == float(text), text  # bit for bit: both are finite and positive
            statuses.append(status)
        fast[name] = statuses.count(0) / len(statuses)
    assert fast["stamps"] > 0.999  # time.time()'s 17 digits never leave the compiled reader
    assert fast["long"] > 0.9  # the rest have an integer part beyond 2**53
    assert fast["tricky"] < 0.99, fast  # a value on a midpoint's edge is handed over
