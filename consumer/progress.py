"""`activestream replay`'s progress bar: rows a second, the pass's running accuracy and query ratio.

Shown on a terminal only: off with ``--json``, ``--quiet``, or when stderr is not a terminal (a log, a
pipe, CI), so that nothing but the report reaches a file. Written to stderr by tqdm.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["ReplayProgress", "reading", "wanted"]


def wanted(*, json: bool, quiet: bool, stream: TextIO | None = None) -> bool:
    """Whether a bar is drawn: on a terminal, unless ``--json`` or ``--quiet``."""
    stream = sys.stderr if stream is None else stream
    return not (json or quiet) and stream.isatty()


class ReplayProgress:
    """One bar over every pass of a replay (``rows`` a pass, None when a stream's length is not known),
    fed by :func:`learners.replay.run`'s ``progress(pass, rounds, mistakes, queries)``."""

    def __init__(self, rows: int | None, passes: int, *, stream: TextIO | None = None) -> None:
        from tqdm import tqdm  # imported when a bar is drawn: a replay's start-up is short

        self.rows, self.passes = rows, passes
        total = None if rows is None else rows * passes
        self.bar = tqdm(total=total, unit="rows", unit_scale=True, file=sys.stderr if stream is None else stream,
                        dynamic_ncols=True, desc="replay", leave=False, mininterval=0)  # a call per 2¹⁸ rows
        self._pass, self._done = 0, 0

    def __call__(self, k: int, rounds: int, mistakes: int, queries: int) -> None:
        if k != self._pass:
            self._pass, self._done = k, 0
        self.bar.set_description(f"pass {k + 1}/{self.passes}" if self.passes > 1 else "replay", refresh=False)
        if rounds:
            self.bar.set_postfix(accuracy=f"{1 - mistakes / rounds:.4f}", queried=f"{queries / rounds:.1%}",
                                 refresh=False)
        self.bar.update(rounds - self._done)  # draws the bar with the description and counts above
        self._done = rounds

    def close(self) -> None:
        self.bar.close()


def reading(stream: TextIO | None = None) -> tqdm:
    """A bar of the records read from a topic so far (their number is not known ahead)."""
    from tqdm import tqdm

    return tqdm(unit="records", unit_scale=True, file=sys.stderr if stream is None else stream, dynamic_ncols=True,
                desc="reading", leave=False)
