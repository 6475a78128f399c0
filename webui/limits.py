"""Attempt limits: how many admin logins one client may try in a time window.

A guessed admin token is the one secret an attacker can try from the login form, so each client (its address as
the server sees it: behind a reverse proxy, the proxy's) gets `LoginLimit.attempts` tries per sliding window of
`LoginLimit.window_s` seconds, successful or not; past that the form answers 429 with ``Retry-After`` until the
oldest try leaves the window. Counts live in the worker process: with N gunicorn workers a client may try up to N
times the limit, which still turns a guessing attack from thousands of tries a second into a handful a minute.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

#: Clients remembered at most: past this the quietest are forgotten, so a flood of addresses cannot fill memory.
MAX_CLIENTS = 10_000


class AttemptLimiter:
    """A sliding-window counter of attempts per client.

    Args:
        attempts: tries allowed per window (0: unlimited).
        window_s: the window's length in seconds.
        clock: seconds as a float (tests pass their own; default `time.monotonic`).
    """

    def __init__(self, attempts: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.attempts = attempts
        self.window_s = window_s
        self.clock = clock
        self._tries: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, client: str) -> float:
        """Seconds until `client` may try again (0: it may now). Does not count a try."""
        if self.attempts <= 0:
            return 0.0
        with self._lock:
            tries = self._recent(client)
            if len(tries) < self.attempts:
                return 0.0
            return max(0.0, tries[0] + self.window_s - self.clock())

    def record(self, client: str) -> None:
        """Count one try of `client` now."""
        if self.attempts <= 0:
            return
        with self._lock:
            self._recent(client).append(self.clock())
            if len(self._tries) > MAX_CLIENTS:
                oldest = min(self._tries, key=lambda key: self._tries[key][-1] if self._tries[key] else 0.0)
                del self._tries[oldest]

    def _recent(self, client: str) -> deque[float]:
        tries = self._tries.setdefault(client, deque())
        horizon = self.clock() - self.window_s
        while tries and tries[0] <= horizon:
            tries.popleft()
        return tries
