"""Two processes on one database and one Redis: a debate run by process A is watched token by token
from process B (this test); losing Redis costs B only the live view, and it comes back with Redis."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from nicegui import core

from tests.child_env import child_env
from tests.redis_fixtures import RedisServer
from webapp.bus import Changed
from webapp.bus.redis_bus import RedisBus
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider
from webapp.ui import live
from webapp.ui.live import pace
from webapp.ui.live import wire as live_wire

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds: generous upper bounds; every wait below ends on an event long before

# Process A: runs the debates it is told to on stdin, publishing to the bus like `python -m webapp`.
RUNNER = """
import asyncio, sys
from webapp.bus import BusPublisher
from webapp.bus.redis_bus import RedisBus
from webapp.engine.engine import Engine
from webapp.providers.demo import OneProvider, RecordingDemoProvider

async def main(db, url):
    engine = await Engine.open(db, providers=OneProvider(RecordingDemoProvider("demo", speed=800, failures={})))
    bus = RedisBus(url)
    await bus.start()
    publisher = BusPublisher(engine, bus)
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line:
            break
        session = await engine.session(line)
        await bus.wait_connected()  # after a Redis restart: publish only once A's bus is back
        session.ensure_running()
        print("done", line, (await session.join()).value, flush=True)
    publisher.close()
    await bus.close()
    await engine.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


class Capture:
    """What B's channel sends to browsers, folded into text per turn."""

    def __init__(self) -> None:
        self.items: list[list[Any]] = []
        self.changed = asyncio.Event()

    async def send(self, wire: list[list[Any]], room: str) -> None:
        self.items.extend(wire)
        self.changed.set()

    async def until(self, predicate: Any) -> None:
        async with asyncio.timeout(WAIT):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    def of(self, kind: int) -> list[list[Any]]:
        return [item for item in self.items if item[0] == kind]

    def streamed(self) -> dict[int, str]:
        """Each turn's text as a page shows it: streamed deltas, then a commit's text where it has one."""
        text: dict[int, str] = {}
        for item in self.items:
            if item[0] == live_wire.STARTED:
                text[item[1]] = ""
            elif item[0] == live_wire.TEXT:
                kid, offset, chunk = item[1], item[2], item[3]
                text[kid] = text.get(kid, "")[:offset] + chunk
            elif item[0] == live_wire.COMMITTED and "text" in item[2]:
                text[item[1]] = item[2]["text"]
        return text

    def stream_before_commit(self) -> dict[int, str]:
        """Each committed turn's streamed text at its commit; fails on a turn streamed after its commit."""
        text: dict[int, str] = {}
        committed: dict[int, str] = {}
        for item in self.items:
            kid = item[1] if item[0] in (live_wire.STARTED, live_wire.TEXT, live_wire.COMMITTED) else None
            assert kid not in committed, f"turn {kid} streamed after its commit: {item}"
            if item[0] == live_wire.STARTED:
                text[kid] = ""
            elif item[0] == live_wire.TEXT:
                text[kid] = text.get(kid, "")[:item[2]] + item[3]
            elif item[0] == live_wire.COMMITTED:
                committed[kid] = text.get(kid, "")
        return committed


async def _watch(hub: live.LiveHub, engine: Engine, debate_id: str,
                 bus: RedisBus) -> tuple[live.DebateChannel, Capture]:
    session = await engine.session(debate_id)
    channel = hub.channel(session)
    capture = Capture()
    channel._send = capture.send  # type: ignore[method-assign]  # the room's sockets, as a list
    subscribed = asyncio.Event()  # a (re)subscription hands every watcher a `Changed` first
    stop = bus.watch(debate_id, lambda item: subscribed.set() if isinstance(item, Changed) else None)
    async with asyncio.timeout(WAIT):
        await subscribed.wait()
    stop()
    assert bus.subscribes[debate_id] == 1, "one subscription for the channel and the test's own watcher"
    return channel, capture


