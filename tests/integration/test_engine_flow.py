"""Whole debates through the engine with the demo provider: the log rebuilds the live state, events
are committed before they are broadcast, and pause / resume, errors / retry, stop and the cost
warning behave as the state machine says."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from webapp.engine.engine import Engine
from webapp.engine.events import TurnPayload
from webapp.engine.machine import TERMINAL_STATES, State, TransitionNotAllowed
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import plan
from webapp.engine.state import DebateState
from webapp.engine.stream import LiveEvent, LiveTurnAborted, LiveTurnStarted
from webapp.models import DebateConfig, EventKind
from webapp.providers.demo import DemoProvider, OneProvider, RecordingDemoProvider
from webapp.providers.registry import ProviderCache
from webapp.ui.components.failure import explain_stop

TOPIC = "Cities should ban private cars from their centres"


class Source(OneProvider):
    """One shared instant demo model; `failures` injects provider errors at turn numbers."""

    def __init__(self, failures: dict[int, str] | None = None) -> None:
        super().__init__(RecordingDemoProvider("demo-instant", speed=0, failures=failures or {}))

    def asked(self, purpose: str = "turn") -> list[str]:
        return [r.context.get("turn_key", "") for r in self.provider.received if r.purpose == purpose]


@pytest.fixture
async def open_engine(tmp_path: Path):
    """Opens engines (closed at the end of the test) on one database file."""
    engines: list[Engine] = []

    async def opener(source: Source | None = None) -> Engine:
        engine = await Engine.open(tmp_path / "db.sqlite3", providers=source or Source(), backoff_base=0.01)
        engines.append(engine)
        return engine

    yield opener
    for engine in engines:
        await engine.close()


def transcript(state: DebateState) -> list[tuple[str, str]]:
    """(key, text) in plan order: parallel turns may finish in either order."""
    rank = {slot.key: i for i, step in enumerate(plan(state.format, state.config, rounds=50)) for slot in step.turns}
    return sorted(((t.key, t.text) for t in state.turns), key=lambda kt: (rank[kt[0]], kt[0]))


def assert_same_state(live: DebateState, rebuilt: DebateState) -> None:
    assert [t.model_dump() for t in rebuilt.turns] == [t.model_dump() for t in live.turns]
    assert rebuilt.status is live.status
    assert rebuilt.transitions == live.transitions
    assert rebuilt.machine.context.model_dump() == live.machine.context.model_dump()
    assert rebuilt.ledger.total_usd == pytest.approx(live.ledger.total_usd)
    assert dict(rebuilt.ledger.by_model) == pytest.approx(dict(live.ledger.by_model))
    assert dict(rebuilt.ledger.by_participant) == pytest.approx(dict(live.ledger.by_participant))
    assert dict(rebuilt.ledger.by_round) == pytest.approx(dict(live.ledger.by_round))
    assert rebuilt.verdict == live.verdict
    assert (rebuilt.warnings, rebuilt.errors, rebuilt.notes) == (live.warnings, live.errors, live.notes)
    assert rebuilt.last_seq == live.last_seq
    assert rebuilt.summary() == live.summary()


class Once:
    """A listener that queues `command()` as a task the first time `when(message)` holds."""

    def __init__(self, when: Callable[[Any], bool], command: Callable[[], Awaitable[None]]) -> None:
        self.when, self.command = when, command
        self.tasks: list[asyncio.Task[None]] = []

    def __call__(self, message: Any) -> None:
        if not self.tasks and self.when(message):
            self.tasks.append(asyncio.get_running_loop().create_task(self.command()))

    async def settle(self, session: DebateSession) -> State:
        """Wait for the runner and the queued command; returns the status after both."""
        await session.join()
        assert self.tasks, "the trigger never fired"
        await self.tasks[0]
        return await session.join()


def is_turn(message: Any) -> bool:
    return isinstance(message, LiveEvent) and message.event.kind is EventKind.TURN


def enters(state: State) -> Callable[[Any], bool]:
    return lambda m: isinstance(m, LiveEvent) and m.event.data.get("to") == state.value


async def drive(session: DebateSession, pending: list[asyncio.Task[None]]) -> int:
    """Run to the end, resuming whenever a command task (queued by a listener) paused it."""
    resumed = 0
    while True:
        await session.join()
        for task in list(pending):  # tasks stay listed, so a trigger that fired never fires again
            await task
        if session.state.status is State.PAUSED:
            resumed += 1
            await session.resume()
            continue
        if session.state.status in TERMINAL_STATES:
            return resumed
        if not session.running:
            raise AssertionError(f"debate waits in {session.state.status}")


# --- the log is the truth -----------------------------------------------------------------------


async def test_an_empty_provider_cache_given_to_the_engine_is_the_one_it_uses(tmp_path: Path) -> None:
    cache = ProviderCache()
    assert len(cache) == 0  # empty, so falsy: `providers or default` replaced it
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=cache)
    try:
        assert engine.providers is cache
    finally:
        await engine.close()


@pytest.mark.parametrize("format_id", ["classic", "structured", "free-form"])
async def test_state_rebuilt_from_the_log_equals_the_live_state(open_engine, format_id: str):
    engine = await open_engine()
    session = await engine.start(DebateConfig(topic=TOPIC, format=format_id, budget={"warn_at": 100}))
    assert await session.join() is State.COMPLETED
    live = session.state
    events = await engine.events(session.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert_same_state(live, DebateState.from_events(events))
    # A new process (a second engine on the same file) rebuilds the same debate.
    other = await open_engine()
    assert_same_state(live, (await other.session(session.id)).state)
    # The listing projection agrees with the fold.
    row = await engine.store.get_row(session.id)
    assert (row.status, row.turn_count, row.phase) == ("completed", len(live.turns), live.summary()["phase"])
    assert row.cost_usd == pytest.approx(live.ledger.total_usd, abs=1e-6) and row.cost_usd > 0
    assert live.transitions[0].event == "START" and live.transitions[-1].to == "completed"


async def test_every_event_is_committed_before_it_is_broadcast(open_engine, tmp_path: Path):
    engine = await open_engine()
    reader = sqlite3.connect(tmp_path / "db.sqlite3")
    seen: list[tuple[int, bool]] = []

    def listener(message: Any) -> None:
        if isinstance(message, LiveEvent):
            row = reader.execute("SELECT kind FROM events WHERE debate_id = ? AND seq = ?",
                                 (message.debate_id, message.event.seq)).fetchone()
            seen.append((message.event.seq, row is not None and row[0] == message.event.kind.value))

    engine.subscribe_all(listener)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
        await session.join()
    finally:
        reader.close()
    assert len(seen) == len(await engine.events(session.id)) - 1  # all but CREATED are broadcast
    assert all(ok for _, ok in seen)
    assert [seq for seq, _ in seen] == list(range(2, len(seen) + 2))  # in order, none missed


async def test_a_finished_turn_is_never_requested_again(open_engine):
    source = Source()
    engine = await open_engine(source)
    session = await engine.start(DebateConfig(topic=TOPIC, format="classic"))
    await session.join()
    asked = source.asked()
    assert len(asked) == len(set(asked)) == len(session.state.turns)
    # Replaying a stored turn through the session stores nothing.
    turn = session.state.turns[0]
    before = len(await engine.events(session.id))
    assert await session._commit(TurnPayload(turn=turn), idem_key=turn.key) is None
    assert len(await engine.events(session.id)) == before


# --- pause / resume -----------------------------------------------------------------------------


async def test_pause_at_the_start_of_every_phase_then_resume_gives_the_same_debate(open_engine):
    engine = await open_engine()
    config = DebateConfig(topic=TOPIC, format="classic", seed=7)
    baseline = await engine.start(config)
    await baseline.join()

    session = await engine.start(config)
    pending: list[asyncio.Task[None]] = []
    started: list[LiveTurnStarted] = []
    paused_at: dict[str, LiveTurnStarted | None] = {}  # phase (or "judging") -> the turn it cut
    aborted: list[str] = []

    def listener(message: Any) -> None:
        if isinstance(message, LiveTurnAborted):
            aborted.append(message.key)
        if isinstance(message, LiveEvent) and message.event.data.get("to") == "judging" and "judging" not in paused_at:
            paused_at["judging"] = None
            pending.append(asyncio.get_running_loop().create_task(session.pause()))
        if not isinstance(message, LiveTurnStarted):
            return
        started.append(message)
        if message.phase not in paused_at:
            paused_at[message.phase] = message
            pending.append(asyncio.get_running_loop().create_task(pause_and_check(message)))

    async def pause_and_check(message: LiveTurnStarted) -> None:
        await session.pause()
        state = session.state
        position = state.machine.context.position
        assert state.status is State.PAUSED
        assert (position.phase, position.round) == (message.phase, message.round)
        if state.format.phase(message.phase).parallel:  # every speaker of the step was asked at once
            speakers = {s.speaker for step in plan(state.format, state.config) for s in step.turns
                        if step.phase == message.phase}
            assert position.speaker in speakers
        else:
            assert (position.speaker, position.turn) == (message.speaker, int(message.key.rsplit("/", 1)[1]))
        assert message.key not in state.turn_keys  # the turn was cut off: nothing half-kept
        assert session.live == {}

    session.subscribe(listener)
    resumed = await drive(session, pending)

    assert list(paused_at) == [p.id for p in session.state.format.phases] + ["judging"]
    assert resumed == len(paused_at)
    # Resuming continued exactly there: the cut turn was asked again before anything of another phase.
    for message in paused_at.values():
        if message is None:
            continue
        assert message.key in aborted
        i = started.index(message)
        again = next(j for j in range(i + 1, len(started)) if started[j].key == message.key)
        assert all(m.phase == message.phase for m in started[i + 1 : again])
    assert transcript(session.state) == transcript(baseline.state)
    assert session.state.verdict.model_dump(exclude={"ended_because"}) == baseline.state.verdict.model_dump(
        exclude={"ended_because"})
    assert session.state.status is State.COMPLETED
    assert_same_state(session.state, DebateState.from_events(await engine.events(session.id)))


class GatedCon(Source):
    """The con side speaks only when the gate is open (it is, except while the test holds it)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        gate = self.gate

        class Gated(DemoProvider):
            asked: list[Any] = []  # every request, including those cut off while waiting at the gate

            async def stream(self, request):
                self.asked.append(request)
                await gate.wait()
                async for item in super().stream(request):
                    yield item

        self.con = Gated("demo-instant", speed=0, failures={})

    def get(self, spec: Any) -> DemoProvider:
        return self.con if getattr(spec, "position", None) == "con" else self.provider


