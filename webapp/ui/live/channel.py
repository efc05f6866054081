"""Per-debate broadcast to web pages, with one throttled flush per debate (not per client).

The engine calls its listeners synchronously for every streamed chunk; sending each chunk to each
browser would cost one websocket message per token per tab. A `DebateChannel` instead buffers what
the engine says about one debate, and a single loop flushes the buffer every `FLUSH_INTERVAL`
seconds. Consecutive chunks of a turn are coalesced into one `ChunkDelta` that carries its character
offset, so a page that rendered a snapshot a moment ago can skip text it already shows: nothing is
missed or shown twice.

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
looks at the log every `FOLLOW_INTERVAL`, so finished turns always arrive.

`LiveHub` also throttles the engine's all-debates stream into a `dashboard` event, so dashboards
refresh at most a few times a second however busy the debates are.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nicegui import Client, Event, background_tasks, context, core

from webapp.bus import Changed, InProcessBus, LiveBus, RemoteItem
from webapp.engine.api import RetryNote, TurnPayload
from webapp.engine.engine import Engine
from webapp.engine.public import (
    TERMINAL_STATES,
    DebateSession,
    LiveChunk,
    LiveEvent,
    LiveMessage,
    LiveStatus,
    LiveTurn,
    LiveTurnAborted,
    LiveTurnStarted,
)
from webapp.models import Turn
from webapp.ui.live import wire as live_wire

log = logging.getLogger(__name__)
AUDIENCE = "audience"  # the status change saying a debate's votes or people's verdicts changed

FLUSH_INTERVAL = 0.15  # seconds: reads as live (about 7 updates a second) and batches ~6 tokens at 40 tok/s
WIRE_EVENT = "rl"  # the socket.io event carrying a flush's wire items
YIELD_EVERY = 0.02  # seconds of page updates before the flush loop lets other work (pings) run
DASHBOARD_INTERVAL = 0.5  # seconds between dashboard refresh signals
# Another process (the CLI) may drive a debate in the same database; it leaves no signal but its
# writes, so watched debates and dashboards look at the log this often.
FOLLOW_INTERVAL = 1.0
MAX_CUT_TURNS = 100  # cut attempts remembered per watched debate, for pages opened later


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


@dataclass(frozen=True)
class _Committed:
    """A turn was committed; `streamed` is the text its last attempt streamed here (None: none did)."""

    turn: Turn
    streamed: str | None


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
        self.room = f"rostrum-debate:{session.id}"
        self._buffer: list[FlushItem | _Growing | _Committed] = []
        self._open_chunk: dict[str, _Growing] = {}  # key -> its buffered chunk entry still growing
        self._lengths: dict[str, int] = {}  # key -> characters streamed so far in the current attempt
        self._attempts: dict[str, int] = {}
        self._streamed: dict[str, list[str]] = {}  # key -> text of the current attempt, to compare at commit
        # key -> who started speaking where (a cut attempt's turn is named by it)
        self._starts: dict[str, LiveTurnStarted | LiveTurn] = {}
        # Attempts cut off (a pause, a stop, an error) with the text they had streamed, which is never
        # stored: a page opened later shows them as the pages watching then did (`live_wire.snapshot_turns`).
        self.cut_turns: dict[str, live_wire.CutTurn] = {}
        self._hidden: set[str] = set()  # keys of private turns (preparation): never sent to browsers
        self._kids: dict[str, int] = {}
        self._announced: set[str] = set()  # keys whose start (speaker, group, act) browsers were sent
        # The start of each turn this channel streamed and has not seen committed or cut. Neither the
        # session's live turns nor the bus's still hold a turn whose stream has ended while its commit is
        # on its way (being written, or not yet read from the log by this process), so a page joining
        # then learns of it only from here; without it, the commit (sent without the text this channel
        # streamed) left that page a finished turn with no text.
        self._started: dict[str, LiveTurnStarted | LiveTurn] = {}
        self._last_status: dict[str, Any] | None = None
        self._listeners: list[Watcher] = []  # not pages: the HTTP API's event streams (`listen`)
        # A hub without a bus (some tests build channels on a stand-in) hears only this process.
        self.bus: LiveBus = getattr(hub, "bus", None) or InProcessBus()
        # Joining mid-turn (streamed here, or elsewhere as far as the bus has seen): offsets continue
        # from what exists.
        for key, live in self.live_turns.items():
            self._lengths[key] = len(live.text)
            self._attempts[key] = live.attempt
            self._streamed[key] = [live.text]
            self._starts[key] = live
            self._announced.add(key)  # every page built from now on has it in its snapshot
            self._started[key] = live
            if not live_wire.phase_visible(session.state, live.phase):
                self._hidden.add(key)
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
        kid = self._kids.get(key)
        if kid is None:
            kid = self._kids[key] = len(self._kids) + 1
        return kid

    # --- from the engine (synchronous, must be cheap) -----------------------------------------

    def _on_message(self, message: LiveMessage) -> None:
        if isinstance(message, LiveChunk):
            offset = self._lengths.get(message.key, 0)
            self._lengths[message.key] = offset + len(message.text)
            self._streamed.setdefault(message.key, []).append(message.text)
            growing = self._open_chunk.get(message.key)
            if growing is not None:
                growing.parts.append(message.text)
            else:
                growing = _Growing(message.key, message.speaker, self._attempts.get(message.key), offset,
                                   [message.text])
                self._open_chunk[message.key] = growing
                self._buffer.append(growing)
        elif isinstance(message, LiveTurnStarted):
            self._started[message.key] = message
            self._lengths[message.key] = 0
            self._attempts[message.key] = message.attempt
            self._streamed[message.key] = []
            self._starts[message.key] = message
            self._open_chunk.pop(message.key, None)
            self._buffer.append(message)
        elif isinstance(message, LiveTurnAborted):
            self._started.pop(message.key, None)
            self._lengths.pop(message.key, None)
            text = "".join(self._streamed.pop(message.key, []))
            self._open_chunk.pop(message.key, None)
            attempt = self._attempts.pop(message.key, None)
            self._remember_cut(message.key, text, message.reason, attempt)
            self._buffer.append(Aborted(message.key, attempt, message.reason))
        elif isinstance(message, LiveEvent):
            payload = message.event.payload
            if isinstance(payload, TurnPayload):  # the finished turn supersedes its stream
                key = payload.turn.key
                self._started.pop(key, None)
                self._open_chunk.pop(key, None)
                self._lengths.pop(key, None)
                self._attempts.pop(key, None)
                parts = self._streamed.pop(key, None)
                self._buffer.append(_Committed(payload.turn, None if parts is None else "".join(parts)))
            self._buffer.append(message)
        elif isinstance(message, LiveStatus):
            self._buffer.append(message)
        self._wake.set()

    def _remember_cut(self, key: str, text: str, reason: str, attempt: int | None) -> None:
        """Keep a cut attempt's text for pages opened later (a few per debate: pauses, stops, errors)."""
        started = self._starts.get(key)
        if not text or started is None or (len(self.cut_turns) >= MAX_CUT_TURNS and key not in self.cut_turns):
            return
        cut = self.cut_turns.setdefault(key, live_wire.CutTurn(started))
        cut.cuts.append({"text": text, "reason": reason, "attempt": attempt})

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
            await asyncio.sleep(FOLLOW_INTERVAL)
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
            await asyncio.sleep(FLUSH_INTERVAL)  # the coalescing window
            self._wake.clear()
            batch, wire = self._take()
            if wire:
                await self._send(wire, self.room)
            if batch:
                await self._deliver(batch)

    async def _deliver(self, batch: Batch) -> None:
        """Hand a batch to every watching page, yielding to the loop every `YIELD_EVERY` seconds: a
        committed verdict re-renders the outcome and verdict cards of every page, and with hundreds of
        pages doing that in one go the loop stopped answering pings for seconds (sockets were closed)."""
        deadline = time.perf_counter() + YIELD_EVERY
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
                deadline = time.perf_counter() + YIELD_EVERY
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

    def _take(self) -> tuple[Batch, list[list[Any]]]:
        raw, self._buffer = self._buffer, []
        self._open_chunk.clear()
        batch: Batch = []
        wire: list[list[Any]] = []
        state = self.session.state
        for item in raw:
            if isinstance(item, _Growing):
                delta = item.delta()
                batch.append(delta)
                if delta.key not in self._hidden:
                    wire.append([live_wire.TEXT, self.kid(delta.key), delta.offset, delta.text])
            elif isinstance(item, _Committed):
                if item.turn.visible:
                    info = live_wire.committed_info(state, item.turn, item.streamed)
                    if item.turn.key in self._announced:  # browsers know who spoke where: just the end
                        info = {k: v for k, v in info.items() if k in ("key", "meta", "notes", "text", "n")}
                    wire.append([live_wire.COMMITTED, self.kid(item.turn.key), info])
                self._hidden.discard(item.turn.key)
                self._announced.discard(item.turn.key)
            else:
                batch.append(item)
                wire.extend(self._wire(item))
        if batch:
            self.flushes += 1
            status = live_wire.status(self.session)
            last = self._last_status or {}
            changed = {key: value for key, value in status.items() if last.get(key, ...) != value}
            if changed:  # only what changed: the browser merges it into what it has
                self._last_status = status
                wire.append([live_wire.STATUS, changed])
        return batch, wire

    def _wire(self, item: FlushItem) -> list[list[Any]]:
        state = self.session.state
        if isinstance(item, LiveTurnStarted):
            info = live_wire.started_info(state, item)
            if info is None:
                self._hidden.add(item.key)
                return []
            self._announced.add(item.key)
            return [[live_wire.STARTED, self.kid(item.key), item.attempt, info]]
        if isinstance(item, Aborted):
            if item.key in self._hidden:
                return []
            return [[live_wire.CUT, self.kid(item.key), item.reason]]
        if isinstance(item, LiveEvent) and isinstance(item.event.payload, RetryNote):
            note = item.event.payload
            if note.turn in self._kids and note.turn not in self._hidden:
                return [[live_wire.NOTE, self._kids[note.turn], live_wire.retry_text(note)]]
        return []

    async def _send(self, wire: list[list[Any]], room: str) -> None:
        try:
            await core.sio.emit(WIRE_EVENT, wire, room=room)
        except Exception:  # a failed send loses only the token-by-token view; a resync restores it
            log.exception("sending the live stream of %s failed", self.session.id)

    def resync_items(self, since_turns: int) -> list[list[Any]]:
        """What a (re)connecting page needs: turns committed after its snapshot (`since_turns` finished
        turns), every visible turn in flight from offset 0, and the status."""
        state = self.session.state
        wire: list[list[Any]] = []
        for n, turn in enumerate(state.turns[since_turns:], start=since_turns):
            if turn.visible:
                wire.append([live_wire.COMMITTED, self.kid(turn.key), live_wire.committed_info(state, turn, None, n)])
        live_turns = self.live_turns
        for key, live in live_turns.items():
            info = live_wire.started_info(state, live)
            if info is None or key in state.turn_keys:
                continue
            wire.append([live_wire.STARTED, self.kid(key), live.attempt, info])
            wire.append([live_wire.TEXT, self.kid(key), 0, live.text])
        for key, start in self._started.items():  # streamed, its commit on its way: the text streamed here
            info = live_wire.started_info(state, start)
            if info is None or key in state.turn_keys or key in live_turns:
                continue
            wire.append([live_wire.STARTED, self.kid(key), start.attempt, info])
            wire.append([live_wire.TEXT, self.kid(key), 0, "".join(self._streamed.get(key, []))])
        wire.append([live_wire.STATUS, live_wire.status(self.session)])
        return wire

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


