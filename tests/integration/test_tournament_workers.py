"""Tournaments on debate workers, on real PostgreSQL and Redis: a tournament started through the web
side's command gate (its engine set up as with `ROSTRUM_WORKERS=external`) is played to the end by
worker processes (`python -m webapp worker`), its debates spread over both; a stop sent from another
web instance reaches the worker playing it and a continue plays it on; when the worker playing the
tournament is killed (SIGKILL), the other continues it and no slot (and no finished turn) is played
twice. Then, in this process: which running tournaments workers may take (on both stores), and a worker
without Redis playing a tournament the web side asked for through the tables alone, and a busy worker
leaving a new debate a moment to a less busy one."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis

from tests.child_env import child_env
from tests.pg_fixtures import EMPTY_TEMPLATE, _with_database
from tests.redis_fixtures import RedisServer
from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.engine.engine import Engine
from webapp.models import EventKind
from webapp.settings import Settings
from webapp.store.protocol import EventStore
from webapp.tournament.plan import Contender, Tournament, schedule
from webapp.tournament.runner import TournamentManager
from webapp.tournament.store import WORKER_MARK, TournamentRow, TournamentStore, owner_name, played_by_worker
from webapp.workers import Job, Worker, WorkerClient
from webapp.workers.leases import now

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0  # seconds: short, so a dead worker's debates are taken over quickly
DEMO_SPEED = 300  # tokens a second: quick, yet slow enough to kill a worker in the middle of a tournament
WAIT = 30.0  # generous upper bound of every wait; each ends on a message long before


class WorkerProcess:
    """One `python -m webapp worker` process (a plain subprocess: the module's workers outlive each test's
    event loop)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    @classmethod
    def start(cls, dsn: str, redis_url: str) -> WorkerProcess:
        process = subprocess.Popen(
            [sys.executable, "-m", "webapp", "worker", "--db", dsn, "--lease", str(LEASE), "--poll", "0.3"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=child_env(ROSTRUM_REDIS_URL=redis_url, ROSTRUM_DEMO_SPEED=str(DEMO_SPEED)),
        )
        assert process.stdout is not None
        return cls(process)

    def ready(self) -> None:
        """Wait for its first line (`worker NAME ready`)."""
        assert self.process.stdout is not None
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            line = pool.submit(self.process.stdout.readline).result(timeout=WAIT)
        assert line.startswith(b"worker "), line

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    @property
    def tag(self) -> str:
        """What the names of this worker's leases and claims contain."""
        return f":{self.process.pid}:"

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait(timeout=WAIT)


class WebSide:
    """One web instance with external workers: an engine that only creates and reads debates, the
    workers' client as its remote, the tournaments manager and the gate pages use."""

    def __init__(self, engine: Engine, client: WorkerClient) -> None:
        self.engine = engine
        self.client = client
        engine.workers = client  # what the web app does with ROSTRUM_WORKERS=external
        self.manager = TournamentManager(engine)
        self.gate = Gate(engine, CLI)  # a principal whose role is not looked up in the accounts table
        self.store = TournamentStore(engine.store)

    @classmethod
    async def open(cls, dsn: str, redis_url: str) -> WebSide:
        engine = await Engine.open(settings=Settings(db=dsn))
        return cls(engine, WorkerClient(engine.store, redis_url))

    async def close(self) -> None:
        await self.client.close()
        await self.engine.close()

    async def row(self, tournament_id: str) -> TournamentRow:
        row = await self.store.get(tournament_id)
        assert row is not None
        return row


class Changes:
    """Wakes on every committed debate event (the dashboard channel) and every tournament ring, and
    re-checks a condition each time; `seen` runs on each wake too (to sample who holds what)."""

    def __init__(self, redis_url: str) -> None:
        self.redis = aioredis.from_url(redis_url, decode_responses=True)
        self.pubsub: Any = None
        self.seen: Callable[[], Awaitable[None]] | None = None

    async def __aenter__(self) -> Changes:
        self.pubsub = self.redis.pubsub()
        await self.pubsub.subscribe("rostrum:dashboard")
        await self.pubsub.psubscribe("rostrum:commands:tournament:*")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.pubsub.aclose()
        await self.redis.aclose()

    async def until(self, check: Callable[[], Awaitable[Any]], timeout: float = WAIT) -> Any:
        async with asyncio.timeout(timeout):
            while True:
                if self.seen is not None:
                    await self.seen()
                value = await check()
                if value:
                    return value
                # Whatever arrived since the check is read here: nothing is missed.
                await self.pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)


