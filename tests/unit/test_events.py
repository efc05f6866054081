"""Typed event payloads: one model per kind (and per note / warning type), exhaustive dispatch, and
logs written by older versions still load unchanged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from webapp.engine.events import (
    PAYLOADS,
    ActionPayload,
    CostLimit,
    CreatedPayload,
    RetryNote,
    TransitionPayload,
    TurnPayload,
    parse_payload,
)
from webapp.engine.machine import Event, State
from webapp.engine.params import ErrorInfo, Position
from webapp.engine.records import ActionRecord, TransitionRecord
from webapp.engine.state import HANDLERS, DebateState
from webapp.models import DebateConfig, DebateEvent, EventKind

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
CONFIG = DebateConfig(topic="Should museums be free?", format="oxford", rounds=1).model_dump(mode="json")


def test_every_event_kind_has_a_payload_model_and_a_handler() -> None:
    assert set(PAYLOADS) == set(EventKind)
    assert set(HANDLERS) == set(EventKind)


def _turn(key: str, speaker: str, seconds: int) -> dict[str, Any]:
    return {"key": key, "phase": "opening", "round": 1, "speaker": speaker, "act": "speak", "index": 0,
            "text": f"{speaker} speaks.", "usage": {"input_tokens": 10, "output_tokens": 20},
            "cost_usd": 0.001, "model": "demo", "provider": "demo", "attempt": 1,
            "started_at": (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"),
            "finished_at": (T0 + timedelta(seconds=seconds + 1)).isoformat().replace("+00:00", "Z"), "notes": []}


def _transition(event: str, source: str, target: str, **params: Any) -> dict[str, Any]:
    return {"event": event, "from": source, "to": target, "params": params}


# A log as versions before typed payloads (and before team access) wrote it: no actors anywhere.
OLD_LOG: list[tuple[EventKind, dict[str, Any]]] = [
    (EventKind.CREATED, {"config": CONFIG}),
    (EventKind.TRANSITION, _transition("START", "idle", "initializing")),
    (EventKind.TRANSITION, _transition("INIT_COMPLETE", "initializing", "debating",
                                       position={"phase": "opening", "round": 1, "speaker": None, "turn": 0})),
    (EventKind.NOTE, {"type": "retry", "turn": "opening/r1/pro/0", "attempt": 1, "wait_s": 0.5,
                      "error": {"kind": "retryable", "provider": "demo", "message": "simulated rate limit",
                                "status": 429, "request_id": None, "retry_after": None, "reason": "rate_limit"}}),
    (EventKind.TURN, {"turn": _turn("opening/r1/pro/0", "pro", 1), "cost_source": "simulated"}),
    (EventKind.TRANSITION, _transition("TURN_COMPLETE", "debating", "debating",
                                       position={"phase": "opening", "round": 1, "speaker": "pro", "turn": 0})),
    (EventKind.WARNING, {"type": "cost_warning", "message": "spending reached $0.0010", "spent_usd": 0.001,
                         "warn_at": 0.001}),
    (EventKind.TRANSITION, _transition("COST_WARNING", "debating", "awaiting_acknowledgement")),
    (EventKind.TRANSITION, _transition("ACKNOWLEDGE_WARNING", "awaiting_acknowledgement", "debating")),
    (EventKind.ERROR, {"kind": "fatal", "provider": "demo", "message": "simulated invalid API key", "status": 401,
                       "request_id": None, "retry_after": None, "reason": "auth", "state": "debating",
                       "position": {"phase": "opening", "round": 1, "speaker": "con", "turn": 0}}),
    (EventKind.TRANSITION, _transition("ERROR", "debating", "error", error={"kind": "fatal", "message": "x"})),
    (EventKind.TRANSITION, _transition("RETRY", "error", "debating")),
    (EventKind.TURN, {"turn": _turn("opening/r1/con/0", "con", 5), "cost_source": "simulated"}),
    (EventKind.NOTE, {"type": "on_topic", "turn": "opening/r1/con/0", "round": 1, "flag": None,
                      "calls": [{"model": "demo:demo", "usage": {"input_tokens": 5, "output_tokens": 5},
                                 "cost_usd": 0.0002, "cost_source": "simulated", "purpose": "on_topic",
                                 "participant": "judge"}]}),
    (EventKind.ROUND_DECISION, {"stop": True, "reason": "all 1 planned rounds completed", "cap": True, "round": 1,
                                "calls": []}),
    (EventKind.TRANSITION, _transition("STOP", "debating", "judging", verdict=True, reason="stopped by user")),
    (EventKind.VERDICT, {"verdict": {"winner": "pro", "scores": {"pro": 70, "con": 60}, "reasoning": "close"},
                         "calls": [{"model": "demo:demo", "usage": {"input_tokens": 50, "output_tokens": 40},
                                    "cost_usd": 0.003, "cost_source": "simulated"}]}),
    (EventKind.TRANSITION, _transition("VERDICT_READY", "judging", "stopped")),
]


def _events(log: list[tuple[EventKind, dict[str, Any]]]) -> list[DebateEvent]:
    return [DebateEvent(debate_id="d1", seq=i + 1, kind=kind, at=T0 + timedelta(seconds=i), data=data)
            for i, (kind, data) in enumerate(log)]


def test_a_log_written_before_typed_payloads_loads_and_round_trips_unchanged() -> None:
    events = _events(OLD_LOG)
    for event in events:
        assert event.payload.to_data() == event.data, event.kind  # nothing added, nothing lost
    state = DebateState.from_events(events)
    assert state.status is State.STOPPED and state.created_by == ""
    assert [t.key for t in state.turns] == ["opening/r1/pro/0", "opening/r1/con/0"]
    assert state.actions == []  # every transition was the system's
    assert state.retries_used == 1 and state.cost_warned
    assert [n.type for n in state.notes] == ["retry", "on_topic"]
    assert state.notes[0].error.message == "simulated rate limit"  # retry notes survive a reload
    assert state.ledger.total_usd == pytest.approx(0.001 + 0.001 + 0.0002 + 0.003)
    assert state.verdict is not None and state.verdict.winner == "pro"


def test_the_fold_keeps_typed_records_whose_json_is_what_the_exports_always_had() -> None:
    events = _events(OLD_LOG[:11])  # up to the ERROR transition: the debate is in `error`
    state = DebateState.from_events(events)
    assert state.status is State.ERROR
    assert isinstance(state.error, ErrorInfo) and state.error.message == "x" and state.error.kind == "fatal"
    with pytest.raises(ValidationError):  # frozen: a reader cannot change what the machine remembers
        state.error.message = "changed"  # type: ignore[misc]
    first, entered = state.transitions[1], state.transitions[-1]
    assert isinstance(first, TransitionRecord) and first.event is Event.INIT_COMPLETE
    assert first.params.position == Position(phase="opening", round=1) and first.actor == "system"
    assert entered.from_ is State.DEBATING and entered.to is State.ERROR and entered.at == events[10].at
    assert first.to_data() == {"from": "initializing", "to": "debating", "event": "INIT_COMPLETE",
                               "at": events[2].at.isoformat(), "actor": "system",
                               "params": {"position": {"phase": "opening", "round": 1, "speaker": None, "turn": 0}}}
    log = [*OLD_LOG[:2], (EventKind.TRANSITION, {**_transition("PAUSE", "initializing", "paused", interrupted=False),
                                                 "actor": "bo"})]
    (paused,) = DebateState.from_events(_events(log)).actions
    assert isinstance(paused, ActionRecord) and paused.at == _events(log)[2].at
    assert paused.to_data()["params"] == {"interrupted": False} and (paused.action, paused.actor) == ("pause", "bo")


def test_the_team_access_fields_are_kept() -> None:
    log = [
        (EventKind.CREATED, {"config": CONFIG, "actor": "ada"}),
        (EventKind.TRANSITION, {**_transition("START", "idle", "initializing"), "actor": "ada"}),
        (EventKind.ACTION, {"action": "share_link_created", "actor": "ada", "detail": {"link": "L1"}}),
        (EventKind.TRANSITION, {**_transition("PAUSE", "initializing", "paused", interrupted=False), "actor": "bo"}),
    ]
    events = _events(log)
    assert isinstance(events[0].payload, CreatedPayload) and events[0].payload.actor == "ada"
    assert isinstance(events[2].payload, ActionPayload) and events[2].payload.detail == {"link": "L1"}
    transition = events[3].payload
    assert isinstance(transition, TransitionPayload) and transition.event is Event.PAUSE and transition.actor == "bo"
    state = DebateState.from_events(events)
    assert state.created_by == "ada"
    assert [(a.action, a.actor) for a in state.actions] == [
        ("start", "ada"), ("share_link_created", "ada"), ("pause", "bo")]
    for event in events:
        assert event.payload.to_data() == event.data


def test_payloads_are_typed_by_kind_and_sub_kind() -> None:
    note = parse_payload(EventKind.NOTE, {"type": "retry", "turn": "k", "attempt": 2, "wait_s": 1})
    assert isinstance(note, RetryNote) and note.attempt == 2 and note.wait_s == 1.0
    limit = parse_payload(EventKind.WARNING, {"type": "cost_limit", "message": "no", "judge_runs": True})
    assert isinstance(limit, CostLimit) and limit.judge_runs
    turn = parse_payload(EventKind.TURN, {"turn": _turn("k", "pro", 0)})
    assert isinstance(turn, TurnPayload) and turn.turn.usage.output_tokens == 20
    # An error's own `kind` ("retryable"/"fatal") is a field like any other, not the event kind.
    error = parse_payload(EventKind.ERROR, {"kind": "retryable", "provider": "demo", "message": "slow down"})
    assert error.to_data() == {"kind": "retryable", "provider": "demo", "message": "slow down"}
    # A tag filled in by its default is still written, so the event can be read back.
    assert RetryNote(turn="k").to_data() == {"type": "retry", "turn": "k"}


@pytest.mark.parametrize(("kind", "data"), [
    (EventKind.NOTE, {"type": "retry"}),  # no turn
    (EventKind.NOTE, {"type": "no-such-note", "turn": "k"}),  # an unknown sub-kind
    (EventKind.WARNING, {"type": "cost_warning"}),  # no message
    (EventKind.TURN, {"turn": {"key": "k"}}),  # not a turn
    (EventKind.TRANSITION, {"event": "EXPLODE", "from": "idle", "to": "idle"}),
    (EventKind.ACTION, {"action": "x", "detail": ["not", "a", "mapping"]}),
])
def test_malformed_payloads_are_refused(kind: EventKind, data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_payload(kind, data)


def test_an_unknown_event_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        parse_payload("gossip", {})


def _snapshot(state: DebateState) -> Any:
    return (state.machine.context.model_dump(), [t.model_dump() for t in state.turns], sorted(state.turn_keys),
            repr(state.transitions), repr(state.actions), repr(state.warnings), repr(state.errors),
            repr(state.notes), repr(state.round_decisions), repr(state.round_scores), repr(state.clarifications),
            repr(state.answers), repr(state.summaries), sorted(state.phase_marks), sorted(state.round_marks),
            state.ledger.to_dict(), state.cost_warned, state.last_seq, state.verdict, state.created_by)


def test_folding_into_a_fork_leaves_the_original_untouched() -> None:
    events = _events(OLD_LOG)
    state = DebateState.from_events(events[:1])
    for event in events[1:]:
        before = _snapshot(state)
        fork = state.fork()
        fork.apply(event)
        assert _snapshot(state) == before, event.kind  # nothing leaked into the state forked from
        assert fork.last_seq == event.seq
        state.adopt(fork)  # the swap, once the event is committed
        assert _snapshot(state) == _snapshot(fork)
    assert _snapshot(state) == _snapshot(DebateState.from_events(events))
