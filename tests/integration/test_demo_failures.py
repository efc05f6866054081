"""The demo provider fails on request at a chosen turn (ROSTRUM_DEMO_FAIL / `failures`), so the
engine's recovery can be seen offline: retried and recovered, or error then RETRY."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig, Timeouts
from webapp.providers.demo import DemoProvider, OneProvider, parse_failures


def test_failure_spec_parsing() -> None:
    assert parse_failures("3:rate_limit, 5:cut,7:timeout!,x:cut,4:nonsense") == {
        3: "rate_limit", 5: "cut", 7: "timeout!"}


@pytest.mark.parametrize("kind", ["rate_limit", "cut", "timeout", "server"])
async def test_a_one_off_failure_is_retried_and_the_debate_completes(tmp_path: Path, kind: str) -> None:
    provider = DemoProvider("demo-instant", speed=0, failures={3: kind})
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider), backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic="Is a hot dog a sandwich?", format="oxford", rounds=1,
                                                  timeouts=Timeouts(first_token=0.2)))
        assert await session.join() is State.COMPLETED
        state = session.state
        third = state.turns[2]
        assert third.attempt == 2  # the failed attempt was discarded and the turn redone once
        assert [n.turn for n in state.notes if n.type == "retry"] == [third.key]
        assert all(t.attempt == 1 for i, t in enumerate(state.turns) if i != 2)
    finally:
        await engine.close()


async def test_a_persistent_fatal_failure_errors_then_retry_needs_the_cause_fixed(tmp_path: Path) -> None:
    provider = DemoProvider("demo-instant", speed=0, failures={2: "auth!"})
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(provider), backoff_base=0.001)
    try:
        session = await engine.start(DebateConfig(topic="Is a hot dog a sandwich?", format="oxford", rounds=1))
        assert await session.join() is State.ERROR
        state = session.state
        assert len(state.turns) == 1 and state.machine.context.error.message == "simulated invalid API key"
        provider.failures.clear()  # the user fixed the key
        await session.retry()
        assert await session.join() is State.COMPLETED
        assert len(session.state.turns) == 4
        assert session.state.machine.context.retries_used == 1
    finally:
        await engine.close()
