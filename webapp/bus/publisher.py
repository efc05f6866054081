"""Relays what this process's engine says about the debates it runs to the live bus."""

from __future__ import annotations

from collections.abc import Callable

from webapp.bus.protocol import LiveBus
from webapp.engine.engine import Engine
from webapp.engine.stream import LiveEvent, LiveMessage, LiveStatus

# Status changes other processes must hear of; "reloaded" only says this process read the log again.
RELAYED_STATUS = frozenset({"storage_unavailable", "storage_restored", "deleted"})


class BusPublisher:
    """Taps every session of `engine` (without counting as a watcher) and publishes to `bus` what
    other processes cannot read from the log yet: streamed text, attempts, and a signal per change.
    Events this process only read from the log (written elsewhere) are not sent back."""

    def __init__(self, engine: Engine, bus: LiveBus) -> None:
        self.bus = bus
        # A bus that carries nothing gets no tap: no work per streamed token for a single process.
        self._unsubscribe: Callable[[], None] | None = (
            engine.all_live.subscribe(self._relay) if bus.carries else None)

    def _relay(self, message: LiveMessage) -> None:
        if isinstance(message, LiveEvent) and message.replayed:
            return
        if isinstance(message, LiveStatus) and message.change not in RELAYED_STATUS:
            return
        self.bus.publish(message)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
