"""Sign-in throttling: after repeated attempts for one username or from one address, further
attempts are refused for a while (doubling with each further attempt, capped).

Every attempt is *counted before its password is checked*, atomically for its username and its
address together (`SignIns.reserve`): twenty attempts sent at the same moment for an account with two
tries left get two password checks, not twenty. A success clears that username's count and takes back
only its own count on the address, so an account holder signing in does not reset the count of the
guesses made at other accounts from the same address.

The counters live in the database (`login_throttle`), so every web process of a scaled-out instance
shares them, and a restart does not reset them. Only a name that could be a username is counted per
username (at most 64 characters: the format is public, so nothing is learnt from that), and counters are
forgotten an hour after their last attempt, the least recently used first beyond `MAX_KEYS`.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from webapp.access.users import USERNAME  # what can be a username: anything else is never an account
from webapp.store.protocol import EventStore
from webapp.store.sign_ins import SignIns

FREE_ATTEMPTS = 5  # attempts in a row before a key waits; each further one doubles the wait
BASE_DELAY = 30.0  # seconds of wait after the FREE_ATTEMPTS-th attempt
MAX_DELAY = 15 * 60.0
FORGET_AFTER = 60 * 60.0  # a key with no attempt for this long starts afresh
MAX_KEYS = 50_000  # counters kept at most (the most recently used)
PRUNE_EVERY = 200  # reservations between two prunes (per process)


def _waits() -> list[tuple[int, float]]:
    """(attempts, seconds to wait after the last one) for each step of the doubling, up to the cap."""
    steps, attempts, delay = [], FREE_ATTEMPTS, BASE_DELAY
    while True:
        steps.append((attempts, min(delay, MAX_DELAY)))
        if delay >= MAX_DELAY:
            return steps
        attempts, delay = attempts + 1, delay * 2


WAITS = _waits()


def address_key(address: str) -> str:
    """The per-address key: an IPv6 client counts by its /64 (one subscriber holds a whole /64)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "addr:" + address[:64]
    if ip.version == 6 and not ip.is_loopback:
        return "addr:" + str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return f"addr:{ip}"


def user_key(name: str) -> str | None:
    """The per-username key, or None for a name no account can have (too long, other characters)."""
    name = name.strip()
    return f"user:{name.lower()}" if USERNAME.match(name) else None


@dataclass
class LoginThrottle:
    """Counts attempts per key in the store and says how long a key must wait."""

    store: EventStore
    clock: Callable[[], float] = time.time  # wall clock: shared with other processes through the store
    _reservations: int = field(default=0, init=False)

    @property
    def sign_ins(self) -> SignIns:
        return SignIns(self.store)

    async def reserve(self, *keys: str) -> int:
        """Count an attempt on every key: 0 when counted (the password may be checked), else the
        seconds (rounded up) to wait, with nothing counted."""
        now = self.clock()
        self._reservations += 1
        if self._reservations % PRUNE_EVERY == 1:
            await self.sign_ins.prune(now - FORGET_AFTER, MAX_KEYS)
        if await self.sign_ins.reserve(keys, now, now - FORGET_AFTER, WAITS):
            return 0
        return max(1, math.ceil(await self.sign_ins.waiting(keys, now, now - FORGET_AFTER, WAITS)))

    async def succeeded(self, user: str | None, address: str) -> None:
        """The password was right: the username starts afresh; the address only gets this attempt back."""
        if user is not None:
            await self.sign_ins.clear(user)
        await self.sign_ins.refund(address)
