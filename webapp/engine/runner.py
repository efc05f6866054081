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
from typing import Any, assert_never

from webapp.engine import termination
from webapp.engine.api import (
    COMMAND_EVENTS,
    AnswerArgs,
    Command,
    CommandResult,
    SendTurnArgs,
    SessionView,
    StopArgs,
    parse_args,
)
from webapp.engine.calls import ProviderCalls, ProviderSource, TaskFactory
from webapp.engine.commit import Committing, is_storage_error
from webapp.engine.context import build_history, turns_to_summarise
from webapp.engine.discipline import (
    rejection_note,
    shorter_request,
    truncate,
    word_count,
)
from webapp.engine.events import (
    CallRecord,
    ClarificationAnswerPayload,
    ClarificationDoneNote,
    ClarificationQuestionsPayload,
    ErrorPayload,
    OnTopicNote,
    RoundDecisionPayload,
    SeatTurn,
    TurnPayload,
    VerdictPayload,
)
from webapp.engine.formats import Phase
from webapp.engine.judge import judge_debate
from webapp.engine.limits import EndpointLimiter
from webapp.engine.machine import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    WAITING_STATES,
    Event,
    Position,
    State,
    TransitionNotAllowed,
)
from webapp.engine.prompts import effective_word_limit, turn_request
from webapp.engine.schedule import (
    Step,
    TurnSlot,
    phase_steps,
    post_phases,
    pre_phases,
    provider_problem,
    round_phases,
)
from webapp.engine.seat import Seats
from webapp.engine.spending import BudgetExceeded, SpendingGuard
from webapp.engine.state import SYSTEM_ACTOR, DebateState
from webapp.engine.stream import (
    Broadcaster,
    Listener,
    LiveTurn,
)
from webapp.models import DebateEvent, JudgeSpec, Participant, Turn, Verdict
from webapp.providers.base import (
    ErrorKind,
    ProviderError,
    ProviderRequest,
)
from webapp.providers.registry import EndpointBook
from webapp.settings import Settings
from webapp.store import StaleWrite
from webapp.store.protocol import EventStore
from webapp.wording import counted

log = logging.getLogger(__name__)

# Finish reasons saying the reply hit its output allowance (OpenAI and compatible; Anthropic).
CUT_AT_LIMIT = frozenset({"length", "max_tokens"})



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


