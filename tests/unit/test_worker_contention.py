"""Debate workers under contention (what `bench/scale_workers.py` ran into with 200 debates on a busy
machine): leases are renewed in one statement, a long pass over the jobs table gives the lock up so
leases are renewed in time, and a debate whose runner stopped because another process wrote to its log
is continued, never left running in the log with no lease (which no worker would ever take over)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from webapp.engine.engine import Engine
from webapp.engine.stream import LiveEvent
from webapp.models import DebateConfig, EventKind
from webapp.settings import Settings
from webapp.store.protocol import EventStore
from webapp.workers import JobQueue, Leases, Worker
from webapp.workers.worker import JOB_CONCURRENCY


async def test_leases_are_renewed_all_at_once_and_only_ours(any_store: EventStore) -> None:
    engine = Engine(any_store, settings=Settings())
    x, y, z = [await engine.create(DebateConfig(topic=f"Tea or coffee {i}", format="classic")) for i in range(3)]
    a, b = Leases(any_store, "a", 10.0), Leases(any_store, "b", 10.0)
    assert await a.acquire(x) and await a.acquire(y) and await b.acquire(z)
    assert await a.renew_all([x, y, z]) == {x, y}
    assert await a.renew_all([]) == set()
    await a.expire(x)
    assert await b.acquire(x)  # expired: taken over
    assert await a.renew_all([x, y]) == {y}
    holder = await a.holder(x)
    assert holder is not None and holder[0] == "b"  # a's renewal did not take it back


async def test_a_long_jobs_pass_gives_the_lock_up_and_comes_back_for_the_rest(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "db.sqlite3", demo_speed=0)
    engine = await Engine.open(settings=settings)
    worker = Worker(engine, lease=3.0, poll=0.001)  # a pass may last a millisecond: less than one job
    queue = JobQueue(engine.store)
    ids = [await engine.create(DebateConfig(topic=f"Tea or coffee {i}", format="classic"))
           for i in range(JOB_CONCURRENCY + 4)]
    jobs = [await queue.put(debate_id, "run", "ada") for debate_id in ids]
    try:
        await worker._answer_jobs()
        answered = [job for job in jobs if await queue.outcome(job) is not None]
        assert 1 <= len(answered) < len(jobs)  # at least one job per pass, whatever the clock says
        assert worker._wake.is_set()  # the jobs loop comes straight back (after upkeep's turn)
        # as the jobs loop does: wait for the wake-up (the pass gave the lock up, or a new debate was
        # left a moment to a less busy worker), then the next pass
        for _ in range(10 * len(jobs)):
            if all([await queue.outcome(job) is not None for job in jobs]):
                break
            await asyncio.wait_for(worker._wake.wait(), 5)
            worker._wake.clear()
            await worker._answer_jobs()
        assert all([await queue.outcome(job) is not None for job in jobs])
    finally:
        await worker.close()
        await engine.close()


async def test_a_debate_stopped_by_another_writer_is_continued_not_orphaned(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "db.sqlite3", demo_speed=400)
    runner = await Engine.open(settings=settings)
    other = await Engine.open(settings=settings)  # another process writing to the same log
    worker = Worker(runner, lease=3.0, poll=0.05)
    debating, completed = asyncio.Event(), asyncio.Event()

    def follow(message: object) -> None:
        if isinstance(message, LiveEvent):
            to = message.event.data.get("to")
            if to == "debating":
                debating.set()
            if to == "completed":
                completed.set()

    runner.subscribe_all(follow)
    debate_id = await runner.create(DebateConfig(topic="Tea or coffee", format="classic", rounds=1))
    await JobQueue(runner.store).put(debate_id, "run", "ada")
    await worker.start()
    try:
        async with asyncio.timeout(30):
            await debating.wait()
            # The worker's next commit is refused (StaleWrite): its runner reloads and stops quietly.
            await other.store.append(debate_id, EventKind.NOTE, {"type": "retry", "turn": "x", "text": "elsewhere"})
            await completed.wait()  # taken over from its log (before: its lease deleted, never continued)
        row = await runner.store.get_row(debate_id)
        assert row is not None and row.status == "completed"
    finally:
        await worker.close()
        await other.close()
        await runner.close()
