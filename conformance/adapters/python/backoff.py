"""Reconnect backoff: capped exponential with jitter, reset after a success (gRPC's connection backoff
shape: multiplier 1.6, jitter +-20%)."""

import random

MULTIPLIER = 1.6
JITTER = 0.2


class Backoff:
    def __init__(self, initial_s: float, max_s: float) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.failures = 0

    def next(self) -> float:
        """Seconds to wait before the next attempt; each call counts one more failure."""
        base = min(self.max_s, self.initial_s * MULTIPLIER**self.failures)
        self.failures += 1
        spread = base * JITTER * (2 * random.random() - 1)
        return max(0.0, min(self.max_s, base + spread))

    def reset(self) -> None:
        self.failures = 0
