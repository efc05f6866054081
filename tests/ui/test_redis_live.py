"""With `ROSTRUM_REDIS_URL`, the web app hears debates run by other processes through Redis: a page that
opens mid-turn gets the turn so far from the debate's stream, its one subscription is shared by every
watcher of this instance, and change signals (not the slow look at the log) bring the finished turns and
refresh an open dashboard."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from nicegui.testing import User

from tests.doubles import mid_second_turn
from webapp.bus import BusPublisher, Changed, RemoteItem
from webapp.bus.redis_bus import RedisBus
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider
from webapp.settings import get_settings
from webapp.ui import runtime
from webapp.ui.live import pace
from webapp.ui.live import wire as live_wire


@pytest.fixture
def redis_env(app_env: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The app of this test starts with the live bus on the session's Redis."""
    monkeypatch.setenv("ROSTRUM_REDIS_URL", redis_url)
    get_settings.cache_clear()
    return redis_url


async def test_a_page_streams_a_debate_run_by_another_process_through_redis(
    redis_env: str, user: User, app_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The log is looked at only once a minute here: what reaches the page must come through Redis.
    monkeypatch.setattr(pace, "FOLLOW_INTERVAL", 60.0)
    await user.open("/")
    app = runtime.current()
    assert isinstance(app.bus_, RedisBus)
    bus = app.bus_
    held = mid_second_turn()
    other = await Engine.open(app_env, providers=OneProvider(held))  # "process A", with a bus of its own
    other_bus = RedisBus(redis_env)
    await other_bus.start()
    publisher = BusPublisher(other, other_bus)
    try:
        session = await other.start(DebateConfig(topic="Should exams be open-book?", format="oxford", rounds=1))
        await held.reached.wait()  # three words into the second turn, streamed to Redis
        await user.should_see("Should exams be open-book?", retries=40)  # the open dashboard was signalled
        (key, turn), = session.live_turns.items()
        so_far = turn.text  # (the object grows with the turn)
        subscribed = asyncio.Event()

        def heard(item: RemoteItem) -> None:
            if isinstance(item, Changed):
                subscribed.set()

        stop = bus.watch(session.id, heard)  # another watcher of this instance, before the page
        async with asyncio.timeout(10):
            await subscribed.wait()
        await user.open(f"/debate/{session.id}")  # a late joiner: the turn began before it
        await user.should_see(marker="status-running")
        hub = await app.hub()
        channel = hub.channels[session.id]
        assert bus.subscribes == {session.id: 1}, "the page shares the instance's one subscription"
        assert channel.live_turns[key].text == so_far != ""
        assert [live_wire.TEXT, channel.kid(key), 0, so_far] in channel.resync_items(0)
        stop()
        sent: list[list[Any]] = []

        async def send(wire: list[list[Any]], room: str) -> None:
            sent.extend(wire)

        channel._send = send  # type: ignore[method-assign]  # what the debate's room is sent, from now on

        held.gate.set()
        assert await session.join() is State.COMPLETED
        await user.should_see(marker="status-completed", retries=60)  # signalled through Redis
        await user.should_see("Winner:", retries=20)
        assert channel.session.state.last_seq == session.state.last_seq
        # The rest of the turn continued where the page's resync left it: no gap, nothing twice.
        rest = [item for item in sent if item[0] == live_wire.TEXT and item[1] == channel.kid(key)]
        assert rest and rest[0][2] == len(so_far)
        final = next(t for t in channel.session.state.turns if t.key == key)
        assert so_far + "".join(item[3] for item in rest) == final.text
    finally:
        publisher.close()
        await other_bus.close()
        await other.close()