async def test_pause_inside_a_parallel_phase_keeps_the_phase_parallel(open_engine):
    """Pause after one speaker of a parallel phase finished: the other, asked again after resume,
    still must not see the finished turn (it would not have, uninterrupted)."""
    source = GatedCon()
    engine = await open_engine(source)
    config = DebateConfig(topic=TOPIC, format="structured")
    baseline = await engine.start(config)
    await baseline.join()

    source.gate.clear()  # con's opening waits until pro's is stored and the pause cut it off
    session = await engine.start(config)
    aborted: list[str] = []
    session.subscribe(lambda m: aborted.append(m.key) if isinstance(m, LiveTurnAborted) else None)
    session.subscribe(lambda m: source.gate.set() if enters(State.PAUSED)(m) else None)
    trigger = Once(is_turn, session.pause)
    session.subscribe(trigger)
    assert await drive(session, trigger.tasks) == 1
    pro_opening = next(t.key for t in session.state.turns if t.phase == "opening" and t.speaker == "pro")
    con_opening = next(t.key for t in session.state.turns if t.phase == "opening" and t.speaker == "con")
    assert aborted == [con_opening]  # the pause cut the con opening after the pro opening was stored
    con_requests = [r for r in source.con.asked if r.context.get("turn_key") == con_opening]
    assert len(con_requests) == 3  # baseline, then cut by the pause, then asked again
    assert all(pro_opening not in r.context["seen_turns"] for r in con_requests)
    assert transcript(session.state) == transcript(baseline.state)


