"""`DebateState`'s read-only view of the route (`skipped_states`, `return_state`): what the stepper and the
diagram read instead of the machine's context."""

from __future__ import annotations

from webapp.engine.machine import Event, State
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, JudgeConfig, Participant, utcnow


def state_of(judge: bool, human: bool = False) -> DebateState:
    people = [Participant(name="ada", position="for"),
              Participant(name="bob", position="against", provider="human" if human else "demo")]
    config = DebateConfig(topic="Ban cars downtown?", format="free-form", participants=people,
                          judge=JudgeConfig(enabled=judge), clarification=False)
    return DebateState("d1", config, utcnow())


def test_the_states_a_configuration_never_enters_are_skipped() -> None:
    unjudged, judged = state_of(judge=False), state_of(judge=True, human=True)
    skipped = {State.JUDGING, State.AWAITING_TURN, State.CLARIFYING, State.AWAITING_CLARIFICATION}
    assert skipped <= unjudged.skipped_states
    assert State.JUDGING not in judged.skipped_states
    assert State.AWAITING_TURN not in judged.skipped_states
    assert State.DEBATING not in unjudged.skipped_states


def test_a_paused_debate_returns_to_the_state_it_left() -> None:
    state = state_of(judge=True)
    assert state.return_state is None
    state.machine.send(Event.START)
    state.machine.send(Event.INIT_COMPLETE)
    state.machine.send(Event.PAUSE)
    assert state.status is State.PAUSED
    assert state.return_state is State.DEBATING
