"""Issue 9, engine side: failures in parallel phases take their proper path, storage faults never
strand a debate, a never-started debate can be started, a person's retry always runs, cancellation
reaches the caller, a failed write leaves the state as it was, and finished debates are evicted."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.doubles import HeldDemo
from webapp.engine.api import Command
from webapp.engine.engine import Engine
from webapp.engine.machine import Event, State
from webapp.engine.spending import BudgetExceeded
from webapp.engine.state import DebateState
from webapp.engine.stream import LiveEvent, LiveStatus
from webapp.models import DebateConfig, EventKind
from webapp.providers.base import ProviderRequest, StreamItem
from webapp.providers.demo import DemoProvider, OneProvider
from webapp.store import Store, StoreBusy

TOPIC = "Should public libraries lend tools as well as books?"


class FlakyStore:
    """A real store that can be taken down: while `down`, every read and write raises what the store
    raises once its own retries are spent (the database locked by another process). `fail_when`
    takes it down at a chosen append; `on_append` sees each append before it is made."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.down = False
        self.fail_when: Callable[[EventKind, dict[str, Any]], bool] | None = None
        self.on_append: Callable[[EventKind, dict[str, Any], int | None], None] | None = None
        self.refused = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _check(self) -> None:
        if not self.down:
            return
        self.refused += 1
        for wanted, future in list(self._waiters):
            if self.refused >= wanted and not future.done():
                future.set_result(None)
        raise StoreBusy(f"database {self.inner.path} is locked: another process holds the database",
                        self.inner.path)

    async def refusals(self, count: int) -> None:
        """Wait until `count` operations in all have been refused."""
        if self.refused >= count:
            return
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((count, future))
        await asyncio.wait_for(future, 10)

    async def append(self, debate_id: str, kind: EventKind, data: dict[str, Any], **kwargs: Any) -> Any:
        if self.on_append is not None:
            self.on_append(kind, data, kwargs.get("expected_seq"))
        if not self.down and self.fail_when is not None and self.fail_when(kind, data):
            self.down = True
        self._check()
        return await self.inner.append(debate_id, kind, data, **kwargs)

    async def events(self, debate_id: str) -> Any:
        self._check()
        return await self.inner.events(debate_id)

    async def events_after(self, debate_id: str, seq: int) -> Any:
        self._check()
        return await self.inner.events_after(debate_id, seq)


def nth(kind: EventKind, n: int) -> Callable[[EventKind, dict[str, Any]], bool]:
    seen = 0

    def check(event_kind: EventKind, data: dict[str, Any]) -> bool:
        nonlocal seen
        if event_kind is kind:
            seen += 1
            return seen == n
        return False

    return check


def instant() -> OneProvider:
    return OneProvider(DemoProvider("demo-instant", speed=0, failures={}))


@pytest.fixture
async def flaky(tmp_path: Path) -> AsyncIterator[tuple[Engine, FlakyStore]]:
    store = FlakyStore(await Store.open(tmp_path / "db.sqlite3"))
    engine = Engine(store, providers=instant(), backoff_base=0.001, storage_retry_base=0.001)  # type: ignore[arg-type]
    yield engine, store
    store.down = False
    await engine.close()


class Statuses:
    """Collects a session's `LiveStatus` messages; `wait(change)` until one arrives."""

    def __init__(self) -> None:
        self.changes: list[str] = []
        self.arrived: dict[str, asyncio.Event] = {}

    def __call__(self, message: object) -> None:
        if isinstance(message, LiveStatus):
            self.changes.append(message.change)
            self.arrived.setdefault(message.change, asyncio.Event()).set()

    async def wait(self, change: str) -> None:
        await asyncio.wait_for(self.arrived.setdefault(change, asyncio.Event()).wait(), 10)


def keys(state: DebateState) -> list[str]:
    return [t.key for t in state.turns]


# --- failures in parallel phases ------------------------------------------------------------------


async def test_a_provider_error_in_a_parallel_phase_keeps_the_providers_message(tmp_path: Path) -> None:
    # Classic opens with a parallel preparation phase: its second turn fails for good.
    source = OneProvider(DemoProvider("demo-instant", speed=0, failures={2: "auth!"}))
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=source, backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="classic"))
        assert await session.join() is State.ERROR
        assert session.error is not None
        assert session.error.message == "simulated invalid API key"  # not "unhandled errors in a TaskGroup"
        assert session.state.errors[-1].message == "simulated invalid API key"
    finally:
        await engine.close()


