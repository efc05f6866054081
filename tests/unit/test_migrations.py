"""Every old schema migrates forward to the current one with its data intact: the numbered schemas
Rostrum wrote before migrations had names (`schema_version` 1..5), and databases part-way through the
named migrations. Inserting a migration never renumbers the others; a newer database is refused."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from webapp.engine.state import DebateState
from webapp.models import DebateConfig, EventKind
from webapp.store import Store, StoreTooNew, repository
from webapp.store import migrations as migrations_module
from webapp.store.accounts import Accounts
from webapp.store.migrations import (
    LEGACY_MARK,
    LEGACY_VERSIONS,
    MIGRATIONS,
    NAMES,
    Migration,
    applied_migrations,
    applied_migrations_async,
    migrate,
    refuse_newer,
    statements,
)

CONFIG = DebateConfig(topic="Should Cities BAN cars?", format="classic").model_dump(mode="json")
PARTICIPANTS = [{"id": "affirmative", "name": "Affirmative", "position": "pro"}]


def _columns(db: sqlite3.Connection, table: str) -> list[tuple]:
    return [tuple(r) for r in db.execute(f"PRAGMA table_info({table})")]


def _indexes(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _legacy_database(path: Path, version: int) -> sqlite3.Connection:
    """A database exactly as Rostrum wrote it before migrations had names: the first `version` migrations,
    each in its own transaction, numbered in `schema_version` (the code of that time, frozen here)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    for n in range(version):
        db.executescript(
            f"BEGIN;\n{MIGRATIONS[n].sql}\nINSERT INTO schema_version (version) VALUES ({n + 1});\nCOMMIT;")
    return db


def _named_database(path: Path, count: int) -> sqlite3.Connection:
    """A database that a Rostrum with named migrations left with only the first `count` of them."""
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db, only=NAMES[:count]) == list(NAMES[:count])
    return db


def _insert_rows(db: sqlite3.Connection, version: int) -> None:
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
    db.execute(f"INSERT INTO debates ({names}) VALUES ({', '.join('?' * len(columns))})",
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
        db.execute(
            "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)",
            ("old1", seq, kind, f"2024-01-02T03:04:0{seq}+00:00", json.dumps(data), key),
        )


def test_migrations_have_unique_names_and_the_numbered_ones_keep_their_place():
    assert len(set(NAMES)) == len(NAMES) == len(MIGRATIONS) >= len(LEGACY_VERSIONS) == 5
    assert NAMES[:5] == LEGACY_VERSIONS
    assert LEGACY_MARK == 6
    for migration in MIGRATIONS:
        assert list(statements(migration.sql)), migration.name


OLD_SCHEMAS = [("numbered", v) for v in range(1, len(LEGACY_VERSIONS) + 1)] + [
    ("named", n) for n in range(1, len(NAMES))
]


@pytest.mark.parametrize(("kind", "version"), OLD_SCHEMAS, ids=[f"{k}-{v}" for k, v in OLD_SCHEMAS])
async def test_old_schema_migrates_with_data_intact(tmp_path: Path, kind: str, version: int):
    path = tmp_path / "old.sqlite3"
    db = _legacy_database(path, version) if kind == "numbered" else _named_database(path, version)
    _insert_rows(db, version)
    db.close()

    store = await Store.open(path)
    try:
        assert await applied_migrations_async(store._writer) == list(NAMES)
        versions = [r[0] for r in await store.fetchall("SELECT version FROM schema_version ORDER BY version")]
        assert versions == (list(range(1, version + 1)) if kind == "numbered" else []) + [LEGACY_MARK]

        # The migrated schema is exactly the schema of a brand-new database.
        fresh = await Store.open(tmp_path / "fresh.sqlite3")
        try:
            with contextlib.closing(sqlite3.connect(path)) as db, \
                    contextlib.closing(sqlite3.connect(fresh.path)) as new:
                assert _tables(db) == _tables(new)
                for table in _tables(new):
                    assert _columns(db, table) == _columns(new, table), table
                assert _indexes(db) == _indexes(new)
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
        assert await applied_migrations_async(second._writer) == list(NAMES)
        assert [r[0] for r in await second._writer.execute_fetchall("SELECT version FROM schema_version")] == [
            LEGACY_MARK]
    finally:
        await second.close()
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db) == []
    db.close()


