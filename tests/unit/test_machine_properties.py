"""Property-based tests: random event sequences against the machine, and random pause points against
a real (demo) debate."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.engine.engine import Engine
from webapp.engine.machine import (
    ACTIVE_STATES,
    RETURN,
    TERMINAL_STATES,
    TRANSITIONS,
    DebateMachine,
    Event,
    MachineContext,
    State,
    TransitionNotAllowed,
)
from webapp.engine.schedule import plan
from webapp.engine.stream import LiveEvent
from webapp.models import DebateConfig, EventKind
from webapp.providers.demo import DemoProvider

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SUSPENDED = {State.PAUSED, State.ERROR, State.AWAITING_ACK}

positions = st.none() | st.fixed_dictionaries({
    "phase": st.sampled_from(["opening", "rebuttal", "closing"]),
    "round": st.integers(1, 5),
    "speaker": st.sampled_from(["pro", "con"]),
    "turn": st.integers(0, 6),
})
steps = st.lists(
    st.tuples(
        st.sampled_from(list(Event)),
        st.floats(0, 100, allow_nan=False),  # seconds since the previous step
        st.booleans(),  # verdict wanted on STOP
        positions,
    ),
    max_size=60,
)
contexts = st.builds(
    MachineContext,
    preparation=st.booleans(),
    clarification=st.booleans(),
    judge_enabled=st.booleans(),
    max_retries=st.integers(0, 4),
)


def _params(event: Event, verdict: bool, position: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"position": position}
    if event is Event.STOP:
        params["verdict"] = verdict
    if event is Event.ERROR:
        params["error"] = {"kind": "retryable" if verdict else "fatal", "message": "boom"}
    return params


@settings(max_examples=200, deadline=None)
@given(contexts, steps)
def test_random_event_sequences_keep_the_machine_consistent(start: MachineContext, sequence):
    machine = DebateMachine(start.model_copy(deep=True))
    now = T0
    accepted: list[tuple[Event, datetime, dict[str, Any]]] = []
    for event, gap, verdict, position in sequence:
        now += timedelta(seconds=gap)
        params = _params(event, verdict, position)
        before = machine.context.model_dump()
        elapsed_before = machine.elapsed(now)
        source = machine.state
        allowed = machine.can(event, **params)
        try:
            got = machine.send(event, at=now, **params)
        except TransitionNotAllowed as exc:
            # A refused event changes nothing at all, and says what was refused where.
            assert not allowed
            assert machine.context.model_dump() == before
            assert exc.state is source and exc.event is event
            continue
        assert allowed
        accepted.append((event, now, params))
        declared = {t.target for t in TRANSITIONS if t.source is source and t.event is event}
        assert got[0] is source
        assert got[1].value in declared or (RETURN in declared and got[1] is before["return_state"])
        ctx = machine.context
        # Suspension remembers an active state to go back to, and only suspension does.
        assert (ctx.return_state is not None) is (ctx.state in SUSPENDED)
        # (idle: a debate never started, marked interrupted, goes back to being started)
        assert ctx.return_state is None or ctx.return_state in ACTIVE_STATES | {State.IDLE}
        assert 0 <= ctx.retries_used <= max(ctx.max_retries, 0)
        assert ctx.state not in TERMINAL_STATES or ctx.active_since is None
        # The clock only moves forward, and the per-phase durations add up to the total.
        assert machine.elapsed(now) >= elapsed_before - 1e-9
        assert sum(ctx.phase_durations.values()) == pytest.approx(ctx.elapsed_s)
        if source in TERMINAL_STATES:
            raise AssertionError("a terminal state accepted an event")

    # The fold: replaying the accepted events on a fresh machine gives the same context.
    replay = DebateMachine(start.model_copy(deep=True))
    for event, when, params in accepted:
        replay.send(event, at=when, **params)
    assert replay.context.model_dump() == machine.context.model_dump()


# --- a real debate, paused at random moments ----------------------------------------------------


class SlowerDemo(DemoProvider):
    """The instant demo model, yielding to the event loop a few times per word: the same words (the
    demo's text depends on the seed and the turn, never on timing), streamed later."""

    async def stream(self, request: Any):
        async for item in super().stream(request):
            for _ in range(3):
                await asyncio.sleep(0)
            yield item


class Source:
    """Instant demo models; the `con` side streams slower, so in a parallel phase one speaker
    finishes while the other is still talking — the moment a pause is most likely to go wrong."""

    def __init__(self) -> None:
        self.fast = DemoProvider("demo-instant", speed=0, failures={})
        self.slow = SlowerDemo("demo-instant", speed=0, failures={})

    def get(self, spec: Any) -> DemoProvider:
        return self.slow if getattr(spec, "position", None) == "con" else self.fast


FORMATS_UNDER_TEST = ["classic", "structured", "oxford", "six-phase"]
_BASELINES: dict[tuple[str, int], tuple[list[tuple[str, str]], Any, tuple[int, int]]] = {}


def _config(format_id: str, seed: int) -> DebateConfig:
    return DebateConfig(topic="Cities should ban private cars from their centres", format=format_id, seed=seed)


def _ordered(state) -> list[tuple[str, str]]:
    """Turns as (key, text) in plan order (parallel turns may finish in either order)."""
    order = {slot.key: i for i, step in enumerate(plan(state.format, state.config)) for slot in step.turns}
    return sorted(((t.key, t.text) for t in state.turns), key=lambda kt: (order[kt[0]], kt[0]))


async def _run(format_id: str, seed: int, pause_at: list[tuple[str, float]] | None,
               baseline: tuple[int, int] = (0, 0)):
    """Run one debate; with `pause_at` — ("message", f): after that fraction of the baseline's
    broadcasts (mostly mid-turn), or ("turn", f): right after that fraction of its turns was
    committed — pause there, and resume. Returns (transcript, verdict, (messages, turns) broadcast,
    pauses that took effect, final status)."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = await Engine.open(Path(tmp) / "db.sqlite3", providers=Source(), backoff_base=0.01)
        try:
            session = await engine.start(_config(format_id, seed))
            triggers = {
                kind: sorted({int(f * baseline[i]) + 1 for k, f in pause_at or [] if k == kind})
                for i, kind in enumerate(("message", "turn"))
            }
            pending: list[asyncio.Task[None]] = []
            counts = {"message": 0, "turn": 0}
            paused = 0

            def listener(message: Any) -> None:
                counts["message"] += 1
                if isinstance(message, LiveEvent) and message.event.kind is EventKind.TURN:
                    counts["turn"] += 1
                for kind, due in triggers.items():
                    if due and counts[kind] == due[0]:
                        due.pop(0)
                        pending.append(asyncio.get_running_loop().create_task(session.pause()))

            session.subscribe(listener)
            while True:
                await session.join()
                while pending:
                    with contextlib.suppress(TransitionNotAllowed):
                        await pending.pop(0)
                status = session.state.status
                if status is State.PAUSED:
                    paused += 1
                    await session.resume()
                    continue
                if status in TERMINAL_STATES:
                    break
                assert status in ACTIVE_STATES and session.running, f"debate stuck in {status}"
            state = session.state
            events = await engine.events(session.id)
            turn_events = [e for e in events if e.kind is EventKind.TURN]
            assert len(turn_events) == len({e.data["turn"]["key"] for e in turn_events})  # none stored twice
            verdict = state.verdict.model_dump(exclude={"ended_because"}) if state.verdict else None
            return _ordered(state), verdict, (counts["message"], counts["turn"]), paused, state.status
        finally:
            await engine.close()


def _baseline(format_id: str, seed: int):
    key = (format_id, seed)
    if key not in _BASELINES:
        transcript, verdict, count, _, status = asyncio.run(_run(format_id, seed, None))
        assert status is State.COMPLETED
        _BASELINES[key] = (transcript, verdict, count)
    return _BASELINES[key]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    format_id=st.sampled_from(FORMATS_UNDER_TEST),
    seed=st.integers(0, 2),
    pause_at=st.lists(st.tuples(st.sampled_from(["message", "turn"]), st.floats(0.0, 0.98, allow_nan=False)),
                      min_size=1, max_size=4),
)
def test_paused_and_resumed_debate_ends_with_the_uninterrupted_transcript(format_id, seed, pause_at):
    transcript, verdict, counts = _baseline(format_id, seed)
    got, got_verdict, _, paused, status = asyncio.run(_run(format_id, seed, pause_at, counts))
    assert status is State.COMPLETED
    assert got == transcript
    assert got_verdict == verdict
    assert paused >= 1  # at least the first pause lands before the debate is over