async def test_commands_refused_in_the_wrong_state_change_nothing(open_engine):
    engine = await open_engine()
    session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
    await session.join()
    before = len(await engine.events(session.id))
    for command in (session.resume, session.retry, session.acknowledge_warning, session.pause, session.stop):
        with pytest.raises(TransitionNotAllowed, match="completed"):
            await command()
    assert len(await engine.events(session.id)) == before
    assert session.state.status is State.COMPLETED


# --- errors and retries -------------------------------------------------------------------------


async def test_retryable_error_is_retried_automatically(open_engine):
    source = Source(failures={3: "rate_limit"})
    engine = await open_engine(source)
    session = await engine.start(DebateConfig(topic=TOPIC, format="classic"))
    assert await session.join() is State.COMPLETED
    retries = [n for n in session.state.notes if n.type == "retry"]
    assert len(retries) == 1 and retries[0].error.kind == "retryable"
    assert session.state.errors == []
    assert session.state.machine.context.retries_used == 0  # automatic retries don't use the user's


async def test_fatal_error_stops_at_the_failed_step_and_retry_redoes_only_it(open_engine):
    source = Source(failures={3: "auth"})  # turn 3 = the affirmative opening, fails once
    engine = await open_engine(source)
    session = await engine.start(DebateConfig(topic=TOPIC, format="classic"))
    assert await session.join() is State.ERROR
    state = session.state
    ctx = state.machine.context
    assert ctx.error.kind == "fatal" and ctx.error.reason == "auth"
    assert ctx.return_state is State.DEBATING
    assert (ctx.position.phase, ctx.position.speaker) == ("opening", "affirmative")
    assert [t.phase for t in state.turns] == ["preparation", "preparation"]
    assert state.errors and state.errors[0].message == "simulated invalid API key"
    assert not [n for n in state.notes if n.type == "retry"]  # fatal: not retried automatically

    await session.retry()
    assert await session.join() is State.COMPLETED
    asked = source.asked()
    assert asked.count("opening/r1/affirmative/0") == 2  # the failed step, redone once
    assert len(asked) == len(session.state.turns) + 1  # nothing else asked twice
    assert session.state.machine.context.retries_used == 1
    assert_same_state(session.state, DebateState.from_events(await engine.events(session.id)))


