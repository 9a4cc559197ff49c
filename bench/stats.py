"""Latency samples and their percentiles."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Latency:
    """Milliseconds over ``samples`` calls (warm-up calls excluded)."""

    p50_ms: float
    p95_ms: float
    mean_ms: float
    samples: int

    @classmethod
    def of(cls, seconds: list[float]) -> Latency:
        ms = sorted(s * 1000 for s in seconds)
        return cls(percentile(ms, 50), percentile(ms, 95), sum(ms) / len(ms), len(ms))


def percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on an already sorted list."""
    if not ordered:
        raise ValueError("no samples")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def timed_calls(call: Callable[[int], None], count: int, warmup: int) -> list[float]:
    """Run ``call(i)`` ``warmup + count`` times in sequence; the seconds of the last ``count``."""
    for i in range(warmup):
        call(i)
    seconds: list[float] = []
    for i in range(warmup, warmup + count):
        start = time.perf_counter()
        call(i)
        seconds.append(time.perf_counter() - start)
    return seconds
