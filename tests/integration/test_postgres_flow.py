"""Whole demo debates through the engine on the PostgreSQL store (`ROSTRUM_DB=postgresql://…`): the log
rebuilds the live state in another engine (another process), a pause and resume gives a completed debate,
and an engine that did not see another's write is refused rather than forking the log."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tests.integration.test_engine_flow import TOPIC, Once, Source, assert_same_state, enters
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, EventKind
from webapp.settings import Settings
from webapp.store import StaleWrite
from webapp.store.postgres import PostgresStore


@pytest.fixture
async def open_engine(pg_dsn: str) -> AsyncIterator[Callable[..., Awaitable[Engine]]]:
    """Opens engines on one PostgreSQL database the way the app does (settings' `db` is the URL)."""
    engines: list[Engine] = []
    settings = Settings(db=pg_dsn)

    async def opener(source: Source | None = None) -> Engine:
        engine = await Engine.open(settings=settings, providers=source or Source(), backoff_base=0.01)
        engines.append(engine)
        return engine

    yield opener
    for engine in engines:
        await engine.close()


async def test_a_demo_debate_runs_on_postgresql_and_another_engine_rebuilds_it(open_engine: Any) -> None:
    engine = await open_engine()
    assert isinstance(engine.store, PostgresStore)
    session = await engine.start(DebateConfig(topic=TOPIC, format="classic", budget={"warn_at": 100}))
    assert await session.join() is State.COMPLETED
    live = session.state
    events = await engine.events(session.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert_same_state(live, DebateState.from_events(events))
    other = await open_engine()
    assert_same_state(live, (await other.session(session.id)).state)
    row = await other.store.get_row(session.id)
    assert row is not None and (row.status, row.turn_count) == ("completed", len(live.turns))
    assert row.cost_usd == pytest.approx(live.ledger.total_usd, abs=1e-6) and row.cost_usd > 0
    rows, total = await other.list_debates(query="cities")
    assert total == 1 and rows[0].id == session.id


async def test_pause_then_resume_on_postgresql_completes_the_debate(open_engine: Any) -> None:
    engine = await open_engine()
    session = await engine.start(DebateConfig(topic=TOPIC, format="classic", seed=3))
    trigger = Once(enters(State.JUDGING), session.pause)
    session.subscribe(trigger)
    assert await trigger.settle(session) is State.PAUSED
    assert (await engine.store.get_row(session.id)).status == "paused"
    await session.resume()
    assert await session.join() is State.COMPLETED
    assert_same_state(session.state, DebateState.from_events(await engine.events(session.id)))


async def test_an_engine_that_missed_another_engines_write_is_refused(open_engine: Any) -> None:
    first = await open_engine()
    session = await first.start(DebateConfig(topic=TOPIC, format="classic"))
    assert await session.join() is State.COMPLETED
    second = await open_engine()
    seen = (await second.session(session.id)).state.last_seq
    await first.store.append(session.id, EventKind.NOTE, {}, expected_seq=seen + 1)
    with pytest.raises(StaleWrite):
        await second.store.append(session.id, EventKind.NOTE, {}, expected_seq=seen + 1)
    assert [e.seq for e in await second.events(session.id)][-1] == seen + 1
