"""The engine's front door: create debates, run them, send commands, subscribe to their streams.

The web app and the CLI use only this class. It holds one `DebateSession` per debate loaded in
this process; it knows nothing about who is watching beyond each session's subscriber count: a
finished debate nobody watches is evicted (kept only weakly, so a page still holding it keeps the
same object) and loaded again from its log when asked for.
"""

from __future__ import annotations

import asyncio
import random
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from webapp.engine.api import Command, CommandResult
from webapp.engine.calls import ProviderSource, TaskFactory
from webapp.engine.limits import EndpointLimiter
from webapp.engine.machine import ACTIVE_STATES, TERMINAL_STATES, State, TransitionNotAllowed
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import ConfigError, prepare_config, provider_problem
from webapp.engine.state import DebateState
from webapp.engine.stream import Broadcaster, Listener, LiveEvent, LiveStatus
from webapp.models import DebateConfig, DebateEvent, utcnow
from webapp.providers.registry import EndpointBook, ProviderCache
from webapp.settings import Settings, get_settings
from webapp.store import DebateRow, StaleWrite
from webapp.store.protocol import EventStore, open_store

__all__ = ["Command", "CommandResult", "ConfigError", "DebateNotFound", "Engine", "TransitionNotAllowed"]

RESTART_REASON = "the process running it stopped (a restart or a crash)"
NEVER_STARTED_REASON = "it was created but the process stopped before it started"


class RemoteRunner(Protocol):
    """Debate workers in other processes (`webapp.workers.WorkerClient`): with one set as
    `Engine.workers`, this engine runs nothing itself; it starts debates and carries commands out there."""

    async def run(self, debate_id: str, actor: str) -> CommandResult: ...

    async def send(self, debate_id: str, command: Command | str, *, actor: str, **args: Any) -> CommandResult: ...


class DebateNotFound(KeyError):
    """No debate with that id."""

    def __str__(self) -> str:
        return f"no debate with id {self.args[0]!r}"


def _default_providers(settings: Settings, endpoints: EndpointBook) -> ProviderSource:
    return ProviderCache(settings=settings, endpoints=endpoints)


