"""Random JSON numbers and records, well-formed or broken, for the compiled readers' tests."""

from __future__ import annotations

import random


def random_number(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.2:
        return str(rng.randint(-1000, 1000))
    if kind < 0.5:
        return repr(rng.uniform(-10, 10))
    if kind < 0.7:
        return f"{rng.uniform(-1, 1):.{rng.randint(1, 9)}f}"
    if kind < 0.9:
        return f"{rng.uniform(-1e5, 1e5):.{rng.randint(0, 12)}e}"
    return rng.choice(["0", "-0", "0.0", "1E5", "1e-7", "-2.5E+3", "123456789.987654321", "4.9e-324"])



def random_object(rng: random.Random, fields: list[str], ts: float) -> bytes:
    """A record of ``fields``, with a ts (probability ``ts``) and a "v" (0.2), in random order and
    whitespace; one in seven broken somewhere."""
    ws = lambda: rng.choice(["", " ", "\n", "\t ", "  "])  # noqa: E731
    if rng.random() < ts:
        fields.append(f'"ts":{random_number(rng)}')
    if rng.random() < 0.2:
        fields.append('"v":1')
    rng.shuffle(fields)
    text = "{" + ws() + ("," + ws()).join(fields) + ws() + "}"
    if rng.random() < 0.15:  # break it somewhere
        cut = rng.randrange(len(text))
        text = text[:cut] + rng.choice(["", "}", ",", "x", "]", '"', "1", "."]) + text[cut + 1 :]
    return text.encode()

