"""Scale-out: a comment made on another web instance reaches this instance's spectators through the
Redis bus (a `comments` signal; this instance reads the store once and sends the debate's room one event),
and a page's snapshot carries the stored comments. No instance's memory holds them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from nicegui import core
from nicegui.testing import User

from webapp.access.comments import CommentDesk, person_key
from webapp.access.gate import Gate
from webapp.access.roles import LOCAL
from webapp.bus.redis_bus import RedisBus
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.settings import get_settings
from webapp.ui import live, runtime
from webapp.ui.components import turn_talk
from webapp.ui.live import pace


@pytest.fixture
def redis_env(app_env: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ROSTRUM_REDIS_URL", redis_url)
    get_settings.cache_clear()
    return redis_url


async def test_a_comment_made_on_another_instance_reaches_this_instances_room(
    redis_env: str, user: User, app_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pace, "FOLLOW_INTERVAL", 60.0)  # only the bus can bring it in time
    await user.open("/")
    app = runtime.current()
    assert isinstance(app.bus_, RedisBus)
    other = await Engine.open(app_env, providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))
    other_bus = RedisBus(redis_env)  # "instance B", with a bus and a hub of its own
    await other_bus.start()
    other_hub = live.LiveHub(other, other_bus)
    try:
        session = await other.start(DebateConfig(topic="Should exams be open-book?", format="oxford", rounds=1))
        assert await session.join() is State.COMPLETED
        key = next(t.key for t in session.state.turns if t.visible)
        first = await CommentDesk(Gate(other, LOCAL), person_key(LOCAL, "b-1"),
                                  changed=lambda d: turn_talk.talk_changed(other_hub, d)) \
            .comment(session, key, "before the page opened")
        await user.open(f"/debate/{session.id}")
        hub = await app.hub()
        assert session.id in hub.channels
        talk_hub = user.find(marker="turn-talk-hub").elements.pop()
        assert talk_hub.props["turns"][key]["comments"][0]["text"] == first.body  # the snapshot
        await asyncio.wait_for(app.bus_.subscribed(session.id), 10)

        sent: list[tuple[Any, str]] = []
        arrived = asyncio.Event()
        emit = core.sio.emit

        async def recording(event: str, data: Any = None, room: str | None = None, **kwargs: Any) -> None:
            if event == turn_talk.TALK_EVENT:
                sent.append((data, str(room)))
                arrived.set()
            await emit(event, data, room=room, **kwargs)

        monkeypatch.setattr(core.sio, "emit", recording)
        await CommentDesk(Gate(other, LOCAL), person_key(LOCAL, "b-1"),
                          changed=lambda d: turn_talk.talk_changed(other_hub, d)) \
            .comment(session, key, "<i>from instance B</i>")
        rooms = {turn_talk.talk_room(session.id, True), turn_talk.talk_room(session.id, False)}

        def latest() -> dict[str, list[str]]:
            """Per talk room, the comments of the last event it was sent."""
            last: dict[str, list[str]] = {}
            for data, room in sent:
                assert data["d"] == session.id
                last[room] = [c["text"] for c in data["turns"][key]["comments"]]
            return last

        # The subscription may have read the signal from the debate's stream (made while it subscribed)
        # or heard it on the channel; either way each room ends up sent both comments, once read.
        async with asyncio.timeout(10):
            while latest() != {room: ["before the page opened", "<i>from instance B</i>"] for room in rooms}:
                arrived.clear()
                await arrived.wait()
    finally:
        other_hub.close()
        await other_bus.close()
        await other.close()