async def test_at_most_max_retries_then_stop_still_judges_what_exists(open_engine):
    source = Source(failures={5: "auth!"})  # the affirmative rebuttal fails on every attempt
    engine = await open_engine(source)
    session = await engine.start(DebateConfig(topic=TOPIC, format="classic", max_retries=2))
    assert await session.join() is State.ERROR
    for _ in range(2):
        await session.retry()
        assert await session.join() is State.ERROR
    before = len(await engine.events(session.id))
    with pytest.raises(TransitionNotAllowed, match="all 2 automatic retries"):  # the system has none left
        await session.retry()
    assert len(await engine.events(session.id)) == before
    await session.stop()
    assert await session.join() is State.STOPPED
    verdict = session.state.verdict
    assert verdict is not None and verdict.available
    assert session.state.ended_because == "stopped by user"
    assert [t.phase for t in session.state.turns] == ["preparation"] * 2 + ["opening"] * 2
    verdict_prompt = next(r for r in source.provider.received if r.purpose == "verdict").messages[-1].content
    assert all((t.text[:60] in verdict_prompt) is (t.phase == "opening") for t in session.state.turns)


# --- stopping -----------------------------------------------------------------------------------


@pytest.mark.parametrize("with_verdict", [True, False])
async def test_stop_while_paused(open_engine, with_verdict: bool):
    source = Source()
    engine = await open_engine(source)
    session = await engine.start(DebateConfig(topic=TOPIC, format="oxford"))
    trigger = Once(lambda m: is_turn(m) and len(session.state.turns) == 3, session.pause)
    session.subscribe(trigger)
    assert await trigger.settle(session) is State.PAUSED
    turns = len(session.state.turns)
    await session.stop(verdict=with_verdict)
    assert await session.join() is State.STOPPED
    assert len(session.state.turns) == turns  # nothing more was debated
    assert (session.state.verdict is not None) is with_verdict
    assert bool(source.asked("verdict")) is with_verdict
    assert session.state.ended_because == "stopped by user"


@pytest.mark.parametrize("with_verdict", [True, False])
async def test_stop_during_judging(open_engine, with_verdict: bool):
    engine = await open_engine()
    session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
    judged = len(session.state.turns)
    trigger = Once(enters(State.JUDGING), lambda: session.stop(verdict=with_verdict))
    session.subscribe(trigger)
    assert await trigger.settle(session) is State.STOPPED
    assert session.state.machine.context.stopping
    assert (session.state.verdict is not None and session.state.verdict.available) is with_verdict
    assert len(session.state.turns) > judged
    # Said as where it was: the verdict, not the last phase debated ("Stopped by local at Rebuttal").
    last = session.state.format.phase(session.state.turns[-1].phase).title
    assert explain_stop(session.state) == f"Stopped automatically during the verdict (after {last}, round 1)."


async def test_stop_mid_debate_judges_the_turns_so_far(open_engine):
    source = Source()
    engine = await open_engine(source)
    session = await engine.start(DebateConfig(topic=TOPIC, format="round-limited", rounds=5))
    trigger = Once(lambda m: isinstance(m, LiveTurnStarted) and m.round == 2, session.stop)
    session.subscribe(trigger)
    assert await trigger.settle(session) is State.STOPPED
    state = session.state
    assert [t.round for t in state.turns] == [1, 1]
    assert state.verdict is not None and state.verdict.available
    verdict_prompt = next(r for r in source.provider.received if r.purpose == "verdict").messages[-1].content
    assert all(t.text[:60] in verdict_prompt for t in state.turns)
    assert_same_state(state, DebateState.from_events(await engine.events(session.id)))


# --- cost warning -------------------------------------------------------------------------------


async def test_cost_warning_waits_for_acknowledgement_then_continues(open_engine):
    engine = await open_engine()
    session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", budget={"warn_at": 0.001}))
    assert await session.join() is State.AWAITING_ACK
    turns = len(session.state.turns)
    assert session.state.warnings[0].type == "cost_warning"
    await session.acknowledge_warning()
    assert await session.join() is State.COMPLETED
    assert len(session.state.turns) > turns
    assert [w.type for w in session.state.warnings] == ["cost_warning"]  # warned once
    with contextlib.suppress(TransitionNotAllowed):
        await session.acknowledge_warning()
    assert_same_state(session.state, DebateState.from_events(await engine.events(session.id)))
