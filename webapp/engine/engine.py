"""The engine's front door: create debates, run them, send commands, subscribe to their streams.

The web app and the CLI use only this class. It holds one `DebateSession` per debate loaded in
this process; it knows nothing about who is watching.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from webapp.engine.calls import ProviderSource, TaskFactory
from webapp.engine.machine import ACTIVE_STATES, Event, State, TransitionNotAllowed
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import ConfigError, prepare_config, provider_problem
from webapp.engine.state import DebateState
from webapp.engine.stream import Broadcaster, Listener, LiveEvent
from webapp.models import DebateConfig, DebateEvent, EventKind, utcnow
from webapp.settings import Settings, get_settings
from webapp.store import DebateRow, StaleWrite, Store

__all__ = ["ConfigError", "DebateNotFound", "Engine", "TransitionNotAllowed"]


class DebateNotFound(KeyError):
    """No debate with that id."""

    def __str__(self) -> str:
        return f"no debate with id {self.args[0]!r}"


def _default_providers() -> ProviderSource:
    from webapp.providers.registry import ProviderCache

    return ProviderCache()


class Engine:
    """All debates of one process."""

    def __init__(
        self,
        store: Store,
        settings: Settings | None = None,
        providers: ProviderSource | None = None,
        task_factory: TaskFactory | None = None,
        backoff_base: float = 0.5,
    ) -> None:
        self.store = store
        self.settings = settings or get_settings()
        self.providers = providers or _default_providers()
        self.task_factory = task_factory
        self.backoff_base = backoff_base
        self.sessions: dict[str, DebateSession] = {}
        self.all_events = Broadcaster()  # every debate's committed events (for dashboards)
        self._load_lock = asyncio.Lock()

    @classmethod
    async def open(cls, db: str | Path | None = None, **kwargs: Any) -> Engine:
        settings = kwargs.pop("settings", None) or get_settings()
        store = await Store.open(db or settings.db)
        return cls(store, settings=settings, **kwargs)

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
        problem = provider_problem(config)
        if problem is not None:
            raise ConfigError(*problem)
        return config

    async def create(self, config: DebateConfig, actor: str | None = None) -> str:
        """Validate and store a new debate (not started); returns its id. `actor`: who created it."""
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
        session = await self.session(debate_id)
        session.ensure_running()
        return session

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
            state = DebateState.from_events(await self.store.events(full_id))
            session = DebateSession(state, self.store, self.providers, self.settings,
                                    task_factory=self.task_factory, backoff_base=self.backoff_base,
                                    on_event=self._relay)
            self.sessions[full_id] = session
            return session

    def _relay(self, session: DebateSession, event: DebateEvent) -> None:
        self.all_events.emit(LiveEvent(session.id, event))

    def subscribe_all(self, listener: Listener) -> Callable[[], None]:
        return self.all_events.subscribe(listener)

    async def resume(self, debate_id: str, actor: str | None = None) -> DebateSession:
        """Continue a debate from wherever its log says it is (CLI `resume`)."""
        session = await self.session(debate_id)
        machine = session.state.machine
        if machine.can(Event.RESUME):
            await session.resume(actor=actor)
        elif machine.can(Event.RETRY) and session.state.status is State.ERROR:
            await session.retry(actor=actor)
        elif machine.can(Event.ACKNOWLEDGE_WARNING):
            await session.acknowledge_warning(actor=actor)
        else:
            session.ensure_running()
        return session

    async def recover_interrupted(self) -> list[str]:
        """After a restart: debates the log shows as running, with no runner here, become paused
        (interrupted) so a person can resume them."""
        ids = await self.store.ids_with_status([s.value for s in ACTIVE_STATES])
        recovered: list[str] = []
        for debate_id in ids:
            session = await self.session(debate_id)
            if session.running:
                continue
            try:
                await session.pause(interrupted=True)
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
        session = self.sessions.pop(full_id, None)
        if session is not None:
            await session.shutdown()
        deleted = await self.store.delete_debate(full_id)
        if deleted and session is not None:
            session.deleted = True
            session.broadcaster.emit(LiveEvent(full_id, DebateEvent(
                debate_id=full_id, seq=session.state.last_seq + 1, kind=EventKind.ACTION, at=utcnow(),
                data={"action": "deleted"})))
        self.all_events.emit(LiveEvent(full_id, DebateEvent(
            debate_id=full_id, seq=0, kind=EventKind.ACTION, at=utcnow(), data={"action": "deleted"})))
        return deleted

    async def events(self, debate_id: str) -> list[DebateEvent]:
        return await self.store.events(debate_id)

    async def list_debates(self, query: str = "", statuses: list[str] | None = None, offset: int = 0,
                           limit: int = 20) -> tuple[list[DebateRow], int]:
        return await self.store.list_debates(query, statuses, offset, limit)
