"""`GET /api/v1/debates/{id}/events`: a debate as Server-Sent Events, resumable to the character.

Every message's `id:` is its place in the log: the sequence number of the last committed event the
client has, followed — while turns are being streamed — by how far each of those turns has come:

    12                                    after event 12, nothing in flight
    12.340@1:opening/r1/pro/0             …and 340 characters of attempt 1 of that turn
    12.340@1:opening/r1/pro/0,85@2:opening/r1/con/0     (speakers in parallel)

A client that reconnects with `Last-Event-ID` gets exactly what it lacks: the committed events after
that sequence number, then the rest of each turn in flight from the character it had (from the start,
if that attempt was cut off meanwhile), then the live stream. Nothing is sent twice.

Messages (`event:` then `data:` as JSON):
- `event`: a committed event of the log (`DebateEvent`, as stored). A `turn` event's text supersedes
  what was streamed of it.
- `turn_started`: an attempt at a turn began; forget any text streamed for that key before.
- `delta`: streamed text of the turn `key`, starting at character `offset` of its attempt.
- `turn_aborted`: that attempt was cut off; its text is discarded (the turn will be redone).
- `status`: something changed that the log does not show yet (storage unavailable, deleted).
- `end`: the debate has finished (completed or stopped); the stream closes.

A finished debate streams its log and ends. Live messages come from the process's `DebateChannel`
(`webapp/ui/live/`): the same one subscription per debate per process that pages use, fed by this
process's engine or, in scale-out, by the live bus and the log. Each batch of a debate is turned into
messages once (`Feed`) and handed to every stream of that debate, which only trims what its client
already has.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from webapp.engine.api import TurnPayload
from webapp.engine.machine import TERMINAL_STATES
from webapp.engine.runner import DebateSession
from webapp.engine.stream import LiveEvent, LiveStatus, LiveTurn, LiveTurnStarted
from webapp.models import DebateEvent
from webapp.ui.live import Aborted, Batch, ChunkDelta, DebateChannel, LiveHub

KEEPALIVE = 15.0  # seconds between comments on a quiet stream (proxies close silent connections)
# Seconds a feed gathers the channel's flushes (every 0.15 s) before handing them to its streams: every
# write to an HTTP response passes NiceGUI's middlewares, so fewer, larger writes cost the debate less.
FEED_INTERVAL = 0.3
QUEUE_LIMIT = 10_000  # batches a stream may lag behind before it is dropped (its client reconnects)


@dataclass
class Position:
    """Where a client is: the last committed event it has, and how far each turn in flight has come."""

    seq: int = 0
    turns: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (attempt, characters)

    def __str__(self) -> str:
        if not self.turns:
            return str(self.seq)
        parts = (f"{chars}@{attempt}:{quote(key, safe='/:')}" for key, (attempt, chars) in self.turns.items())
        return f"{self.seq}." + ",".join(parts)

    @classmethod
    def parse(cls, text: str | None) -> Position:
        """A `Last-Event-ID` back into a position; anything unreadable means "from the start"."""
        if not text:
            return cls()
        head, _, rest = text.strip().partition(".")
        try:
            position = cls(seq=max(0, int(head)))
            for part in filter(None, rest.split(",")):
                chars, _, tail = part.partition("@")
                attempt, _, key = tail.partition(":")
                if key:
                    position.turns[unquote(key)] = (int(attempt), max(0, int(chars)))
        except ValueError:
            return cls()
        return position


def sse(kind: str, position: Position, data: str) -> str:
    return f"id: {position}\nevent: {kind}\ndata: {data}\n\n"


def event_data(event: DebateEvent) -> str:
    return event.model_dump_json()


def turn_key(event: DebateEvent) -> str | None:
    payload = event.payload
    return payload.turn.key if isinstance(payload, TurnPayload) else None


@dataclass(frozen=True)
class Message:
    """One live item of a batch, turned into JSON once for every stream of the debate."""

    kind: str
    item: Any
    data: str


def messages(batch: Batch) -> list[Message]:
    out: list[Message] = []
    for item in batch:
        if isinstance(item, ChunkDelta):
            out.append(Message("delta", item, json.dumps({"key": item.key, "speaker": item.speaker,
                                                          "attempt": item.attempt, "offset": item.offset,
                                                          "text": item.text})))
        elif isinstance(item, LiveTurnStarted):
            out.append(Message("turn_started", item, json.dumps({
                "key": item.key, "speaker": item.speaker, "phase": item.phase, "round": item.round,
                "act": item.act, "attempt": item.attempt, "queued": item.queued})))
        elif isinstance(item, Aborted):
            out.append(Message("turn_aborted", item, json.dumps({"key": item.key, "attempt": item.attempt,
                                                                 "reason": item.reason})))
        elif isinstance(item, LiveEvent):
            out.append(Message("event", item.event, event_data(item.event)))
        elif isinstance(item, LiveStatus):
            out.append(Message("status", item, json.dumps({"change": item.change, "detail": item.detail})))
    return out


@dataclass
class LiveBatch:
    """One flush of the debate's channel as messages, shared by every stream of the debate. Streams
    whose clients stand at the same place (the usual case) get the same text: it is rendered once
    (`memo`, keyed by the place and which of the batch's turns the client already has whole)."""

    messages: list[Message]
    keys: frozenset[str]  # the turns the messages name
    memo: dict[tuple[str, frozenset[str]], tuple[str, Position, frozenset[str]]] = field(default_factory=dict)

    @classmethod
    def of(cls, converted: list[Message]) -> LiveBatch:
        keys = {turn_key(m.item) if m.kind == "event" else getattr(m.item, "key", None) for m in converted}
        return cls(converted, frozenset(k for k in keys if k))


class Feed:
    """The API streams of one debate in this process: one listener on the debate's channel."""

    def __init__(self, feeds: dict[str, Feed], channel: DebateChannel) -> None:
        self.feeds = feeds
        self.channel = channel
        self.queues: list[asyncio.Queue[LiveBatch | None]] = []
        self._pending: list[Message] = []
        self._timer: asyncio.TimerHandle | None = None
        self._release = channel.listen(self._on_batch)

    def _on_batch(self, batch: Batch) -> None:
        converted = messages(batch)
        if not converted:
            return
        self._pending.extend(converted)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FEED_INTERVAL, self._hand_out)

    def _hand_out(self) -> None:
        self._timer = None
        converted, self._pending = self._pending, []
        if not converted:
            return
        shared = LiveBatch.of(converted)
        for queue in list(self.queues):
            if queue.qsize() >= QUEUE_LIMIT:
                self._drop(queue)
                queue.put_nowait(None)  # the stream ends; its client reconnects where it was
            else:
                queue.put_nowait(shared)

    def join(self) -> asyncio.Queue[LiveBatch | None]:
        queue: asyncio.Queue[LiveBatch | None] = asyncio.Queue()
        self.queues.append(queue)
        return queue

    def _drop(self, queue: asyncio.Queue[LiveBatch | None]) -> None:
        if queue in self.queues:
            self.queues.remove(queue)

    def leave(self, queue: asyncio.Queue[LiveBatch | None]) -> None:
        self._drop(queue)
        if not self.queues:
            self.feeds.pop(self.channel.session.id, None)
            if self._timer is not None:
                self._timer.cancel()
            self._release()


