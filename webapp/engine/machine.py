"""The debate life cycle as data: states, events, transitions and named guards.

`DebateMachine.send(event)` either moves the machine or raises `TransitionNotAllowed` and changes
nothing. The Mermaid diagram (`webapp.engine.mermaid.to_mermaid`) is generated from the same
`TRANSITIONS` declaration, so the picture in the UI and README cannot drift from the behaviour. The words
it is declared in (`State`, `Event`, `Position`) are recorded in the log, so they live with the stored
models (`webapp.models.lifecycle`) and are named here too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from webapp.engine.params import ErrorInfo, TransitionParams, typed_params
from webapp.models import utcnow
from webapp.models.lifecycle import Event, Position, State
from webapp.wording import every, noun

# States in which the engine is doing work (a runner task should be alive).
ACTIVE_STATES = frozenset(
    {State.INITIALIZING, State.CLARIFYING, State.PREPARATION, State.DEBATING, State.JUDGING}
)
# States that wait for a person.
WAITING_STATES = frozenset({State.PAUSED, State.AWAITING_ACK, State.ERROR, State.AWAITING_CLARIFICATION,
                            State.AWAITING_TURN})
TERMINAL_STATES = frozenset({State.COMPLETED, State.STOPPED})
# Sentinel target: go back to the state remembered when the machine was suspended.
RETURN = "<return>"


class MachineContext(BaseModel):
    """Everything the machine remembers besides its state."""

    state: State = State.IDLE
    return_state: State | None = None
    position: Position = Field(default_factory=Position)
    retries_used: int = 0  # automatic retries since the last one a person asked for
    max_retries: int = 3  # automatic retries allowed; a person's retry is always allowed and resets the count
    error: ErrorInfo | None = None  # the provider failure the debate stopped on (while in `error`)
    stopping: bool = False
    stop_reason: str | None = None
    interrupted: bool = False
    interruption: str | None = None  # why it was interrupted (restart, storage unavailable), when known
    judge_enabled: bool = True
    clarification: bool = False
    preparation: bool = False
    human_seat: bool = False  # a participant is a person (the debate may wait for their turn)
    has_turns: bool = False
    elapsed_s: float = 0.0
    phase_durations: dict[str, float] = Field(default_factory=dict)
    active_since: datetime | None = None


Guard = Callable[[MachineContext, TransitionParams], bool]


def _retries_left(ctx: MachineContext, params: TransitionParams) -> bool:
    return ctx.retries_used < ctx.max_retries


def _by_a_person(ctx: MachineContext, params: TransitionParams) -> bool:
    """A retry a person asked for (after fixing the cause): never refused for want of retries."""
    return bool(params.manual)


def _with_verdict(ctx: MachineContext, params: TransitionParams) -> bool:
    return params.verdict is not False and ctx.judge_enabled and ctx.has_turns


def _stopping(ctx: MachineContext, params: TransitionParams) -> bool:
    return ctx.stopping


def _judge_enabled(ctx: MachineContext, params: TransitionParams) -> bool:
    return ctx.judge_enabled


def _needs_clarification(ctx: MachineContext, params: TransitionParams) -> bool:
    return ctx.clarification


def _has_preparation(ctx: MachineContext, params: TransitionParams) -> bool:
    return ctx.preparation


def _has_human_seat(ctx: MachineContext, params: TransitionParams) -> bool:
    return ctx.human_seat


GUARDS: dict[str, Guard] = {
    "by_a_person": _by_a_person,
    "retries_left": _retries_left,
    "with_verdict": _with_verdict,
    "stopping": _stopping,
    "judge_enabled": _judge_enabled,
    "needs_clarification": _needs_clarification,
    "has_preparation": _has_preparation,
    "has_human_seat": _has_human_seat,
}


@dataclass(frozen=True)
class Transition:
    """One declared edge: in `source`, on `event`, if `guard` holds, go to `target`."""

    source: State
    event: Event
    target: State | str
    guard: str | None = None


def _declare() -> tuple[Transition, ...]:
    s, e = State, Event
    edges = [
        Transition(s.IDLE, e.START, s.INITIALIZING),
        # Created but never started (a crash between create and start): marked interrupted like a
        # running debate; RESUME brings it back to idle, where the runner starts it.
        Transition(s.IDLE, e.PAUSE, s.PAUSED),
        Transition(s.INITIALIZING, e.INIT_COMPLETE, s.CLARIFYING, "needs_clarification"),
        Transition(s.INITIALIZING, e.INIT_COMPLETE, s.PREPARATION, "has_preparation"),
        Transition(s.INITIALIZING, e.INIT_COMPLETE, s.DEBATING),
        Transition(s.CLARIFYING, e.QUESTIONS_READY, s.AWAITING_CLARIFICATION),
        Transition(s.AWAITING_CLARIFICATION, e.CLARIFICATION_ANSWERED, s.CLARIFYING),
        Transition(s.CLARIFYING, e.CLARIFICATION_COMPLETE, s.PREPARATION, "has_preparation"),
        Transition(s.CLARIFYING, e.CLARIFICATION_COMPLETE, s.DEBATING),
        Transition(s.PREPARATION, e.TURN_COMPLETE, s.PREPARATION),
        Transition(s.PREPARATION, e.PHASE_COMPLETE, s.DEBATING),
        Transition(s.DEBATING, e.TURN_COMPLETE, s.DEBATING),
        Transition(s.DEBATING, e.PHASE_COMPLETE, s.DEBATING),
        Transition(s.DEBATING, e.ROUND_COMPLETE, s.DEBATING),
        # A human seat: the debate waits (persisted, no runner) until the person sends the turn or
        # their time runs out; a pause while waiting comes back to waiting (see RETURN).
        Transition(s.DEBATING, e.TURN_DUE, s.AWAITING_TURN, "has_human_seat"),
        Transition(s.AWAITING_TURN, e.TURN_SENT, s.DEBATING),
        Transition(s.AWAITING_TURN, e.TURN_TIMEOUT, s.DEBATING),
        Transition(s.AWAITING_TURN, e.PAUSE, s.PAUSED),
        Transition(s.DEBATING, e.ALL_ROUNDS_COMPLETE, s.JUDGING, "judge_enabled"),
        Transition(s.DEBATING, e.ALL_ROUNDS_COMPLETE, s.COMPLETED),
        Transition(s.JUDGING, e.VERDICT_READY, s.STOPPED, "stopping"),
        Transition(s.JUDGING, e.VERDICT_READY, s.COMPLETED),
        # A stop while the judge works still gets the verdict (the runner restarts the judging it
        # cancelled) unless the user chose "stop without verdict".
        Transition(s.JUDGING, e.STOP, s.JUDGING, "with_verdict"),
        Transition(s.JUDGING, e.STOP, s.STOPPED),
    ]
    for active in sorted(ACTIVE_STATES):
        edges.append(Transition(active, e.PAUSE, s.PAUSED))
        edges.append(Transition(active, e.ERROR, s.ERROR))
    for source in (s.PREPARATION, s.DEBATING, s.JUDGING):
        edges.append(Transition(source, e.COST_WARNING, s.AWAITING_ACK))
    for source in (s.IDLE, s.INITIALIZING, s.CLARIFYING, s.PREPARATION, s.DEBATING, *sorted(WAITING_STATES)):
        edges.append(Transition(source, e.STOP, s.JUDGING, "with_verdict"))
        edges.append(Transition(source, e.STOP, s.STOPPED))
    edges += [
        Transition(s.PAUSED, e.RESUME, RETURN),
        # `max_retries` limits automatic retries; a person's retry runs the step again and grants a
        # fresh automatic budget.
        Transition(s.ERROR, e.RETRY, RETURN, "by_a_person"),
        Transition(s.ERROR, e.RETRY, RETURN, "retries_left"),
        Transition(s.AWAITING_ACK, e.ACKNOWLEDGE_WARNING, RETURN),
    ]
    return tuple(edges)


TRANSITIONS: tuple[Transition, ...] = _declare()


class TransitionNotAllowed(Exception):
    """Raised when an event is not allowed in the current state; the machine is unchanged."""

    def __init__(self, state: State, event: Event | str, reason: str = "") -> None:
        self.state = state
        self.event = event
        self.reason = reason
        message = f"{event} is not allowed while the debate is {state.value}"
        super().__init__(f"{message}: {reason}" if reason else message)


class DebateMachine:
    """The life cycle of one debate. Pure and synchronous: no I/O, no clock unless you omit `at`."""

    def __init__(self, context: MachineContext | None = None) -> None:
        self.context = context or MachineContext()

    def copy(self) -> DebateMachine:
        """An independent machine in the same state (`send` on it leaves this one untouched)."""
        ctx = self.context
        # The error is frozen (shared safely); the durations are the one container `send` changes in place.
        return DebateMachine(ctx.model_copy(update={"phase_durations": dict(ctx.phase_durations)}))

    @property
    def state(self) -> State:
        return self.context.state

    def allowed_events(self) -> list[Event]:
        """Events `send` would accept now (guards evaluated with default parameters)."""
        allowed: list[Event] = []
        for event in Event:
            if self._resolve(event, TransitionParams()) is not None and event not in allowed:
                allowed.append(event)
        return allowed

    def can(self, event: Event, params: TransitionParams | None = None, **given: Any) -> bool:
        return self._resolve(Event(event), typed_params(params, given)) is not None

    def require(self, event: Event, params: TransitionParams | None = None, **given: Any) -> Transition:
        """The transition `event` would take now; raises `TransitionNotAllowed` (saying why) if none."""
        transition = self._resolve(event, typed_params(params, given))
        if transition is None:
            raise TransitionNotAllowed(self.state, event, self._refusal_reason(event))
        return transition

    def _resolve(self, event: Event, params: TransitionParams) -> Transition | None:
        for transition in TRANSITIONS:
            if transition.source is self.state and transition.event is event:
                guard = GUARDS[transition.guard] if transition.guard else None
                if guard is None or guard(self.context, params):
                    return transition
        return None

    def send(self, event: Event | str, at: datetime | None = None, params: TransitionParams | None = None,
             **given: Any) -> tuple[State, State]:
        """Apply `event` with its parameters (`params`, or the same as keywords); return (from, to).
        Raises `TransitionNotAllowed`, or pydantic's `ValidationError` for a bad parameter, and changes
        nothing."""
        try:
            event = Event(event)
        except ValueError:
            raise TransitionNotAllowed(self.state, str(event), "unknown event") from None
        params = typed_params(params, given)  # validated before the context is touched
        transition = self.require(event, params)
        at = at or utcnow()
        ctx = self.context
        source = ctx.state
        target = ctx.return_state if transition.target == RETURN else State(transition.target)
        if target is None:  # a suspended machine with nothing remembered cannot happen; be explicit
            raise TransitionNotAllowed(self.state, event, "no state to return to")
        new_position = params.position.model_copy() if params.position is not None else None
        # An event's position says where the work since the previous event was done (the turn just
        # completed, the turn a pause or an error cut off): that is where the time is booked. Only
        # logged events move the clock, so a state rebuilt from the log times phases identically.
        delta = self._active_seconds(at)  # computed first: a bad `at` raises before anything changed
        if new_position is not None:
            ctx.position = new_position
        self._tick(at, delta)
        if target in (State.PAUSED, State.ERROR, State.AWAITING_ACK):
            ctx.return_state = source
        elif transition.target == RETURN:
            ctx.return_state = None
        if event is Event.ERROR:
            ctx.error = params.error
        if event is Event.RETRY:
            # A person's retry grants a fresh automatic budget; an automatic one uses it up.
            ctx.retries_used = 0 if transition.guard == "by_a_person" else ctx.retries_used + 1
            ctx.error = None
        if event is Event.PAUSE:
            ctx.interrupted = bool(params.interrupted)
            ctx.interruption = (params.reason or None) if ctx.interrupted else None
        if event is Event.RESUME:
            ctx.interrupted = False
            ctx.interruption = None
        if event is Event.STOP:
            if not ctx.stopping:  # a second stop (e.g. during the final judging) keeps the first reason
                ctx.stop_reason = params.reason or "stopped by user"
            ctx.stopping = True
            ctx.return_state = None
            ctx.interrupted = False
            ctx.interruption = None
        if event in (Event.TURN_COMPLETE, Event.TURN_SENT, Event.TURN_TIMEOUT):
            ctx.has_turns = True
        ctx.state = target
        ctx.active_since = at if target in ACTIVE_STATES else None
        return source, target

    def note_position(self, position: Position, at: datetime | None = None) -> None:
        """Record where the debate now is (the speaker just asked) for display, pause and errors.

        It does not move the clock: time is booked by logged events only (see `send`), so the live
        machine and one rebuilt from the log agree exactly. `at` is accepted for symmetry."""
        self.context.position = position

    def _active_seconds(self, at: datetime) -> float | None:
        """Active time since the last booking, or None while nothing is running."""
        ctx = self.context
        if ctx.active_since is not None and ctx.state in ACTIVE_STATES:
            return max(0.0, (at - ctx.active_since).total_seconds())
        return None

    def _tick(self, at: datetime, delta: float | None) -> None:
        ctx = self.context
        if delta is not None:
            ctx.elapsed_s += delta
            # Time spent initializing, clarifying or judging is its own entry, not the last phase's.
            in_phases = ctx.state in (State.PREPARATION, State.DEBATING)
            phase = ctx.position.phase if in_phases and ctx.position.phase else ctx.state.value
            ctx.phase_durations[phase] = ctx.phase_durations.get(phase, 0.0) + delta
            ctx.active_since = at

    def elapsed(self, now: datetime | None = None) -> float:
        """Active seconds so far, paused and waiting time excluded."""
        return self.context.elapsed_s + (self._active_seconds(now or utcnow()) or 0.0)

    def _refusal_reason(self, event: Event) -> str:
        candidates = [t for t in TRANSITIONS if t.source is self.state and t.event is event]
        if not candidates:
            if self.state in TERMINAL_STATES:
                return "the debate has ended"
            return "no such transition"
        if event is Event.RETRY:
            allowed = self.context.max_retries
            return (f"{every(allowed, 'automatic retry')} of this debate {noun(allowed, 'is', 'are')} used; "
                    "a person can retry after fixing the cause")
        failed = ", ".join(t.guard or "" for t in candidates if t.guard)
        return f"guard failed ({failed})"