class LiveHub:
    """Every live channel of this process, and the throttled dashboard signal."""

    def __init__(self, engine: Engine, bus: LiveBus | None = None) -> None:
        self.engine = engine
        self.bus: LiveBus = bus if bus is not None else InProcessBus()
        self.channels: dict[str, DebateChannel] = {}
        self.dashboard: Event[set[str]] = Event()
        self._changed: set[str] = set()
        self._dashboard_task: asyncio.Task[None] | None = None
        self._unsubscribe_all = engine.subscribe_all(self._on_any_event)
        self._marker: tuple[int, str] | None = None
        self._follow_task = background_tasks.create(self._follow_dashboards(), name="live-follow-dashboards")
        self._unwatch_dashboard = self.bus.watch_dashboard(self.debates_changed)  # changes made elsewhere
        # change signal -> what a channel does when another process says so (`side_change`)
        self.side_listeners: dict[str, Callable[[DebateChannel], None]] = {}

    async def _follow_dashboards(self) -> None:
        """Notice debates other processes create or change, and tell open dashboards. The marker is
        one cheap query, read every time so that a change made before a dashboard opened is not
        mistaken for the baseline."""
        while True:
            marker: tuple[int, str] | None
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

    def watch(self, session: DebateSession, callback: Watcher,
              since_turns: Callable[[], int] = lambda: 0) -> DebateChannel:
        """Call in the same synchronous block as rendering the snapshot (no `await` between)."""
        channel = self.channel(session)
        channel.watch(callback, since_turns)
        return channel

    def side_change(self, debate_id: str, change: str) -> None:
        """Something kept beside a debate's log changed (comments and reactions: `change` names it): tell
        the other processes over the bus, and this process's channel of the debate, if any page watches it."""
        self.bus.publish(LiveStatus(debate_id, change))
        channel = self.channels.get(debate_id)
        listener = self.side_listeners.get(change)
        if channel is not None and listener is not None:
            listener(channel)

    def audience_changed(self, session: DebateSession) -> None:
        """Someone voted or judged on this debate (stored already): every page of it re-reads the counts,
        here through the session's listeners, in other processes through the bus."""
        session.broadcaster.emit(LiveStatus(session.id, AUDIENCE))
        if self.bus.carries:
            self.bus.publish(LiveStatus(session.id, AUDIENCE))

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
        self._unwatch_dashboard()
        self._follow_task.cancel()
        for channel in list(self.channels.values()):
            channel.close()
        if self._dashboard_task is not None:
            self._dashboard_task.cancel()
