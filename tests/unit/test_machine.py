"""The debate state machine: every declared transition, every refused one, guards, suspension,
retries, stopping, timing and the Mermaid diagram generated from the declaration."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic
import pytest

from webapp.engine.formats import FORMATS
from webapp.engine.machine import (
    ACTIVE_STATES,
    GUARDS,
    RETURN,
    TERMINAL_STATES,
    TRANSITIONS,
    WAITING_STATES,
    DebateMachine,
    Event,
    MachineContext,
    Position,
    State,
    Transition,
    TransitionNotAllowed,
)
from webapp.engine.mermaid import to_mermaid
from webapp.engine.params import ErrorInfo
from webapp.wording import every

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _set_guard(name: str, holds: bool, ctx: MachineContext, params: dict[str, Any]) -> None:
    """Make the named guard hold (or fail) through the context or the send parameters."""
    if name == "retries_left":
        ctx.retries_used = 0 if holds else ctx.max_retries
    elif name == "by_a_person":
        params["manual"] = holds
    elif name == "with_verdict":
        if holds:
            ctx.judge_enabled, ctx.has_turns, params["verdict"] = True, True, True
        else:
            params["verdict"] = False
    elif name == "stopping":
        ctx.stopping = holds
    elif name == "judge_enabled":
        ctx.judge_enabled = holds
    elif name == "needs_clarification":
        ctx.clarification = holds
    elif name == "has_preparation":
        ctx.preparation = holds
    elif name == "has_human_seat":
        ctx.human_seat = holds
    else:  # a new guard must be taught to this test
        raise AssertionError(f"unknown guard {name}")


def _setup(transition: Transition) -> tuple[DebateMachine, dict[str, Any]]:
    """A machine in the transition's source state where exactly this transition is the one chosen."""
    ctx = MachineContext(state=transition.source, active_since=T0 if transition.source in ACTIVE_STATES else None)
    if transition.source in WAITING_STATES:
        ctx.return_state = State.DEBATING
    params: dict[str, Any] = {}
    for earlier in TRANSITIONS:
        if earlier is transition:
            break
        if earlier.source is transition.source and earlier.event is transition.event and earlier.guard:
            _set_guard(earlier.guard, False, ctx, params)
    if transition.guard:
        _set_guard(transition.guard, True, ctx, params)
    return DebateMachine(ctx), params


def _tid(t: Transition) -> str:
    return f"{t.source.value}-{t.event.value}-{t.guard or 'always'}"


DECLARED_PAIRS = {(t.source, t.event) for t in TRANSITIONS}
UNDECLARED_PAIRS = [(s, e) for s in State for e in Event if (s, e) not in DECLARED_PAIRS]


# --- the declaration ----------------------------------------------------------------------------


@pytest.mark.parametrize("transition", TRANSITIONS, ids=_tid)
def test_every_declared_transition_moves_the_machine(transition: Transition):
    machine, params = _setup(transition)
    expected = machine.context.return_state if transition.target == RETURN else State(transition.target)
    assert machine.can(transition.event, **params)
    source, target = machine.send(transition.event, at=at(1), **params)
    assert (source, target) == (transition.source, expected)
    assert machine.state is expected


@pytest.mark.parametrize(("state", "event"), UNDECLARED_PAIRS, ids=lambda v: v.value)
def test_every_undeclared_transition_is_refused_and_changes_nothing(state: State, event: Event):
    ctx = MachineContext(state=state, return_state=State.DEBATING if state in WAITING_STATES else None,
                         active_since=T0 if state in ACTIVE_STATES else None,
                         position=Position(phase="opening", round=1, speaker="pro", turn=0))
    machine = DebateMachine(ctx)
    before = machine.context.model_dump()
    assert not machine.can(event)
    assert event not in machine.allowed_events()
    with pytest.raises(TransitionNotAllowed) as info:
        machine.send(event, at=at(5))
    assert machine.context.model_dump() == before
    assert info.value.state is state and info.value.event is event
    assert state.value in str(info.value) and event.value in str(info.value)


def test_declaration_names_only_known_guards_and_states():
    for t in TRANSITIONS:
        assert t.guard is None or t.guard in GUARDS
        assert t.target == RETURN or State(t.target) in State
    assert {t.guard for t in TRANSITIONS if t.guard} == set(GUARDS)