class RefusedByBudget(DemoProvider):
    """The con side's preparation call is refused by the budget (as `_call` does when not even a
    minimal answer fits the money left)."""

    def __init__(self) -> None:
        super().__init__("demo-instant", speed=0, failures={})

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        if request.purpose == "turn" and request.context.get("turn_number") == 2:
            raise BudgetExceeded("the next turn could not fit in the remaining $0.0001", 0.0001)
        async for item in super().stream(request):
            yield item


async def test_the_cost_limit_in_a_parallel_phase_stops_the_debate(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(RefusedByBudget()),
                               backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="classic", budget={"cost_limit": 5}))
        assert await session.join() is State.STOPPED
        assert session.state.ended_because == "cost limit"
        assert [w.type for w in session.state.warnings] == ["cost_limit"]
        assert session.state.errors == []  # no "internal error"
    finally:
        await engine.close()


async def test_another_writer_during_a_parallel_phase_stops_this_runner_quietly(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "db.sqlite3"
    held = HeldDemo(lambda r: r.purpose == "turn" and r.context.get("turn_number") == 1, after=2)
    mine = await Engine.open(db, providers=OneProvider(held), backoff_base=0.001)
    other = await Engine.open(db, providers=instant())
    try:
        session = await mine.start(DebateConfig(topic=TOPIC, format="classic"))
        other_turn_done = asyncio.Event()
        session.subscribe(lambda m: isinstance(m, LiveEvent) and m.event.data.get("event") == "TURN_COMPLETE"
                          and other_turn_done.set())
        await held.reached.wait()  # the first preparation turn is mid-stream
        await other_turn_done.wait()  # and the second one is in the log
        # Another process takes the debate over (a web app restarting marks it interrupted).
        assert await other.recover_interrupted() == [session.id]
        with caplog.at_level(logging.WARNING, logger="webapp.engine.runner"):
            held.gate.set()
            await session.join()
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.message for r in caplog.records]
        assert any("changed by another process" in r.message for r in caplog.records)
        assert session.status is State.PAUSED and session.interrupted  # the log as the other writer left it
        assert session.state.last_seq == len(await other.events(session.id))
    finally:
        await mine.close()
        await other.close()


# --- storage faults -----------------------------------------------------------------------------


async def test_storage_failing_mid_run_interrupts_the_debate_until_the_record_is_finished(flaky) -> None:
    engine, store = flaky
    store.fail_when = nth(EventKind.TURN, 2)  # the second finished turn cannot be written
    statuses = Statuses()
    debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1), actor="ada")
    session = await engine.session(debate_id)
    session.subscribe(statuses)
    session.ensure_running()
    await statuses.wait("storage_unavailable")
    # The session survived: interrupted in memory, nothing half-applied, no command accepted meanwhile.
    assert await session.join() is State.DEBATING
    view = session.view()
    assert view.interrupted and not view.running and view.allowed == frozenset()
    assert view.storage_problem is not None and "another process holds the database" in view.storage_problem
    assert "storage is unavailable" in (view.interruption or "")
    assert len(session.state.turns) == 1
    with pytest.raises(Exception, match="storage is unavailable"):
        await session.send(Command.PAUSE, actor="ada")
    await store.refusals(store.refused + 2)  # it keeps trying to finish the record
    store.down = False
    await statuses.wait("storage_restored")
    # The interruption is in the log now, and the debate is like one interrupted by a restart.
    assert session.status is State.PAUSED and session.interrupted and session.storage_problem is None
    assert "storage was unavailable" in (session.view().interruption or "")
    assert Command.RESUME in session.allowed_commands
    last = (await store.inner.events(debate_id))[-1]
    assert last.kind is EventKind.TRANSITION and last.data["event"] == "PAUSE"
    assert last.data["params"]["interrupted"] is True
    [row], _ = await engine.list_debates()
    assert (row.status, row.interrupted) == ("paused", True)
    await session.send(Command.RESUME, actor="ada")
    assert await session.join() is State.COMPLETED
    assert len(keys(session.state)) == len(set(keys(session.state))) == 4
    rebuilt = DebateState.from_events(await engine.events(debate_id))
    assert keys(rebuilt) == keys(session.state) and rebuilt.status is State.COMPLETED


