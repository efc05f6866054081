"""The debate repository: the event log in SQLite (WAL) through aiosqlite, written by one writer task
with group commit.

Writes go through one `aiosqlite` connection (it has its own thread) and one writer task with group
commit (`webapp.store.group_commit`): one transaction and one fsync for everything queued.

Reads use a second `aiosqlite` connection, read-only, with its own thread: in WAL mode they never wait
for the writer and never see a group that has not committed yet. Each read runs to its end in one call.

The file's checks and the connections' threads are in `webapp.store.sqlite_files`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import aiosqlite

from webapp.models import DebateEvent, EventKind, utcnow
from webapp.store.base import SqlStore
from webapp.store.dialect import SQLITE
from webapp.store.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreTooNew,
    StoreUnwritable,
    as_duplicate,
    classify,
)
from webapp.store.group_commit import APPEND_SCHEMA, GroupCommit, QueuedAppend
from webapp.store.migrations import migrate_async, refuse_newer_async
from webapp.store.rows import INSERT_DEBATE, INSERT_EVENT, DebateRow, StaleWrite, listing, new_debate
from webapp.store.sqlite_files import (
    aiosqlite_connect,
    checked_files,
    existing_database,
    fingerprint,
    open_error,
    retry_busy,
)

__all__ = [
    "DebateRow", "StaleWrite", "Store", "StoreBusy", "StoreCorrupt", "StoreError", "StoreFull", "StoreUnwritable",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

LOCK_TIMEOUT = 10.0  # seconds a write waits, in all, for a lock another process holds


def _connect(path: Path) -> sqlite3.Connection:
    """The writer's sqlite3 connection, made on (and then used from) its aiosqlite thread: autocommit
    mode while it is opened and migrated (`Store.open` then sets `isolation_level`)."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def _connect_reader(path: Path) -> sqlite3.Connection:
    """The read connection's sqlite3 connection (its aiosqlite thread): autocommit, so each query sees
    the latest commit. `Store.open` makes it read-only."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


class _Transaction:
    """What `Store.transaction()` yields: `await tx.execute(sql, params)` on the writer connection,
    which returns an `aiosqlite.Cursor` (`rowcount`, `lastrowid`, `await cursor.fetchall()`...)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> aiosqlite.Cursor:
        try:
            return await self._store._guard(self._store._writer.execute(sql, tuple(params)))
        except sqlite3.IntegrityError as exc:
            duplicate = as_duplicate(exc)
            if duplicate is exc:
                raise
            raise duplicate from exc