class Pair:
    """Process A (a child running debates when told, publishing to the bus) and process B (this test:
    an engine that never runs them, a bus, and a live hub whose channels feed no browser)."""

    def __init__(self, db: str, url: str) -> None:
        self.db, self.url = db, url
        self.loop = asyncio.get_running_loop()

    async def __aenter__(self) -> Pair:
        self.engine = await Engine.open(self.db, providers=OneProvider())  # B opens (migrates) first
        self.runner = subprocess.Popen([sys.executable, "-c", RUNNER, self.db, self.url], cwd=ROOT,
                                       env=child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.bus = RedisBus(self.url)
        await self.bus.start()
        self.hub = live.LiveHub(self.engine, self.bus)
        assert await self.line() == "ready"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.tell("")
        try:
            self.runner.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.runner.kill()
        self.hub.close()
        await self.bus.close()
        await self.engine.close()

    async def line(self) -> str:
        assert self.runner.stdout is not None
        async with asyncio.timeout(WAIT):
            return (await self.loop.run_in_executor(None, self.runner.stdout.readline)).strip()

    def tell(self, text: str) -> None:
        assert self.runner.stdin is not None
        self.runner.stdin.write(text + "\n")
        self.runner.stdin.flush()

    async def watch_a_debate(self, topic: str, *, reconnected: bool = False) -> tuple[live.DebateChannel, Capture]:
        """Create a debate, watch it in B, have A run it to the end; B's channel and what it sent.
        `reconnected`: Redis was restarted, so B's bus is first awaited back (A waits for its own)."""
        if reconnected:
            async with asyncio.timeout(WAIT):
                await self.bus.wait_connected()
        debate_id = await self.engine.create(DebateConfig(topic=topic, format="oxford", rounds=1))
        channel, capture = await _watch(self.hub, self.engine, debate_id, self.bus)
        # B's subscription is made by the bus's receive loop: let it be in place before A starts, so this
        # checks token-by-token watching (joining mid-turn is the catch-up test's subject).
        if self.bus.connected:
            async with asyncio.timeout(WAIT):
                await self.bus.subscribed(debate_id)
        self.tell(debate_id)
        return channel, capture

    async def finished(self, channel: live.DebateChannel, capture: Capture) -> None:
        assert await self.line() == f"done {channel.session.id} completed"
        await capture.until(lambda: channel.session.status is State.COMPLETED)


def assert_streamed_as_stored(channel: live.DebateChannel, capture: Capture) -> None:
    stored = {channel.kid(t.key): t.text for t in channel.session.state.turns if t.visible}
    assert len(stored) == 4
    assert len(capture.of(live_wire.TEXT)) > len(stored), "the text arrived in many deltas"
    assert {kid: capture.streamed().get(kid) for kid in stored} == stored
    at_commit = capture.stream_before_commit()
    for committed in capture.of(live_wire.COMMITTED):
        kid, streamed = committed[1], at_commit[committed[1]]
        if "text" in committed[2]:  # B read the commit from the log before A's last chunks came over the bus
            assert stored[kid].startswith(streamed) and streamed != stored[kid]
        else:
            assert streamed == stored[kid], "a streamed turn's text is not sent again"


@pytest.fixture
async def outside_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pace, "FOLLOW_INTERVAL", 0.1)  # the fallback: B reads the log this often
    monkeypatch.setattr(core, "loop", asyncio.get_running_loop())  # the channel's tasks, outside an app


async def test_a_debate_run_by_another_process_is_watched_live_and_survives_losing_redis(
    tmp_path: Path, own_redis: RedisServer, outside_app: None
) -> None:
    async with Pair(str(tmp_path / "shared.sqlite3"), own_redis.url) as pair:
        # 1. Watched token by token: B's channel streams A's text, which equals the stored turns.
        channel, capture = await pair.watch_a_debate("Should exams be open-book?")
        await pair.finished(channel, capture)
        assert_streamed_as_stored(channel, capture)

        # 2. Redis killed mid-debate: B falls back to finished turns; A finishes the debate.
        channel, capture = await pair.watch_a_debate("Is remote work here to stay?")
        await capture.until(lambda: bool(capture.of(live_wire.COMMITTED)))  # the first turn is over
        assert capture.of(live_wire.TEXT), "it streamed while Redis was up"
        own_redis.kill()
        await pair.finished(channel, capture)
        assert not pair.bus.connected
        turns = [t for t in channel.session.state.turns if t.visible]
        assert len(turns) == 4 and all(t.text for t in turns)
        unstreamed = [c for c in capture.of(live_wire.COMMITTED) if "text" in c[2]]
        assert unstreamed, "turns taken while Redis was down arrived whole, from the store"
        assert (await pair.engine.events(channel.session.id))[-1].seq == channel.session.state.last_seq

        # 3. Redis is back: live tokens again (A's publisher and B's subscriber both reconnected).
        own_redis.start()
        channel, capture = await pair.watch_a_debate("Should cities ban cars?", reconnected=True)
        await pair.finished(channel, capture)
        assert_streamed_as_stored(channel, capture)


async def test_watched_live_across_processes_on_postgresql(
    pg_dsn: str, redis_url: str, outside_app: None
) -> None:
    async with Pair(pg_dsn, redis_url) as pair:
        channel, capture = await pair.watch_a_debate("Should exams be open-book?")
        await pair.finished(channel, capture)
        assert_streamed_as_stored(channel, capture)
