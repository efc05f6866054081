"""Every old schema version migrates forward to the current one with its data intact."""

from __future__ import annotations

import json
from pathlib import Path

import aiosqlite
import pytest

from webapp.engine.state import DebateState
from webapp.models import DebateConfig, EventKind
from webapp.store import Store
from webapp.store.accounts import Accounts
from webapp.store.migrations import LATEST, MIGRATIONS
from webapp.store.repository import migrate, schema_version

CONFIG = DebateConfig(topic="Should Cities BAN cars?", format="classic").model_dump(mode="json")
PARTICIPANTS = [{"id": "affirmative", "name": "Affirmative", "position": "pro"}]


async def _columns(db: aiosqlite.Connection, table: str) -> list[tuple]:
    async with db.execute(f"PRAGMA table_info({table})") as cur:
        return [tuple(r) for r in await cur.fetchall()]


async def _indexes(db: aiosqlite.Connection) -> set[str]:
    async with db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL") as cur:
        return {r[0] for r in await cur.fetchall()}


async def _insert_rows(db: aiosqlite.Connection, version: int) -> None:
    """A debate and its events as a Rostrum at `version` would have written them."""
    columns = {
        "id": "old1", "topic": "Should Cities BAN cars?", "format": "classic", "config": json.dumps(CONFIG),
        "status": "paused", "phase": "rebuttal", "round": 1, "total_rounds": 1, "cost_usd": 0.5,
        "turn_count": 0, "participants": json.dumps(PARTICIPANTS), "created_at": "2024-01-02T03:04:05+00:00",
        "updated_at": "2024-01-02T03:05:00+00:00", "last_seq": 4,
    }
    if version >= 2:
        columns["unpriced"] = 1
    if version >= 3:
        columns["topic_search"] = "should cities ban cars?"
    if version >= 4:
        columns["interrupted"] = 0
    if version >= 5:
        columns["created_by"] = "ada"
    names = ", ".join(columns)
    await db.execute(f"INSERT INTO debates ({names}) VALUES ({', '.join('?' * len(columns))})",
                     tuple(columns.values()))
    events = [
        (1, "created", {"config": CONFIG}, "created"),
        (2, "transition", {"event": "START", "from": "idle", "to": "initializing", "params": {}}, None),
        (3, "transition", {"event": "INIT_COMPLETE", "from": "initializing", "to": "preparation",
                           "params": {"position": {"phase": "preparation", "round": 1}}}, None),
        (4, "transition", {"event": "PAUSE", "from": "preparation", "to": "paused",
                           "params": {"position": {"phase": "preparation", "round": 1, "speaker": "negative"}}},
         None),
    ]
    for seq, kind, data, key in events:
        await db.execute(
            "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)",
            ("old1", seq, kind, f"2024-01-02T03:04:0{seq}+00:00", json.dumps(data), key),
        )
    await db.commit()


def test_migrations_are_numbered_from_one():
    assert LATEST == len(MIGRATIONS) >= 1


@pytest.mark.parametrize("version", range(1, LATEST + 1))
async def test_old_schema_migrates_with_data_intact(tmp_path: Path, version: int):
    path = tmp_path / "old.sqlite3"
    async with aiosqlite.connect(path) as db:
        assert await migrate(db, target=version) == version
        assert await schema_version(db) == version
        await _insert_rows(db, version)

    store = await Store.open(path)
    try:
        db = store._db
        assert await schema_version(db) == LATEST
        async with db.execute("SELECT version FROM schema_version ORDER BY version") as cur:
            assert [r[0] for r in await cur.fetchall()] == list(range(1, LATEST + 1))

        # The migrated schema is exactly the schema of a brand-new database.
        fresh = await Store.open(tmp_path / "fresh.sqlite3")
        try:
            for table in ("debates", "events", "schema_version", "users", "share_links", "audit"):
                assert await _columns(db, table) == await _columns(fresh._db, table)
            assert await _indexes(db) == await _indexes(fresh._db)
        finally:
            await fresh.close()

        row = await store.get_row("old1")
        assert row is not None
        assert (row.topic, row.status, row.phase, row.round, row.cost_usd) == (
            "Should Cities BAN cars?", "paused", "rebuttal", 1, 0.5)
        assert row.participants == PARTICIPANTS
        assert row.created_by == ("ada" if version >= 5 else "")  # v5 added it; older rows have no creator
        assert row.unpriced is (version >= 2)  # the column did not exist before v2: default 0
        # v4 backfills "interrupted" from the last transition (a PAUSE without interrupted here)
        assert row.interrupted is False
        # Topic search works on rows written before the search column existed.
        rows, total = await store.list_debates(query="ban cars")
        assert total == 1 and rows[0].id == "old1"

        events = await store.events("old1")
        assert [e.seq for e in events] == [1, 2, 3, 4]
        assert events[0].kind is EventKind.CREATED and events[0].data == {"config": CONFIG}
        state = DebateState.from_events(events)
        assert state.status.value == "paused"
        assert state.machine.context.position.speaker == "negative"

        # The migrated log keeps working: sequence and idempotency keys carry on.
        assert (await store.append("old1", EventKind.NOTE, {"after": "migration"})).seq == 5
        assert await store.append("old1", EventKind.TURN, {}, idem_key="created") is None

        # The v5 account tables work on a migrated database; deleting the debate removes its links.
        accounts = Accounts(store)
        await accounts.add_user("ada", "admin", None)
        await accounts.add_link("old1", "digest", "ada", None)
        assert [u.username for u in await accounts.users()] == ["ada"]
        assert await store.delete_debate("old1")
        assert await accounts.links("old1") == [] and await store.get_row("old1") is None
    finally:
        await store.close()


async def test_migrating_twice_is_a_no_op(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    first = await Store.open(path)
    await first.close()
    second = await Store.open(path)
    try:
        async with second._db.execute("SELECT count(*) FROM schema_version") as cur:
            assert (await cur.fetchone())[0] == LATEST
    finally:
        await second.close()


async def test_v4_backfills_interrupted_from_the_last_transition(tmp_path: Path):
    path = tmp_path / "v3.sqlite3"
    async with aiosqlite.connect(path) as db:
        await migrate(db, target=3)
        await _insert_rows(db, 3)
        await db.execute(
            "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)",
            ("old1", 5, "transition", "2024-01-02T03:04:09+00:00",
             json.dumps({"event": "PAUSE", "from": "preparation", "to": "paused",
                         "params": {"interrupted": True}}), None),
        )
        await db.execute("UPDATE debates SET last_seq = 5")
        await db.commit()
    store = await Store.open(path)
    try:
        row = await store.get_row("old1")
        assert row is not None and row.interrupted is True
    finally:
        await store.close()