_feeds: dict[int, dict[str, Feed]] = {}  # per hub (tests run several apps in one process)


def feed_for(hub: LiveHub, session: DebateSession) -> Feed:
    feeds = _feeds.setdefault(id(hub), {})
    feed = feeds.get(session.id)
    if feed is None or feed.channel is not hub.channels.get(session.id):
        feed = feeds[session.id] = Feed(feeds, hub.channel(session))
    return feed


class Stream:
    """One client's stream: trims what it already has, keeps its position, renders SSE text."""

    def __init__(self, session: DebateSession, position: Position) -> None:
        self.session = session
        self.position = position
        # The turns in flight as the debate's channel knows them (none until the stream subscribes).
        self.live_turns: Callable[[], Mapping[str, LiveTurn]] = dict
        self.done: set[str] = set()  # turns this client has the committed event of

    def committed(self, event: DebateEvent, data: str | None = None) -> str | None:
        if event.seq <= self.position.seq:
            return None
        self.position.seq = event.seq
        key = turn_key(event)
        if key is not None:
            self.position.turns.pop(key, None)
            self.done.add(key)
        return sse("event", self.position, data if data is not None else event_data(event))

    def started(self, key: str, attempt: int, data: str) -> str | None:
        if key in self.done or self.position.turns.get(key, (None, 0))[0] == attempt:
            return None  # already announced (a queued attempt is announced again when it goes out)
        self.position.turns[key] = (attempt, 0)
        return sse("turn_started", self.position, data)

    def text(self, key: str, speaker: str, attempt: int | None, offset: int, text: str,
             data: str | None = None) -> str | None:
        if key in self.done:
            return None  # the client has the `turn` event, which has it all (streamed text came late)
        known = self.position.turns.get(key)
        if known is None:  # joined after its start: announce it from what is live now
            live = self.session_live(key)
            attempt = attempt if attempt is not None else (live[0] if live else 1)
            self.position.turns[key] = known = (attempt, 0)
        have = known[1]
        end = offset + len(text)
        if end <= have:
            return None
        if offset > have:  # a gap (joined mid-batch): fill it from the turn's live text, if it has it
            live = self.session_live(key)
            if live is None or len(live[1]) < end:
                return None  # cannot be mended: the committed turn will bring the whole text
            text, offset = live[1][:end], 0
        piece = text[have - offset:] if have >= offset else text
        start = max(have, offset)
        self.position.turns[key] = (known[0], start + len(piece))
        if data is None or start != offset or len(piece) != len(text):
            data = json.dumps({"key": key, "speaker": speaker, "attempt": known[0], "offset": start,
                               "text": piece})
        return sse("delta", self.position, data)

    def session_live(self, key: str) -> tuple[int, str] | None:
        live = self.live_turns().get(key)
        return (live.attempt, live.text) if live is not None else None

    def aborted(self, key: str, data: str) -> str | None:
        if self.position.turns.pop(key, None) is None:
            return None
        return sse("turn_aborted", self.position, data)

    def message(self, message: Message) -> str | None:
        item = message.item
        if message.kind == "event":
            return self.committed(item, message.data)
        if message.kind == "turn_started":
            return self.started(item.key, item.attempt, message.data)
        if message.kind == "delta":
            return self.text(item.key, item.speaker, item.attempt, item.offset, item.text, message.data)
        if message.kind == "turn_aborted":
            return self.aborted(item.key, message.data)
        return sse(message.kind, self.position, message.data)

    def batch(self, live: LiveBatch) -> str:
        """The text of a whole batch for this client (one write to its connection, not one a message)."""
        state = (str(self.position), frozenset(self.done & live.keys))
        cached = live.memo.get(state)
        if cached is not None:
            text, after, newly_done = cached
            self.position = Position(after.seq, dict(after.turns))
            self.done |= newly_done
            return text
        done_before = set(self.done)
        text = "".join(filter(None, map(self.message, live.messages)))
        live.memo[state] = (text, Position(self.position.seq, dict(self.position.turns)),
                            frozenset(self.done - done_before))
        return text

    def finished(self) -> bool:
        """The debate has ended and this client has every event of it (the state moves on as soon as an
        event is committed; the channel hands the event over a moment later)."""
        return (self.session.status in TERMINAL_STATES and self.position.seq >= self.session.state.last_seq
                and not self.live_turns())

    def end(self) -> str:
        return sse("end", self.position, json.dumps({"status": self.session.status.value}))


