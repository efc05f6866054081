"""Issue 14 end to end, on this machine: two web instances (`python main.py`, `ROSTRUM_WORKERS=external`)
and two debate workers (`python -m webapp worker`) on one PostgreSQL and one Redis, driven as people
would: a browser on each instance.

A debate started on instance A is watched token by token by a spectator's browser on instance B (what
B's socket receives adds up to the turns the log holds), paused from B and resumed from A; the worker
running it is killed (SIGKILL) mid-turn and the other one takes it over, no finished turn lost or
doubled; Redis is killed mid-debate (B's spectator still gets each finished turn, from the store, and
the debate finishes) and started again (tokens flow to B again). Once it has ended, a vote cast on B is
counted once, and live on A's open page.

The app has no JSON or SSE read API: its live stream is the socket.io event `rl` each debate page
receives (format in `static/live/index.js`), so B's stream is read from the browser's websocket frames,
and at the end the turns B's page shows are compared with the log too. Which worker runs the debate is
read from the lease table.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from playwright.async_api import Browser, Page, WebSocket, async_playwright, expect

from tests.child_env import child_env
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, DEBATE_URL, free_port
from tests.redis_fixtures import RedisServer
from webapp.bus.redis_bus import channel_name
from webapp.engine.engine import Engine
from webapp.engine.state import DebateState
from webapp.settings import Settings
from webapp.store.audience import AudienceStore
from webapp.ui.live import wire as live_wire
from webapp.workers import Leases

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
LEASE = 2.0  # seconds: short, so the takeover comes quickly
DEMO_SPEED = "30"  # words per second on the workers: a turn streams for about two seconds
TURNS = 8  # Oxford, three rounds: the preset's opening speeches and three rounds of rebuttals
WAIT = 30.0  # seconds: generous upper bound of every wait; each ends on an event long before
TAKEOVER_LIMIT = 30.0  # seconds the issue allows between the kill and the cut-off turn finished by the other worker
UI_WAIT = 20_000  # ms, for Playwright's expectations
TOPIC = "Should every city run a night bus network?"


class Child:
    """A process of the set-up: its output (stdout and stderr together) kept line by line, so a test can
    wait for a line, and copied to `tests/artifacts/scale-out-<name>.log` at the end."""

    def __init__(self, name: str, process: asyncio.subprocess.Process) -> None:
        self.name = name
        self.process = process
        self.lines: list[str] = []
        self._new = asyncio.Event()
        self._pump = asyncio.create_task(self._read(), name=f"read-{name}")

    @classmethod
    async def start(cls, name: str, args: list[str], env: dict[str, str], cwd: Path) -> Child:
        process = await asyncio.create_subprocess_exec(*args, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.STDOUT)
        return cls(name, process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.lines.append(line.decode(errors="replace").rstrip("\n"))
            self._new.set()
        self._new.set()

    async def line(self, wanted: str) -> str:
        """The first line containing `wanted` (it may have come already)."""
        async with asyncio.timeout(WAIT):
            seen = 0
            while True:
                self._new.clear()
                for line in self.lines[seen:]:
                    if wanted in line:
                        return line
                seen = len(self.lines)
                if self._pump.done():
                    raise AssertionError(f"{self.name} ended before {wanted!r}:\n" + "\n".join(self.lines))
                await self._new.wait()

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()
            try:
                async with asyncio.timeout(10):
                    await self.process.wait()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        await self._pump
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / f"scale-out-{self.name}.log").write_text("\n".join(self.lines) + "\n")


async def start_web(children: list[Child], name: str, workdir: Path, dsn: str, redis_url: str) -> str:
    """`python main.py` on a free port with debates on workers (added to `children` at once); its base URL
    once it serves."""
    workdir.mkdir()
    port = free_port()
    env = child_env(("NICEGUI_", "ROSTRUM_", "OPENAI_", "ANTHROPIC_"), ROSTRUM_DB=dsn, ROSTRUM_REDIS_URL=redis_url,
                    ROSTRUM_WORKERS="external", ROSTRUM_HOST="127.0.0.1", ROSTRUM_PORT=str(port),
                    # one secret for every instance, as README "Scaling out" says
                    ROSTRUM_STORAGE_SECRET="scale-out-test-secret-not-a-real-one", PYTHONUNBUFFERED="1")
    child = await Child.start(name, [sys.executable, str(ROOT / "main.py")], env, workdir)
    children.append(child)
    await child.line("NiceGUI ready to go")  # printed just before uvicorn binds its socket
    base = f"http://127.0.0.1:{port}"

    def serves() -> bool:
        try:
            with urllib.request.urlopen(base + "/", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    async with asyncio.timeout(WAIT):
        while not await asyncio.to_thread(serves):  # polling a port: there is no event to await
            await asyncio.sleep(0.05)
    return base


async def start_worker(children: list[Child], name: str, dsn: str, redis_url: str) -> tuple[Child, str]:
    """`python -m webapp worker` (added to `children` at once); its process and its name, once ready (the
    owner its leases carry)."""
    env = child_env(ROSTRUM_REDIS_URL=redis_url, ROSTRUM_DEMO_SPEED=DEMO_SPEED, PYTHONUNBUFFERED="1")
    child = await Child.start(name, [sys.executable, "-m", "webapp", "worker", "--db", dsn, "--lease", str(LEASE),
                                     "--poll", "0.3"], env, ROOT)
    children.append(child)
    ready = await child.line(" ready (lease ")
    return child, ready.split()[1]


@dataclass
class Seen:
    """One turn as B's spectator received it: the current attempt's text and how many deltas made it."""

    kid: int
    started_in: str = ""  # the phase of the test its last attempt's start arrived in
    joined: bool = False  # the attempt was under way when the page joined: its first delta is the text so far
    text: str = ""
    deltas: int = 0
    committed: dict[str, Any] | None = None
    committed_in: str = ""

    @property
    def whole(self) -> bool:
        """Its text came with the commit (from the store), not from the stream."""
        return self.committed is not None and "text" in self.committed

    @property
    def final(self) -> str:
        assert self.committed is not None
        return str(self.committed.get("text", self.text))


@dataclass
class Spectator:
    """The live stream one page receives (socket.io event "rl"), folded into turns as the browser does."""

    phase: str = "live"
    turns: dict[int, Seen] = field(default_factory=dict)
    finished: list[Seen] = field(default_factory=list)  # in the order they were committed
    status: dict[str, Any] = field(default_factory=dict)
    frames: int = 0
    sockets: int = 0  # websockets the tab opened (its dashboard's first): more than two means a reconnect
    rejoin: bool = False  # the next start may be the bus re-announcing a turn in flight (Redis is back)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def attach(self, page: Page) -> None:
        page.on("websocket", self._socket)

    def _socket(self, ws: WebSocket) -> None:
        self.sockets += 1
        ws.on("framereceived", self._frame)

    def _frame(self, payload: str | bytes) -> None:
        text = payload if isinstance(payload, str) else payload.decode(errors="replace")
        if not text.startswith('42["rl"'):  # socket.io event frames of the live stream
            return
        self.frames += 1
        for item in json.loads(text[2:])[1]:
            self._apply(item)
        self.changed.set()

    def _apply(self, item: list[Any]) -> None:
        kind = item[0]
        if kind == live_wire.STARTED:  # a new attempt (a redo after a pause or a takeover): offsets restart
            seen = self.turns.setdefault(item[1], Seen(item[1]))
            seen.text, seen.deltas, seen.started_in = "", 0, self.phase
            # the page's first frame (its resync on joining, or just after), or a turn in flight re-announced
            seen.joined, self.rejoin = self.frames == 1 or self.rejoin, False
        elif kind == live_wire.TEXT:
            # Text of a turn not announced on the stream: the page's snapshot showed it in flight.
            seen = self.turns.setdefault(item[1], Seen(item[1], self.phase, joined=True))
            seen.text = seen.text[:item[2]] + item[3]
            seen.deltas += 1
        elif kind == live_wire.COMMITTED:
            seen = self.turns.setdefault(item[1], Seen(item[1]))  # never seen streaming: no start phase
            if seen.committed is None:  # a reconnected page is sent the commits after its snapshot again
                self.finished.append(seen)
            seen.committed, seen.committed_in = item[2], self.phase
        elif kind == live_wire.STATUS:
            self.status.update(item[1])

    def in_flight(self) -> Seen | None:
        """A turn streaming now (some text arrived, not committed) that started in this phase, if any."""
        flying = [s for s in self.turns.values() if s.committed is None and s.deltas and s.started_in == self.phase]
        return flying[-1] if flying else None

    async def until(self, check: Callable[[], Any], timeout: float = WAIT) -> Any:
        async with asyncio.timeout(timeout):
            while True:
                self.changed.clear()  # before checking: a frame arriving meanwhile is not missed
                value = check()
                if value:
                    return value
                await self.changed.wait()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        executable = CHROMIUM if Path(CHROMIUM).exists() else None
        if executable is None and not Path(playwright.chromium.executable_path).exists():
            pytest.fail("no Chromium: run `make chromium` (apt-get install chromium, or playwright install chromium)")
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def start_from_form(page: Page, base: str) -> str:
    """Start a Quick demo debate of three rounds from A's new-debate form; returns its id."""
    await page.goto(base + "/new")
    topic = page.get_by_label("What should they debate? *")
    await page.get_by_role("button", name="Quick demo").click()
    await expect(page.get_by_text("Preset applied: Quick demo")).to_be_visible()  # the form was built again
    await topic.fill(TOPIC)  # after the preset: Quick demo starts from a fresh form
    await expect(topic).to_have_value(TOPIC)
    rounds = page.get_by_label("Rounds")
    await expect(rounds).to_have_value("1")
    await rounds.fill("3")
    await rounds.press("Tab")
    await page.get_by_role("button", name="Start debate").click()
    await page.wait_for_url(DEBATE_URL, timeout=UI_WAIT)
    return page.url.rsplit("/", 1)[1]


