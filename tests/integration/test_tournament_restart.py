"""A tournament inside one process: the store refuses a second debate for a slot, and a tournament
whose process stopped mid-way (engine closed like a crash) is resumed by the next start's manager,
continuing its unfinished debate rather than creating another."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from webapp.engine.engine import Engine
from webapp.engine.runner import DebateSession
from webapp.settings import Settings
from webapp.store.errors import DuplicateKey
from webapp.tournament.plan import Contender, Slot, Tournament, schedule, slot_config
from webapp.tournament.runner import TournamentManager, TournamentRunner
from webapp.tournament.store import TournamentBusy, TournamentStore


def plan() -> Tournament:
    return Tournament(models=[Contender.parse(m) for m in ("alpha", "beta", "gamma")], topics=["Tea beats coffee"],
                      format="round-limited", rounds=1, created_by="tester")


async def test_a_slot_has_at_most_one_debate(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "t.sqlite3", settings=Settings(_env_file=None, demo_speed=0))
    try:
        stored = await TournamentStore(engine.store).create(plan())
        config = slot_config(stored, schedule(stored)[0])
        await engine.create(config)
        with pytest.raises(DuplicateKey):
            await engine.create(config)
        await engine.create(slot_config(stored, schedule(stored)[1]))  # another slot is another debate
        assert sorted(await TournamentStore(engine.store).debates(stored.id)) == ["t0-m0-m1", "t0-m0-m2"]
    finally:
        await engine.close()


async def test_a_stopped_process_is_resumed_by_the_next_start(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite3"
    slow = Settings(_env_file=None, demo_speed=200)  # slow enough to stop in the middle of the first debate
    engine = await Engine.open(db, settings=slow)
    started = asyncio.Event()
    first: list[str] = []

    def on_debate(slot: Slot, session: DebateSession, ended: bool) -> None:
        first.append(session.id)
        started.set()

    stored = await TournamentStore(engine.store).create(plan())
    runner = TournamentRunner(engine, stored.id, on_debate=on_debate)
    task = asyncio.create_task(runner.run())
    await asyncio.wait_for(started.wait(), timeout=30)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await engine.close()  # like a crash: nothing recorded about the stop

    engine = await Engine.open(db, settings=Settings(_env_file=None, demo_speed=0))
    try:
        store = TournamentStore(engine.store)
        row = await store.get(stored.id)
        assert row is not None and row.status == "running"
        assert list(await store.debates(stored.id)) == ["t0-m0-m1"]  # created, not finished
        await engine.recover_interrupted()  # what the web app's start does first
        manager = TournamentManager(engine)
        assert await manager.resume_unfinished() == [stored.id]
        await asyncio.wait_for(manager.runners[stored.id][1], timeout=60)
        row = await store.get(stored.id)
        assert row is not None and (row.status, row.stop_reason) == ("completed", None)
        debates = await store.debates(stored.id)
        assert sorted(debates) == sorted(s.key for s in schedule(stored))
        assert debates["t0-m0-m1"].row.id == first[0]  # continued, not created again
        assert {d.row.status for d in debates.values()} == {"completed"}
    finally:
        await engine.close()


async def test_one_process_plays_a_tournament_at_a_time(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "t.sqlite3", settings=Settings(_env_file=None, demo_speed=0))
    try:
        store = TournamentStore(engine.store)
        stored = await store.create(plan())
        await store.claim(stored.id, "elsewhere.example:4242:abcd")  # a live claim from another host
        with pytest.raises(TournamentBusy, match=r"process 4242 on elsewhere\.example"):
            await TournamentRunner(engine, stored.id).run()
        assert await store.debates(stored.id) == {}
        await store.release(stored.id, "elsewhere.example:4242:abcd")
        # A claim left by a process of this host that no longer exists (killed) is not waited out.
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        await store.claim(stored.id, f"{socket.gethostname()}:{int(gone.stdout)}:dead")
        row = await TournamentRunner(engine, stored.id).run()
        assert row.status == "completed" and row.claimed()  # claimed while it played
        after = await store.get(stored.id)
        assert after is not None and (after.owner, after.lease_until) == (None, None)  # released at the end
    finally:
        await engine.close()


async def test_a_stop_pauses_the_playing_debates_and_a_resume_continues_them(tmp_path: Path) -> None:
    """What Ctrl-C does in the CLI: no further debate starts, the playing one is paused, the tournament
    says why it stopped; continuing it resumes that same debate."""
    engine = await Engine.open(tmp_path / "t.sqlite3", settings=Settings(_env_file=None, demo_speed=200))
    try:
        store = TournamentStore(engine.store)
        stored = await store.create(plan())
        started = asyncio.Event()
        playing: list[str] = []

        def on_debate(slot: Slot, session: DebateSession, ended: bool) -> None:
            if not ended:
                playing.append(session.id)
                started.set()

        runner = TournamentRunner(engine, stored.id, actor="tester", on_debate=on_debate)
        task = asyncio.create_task(runner.run())
        await asyncio.wait_for(started.wait(), timeout=30)
        runner.request_stop("stopped with Ctrl-C")
        await runner.pause_playing("tester")
        row = await asyncio.wait_for(task, timeout=30)
        assert (row.status, row.stop_reason) == ("stopped", "stopped with Ctrl-C")
        debates = await store.debates(stored.id)
        assert list(debates) == ["t0-m0-m1"] and debates["t0-m0-m1"].row.status == "paused"

        engine.settings.demo_speed = 0
        row = await TournamentRunner(engine, stored.id, actor="tester").run()
        assert (row.status, row.stop_reason) == ("completed", None)
        debates = await store.debates(stored.id)
        assert len(debates) == 3 and debates["t0-m0-m1"].row.id == playing[0]
    finally:
        await engine.close()


async def test_no_more_debates_play_at_once_than_the_concurrency(tmp_path: Path) -> None:
    engine = await Engine.open(tmp_path / "t.sqlite3", settings=Settings(_env_file=None, demo_speed=2000))
    try:
        store = TournamentStore(engine.store)
        stored = await store.create(plan().model_copy(update={"concurrency": 2, "swap_sides": True}))
        playing: set[str] = set()
        most = 0

        def on_debate(slot: Slot, session: DebateSession, ended: bool) -> None:
            nonlocal most
            if ended:
                playing.discard(session.id)
            else:
                playing.add(session.id)
                most = max(most, len(playing))

        row = await TournamentRunner(engine, stored.id, on_debate=on_debate).run()
        assert row.status == "completed" and len(await store.debates(stored.id)) == 6
        assert most == 2
    finally:
        await engine.close()
