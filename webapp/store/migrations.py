"""Applying the SQLite store's named, forward-only migrations: what a database has applied, adopting
the numbered schemas of old, refusing a newer one. The migrations themselves (never edit a released
one: add a new one) are `webapp.store.sqlite_schema.MIGRATIONS`.

Each migration has a name; a database records the names it has applied in `_rostrum_migrations`
(like simonw/llm's `_llm_migrations`), and opening it applies, in list order, every migration it has
not applied yet. Inserting a migration anywhere in the list therefore never renumbers the others.

Before migrations had names, Rostrum recorded numbers in `schema_version` (1..5, one row per applied
migration). Such a database is adopted on first open: version n means the first n migrations
(`LEGACY_VERSIONS`). Every migrated database then also carries `schema_version` row `LEGACY_MARK`, so a
Rostrum from before named migrations refuses it as newer instead of migrating it again.

All of it happens in one write transaction taken *before* anything is read (`BEGIN IMMEDIATE`):
processes opening a fresh database together wait for each other, and only the first migrates.

The store applies them on its `aiosqlite` connection (`migrate_async`); tools and tests use a plain
`sqlite3` one (`migrate`). The steps are written once, as generators of queries, and both run them.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Generator, Iterable, Iterator
from typing import Any, TypeVar, cast

import aiosqlite

from webapp.models import utcnow
from webapp.store.errors import StoreTooNew
from webapp.store.sqlite_schema import MIGRATIONS, Migration

# `Migration` and `MIGRATIONS` are read from here by tests and tools (and patched by tests: the runner
# below reads this module's `MIGRATIONS` and `NAMES`, so a patched list is the one applied).
__all__ = [
    "LEGACY_MARK", "LEGACY_VERSIONS", "MIGRATIONS", "NAMES", "Migration", "applied_migrations",
    "applied_migrations_async", "migrate", "migrate_async", "refuse_newer", "refuse_newer_async", "statements",
]

T = TypeVar("T")

NAMES: tuple[str, ...] = tuple(m.name for m in MIGRATIONS)
# What the numbered `schema_version` rows meant: version n = the first n of these (never change it).
LEGACY_VERSIONS: tuple[str, ...] = (
    "001_debates_and_events", "002_status_index_and_unpriced", "003_topic_search", "004_interrupted",
    "005_team_access",
)
# Written to `schema_version` once named migrations are in use: a numbered-era Rostrum (which knew
# versions up to 5) then says the database is newer than it, rather than migrating it again.
LEGACY_MARK = len(LEGACY_VERSIONS) + 1

assert len(set(NAMES)) == len(NAMES), "migration names must be unique"
assert NAMES[: len(LEGACY_VERSIONS)] == LEGACY_VERSIONS, "the numbered migrations keep their place"


def statements(script: str) -> Iterator[str]:
    """The statements of a script, one by one (`executescript` would commit the open transaction)."""
    buffer = ""
    for part in script.split(";"):
        buffer += part + ";"
        if sqlite3.complete_statement(buffer):
            statement = buffer.strip()
            if statement.strip(";").strip():
                yield statement
            buffer = ""
    if buffer.strip(" \t\n;"):
        raise ValueError(f"incomplete SQL statement in a migration: {buffer.strip()[:80]!r}")


# --- the logic, written once --------------------------------------------------------------------
#
# Each step below is a generator that yields the queries it needs, `(sql, parameters)`, and receives each
# query's rows. `_run` drives one on a `sqlite3` connection (tools, tests), `_run_async` on the store's
# `aiosqlite` connection, so both kinds of connection apply exactly the same migrations.

Query = tuple[str, tuple[Any, ...]]
Rows = list[tuple[Any, ...]]
Steps = Generator[Query, Rows, T]


def _query(sql: str, *params: Any) -> Steps[Rows]:
    return (yield (sql, params))


def _table_exists(name: str) -> Steps[bool]:
    return bool((yield from _query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name)))


def _legacy_version() -> Steps[int]:
    if not (yield from _table_exists("schema_version")):
        return 0
    rows = yield from _query("SELECT max(version) FROM schema_version")
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def _recorded() -> Steps[list[str]]:
    """The names recorded in a database (empty for a database without named migrations)."""
    if not (yield from _table_exists("_rostrum_migrations")):
        return []
    return [r[0] for r in (yield from _query("SELECT name FROM _rostrum_migrations ORDER BY rowid"))]


def _refuse_newer() -> Steps[None]:
    if (yield from _table_exists("_rostrum_migrations")):
        unknown = [name for name in (yield from _recorded()) if name not in NAMES]
        if unknown:
            raise StoreTooNew(
                f"the database schema is newer than this Rostrum: it has migration(s) {', '.join(unknown)} "
                "that this version does not know"
            )
        return
    version = yield from _legacy_version()
    if version > len(LEGACY_VERSIONS):
        raise StoreTooNew(f"the database schema v{version} is newer than this Rostrum (it knows v1 to "
                          f"v{len(LEGACY_VERSIONS)} and named migrations up to {NAMES[-1]})")


def _applied() -> Steps[list[str]]:
    """The names applied so far, adopting a numbered (`schema_version`) database the first time.
    Runs inside the write transaction."""
    yield from _refuse_newer()
    if (yield from _table_exists("_rostrum_migrations")):
        return (yield from _recorded())
    version = yield from _legacy_version()
    yield from _query("CREATE TABLE _rostrum_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    adopted = list(LEGACY_VERSIONS[:version])
    now = utcnow().isoformat()
    for name in adopted:
        yield from _query("INSERT INTO _rostrum_migrations (name, applied_at) VALUES (?, ?)",
                          name, f"{now} (schema v{version})")
    return adopted


def _apply(only: Iterable[str] | None) -> Steps[list[str]]:
    """Everything `migrate` does inside its transaction; returns the names applied."""
    wanted = None if only is None else set(only)
    done = set((yield from _applied()))
    pending = [m for m in MIGRATIONS if m.name not in done and (wanted is None or m.name in wanted)]
    now = utcnow().isoformat()
    for migration in pending:
        for statement in statements(migration.sql):
            yield from _query(statement)
        yield from _query("INSERT INTO _rostrum_migrations (name, applied_at) VALUES (?, ?)", migration.name, now)
    yield from _query("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    if not (yield from _query("SELECT 1 FROM schema_version WHERE version = ?", LEGACY_MARK)):
        yield from _query("INSERT INTO schema_version (version) VALUES (?)", LEGACY_MARK)
    return [m.name for m in pending]


def _run(conn: sqlite3.Connection, steps: Steps[T]) -> T:
    """Drive `steps` on a `sqlite3` connection."""
    try:
        query = next(steps)
        while True:
            query = steps.send(conn.execute(*query).fetchall())
    except StopIteration as done:
        return cast(T, done.value)


async def _run_async(conn: aiosqlite.Connection, steps: Steps[T]) -> T:
    """Drive `steps` on an `aiosqlite` connection (one call, one round trip to its thread, per query)."""
    try:
        query = next(steps)
        while True:
            rows = await conn.execute_fetchall(*query)
            query = steps.send(cast(Rows, list(rows)))
    except StopIteration as done:
        return cast(T, done.value)


# --- on a sqlite3 connection ------------------------------------------------------------------------


def refuse_newer(conn: sqlite3.Connection) -> None:
    """Raise `StoreTooNew` if a newer Rostrum migrated this database (read only: callers check before
    changing anything, and `migrate` checks again under the write lock).

    Its queries read one snapshot (a read transaction, unless `conn` is in a transaction already): read
    one by one, they could see the tables of another process's migration half before and half after it
    commits (no `_rostrum_migrations` yet, then `schema_version` at `LEGACY_MARK`: "newer").
    """
    if conn.in_transaction:
        _run(conn, _refuse_newer())
        return
    conn.execute("BEGIN")
    try:
        _run(conn, _refuse_newer())
    finally:
        conn.execute("ROLLBACK")


def migrate(conn: sqlite3.Connection, only: Iterable[str] | None = None) -> list[str]:
    """Apply every migration this database has not applied yet (or only those named in `only`: tests
    use it to build an older database), in one transaction; returns the names applied.

    `conn` must be in autocommit mode (`isolation_level=None`): the transaction is this function's.
    Raises `StoreTooNew` when the database has a migration this code does not know.
    """
    conn.execute("BEGIN IMMEDIATE")  # the write lock first: nobody migrates between our read and our write
    try:
        applied = _run(conn, _apply(only))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return applied


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    """The names recorded in a database (empty for a database without named migrations)."""
    return _run(conn, _recorded())


# --- on an aiosqlite connection (the store's) -------------------------------------------------------


async def refuse_newer_async(conn: aiosqlite.Connection) -> None:
    """`refuse_newer` on an `aiosqlite` connection (one snapshot too)."""
    if conn.in_transaction:
        await _run_async(conn, _refuse_newer())
        return
    await conn.execute("BEGIN")
    try:
        await _run_async(conn, _refuse_newer())
    finally:
        await conn.rollback()


async def migrate_async(conn: aiosqlite.Connection, only: Iterable[str] | None = None) -> list[str]:
    """`migrate` on an `aiosqlite` connection in autocommit mode (`isolation_level=None`)."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        applied = await _run_async(conn, _apply(only))
        await conn.commit()
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            await conn.rollback()  # nothing to do when SQLite already rolled back
        raise
    return applied


async def applied_migrations_async(conn: aiosqlite.Connection) -> list[str]:
    """`applied_migrations` on an `aiosqlite` connection."""
    return await _run_async(conn, _recorded())