def test_every_state_is_reachable_and_only_terminal_states_are_dead_ends():
    reachable, frontier = {State.IDLE}, [State.IDLE]
    while frontier:
        state = frontier.pop()
        for t in TRANSITIONS:
            if t.source is state and t.target != RETURN and State(t.target) not in reachable:
                reachable.add(State(t.target))
                frontier.append(State(t.target))
    assert reachable == set(State)
    for state in State:
        outgoing = [t for t in TRANSITIONS if t.source is state]
        assert bool(outgoing) is (state not in TERMINAL_STATES), state


def test_pause_error_and_stop_are_declared_from_every_state_that_needs_them():
    for state in ACTIVE_STATES:
        assert (state, Event.PAUSE) in DECLARED_PAIRS
        assert (state, Event.ERROR) in DECLARED_PAIRS
    for state in ACTIVE_STATES | WAITING_STATES:
        assert (state, Event.STOP) in DECLARED_PAIRS, state


def test_the_main_life_cycle_runs_from_idle_to_completed():
    machine = DebateMachine(MachineContext(preparation=True))
    path = [Event.START, Event.INIT_COMPLETE, Event.TURN_COMPLETE, Event.PHASE_COMPLETE, Event.TURN_COMPLETE,
            Event.PHASE_COMPLETE, Event.ROUND_COMPLETE, Event.ALL_ROUNDS_COMPLETE, Event.VERDICT_READY]
    states = [machine.send(e, at=at(i))[1] for i, e in enumerate(path)]
    assert states == [State.INITIALIZING, State.PREPARATION, State.PREPARATION, State.DEBATING, State.DEBATING,
                      State.DEBATING, State.DEBATING, State.JUDGING, State.COMPLETED]


@pytest.mark.parametrize(
    ("flags", "target"),
    [({}, State.DEBATING), ({"preparation": True}, State.PREPARATION),
     ({"clarification": True, "preparation": True}, State.CLARIFYING)],
)
def test_init_complete_chooses_by_named_guards(flags: dict[str, bool], target: State):
    machine = DebateMachine(MachineContext(state=State.INITIALIZING, **flags))
    assert machine.send(Event.INIT_COMPLETE)[1] is target


def test_all_rounds_complete_skips_judging_when_the_judge_is_off():
    machine = DebateMachine(MachineContext(state=State.DEBATING, judge_enabled=False))
    assert machine.send(Event.ALL_ROUNDS_COMPLETE)[1] is State.COMPLETED


def test_allowed_events_follow_the_state():
    # A debate never started can be started, marked interrupted (recovery) or discarded.
    assert DebateMachine().allowed_events() == [Event.START, Event.PAUSE, Event.STOP]
    debating = set(DebateMachine(MachineContext(state=State.DEBATING)).allowed_events())
    assert {Event.TURN_COMPLETE, Event.PAUSE, Event.STOP, Event.ERROR, Event.COST_WARNING} <= debating
    assert Event.RESUME not in debating and Event.START not in debating
    for state in TERMINAL_STATES:
        assert DebateMachine(MachineContext(state=state)).allowed_events() == []


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
def test_nothing_is_accepted_after_the_end(state: State):
    machine = DebateMachine(MachineContext(state=state))
    for event in Event:
        with pytest.raises(TransitionNotAllowed, match="has ended"):
            machine.send(event)


def test_unknown_event_is_refused_by_name():
    machine = DebateMachine(MachineContext(state=State.DEBATING))
    with pytest.raises(TransitionNotAllowed, match=r"EXPLODE.*debating.*unknown event"):
        machine.send("EXPLODE")
    assert machine.state is State.DEBATING


def test_refusal_message_names_state_and_event():
    with pytest.raises(TransitionNotAllowed) as info:
        DebateMachine(MachineContext(state=State.PAUSED, return_state=State.DEBATING)).send(Event.PAUSE)
    assert str(info.value) == "PAUSE is not allowed while the debate is paused: no such transition"


def test_invalid_parameters_change_nothing():
    machine = DebateMachine(MachineContext(state=State.DEBATING, active_since=T0,
                                           position=Position(phase="opening", round=1)))
    before = machine.context.model_dump()
    with pytest.raises(pydantic.ValidationError):
        machine.send(Event.PAUSE, at=at(10), position={"round": "not a number"})
    assert machine.context.model_dump() == before
    with pytest.raises((TypeError, ValueError)):
        machine.send(Event.ERROR, at=at(10), error=42)
    assert machine.context.model_dump() == before


# --- pause / resume -----------------------------------------------------------------------------


