"""Drives one debate: the machine, the providers, the store and the live stream.

The loop looks at the machine's state, does the next piece of work (a turn, a round decision, the
verdict), commits what happened, and goes round again; it returns when the debate waits for a
person or has ended. Every event is folded into a copy of the state, committed (one transaction),
and only then swapped in and broadcast: a failed write leaves the state as it was. Commands (pause,
stop, …) cancel in-flight work first, so no tokens keep being billed after a user stopped; the cut
turn is discarded and redone later, never half-kept.

When storage fails mid-run (after the store's own retries), the session survives: the debate is
interrupted in memory (the read model says so, subscribers get a `LiveStatus`), and a recorder task
keeps trying to write the interruption to the log; if the process ends first, the next start's
recovery records it instead.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping
from types import MappingProxyType

from webapp.engine.api import (
    Command,
    SessionView,
)
from webapp.engine.calls import ProviderCalls, ProviderSource, TaskFactory
from webapp.engine.commands import Commands
from webapp.engine.commit import Committing, is_storage_error
from webapp.engine.endpoints import StoredEndpoints
from webapp.engine.events import ErrorPayload, error_info
from webapp.engine.judging import Judging
from webapp.engine.limits import EndpointLimiter
from webapp.engine.machine import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    WAITING_STATES,
    Event,
    Position,
    State,
)
from webapp.engine.params import ErrorInfo
from webapp.engine.schedule import (
    provider_problem,
)
from webapp.engine.seat import Seats
from webapp.engine.spending import BudgetExceeded, SpendingGuard
from webapp.engine.state import DebateState
from webapp.engine.stream import (
    Broadcaster,
    Listener,
    LiveTurn,
)
from webapp.engine.turns import TurnTaking
from webapp.models import DebateEvent
from webapp.providers.base import (
    ErrorKind,
    ProviderError,
)
from webapp.settings import Settings
from webapp.store import StaleWrite
from webapp.store.protocol import EventStore

log = logging.getLogger(__name__)




def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order; the exception itself otherwise."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def primary_failure(exc: BaseException) -> BaseException:
    """The failure that decides what happens next, out of a TaskGroup's exception group: another
    writer (stop quietly) before storage (cannot write anyway) before the cost limit (stop) before a
    provider error (error state with the provider's message) before anything else (internal error)."""
    leaves = _leaves(exc)
    for wanted in (lambda e: isinstance(e, StaleWrite), is_storage_error,
                   lambda e: isinstance(e, BudgetExceeded), lambda e: isinstance(e, ProviderError)):
        for leaf in leaves:
            if wanted(leaf):
                return leaf
    return leaves[0]


class DebateSession(Commands, TurnTaking, Judging, Seats, Committing, ProviderCalls, SpendingGuard):
    """One debate in this process: its state, its runner task, its subscribers.

    Public surface: `send(command, actor=…, **args)` and the read model (`view()`, `status`,
    `position`, `interrupted`, `allowed_commands`, `live_turns`, `error`, …), `subscribe`, `join`,
    `state` (the folded history: turns, notes, verdict, costs — read it, never change it).
    This class holds the session's setup, its read model and its loop; the rest is in its mixins, one
    concern each: commands (commands.py), turn-taking (turns.py), judging (judging.py), the human seat
    (seat.py), committing and replay (commit.py), provider calls (calls.py) and spending (spending.py)."""

    def __init__(
        self,
        state: DebateState,
        store: EventStore,
        providers: ProviderSource,
        settings: Settings,
        task_factory: TaskFactory | None = None,
        backoff_base: float = 0.5,
        on_event: Callable[[DebateSession, DebateEvent], None] | None = None,
        on_release: Callable[[DebateSession], None] | None = None,
        storage_retry_base: float = 0.5,
        limiter: EndpointLimiter | None = None,
        rng: random.Random | None = None,
        tap: Listener | None = None,
        endpoints: StoredEndpoints | None = None,
        seat_clock: bool = True,
    ) -> None:
        self.state = state
        # Whether this process times out a human seat's turn: not a web process whose debates run on
        # workers (the skip would make it run the debate itself); the worker's session does it there.
        self.seat_clock = seat_clock
        self.store = store
        self.providers = providers
        self.settings = settings
        self.endpoints = endpoints or StoredEndpoints(settings, store)
        self.backoff_base = backoff_base
        self.limiter = limiter or EndpointLimiter()  # the engine shares one between its debates
        self.rng = rng or random.Random()  # the jitter of retry waits (seeded in tests)
        self.storage_retry_base = storage_retry_base
        self._task_factory = task_factory or asyncio.create_task
        self._on_event = on_event
        self._on_release = on_release
        self.broadcaster = Broadcaster(on_empty=self._released, tap=tap)
        self.live: dict[str, LiveTurn] = {}
        self.deleted = False  # set when an admin deleted the debate: pages watching it say so
        self._task: asyncio.Task[None] | None = None
        self._recorder: asyncio.Task[None] | None = None
        self._storage_problem: str | None = None
        self._commit_lock = asyncio.Lock()
        self._command_lock = asyncio.Lock()
        self._seat_timer: asyncio.Task[None] | None = None  # times out a human seat's turn
        self._watch_seat()  # loaded while waiting for a person (after a restart): the clock runs on

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add a listener; returns the function that removes it. Call right after reading `state`."""
        return self.broadcaster.subscribe(listener)

    def _released(self) -> None:
        if self._on_release is not None:
            self._on_release(self)

    # --- the read model ----------------------------------------------------------------------

    @property
    def status(self) -> State:
        return self.state.status

    @property
    def position(self) -> Position:
        return self.state.position

    @property
    def interrupted(self) -> bool:
        """Interrupted by a restart or crash (the log says so), or storage is unavailable right now."""
        return self._storage_problem is not None or self.state.interrupted

    @property
    def interruption(self) -> str | None:
        if self._storage_problem is not None:
            return f"storage is unavailable: {self._storage_problem}"
        return self.state.interruption

    @property
    def storage_problem(self) -> str | None:
        """Why this process cannot write the debate's log right now (None when it can)."""
        return self._storage_problem

    @property
    def error(self) -> ErrorInfo | None:
        return self.state.error

    @property
    def live_turns(self) -> Mapping[str, LiveTurn]:
        """Turns being streamed right now (read-only)."""
        return MappingProxyType(self.live)

    @property
    def allowed_commands(self) -> frozenset[Command]:
        """The commands a person may send now (roles aside): what the buttons offer."""
        if self.deleted or self._storage_problem is not None:
            return frozenset()
        return frozenset(c for c in Command if self._refusal(c) is None)

    def can(self, command: Command | str) -> bool:
        return Command(command) in self.allowed_commands

    def view(self) -> SessionView:
        state = self.state
        return SessionView(
            id=self.id, status=state.status, position=state.position, running=self.running,
            interrupted=self.interrupted, interruption=self.interruption, storage_problem=self._storage_problem,
            error=state.error, retries_used=state.retries_used, max_retries=state.max_retries,
            allowed=self.allowed_commands, ended_because=state.ended_because, deleted=self.deleted,
            last_seq=state.last_seq,
        )

    # --- running ---------------------------------------------------------------------------

    def ensure_running(self) -> None:
        """Start the runner task if there is work to do and none is running."""
        if self.running or self._storage_problem is not None or self.deleted:
            return
        if self.state.status in ACTIVE_STATES or self.state.status is State.IDLE:
            self._task = self._task_factory(self._run())

    async def join(self) -> State:
        """Wait until the runner stops (the debate ended or waits for a person). Cancelling the
        caller cancels only the wait, never the runner."""
        while (task := self._task) is not None and not task.done():
            await asyncio.wait({task})  # raises the caller's own cancellation; ignores the runner's
        return self.state.status

    # --- stopping work -----------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Stop working without recording anything (a process exit is like a crash)."""
        timer, self._seat_timer = self._seat_timer, None
        if timer is not None and not timer.done():
            timer.cancel()
        recorder, self._recorder = self._recorder, None
        if recorder is not None and not recorder.done():
            recorder.cancel()
            await asyncio.wait({recorder})
        await self._halt()

    def _require(self, event: Event) -> None:
        self.state.machine.require(event)

    async def _halt(self) -> None:
        """Cancel the runner and wait until it has stopped. Cancelling the caller stops the wait (the
        runner, already cancelled, still ends; `running` stays true until it has)."""
        task = self._task
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            await asyncio.wait({task})  # raises the caller's own cancellation, never swallows it
        if self._task is task:
            self._task = None
        for key in list(self.live):
            self._abort_live(key, "cancelled")

    # --- the loop --------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._drive()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._handle_failure(exc)
        finally:
            if self._on_release is not None and self.state.status in TERMINAL_STATES:
                self._on_release(self)

    async def _drive(self) -> None:
        # The registered endpoints as they are now (another process may have changed them): the
        # provider calls of this run are checked against them.
        await self.endpoints.refresh()
        while True:
            status = self.state.status
            if status in TERMINAL_STATES or status in WAITING_STATES:
                return
            if status is State.IDLE:  # started on behalf of whoever created it
                await self._transition(Event.START, actor=self.state.created_by or None)
            elif status is State.INITIALIZING:
                await self._initialize()
            elif status is State.CLARIFYING:
                await self._clarify()
            elif status in (State.PREPARATION, State.DEBATING):
                await self._advance()
            elif status is State.JUDGING:
                await self._judge()

    async def _handle_failure(self, exc: Exception) -> None:
        """Take the proper path for what stopped the loop — also when it comes out of a parallel
        phase's TaskGroup as an exception group."""
        problem = primary_failure(exc)
        try:
            if isinstance(problem, StaleWrite):
                # Another process now drives this debate (e.g. a web app that restarted and marked it
                # interrupted): stop here and leave the log as it wrote it; our view was reloaded.
                log.warning("%s", problem)
            elif is_storage_error(problem):
                self._storage_failed(problem)
            elif isinstance(problem, BudgetExceeded):
                await self._stop_for_budget(problem.what, problem.estimate)
            elif isinstance(problem, ProviderError):
                await self._fail(problem)
            else:
                log.error("debate %s failed", self.id, exc_info=problem)
                await self._fail(ProviderError(ErrorKind.FATAL, "rostrum", f"internal error: {problem}",
                                               reason="internal"))
        except StaleWrite as again:
            log.warning("%s", again)
        except Exception as again:
            if is_storage_error(again):  # recording the failure failed too
                self._storage_failed(again)
            else:
                log.exception("debate %s: recording its failure failed", self.id)

    async def _fail(self, exc: ProviderError) -> None:
        for key in list(self.live):
            self._abort_live(key, str(exc))
        if not self.state.machine.can(Event.ERROR):
            return
        await self._commit(ErrorPayload(**exc.to_dict(), state=self.state.status,
                                        position=self.state.machine.context.position))
        await self._transition(Event.ERROR, error=error_info(exc),
                               position=self.state.machine.context.position.model_copy())

    async def _initialize(self) -> None:
        problem = provider_problem(self.state.config, self.endpoints.policy())
        if problem is not None:
            field, message = problem
            raise ProviderError(ErrorKind.FATAL, "rostrum", f"{field}: {message}", reason="config")
        first = self.state.format.phases[0]
        await self._transition(Event.INIT_COMPLETE, position=Position(phase=first.id, round=1))