async def test_storage_that_never_comes_back_is_recorded_on_the_next_start(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = FlakyStore(await Store.open(db))
    store.fail_when = nth(EventKind.TURN, 2)
    engine = Engine(store, providers=instant(), backoff_base=0.001, storage_retry_base=0.001)  # type: ignore[arg-type]
    statuses = Statuses()
    debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
    session = await engine.session(debate_id)
    session.subscribe(statuses)
    session.ensure_running()
    await statuses.wait("storage_unavailable")
    await store.refusals(store.refused + 1)
    await engine.close()  # the process ends with storage still down

    engine = await Engine.open(db, providers=instant(), backoff_base=0.001)
    try:
        assert await engine.recover_interrupted() == [debate_id]
        session = await engine.session(debate_id)
        assert session.status is State.PAUSED and session.interrupted
        await session.send(Command.RESUME, actor="ada")
        assert await session.join() is State.COMPLETED
        assert len(session.state.turns) == 4
    finally:
        await engine.close()


async def test_storage_failing_at_the_start_leaves_a_debate_that_can_be_started(flaky) -> None:
    engine, store = flaky
    starts = 0

    def first_start(kind: EventKind, data: dict[str, Any]) -> bool:
        nonlocal starts
        starts += kind is EventKind.TRANSITION and data["event"] == "START"
        return starts == 1 and data.get("event") == "START"

    store.fail_when = first_start
    statuses = Statuses()
    debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1), actor="ada")
    session = await engine.session(debate_id)
    session.subscribe(statuses)
    session.ensure_running()
    await statuses.wait("storage_unavailable")
    assert session.status is State.IDLE and session.interrupted
    store.down = False
    await statuses.wait("storage_restored")
    assert session.status is State.PAUSED and session.interrupted
    await session.send(Command.RESUME, actor="bo")
    assert await session.join() is State.COMPLETED
    starts = [t for t in session.state.transitions if t.event == "START"]
    assert [t.actor for t in starts] == ["ada"]  # started on behalf of its creator


async def test_a_failed_write_leaves_the_state_exactly_as_it_was(flaky) -> None:
    engine, store = flaky
    debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
    session = await engine.session(debate_id)
    await session.send(Command.PAUSE, actor="ada")  # never started: paused before the first word
    before = session.state
    snapshot = (before.status, before.last_seq, before.machine.context.model_dump(), list(before.transitions))
    store.down = True  # reads fail too: nothing can be rebuilt from the log meanwhile
    with pytest.raises(StoreBusy):
        await session.send(Command.RESUME, actor="ada")
    assert session.state is before
    assert (before.status, before.last_seq, before.machine.context.model_dump(), before.transitions) == snapshot
    assert not session.running and session.storage_problem is None  # a person's command: they are told
    store.down = False
    await session.send(Command.RESUME, actor="ada")
    assert await session.join() is State.COMPLETED


async def test_an_event_reaches_the_state_only_after_it_is_written(flaky) -> None:
    engine, store = flaky
    debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
    session = await engine.session(debate_id)
    ahead: list[tuple[EventKind, int, int | None]] = []

    def check(kind: EventKind, data: dict[str, Any], expected_seq: int | None) -> None:
        if expected_seq is not None and session.state.last_seq != expected_seq - 1:
            ahead.append((kind, session.state.last_seq, expected_seq))

    store.on_append = check
    session.ensure_running()
    assert await session.join() is State.COMPLETED
    assert ahead == []


# --- a debate created but never started --------------------------------------------------------


async def test_a_debate_never_started_is_recovered_and_can_be_started(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    engine = await Engine.open(db, providers=instant())
    debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1), actor="ada")
    await engine.close()  # a crash between create and start

    engine = await Engine.open(db, providers=instant(), backoff_base=0.001)
    try:
        assert await engine.recover_interrupted() == [debate_id]
        [row], _ = await engine.list_debates()
        assert (row.status, row.interrupted) == ("paused", True)
        session = await engine.session(debate_id)
        assert session.interrupted and "stopped before it started" in (session.view().interruption or "")
        assert Command.RESUME in session.allowed_commands and Command.STOP in session.allowed_commands
        await session.send(Command.RESUME, actor="bo")
        assert await session.join() is State.COMPLETED
        assert [(t.event, t.actor) for t in session.state.transitions[:3]] == [
            ("PAUSE", "system"), ("RESUME", "bo"), ("START", "ada")]
    finally:
        await engine.close()


async def test_a_debate_that_was_not_started_here_can_be_started_with_resume(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=instant(), backoff_base=0.001)
    try:
        debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1), actor="ada")
        session = await engine.session(debate_id)
        assert session.allowed_commands == {Command.RESUME, Command.PAUSE, Command.STOP}
        result = await session.send(Command.RESUME, actor="bo")
        assert (result.event, result.message) == (Event.START, "Started by bo.")
        assert await session.join() is State.COMPLETED
        assert session.state.transitions[0].actor == "bo"
    finally:
        await engine.close()


