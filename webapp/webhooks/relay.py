"""Queues webhook deliveries for the events this process commits, without slowing any debate.

The relay taps the engine's stream of every message of every debate (`Engine.all_live`, which sees
each event right after it is committed and swapped in). For the few events that are webhook events it
makes the payload there and then (from the debate's state right after the event: a dict, no I/O) and
puts it on an in-memory queue; a task of its own writes the queue to the store (`WebhookStore.enqueue`)
and wakes the sender. The debate itself never waits for the database, the network or a receiver.

Events this process only read from the log (written by another process: `LiveEvent.replayed`) are not
queued here: the process that committed them queued them. And queueing is idempotent per endpoint and
event (`<debate>:<seq>`), so an event seen twice is still delivered once.

An event committed in the instant before the process dies may not be queued (the log has it; its
webhook is lost): deliveries are at most once per event for that instant, and at least once after.

A tournament has no log: when one plays its last debate here, its runner announces `TournamentCompleted`
on the engine's notices (`Engine.notices`) and the relay queues `tournament.completed` the same way (once
per tournament and endpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from webapp.engine.engine import Engine
from webapp.engine.state import DebateState
from webapp.engine.stream import LiveEvent, LiveMessage
from webapp.models import DebateEvent
from webapp.store.webhooks import WebhookStore
from webapp.tournament.progress import TournamentCompleted
from webapp.webhooks.events import TOURNAMENT_COMPLETED, debate_payload, tournament_payload, webhook_event
from webapp.webhooks.sender import RETRY_WINDOW

log = logging.getLogger(__name__)

Payload = dict[str, Any]
PayloadSource = Payload | Callable[[], Awaitable[Payload]]  # the payload, or how to make it when storing
# event, its key (unique per endpoint), its subject, its payload
Tapped = tuple[str, str, str, PayloadSource]


class WebhookRelay:
    """Taps `engine`; queues a delivery per webhook event, for every endpoint that wants it."""

    def __init__(self, engine: Engine, base_url: str, on_queued: Callable[[], None] | None = None,
                 window: float = RETRY_WINDOW, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.webhooks = WebhookStore(engine.store)
        self.base_url = base_url
        self.on_queued = on_queued
        self.window = window
        self.clock = clock
        self._queue: asyncio.Queue[Tapped] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: list[Callable[[], None]] = []

    def start(self) -> None:
        self._task = asyncio.create_task(self._drain(), name="webhook-relay")
        self._unsubscribe = [self.engine.all_live.subscribe(self._tap), self.engine.notices.subscribe(self._notice)]

    def _tap(self, message: LiveMessage) -> None:
        """On the debate's own path: a type check for every message; for a webhook event, its payload made
        from the state as it is now (the next commit changes it) and put on the queue."""
        if not isinstance(message, LiveEvent) or message.replayed:
            return
        event = message.event
        name = webhook_event(event)
        if name is None:
            return
        session = self.engine.sessions.get(message.debate_id)
        if session is not None and session.state.last_seq == event.seq:
            payload: PayloadSource = debate_payload(name, event, session.state, self.base_url)
        else:  # the session is not at hand: its log up to the event says the same, read when storing
            payload = functools.partial(self._from_log, name, event)
        self._queue.put_nowait((name, f"{event.debate_id}:{event.seq}", event.debate_id, payload))

    async def _from_log(self, name: str, event: DebateEvent) -> Payload:
        """A debate event's payload made from its log up to the event (which says what the session did)."""
        events = await self.engine.store.events(event.debate_id)
        state = DebateState.from_events([e for e in events if e.seq <= event.seq])
        return debate_payload(name, event, state, self.base_url)

    def _notice(self, notice: object) -> None:
        """A tournament completed in this process: its `tournament.completed`, queued like a debate's events."""
        if not isinstance(notice, TournamentCompleted):
            return
        payload = tournament_payload(notice.tournament_id, notice.name, "completed", notice.at, self.base_url,
                                     notice.debates, notice.cost_usd, notice.leader)
        self._queue.put_nowait((TOURNAMENT_COMPLETED, f"tournament:{notice.tournament_id}:completed",
                                notice.tournament_id, payload))

    async def _drain(self) -> None:
        while True:
            tapped = await self._queue.get()
            try:
                await self._store(*tapped)
            finally:
                self._queue.task_done()

    async def _store(self, name: str, key: str, subject: str, payload: PayloadSource) -> None:
        delay = 0.5
        for _ in range(5):  # a busy store: try a few times (the debate has long moved on)
            try:
                if callable(payload):
                    payload = await payload()
                queued = await self.webhooks.enqueue(name, key, payload, subject=subject, now=self.clock(),
                                                     window=self.window)
            except Exception:
                log.exception("webhooks: queueing %s (%s) failed", name, key)
                await asyncio.sleep(delay)
                delay *= 2
                continue
            if queued and self.on_queued is not None:
                self.on_queued()
            return
        log.error("webhooks: %s (%s) was not queued: the store kept failing", name, key)

    async def flush(self) -> None:
        """Until everything tapped so far is in the store."""
        await self._queue.join()

    async def close(self, timeout: float = 5.0) -> None:
        """Stop tapping; write what was tapped (for up to `timeout` seconds), then stop."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.flush(), timeout)
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
