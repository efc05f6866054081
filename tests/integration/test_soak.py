"""The kill -9 soak (`bench/soak.py`) in small: four debates run by `python -m webapp debate`, killed
three times with SIGKILL and resumed with `python -m webapp resume`, on each store; every debate ends
completed with the transcript of an uninterrupted run. And the soak's check does catch a lost, doubled
or changed turn (a soak that could not fail would prove nothing)."""

from __future__ import annotations

import copy
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.soak import MAX_KILLS_PER_DEBATE, DebateResult, SoakError, check, deal_kills, soak
from tests.pg_fixtures import STORE_KINDS, fresh_database
from webapp.engine.state import DebateState
from webapp.models import DebateEvent, EventKind
from webapp.store.protocol import open_store


@pytest.fixture(params=STORE_KINDS)
async def soak_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str | Path]:
    """A new, empty database of each store in turn: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        yield tmp_path / "soak.sqlite3"
        return
    server = request.getfixturevalue("pg_server")  # skips where PostgreSQL cannot be had
    async with fresh_database(server) as dsn:
        yield dsn


async def test_debates_killed_mid_turn_and_resumed_end_as_if_never_killed(soak_db: str | Path,
                                                                          tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = await soak(soak_db, work, debates=4, kills=3, speed=2000, parallel=2, seed=3)
    assert result.problems == []
    assert len(result.kills) == 3 and result.ok
    assert any(k.mid_turn for k in result.kills), result.kills  # not only kills at judging
    assert sum(d.processes for d in result.debates) == 4 + 3  # each kill cost one resume, no more
    store = await open_store(soak_db)
    try:
        for debate in result.debates:
            row = await store.get_row(debate.debate_id)
            assert row is not None and row.status == "completed" and row.turn_count == debate.turns > 0
    finally:
        await store.close()


async def _finished_debate(tmp_path: Path) -> tuple[list[DebateEvent], DebateState]:
    """One small soak debate (no kills) on SQLite: its stored log and the reference it was checked against."""
    work = tmp_path / "one"
    work.mkdir()
    result = await soak(work / "db.sqlite3", work, debates=1, kills=0, speed=0, parallel=1)
    assert result.ok, result.problems
    store = await open_store(work / "db.sqlite3")
    try:
        events = await store.events(result.debates[0].debate_id)
    finally:
        await store.close()
    return events, DebateState.from_events(events)


def _renumbered(events: list[DebateEvent]) -> list[DebateEvent]:
    """New events (none of the originals' parsed payloads kept) numbered 1..n."""
    return [DebateEvent(**{**e.model_dump(), "seq": i}) for i, e in enumerate(events, 1)]


def _with_turn(events: list[DebateEvent], n: int, text: str | None = None, repeat: bool = False) -> list[DebateEvent]:
    """`events` with the n-th turn's text changed, or that turn stored a second time."""
    out = list(events)
    at = [i for i, e in enumerate(events) if e.kind is EventKind.TURN][n]
    if text is not None:
        data = copy.deepcopy(events[at].data)
        data["turn"]["text"] = text
        out[at] = DebateEvent(**{**events[at].model_dump(), "data": data})
    if repeat:
        out.insert(at + 1, events[at])
    return _renumbered(out)


async def test_the_check_finds_a_changed_doubled_or_lost_turn(tmp_path: Path) -> None:
    events, reference = await _finished_debate(tmp_path)
    snapshot = [e.data["turn"] for e in events if e.kind is EventKind.TURN][:3]

    async def problems(log: list[DebateEvent], snapshots: list[list[dict]] | None = None) -> list[str]:
        result = DebateResult(0, "d")
        await check(result, log, snapshots or [], reference)
        return result.problems

    assert await problems(events, [snapshot]) == []
    changed = await problems(_with_turn(events, 1, text="Something else entirely."), [snapshot])
    assert any("before kill 1 changed" in p for p in changed) and any("differs" in p for p in changed)
    assert any("stored twice" in p for p in await problems(_with_turn(events, 4, repeat=True)))
    lost = [e for e in events if not (e.kind is EventKind.TURN and e.data["turn"]["key"] == snapshot[0]["key"])]
    lost_problems = await problems(_renumbered(lost), [snapshot])
    assert any("turns missing" in p for p in lost_problems)
    unjudged = _renumbered([e for e in events if e.kind is not EventKind.VERDICT])
    assert any("0 verdicts" in p for p in await problems(unjudged))


def test_kills_are_dealt_to_random_debates_within_the_limit() -> None:
    dealt = deal_kills(50, 30, random.Random(1))
    assert sum(dealt) == 30 and len(dealt) == 50 and max(dealt) <= MAX_KILLS_PER_DEBATE
    assert dealt != deal_kills(50, 30, random.Random(2))
    with pytest.raises(SoakError):
        deal_kills(2, 2 * MAX_KILLS_PER_DEBATE + 1, random.Random(1))