class DebateSession(Seats, Committing, ProviderCalls, SpendingGuard):
    """One debate in this process: its state, its runner task, its subscribers.

    Public surface: `send(command, actor=…, **args)` and the read model (`view()`, `status`,
    `position`, `interrupted`, `allowed_commands`, `live_turns`, `error`, …), `subscribe`, `join`,
    `state` (the folded history: turns, notes, verdict, costs — read it, never change it).
    Provider calls (retries, timeouts, live chunks) and spending checks live in the two mixins."""

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
        endpoints: EndpointBook | None = None,
        seat_clock: bool = True,
    ) -> None:
        self.state = state
        # Whether this process times out a human seat's turn: not a web process whose debates run on
        # workers (the skip would make it run the debate itself); the worker's session does it there.
        self.seat_clock = seat_clock
        self.store = store
        self.providers = providers
        self.settings = settings
        self.endpoints = endpoints or EndpointBook(settings, store)
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
    def error(self) -> dict[str, Any] | None:
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

    def _refusal(self, command: Command) -> str | None:
        """Why a person's `command` would be refused now, or None when it would be accepted."""
        if self.deleted:
            return "the debate was deleted"
        if self._storage_problem is not None:
            return f"storage is unavailable ({self._storage_problem}); try again once it is back"
        machine = self.state.machine
        if command is Command.RESUME and self.state.status is State.IDLE:
            return "it is starting" if self.running else None
        params = {"manual": True} if command is Command.RETRY else {}
        if machine.can(COMMAND_EVENTS[command], **params):
            return None
        try:
            machine.require(COMMAND_EVENTS[command], **params)
        except TransitionNotAllowed as exc:
            return exc.reason or str(exc)
        return None  # pragma: no cover - `can` and `require` agree

    def _check(self, command: Command) -> None:
        """Raise `TransitionNotAllowed` (saying why) unless a person may send `command` now."""
        reason = self._refusal(command)
        if reason is not None:
            raise TransitionNotAllowed(self.state.status, COMMAND_EVENTS[command], reason)

    # --- commands ----------------------------------------------------------------------------

    async def send(self, command: Command | str, *, actor: str, **args: Any) -> CommandResult:
        """Carry out a person's command, recorded with `actor` (a username, `cli`, `share-link`).

        Raises `TransitionNotAllowed` (saying why) when the debate cannot take it now, and
        `pydantic.ValidationError` (a `ValueError`) for arguments the command does not take."""
        command = Command(command)
        parsed = parse_args(command, args)
        match command:
            case Command.PAUSE:
                return await self._pause(actor)
            case Command.RESUME:
                return await self._resume(actor)
            case Command.STOP:
                assert isinstance(parsed, StopArgs)
                return await self._stop(parsed.verdict, parsed.reason, actor)
            case Command.RETRY:
                return await self._retry(actor)
            case Command.ACKNOWLEDGE_WARNING:
                return await self._acknowledge(actor)
            case Command.ANSWER_CLARIFICATION:
                assert isinstance(parsed, AnswerArgs)
                return await self._answer(parsed.answers, actor)
            case Command.SEND_TURN:
                assert isinstance(parsed, SendTurnArgs)
                return await self._send_turn(parsed.text, parsed.assisted_by, actor)
        assert_never(command)

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

    # The methods below are the older spelling of `send` (kept for callers not yet migrated). Each
    # takes the `actor` who asked: it is recorded with the transition, so the log says who paused,
    # stopped or answered. Without an actor the step is the system's (an automatic retry, say).

    async def pause(self, interrupted: bool = False, actor: str | None = None, reason: str | None = None) -> None:
        await self._pause(actor, interrupted=interrupted, reason=reason)

    async def resume(self, actor: str | None = None) -> None:
        await self._resume(actor)

    async def stop(self, verdict: bool = True, reason: str = "stopped by user", actor: str | None = None) -> None:
        await self._stop(verdict, reason, actor)

    async def retry(self, actor: str | None = None) -> None:
        await self._retry(actor)

    async def acknowledge_warning(self, actor: str | None = None) -> None:
        await self._acknowledge(actor)

    async def answer_clarification(self, answers: dict[str, list[str]], actor: str | None = None) -> None:
        """Record the user's answers (per participant, in question order; '' = unanswered)."""
        await self._answer(answers, actor)

    async def _pause(self, actor: str | None, interrupted: bool = False, reason: str | None = None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.PAUSE)
            await self._halt()
            params: dict[str, Any] = {"interrupted": interrupted,
                                      "position": self.state.machine.context.position.model_dump()}
            if reason:
                params["reason"] = reason
            await self._halted_transition(Event.PAUSE, actor, params)
        return CommandResult(Command.PAUSE, Event.PAUSE,
                             "Marked interrupted." if interrupted else f"Paused by {actor or SYSTEM_ACTOR}.")

    async def _resume(self, actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.RESUME)
            if self.state.status is State.IDLE:  # created but never started: start it now
                person = actor if actor and actor != SYSTEM_ACTOR else None
                await self._transition(Event.START, actor=person or self.state.created_by or None)
                self.ensure_running()
                return CommandResult(Command.RESUME, Event.START, f"Started by {actor or SYSTEM_ACTOR}.")
            await self._transition(Event.RESUME, actor=actor)
            self.ensure_running()
        return CommandResult(Command.RESUME, Event.RESUME, f"Resumed by {actor or SYSTEM_ACTOR}.")

    async def _stop(self, verdict: bool, reason: str, actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.STOP)
            # Stopping with a verdict while the judge is already at work: let it finish rather than
            # cancel and pay for the same judging twice.
            if not (verdict and self.state.status is State.JUDGING):
                await self._halt()
            await self._halted_transition(Event.STOP, actor, {
                "verdict": verdict, "reason": reason, "position": self.state.machine.context.position.model_dump()})
            self.ensure_running()
            judged = self.state.status is State.JUDGING
        who = actor or SYSTEM_ACTOR
        return CommandResult(Command.STOP, Event.STOP, f"Stopped by {who}; the judge rules on what was said."
                             if judged else f"Stopped by {who} without a verdict.")

    async def _retry(self, actor: str | None) -> CommandResult:
        """A person's retry (any actor but the system) runs the failed step again whatever automatic
        retries were used, and grants a fresh automatic budget; the system's retry needs one left."""
        manual = bool(actor) and actor != SYSTEM_ACTOR
        async with self._command_lock:
            state = self.state
            if manual:
                self._check(Command.RETRY)
            else:
                state.machine.require(Event.RETRY)
            exhausted = not state.machine.can(Event.RETRY)  # the automatic budget was used up
            error = state.error or {}
            params: dict[str, Any] = {"manual": True} if manual else {}
            await self._transition(Event.RETRY, actor=actor, **params)
            self.ensure_running()
        what = f" ({error.get('provider') or 'error'}: {error.get('message')})" if error.get("message") else ""
        if not manual:
            message = f"Retrying the failed step automatically{what}."
        elif exhausted:
            used = counted(state.max_retries, "automatic retry")
            message = (f"Retried by {actor}: the failed step{what} runs again. Its {used} had been used up; it has "
                       f"a fresh budget of {state.max_retries}.")
        else:
            message = f"Retried by {actor}: the failed step{what} runs again."
        return CommandResult(Command.RETRY, Event.RETRY, message)

    async def _acknowledge(self, actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.ACKNOWLEDGE_WARNING)
            await self._transition(Event.ACKNOWLEDGE_WARNING, actor=actor)
            self.ensure_running()
        return CommandResult(Command.ACKNOWLEDGE_WARNING, Event.ACKNOWLEDGE_WARNING,
                             f"Spending warning acknowledged by {actor or SYSTEM_ACTOR}; the debate continues.")

    async def _answer(self, answers: dict[str, list[str]], actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.ANSWER_CLARIFICATION)
            iteration = len(self.state.clarifications)
            clean = {pid: [str(a).strip()[:2000] for a in items] for pid, items in answers.items()}
            answer = (ClarificationAnswerPayload(iteration=iteration, answers=clean, actor=actor) if actor
                      else ClarificationAnswerPayload(iteration=iteration, answers=clean))
            await self._commit(answer, idem_key=f"answer/{iteration}")
            await self._transition(Event.CLARIFICATION_ANSWERED, actor=actor)
            self.ensure_running()
        return CommandResult(Command.ANSWER_CLARIFICATION, Event.CLARIFICATION_ANSWERED,
                             "Answers recorded; the debate continues.")

    async def _halted_transition(self, event: Event, actor: str | None, params: dict[str, Any]) -> None:
        """A transition sent after the runner was halted: if storage fails, nobody drives the debate
        any more, so it is interrupted until the record can be finished."""
        try:
            await self._transition(event, actor=actor, **params)
        except Exception as exc:
            if is_storage_error(exc) and self.state.status in ACTIVE_STATES:
                self._storage_failed(exc)
            raise

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
        await self._transition(Event.ERROR, error=exc.to_dict(),
                               position=self.state.machine.context.position.model_dump())

    async def _initialize(self) -> None:
        problem = provider_problem(self.state.config, self.endpoints.policy())
        if problem is not None:
            field, message = problem
            raise ProviderError(ErrorKind.FATAL, "rostrum", f"{field}: {message}", reason="config")
        first = self.state.format.phases[0]
        await self._transition(Event.INIT_COMPLETE, position=Position(phase=first.id, round=1).model_dump())

    # --- clarification ---------------------------------------------------------------------

    async def _clarify(self) -> None:
        state = self.state
        config = state.config
        asked = len(state.clarifications)
        answered = len(state.answers)
        if asked > answered:  # questions out, answers not in: wait for the person
            await self._transition(Event.QUESTIONS_READY)
            return
        if asked >= config.clarification_iterations or config.clarification_questions == 0:
            await self._transition(Event.CLARIFICATION_COMPLETE)
            return
        questions, calls = await termination.ask_clarifications(self._aux_call, state, asked + 1)
        if not any(questions.values()):
            await self._commit(ClarificationDoneNote(iteration=asked + 1, calls=calls))
            await self._transition(Event.CLARIFICATION_COMPLETE)
            return
        await self._commit(ClarificationQuestionsPayload(iteration=asked + 1, questions=questions, calls=calls),
                           idem_key=f"questions/{asked + 1}")
        await self._transition(Event.QUESTIONS_READY)

    # --- turns -----------------------------------------------------------------------------

    def _phase_groups(self) -> list[tuple[Phase, int]]:
        """(phase, round) groups of the plan known so far, in order."""
        state, fmt = self.state, self.state.format
        groups = [(p, 1) for p in pre_phases(fmt)]
        stop_after = state.total_rounds
        for round_no, decision in sorted(state.round_decisions.items()):
            if decision.stop:
                stop_after = min(stop_after, round_no)
                break
        for round_no in range(1, stop_after + 1):
            groups += [(p, round_no) for p in round_phases(fmt)]
        groups += [(p, 1) for p in post_phases(fmt)]
        return groups

    def _steps(self, phase: Phase, round_no: int) -> list[Step]:
        return phase_steps(self.state.format, phase, round_no, self.state.config)

    def _first_unfinished(self, phase: Phase, round_no: int) -> Step | None:
        for step in self._steps(phase, round_no):
            if any(t.key not in self.state.turn_keys for t in step.turns):
                return step
        return None

    async def _close_markers(self) -> None:
        """Send PHASE_COMPLETE / ROUND_COMPLETE for groups finished but not yet marked (crash-safe)."""
        fmt = self.state.format
        block = {p.id for p in round_phases(fmt)}
        for phase, round_no in self._phase_groups():
            if self._first_unfinished(phase, round_no) is not None:
                return
            # `self.state` is read afresh after every commit: each one swaps in a new state.
            if (phase.id, round_no) not in self.state.phase_marks:
                if self.state.status is State.PREPARATION and any(s.act != "prepare" for s in phase.speakers):
                    continue
                await self._transition(Event.PHASE_COMPLETE, phase=phase.id, round=round_no,
                                       position=self.state.machine.context.position.model_dump())
            last_of_block = phase.id in block and phase.id == round_phases(fmt)[-1].id
            if last_of_block and round_no not in self.state.round_marks:
                await self._transition(Event.ROUND_COMPLETE, round=round_no,
                                       position=self.state.machine.context.position.model_dump())
            if self.state.status is not State.DEBATING and self.state.status is not State.PREPARATION:
                return

    async def _next_step(self) -> Step | None:
        fmt, total = self.state.format, self.state.total_rounds
        for phase in pre_phases(fmt):
            if step := self._first_unfinished(phase, 1):
                return step
        kind = fmt.termination.kind
        for round_no in range(1, total + 1):
            for phase in round_phases(fmt):
                if step := self._first_unfinished(phase, round_no):
                    return step
            stop = False
            if kind != "fixed":  # judge-driven formats get a decision at the cap too (it records why they ended)
                decision = self.state.round_decisions.get(round_no) or await self._decide_round(round_no)
                stop = decision.stop
            if round_phases(fmt):
                await self._after_round(round_no, stop or round_no == total)
            if stop:
                break
        for phase in post_phases(fmt):
            if step := self._first_unfinished(phase, 1):
                return step
        return None

    async def _after_round(self, round_no: int, last: bool) -> None:
        """Per-round judging when the debate asks for it (stored, never recomputed).

        "mid" scores the middle round of the planned rounds; a debate that ends before its middle
        (judge-driven formats) is scored at its last round instead, so it still gets a mid score."""
        config = self.state.config
        if not config.judge.enabled or config.judge.frequency == "end":
            return
        middle = max(1, (self.state.total_rounds + 1) // 2)
        if config.judge.frequency == "mid" and not (round_no == middle or (last and round_no < middle)):
            return
        if any(s.round == round_no for s in self.state.round_scores):
            return
        scores = await termination.score_round(self._aux_call, self.state, round_no)
        await self._commit(scores, idem_key=f"round_scores/{round_no}")

    async def _decide_round(self, round_no: int) -> RoundDecisionPayload:
        decision = await termination.decide(self._aux_call, self.state, round_no)
        await self._commit(decision, idem_key=f"decision/{round_no}")
        return self.state.round_decisions[round_no]

    async def _advance(self) -> None:
        await self._close_markers()
        if self.state.status not in (State.PREPARATION, State.DEBATING):
            return
        step = await self._next_step()
        if step is None:
            await self._close_markers()
            if self.state.status is State.PREPARATION:
                await self._transition(Event.PHASE_COMPLETE)
            if self.state.status is State.DEBATING:
                await self._transition(Event.ALL_ROUNDS_COMPLETE,
                                       position=self.state.machine.context.position.model_dump())
            return
        if self.state.status is State.PREPARATION and all(t.act != "prepare" for t in step.turns):
            await self._transition(Event.PHASE_COMPLETE, phase=step.phase, round=step.round)
            return
        await self._run_step(step)

    async def _run_step(self, step: Step) -> None:
        todo = [t for t in step.turns if t.key not in self.state.turn_keys]
        people = [t for t in todo if self.state.config.participant(t.speaker).is_human]
        todo = [t for t in todo if t not in people]  # the models of a step speak first, then the people
        if not todo and people:
            slot = people[0]
            if self.state.status is State.PREPARATION:  # a person prepares on their own: nothing to wait for
                seat = SeatTurn(key=slot.key, phase=slot.phase, round=slot.round, speaker=slot.speaker,
                                act=slot.act, index=slot.index, visible=False)
                await self._commit_seat_turn(seat, "(prepared on their own)", ["a person prepares off the record"])
                await self._transition(Event.TURN_COMPLETE, position=self._seat_position(seat))
                return
            await self._await_seat(slot)
            return
        for slot in todo:
            await self._prepare_summary(self.state.config.participant(slot.speaker), slot)
        requests = [(slot, self._request_for(slot, offset)) for offset, slot in enumerate(todo)]
        if not await self._budget_allows([(self.state.config.participant(s.speaker), r) for s, r in requests]):
            return
        if len(requests) == 1:
            await self._take_turn(*requests[0])
        else:
            async with asyncio.TaskGroup() as group:
                for slot, request in requests:
                    group.create_task(self._take_turn(slot, request))
        await self._check_warning()

    async def _prepare_summary(self, participant: Participant, slot: TurnSlot | None = None) -> None:
        """Write (once) the summary a `summarize` debate needs before this participant speaks."""
        needed = turns_to_summarise(self.state, participant, slot)
        if needed is None:
            return
        text, record = await termination.summarise(self._aux_call, self.state, needed.turns)
        await self._commit(needed.payload(text.strip(), record), idem_key=f"summary/{needed.key}")

    def _request_for(self, slot: TurnSlot, offset: int) -> ProviderRequest:
        state = self.state
        participant = state.config.participant(slot.speaker)
        history, notes = build_history(state, participant, slot)
        request = turn_request(
            slot=slot,
            participant=participant,
            config=state.config,
            fmt=state.format,
            history=history,
            turn_number=len(state.turns) + 1 + offset,
            round_total=state.total_rounds,
            extra_context={"compression": notes, **termination.turn_context(state, participant, slot)},
        )
        return request

    async def _take_turn(self, slot: TurnSlot, request: ProviderRequest) -> None:
        state = self.state
        participant = state.config.participant(slot.speaker)
        self.state.machine.note_position(
            Position(phase=slot.phase, round=slot.round, speaker=slot.speaker, turn=slot.index))
        result = await self._call(participant, request, slot=slot)
        text, notes = result.text.strip(), list(request.context.get("compression") or [])
        kept = result  # the call whose words the turn keeps
        phase = state.format.phase(slot.phase)
        limit = effective_word_limit(phase, state.config)
        if limit and word_count(text) > limit:
            if state.config.word_limit_action == "reject":
                notes.append(rejection_note(word_count(text), limit))
                second = await self._call(participant, shorter_request(request, text, limit), slot=slot)
                result.usage = result.usage + second.usage
                first_usd, second_usd = result.cost_usd, second.cost_usd
                result.cost_usd = None if first_usd is None or second_usd is None else first_usd + second_usd
                text, kept = second.text.strip(), second
                notes.append(f"the shorter answer has {counted(word_count(text), 'word')}")
            text, note = truncate(text, limit)
            if note is not None:
                notes.append(note)
        if kept.finish_reason in CUT_AT_LIMIT:  # the reply ran into its output allowance
            notes.append(f"cut at the {kept.max_tokens}-token limit")
        flag, topic_calls = await termination.check_on_topic(self._aux_call, state, participant, text)
        if flag:
            notes.append(flag)
        if topic_calls:  # the judge's on-topic check costs money too
            await self._commit(OnTopicNote(turn=slot.key, round=slot.round, flag=flag, calls=topic_calls))
        turn = Turn(
            key=slot.key, phase=slot.phase, round=slot.round, speaker=slot.speaker, act=slot.act,
            index=slot.index, text=text, usage=result.usage, cost_usd=result.cost_usd,
            model=participant.model, provider=participant.provider, attempt=result.attempt,
            started_at=result.started_at, finished_at=result.finished_at,
            first_token_s=result.first_token_s, finish_reason=result.finish_reason, notes=notes,
            visible=slot.visible,
        )
        self.live.pop(slot.key, None)
        await self._commit(TurnPayload(turn=turn, cost_source=result.cost_source), idem_key=slot.key)
        await self._transition(Event.TURN_COMPLETE, position=Position(
            phase=slot.phase, round=slot.round, speaker=slot.speaker, turn=slot.index).model_dump())

    # --- judging ---------------------------------------------------------------------------

    async def _judge(self) -> None:
        state = self.state
        config = state.config
        if state.verdict is not None:  # committed before an interruption: never ask (and pay) again
            await self._transition(Event.VERDICT_READY)
            return
        calls: list[CallRecord] = []

        async def call(spec: JudgeSpec, request: ProviderRequest) -> str:
            text, record = await self._aux_call(spec, request)
            calls.append(record)
            return text

        # Preparation notes, even when shown to the audience, are not arguments to be judged.
        visible = [t for t in state.turns if t.visible and t.act != "prepare"]
        budget = config.budget
        judge_estimate = self._judge_estimate()
        if budget.cost_limit is not None and state.ledger.total_usd + judge_estimate > budget.cost_limit:
            verdict = Verdict(available=False, reasoning="Verdict unavailable: the judge's estimated cost "
                              f"(${judge_estimate:.4f}) does not fit under the cost limit.")
        elif not visible:
            verdict = Verdict(available=False, reasoning="Verdict unavailable: no turns to judge.")
        else:
            verdict = await judge_debate(call, config, state.format, visible)
            synthesis = await termination.synthesize(self._aux_call, state)
            if synthesis is not None:
                verdict.synthesis, record = synthesis
                calls.append(record)
        now = self.state  # a stop may have arrived while the judge worked
        verdict.ended_because = now.ended_because or (None if now.stopping else "all rounds completed")
        await self._commit(VerdictPayload(verdict=verdict, calls=calls), idem_key="verdict")
        await self._transition(Event.VERDICT_READY)