async def turn_log(engine: Engine, debate_id: str) -> list[tuple[str, str]]:
    """(key, text) of each visible finished turn the log holds, in order."""
    state = DebateState.from_events(await engine.events(debate_id))
    return [(t.key, t.text) for t in state.turns if t.visible]


async def test_two_instances_two_workers_postgres_and_redis(
    pg_dsn: str, own_redis: RedisServer, browser: Browser, tmp_path: Path
) -> None:
    t_start = time.monotonic()
    redis_url = own_redis.url
    children: list[Child] = []
    reader = await Engine.open(settings=Settings(db=pg_dsn))  # the test's own look at the log and the leases
    probe = aioredis.from_url(redis_url, decode_responses=True)
    try:
        base_a, base_b, one, two = await asyncio.gather(
            start_web(children, "web-a", tmp_path / "a", pg_dsn, redis_url),
            start_web(children, "web-b", tmp_path / "b", pg_dsn, redis_url),
            start_worker(children, "worker-1", pg_dsn, redis_url),
            start_worker(children, "worker-2", pg_dsn, redis_url))
        workers = {one[1]: one[0], two[1]: two[0]}  # lease owner -> its process
        person = await (await browser.new_context(viewport={"width": 1400, "height": 1000})).new_page()
        watcher = await (await browser.new_context(viewport={"width": 1400, "height": 1000})).new_page()
        b = Spectator()
        b.attach(watcher)

        # 1. Started on A; B's dashboard hears of it (through Redis) and the spectator opens it there.
        await watcher.goto(base_b + "/")
        debate_id = await start_from_form(person, base_a)
        await expect(watcher.get_by_text(TOPIC)).to_be_visible(timeout=UI_WAIT)
        await watcher.goto(f"{base_b}/debate/{debate_id}")
        await expect(watcher.locator(".rostrum-topic")).to_have_text(TOPIC)
        row = await reader.store.get_row(debate_id)
        assert row is not None and row.total_rounds == 3, "the form's Rounds field was applied"

        # 2. Paused from B mid-turn, resumed from A.
        await b.until(lambda: (s := b.in_flight()) and s.deltas > 1)
        await watcher.get_by_role("button", name="Pause").click()
        await expect(watcher.locator(".q-badge", has_text="paused")).to_be_visible(timeout=UI_WAIT)
        row = await reader.store.get_row(debate_id)
        assert row is not None and row.status == "paused"
        await expect(person.get_by_role("button", name="Resume")).to_be_enabled(timeout=UI_WAIT)  # A heard of it
        b.phase = "resumed"
        await person.get_by_role("button", name="Resume").click()

        # 3. The worker running it is killed mid-turn; the other one redoes that turn and goes on.
        cut = await b.until(b.in_flight)
        holder = await Leases(reader.store, "test", LEASE).holder(debate_id)
        assert holder is not None, "a running debate has a lease"
        owner = workers[holder[0]]
        owner.kill()
        await owner.process.wait()
        killed_at = time.monotonic()
        kept = [key for key, _ in await turn_log(reader, debate_id)]
        committed_at_kill = len(b.finished)  # (B's page showed those finished before it joined besides)
        b.phase = "taken over"
        await b.until(lambda: cut.committed is not None, timeout=TAKEOVER_LIMIT)
        takeover = time.monotonic() - killed_at
        taken = [key for key, _ in await turn_log(reader, debate_id)]
        assert taken[:len(kept)] == kept and len(taken) == len(kept) + 1  # none lost, the cut one done once
        survivor = next(name for name, child in workers.items() if child is not owner)
        new_holder = await Leases(reader.store, "test", LEASE).holder(debate_id)
        assert new_holder is not None and new_holder[0] == survivor

        # 4. Redis is killed mid-turn: B gets the finished turns from the store; the debate goes on.
        flying = await b.until(lambda: (s := b.in_flight()) and s.deltas > 1 and s)
        await asyncio.to_thread(own_redis.kill)
        b.phase = "redis down"
        await b.until(lambda: flying.committed is not None)
        assert flying.whole and flying.final != flying.text, "the cut-off view was completed from the store"

        # 5. Redis is back: both instances' pages subscribe again, and tokens reach B again.
        b.phase = "redis starting"  # from here on B may hear through Redis again
        await asyncio.to_thread(own_redis.start)
        async with asyncio.timeout(WAIT):
            while (await probe.pubsub_numsub(channel_name(debate_id)))[0][1] < 2:  # A's and B's subscriptions
                await asyncio.sleep(0.05)  # polling another process's state: there is no event to await
        b.phase, b.rejoin = "redis back", True  # B's bus replays the turn in flight when it subscribes again
        streamed_again = await b.until(lambda: next((s for s in b.finished if s.committed_in == s.started_in ==
                                                     "redis back" and not s.joined and s.deltas > 1), None))
        await b.until(lambda: b.status.get("ended"))
        await expect(watcher.get_by_text(re.compile(r"^Winner: "))).to_be_visible(timeout=UI_WAIT)
        row = await reader.store.get_row(debate_id)
        assert row is not None and row.status == "completed"

        # What B received is the log: every turn once, in order, with the logged text. A turn B watched
        # from its start with Redis up throughout arrived as deltas (several) adding up to that text; the
        # one Redis died under, and those it missed the start of, came whole from the store.
        log_turns = await turn_log(reader, debate_id)
        keys = [key for key, _ in log_turns]
        assert len(keys) == len(set(keys)) == TURNS
        finals = watcher.locator(".rostrum-turn-final .rostrum-turn-text")
        await expect(finals).to_have_count(TURNS, timeout=UI_WAIT)  # (the page may be re-rendering its transcript)
        shown = await finals.all_inner_texts()
        # Each logged turn once, with its text. Not in order: the page places turns in the order it first hears
        # of them, so a turn committed while Redis was down can land after the next one when the bus
        # re-announces that one first (a known flaw of the transcript, not what this test is about).
        assert sorted(" ".join(t.split()) for t in shown) == sorted(" ".join(t.split()) for _, t in log_turns), \
            f"B's page shows other text than the log; it was sent {[(x.kid, x.started_in) for x in b.finished]}"
        before_b = TURNS - len(b.finished)  # finished before B's page joined: in its snapshot, not its stream
        assert [s.final for s in b.finished] == [text for _, text in log_turns[before_b:]], \
            f"B's page (which opened {b.sockets} socket(s)) was sent other text than the log"
        assert len(kept) == before_b + committed_at_kill, "killed mid-turn: the turn B saw streaming was not logged"
        streamed = []
        away = {"redis down", "redis starting"}  # the phases in which Redis could not carry the stream
        for seen in b.finished:
            redis_lost = seen is flying or bool({seen.started_in, seen.committed_in} & away) or (
                seen.committed_in == "redis back" and seen.started_in != "redis back")
            if seen.started_in and not redis_lost:
                assert not seen.whole and seen.text == seen.final, \
                    f"turn {seen.kid} did not arrive by the stream ({seen}; the page opened {b.sockets} socket(s))"
                assert seen.joined or seen.deltas > 1, f"turn {seen.kid} arrived in one piece"
                streamed.append(seen)
        assert cut in streamed and streamed_again in streamed  # the survivor's redo, and after Redis's return
        assert all(s.whole for s in b.finished if s.committed_in == "redis down")

        # 6. A vote cast on B is stored once (PostgreSQL) and counted live on A's open page (through Redis).
        after_a = person.locator(".rostrum-audience [data-stage='after']")
        await expect(after_a).to_contain_text("For 0 ", timeout=UI_WAIT)  # A's page shows the after vote
        for_b = watcher.locator(".rostrum-audience").get_by_role("button", name="For", exact=True)
        await for_b.click()
        await expect(for_b).to_have_attribute("aria-pressed", "true", timeout=UI_WAIT)
        await expect(after_a).to_contain_text("For 1 (100%)", timeout=UI_WAIT)  # live: A's page was not reloaded
        # The same browser on A (its id comes with it: one storage secret) changes that vote, never adds one.
        again = await watcher.context.new_page()
        await again.goto(f"{base_a}/debate/{debate_id}")
        against_a = again.locator(".rostrum-audience").get_by_role("button", name="Against", exact=True)
        await against_a.click()
        await expect(against_a).to_have_attribute("aria-pressed", "true", timeout=UI_WAIT)
        await expect(after_a).to_contain_text("For 0 (0%) · Against 1 (100%)", timeout=UI_WAIT)
        tally = await AudienceStore(reader.store).tally(debate_id)
        assert tally["after"].public() == {"for": 0, "against": 1, "undecided": 0}
        print(f"taken over {takeover:.1f} s after the kill; {len(streamed)} of {TURNS} turns watched token by "
              f"token on B; whole test {time.monotonic() - t_start:.1f} s")
    finally:
        await probe.aclose()
        await reader.close()
        await asyncio.gather(*(child.stop() for child in children))
