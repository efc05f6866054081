"""Per-debate broadcast to web pages, with one throttled flush per debate (not per client).

The engine calls its listeners synchronously for every streamed chunk; sending each chunk to each
browser would cost one websocket message per token per tab. A `DebateChannel` instead buffers what
the engine says about one debate, and a single loop flushes the buffer every `FLUSH_INTERVAL`
seconds as one `nicegui.Event` emission that every watching page receives. Consecutive chunks of a
turn are coalesced into one `ChunkDelta` that carries its character offset, so a page that rendered
a snapshot a moment ago can skip text it already shows: nothing is missed or shown twice.

A channel exists only while some page watches its debate: when the last watching client is
deleted, the channel unsubscribes from the engine and its flush task ends. Debates keep running
without any channel — the engine does not know or care who watches.

`LiveHub` also throttles the engine's all-debates stream into a `dashboard` event, so dashboards
refresh at most a few times a second however busy the debates are.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nicegui import Event, background_tasks, context

from webapp.engine.engine import Engine
from webapp.engine.events import TurnPayload
from webapp.engine.machine import TERMINAL_STATES
from webapp.engine.runner import DebateSession
from webapp.engine.stream import LiveChunk, LiveEvent, LiveMessage, LiveStatus, LiveTurnAborted, LiveTurnStarted

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 0.08  # seconds: fast enough to read as live, slow enough to batch ~3 tokens at 40 tok/s
DASHBOARD_INTERVAL = 0.5  # seconds between dashboard refresh signals
# Another process (the CLI) may drive a debate in the same database; it leaves no signal but its
# writes, so watched debates and dashboards look at the log this often.
FOLLOW_INTERVAL = 1.0


@dataclass(frozen=True)
class ChunkDelta:
    """Coalesced streamed text of one attempt at one turn, starting at character `offset`."""

    key: str
    speaker: str
    attempt: int | None
    offset: int
    text: str


@dataclass(frozen=True)
class Aborted:
    """An attempt was cut off (`attempt` is None when the channel joined after it started)."""

    key: str
    attempt: int | None
    reason: str


@dataclass(slots=True)
class _Growing:
    """A `ChunkDelta` still collecting chunks until the next flush."""

    key: str
    speaker: str
    attempt: int | None
    offset: int
    parts: list[str]

    def delta(self) -> ChunkDelta:
        return ChunkDelta(self.key, self.speaker, self.attempt, self.offset, "".join(self.parts))


# `LiveStatus`: the session changed in a way the log does not show yet (storage unavailable or back):
# a page re-reads the session's read model.
FlushItem = ChunkDelta | LiveTurnStarted | Aborted | LiveEvent | LiveStatus
Batch = list[FlushItem]
Watcher = Callable[[Batch], Any]


class DebateChannel:
    """The live stream of one debate for every page watching it."""

    def __init__(self, hub: LiveHub, session: DebateSession) -> None:
        self.hub = hub
        self.session = session
        self.event: Event[Batch] = Event()
        self._buffer: list[FlushItem | _Growing] = []
        self._open_chunk: dict[str, _Growing] = {}  # key -> its buffered chunk entry still growing
        self._lengths: dict[str, int] = {}  # key -> characters streamed so far in the current attempt
        self._attempts: dict[str, int] = {}
        for key, live in session.live_turns.items():  # joining mid-turn: offsets continue from what exists
            self._lengths[key] = len(live.text)
            self._attempts[key] = live.attempt
        self._wake = asyncio.Event()
        self._closed = False
        self.flushes = 0
        self._unsubscribe = session.subscribe(self._on_message)
        self.task = background_tasks.create(self._run(), name=f"live-flush-{session.id}")
        self.follow_task = background_tasks.create(self._follow(), name=f"live-follow-{session.id}")

    @property
    def watchers(self) -> int:
        return len(self.event.callbacks)

    # --- from the engine (synchronous, must be cheap) -----------------------------------------

    def _on_message(self, message: LiveMessage) -> None:
        if isinstance(message, LiveChunk):
            offset = self._lengths.get(message.key, 0)
            self._lengths[message.key] = offset + len(message.text)
            growing = self._open_chunk.get(message.key)
            if growing is not None:
                growing.parts.append(message.text)
            else:
                growing = _Growing(message.key, message.speaker, self._attempts.get(message.key), offset,
                                   [message.text])
                self._open_chunk[message.key] = growing
                self._buffer.append(growing)
        elif isinstance(message, LiveTurnStarted):
            self._lengths[message.key] = 0
            self._attempts[message.key] = message.attempt
            self._open_chunk.pop(message.key, None)
            self._buffer.append(message)
        elif isinstance(message, LiveTurnAborted):
            self._lengths.pop(message.key, None)
            self._open_chunk.pop(message.key, None)
            self._buffer.append(Aborted(message.key, self._attempts.pop(message.key, None), message.reason))
        elif isinstance(message, LiveEvent):
            payload = message.event.payload
            if isinstance(payload, TurnPayload):  # the finished turn supersedes its stream
                key = payload.turn.key
                self._open_chunk.pop(key, None)
                self._lengths.pop(key, None)
                self._attempts.pop(key, None)
            self._buffer.append(message)
        elif isinstance(message, LiveStatus):
            self._buffer.append(message)
        self._wake.set()

    # --- the flush loop -------------------------------------------------------------------------

    async def _follow(self) -> None:
        """While watched, pick up what another process writes to this debate (cancelled on close)."""
        while not self._closed:
            await asyncio.sleep(FOLLOW_INTERVAL)
            if not self.session.running and self.session.status not in TERMINAL_STATES:
                try:
                    await self.session.catch_up()
                except Exception:  # a failed look at the log must not end the live view
                    log.exception("following debate %s failed", self.session.id)

    async def _run(self) -> None:
        while not self._closed:
            await self._wake.wait()
            await asyncio.sleep(FLUSH_INTERVAL)  # the coalescing window
            self._wake.clear()
            self.flush()

    def flush(self) -> Batch:
        """Emit everything buffered as one batch (also called directly by tests)."""
        raw, self._buffer = self._buffer, []
        self._open_chunk.clear()
        batch: Batch = [item.delta() if isinstance(item, _Growing) else item for item in raw]
        if batch:
            self.flushes += 1
            self.event.emit(batch)
        return batch

    def watch(self, callback: Watcher) -> None:
        """Subscribe the current page; it is unsubscribed when its client is deleted, and the channel
        closes with its last page."""
        self.event.subscribe(callback, unsubscribe_on_delete=False)  # `release` does it, then maybe closes

        def release() -> None:
            self.event.unsubscribe(callback)
            if self.watchers == 0:
                self.close()

        context.client.on_delete(release)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        self.task.cancel()
        self.follow_task.cancel()
        self.hub.channels.pop(self.session.id, None)


class LiveHub:
    """Every live channel of this process, and the throttled dashboard signal."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.channels: dict[str, DebateChannel] = {}
        self.dashboard: Event[set[str]] = Event()
        self._changed: set[str] = set()
        self._dashboard_task: asyncio.Task[None] | None = None
        self._unsubscribe_all = engine.subscribe_all(self._on_any_event)
        self._marker: tuple[int, str] | None = None
        self._follow_task = background_tasks.create(self._follow_dashboards(), name="live-follow-dashboards")

    async def _follow_dashboards(self) -> None:
        """Notice debates other processes create or change, and tell open dashboards. The marker is
        one cheap query, read every time so that a change made before a dashboard opened is not
        mistaken for the baseline."""
        while True:
            try:
                marker = await self.engine.store.last_change()
            except Exception:  # the store is closing, or busy: look again next time
                marker = self._marker
            if self._marker is not None and marker != self._marker and self.dashboard.callbacks:
                self.dashboard.emit(set())
            self._marker = marker
            await asyncio.sleep(FOLLOW_INTERVAL)

    def channel(self, session: DebateSession) -> DebateChannel:
        channel = self.channels.get(session.id)
        if channel is None:
            channel = self.channels[session.id] = DebateChannel(self, session)
        return channel

    def watch(self, session: DebateSession, callback: Watcher) -> DebateChannel:
        """Call in the same synchronous block as rendering the snapshot (no `await` between)."""
        channel = self.channel(session)
        channel.watch(callback)
        return channel

    def _on_any_event(self, message: LiveMessage) -> None:
        if isinstance(message, LiveEvent | LiveStatus):
            self.debates_changed(message.debate_id)

    def debates_changed(self, debate_id: str) -> None:
        """Note a change for the dashboards (also for ones the engine does not broadcast, like creation)."""
        self._changed.add(debate_id)
        if self._dashboard_task is None or self._dashboard_task.done():
            self._dashboard_task = background_tasks.create(self._signal_dashboard(), name="live-dashboard")

    async def _signal_dashboard(self) -> None:
        await asyncio.sleep(DASHBOARD_INTERVAL)
        changed, self._changed = self._changed, set()
        if changed:
            self.dashboard.emit(changed)

    def close(self) -> None:
        self._unsubscribe_all()
        self._follow_task.cancel()
        for channel in list(self.channels.values()):
            channel.close()
        if self._dashboard_task is not None:
            self._dashboard_task.cancel()