async def stream(session: DebateSession, hub: LiveHub, last_event_id: str | None,
                 disconnected: Callable[[], Any]) -> AsyncIterator[str]:
    """The SSE text of one client, from `last_event_id` on, until the debate finishes or the client goes."""
    client = Stream(session, Position.parse(last_event_id))
    if session.status in TERMINAL_STATES and not session.running:  # finished: its log, and the end
        events = await session.store.events_after(session.id, client.position.seq)
        out = ["retry: 2000\n\n", *filter(None, map(client.committed, events))]
        client.position.turns.clear()
        session.subscribe(lambda _message: None)()  # done with it: a finished debate may leave memory
        yield "".join([*out, client.end()])
        return
    feed = feed_for(hub, session)
    # In one synchronous block: subscribe, and note the turns in flight (what the log read below cannot
    # hold); everything later arrives through the queue, and the position drops what is doubled.
    queue = feed.join()
    channel = feed.channel
    client.live_turns = lambda: channel.live_turns
    live_now = {key: (live.attempt, live.text, live.speaker) for key, live in channel.live_turns.items()}
    try:
        missed = await session.store.events_after(session.id, client.position.seq)
        out = ["retry: 2000\n\n", *filter(None, map(client.committed, missed))]
        for key in [k for k in client.position.turns if k not in live_now]:  # cut off while away
            out.append(client.aborted(key, json.dumps({"key": key, "attempt": client.position.turns[key][0],
                                                       "reason": "cut off while you were away"})) or "")
        for key, (attempt, text_now, speaker) in live_now.items():
            if key in client.done:
                continue
            known = client.position.turns.get(key)
            if known is not None and known[0] != attempt:
                client.position.turns.pop(key)
                known = None
            if known is None:
                out.append(client.started(key, attempt, json.dumps({"key": key, "speaker": speaker,
                                                                    "attempt": attempt})) or "")
            out.append(client.text(key, speaker, attempt, 0, text_now) or "")
        if client.finished():
            yield "".join([*out, client.end()])
            return
        yield "".join(out)
        while True:
            try:
                batch = await asyncio.wait_for(queue.get(), KEEPALIVE)
            except TimeoutError:
                if await disconnected():
                    return
                yield ": keep-alive\n\n"
                continue
            if batch is None:
                return
            text = client.batch(batch)
            if text:
                yield text
            if client.finished():
                yield client.end()
                return
    finally:
        feed.leave(queue)

