"""Webhooks when scaled out: a web side (its engine set up as with `ROSTRUM_WORKERS=external`, with the
web app's webhooks: a relay and a sender) and two debate worker processes (`python -m webapp worker`,
each with its own relay and sender) on one PostgreSQL. The worker that runs the debate queues its events;
the web side, which only reads them from the log, queues nothing; three senders share the queue, and
each delivery reaches the receiver once."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.child_env import child_env
from tests.webhook_receiver import TIMEOUT, Receiver, verify_signature
from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.engine.engine import Engine
from webapp.models import DebateConfig
from webapp.settings import Settings
from webapp.store.webhooks import WebhookStore
from webapp.webhooks import Webhooks
from webapp.webhooks.events import webhook_event
from webapp.webhooks.manage import WebhookAdmin
from webapp.workers import WorkerClient

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = "https://rostrum.example"


async def start_worker(dsn: str) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webapp", "worker", "--db", dsn, "--lease", "2", "--poll", "0.3",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=child_env(ROSTRUM_DEMO_SPEED="0", ROSTRUM_WEBHOOK_ALLOW_PRIVATE="1", ROSTRUM_PUBLIC_URL=PUBLIC))
    assert process.stdout is not None
    async with asyncio.timeout(TIMEOUT):
        line = await process.stdout.readline()
    assert line.startswith(b"worker "), line
    return process


async def test_workers_and_the_web_side_send_each_delivery_of_a_debate_once(pg_dsn: str,
                                                                            receiver: Receiver) -> None:
    settings = Settings(_env_file=None, db=pg_dsn, webhook_allow_private=True, public_url=PUBLIC)
    engine = await Engine.open(settings=settings)
    client = WorkerClient(engine.store, None)
    engine.workers = client  # what the web app does with ROSTRUM_WORKERS=external
    webhooks = Webhooks(engine, settings)
    await webhooks.start()
    workers = [await start_worker(pg_dsn), await start_worker(pg_dsn)]
    try:
        registered = await WebhookAdmin(Gate(engine, CLI), allow_private=True).add(
            receiver.url, "debate.started,debate.round,debate.completed")
        session = await Gate(engine, CLI).start(DebateConfig(topic="Night buses for every city", format="classic"))
        assert not session.running  # a worker runs it
        got = [await receiver.next()]
        while got[-1].headers["X-Rostrum-Event"] != "debate.completed":
            got.append(await receiver.next())
        hooks = WebhookStore(engine.store)
        wanted = [e for e in await engine.events(session.id) if webhook_event(e) is not None]
        # The senders record an attempt after its answer, in their own processes: wait for the records
        # (no event crosses the processes; each look reads the store).
        async with asyncio.timeout(TIMEOUT):
            while True:
                rows, total = await hooks.deliveries(limit=100)
                if total == len(wanted) and all(r.status == "delivered" for r in rows):
                    break
                await asyncio.sleep(0.1)
        while len(got) < len(wanted):
            got.append(await receiver.next())
    finally:
        await webhooks.close()
        for process in workers:
            process.terminate()
        for process in workers:
            await process.wait()
        await client.close()
        await engine.close()
    assert {f"{e.debate_id}:{e.seq}" for e in wanted} == {r.event_key for r in rows}  # queued once per event
    assert all(r.attempts == 1 for r in rows)  # taken by one sender, sent once
    assert sorted(r.headers["X-Rostrum-Delivery"] for r in got) == sorted(r.id for r in rows)
    assert receiver.arrivals.empty() and len(receiver.received) == len(rows)
    done = next(r for r in got if r.headers["X-Rostrum-Event"] == "debate.completed")
    assert verify_signature(registered.secret, done.headers, done.body)
    assert done.json["url"] == f"{PUBLIC}/debate/{session.id}" and done.json["status"] == "completed"