class Engine:
    """All debates of one process."""

    def __init__(
        self,
        store: EventStore,
        settings: Settings | None = None,
        providers: ProviderSource | None = None,
        task_factory: TaskFactory | None = None,
        backoff_base: float = 0.5,
        storage_retry_base: float = 0.5,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.settings = settings or get_settings()
        # Where calls may go and with which key: the configuration's endpoints and those registered in
        # Settings (read again from the store before a debate is created or started).
        self.endpoints = EndpointBook(self.settings, store)
        # `is None`, not `or`: a provider cache given empty (it has a length) is still the one to use.
        self.providers = providers if providers is not None else _default_providers(self.settings, self.endpoints)
        self.task_factory = task_factory
        self.backoff_base = backoff_base
        self.storage_retry_base = storage_retry_base  # first wait before recording an interruption again
        self.limiter = EndpointLimiter()  # calls at once per endpoint, across all debates of this process
        self.rng = rng or random.Random()  # jitter of automatic retry waits (seeded in tests)
        self.sessions: dict[str, DebateSession] = {}  # loaded and not evicted
        self._evicted: weakref.WeakValueDictionary[str, DebateSession] = weakref.WeakValueDictionary()
        self.all_events = Broadcaster()  # every debate's committed events (for dashboards)
        # Every message of every debate of this process, streamed text included, for whoever relays
        # them to other processes (the live bus); listening here does not count as watching a debate.
        self.all_live = Broadcaster()
        self._load_lock = asyncio.Lock()
        # Set by a web process with ROSTRUM_WORKERS=external: debates run on workers, not here.
        self.workers: RemoteRunner | None = None

    @classmethod
    async def open(cls, db: str | Path | None = None, **kwargs: Any) -> Engine:
        settings = kwargs.pop("settings", None) or get_settings()
        store = await open_store(db or settings.db)  # a SQLite file, or a postgresql:// URL
        engine = cls(store, settings=settings, **kwargs)
        await engine.endpoints.refresh()
        return engine

    async def close(self) -> None:
        """Stop every runner without recording anything (like a crash), close providers and the store."""
        for session in list(self.sessions.values()):
            await session.shutdown()
        aclose = getattr(self.providers, "aclose", None)
        if aclose is not None:
            await aclose()
        await self.store.close()

    # --- debates ---------------------------------------------------------------------------

    def validate(self, config: DebateConfig) -> DebateConfig:
        """Check a config completely (format, cast, rounds, provider keys); raises `ConfigError`."""
        config = prepare_config(config)
        problem = provider_problem(config, self.endpoints.policy())
        if problem is not None:
            raise ConfigError(*problem)
        return config

    async def create(self, config: DebateConfig, actor: str | None = None) -> str:
        """Validate and store a new debate (not started); returns its id. `actor`: who created it."""
        await self.endpoints.refresh()  # an endpoint registered or removed by another process counts
        config = self.validate(config)
        debate_id = uuid.uuid4().hex[:12]
        state = DebateState(debate_id, config, created_at=utcnow())
        summary = {
            "status": State.IDLE.value,
            "total_rounds": state.total_rounds,
            "participants": [
                {"id": p.id, "name": p.name, "color": p.color, "model": p.model, "provider": p.provider,
                 "position": p.position}
                for p in config.participants
            ],
        }
        await self.store.create_debate(debate_id, config.topic, config.format, config.model_dump(mode="json"),
                                       summary, actor=actor)
        return debate_id

    async def start(self, config: DebateConfig, actor: str | None = None) -> DebateSession:
        """Create a debate and start running it."""
        debate_id = await self.create(config, actor=actor)
        if self.workers is not None:
            await self.workers.run(debate_id, actor=actor or "system")
            session = await self.session(debate_id)
            await session.catch_up()
            return session
        session = await self.session(debate_id)
        session.ensure_running()
        return session

    async def command(self, session: DebateSession, command: Command | str, *, actor: str,
                      **args: Any) -> CommandResult:
        """Carry out a person's command (`DebateSession.send`): here, or on the debate's worker when
        debates run on workers; refused (`TransitionNotAllowed`) the same way in both cases."""
        if self.workers is None:
            return await session.send(command, actor=actor, **args)
        result = await self.workers.send(session.id, command, actor=actor, **args)
        await session.catch_up()  # the page shows the outcome at once, without waiting for the next signal
        return result

    async def session(self, debate_id: str) -> DebateSession:
        """The live session of a debate, loading it from the log if needed."""
        if debate_id in self.sessions:
            return self.sessions[debate_id]
        async with self._load_lock:
            if debate_id in self.sessions:
                return self.sessions[debate_id]
            full_id = await self.store.find_id(debate_id)
            if full_id is None:
                raise DebateNotFound(debate_id)
            if full_id in self.sessions:
                return self.sessions[full_id]
            session = self._evicted.pop(full_id, None)  # evicted, but some page still holds it
            if session is None:
                state = DebateState.from_events(await self.store.events(full_id))
                session = DebateSession(state, self.store, self.providers, self.settings,
                                        task_factory=self.task_factory, backoff_base=self.backoff_base,
                                        on_event=self._relay, on_release=self._maybe_evict,
                                        storage_retry_base=self.storage_retry_base,
                                        limiter=self.limiter, rng=self.rng, tap=self.all_live.emit,
                                        endpoints=self.endpoints, seat_clock=self.workers is None)
            self.sessions[full_id] = session
            return session

    async def forget(self, debate_id: str) -> None:
        """Stop a debate's runner here (recording nothing, like a crash) and drop its session, so the next
        `session` reads its log again: a debate worker does this when it gives a debate up, or finds that
        another process now owns it."""
        session = self.sessions.pop(debate_id, None) or self._evicted.pop(debate_id, None)
        self._evicted.pop(debate_id, None)
        if session is not None:
            await session.shutdown()

    def _relay(self, session: DebateSession, event: DebateEvent) -> None:
        self.all_events.emit(LiveEvent(session.id, event))

    def _maybe_evict(self, session: DebateSession) -> None:
        """Forget a finished debate nobody watches (its runner ended, or its last subscriber left).
        A finished debate accepts no command, so a caller still holding the object is unaffected."""
        if (session.state.status in TERMINAL_STATES and session.broadcaster.count == 0
                and session.storage_problem is None and self.sessions.get(session.id) is session):
            del self.sessions[session.id]
            self._evicted[session.id] = session

    def subscribe_all(self, listener: Listener) -> Callable[[], None]:
        return self.all_events.subscribe(listener)

    async def resume(self, debate_id: str, actor: str | None = None) -> DebateSession:
        """Continue a debate from wherever its log says it is (CLI `resume`); see `continue_debate`."""
        session, _ = await self.continue_debate(debate_id, actor=actor)
        return session

    async def continue_debate(self, debate_id: str, actor: str | None = None) -> tuple[DebateSession, CommandResult]:
        """Continue a debate from wherever its log says it is, with the command that fits: resume a
        paused (or never started) one, retry a failed one — a person's retry runs the step again even
        after the automatic retries were used — or accept the spending warning. Returns the session
        and what was done (`result.message` says it in a sentence). Raises `TransitionNotAllowed`
        when the system (no actor) asks for a retry it has no automatic retries left for."""
        session = await self.session(debate_id)
        who = actor or "system"
        status = session.status
        if status in (State.PAUSED, State.IDLE):
            return session, await session.send(Command.RESUME, actor=who)
        if status is State.ERROR:
            return session, await session.send(Command.RETRY, actor=who)
        if status is State.AWAITING_ACK:
            return session, await session.send(Command.ACKNOWLEDGE_WARNING, actor=who)
        if status in ACTIVE_STATES:
            was_running = session.running
            session.ensure_running()
            return session, CommandResult(None, None, "It is running." if was_running else
                                          "Continuing from where its log stopped.")
        if status is State.AWAITING_CLARIFICATION:
            return session, CommandResult(None, None, "It waits for answers to its clarification questions.")
        if status is State.AWAITING_TURN and session.state.seat is not None:
            name = session.state.config.participant(session.state.seat.speaker).name
            return session, CommandResult(None, None, f"It waits for {name} (a person) to send their turn.")
        return session, CommandResult(None, None, f"It has already ended ({status.value}).")

    async def recover_interrupted(self) -> list[str]:
        """After a restart: debates the log shows as running — or created and never started — with no
        runner here become paused (interrupted) so a person can resume (or start) them."""
        ids = await self.store.ids_with_status([s.value for s in ACTIVE_STATES] + [State.IDLE.value])
        recovered: list[str] = []
        for debate_id in ids:
            session = await self.session(debate_id)
            if session.running:
                continue
            reason = NEVER_STARTED_REASON if session.status is State.IDLE else RESTART_REASON
            try:
                await session.pause(interrupted=True, reason=reason)
                recovered.append(debate_id)
            except TransitionNotAllowed:
                continue
            except StaleWrite:  # its log is moving: another process is running it right now
                self.sessions.pop(debate_id, None)
        return recovered

    async def delete(self, debate_id: str) -> bool:
        """Stop a debate's runner here (recording nothing) and remove it with its whole log."""
        full_id = await self.store.find_id(debate_id)
        if full_id is None:
            raise DebateNotFound(debate_id)
        session = self.sessions.pop(full_id, None) or self._evicted.pop(full_id, None)
        if session is not None:
            await session.shutdown()
        deleted = await self.store.delete_debate(full_id)
        # Not an event of its log (the log is gone): a status change pages and dashboards re-read.
        gone = LiveStatus(full_id, "deleted")
        if deleted and session is not None:
            session.deleted = True
            session.broadcaster.emit(gone)
        self.all_events.emit(gone)
        return deleted

    async def events(self, debate_id: str) -> list[DebateEvent]:
        return await self.store.events(debate_id)

    async def list_debates(self, query: str = "", statuses: list[str] | None = None, offset: int = 0,
                           limit: int = 20, order: str = "newest", model: str | None = None,
                           tag: str | None = None) -> tuple[list[DebateRow], int]:
        return await self.store.list_debates(query, statuses, offset, limit, order, model=model, tag=tag)
