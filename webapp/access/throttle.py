"""Sign-in throttling: after repeated failures for one username or from one address, further
attempts are refused for a while (doubling with each further failure, capped).

Kept in memory: a restart forgets it, which only gives an attacker one fresh window per restart.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

FREE_FAILURES = 5  # failures in a row that lock the key; each further one doubles the wait
BASE_DELAY = 30.0  # seconds of wait after the FREE_FAILURES-th failure
MAX_DELAY = 15 * 60.0
FORGET_AFTER = 60 * 60.0  # a key with no failure for this long starts afresh


@dataclass
class _Record:
    failures: int = 0
    last: float = 0.0
    locked_until: float = 0.0


@dataclass
class LoginThrottle:
    """Counts failures per key (`user:NAME`, `addr:IP`) and says how long a key must wait."""

    clock: Callable[[], float] = time.monotonic
    _records: dict[str, _Record] = field(default_factory=dict)

    def wait(self, *keys: str) -> int:
        """Seconds (rounded up) before any of these keys may try again; 0 if they may now."""
        now = self.clock()
        longest = 0.0
        for key in keys:
            record = self._records.get(key)
            if record is not None:
                longest = max(longest, record.locked_until - now)
        return max(0, math.ceil(longest))

    def failed(self, *keys: str) -> None:
        now = self.clock()
        for key in keys:
            record = self._records.get(key)
            if record is None or now - record.last > FORGET_AFTER:
                record = self._records[key] = _Record()
            record.failures += 1
            record.last = now
            over = record.failures - FREE_FAILURES
            if over >= 0:
                record.locked_until = now + min(MAX_DELAY, BASE_DELAY * 2**over)
        if len(self._records) > 10_000:  # an address spraying names must not grow this without bound
            self._forget(now)

    def succeeded(self, *keys: str) -> None:
        for key in keys:
            self._records.pop(key, None)

    def _forget(self, now: float) -> None:
        for key in [k for k, r in self._records.items() if now - r.last > FORGET_AFTER and r.locked_until < now]:
            del self._records[key]
