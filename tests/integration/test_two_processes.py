"""Two processes on one database (say the CLI running a debate while the web app restarts): the log
stays consistent, each write checks it extends what its writer last read, and the debate can be resumed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.doubles import mid_second_turn
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, EventKind
from webapp.providers.demo import OneProvider
from webapp.store import StaleWrite
from webapp.store.migrations import NAMES, applied_migrations

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 8


async def test_a_second_writer_takes_over_and_the_first_stops_cleanly(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    held = mid_second_turn()
    cli = await Engine.open(db, providers=OneProvider(held))
    web = await Engine.open(db, providers=OneProvider())
    try:
        session = await cli.start(DebateConfig(topic="Should exams be open-book?", format="oxford", rounds=1))
        await held.reached.wait()  # the CLI is in the middle of the second turn
        # The web app (re)starts and sees a "running" debate that it does not run: it marks it interrupted.
        assert await web.recover_interrupted() == [session.id]
        held.gate.set()
        # The CLI's next write is refused as stale; its runner stops and its view is reloaded from the log.
        assert await session.join() is State.PAUSED
        assert session.state.machine.context.interrupted
        events = await web.events(session.id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        rebuilt = DebateState.from_events(events)  # the log still folds: nothing was written out of order
        assert rebuilt.status is State.PAUSED
        # The web app resumes and finishes it.
        taken_over = await web.session(session.id)
        await taken_over.resume()
        assert await taken_over.join() is State.COMPLETED
        keys = [t.key for t in taken_over.state.turns]
        assert len(keys) == len(set(keys)) == 4
    finally:
        await cli.close()
        await web.close()


async def test_append_with_a_stale_expectation_stores_nothing(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider())
    try:
        debate_id = await engine.create(DebateConfig(topic="Stale writes", format="oxford"))
        try:
            await engine.store.append(debate_id, EventKind.NOTE, {"x": 1}, expected_seq=5)
        except StaleWrite as exc:
            assert "changed by another process" in str(exc)
        else:
            raise AssertionError("a stale append was stored")
        assert [e.seq for e in await engine.events(debate_id)] == [1]
    finally:
        await engine.close()


async def test_catch_up_folds_in_and_broadcasts_what_another_process_wrote(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    runner = await Engine.open(db, providers=OneProvider())
    watcher = await Engine.open(db, providers=OneProvider())
    try:
        debate_id = await runner.create(DebateConfig(topic="Is remote work here to stay?", format="oxford"))
        watched = await watcher.session(debate_id)  # loaded before anything ran
        heard: list[int] = []
        watched.subscribe(lambda m: heard.append(m.event.seq) if hasattr(m, "event") else None)
        session = await runner.session(debate_id)
        session.ensure_running()
        assert await session.join() is State.COMPLETED
        count = await watched.catch_up()
        assert count == session.state.last_seq - 1 and heard == list(range(2, session.state.last_seq + 1))
        assert watched.state.status is State.COMPLETED
        assert [t.text for t in watched.state.turns] == [t.text for t in session.state.turns]
        assert await watched.catch_up() == 0
    finally:
        await runner.close()
        await watcher.close()


# --- many processes opening one fresh database at once -------------------------------------------

OPENER = """
import asyncio, sys
from webapp.store import Store

path = sys.argv[1]
print("ready", flush=True)
sys.stdin.readline()  # the barrier: every process is imported and waiting, then all go at once

async def main():
    store = await Store.open(path)
    await store.close()

try:
    asyncio.run(main())
except Exception as exc:
    print(f"failed {type(exc).__name__}: {exc}", flush=True)
else:
    print("opened", flush=True)
"""


def test_processes_opening_a_fresh_database_together_all_succeed(tmp_path: Path) -> None:
    """The write lock is taken before the schema is read: one process migrates, the others wait for it
    and find the work done (before, about half of the opens were refused as 'corrupt')."""
    path = tmp_path / "fresh.sqlite3"
    processes = [
        subprocess.Popen([sys.executable, "-c", OPENER, str(path)], cwd=ROOT, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(PROCESSES)
    ]
    try:
        for process in processes:
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        for process in processes:  # go
            assert process.stdin is not None
            process.stdin.write("\n")
            process.stdin.flush()
        outcomes = [process.communicate(timeout=60)[0].strip() for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    assert outcomes == ["opened"] * PROCESSES, outcomes
    db = sqlite3.connect(path)
    try:
        assert applied_migrations(db) == list(NAMES)  # each migration applied once
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()
