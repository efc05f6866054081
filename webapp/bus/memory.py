"""The in-process bus: no other process is heard, and this process's engine already tells its pages
everything directly (today's behaviour when no Redis is configured)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from webapp.bus.protocol import BusHandler, DashboardHandler
from webapp.engine.stream import LiveMessage, LiveTurn


def _nothing() -> None:
    return None


class InProcessBus:
    """A `LiveBus` that carries nothing between processes (debates run elsewhere are followed
    through the store, as before)."""

    carries = False

    @property
    def connected(self) -> bool:
        return False

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def publish(self, message: LiveMessage) -> None:
        return None  # local subscribers got it from the session itself

    def watch(self, debate_id: str, handler: BusHandler) -> Callable[[], None]:
        return _nothing

    def watch_dashboard(self, handler: DashboardHandler) -> Callable[[], None]:
        return _nothing

    def live_turns(self, debate_id: str) -> Mapping[str, LiveTurn]:
        return {}
