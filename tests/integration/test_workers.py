"""Debate workers on real PostgreSQL and Redis: a debate started through the web side's command gate
(its engine set up as with `ROSTRUM_WORKERS=external`) is run by a worker process (`python -m webapp
worker`); a pause sent through the gate reaches it at once and a second pause is refused by the state
machine as in one process; when the owning worker is killed (SIGKILL)
mid-turn, the other worker takes the debate over from its log once the lease expires, and no finished
turn is lost or doubled."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.child_env import child_env
from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.bus.redis_bus import RedisBus
from webapp.engine.api import Command
from webapp.engine.engine import Engine
from webapp.engine.machine import State, TransitionNotAllowed
from webapp.engine.stream import LiveChunk
from webapp.models import DebateConfig, EventKind
from webapp.settings import Settings
from webapp.workers import Leases, WorkerClient

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0  # seconds: short, so the takeover comes quickly
TAKEOVER_LIMIT = 30.0  # seconds the issue allows between a worker's death and another one resuming
WAIT = 30.0  # generous upper bound of every other wait; each ends on an event long before


class Worker:
    """One `python -m webapp worker` process."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, dsn: str, redis_url: str) -> Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webapp", "worker", "--db", dsn, "--lease", str(LEASE), "--poll", "0.3",
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=child_env(ROSTRUM_REDIS_URL=redis_url, ROSTRUM_DEMO_SPEED="60"),
        )
        assert process.stdout is not None
        async with asyncio.timeout(WAIT):
            line = await process.stdout.readline()
        assert line.startswith(b"worker "), line
        return cls(process)

    def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


class Signals:
    """What the live bus says about one debate; `until` re-checks a condition on each message."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.changed = asyncio.Event()

    def __call__(self, item: Any) -> None:
        self.items.append(item)
        self.changed.set()

    async def until(self, check: Callable[[], Awaitable[Any]], timeout: float = WAIT) -> Any:
        async with asyncio.timeout(timeout):
            while True:
                self.changed.clear()  # before checking: a message arriving meanwhile is not missed
                value = await check()
                if value:
                    return value
                await self.changed.wait()


@pytest.fixture
async def web(pg_dsn: str, redis_url: str) -> AsyncIterator[tuple[Engine, WorkerClient, RedisBus]]:
    """The web side: an engine that only creates and reads debates, a worker client and a bus watcher."""
    engine = await Engine.open(settings=Settings(db=pg_dsn))
    client = WorkerClient(engine.store, redis_url)
    engine.workers = client  # what the web app does with ROSTRUM_WORKERS=external
    bus = RedisBus(redis_url)
    await bus.start()
    yield engine, client, bus
    await bus.close()
    await client.close()
    await engine.close()


async def turn_keys(engine: Engine, debate_id: str) -> list[str]:
    return [e.data["turn"]["key"] for e in await engine.events(debate_id) if e.kind is EventKind.TURN]


async def test_workers_run_pause_and_take_over_a_debate(web: Any, pg_dsn: str, redis_url: str) -> None:
    engine, client, bus = web
    gate = Gate(engine, CLI)  # a principal whose role is not looked up in the accounts table
    workers = [await Worker.start(pg_dsn, redis_url)]
    try:
        session = await gate.start(DebateConfig(topic="Cities should ban private cars", format="classic"))
        debate_id = session.id
        assert not session.running  # the worker runs it, not this process
        signals = Signals()
        bus.watch(debate_id, signals)

        async def turns(at_least: int) -> list[str] | None:
            keys = await turn_keys(engine, debate_id)
            return keys if len(keys) >= at_least else None

        await signals.until(lambda: turns(1))
        t0 = time.monotonic()
        await gate.command(session, Command.PAUSE)
        latency = time.monotonic() - t0
        assert latency < 1.0, f"pause took {latency:.3f} s to reach the worker and be answered"
        assert session.status is State.PAUSED  # the page's session already shows it
        row = await engine.store.get_row(debate_id)
        assert row is not None and row.status == State.PAUSED.value
        with pytest.raises(TransitionNotAllowed) as refused:  # refused by the worker's state machine
            await gate.command(session, Command.PAUSE)
        assert refused.value.state is State.PAUSED and "not allowed while the debate is paused" in str(refused.value)

        workers.append(await Worker.start(pg_dsn, redis_url))
        resumed = await client.send(debate_id, Command.RESUME, actor="ada")  # the client by itself
        assert resumed.command is Command.RESUME
        before = len(await turn_keys(engine, debate_id))
        await signals.until(lambda: turns(before + 1))

        async def in_flight() -> str | None:  # streamed text of a turn the log does not hold yet
            keys = set(await turn_keys(engine, debate_id))
            chunks = [i for i in signals.items if isinstance(i, LiveChunk) and i.key not in keys]
            return chunks[-1].key if chunks else None

        cut = await signals.until(in_flight)
        holder = await Leases(engine.store, "test", LEASE).holder(debate_id)
        assert holder is not None
        owner = next(w for w in workers if f":{w.process.pid}:" in holder[0])
        os.kill(owner.process.pid, signal.SIGKILL)
        await owner.process.wait()
        killed_at = time.monotonic()
        kept = await turn_keys(engine, debate_id)
        assert cut not in kept  # it was killed mid-turn

        async def redone() -> list[str] | None:  # the cut-off turn, finished by the other worker
            keys = await turn_keys(engine, debate_id)
            return keys if cut in keys else None

        taken = await signals.until(redone, timeout=TAKEOVER_LIMIT)
        takeover = time.monotonic() - killed_at
        assert takeover < TAKEOVER_LIMIT
        assert taken[:len(kept)] == kept  # no finished turn lost
        assert len(set(taken)) == len(taken)  # none doubled
        survivor = next(w for w in workers if w is not owner)
        new_holder = await Leases(engine.store, "test", LEASE).holder(debate_id)
        assert new_holder is not None and f":{survivor.process.pid}:" in new_holder[0]
        stopped = await client.send(debate_id, Command.STOP, actor="ada", verdict=False)
        assert stopped.command is Command.STOP
        survivor.process.terminate()  # SIGTERM: a clean stop
        async with asyncio.timeout(WAIT):
            assert await survivor.process.wait() == 0
        print(f"pause answered in {latency * 1000:.0f} ms; taken over {takeover:.1f} s after the kill")
    finally:
        for worker in workers:
            worker.stop()
        for worker in workers:
            await worker.process.wait()
