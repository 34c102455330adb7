"""A stop requested from a signal handler ends a wait, and a wait without one runs its time."""

import signal
import time

from consumer.stop import Stop


def test_a_signal_during_a_wait_ends_it_soon_after():
    stop = Stop()
    previous = signal.signal(signal.SIGALRM, stop.request)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        started = time.monotonic()
        assert stop.wait(30.0)
        assert time.monotonic() - started < 5.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert stop.wait(0.0) and stop.requested  # a request stays made


def test_a_wait_without_a_request_lasts_its_time_and_says_so():
    stop = Stop()
    started = time.monotonic()
    assert not stop.wait(0.12)
    assert time.monotonic() - started >= 0.12
