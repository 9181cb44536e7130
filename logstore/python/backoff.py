"""The one definition of retry backoff on the Python side: exponential with full jitter.

``full_jitter_delay(retry, base_s, cap_s)`` is uniform in ``[0, min(cap_s, base_s * 2**(retry-1))]``
for the ``retry``-th retry (1 = the first retry), as in the AWS Architecture Blog's "Exponential
Backoff And Jitter". Callers decide what is retried and how often; this only says how long to
wait.
"""

from __future__ import annotations

import random
import time


def full_jitter_delay(
    retry: int, base_s: float, cap_s: float, rng: random.Random | None = None
) -> float:
    """Seconds to wait before the ``retry``-th retry (``retry >= 1``); ``rng`` for a seeded
    sequence (default: the module's generator)."""
    ceiling = min(cap_s, base_s * (2 ** min(max(retry, 1) - 1, 30)))
    return (rng or random).uniform(0, ceiling)


def sleep_before_retry(retry: int, base_s: float, cap_s: float) -> None:
    """Sleeps :func:`full_jitter_delay` seconds."""
    time.sleep(full_jitter_delay(retry, base_s, cap_s))