# --- retries: the budget is for automatic ones ----------------------------------------------------


async def test_a_persons_retry_runs_the_step_after_the_automatic_retries_are_used(tmp_path: Path) -> None:
    provider = DemoProvider("demo-instant", speed=0, failures={3: "auth!"})
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider), backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1, max_retries=1))
        assert await session.join() is State.ERROR
        await session.retry()  # the system's one automatic retry
        assert await session.join() is State.ERROR
        assert session.state.retries_used == 1 and Command.RETRY in session.allowed_commands
        provider.failures.clear()  # the person fixed the cause
        _, result = await engine.continue_debate(session.id, actor="cli")
        assert result.command is Command.RETRY
        assert "simulated invalid API key" in result.message
        assert "Its 1 automatic retry had been used up" in result.message and "fresh budget of 1" in result.message
        assert session.state.retries_used == 0
        assert await session.join() is State.COMPLETED
        retry = [t for t in session.state.transitions if t.event == "RETRY"][-1]
        assert (retry.actor, retry.params.to_data()) == ("cli", {"manual": True})
        assert DebateState.from_events(await engine.events(session.id)).machine.context.model_dump() == \
            session.state.machine.context.model_dump()
    finally:
        await engine.close()


async def test_the_old_retry_method_with_an_actor_is_a_persons_retry(tmp_path: Path) -> None:
    provider = DemoProvider("demo-instant", speed=0, failures={2: "auth!"})
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider), backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1, max_retries=0))
        assert await session.join() is State.ERROR
        provider.failures.clear()
        await session.retry(actor="ada")  # as the web page's gate calls it
        assert await session.join() is State.COMPLETED
    finally:
        await engine.close()


# --- cancellation reaches the caller ---------------------------------------------------------------


async def test_cancelling_a_join_cancels_the_wait_not_the_debate(tmp_path: Path) -> None:
    held = HeldDemo(lambda r: r.purpose == "turn" and r.context.get("turn_number") == 2)
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(held), backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
        await held.reached.wait()
        waiter = asyncio.ensure_future(asyncio.wait_for(session.join(), 0.3))
        done, _ = await asyncio.wait({waiter}, timeout=5)
        assert waiter in done, "join() swallowed its caller's cancellation"
        with pytest.raises(TimeoutError):
            waiter.result()
        assert session.running  # only the wait ended
        held.gate.set()
        assert await session.join() is State.COMPLETED
    finally:
        held.gate.set()
        await engine.close()


class SlowToStop(DemoProvider):
    """Holds the second turn; once cancelled, it takes until `let_go` to clean up."""

    def __init__(self) -> None:
        super().__init__("demo-instant", speed=0, failures={})
        self.reached, self.cancelled, self.let_go = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamItem]:
        if request.purpose == "turn" and request.context.get("turn_number") == 2 and not self.let_go.is_set():
            self.reached.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                await self.let_go.wait()
                raise
        async for item in super().stream(request):
            yield item


async def test_cancelling_a_pause_while_the_runner_stops_cancels_the_pause(tmp_path: Path) -> None:
    provider = SlowToStop()
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider), backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
        await provider.reached.wait()
        pausing = asyncio.ensure_future(session.pause(actor="ada"))
        await provider.cancelled.wait()  # the runner was told to stop and is still cleaning up
        pausing.cancel()
        done, _ = await asyncio.wait({pausing}, timeout=5)
        assert pausing in done and pausing.cancelled(), "the pause swallowed its caller's cancellation"
        assert session.status is State.DEBATING  # nothing was recorded for the cancelled pause
        assert session.running  # the runner has not finished stopping yet
        provider.let_go.set()
        assert await session.join() is State.DEBATING
        await session.send(Command.PAUSE, actor="ada")
        assert session.status is State.PAUSED
        await session.send(Command.RESUME, actor="ada")
        assert await session.join() is State.COMPLETED
    finally:
        provider.let_go.set()
        await engine.close()


# --- memory: finished debates nobody watches are evicted ---------------------------------------------