@pytest.mark.parametrize("state", sorted(ACTIVE_STATES))
def test_pause_remembers_exactly_where_it_was_and_resume_returns_there(state: State):
    where = Position(phase="cross-aff", round=2, speaker="negative", turn=3)
    machine = DebateMachine(MachineContext(state=state, active_since=T0))
    machine.send(Event.PAUSE, at=at(1), position=where.model_dump())
    assert machine.state is State.PAUSED
    assert machine.context.return_state is state
    assert machine.context.position == where
    assert machine.allowed_events() == [Event.RESUME, Event.STOP]
    assert machine.send(Event.RESUME, at=at(2)) == (State.PAUSED, state)
    assert machine.context.position == where
    assert machine.context.return_state is None


def test_interrupted_pause_is_flagged_until_resumed():
    machine = DebateMachine(MachineContext(state=State.DEBATING, active_since=T0))
    machine.send(Event.PAUSE, at=at(1), interrupted=True)
    assert machine.context.interrupted
    machine.send(Event.RESUME, at=at(2))
    assert not machine.context.interrupted


# --- errors and retries -------------------------------------------------------------------------


def test_error_keeps_the_failed_step_and_retry_returns_to_it():
    where = Position(phase="rebuttal", round=1, speaker="con", turn=1)
    machine = DebateMachine(MachineContext(state=State.DEBATING, active_since=T0))
    failure = {"kind": "retryable", "reason": "rate_limit", "message": "slow down", "provider": "demo"}
    machine.send(Event.ERROR, at=at(1), error=failure, position=where.model_dump())
    assert machine.state is State.ERROR
    assert machine.context.error == ErrorInfo.model_validate(failure)
    assert machine.context.position == where
    assert machine.context.return_state is State.DEBATING
    machine.send(Event.RETRY, at=at(2))
    assert machine.state is State.DEBATING
    assert machine.context.error is None and machine.context.retries_used == 1
    assert machine.context.position == where


@pytest.mark.parametrize("max_retries", [0, 1, 3, 5])
def test_retries_are_capped_per_debate(max_retries: int):
    machine = DebateMachine(MachineContext(state=State.JUDGING, active_since=T0, max_retries=max_retries))
    for n in range(max_retries):
        machine.send(Event.ERROR, error={"kind": "fatal"})
        machine.send(Event.RETRY)
        assert machine.context.retries_used == n + 1
    machine.send(Event.ERROR, error={"kind": "fatal"})
    before = machine.context.model_dump()
    assert not machine.can(Event.RETRY)
    # "all 3 automatic retries … are used", but "the only automatic retry … is used" (not "all 1 … retries")
    used = every(max_retries, "automatic retry")
    with pytest.raises(TransitionNotAllowed, match=f"{used} of this debate (is|are) used; a person can retry"):
        machine.send(Event.RETRY)
    assert machine.context.model_dump() == before
    # Out of retries, the user can still end the debate (and get a verdict on what exists).
    machine.context.has_turns = True
    assert machine.send(Event.STOP)[1] is State.JUDGING


@pytest.mark.parametrize("max_retries", [0, 1, 3])
def test_a_persons_retry_is_never_refused_and_grants_a_fresh_automatic_budget(max_retries: int):
    machine = DebateMachine(MachineContext(state=State.DEBATING, active_since=T0, max_retries=max_retries))
    for _ in range(max_retries):
        machine.send(Event.ERROR, error={"kind": "fatal"})
        machine.send(Event.RETRY)
    machine.send(Event.ERROR, error={"kind": "fatal", "message": "bad key"})
    assert not machine.can(Event.RETRY) and machine.can(Event.RETRY, manual=True)
    assert machine.send(Event.RETRY, manual=True) == (State.ERROR, State.DEBATING)
    assert machine.context.retries_used == 0 and machine.context.error is None
    if max_retries:  # the fresh budget is there for automatic retries again
        machine.send(Event.ERROR, error={"kind": "fatal"})
        assert machine.can(Event.RETRY)


def test_default_is_three_retries():
    assert MachineContext().max_retries == 3


# --- stopping -----------------------------------------------------------------------------------


STOPPABLE = sorted((ACTIVE_STATES | WAITING_STATES) - {State.JUDGING})