class Store(GroupCommit, SqlStore):
    """Access to the event log. Open with `await Store.open(path)`."""

    dialect = SQLITE

    def __init__(self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection,
                 lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self._writer = writer
        self._reader = reader
        self._lock = asyncio.Lock()  # one write transaction at a time on the writer connection
        self._pending = collections.deque()
        self._wake = asyncio.Event()
        self._writer_task = None
        self._closing = False
        self._remember_check = False
        self._serial = 0  # numbers the appends' rows of `rostrum_append`
        self.commits = 0  # group commits so far (for tests and benchmarks)
        self.busy_waits = 0  # times a write found the database locked by another process and waited
        self.on_busy: Callable[[], None] | None = None  # called at each such wait (tests, monitoring)

    def _busy(self, waited: float) -> None:
        self.busy_waits += 1
        if self.busy_waits == 1 or waited == 0:
            log.warning("database %s is locked by another process; retrying for up to %.0f s",
                        self.path, self.lock_timeout)
        if self.on_busy is not None:
            self.on_busy()

    @classmethod
    async def open(cls, path: str | Path, *, lock_timeout: float | None = None,
                   remember_check: bool = False) -> Store:
        """Open (creating and migrating if needed) the database at `path`.

        An existing file is integrity-checked (`PRAGMA quick_check`) and refused with `StoreCorrupt`,
        byte for byte untouched, when it fails, unless this process already checked it and nothing has
        changed it since (`remember_check=True` on that earlier open: main.py's check before serving).
        Raises a `StoreError` subclass for every storage fault, with the path. `lock_timeout`: how long
        a write waits, in all, for a lock held by another process (default `LOCK_TIMEOUT`).
        """
        path = Path(path)
        lock_timeout = LOCK_TIMEOUT if lock_timeout is None else lock_timeout
        busy_ms = max(20, min(1000, int(lock_timeout * 250)))
        deadline = time.monotonic() + lock_timeout
        existed = False

        def connect_writer() -> sqlite3.Connection:  # on the writer's thread
            nonlocal existed
            existed = existing_database(path)
            return _connect(path)

        writer: aiosqlite.Connection | None = None
        reader: aiosqlite.Connection | None = None
        try:
            remembered = checked_files.pop(str(path.resolve()), None)
            trust = remembered is not None and remembered == fingerprint(path)
            writer = await aiosqlite_connect(connect_writer)
            conn = writer
            await conn.execute(f"PRAGMA busy_timeout={busy_ms}")
            if existed and not trust:
                await retry_busy(lambda: cls._check(conn, path), deadline)
            await retry_busy(lambda: cls._prepare(conn, path), deadline)
            for statement in APPEND_SCHEMA:  # the connection's own (temp) schema: the file is not touched
                await conn.execute(statement)
            # From now on the first INSERT of a group begins its transaction, in the same call (BEGIN
            # IMMEDIATE, then the statement); every other transaction begins explicitly.
            conn.isolation_level = "IMMEDIATE"
            reader = await aiosqlite_connect(lambda: _connect_reader(path))
            await reader.execute(f"PRAGMA busy_timeout={int(lock_timeout * 1000)}")
            await reader.execute("PRAGMA query_only=ON")
        except BaseException as exc:
            for opened in (reader, writer):
                if opened is not None:
                    with contextlib.suppress(Exception):
                        await opened.close()
            if isinstance(exc, sqlite3.Error | OSError):
                raise open_error(exc, path) from exc
            raise
        store = cls(path, writer, reader, lock_timeout)
        store._remember_check = remember_check  # checked, or created, here: either way known to be sound
        return store

    @staticmethod
    async def _check(conn: aiosqlite.Connection, path: Path) -> None:
        """The integrity check of an existing file (this process did not check it already)."""
        rows = [r[0] for r in await conn.execute_fetchall("PRAGMA quick_check")]
        if rows != ["ok"]:
            raise StoreCorrupt(
                f"database {path} failed its integrity check: {'; '.join(rows[:3])}; it was left untouched", path)

    @staticmethod
    async def _prepare(conn: aiosqlite.Connection, path: Path) -> None:
        """WAL, FULL sync, foreign keys, migrations (retried while another process holds a lock)."""
        try:
            await refuse_newer_async(conn)  # before anything changes the file, even its journal mode
        except StoreTooNew as exc:
            raise StoreTooNew(f"{path}: {exc}; it was left untouched", path) from None
        [(mode,)] = await conn.execute_fetchall("PRAGMA journal_mode=WAL")
        if str(mode).lower() != "wal":
            raise StoreUnwritable(f"database {path} cannot use write-ahead logging (journal mode {mode}): "
                                  "is it on a read-only or network filesystem?", path)
        await conn.execute("PRAGMA synchronous=FULL")
        await conn.execute("PRAGMA foreign_keys=ON")
        try:
            await migrate_async(conn)
        except StoreTooNew as exc:
            raise StoreTooNew(f"{path}: {exc}; it was left untouched", path) from None

    async def close(self) -> None:
        """Commit what is queued, then close both connections."""
        self._closing = True
        self._wake.set()
        task = self._writer_task
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            await task
        await self._reader.close()
        await self._writer.close()
        if self._remember_check:
            state = fingerprint(self.path)
            if state is not None:
                checked_files[str(self.path.resolve())] = state

    async def _guard(self, operation: Awaitable[T]) -> T:
        """Await a call to a connection; storage faults come back classified."""
        try:
            return await operation
        except (sqlite3.Error, OSError) as exc:
            classified = classify(exc, self.path)
            if classified is None:
                raise
            raise classified from exc

    # --- SQL for the store's own modules (`SqlRunner`) ----------------------------------------

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Transaction]:
        """One write transaction (write lock taken at once, waiting out another process's lock with
        backoff), committed on exit, rolled back on error. `await tx.execute(sql, params)` inside."""
        self._bind_loop()
        async with self._lock:
            deadline = time.monotonic() + self.lock_timeout
            try:
                # Inside the `try`: a caller cancelled while its BEGIN is on its way (a worker closing, say)
                # must not leave the connection in a transaction for the next one ("cannot start a
                # transaction within a transaction"). aiosqlite runs calls in order: the rollback follows it.
                await retry_busy(lambda: self._guard(self._writer.execute("BEGIN IMMEDIATE")), deadline, self._busy)
                yield _Transaction(self)
                await self._guard(self._writer.commit())
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    await self._writer.rollback()  # a no-op when SQLite already rolled back
                raise

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a query on the read connection (committed data only); storage faults classified."""
        rows = await self._guard(self._reader.execute_fetchall(sql, tuple(params)))
        return cast(list[tuple[Any, ...]], list(rows))

    # (`fetchone`, written once in `SqlStore`, runs its query to its end in one call too: a statement left
    # open on the read connection between two calls would keep its snapshot, and the reads queued behind
    # it would not see later commits.)

    # --- debates -----------------------------------------------------------------------------

    async def create_debate(
        self, debate_id: str, topic: str, format_id: str, config: dict[str, Any], summary: dict[str, Any],
        actor: str | None = None,
    ) -> DebateEvent:
        """Insert the debate and its CREATED event in one transaction. `actor` (who created it) is
        kept in the event and in the listing (per-person spending)."""
        new = new_debate(debate_id, topic, format_id, config, summary, actor)

        async def apply(conn: aiosqlite.Connection) -> None:
            await conn.execute(INSERT_DEBATE, new.debate_values)
            await conn.execute(INSERT_EVENT, new.event_values)

        await self._submit(apply=apply)
        return new.event

    async def append(
        self,
        debate_id: str,
        kind: EventKind,
        data: dict[str, Any],
        idem_key: str | None = None,
        summary: dict[str, Any] | None = None,
        at: datetime | None = None,
        expected_seq: int | None = None,
    ) -> DebateEvent | None:
        """Commit one event (and the listing projection) atomically; returns once it is on disk.

        Returns None when `idem_key` was already stored: a replay cannot store a turn twice.
        With `expected_seq`, raises `StaleWrite` (storing nothing) if the event would not get that
        sequence number, i.e. another process wrote to this debate meanwhile. Other events committed
        in the same group are not affected by either.
        """
        at = at or utcnow()
        item = QueuedAppend(
            debate_id=debate_id, kind=kind.value, at=at.isoformat(), payload=json.dumps(data, default=str),
            idem_key=idem_key, expected_seq=expected_seq,
            summary=listing(summary),
        )
        seq = await self._submit(item)
        if seq is None:  # the idempotency key was already stored
            return None
        return DebateEvent(debate_id=debate_id, seq=seq, kind=kind, at=at, data=data)

    async def delete_debate(self, debate_id: str) -> bool:
        """Remove a debate, its whole log and its share links (really removed, not hidden)."""
        async def apply(conn: aiosqlite.Connection) -> bool:
            return (await conn.execute("DELETE FROM debates WHERE id = ?", (debate_id,))).rowcount > 0

        return bool(await self._submit(apply=apply))