async def test_a_finished_debate_nobody_watches_is_evicted_and_loads_again(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=instant(), backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
        assert await session.join() is State.COMPLETED
        debate_id, texts = session.id, [t.text for t in session.state.turns]
        assert debate_id not in engine.sessions
        assert await engine.session(debate_id) is session  # still held here: the same object comes back
        assert debate_id in engine.sessions
        session.subscribe(lambda m: None)()  # the last subscriber leaves: evicted again
        assert debate_id not in engine.sessions
        del session
        gc.collect()
        again = await engine.session(debate_id)  # loaded from the log
        assert [t.text for t in again.state.turns] == texts and again.status is State.COMPLETED
    finally:
        await engine.close()


async def test_a_watched_or_unfinished_debate_stays_loaded(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=instant(), backoff_base=0.001)
    try:
        debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
        session = await engine.session(debate_id)
        unsubscribe = session.subscribe(lambda m: None)
        session.ensure_running()
        assert await session.join() is State.COMPLETED
        assert debate_id in engine.sessions  # someone watches it
        unsubscribe()
        assert debate_id not in engine.sessions
        paused = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
        await (await engine.session(paused)).send(Command.PAUSE, actor="ada")
        assert paused in engine.sessions  # not finished: never evicted
    finally:
        await engine.close()


# --- typed events and the command API -----------------------------------------------------------


async def test_every_event_of_a_real_debate_is_typed_and_stored_as_validated(tmp_path: Path) -> None:
    provider = DemoProvider("demo-instant", speed=0, failures={3: "rate_limit"})
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider), backoff_base=0.001)
    try:
        config = DebateConfig(topic=TOPIC, format="classic", strict=True, budget={"warn_at": 0.0001},
                              judge={"frequency": "round"})
        session = await engine.start(config, actor="ada")
        while (status := await session.join()) is State.AWAITING_ACK:
            await session.send(Command.ACKNOWLEDGE_WARNING, actor="ada")
        assert status is State.COMPLETED
        events = await engine.events(session.id)
        kinds = {e.kind for e in events}
        assert {EventKind.CREATED, EventKind.TRANSITION, EventKind.TURN, EventKind.WARNING, EventKind.NOTE,
                EventKind.VERDICT, EventKind.ROUND_SCORES} <= kinds
        for event in events:
            assert event.payload.to_data() == event.data, event.kind
        retry = next(n for n in session.state.notes if n.type == "retry")  # the page's retry note
        assert retry.turn == session.state.turns[2].key and retry.error.message == "simulated rate limit"
        assert DebateState.from_events(events).notes == session.state.notes  # also after a reload
    finally:
        await engine.close()


async def test_a_malformed_event_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=instant())
    try:
        debate_id = await engine.create(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
        session = await engine.session(debate_id)
        before = session.state
        with pytest.raises(ValueError):  # pydantic's ValidationError
            await session.record_action("share_link_created", "ada", ["not", "a", "mapping"])  # type: ignore[arg-type]
        assert session.state is before and len(await engine.events(debate_id)) == 1
    finally:
        await engine.close()


async def test_commands_are_typed_and_say_what_they_did(tmp_path: Path) -> None:
    held = HeldDemo(lambda r: r.purpose == "turn" and r.context.get("turn_number") == 2)
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(held), backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic=TOPIC, format="oxford", rounds=1))
        await held.reached.wait()
        view = session.view()
        assert (view.status, view.running, view.interrupted) == (State.DEBATING, True, False)
        assert view.allowed == {Command.PAUSE, Command.STOP}
        assert view.position.phase == "opening" and view.position.speaker is not None
        [live] = session.live_turns.values()  # the held turn, streaming
        assert live.speaker == view.position.speaker
        with pytest.raises(TypeError):
            session.live_turns["x"] = live  # type: ignore[index]  # read-only
        with pytest.raises(ValueError):
            await session.send(Command.STOP, actor="ada", verdict=False, colour="red")  # no such argument
        with pytest.raises(ValueError):
            await session.send("explode", actor="ada")
        with pytest.raises(Exception, match="RESUME is not allowed while the debate is debating"):
            await session.send(Command.RESUME, actor="ada")
        paused = await session.send("pause", actor="ada")
        assert (paused.command, paused.event, paused.message) == (Command.PAUSE, Event.PAUSE, "Paused by ada.")
        assert session.allowed_commands == {Command.RESUME, Command.STOP}
        held.gate.set()
        stopped = await session.send(Command.STOP, actor="bo", verdict=False)
        assert stopped.message == "Stopped by bo without a verdict."
        assert session.status is State.STOPPED and session.allowed_commands == frozenset()
        assert [(a.action, a.actor) for a in session.state.actions] == [("pause", "ada"), ("stop", "bo")]
    finally:
        held.gate.set()
        await engine.close()
