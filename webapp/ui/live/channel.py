"""Per-debate broadcast to web pages, with one throttled flush per debate (not per client).

The engine calls its listeners synchronously for every streamed chunk; sending each chunk to each
browser would cost one websocket message per token per tab. A `DebateChannel` instead buffers what
the engine says about one debate (`FlushBuffer`, buffer.py), and a single loop flushes the buffer
every `pace.FLUSH_INTERVAL` seconds. Consecutive chunks of a turn are coalesced into one `ChunkDelta`
that carries its character offset, so a page that rendered a snapshot a moment ago can skip text it
already shows: nothing is missed or shown twice.

A flush does its work once per debate, not once per page: it is turned into compact wire items
(`wire.py`, format in `static/live/index.js`), serialised once, and sent as one
socket.io event to a room holding the sockets of every page that watches the debate; the browser
grows the transcript itself. Pages still receive the batch as a `nicegui.Event`, but only act on
committed events and status changes (a new phase, a verdict, a banner), which are rare. A page whose
socket (re)connects gets the turns in flight again from offset 0 (`resync`), so a gap in the stream
can only last until then.

A channel exists only while some page watches its debate: when the last watching client is
deleted, the channel unsubscribes from the engine and its flush task ends. Debates keep running
without any channel — the engine does not know or care who watches.

Debates run by another process reach a channel through the live bus (`webapp/bus`): the bus hands
the channel that process's streamed text as if this process's engine had said it, and change signals
that make the session read the log (`catch_up`). Without a bus (or while it is down) the channel still
looks at the log every `pace.FOLLOW_INTERVAL`, so finished turns always arrive.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from nicegui import Client, Event, background_tasks, context, core

from webapp.bus import Changed, InProcessBus, LiveBus, RemoteItem
from webapp.engine.engine import Engine
from webapp.engine.public import TERMINAL_STATES, DebateSession, LiveMessage, LiveStatus, LiveTurn
from webapp.ui.live import pace
from webapp.ui.live.buffer import Batch, FlushBuffer, Items
from webapp.ui.live.wire import CutTurn

log = logging.getLogger(__name__)
AUDIENCE = "audience"  # the status change saying a debate's votes or people's verdicts changed
WIRE_EVENT = "rl"  # the socket.io event carrying a flush's wire items
Watcher = Callable[[Batch], Any]


class Hub(Protocol):
    """What a channel uses of the hub that keeps it (`LiveHub`; some tests pass a stand-in). Its bus and
    side listeners are read only where present."""

    engine: Engine
    channels: dict[str, DebateChannel]


class DebateChannel:
    """The live stream of one debate for every page watching it."""

    def __init__(self, hub: Hub, session: DebateSession) -> None:
        self.hub = hub
        self.session = session
        self.event: Event[Batch] = Event()
        self.room = f"rostrum-debate:{session.id}"
        self._listeners: list[Watcher] = []  # not pages: the HTTP API's event streams (`listen`)
        # A hub without a bus (some tests build channels on a stand-in) hears only this process.
        self.bus: LiveBus = getattr(hub, "bus", None) or InProcessBus()
        self.buffer = FlushBuffer(session, self.live_turns)
        self._wake = asyncio.Event()
        self._closed = False
        self.flushes = 0
        self._unsubscribe = session.subscribe(self._on_message)
        self._unwatch_bus = self.bus.watch(session.id, self._on_remote)  # the hub's one subscription per debate
        self._reading: asyncio.Task[None] | None = None
        self._read_again = False
        self.task = background_tasks.create(self._run(), name=f"live-flush-{session.id}")
        self.follow_task = background_tasks.create(self._follow(), name=f"live-follow-{session.id}")

    @property
    def watchers(self) -> int:
        return len(self.event.callbacks) + len(self._listeners)

    def kid(self, key: str) -> int:
        """A small id for a turn key, so each streamed item names its turn in a few bytes."""
        return self.buffer.kid(key)

    @property
    def cut_turns(self) -> Mapping[str, CutTurn]:
        """Attempts cut off while the debate was watched, with their text (`wire.snapshot_turns`)."""
        return self.buffer.cut_turns

    def _on_message(self, message: LiveMessage) -> None:
        """From the engine (synchronous, must be cheap)."""
        self.buffer.add(message)
        self._wake.set()

    # --- from another process, through the bus --------------------------------------------------

    def _on_remote(self, item: RemoteItem) -> None:
        if isinstance(item, Changed) and item.change == AUDIENCE:  # votes are not in the log: pages re-read them
            self._on_message(LiveStatus(self.session.id, AUDIENCE))
        elif isinstance(item, Changed):
            listener = getattr(self.hub, "side_listeners", {}).get(item.change or "")
            if listener is not None:  # beside the log (comments…): its own reader, not the log's
                listener(self)
                return
            self._read_log()
        elif not self.session.running:  # streamed by the process that runs it: as if our engine said it
            self._on_message(item)

    def _read_log(self) -> None:
        """Fold in what another process wrote (one read at a time; a signal meanwhile asks for another)."""
        if self._reading is not None and not self._reading.done():
            self._read_again = True
            return
        self._reading = background_tasks.create(self._read(), name=f"live-read-{self.session.id}")

    async def _read(self) -> None:
        while True:
            self._read_again = False
            try:
                if self.session.running:
                    await self.session.notice_takeover()
                elif self.session.status not in TERMINAL_STATES:
                    await self.session.catch_up()
            except Exception:  # the periodic look at the log will try again
                log.exception("reading debate %s after a bus signal failed", self.session.id)
            if not self._read_again or self._closed:
                return

    @property
    def live_turns(self) -> Mapping[str, LiveTurn]:
        """The turns in flight: ours if this process runs the debate, else what the bus has seen."""
        if self.session.running or self.session.live_turns:
            return self.session.live_turns
        return self.bus.live_turns(self.session.id)

    # --- the flush loop -------------------------------------------------------------------------

    async def _follow(self) -> None:
        """While watched, pick up what another process writes to this debate (cancelled on close)."""
        while not self._closed:
            await asyncio.sleep(pace.FOLLOW_INTERVAL)
            try:
                if self.session.running:  # ours, unless another process has taken it over meanwhile
                    await self.session.notice_takeover()
                elif self.session.status not in TERMINAL_STATES:
                    await self.session.catch_up()
            except Exception:  # a failed look at the log must not end the live view
                log.exception("following debate %s failed", self.session.id)

    async def _run(self) -> None:
        while not self._closed:
            await self._wake.wait()
            await asyncio.sleep(pace.FLUSH_INTERVAL)  # the coalescing window
            self._wake.clear()
            batch, wire = self._take()
            if wire:
                await self._send(wire, self.room)
            if batch:
                await self._deliver(batch)

    async def _deliver(self, batch: Batch) -> None:
        """Hand a batch to every watching page, yielding to the loop every `pace.YIELD_EVERY` seconds: a
        committed verdict re-renders the outcome and verdict cards of every page, and with hundreds of
        pages doing that in one go the loop stopped answering pings for seconds (sockets were closed)."""
        deadline = time.perf_counter() + pace.YIELD_EVERY
        for callback in list(self.event.callbacks):
            if callback not in self.event.callbacks:  # its page went away meanwhile
                continue
            with callback.context:
                try:
                    callback.invoke(batch)
                except Exception as exc:  # one broken page must not stop the others
                    core.app.handle_exception(exc)
            if time.perf_counter() > deadline:
                await asyncio.sleep(0)
                deadline = time.perf_counter() + pace.YIELD_EVERY
        self._tell_listeners(batch)

    def _tell_listeners(self, batch: Batch) -> None:
        for listener in list(self._listeners):
            try:
                listener(batch)
            except Exception:  # one broken stream must not stop the others
                log.exception("a live listener of %s failed", self.session.id)

    def flush(self) -> Batch:
        """Emit everything buffered as one batch, and send its wire items (tests call this directly)."""
        batch, wire = self._take()
        if wire:
            background_tasks.create(self._send(wire, self.room), name=f"live-send-{self.session.id}")
        if batch:
            self.event.emit(batch)
            self._tell_listeners(batch)
        return batch

    def _take(self) -> tuple[Batch, Items]:
        batch, items = self.buffer.take()
        if batch:
            self.flushes += 1
        return batch, items

    async def _send(self, wire: Items, room: str) -> None:
        try:
            await core.sio.emit(WIRE_EVENT, wire, room=room)
        except Exception:  # a failed send loses only the token-by-token view; a resync restores it
            log.exception("sending the live stream of %s failed", self.session.id)

    def resync_items(self, since_turns: int) -> Items:
        """What a (re)connecting page needs (`FlushBuffer.resync_items`), the turns in flight as they stand."""
        return self.buffer.resync_items(self.live_turns, since_turns)

    async def resync(self, client: Client, since_turns: int) -> None:
        """Send one page what it may have missed (to its own room: only that page's sockets)."""
        await self._send(self.resync_items(since_turns), client.id)

    async def _join(self, client: Client, since_turns: Callable[[], int]) -> None:
        sockets = [sid for sid in list(client._socket_to_document_id) if not sid.startswith("test-")]
        for sid in sockets:
            await core.sio.enter_room(sid, self.room)
        if sockets:
            await self.resync(client, since_turns())

    def watch(self, callback: Watcher, since_turns: Callable[[], int] = lambda: 0) -> Callable[[], None]:
        """Subscribe the current page; it is unsubscribed when its client is deleted (or when the
        returned function is called: a page whose access ended), and the channel closes with its last
        page. Each time the page's socket connects, it joins the debate's room and is sent what its
        snapshot (`since_turns()` finished turns) may lack."""
        client = context.client
        self.event.subscribe(callback, unsubscribe_on_delete=False)  # `release` does it, then maybe closes
        released = False

        def join() -> None:
            if not self._closed and not released:
                background_tasks.create(self._join(client, since_turns), name=f"live-join-{self.session.id}")

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            self.event.unsubscribe(callback)
            for sid in list(client._socket_to_document_id):
                if not sid.startswith("test-"):
                    background_tasks.create(core.sio.leave_room(sid, self.room), name="live-leave")
            if self.watchers == 0:
                self.close()

        client.on_connect(join)
        if client.has_socket_connection:
            join()
        client.on_delete(release)
        return release

    def listen(self, callback: Watcher) -> Callable[[], None]:
        """Subscribe something that is not a page (no client, no socket): it gets every batch, in the
        same synchronous block as this call (read the live turns here, then await nothing before it).
        Returns the function that unsubscribes it; the channel closes with its last watcher."""
        self._listeners.append(callback)

        def release() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)
                if self.watchers == 0:
                    self.close()

        return release

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        self._unwatch_bus()
        self.task.cancel()
        self.follow_task.cancel()
        self.hub.channels.pop(self.session.id, None)