def test_a_migration_inserted_between_others_is_applied_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Names, not positions: a migration added in the middle of the list runs on a database that has
    all the others, and none of them runs again (a numbered scheme would have re-run the last one)."""
    path = tmp_path / "db.sqlite3"
    db = _named_database(path, len(NAMES))
    inserted = Migration("002b_inserted_later", "CREATE TABLE inserted_later (x INTEGER);")
    patched = [*MIGRATIONS[:2], inserted, *MIGRATIONS[2:]]
    monkeypatch.setattr(migrations_module, "MIGRATIONS", patched)
    monkeypatch.setattr(migrations_module, "NAMES", tuple(m.name for m in patched))
    assert migrate(db) == ["002b_inserted_later"]
    assert "inserted_later" in _tables(db)
    assert applied_migrations(db) == [*NAMES, "002b_inserted_later"]
    assert migrate(db) == []
    db.close()


def test_a_failed_migration_leaves_the_database_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "db.sqlite3"
    db = _named_database(path, 2)
    broken = [*MIGRATIONS[:3], Migration("004_broken", "CREATE TABLE half_done (x INTEGER); SELECT nonsense();")]
    monkeypatch.setattr(migrations_module, "MIGRATIONS", broken)
    monkeypatch.setattr(migrations_module, "NAMES", tuple(m.name for m in broken))
    with pytest.raises(sqlite3.OperationalError):
        migrate(db)
    assert not db.in_transaction
    assert applied_migrations(db) == list(NAMES[:2])  # 003 ran in the same transaction: rolled back too
    assert "half_done" not in _tables(db)
    db.close()


@pytest.mark.parametrize("kind", ["numbered", "named"])
async def test_a_database_from_a_newer_rostrum_is_refused_untouched(tmp_path: Path, kind: str):
    path = tmp_path / "db.sqlite3"
    if kind == "numbered":  # what a numbered-era Rostrum would do with a file from a later numbered one
        db = _legacy_database(path, len(LEGACY_VERSIONS))
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (len(LEGACY_VERSIONS) + 1,))
    else:
        db = _named_database(path, len(NAMES))
        db.execute("INSERT INTO _rostrum_migrations (name, applied_at) VALUES ('900_future', 'later')")
    db.close()
    before = path.read_bytes()
    with pytest.raises(StoreTooNew, match="newer than this Rostrum") as caught:
        await Store.open(path)
    assert caught.value.path == path and str(path) in str(caught.value)
    assert path.read_bytes() == before


def _migrated_by_another_process_midway(path: Path, conn: sqlite3.Connection) -> None:
    """Have another connection migrate `path` (and commit) as soon as `conn` starts its first query on
    `schema_version`: between the newer-schema check's queries, as when processes open a fresh file."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    done: list[str] = []

    def trace(sql: str) -> None:
        if "schema_version" in sql and not done:
            done.append(sql)
            migrate(other)
            other.close()

    conn.set_trace_callback(trace)


@pytest.mark.parametrize("via", ["sqlite3", "store"])
async def test_the_newer_schema_check_reads_one_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via: str
):
    """Another process migrating a fresh database between the check's queries is not mistaken for a
    newer Rostrum (`schema_version` at LEGACY_MARK seen, `_rostrum_migrations` not yet)."""
    path = tmp_path / "db.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as setup:
        setup.execute("PRAGMA journal_mode=WAL")
    if via == "sqlite3":
        db = sqlite3.connect(path, isolation_level=None)
        _migrated_by_another_process_midway(path, db)
        refuse_newer(db)
        assert not db.in_transaction
        db.close()
    else:
        real_connect = repository._connect

        def connect(p: Path) -> sqlite3.Connection:
            conn = real_connect(p)
            _migrated_by_another_process_midway(path, conn)
            return conn

        monkeypatch.setattr(repository, "_connect", connect)
        store = await Store.open(path)
        await store.close()
    with contextlib.closing(sqlite3.connect(path)) as check:
        assert applied_migrations(check) == list(NAMES)


async def test_v4_backfills_interrupted_from_the_last_transition(tmp_path: Path):
    path = tmp_path / "v3.sqlite3"
    db = _legacy_database(path, 3)
    _insert_rows(db, 3)
    db.execute(
        "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)",
        ("old1", 5, "transition", "2024-01-02T03:04:09+00:00",
         json.dumps({"event": "PAUSE", "from": "preparation", "to": "paused", "params": {"interrupted": True}}), None),
    )
    db.execute("UPDATE debates SET last_seq = 5")
    db.close()
    store = await Store.open(path)
    try:
        row = await store.get_row("old1")
        assert row is not None and row.interrupted is True
    finally:
        await store.close()
