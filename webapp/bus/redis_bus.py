"""The live bus on Redis: a capped stream per debate for late joiners, pub/sub for what is live.

Publishing: every message of a debate this process runs is queued (the engine's listeners are
synchronous) and a single sender task writes whatever has queued up in one pipeline: `XADD … MAXLEN ~`
to the debate's stream (which also expires an hour after its last write), `PUBLISH` to the debate's
channel, and for committed events a `PUBLISH` of the debate's id to the dashboard channel. Each message
carries this bus's instance id and a counter, so a subscriber can tell what it has already applied.

Subscribing: one pub/sub connection per process, subscribed to the dashboard channel and to one channel
per debate that has watchers here, whatever their number. When a debate's channel is (re)subscribed, its
stream is read from the start to rebuild the turns in flight (a late joiner sees the current turn), and
the watchers are handed each such turn afresh (started, then its text so far) plus a `Changed` signal,
and a `Changed` for each named change (comments, votes) in the stream they had not applied yet.

When Redis goes away, publishing drops what it cannot send (finished turns are in the store) and the
subscriber retries with backoff; pages keep following the store meanwhile. When it is back, the
publisher first re-announces the turns it is streaming (their text so far), so live tokens resume in the
middle of a turn, and subscribers read the streams again.

What a message looks like on Redis, and how each side keeps the turns in flight, is `webapp.bus.redis_wire`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from webapp.bus.protocol import BusHandler, DashboardHandler
from webapp.bus.redis_wire import DebateWatch, Outgoing
from webapp.engine.stream import LiveMessage, LiveTurn

log = logging.getLogger(__name__)

PREFIX = "rostrum:"
DASHBOARD_CHANNEL = f"{PREFIX}dashboard"
STREAM_MAXLEN = 2000  # entries (about one per streamed chunk) kept per debate: the current turn and then some
STREAM_TTL = 3600  # seconds a debate's stream outlives its last write
IDLE_POLL = 0.1  # seconds the subscriber waits for a message before looking at what to (un)subscribe
RECONNECT_MIN, RECONNECT_MAX = 0.2, 2.0  # seconds between attempts to reach Redis again
CLOSE_DRAIN_STEPS = 50  # of 10 ms: how long closing waits for queued messages to be sent
SEND_RETRY = 0.5  # seconds the sender waits after a failed write
# What losing Redis looks like from the client (a refused connection is an OSError in places).
REDIS_ERRORS = (RedisError, OSError, asyncio.TimeoutError)


def stream_key(debate_id: str) -> str:
    return f"{PREFIX}live:{debate_id}"


def channel_name(debate_id: str) -> str:
    return f"{PREFIX}debate:{debate_id}"


class RedisBus:
    """A `LiveBus` on one Redis server (`redis://…` URL; never logged, it may hold a password)."""

    carries = True

    def __init__(self, url: str, *, maxlen: int = STREAM_MAXLEN) -> None:
        self._url = url
        self.maxlen = maxlen
        self.instance = uuid.uuid4().hex[:12]
        self._client: aioredis.Redis | None = None
        self._queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._counter = 0
        self._outgoing = Outgoing()  # the turns this process streams, to announce again after an outage
        self._sending = False  # a pipeline is being written
        self._resend = False  # a write failed: re-announce our turns in flight once Redis takes writes again
        self._watches: dict[str, DebateWatch] = {}
        self._dashboard: list[DashboardHandler] = []
        self._connected = False
        self._up = asyncio.Event()  # set while the subscriber is connected (`wait_connected`)
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self.subscribes: dict[str, int] = {}  # debate -> SUBSCRIBE commands sent (one per connection)
        self._subscribed: dict[str, asyncio.Event] = {}  # debate -> set once its subscription is in place

    # --- life cycle ------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    async def wait_connected(self) -> None:
        """Return once the subscriber is connected to Redis (at once if it is)."""
        await self._up.wait()

    async def start(self) -> None:
        self._client = aioredis.from_url(
            self._url, decode_responses=True, socket_connect_timeout=1.0, socket_timeout=5.0,
            # Fail fast and let the loops here decide when to try again: a dead Redis must not hold
            # up a sender or a subscriber in the client's own retries.
            retry=Retry(NoBackoff(), 0), health_check_interval=10,
        )
        self._tasks = [asyncio.create_task(self._send_loop(), name="bus-send"),
                       asyncio.create_task(self._receive_loop(), name="bus-receive")]

    async def close(self) -> None:
        self._closed = True
        # What is queued (the last commit's signal, say) goes out if Redis takes it promptly.
        for _ in range(CLOSE_DRAIN_STEPS):
            if (self._queue.empty() and not self._sending) or self._resend or not self._tasks:
                break
            await asyncio.sleep(0.01)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()

    # --- publishing ------------------------------------------------------------------------------

    def _entry(self, debate_id: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self._counter += 1
        body["i"], body["n"] = self.instance, self._counter
        return debate_id, body

    def publish(self, message: LiveMessage) -> None:
        if self._closed or self._client is None:
            return
        body = self._outgoing.encode(message)
        if body is not None:
            self._queue.put_nowait(self._entry(message.debate_id, body))

    def _snapshot(self) -> list[tuple[str, dict[str, Any]]]:
        """Each turn this process streams, announced afresh with its text so far."""
        return [self._entry(debate_id, body) for debate_id, body in self._outgoing.snapshot()]

    async def _send_loop(self) -> None:
        assert self._client is not None
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            if self._resend:
                # What streamed meanwhile is in the snapshot's text: send the changes, then the snapshot
                # (its counters are higher, so subscribers apply it after them).
                batch = [entry for entry in batch if entry[1]["t"] in ("e", "x")] + self._snapshot()
            try:
                pipe = self._client.pipeline(transaction=False)
                for debate_id, body in batch:
                    data = json.dumps(body, separators=(",", ":"))
                    pipe.xadd(stream_key(debate_id), {"m": data}, maxlen=self.maxlen, approximate=True)
                    pipe.publish(channel_name(debate_id), data)
                    if body["t"] in ("e", "x"):
                        pipe.publish(DASHBOARD_CHANNEL, json.dumps({"d": debate_id, "i": self.instance}))
                for debate_id in {debate_id for debate_id, _ in batch}:
                    pipe.expire(stream_key(debate_id), STREAM_TTL)
                self._sending = True
                await pipe.execute()
            except Exception as exc:  # any failure: a dead sender would silence every page's live text
                if not isinstance(exc, REDIS_ERRORS):
                    log.exception("live bus: sending failed; sending the turns in flight again")
                elif not self._resend:
                    log.warning("live bus: Redis is unavailable (%s); streamed text is not shared until it is "
                                "back (finished turns are in the store)", type(exc).__name__)
                self._resend = True
                await asyncio.sleep(SEND_RETRY)
            else:
                if self._resend:
                    log.warning("live bus: Redis is back; streaming again")
                self._resend = False
            finally:
                self._sending = False

    # --- subscribing -----------------------------------------------------------------------------

    def watch(self, debate_id: str, handler: BusHandler) -> Callable[[], None]:
        watch = self._watches.get(debate_id)
        if watch is None:
            watch = self._watches[debate_id] = DebateWatch()
        watch.handlers.append(handler)

        def stop() -> None:
            if handler in watch.handlers:
                watch.handlers.remove(handler)
            if not watch.handlers and self._watches.get(debate_id) is watch:
                del self._watches[debate_id]  # the receive loop unsubscribes
                self._subscribed.pop(debate_id, None)

        return stop

    async def subscribed(self, debate_id: str) -> None:
        """Return once this process's subscription to the debate is in place (after `watch`)."""
        await self._subscribed.setdefault(debate_id, asyncio.Event()).wait()

    def watch_dashboard(self, handler: DashboardHandler) -> Callable[[], None]:
        self._dashboard.append(handler)

        def stop() -> None:
            if handler in self._dashboard:
                self._dashboard.remove(handler)

        return stop

    def live_turns(self, debate_id: str) -> Mapping[str, LiveTurn]:
        watch = self._watches.get(debate_id)
        return MappingProxyType(watch.live) if watch is not None else MappingProxyType({})

    async def _receive_loop(self) -> None:
        assert self._client is not None
        delay = RECONNECT_MIN
        while True:
            pubsub = self._client.pubsub()
            try:
                await pubsub.subscribe(DASHBOARD_CHANNEL)
                current: dict[str, DebateWatch] = {}  # debate -> the watch its subscription was made for
                while True:
                    for debate_id, watch in list(self._watches.items()):
                        if debate_id not in current:
                            await pubsub.subscribe(channel_name(debate_id))
                            self.subscribes[debate_id] = self.subscribes.get(debate_id, 0) + 1
                            self._subscribed.setdefault(debate_id, asyncio.Event()).set()
                        elif current[debate_id] is watch:
                            continue
                        # new, or dropped and watched again meanwhile: its watchers need what is in flight
                        current[debate_id] = watch
                        await self._replay(debate_id)
                    gone = [debate_id for debate_id in current if debate_id not in self._watches]
                    if gone:
                        await pubsub.unsubscribe(*(channel_name(d) for d in gone))
                        for debate_id in gone:
                            del current[debate_id]
                    if not self._connected:
                        self._connected = True
                        self._up.set()
                        delay = RECONNECT_MIN
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=IDLE_POLL)
                    if message is not None and message.get("type") == "message":
                        self._dispatch(str(message["channel"]), str(message["data"]))
            except Exception as exc:  # any failure: this loop is every page's bus and must outlive it
                if not isinstance(exc, REDIS_ERRORS):  # a client error nobody foresaw: say where, then reconnect
                    log.exception("live bus: the subscriber failed; subscribing again")
                elif self._connected:
                    log.warning("live bus: lost Redis (%s); pages follow finished turns until it is back",
                                type(exc).__name__)
                self._connected = False
                self._up.clear()
                for watch in self._watches.values():
                    watch.live.clear()  # whatever streams meanwhile is unknown: the replay rebuilds it
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX)

    async def _replay(self, debate_id: str) -> None:
        """Rebuild what is in flight from the debate's stream and hand it to the watchers afresh."""
        assert self._client is not None
        entries = await self._client.xrange(stream_key(debate_id))
        watch = self._watches.get(debate_id)
        if watch is None:
            return
        for item in watch.rebuild(debate_id, self.instance, [fields.get("m", "{}") for _, fields in entries]):
            watch.hand(item)

    def _dispatch(self, channel: str, data: str) -> None:
        if channel == DASHBOARD_CHANNEL:
            try:
                note = json.loads(data)
            except ValueError:
                return
            if note.get("i") != self.instance:
                for handler in list(self._dashboard):
                    try:
                        handler(str(note.get("d")))
                    except Exception:
                        log.exception("dashboard handler failed")
            return
        debate_id = channel.removeprefix(f"{PREFIX}debate:")
        watch = self._watches.get(debate_id)
        if watch is not None:
            item = watch.apply(debate_id, self.instance, data, replaying=False)
            if item is not None:
                watch.hand(item)
