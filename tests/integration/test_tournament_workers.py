"""Tournaments on debate workers, on real PostgreSQL and Redis: a tournament started through the web
side's command gate (its engine set up as with `ROSTRUM_WORKERS=external`) is played to the end by
worker processes (`python -m webapp worker`), its debates spread over both; a stop sent from another
web instance reaches the worker playing it and a continue plays it on; when the worker playing the
tournament is killed (SIGKILL), the other continues it and no slot (and no finished turn) is played
twice."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from tests.child_env import child_env
from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.engine.engine import Engine
from webapp.models import EventKind
from webapp.settings import Settings
from webapp.tournament.plan import Contender, Tournament, schedule
from webapp.tournament.runner import TournamentManager
from webapp.tournament.store import TournamentRow, TournamentStore
from webapp.workers import WorkerClient

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0  # seconds: short, so a dead worker's debates are taken over quickly
WAIT = 30.0  # generous upper bound of every wait; each ends on a message long before


class WorkerProcess:
    """One `python -m webapp worker` process."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, dsn: str, redis_url: str, demo_speed: int) -> WorkerProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webapp", "worker", "--db", dsn, "--lease", str(LEASE), "--poll", "0.3",
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=child_env(ROSTRUM_REDIS_URL=redis_url, ROSTRUM_DEMO_SPEED=str(demo_speed)),
        )
        assert process.stdout is not None
        async with asyncio.timeout(WAIT):
            line = await process.stdout.readline()
        assert line.startswith(b"worker "), line
        return cls(process)

    @property
    def tag(self) -> str:
        """What the names of this worker's leases and claims contain."""
        return f":{self.process.pid}:"

    def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


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


@pytest.fixture
async def web(pg_dsn: str, redis_url: str) -> AsyncIterator[WebSide]:
    side = await WebSide.open(pg_dsn, redis_url)
    yield side
    await side.close()


@pytest.fixture
async def workers(pg_dsn: str, redis_url: str, request: pytest.FixtureRequest) -> AsyncIterator[list[WorkerProcess]]:
    speed = getattr(request, "param", 400)
    started = await asyncio.gather(*(WorkerProcess.start(pg_dsn, redis_url, speed) for _ in range(2)))
    yield list(started)
    for worker in started:
        worker.stop()
    for worker in started:
        await worker.process.wait()


def plan(concurrency: int) -> Tournament:
    return Tournament(models=[Contender.parse(m) for m in ("alpha", "beta", "gamma")],
                      topics=["Cities should ban private cars"], format="round-limited", rounds=1,
                      swap_sides=True, concurrency=concurrency)


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
        web: WebSide, workers: list[WorkerProcess], pg_dsn: str, redis_url: str) -> None:
    other = await WebSide.open(pg_dsn, redis_url)
    try:
        async with Changes(redis_url) as changes:
            stored = await web.gate.start_tournament(plan(concurrency=1), web.manager)

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


@pytest.mark.parametrize("workers", [150], indirect=True)  # slow enough to kill it mid-tournament
async def test_the_other_worker_continues_a_tournament_whose_worker_was_killed(
        web: WebSide, workers: list[WorkerProcess], redis_url: str) -> None:
    async with Changes(redis_url) as changes:
        stored = await web.gate.start_tournament(plan(concurrency=2), web.manager)

        async def some_done() -> tuple[TournamentRow, dict[str, Any]] | None:
            row = await web.row(stored.id)
            debates = await web.store.debates(stored.id)
            done = [d for d in debates.values() if d.row.status == "completed"]
            return (row, debates) if done and row.owner else None

        row, before = await changes.until(some_done)
        assert row.owner is not None
        owner = next(w for w in workers if w.tag in row.owner)
        kept = {debate.row.id: await turn_keys(web.engine, debate.row.id) for debate in before.values()}
        os.kill(owner.process.pid, signal.SIGKILL)
        await owner.process.wait()
        survivor = next(w for w in workers if w is not owner)

        async def taken_over() -> bool:
            row = await web.row(stored.id)
            return row.status == "completed" or bool(row.owner and survivor.tag in row.owner)

        await changes.until(taken_over)

        async def ended() -> TournamentRow | None:
            row = await web.row(stored.id)
            return row if row.status != "running" else None

        row = await changes.until(ended)
    assert (row.status, row.stop_reason) == ("completed", None)
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
