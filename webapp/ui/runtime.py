"""The process-wide engine and live hub the pages use, set up on app start and closed on stop.

Startup handlers run as background tasks, so a request can arrive before the engine is open:
pages `await runtime.engine()`, which waits for it.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import TYPE_CHECKING

from nicegui import app, background_tasks

from webapp.access.throttle import LoginThrottle
from webapp.bus import BusPublisher, LiveBus, open_bus
from webapp.engine.engine import Engine
from webapp.providers.endpoints import EndpointPolicy, configured_policy
from webapp.settings import get_settings
from webapp.store import StoreError
from webapp.tournament.runner import TournamentManager
from webapp.ui.cutoff import Cutoff
from webapp.ui.live import LiveHub
from webapp.webhooks import Webhooks

if TYPE_CHECKING:
    from webapp.workers import WorkerClient

log = logging.getLogger(__name__)


class Runtime:
    """Holds the engine and the hub of this process (one instance, reset by `setup`)."""

    def __init__(self) -> None:
        self.engine_: Engine | None = None
        self.hub_: LiveHub | None = None
        self.bus_: LiveBus | None = None  # Redis with ROSTRUM_REDIS_URL, else in-process
        self.publisher_: BusPublisher | None = None
        self.tournaments_: TournamentManager | None = None
        self.workers_: WorkerClient | None = None  # with ROSTRUM_WORKERS=external
        self.webhooks_: Webhooks | None = None
        self.ready = asyncio.Event()
        self.failure: BaseException | None = None
        self.login_throttle: LoginThrottle | None = None  # in the store: shared by every web process
        self.cutoff = Cutoff()  # open tabs whose sign-in or share link ends

    async def start(self) -> None:
        settings = get_settings()
        try:
            self.engine_ = await Engine.open(
                settings.db, settings=settings,
                # Debate tasks belong to the app, not to the tab that started them.
                task_factory=lambda coro: background_tasks.create(coro, name="debate"),
            )
            self.bus_ = open_bus(settings.redis_url)
            await self.bus_.start()  # connects in the background: a missing Redis only costs the live view
            self.publisher_ = BusPublisher(self.engine_, self.bus_)
            self.hub_ = LiveHub(self.engine_, self.bus_)
            # Webhooks: this process queues the events it commits and sends what is due (from any process).
            self.webhooks_ = Webhooks(self.engine_, settings)
            await self.webhooks_.start()
            self.tournaments_ = TournamentManager(
                self.engine_, task_factory=lambda coro: background_tasks.create(coro, name="tournament"))
            if settings.workers == "external":
                # Debates run on workers: they hold the leases and take over a dead worker's debates;
                # a web process pausing "interrupted" debates at start-up would fight them.
                from webapp.workers import WorkerClient  # late: a single-process install never loads workers/

                self.workers_ = self.engine_.workers = WorkerClient(self.engine_.store, settings.redis_url)
            else:
                recovered = await self.engine_.recover_interrupted()
                if recovered:
                    log.warning("%d debate(s) were interrupted by a restart and are paused: %s",
                                len(recovered), ", ".join(recovered))
                # Tournaments belong to the app like debates; those that were playing carry on (their
                # interrupted debates are resumed by them, the missing ones created).
                resumed = await self.tournaments_.resume_unfinished()
                if resumed:
                    log.warning("%d tournament(s) were playing before the restart and continue: %s",
                                len(resumed), ", ".join(resumed))
            # After the first requests (a full collection takes a noticeable moment at start-up).
            asyncio.get_running_loop().call_later(2.0, tune_garbage_collection)
        except BaseException as exc:
            self.failure = exc
            advice = f"; {exc.advice}" if isinstance(exc, StoreError) else ""
            log.error("Rostrum could not start: %s%s", exc, advice)
            app.shutdown()
            raise
        finally:
            self.ready.set()

    async def stop(self) -> None:
        self.cutoff.close()
        if self.tournaments_ is not None:
            await self.tournaments_.close()
        if self.webhooks_ is not None:
            await self.webhooks_.close()
            self.webhooks_ = None
        if self.publisher_ is not None:
            self.publisher_.close()
        if self.hub_ is not None:
            self.hub_.close()
        if self.bus_ is not None:
            await self.bus_.close()
        if self.workers_ is not None:
            await self.workers_.close()
            self.workers_ = None
        if self.engine_ is not None:
            await self.engine_.close()
        self.engine_ = self.hub_ = None
        self.bus_ = self.publisher_ = None
        self.tournaments_ = None

    async def engine(self) -> Engine:
        await self.ready.wait()
        if self.engine_ is None:
            raise RuntimeError(f"the engine is not available: {self.failure}")
        return self.engine_

    async def throttle(self) -> LoginThrottle:
        engine = await self.engine()
        if self.login_throttle is None:
            self.login_throttle = LoginThrottle(engine.store)
        return self.login_throttle

    async def tournaments(self) -> TournamentManager:
        await self.engine()
        assert self.tournaments_ is not None
        return self.tournaments_

    async def hub(self) -> LiveHub:
        await self.engine()
        assert self.hub_ is not None
        return self.hub_


def tune_garbage_collection() -> None:
    """Full collections walk every tracked object; with hundreds of open pages that took 0.6–3.3 s,
    longer than NiceGUI's ping timeout, and dropped every spectator. What exists after start-up
    (modules, classes, the app) lives for the whole process: freeze it out of every collection, and
    collect the young generation less eagerly (pages allocate many short-lived objects)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


runtime = Runtime()


def reset() -> Runtime:
    """A fresh runtime (each `setup()`, so tests that re-run main.py get their own engine)."""
    global runtime
    runtime = Runtime()
    return runtime


def current() -> Runtime:
    return runtime


async def endpoint_policy() -> EndpointPolicy:
    """The endpoint rules as they are now (the registered endpoints read again from the store): what
    "Test connection" and the Settings checks may ask, like a debate's calls."""
    engine = await current().engine()
    return await engine.endpoints.refresh()


def known_policy() -> EndpointPolicy:
    """The endpoint rules as last read (no store read: for building a form)."""
    engine = current().engine_
    return engine.endpoints.policy() if engine is not None else configured_policy()
