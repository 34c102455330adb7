"""A command run as on a user's terminal: a pseudo-terminal with a window size, read to its end."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

__all__ = ["run_on_a_terminal"]


def run_on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str]:
    """``argv`` with its stdout and stderr on a pseudo-terminal: exit code and all it drew."""
    leader, follower = pty.openpty()
    # a terminal of 40 rows and 160 columns, as a user's has (a fresh pseudo-terminal has none)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, stdout=follower,
                            stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    drawn = bytearray()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the process closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    return proc.wait(timeout=60), drawn.decode(errors="replace")
