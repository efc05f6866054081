"""The tables debate workers coordinate through, on both stores: one lease per debate at a time, an
expired lease is taken and its former holder can no longer renew it, a job is answered exactly once, and
a debate's lease and jobs go with it. Then a worker in this process on SQLite without Redis (the job
table polled): it starts a debate, and a command the state machine refuses is refused the same way."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from webapp.engine.api import Command
from webapp.engine.engine import Engine
from webapp.engine.machine import State, TransitionNotAllowed
from webapp.engine.stream import LiveEvent
from webapp.models import DebateConfig
from webapp.settings import Settings
from webapp.store.protocol import EventStore
from webapp.workers import JobQueue, Leases, Worker, WorkerClient


async def _debate(store: EventStore) -> str:
    return await Engine(store, settings=Settings()).create(DebateConfig(topic="Tea or coffee", format="classic"))


async def test_one_worker_holds_a_lease_at_a_time(any_store: EventStore) -> None:
    debate_id = await _debate(any_store)
    a, b = Leases(any_store, "a", 10.0), Leases(any_store, "b", 10.0)
    assert await a.acquire(debate_id)
    assert not await b.acquire(debate_id)
    assert await a.acquire(debate_id)  # taking our own again is a renewal
    assert not await b.renew(debate_id)
    assert await a.renew(debate_id)
    holder = await a.holder(debate_id)
    assert holder is not None and holder[0] == "a"
    assert await b.held_elsewhere() == {debate_id} and await a.held_elsewhere() == set()
    await b.release(debate_id)  # not b's: nothing happens
    assert not await b.acquire(debate_id)
    await a.release(debate_id)
    assert await b.acquire(debate_id)


async def test_an_expired_lease_is_taken_and_its_old_holder_cannot_renew_it(any_store: EventStore) -> None:
    debate_id = await _debate(any_store)
    dead, alive = Leases(any_store, "dead", -1.0), Leases(any_store, "alive", 10.0)  # -1: expired at once
    assert await dead.acquire(debate_id)
    assert await alive.held_elsewhere() == set()  # an expired lease holds nothing
    assert await alive.acquire(debate_id)
    assert not await dead.renew(debate_id)
    holder = await dead.holder(debate_id)
    assert holder is not None and holder[0] == "alive"


async def test_a_job_is_answered_once_and_goes_with_its_debate(any_store: EventStore) -> None:
    debate_id = await _debate(any_store)
    queue = JobQueue(any_store)
    first = await queue.put(debate_id, "command", "ada", {"command": "pause"})
    second = await queue.put(debate_id, "run", "bob")
    pending = await queue.pending()
    assert [(j.id, j.kind, j.args, j.actor) for j in pending] == [
        (first, "command", {"command": "pause"}, "ada"), (second, "run", {}, "bob")]
    assert await queue.outcome(first) is None
    assert await queue.finish(first, False, {"message": "no"})
    assert not await queue.finish(first, True, {"message": "again"})  # a second answer is ignored
    outcome = await queue.outcome(first)
    assert outcome is not None and (outcome.ok, outcome.detail) == (False, {"message": "no"})
    assert [j.id for j in await queue.pending()] == [second]
    assert await Leases(any_store, "a", 10.0).acquire(debate_id)
    assert await any_store.delete_debate(debate_id)
    assert await queue.pending() == []
    assert await any_store.leases.all() == []


async def test_a_worker_without_redis_runs_debates_and_refuses_as_the_engine_does(tmp_path: Path) -> None:
    settings = Settings(db=tmp_path / "db.sqlite3", demo_speed=0)
    web = await Engine.open(settings=settings)
    runner = await Engine.open(settings=settings)
    worker = Worker(runner, lease=3.0, poll=0.05)
    client = WorkerClient(web.store, poll=0.05)
    web.workers = client
    completed = asyncio.Event()
    runner.subscribe_all(lambda m: isinstance(m, LiveEvent) and m.event.data.get("to") == "completed"
                         and completed.set())  # the worker's engine runs it
    await worker.start()
    try:
        session = await web.start(DebateConfig(topic="Tea or coffee", format="classic"))
        assert not session.running
        async with asyncio.timeout(30):
            await completed.wait()
        await session.catch_up()
        assert session.status is State.COMPLETED
        with pytest.raises(TransitionNotAllowed) as remote:
            await web.command(session, Command.PAUSE, actor="ada")
        local = await Engine.open(settings=settings)
        with pytest.raises(TransitionNotAllowed) as here:
            await (await local.session(session.id)).send(Command.PAUSE, actor="ada")
        assert (remote.value.state, str(remote.value)) == (here.value.state, str(here.value))
        await local.close()
    finally:
        await worker.close()
        await client.close()
        await web.close()
        await runner.close()


async def test_only_running_debates_whose_lease_expired_are_orphans(any_store: EventStore) -> None:
    ids = [await _debate(any_store) for _ in range(3)]
    async with any_store.transaction() as tx:
        await tx.execute("UPDATE debates SET status = 'debating'")
    leaseless, held, stopped = ids
    a, b = Leases(any_store, "a", 10.0), Leases(any_store, "b", 10.0)
    assert await a.acquire(held)
    assert await a.acquire(stopped)
    assert await b.orphans(["debating"]) == []  # a lease-less runner (the CLI, say) keeps its debate
    await a.expire(stopped)  # a worker stopping while it runs: the next one takes over at once
    assert await b.orphans(["debating"]) == [stopped]
    assert await b.orphans(["paused"]) == []
    assert leaseless not in await b.orphans(["debating"])
