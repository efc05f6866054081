"""The PostgreSQL store's named, forward-only migrations (`webapp.store.pg_migrations`), on a real server:
recorded by name, an older schema migrated with its data, a newer one refused untouched, a failed
migration undone whole, processes opening a new database together migrating it once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from webapp.models import EventKind
from webapp.store import StoreTooNew, pg_migrations
from webapp.store import migrations as sqlite_migrations
from webapp.store.migrations import Migration
from webapp.store.pg_migrations import NAMES, applied_migrations, migrate
from webapp.store.postgres import PostgresStore


@pytest.fixture
async def conn(pg_dsn: str) -> AsyncIterator[Any]:
    connection = await asyncpg.connect(pg_dsn)
    yield connection
    await connection.close()


def test_both_stores_have_the_same_migrations_by_name() -> None:
    """One list of names: a change to the schema is made, and named, for both stores."""
    assert NAMES == sqlite_migrations.NAMES
    assert len(set(NAMES)) == len(NAMES)


async def test_a_new_database_gets_every_migration_recorded_in_order(pg_dsn: str, conn: Any) -> None:
    store = await PostgresStore.open(pg_dsn)
    await store.close()
    assert await applied_migrations(conn) == list(NAMES)
    assert await migrate(conn) == []  # a second open changes nothing


async def test_an_old_schema_migrates_with_its_data_intact(pg_dsn: str, conn: Any) -> None:
    """A database at 003 (before `interrupted`, accounts, series): opening it applies the rest, backfills
    `interrupted` from the last transition, and every debate and event is still there."""
    assert await migrate(conn, only=NAMES[:3]) == list(NAMES[:3])
    await conn.execute(
        "INSERT INTO debates (id, topic, topic_search, format, config, status, created_at, updated_at, last_seq)"
        " VALUES ('old', 'Old topic', 'old topic', 'classic', $1, 'paused', '2024-01-01', '2024-01-02', 2),"
        " ('calm', 'Calm', 'calm', 'classic', '{}', 'paused', '2024-01-01', '2024-01-01', 1)",
        json.dumps({"series": "old"}),
    )
    await conn.execute(
        "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES"
        " ('old', 1, 'created', '2024-01-01', '{}', 'created'),"
        " ('old', 2, 'transition', '2024-01-02', $1, NULL),"
        " ('calm', 1, 'created', '2024-01-01', '{}', 'created')",
        json.dumps({"params": {"interrupted": True}}),
    )
    store = await PostgresStore.open(pg_dsn)
    try:
        assert await applied_migrations(conn) == list(NAMES)
        old, calm = await store.get_row("old"), await store.get_row("calm")
        assert old is not None and old.interrupted and old.topic == "Old topic" and old.created_by == ""
        assert calm is not None and not calm.interrupted
        assert [e.seq for e in await store.events("old")] == [1, 2]
        assert await store.series_ids("old") == ["old"]  # 006's index serves the series query
        # The log goes on where it was.
        assert (await store.append("old", EventKind.NOTE, {}, expected_seq=3)) is not None
    finally:
        await store.close()


async def test_a_database_from_a_newer_rostrum_is_refused_untouched(pg_dsn: str, conn: Any) -> None:
    await (await PostgresStore.open(pg_dsn)).close()
    await conn.execute("INSERT INTO _rostrum_migrations (name, applied_at) VALUES ('999_from_the_future', 'x')")
    tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
    with pytest.raises(StoreTooNew, match=r"newer.*999_from_the_future"):
        await PostgresStore.open(pg_dsn)
    assert await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1") == tables
    assert (await applied_migrations(conn))[-1] == "999_from_the_future"


async def test_a_failed_migration_leaves_the_database_as_it_was(
    pg_dsn: str, conn: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    await migrate(conn, only=NAMES[:2])
    broken = [*pg_migrations.MIGRATIONS, Migration("999_broken", "CREATE TABLE fine (x int); SELECT * FROM nowhere;")]
    monkeypatch.setattr(pg_migrations, "MIGRATIONS", broken)
    monkeypatch.setattr(pg_migrations, "NAMES", tuple(m.name for m in broken))
    with pytest.raises(asyncpg.exceptions.UndefinedTableError):
        await migrate(conn)
    assert await applied_migrations(conn) == list(NAMES[:2])
    assert await conn.fetchval("SELECT to_regclass('fine') IS NULL AND to_regclass('users') IS NULL")


async def test_processes_opening_a_new_database_together_migrate_it_once(pg_dsn: str, conn: Any) -> None:
    stores = await asyncio.gather(*(PostgresStore.open(pg_dsn) for _ in range(3)))
    for store in stores:
        await store.close()
    assert await applied_migrations(conn) == list(NAMES)


async def test_a_migration_inserted_between_others_is_applied_alone(
    pg_dsn: str, conn: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Names, not positions: a migration added in the middle runs on a database that has all the
    others, and none of them runs again."""
    await migrate(conn)
    inserted = Migration("002b_inserted_later", "CREATE TABLE inserted_later (x INTEGER);")
    patched = [*pg_migrations.MIGRATIONS[:2], inserted, *pg_migrations.MIGRATIONS[2:]]
    monkeypatch.setattr(pg_migrations, "MIGRATIONS", patched)
    monkeypatch.setattr(pg_migrations, "NAMES", tuple(m.name for m in patched))
    assert await migrate(conn) == ["002b_inserted_later"]
    assert await conn.fetchval("SELECT to_regclass('inserted_later') IS NOT NULL")
    assert await applied_migrations(conn) == [*NAMES, "002b_inserted_later"]
    assert await migrate(conn) == []