@pytest.mark.parametrize("state", STOPPABLE)
def test_stop_goes_to_the_judge_when_there_is_something_to_judge(state: State):
    machine = DebateMachine(MachineContext(state=state, has_turns=True, return_state=State.DEBATING,
                                           interrupted=state is State.PAUSED))
    assert machine.send(Event.STOP, reason="enough")[1] is State.JUDGING
    assert machine.context.stopping and machine.context.stop_reason == "enough"
    assert machine.context.return_state is None and not machine.context.interrupted
    assert machine.send(Event.VERDICT_READY)[1] is State.STOPPED


@pytest.mark.parametrize("state", STOPPABLE)
@pytest.mark.parametrize("why", ["user chose no verdict", "no turns yet", "judge disabled"])
def test_stop_ends_at_once_without_a_verdict(state: State, why: str):
    ctx = MachineContext(state=state, has_turns=why != "no turns yet", judge_enabled=why != "judge disabled",
                         return_state=State.DEBATING)
    machine = DebateMachine(ctx)
    assert machine.send(Event.STOP, verdict=why != "user chose no verdict")[1] is State.STOPPED
    assert machine.context.stop_reason == "stopped by user"


def test_stop_while_judging_still_gets_the_verdict_unless_declined():
    machine = DebateMachine(MachineContext(state=State.JUDGING, has_turns=True, stopping=True,
                                           stop_reason="cost limit"))
    assert machine.send(Event.STOP)[1] is State.JUDGING
    assert machine.context.stop_reason == "cost limit"  # the first reason is the one that ended it
    assert machine.send(Event.STOP, verdict=False)[1] is State.STOPPED


# --- timing -------------------------------------------------------------------------------------


def _pos(phase: str, speaker: str, turn: int) -> dict[str, Any]:
    return Position(phase=phase, round=1, speaker=speaker, turn=turn).model_dump()


# The events a runner logs for a short debate (with a pause and an error), at explicit times.
TIMELINE: list[tuple[float, Event, dict[str, Any]]] = [
    (0, Event.START, {}),
    (1, Event.INIT_COMPLETE, {"position": {"phase": "opening", "round": 1}}),
    (5, Event.TURN_COMPLETE, {"position": _pos("opening", "pro", 0)}),
    (7, Event.PAUSE, {"position": _pos("opening", "con", 1)}),  # cut the con opening
    (107, Event.RESUME, {}),
    (110, Event.TURN_COMPLETE, {"position": _pos("opening", "con", 1)}),
    (110, Event.PHASE_COMPLETE, {"phase": "opening", "round": 1}),
    (114, Event.TURN_COMPLETE, {"position": _pos("rebuttal", "pro", 0)}),
    (120, Event.ERROR, {"error": {"kind": "retryable"}, "position": _pos("rebuttal", "con", 1)}),
    (1000, Event.RETRY, {}),
    (1003, Event.TURN_COMPLETE, {"position": _pos("rebuttal", "con", 1)}),
    (1003, Event.ALL_ROUNDS_COMPLETE, {}),
    (1010, Event.VERDICT_READY, {}),
]


def test_elapsed_time_and_phase_durations_exclude_paused_time():
    machine = DebateMachine(MachineContext())
    checks = {
        7: lambda: (machine.elapsed(now=at(7)), machine.elapsed(now=at(500))) == pytest.approx((7, 7)),
        110: lambda: machine.elapsed(now=at(116)) == pytest.approx(1 + 9 + 6),
        120: lambda: machine.elapsed(now=at(1000)) == pytest.approx(20),  # waiting on an error isn't debating
    }
    for seconds, event, params in TIMELINE:
        if event is Event.TURN_COMPLETE or event is Event.PAUSE:  # the runner notes who it asks next
            machine.note_position(Position.model_validate(params["position"]), at=at(seconds - 0.5))
            assert machine.context.position.speaker == params["position"]["speaker"]
        machine.send(event, at=at(seconds), **params)
        if seconds in checks and event is not Event.PHASE_COMPLETE:
            assert checks[seconds](), seconds
    assert machine.state is State.COMPLETED
    assert machine.elapsed(now=at(9999)) == pytest.approx(30)
    assert machine.context.phase_durations == pytest.approx(
        {"initializing": 1, "opening": 9, "rebuttal": 13, "judging": 7})
    assert sum(machine.context.phase_durations.values()) == pytest.approx(machine.elapsed())


