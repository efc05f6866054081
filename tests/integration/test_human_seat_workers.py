"""A human seat on debate workers (real PostgreSQL and Redis): the debate waits for the person's turn
on the worker that ran it; when that worker is killed (SIGKILL) while the seat waits, another worker
takes the wait over from the log once the lease expires, and the seat's time limit still ends in a
skipped turn; a turn sent through the web side's gate reaches a worker and the debate goes on."""

from __future__ import annotations

import os
import signal
from typing import Any

from tests.integration.test_workers import LEASE, TAKEOVER_LIMIT, Signals, Worker, web  # noqa: F401
from webapp.access.gate import Gate
from webapp.access.roles import CLI
from webapp.engine.api import Command
from webapp.models import DebateConfig, EventKind
from webapp.workers import Leases


def _config(seconds: int) -> DebateConfig:
    return DebateConfig.model_validate({
        "topic": "Should night buses run every hour?", "format": "classic", "rounds": 1, "questions": 1,
        "human_turn_seconds": seconds,
        "participants": [{"name": "Me", "provider": "human", "position": "pro"},
                         {"name": "Bot", "provider": "demo", "position": "con"}]})


async def test_a_waiting_seat_survives_a_worker_kill_and_times_out(
        web: Any, pg_dsn: str, redis_url: str) -> None:  # noqa: F811
    engine, client, bus = web
    gate = Gate(engine, CLI)
    workers = [await Worker.start(pg_dsn, redis_url), await Worker.start(pg_dsn, redis_url)]
    try:
        session = await gate.start(_config(seconds=12))
        debate_id = session.id
        signals = Signals()
        bus.watch(debate_id, signals)

        async def transitions(event: str) -> list[Any] | None:
            found = [e for e in await engine.events(debate_id)
                     if e.kind is EventKind.TRANSITION and e.data.get("event") == event]
            return found or None

        await signals.until(lambda: transitions("TURN_DUE"))
        await session.catch_up()
        # The first wait: answered through the gate, carried out by a worker.
        await gate.command(session, Command.SEND_TURN, text="Night buses keep shift workers safe.")
        await signals.until(lambda: transitions("TURN_SENT"))

        async def second_wait() -> bool:
            found = await transitions("TURN_DUE")
            return bool(found and len(found) >= 2)

        await signals.until(second_wait)
        holder = await Leases(engine.store, "test", LEASE).holder(debate_id)
        assert holder is not None  # the worker keeps the waiting debate (and its clock)
        owner = next(w for w in workers if f":{w.process.pid}:" in holder[0])
        os.kill(owner.process.pid, signal.SIGKILL)
        await owner.process.wait()
        before = [e.data["turn"]["key"] for e in await engine.events(debate_id) if e.kind is EventKind.TURN]

        await signals.until(lambda: transitions("TURN_TIMEOUT"), timeout=TAKEOVER_LIMIT + 12)
        after = [e.data["turn"] for e in await engine.events(debate_id) if e.kind is EventKind.TURN]
        assert [t["key"] for t in after][:len(before)] == before  # nothing lost
        skipped = [t for t in after if t.get("skipped")]
        assert len(skipped) == 1 and "did not send this turn within 12 seconds" in skipped[0]["notes"][0]
        await client.send(debate_id, Command.STOP, actor="ada", verdict=False)
    finally:
        for worker in workers:
            worker.stop()
        for worker in workers:
            await worker.process.wait()
