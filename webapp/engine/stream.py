"""Messages the engine broadcasts to its subscribers (web pages, the CLI).

`LiveEvent` carries a committed log event. The others are ephemeral: streamed text and the start
or abandonment of an attempt at a turn. Subscribers are plain callables; the engine knows nothing
about who listens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from webapp.models import DebateEvent, utcnow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LiveEvent:
    """A committed event (already on disk). `replayed`: another process wrote it and this one read it
    from the log (relays to other processes skip it: they read the log themselves)."""

    debate_id: str
    event: DebateEvent
    replayed: bool = False


@dataclass(frozen=True)
class LiveTurnStarted:
    """An attempt at a turn began (the speaker is now "thinking…"). With `queued`, it waits for its
    server (busy with as many calls as it takes); the same attempt is announced again, unqueued, when
    its request goes out."""

    debate_id: str
    key: str
    speaker: str
    phase: str
    round: int
    act: str
    attempt: int
    queued: bool = False


@dataclass(frozen=True)
class LiveChunk:
    """Streamed text of an unfinished turn."""

    debate_id: str
    key: str
    speaker: str
    text: str


@dataclass(frozen=True)
class LiveTurnAborted:
    """An attempt was cut off; its partial text is discarded and the turn will be redone."""

    debate_id: str
    key: str
    reason: str


@dataclass(frozen=True)
class LiveStatus:
    """Something about the session changed that is not (yet) in the log — storage became unavailable
    (`storage_unavailable`: the debate is interrupted), it is back (`storage_restored`), or the debate
    was deleted (`deleted`). Re-read the session's read model."""

    debate_id: str
    change: str
    detail: str = ""


LiveMessage = LiveEvent | LiveTurnStarted | LiveChunk | LiveTurnAborted | LiveStatus
Listener = Callable[[LiveMessage], None]


@dataclass
class LiveTurn:
    """An in-flight turn, kept so a late joiner sees the text streamed so far."""

    key: str
    speaker: str
    phase: str
    round: int
    act: str
    attempt: int
    parts: list[str] = field(default_factory=list)  # appended per chunk; joined only when read
    started_at: datetime = field(default_factory=utcnow)
    queued: bool = False  # waiting for a slot on its endpoint (the server is busy): not sent yet

    @property
    def text(self) -> str:
        return "".join(self.parts)


class Broadcaster:
    """Fan-out to listeners; a failing listener is logged and never breaks the engine."""

    def __init__(self, on_empty: Callable[[], None] | None = None, tap: Listener | None = None) -> None:
        self._listeners: list[Listener] = []
        self.on_empty = on_empty  # called when the last listener leaves
        # Sees every message but is no subscriber: relaying a process's streams elsewhere (the live bus)
        # must not keep finished debates loaded as if someone watched them.
        self.tap = tap

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)
                if not self._listeners and self.on_empty is not None:
                    self.on_empty()

        return unsubscribe

    @property
    def count(self) -> int:
        return len(self._listeners)

    def emit(self, message: LiveMessage) -> None:
        if self.tap is not None:
            try:
                self.tap(message)
            except Exception:  # relaying must not stop a debate either
                log.exception("live tap failed")
        for listener in list(self._listeners):
            try:
                listener(message)
            except Exception:  # a broken spectator must not stop a debate
                log.exception("live listener failed")
