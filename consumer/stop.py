"""A stop that a signal handler may request, and waits that end on it.

``threading.Event.set`` takes the event's lock. Called from a signal handler while the main thread
is inside ``Event.wait`` holding that same lock, it waits for itself forever, and the process no
longer ends on SIGTERM. Here a request only sets a flag (safe in a handler); a wait sleeps in short
slices and looks at the flag between them.
"""

from __future__ import annotations

import time

__all__ = ["Stop"]

_SLICE_S = 0.05  # how soon a wait notices a request


class Stop:
    def __init__(self) -> None:
        self.requested = False

    def request(self, *_: object) -> None:
        """Signal handler: set the flag and nothing else."""
        self.requested = True

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for a request; whether one was made."""
        deadline = time.monotonic() + seconds
        while not self.requested:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(_SLICE_S, left))
        return True
