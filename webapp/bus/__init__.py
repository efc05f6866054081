"""The live bus: how live traffic (streamed text, change signals) crosses process boundaries.

The process that runs a debate publishes what its engine says about it (`BusPublisher`); every web
process subscribes, once per debate it has watchers for, and feeds its local live channels. Without
`ROSTRUM_REDIS_URL` the bus is in-process (`InProcessBus`): the engine's own broadcasts are the only
source, exactly as before the bus existed. With it, Redis carries the traffic (`RedisBus`): a capped
stream per debate for late joiners, pub/sub for everything live. Losing Redis loses only the
token-by-token view; finished turns are in the store, which pages keep following.
"""

from __future__ import annotations

from webapp.bus.memory import InProcessBus
from webapp.bus.protocol import BusHandler, Changed, LiveBus, RemoteItem
from webapp.bus.publisher import BusPublisher


def open_bus(url: str | None) -> LiveBus:
    """The bus for `url` (a redis:// URL), or the in-process one when there is none."""
    if not url:
        return InProcessBus()
    from webapp.bus.redis_bus import RedisBus  # only processes configured for Redis import the client

    return RedisBus(url)


__all__ = ["BusHandler", "BusPublisher", "Changed", "InProcessBus", "LiveBus", "RemoteItem", "open_bus"]
