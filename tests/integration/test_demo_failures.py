"""The demo provider fails on request at a chosen turn (ROSTRUM_DEMO_FAIL / `failures`), so the
engine's recovery can be seen offline: retried and recovered, or error then RETRY."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig, Timeouts
from webapp.providers.demo import DemoProvider, OneProvider, parse_failures


def test_failure_spec_parsing() -> None:
    assert parse_failures("3:rate_limit, 5:cut,7:timeout!,x:cut,4:nonsense") == {
        3: "rate_limit", 5: "cut", 7: "timeout!"}


@asynccontextmanager
async def demo_engine(tmp_path: Path, failures: dict[int, str]) -> AsyncIterator[tuple[Engine, DemoProvider]]:
    """An engine whose every speaker and judge is one instant demo model failing as `failures` says."""
    provider = DemoProvider("demo-instant", speed=0, failures=failures)
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider), backoff_base=0.001)
    try:
        yield engine, provider
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", ["rate_limit", "cut", "timeout", "stall", "server"])
async def test_a_one_off_failure_is_retried_and_the_debate_completes(tmp_path: Path, kind: str) -> None:
    async with demo_engine(tmp_path, {3: kind}) as (engine, _):
        # a stalled turn ends at the turn timeout (an instant turn takes milliseconds)
        timeouts = Timeouts(first_token=0.2, turn=1.5)
        for topic in ("Is a hot dog a sandwich?", "Is cereal a soup?"):  # every debate meets the failure once
            session = await engine.start(DebateConfig(topic=topic, format="oxford", rounds=1, timeouts=timeouts))
            assert await session.join() is State.COMPLETED
            state = session.state
            third = state.turns[2]
            assert third.attempt == 2  # the failed attempt was discarded and the turn redone once
            assert [n.turn for n in state.notes if n.type == "retry"] == [third.key]
            assert all(t.attempt == 1 for i, t in enumerate(state.turns) if i != 2)


async def test_a_stalled_turn_holds_the_debate_until_a_pause_and_resume_redo_it(tmp_path: Path) -> None:
    async with demo_engine(tmp_path, {1: "stall"}) as (engine, _):
        session = await engine.start(DebateConfig(topic="Is a hot dog a sandwich?", format="oxford", rounds=1))
        changed = asyncio.Event()
        unsubscribe = session.subscribe(lambda _: changed.set())
        try:
            while not any(turn.parts for turn in session.live_turns.values()):  # half the turn came, then nothing
                changed.clear()
                await asyncio.wait_for(changed.wait(), 10)
        finally:
            unsubscribe()
        assert session.status is State.DEBATING and not session.state.turns
        await session.pause()
        await session.resume()
        assert await session.join() is State.COMPLETED
        assert [t.attempt for t in session.state.turns] == [1, 1, 1, 1]  # a paused attempt is not a retry


async def test_a_persistent_fatal_failure_errors_then_retry_needs_the_cause_fixed(tmp_path: Path) -> None:
    async with demo_engine(tmp_path, {2: "auth!"}) as (engine, provider):
        session = await engine.start(DebateConfig(topic="Is a hot dog a sandwich?", format="oxford", rounds=1))
        assert await session.join() is State.ERROR
        state = session.state
        assert len(state.turns) == 1 and state.machine.context.error.message == "simulated invalid API key"
        provider.failures.clear()  # the user fixed the key
        await session.retry()
        assert await session.join() is State.COMPLETED
        assert len(session.state.turns) == 4
        assert session.state.machine.context.retries_used == 1
