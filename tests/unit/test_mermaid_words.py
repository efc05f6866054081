"""The state diagram for people (`to_mermaid(..., human=True)`): the same declaration, in words, with
the format's phase titles; the developer diagram (README, `python -m webapp diagram`) is unchanged."""

from __future__ import annotations

import pytest

from webapp.engine.formats import FORMATS
from webapp.engine.machine import Event, State
from webapp.engine.mermaid import HUMAN_EVENTS, HUMAN_STATES, to_mermaid


def human(format_id: str, **kwargs: object) -> str:
    fmt = FORMATS[format_id]
    phases = [(p.id, p.title) for p in fmt.phases]
    repeat = {p.id for p in fmt.phases if p.scope == "round"}
    return to_mermaid(phases, human=True, repeat=repeat, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("format_id", sorted(FORMATS))
def test_every_state_and_phase_is_named_in_words_and_no_engine_event_is_shown(format_id: str) -> None:
    text = human(format_id)
    for value, words in HUMAN_STATES.items():
        assert f'    state "{words}" as {value}' in text
    for phase in FORMATS[format_id].phases:
        assert f'"{phase.title.replace(":", " -")}"' in text
    edges = [line for line in text.splitlines() if "-->" in line]
    for event in Event:
        assert not any(line.endswith(f": {event.value}") or f": {event.value} " in line for line in edges)
    assert len(edges) == len(set(edges))
    assert not any(line.strip().startswith("debating --> debating") for line in edges)  # the phases show it


def test_every_kind_of_move_is_still_drawn() -> None:
    text = human("classic")
    for event in (Event.START, Event.PAUSE, Event.RESUME, Event.STOP, Event.ERROR, Event.RETRY,
                  Event.COST_WARNING, Event.ACKNOWLEDGE_WARNING, Event.VERDICT_READY, Event.ALL_ROUNDS_COMPLETE):
        assert f": {HUMAN_EVENTS[event]}" in text, event


def test_the_round_block_loops_and_the_current_phase_is_highlighted() -> None:
    text = human("collaborative", highlight=State.DEBATING, current_phase="critique")
    assert "        phase_2 --> phase_0: next round" in text
    assert text.rstrip().endswith("class phase_1 current")
    assert "    class debating current" in text
    assert "next round" not in human("structured")  # no round block
    paused = human("collaborative", highlight=State.PAUSED, current_phase="critique")
    assert "class phase_1 current" not in paused  # only while a phase runs


def test_states_a_debate_never_visits_are_left_out_with_their_moves() -> None:
    text = human("oxford", omit={State.CLARIFYING, State.AWAITING_CLARIFICATION, State.PREPARATION})
    for state in ("clarifying", "awaiting_clarification", "preparation"):
        assert f" {state}" not in text and f"{state} " not in text
    assert "    initializing --> debating: ready" in text
    assert "(with questions)" not in text and "(with preparation)" not in text
    assert "    active --> paused: pause" in text  # the running states are still one group


def test_the_developer_diagram_keeps_engine_names() -> None:
    assert "PHASE_COMPLETE" in to_mermaid([("a", "A"), ("b", "B")])
    assert "state \"Not started\"" not in to_mermaid(compact=True)
