"""What every live bus offers, and the items it delivers from other processes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from webapp.engine.stream import LiveChunk, LiveMessage, LiveTurn, LiveTurnAborted, LiveTurnStarted


@dataclass(frozen=True)
class Changed:
    """Another process changed a debate (committed event `seq`, or a status `change` not in the log
    yet): read the log again. `turn` is the key of the turn the event committed, if it did."""

    debate_id: str
    seq: int | None = None
    turn: str | None = None
    change: str | None = None


# What a subscriber is handed: the remote runner's streamed text and attempts, or a change signal.
RemoteItem = LiveTurnStarted | LiveChunk | LiveTurnAborted | Changed
BusHandler = Callable[[RemoteItem], None]
DashboardHandler = Callable[[str], None]


class LiveBus(Protocol):
    """Publishes this process's live messages and delivers other processes' ones.

    `publish` is synchronous and cheap (the engine calls its listeners for every token): a bus queues
    and sends in the background. `watch` returns the function that stops watching; a bus holds one
    subscription per debate however many handlers watch it, and drops it with the last one."""

    carries: bool  # whether anything crosses to other processes (the in-process bus: nothing)

    @property
    def connected(self) -> bool:
        """Whether live traffic from other processes arrives right now."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def publish(self, message: LiveMessage) -> None: ...

    def watch(self, debate_id: str, handler: BusHandler) -> Callable[[], None]: ...

    def watch_dashboard(self, handler: DashboardHandler) -> Callable[[], None]: ...

    def live_turns(self, debate_id: str) -> Mapping[str, LiveTurn]:
        """Turns another process is streaming for a watched debate, as far as the bus has seen them."""
        ...
