"""Attempt limits per client and sliding window (`eqsearch.webui.limits`)."""

from __future__ import annotations

from eqsearch.webui.limits import AttemptLimiter


def test_tries_are_counted_per_client_in_a_sliding_window():
    now = [0.0]
    limiter = AttemptLimiter(2, 10.0, clock=lambda: now[0])
    limiter.record("a")
    now[0] = 4.0
    limiter.record("a")
    assert limiter.retry_after("a") == 6.0 and limiter.retry_after("b") == 0.0
    now[0] = 10.5  # the first try has left the window
    assert limiter.retry_after("a") == 0.0
    limiter.record("a")
    assert limiter.retry_after("a") == 3.5


def test_zero_means_unlimited():
    limiter = AttemptLimiter(0, 10.0)
    for _ in range(100):
        limiter.record("a")
    assert limiter.retry_after("a") == 0.0