def test_timing_depends_only_on_the_logged_events():
    """Noting the current speaker does not move the clock, so a machine rebuilt from the log
    (which has no record of those notes) has exactly the live machine's times."""
    live, rebuilt = DebateMachine(), DebateMachine()
    for seconds, event, params in TIMELINE:
        if "position" in params and event is not Event.INIT_COMPLETE:
            before = live.context.model_dump(exclude={"position"})
            live.note_position(Position(phase="elsewhere", speaker="x"), at=at(seconds - 0.25))
            assert live.context.model_dump(exclude={"position"}) == before
            assert live.context.position.phase == "elsewhere"
        live.send(event, at=at(seconds), **params)
        rebuilt.send(event, at=at(seconds), **params)
    assert live.context.model_dump() == rebuilt.context.model_dump()
    assert "elsewhere" not in live.context.phase_durations


# --- the diagram --------------------------------------------------------------------------------


def _edge(t: Transition) -> str:
    target = "debating" if t.target == RETURN else State(t.target).value
    label = t.event.value + (" (back to where it was)" if t.target == RETURN else "")
    label += f" [{t.guard}]" if t.guard else ""
    return f"    {t.source.value} --> {target}: {label}"


def test_mermaid_draws_every_declared_transition():
    lines = to_mermaid().splitlines()
    assert lines[0] == "stateDiagram-v2"
    assert "    [*] --> idle" in lines
    for t in TRANSITIONS:
        assert _edge(t) in lines, t
    drawn = [line for line in lines if " --> " in line and "[*]" not in line]
    assert len(drawn) == len({_edge(t) for t in TRANSITIONS})  # nothing drawn that is not declared
    assert "classDef" not in "\n".join(lines)


@pytest.mark.parametrize("format_id", ["classic", "six-phase", "oxford"])
def test_mermaid_draws_the_phases_inside_debating(format_id: str):
    phases = [(p.id, p.title) for p in FORMATS[format_id].phases]
    text = to_mermaid(phases=phases)
    lines = text.splitlines()
    assert "    state debating {" in lines
    for i, (_, title) in enumerate(phases):
        assert f"        phase_{i}: {title.replace(':', ' -')}" in lines
    for i in range(len(phases) - 1):
        assert f"        phase_{i} --> phase_{i + 1}: PHASE_COMPLETE" in lines
    assert "        [*] --> phase_0" in lines and f"        phase_{len(phases) - 1} --> [*]" in lines
    for t in TRANSITIONS:  # per-turn self-loops give way to the phase picture; everything else stays
        if not (t.event is Event.TURN_COMPLETE and t.source.value == t.target):
            assert _edge(t) in lines, t


@pytest.mark.parametrize("state", [State.PAUSED, State.JUDGING, "debating"])
def test_mermaid_highlights_the_current_state(state: State | str):
    lines = to_mermaid(highlight=state).splitlines()
    assert any(line.strip().startswith("classDef current ") for line in lines)
    assert lines[-1] == f"    class {State(state).value} current"


# --- a human seat ---------------------------------------------------------------------------------


def _waiting_for_a_person() -> DebateMachine:
    machine = DebateMachine(MachineContext(state=State.DEBATING, human_seat=True))
    machine.send(Event.TURN_DUE)
    return machine


def test_a_human_seat_waits_and_only_a_debate_with_one_may() -> None:
    assert not DebateMachine(MachineContext(state=State.DEBATING)).can(Event.TURN_DUE)
    machine = _waiting_for_a_person()
    assert machine.state is State.AWAITING_TURN and State.AWAITING_TURN in WAITING_STATES
    assert set(machine.allowed_events()) == {Event.TURN_SENT, Event.TURN_TIMEOUT, Event.PAUSE, Event.STOP}
    machine.send(Event.TURN_SENT)
    assert machine.state is State.DEBATING and machine.context.has_turns


def test_a_pause_while_waiting_comes_back_to_waiting_and_a_stop_ends_it() -> None:
    machine = _waiting_for_a_person()
    machine.send(Event.PAUSE)
    assert machine.state is State.PAUSED and not machine.can(Event.TURN_SENT)
    machine.send(Event.RESUME)
    assert machine.state is State.AWAITING_TURN
    machine.send(Event.TURN_TIMEOUT)
    assert machine.state is State.DEBATING and machine.context.has_turns
    machine.send(Event.TURN_DUE)
    machine.send(Event.STOP, verdict=False)
    assert machine.state is State.STOPPED


def test_the_diagram_shows_the_wait_for_a_person() -> None:
    text = to_mermaid(compact=True)
    assert "debating --> awaiting_turn: TURN_DUE [has_human_seat]" in text
    assert "awaiting_turn --> debating: TURN_SENT" in text