def in_thread(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` on a loop of its own (module-scoped fixtures outlive each test's loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, work).result(timeout=WAIT)


async def admin(server: str, sql: str) -> None:
    conn = await asyncpg.connect(_with_database(server, "postgres"))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def database(pg_server: str) -> Iterator[str]:
    """One database for the module's tests (each plays its own tournament), so its workers start once."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    in_thread(admin(pg_server, f"CREATE DATABASE {name} TEMPLATE {EMPTY_TEMPLATE}"))
    try:
        yield _with_database(pg_server, name)
    finally:
        in_thread(admin(pg_server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


@pytest.fixture(scope="module")
def pool(database: str, redis_server: RedisServer) -> Iterator[list[WorkerProcess]]:
    started = [WorkerProcess.start(database, redis_server.url) for _ in range(2)]
    try:
        for worker in started:
            worker.ready()
        yield started
    finally:
        for worker in started:
            worker.kill()


@pytest.fixture
def workers(pool: list[WorkerProcess], database: str, redis_server: RedisServer) -> list[WorkerProcess]:
    """Two live workers: one a test killed is replaced."""
    for index, worker in enumerate(pool):
        if not worker.alive:
            worker.kill()
            pool[index] = WorkerProcess.start(database, redis_server.url)
            pool[index].ready()
    return list(pool)


@pytest.fixture
async def web(database: str, redis_server: RedisServer) -> AsyncIterator[WebSide]:
    side = await WebSide.open(database, redis_server.url)
    yield side
    await side.close()


def plan(concurrency: int, swap_sides: bool = True) -> Tournament:
    """3 models, one topic: 6 debates of two turns each (3 without swapped sides)."""
    return Tournament(models=[Contender.parse(m) for m in ("alpha", "beta", "gamma")],
                      topics=["Cities should ban private cars"], format="round-limited", rounds=1,
                      swap_sides=swap_sides, concurrency=concurrency)


async def turn_keys(engine: Engine, debate_id: str) -> list[str]:
    return [e.data["turn"]["key"] for e in await engine.events(debate_id) if e.kind is EventKind.TURN]


async def slot_rows(web: WebSide, tournament_id: str) -> list[tuple[str, str]]:
    """(slot, debate id) of every debate stored for the tournament (a slot played twice would show)."""
    rows = await web.engine.store.fetchall(
        "SELECT config::jsonb ->> 'tournament_slot', id FROM debates WHERE config::jsonb ->> 'tournament' = ?",
        (tournament_id,))
    return sorted((str(r[0]), str(r[1])) for r in rows)


async def test_workers_play_a_tournament_started_from_the_web(web: WebSide, workers: list[WorkerProcess],
                                                               redis_url: str) -> None:
    holders: set[str] = set()

    async def sample() -> None:  # who holds debate leases right now
        rows = await web.engine.store.fetchall("SELECT owner FROM debate_leases", ())
        holders.update(str(r[0]) for r in rows)

    async with Changes(redis_url) as changes:
        changes.seen = sample
        stored = await web.gate.start_tournament(plan(concurrency=2), web.manager)
        assert (await web.row(stored.id)).status == "running"
        assert web.manager.plays(await web.row(stored.id))
        assert not web.manager.runners and not web.engine.sessions  # nothing plays in the web process

        async def ended() -> TournamentRow | None:
            row = await web.row(stored.id)
            return row if row.status != "running" and row.owner is None else None

        row = await changes.until(ended)
    assert (row.status, row.stop_reason) == ("completed", None)
    slots = await slot_rows(web, stored.id)
    assert [slot for slot, _ in slots] == sorted(s.key for s in schedule(stored))  # each slot once
    debates = await web.store.debates(stored.id)
    assert {d.row.status for d in debates.values()} == {"completed"}
    assert all(d.has_verdict for d in debates.values())
    for worker in workers:  # the tournament's debates ran on both workers
        assert any(worker.tag in holder for holder in holders), (worker.tag, holders)


async def test_a_stop_from_another_web_instance_reaches_the_worker_and_a_continue_plays_on(
        web: WebSide, workers: list[WorkerProcess], database: str, redis_url: str) -> None:
    other = await WebSide.open(database, redis_url)
    try:
        async with Changes(redis_url) as changes:
            stored = await web.gate.start_tournament(plan(concurrency=1, swap_sides=False), web.manager)

            async def first_debate() -> list[tuple[str, str]]:
                return await slot_rows(web, stored.id)

            [(first_slot, first_id)] = await changes.until(first_debate)
            assert await other.gate.stop_tournament(stored.id, other.manager)
            row = await other.row(stored.id)
            assert (row.status, row.stop_reason) == ("stopped", "stopped by a person")
            assert not other.manager.plays(row)

            async def let_go() -> bool:  # the worker playing it read the stop and gave its claim up
                return (await web.row(stored.id)).owner is None

            await changes.until(let_go)

            async def settled() -> bool:  # the debate in flight finished on its worker
                row = await web.engine.store.get_row(first_id)
                return row is not None and row.status == "completed"

            await changes.until(settled)
            assert await slot_rows(web, stored.id) == [(first_slot, first_id)]  # none started after the stop
            assert (await web.row(stored.id)).status == "stopped"

            await other.gate.continue_tournament(stored.id, other.manager)

            async def ended() -> TournamentRow | None:
                row = await web.row(stored.id)
                return row if row.status == "completed" and row.owner is None else None

            await changes.until(ended)
        slots = await slot_rows(web, stored.id)
        assert len(slots) == len(schedule(stored)) and (first_slot, first_id) in slots  # the first kept
    finally:
        await other.close()


async def test_the_other_worker_continues_a_tournament_whose_worker_was_killed(
        web: WebSide, workers: list[WorkerProcess], redis_url: str) -> None:
    claims: set[str] = set()

    async def sample() -> None:  # who holds the tournament's claim right now
        row = await web.store.get(stored.id)
        if row is not None and row.owner:
            claims.add(row.owner)

    async with Changes(redis_url) as changes:
        stored = await web.gate.start_tournament(plan(concurrency=2), web.manager)
        changes.seen = sample

        async def some_done() -> tuple[TournamentRow, dict[str, Any]] | None:
            row = await web.row(stored.id)
            debates = await web.store.debates(stored.id)
            done = [d for d in debates.values() if d.row.status == "completed"]
            return (row, debates) if done and row.owner else None

        row, before = await changes.until(some_done)
        assert row.owner is not None
        assert sum(d.row.status == "completed" for d in before.values()) < len(schedule(stored)) - 2
        owner = next(w for w in workers if w.tag in row.owner)
        kept = {debate.row.id: await turn_keys(web.engine, debate.row.id) for debate in before.values()}
        os.kill(owner.process.pid, signal.SIGKILL)
        owner.kill()  # reaped
        survivor = next(w for w in workers if w is not owner)

        async def ended() -> TournamentRow | None:
            row = await web.row(stored.id)
            return row if row.status != "running" else None

        row = await changes.until(ended)
    assert (row.status, row.stop_reason) == ("completed", None)
    assert any(survivor.tag in claim for claim in claims), claims  # the survivor took the tournament over
    slots = await slot_rows(web, stored.id)
    assert [slot for slot, _ in slots] == sorted(s.key for s in schedule(stored))  # no slot played twice
    debates = await web.store.debates(stored.id)
    for slot, debate in before.items():
        assert debates[slot].row.id == debate.row.id  # continued, not created again
    for debate in debates.values():
        assert debate.row.status == "completed"
        keys = await turn_keys(web.engine, debate.row.id)
        assert len(keys) == len(set(keys)) == 2  # no turn doubled (round-limited, one round: two turns)
        if debate.row.id in kept:
            assert keys[:len(kept[debate.row.id])] == kept[debate.row.id]  # no finished turn lost


# --- the rules, in this process -----------------------------------------------------------------------


async def test_workers_take_only_tournaments_nobody_plays_or_whose_worker_is_gone(any_store: EventStore) -> None:
    store = TournamentStore(any_store)
    ids = [(await store.create(plan(concurrency=1))).id for _ in range(6)]
    asked, cli, dead_cli, lapsed, dead, alive = ids
    for tournament_id in ids:
        assert await store.request_play(tournament_id)
    assert not await store.request_play(asked)  # already asked for: nothing changes
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = f"{socket.gethostname()}:{int(gone.stdout)}:abcd1234"  # a process of this host that has ended
    await store.claim(cli, "elsewhere.example:42:abcd1234")  # the CLI on another machine
    await store.claim(dead_cli, here)  # the CLI, killed: its tournament is not the workers'
    await store.claim(lapsed, f"elsewhere.example:42:abcd1234:{WORKER_MARK}", lease=-1.0)  # expired at once
    await store.claim(dead, f"{here}:{WORKER_MARK}")
    await store.claim(alive, owner_name(worker=True))  # this process, as a worker: alive and renewing
    assert played_by_worker(owner_name(worker=True)) and not played_by_worker(owner_name())
    assert sorted(await store.for_workers()) == sorted([asked, lapsed, dead])
    assert await store.request_stop(asked, "stopped by ada")
    assert not await store.request_stop(asked, "again")  # not running any more
    row = await store.get(asked)
    assert row is not None and (row.status, row.stop_reason) == ("stopped", "stopped by ada")
    assert asked not in await store.for_workers()
    assert await store.request_play(asked)  # continued: running again, the reason gone
    row = await store.get(asked)
    assert row is not None and (row.status, row.stop_reason) == ("running", None)


async def test_a_worker_without_redis_plays_a_tournament_the_web_side_asked_for(tmp_path: Path) -> None:
    """SQLite, no Redis: the tables alone carry the request, the jobs and the answers."""
    settings = Settings(db=tmp_path / "db.sqlite3", demo_speed=0)
    web = await Engine.open(settings=settings)
    runner = await Engine.open(settings=settings)
    worker = Worker(runner, lease=3.0, poll=0.05)
    web.workers = client = WorkerClient(web.store, poll=0.05)
    manager = TournamentManager(web)
    store = TournamentStore(web.store)
    stored = await store.create(plan(concurrency=2))
    first = asyncio.Event()  # the first event of a debate the worker runs: its tournament task exists then
    runner.subscribe_all(lambda message: first.set())
    await worker.start()
    try:
        await manager.play(stored.id, actor="ada")
        assert not manager.runners  # nothing plays in the web process
        async with asyncio.timeout(WAIT):
            await first.wait()
            await worker.tournaments[stored.id]
        row = await store.get(stored.id)
        assert row is not None and (row.status, row.owner) == ("completed", None)
        debates = await store.debates(stored.id)
        assert sorted(debates) == sorted(s.key for s in schedule(stored))
        assert {d.row.status for d in debates.values()} == {"completed"}
        assert not web.sessions  # the web side's engine loaded none of them
    finally:
        await worker.close()
        await client.close()
        await web.close()
        await runner.close()


async def test_a_busy_worker_leaves_a_new_debate_a_moment_to_a_less_busy_one(tmp_path: Path) -> None:
    engine = await Engine.open(settings=Settings(db=tmp_path / "db.sqlite3", demo_speed=0))
    try:
        worker = Worker(engine, lease=3.0, poll=0.05)
        fresh = Job("j1", "d-new", "run", {}, "ada", created_at=now())
        assert not worker._leave_to_others(fresh)  # an idle worker takes it at once
        worker.owned = {"d1", "d2"}
        assert worker._leave_to_others(fresh)  # busy: left about 0.2 s to another worker
        stale = Job("j2", "d-new", "run", {}, "ada", created_at=now() - 1.0)
        assert not worker._leave_to_others(stale)  # nobody took it meanwhile: this one does
        command = Job("j3", "d-new", "command", {"command": "pause"}, "ada", created_at=now())
        assert not worker._leave_to_others(command)  # only new debates are spread
        assert not worker._leave_to_others(Job("j4", "d1", "run", {}, "ada", created_at=now()))  # its own debate
    finally:
        await engine.close()
