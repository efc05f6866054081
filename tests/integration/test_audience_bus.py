"""A vote cast on one web instance is counted live on another: two engines on one database (instances
A and B), each with its own live hub and Redis bus. B stores a vote through its gate and signals it;
A's channel for the debate hands its pages an `audience` change, and A reads the new count from the
store. Real SQLite file, real Redis."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from nicegui import core

from webapp.access.gate import Gate
from webapp.access.roles import LOCAL
from webapp.bus.redis_bus import RedisBus
from webapp.engine.engine import Engine
from webapp.engine.stream import LiveStatus
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider
from webapp.store.audience import AudienceStore
from webapp.ui import live

WAIT = 30.0  # an upper bound; the wait ends on the event


@pytest.fixture
async def outside_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "loop", asyncio.get_running_loop())  # the channel's tasks, outside an app


async def test_a_vote_cast_on_instance_b_is_counted_live_on_instance_a(
        tmp_path: Path, redis_url: str, outside_app: None) -> None:
    db = str(tmp_path / "shared.sqlite3")
    engine_a = await Engine.open(db, providers=OneProvider())
    engine_b = await Engine.open(db, providers=OneProvider())
    bus_a, bus_b = RedisBus(redis_url), RedisBus(redis_url)
    await bus_a.start()
    await bus_b.start()
    hub_a, hub_b = live.LiveHub(engine_a, bus_a), live.LiveHub(engine_b, bus_b)
    try:
        debate_id = await engine_a.create(DebateConfig(topic="Should cities ban cars?", format="classic"))
        channel = hub_a.channel(await engine_a.session(debate_id))
        heard = asyncio.Event()

        async def deliver(batch: live.Batch) -> None:  # what A's pages would be handed
            if any(isinstance(item, LiveStatus) and item.change == live.AUDIENCE for item in batch):
                heard.set()

        channel._deliver = deliver  # type: ignore[method-assign]
        async with asyncio.timeout(WAIT):
            await bus_a.subscribed(debate_id)
        session_b = await engine_b.session(debate_id)
        await Gate(engine_b, LOCAL).vote(session_b, "before", "for", browser_id="browser-on-b")
        hub_b.audience_changed(session_b)
        async with asyncio.timeout(WAIT):
            await heard.wait()
        tally = await AudienceStore(engine_a.store).tally(debate_id)
        assert tally["before"].public() == {"for": 1, "against": 0, "undecided": 0}
    finally:
        hub_a.close()
        hub_b.close()
        await bus_a.close()
        await bus_b.close()
        await engine_a.close()
        await engine_b.close()
