"""What the parts of a debate session may count on from each other.

`DebateSession` (runner.py) is assembled from mixins, one concern each: commands (commands.py), the
human seat (seat.py), turn-taking (turns.py), judging (judging.py), committing and replaying the log
(commit.py), provider calls (calls.py) and spending (spending.py). Each mixin derives from
`SessionParts`, which only declares — for the type checker — the attributes the session sets up and the
methods another part provides; at run time it is an empty class.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from webapp.engine.api import Command, CommandResult
    from webapp.engine.calls import CallResult, ProviderSource, TaskFactory
    from webapp.engine.endpoints import StoredEndpoints
    from webapp.engine.events import CallRecord, Payload
    from webapp.engine.machine import Event
    from webapp.engine.params import Position, SeatTurn, TransitionParams
    from webapp.engine.schedule import TurnSlot
    from webapp.engine.spending import Spec
    from webapp.engine.state import DebateState
    from webapp.engine.stream import Broadcaster, LiveTurn
    from webapp.models import DebateEvent, JudgeSpec, Participant, Timeouts, Usage
    from webapp.providers.base import ProviderRequest
    from webapp.settings import Settings
    from webapp.store.protocol import EventStore


class SessionParts:
    """The shared declarations of the session's mixins (nothing at run time)."""

    if TYPE_CHECKING:  # set up by DebateSession.__init__
        state: DebateState
        store: EventStore
        providers: ProviderSource
        settings: Settings
        endpoints: StoredEndpoints
        broadcaster: Broadcaster
        live: dict[str, LiveTurn]
        deleted: bool
        seat_clock: bool
        storage_retry_base: float
        _task_factory: TaskFactory
        _on_event: Callable[[Any, DebateEvent], None] | None
        _on_release: Callable[[Any], None] | None
        _task: asyncio.Task[None] | None
        _recorder: asyncio.Task[None] | None
        _storage_problem: str | None
        _commit_lock: asyncio.Lock
        _command_lock: asyncio.Lock
        _seat_timer: asyncio.Task[None] | None

        @property
        def id(self) -> str: ...

        @property
        def running(self) -> bool: ...

        # runner.py
        def ensure_running(self) -> None: ...

        async def _halt(self) -> None: ...

        # commands.py
        def _check(self, command: Command) -> None: ...

        def _refusal(self, command: Command) -> str | None: ...

        # commit.py
        async def _commit(self, payload: Payload | Any, idem_key: str | None = None) -> DebateEvent | None: ...

        async def _transition(self, event: Event, actor: str | None = None, params: TransitionParams | None = None,
                              **given: Any) -> DebateEvent | None: ...

        async def _reload(self) -> None: ...

        def _publish(self, event: DebateEvent, replayed: bool = False) -> None: ...

        def _storage_failed(self, exc: BaseException) -> None: ...

        # seat.py
        def seat_holder(self, speaker: str | None = None) -> str | None: ...

        def _watch_seat(self) -> None: ...

        async def _send_turn(self, text: str, assisted_by: str | None, actor: str | None) -> CommandResult: ...

        def _awaited_seat(self) -> SeatTurn: ...

        async def _commit_seat_turn(self, seat: SeatTurn, text: str, notes: list[str], *, by: str | None = None,
                                    assisted_by: str | None = None, skipped: bool = False) -> None: ...

        async def _await_seat(self, slot: TurnSlot) -> None: ...

        @staticmethod
        def _seat_position(seat: SeatTurn) -> Position: ...

        # turns.py
        def _request_for(self, slot: TurnSlot, offset: int) -> ProviderRequest: ...

        # judging.py
        async def _after_round(self, round_no: int, last: bool) -> None: ...

        async def _decide_round(self, round_no: int) -> Any: ...

        # calls.py
        async def _call(self, spec: Participant | JudgeSpec, request: ProviderRequest,
                        slot: TurnSlot | None = None) -> CallResult: ...

        async def _aux_call(self, spec: Participant | JudgeSpec, request: ProviderRequest,
                            commit_cost: bool = False) -> tuple[str, CallRecord]: ...

        def _timeouts_for(self, spec: Participant | JudgeSpec) -> Timeouts: ...

        @staticmethod
        def _cost_record(spec: Participant | JudgeSpec, request: ProviderRequest, usage: Usage, usd: float | None,
                         source: str) -> CallRecord: ...

        def _abort_live(self, key: str, reason: str) -> None: ...

        # spending.py
        def _count_spending(self, usd: float | None) -> None: ...

        def _budget_hold(self, key: int, usd: float) -> None: ...

        def _budget_release(self, key: int) -> None: ...

        def _draft_fit(self, spec: Spec, request: ProviderRequest) -> tuple[ProviderRequest, float, str | None]: ...

        def _draft_warning(self) -> str | None: ...

        def _judge_estimate(self) -> float: ...

        async def _budget_allows(self, calls: list[tuple[Spec, ProviderRequest]]) -> bool: ...

        async def _check_warning(self) -> bool: ...