async def test_the_digest_migration_back_fills_each_debates_last_verdict(pg_dsn: str, conn: Any) -> None:
    """A database from before 010: its stored verdicts are digested (the last of each debate; text that
    is not JSON is skipped, not an error), and the trigger digests the verdicts stored afterwards."""
    before = [n for n in NAMES if n != "010_verdict_digests"]
    assert await migrate(conn, only=before) == before
    await conn.execute(
        "INSERT INTO debates (id, topic, format, config, status, created_at, updated_at, last_seq) VALUES"
        " ('old', 't', 'classic', '{}', 'completed', '2026-01-01', '2026-01-01', 3),"
        " ('bad', 't', 'classic', '{}', 'completed', '2026-01-01', '2026-01-01', 1)")
    await conn.execute(
        "INSERT INTO events (debate_id, seq, kind, at, data) VALUES"
        " ('old', 1, 'verdict', '2026', $1), ('old', 2, 'verdict', '2026', $2), ('old', 3, 'note', '2026', $1),"
        " ('bad', 1, 'verdict', '2026', 'not json')",
        json.dumps({"verdict": {"winner": "a", "reasoning": "x" * 500}}),
        json.dumps({"verdict": {"winner": "b", "reasoning": "x" * 500,
                                "rulings": [{"judge": "demo:j", "winner": "b"}]}}),
    )
    assert await migrate(conn) == ["010_verdict_digests"]
    [(debate_id, seq, digest)] = await conn.fetch("SELECT debate_id, seq, digest FROM verdict_digests")
    assert (debate_id, seq) == ("old", 2) and "xxxx" not in digest
    assert json.loads(digest)["rulings"] == [{"judge": "demo:j", "winner": "b", "error": False, "flipped": False}]
    await conn.execute("INSERT INTO events (debate_id, seq, kind, at, data) VALUES ('old', 4, 'verdict', '2026', $1)",
                       json.dumps({"verdict": {"winner": None}}))
    latest = await conn.fetchval("SELECT digest FROM verdict_digests WHERE debate_id = 'old'")
    assert json.loads(latest)["winner"] is None
