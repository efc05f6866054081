"""The debate repository: the event log in SQLite (WAL) through aiosqlite, written by one writer task
with group commit.

Writes go through one `aiosqlite` connection (it has its own thread). `append`, `create_debate` and
`delete_debate` queue their work; the writer task takes everything queued, runs it in ONE transaction
(`BEGIN IMMEDIATE`) and commits once. `synchronous=FULL`: an event is on disk before `append` returns,
and the engine broadcasts only after that, so what a spectator saw survives a power cut. With many
live debates, one fsync then covers every event that arrived while the previous one was being
written, instead of each event waiting for the fsyncs of all events queued before it.

A write that fails on its own (a stale `expected_seq`, an unknown debate, a bad value) fails alone;
the others in the group commit. A storage fault (disk full, I/O error, read-only file) fails every
write of the group with the classified error (`webapp.store.errors`). A database locked by another
process is retried with backoff for up to `lock_timeout` seconds (default 10 s), then reported as
`StoreBusy`.

Every call to an aiosqlite connection is a round trip to its thread (≈0.1 ms here, more on a busy
machine), so appends are not written statement by statement (a savepoint, a read, two writes and a
release each: five round trips per append). An append is ONE statement: a row inserted into
`rostrum_append`, a TEMP table of the writer connection whose trigger applies it (`APPEND_SCHEMA`):
the debate's next sequence number, its refusal (unknown debate, stale `expected_seq`: an error; an
idempotency key stored before: None, nothing written), else the event and the listing row, and the
outcome recorded in the row. SQLite applies a statement in full or not at all, so an append that fails
(a value SQLite cannot store, a constraint) leaves no trace and fails alone, as a savepoint did. The
appends of a group then go in with ONE `executemany`, which also begins the transaction (the writer's
`isolation_level` is IMMEDIATE: `BEGIN IMMEDIATE` runs in the same call), one more call reads and
clears their outcomes, one commits: three round trips per group, however large. Other writes
(`create_debate`, `delete_debate`) run in their place in the group, each in its own SAVEPOINT.

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
from dataclasses import dataclass, field
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
    classify,
)
from webapp.store.migrations import migrate_async, refuse_newer_async
from webapp.store.rows import INSERT_DEBATE, INSERT_EVENT, SUMMARY_COLUMNS, DebateRow, StaleWrite
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
MAX_GROUP = 512  # writes per group commit


# An append is one row inserted into `rostrum_append`, a TEMP table of the writer connection (the temp
# schema belongs to the connection: nothing of it is in the database file), whose trigger applies it:
# it finds the debate and its next sequence number, refuses the append if the debate is unknown, if
# `expected_seq` is stale or if its idempotency key is stored already (writing nothing), else inserts the
# event and updates the listing row, and records the outcome in the row. One INSERT statement, so SQLite
# applies all of it or, on an error, none of it; `executemany` then writes a whole group of appends in
# one call to the writer's thread.
APPEND_COLUMNS = (
    "n", "debate_id", "kind", "at", "data", "idem_key", "expected_seq",
    *(name for column in SUMMARY_COLUMNS for name in (column, f"set_{column}")),
)
INSERT_APPEND = (f"INSERT INTO rostrum_append ({', '.join(APPEND_COLUMNS)}) "
                 f"VALUES ({', '.join('?' * len(APPEND_COLUMNS))})")
APPEND_SCHEMA = (
    # The listing values are untyped here (no conversion): the debates table's own columns convert them.
    "CREATE TEMP TABLE IF NOT EXISTS rostrum_append (n INTEGER PRIMARY KEY, debate_id TEXT NOT NULL, "
    "kind TEXT NOT NULL, at TEXT NOT NULL, data TEXT NOT NULL, idem_key TEXT, expected_seq INTEGER, "
    + ", ".join(f"{column}, set_{column} INTEGER NOT NULL" for column in SUMMARY_COLUMNS)
    + ", seq INTEGER, outcome TEXT)",
    """CREATE TEMP TRIGGER IF NOT EXISTS rostrum_append_apply AFTER INSERT ON rostrum_append BEGIN
        UPDATE rostrum_append SET
            seq = (SELECT last_seq + 1 FROM debates WHERE id = NEW.debate_id),
            outcome = CASE
                WHEN NOT EXISTS (SELECT 1 FROM debates WHERE id = NEW.debate_id) THEN 'unknown'
                WHEN NEW.expected_seq IS NOT NULL AND NEW.expected_seq
                    IS NOT (SELECT last_seq + 1 FROM debates WHERE id = NEW.debate_id) THEN 'stale'
                WHEN EXISTS (SELECT 1 FROM events WHERE debate_id = NEW.debate_id AND idem_key = NEW.idem_key)
                    THEN 'stored before'
                ELSE 'stored' END
        WHERE n = NEW.n;
        INSERT INTO events (debate_id, seq, kind, at, data, idem_key)
            SELECT debate_id, seq, kind, at, data, idem_key FROM rostrum_append
            WHERE n = NEW.n AND outcome = 'stored';
        UPDATE debates SET last_seq = last_seq + 1, updated_at = NEW.at, """
    + ", ".join(f"{column} = CASE WHEN NEW.set_{column} THEN NEW.{column} ELSE {column} END"
                for column in SUMMARY_COLUMNS)
    + """
        WHERE id = NEW.debate_id AND (SELECT outcome FROM rostrum_append WHERE n = NEW.n) = 'stored';
    END""",
)


@dataclass(eq=False)
class _Append:
    """What an append writes: its row of `rostrum_append`, but for its number in the group."""

    debate_id: str
    kind: str
    at: str
    payload: str
    idem_key: str | None
    summary: dict[str, Any]  # the listing columns it sets (of SUMMARY_COLUMNS)
    expected_seq: int | None

    def row(self, n: int) -> tuple[Any, ...]:
        listing: list[Any] = []
        for column in SUMMARY_COLUMNS:
            listing += [self.summary[column], 1] if column in self.summary else [None, 0]
        return (n, self.debate_id, self.kind, self.at, self.payload, self.idem_key, self.expected_seq, *listing)

    def settle(self, seq: int | None, outcome: str) -> tuple[int | None, BaseException | None]:
        """The append's result (its sequence number; None if its key was stored before) or its error."""
        if outcome == "stored":
            return seq, None
        if outcome == "stored before":
            return None, None
        if outcome == "stale" and seq is not None and self.expected_seq is not None:
            return None, StaleWrite(
                f"debate {self.debate_id} was changed by another process (its log is at event {seq - 1}, "
                f"this process expected {self.expected_seq - 1}); reload it"
            )
        return None, KeyError(f"no debate {self.debate_id!r}")


@dataclass(eq=False)
class _Write:
    """One queued write: an append (`append`), written with the other appends of its group, or another
    write (`apply`), run on the writer connection inside its own savepoint."""

    future: asyncio.Future[Any]
    append: _Append | None = None
    apply: Callable[[aiosqlite.Connection], Awaitable[Any]] | None = None
    result: Any = None
    error: BaseException | None = field(default=None)


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
        return await self._store._guard(self._store._writer.execute(sql, tuple(params)))


class Store(SqlStore):
    """Access to the event log. Open with `await Store.open(path)`."""

    dialect = SQLITE

    def __init__(self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection,
                 lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self._writer = writer
        self._reader = reader
        self._lock = asyncio.Lock()  # one write transaction at a time on the writer connection
        self._pending: collections.deque[_Write] = collections.deque()
        self._wake = asyncio.Event()
        self._writer_task: asyncio.Task[None] | None = None
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

    # --- the writer --------------------------------------------------------------------------

    async def _submit(self, append: _Append | None = None,
                      apply: Callable[[aiosqlite.Connection], Awaitable[Any]] | None = None) -> Any:
        """Queue a write for the next group commit; returns its result once that group has committed."""
        if self._closing:
            raise StoreError(f"database {self.path} is closed", self.path)
        loop = self._bind_loop()
        write = _Write(loop.create_future(), append, apply)
        self._pending.append(write)
        self._wake.set()
        if self._writer_task is None or self._writer_task.done():
            self._writer_task = loop.create_task(self._write_loop(), name="rostrum-store-writer")
        # Cancelling the caller cancels the future: a write not yet taken into a group is then dropped.
        return await write.future

    def _bind_loop(self) -> asyncio.AbstractEventLoop:
        """The running loop, which the writer task belongs to. A store used again after the loop it
        was used from has ended (a second `asyncio.run`) starts its writer afresh in the new one."""
        loop = asyncio.get_running_loop()
        task = self._writer_task
        if task is not None and task.get_loop() is not loop:
            if not task.get_loop().is_closed():
                raise RuntimeError(f"database {self.path} is in use by another event loop")
            self._writer_task = None
            self._wake = asyncio.Event()
            self._lock = asyncio.Lock()
            self._pending = collections.deque(w for w in self._pending if w.future.get_loop() is loop)
        return loop

    async def _write_loop(self) -> None:
        while True:
            if not self._pending:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            # The lock first, then the batch: a write still queued while `transaction()` holds the
            # connection can still be cancelled by its caller (and is then never stored).
            async with self._lock:
                batch: list[_Write] = []
                while self._pending and len(batch) < MAX_GROUP:
                    write = self._pending.popleft()
                    if not write.future.done():
                        batch.append(write)
                if not batch:
                    continue
                try:
                    await self._commit_group(batch)
                except BaseException as exc:  # never leave a caller waiting
                    for write in batch:
                        if not write.future.done():
                            write.future.set_exception(exc if isinstance(exc, Exception) else StoreError(
                                f"database {self.path}: the writer stopped ({exc!r})", self.path))
                    if not isinstance(exc, Exception):
                        raise

    async def _commit_group(self, batch: list[_Write]) -> None:
        deadline = time.monotonic() + self.lock_timeout
        try:
            await retry_busy(lambda: self._run_group(batch), deadline, self._busy)
        except Exception as exc:
            error: BaseException = exc
            if isinstance(exc, sqlite3.Error | OSError):
                error = classify(exc, self.path) or exc
            for write in batch:
                if not write.future.done():
                    write.future.set_exception(error)
            return
        self.commits += 1
        for write in batch:
            if write.future.done():
                continue
            if write.error is not None:
                write.future.set_exception(write.error)
            else:
                write.future.set_result(write.result)

    async def _run_group(self, batch: list[_Write]) -> None:
        """One transaction for the whole group, the writes in their order: each run of appends with one
        `executemany` (which also begins the transaction, `isolation_level` being IMMEDIATE), any other
        write on its own in a savepoint."""
        conn = self._writer
        try:
            run: list[_Write] = []
            for write in [*batch, None]:
                if write is not None and write.append is not None:
                    run.append(write)
                    continue
                if run:
                    await self._append_run(run)
                    run = []
                if write is not None:
                    if not conn.in_transaction:  # (nothing is in flight on the connection: the lock is ours)
                        await conn.execute("BEGIN IMMEDIATE")
                    await self._write_alone(write)
            await conn.commit()
        except BaseException:
            # Also when cancelled half-way: the connection is left with no transaction open. (aiosqlite
            # runs calls in order, so this comes after any statement still in flight; a no-op when
            # SQLite already rolled back, as it does on some faults.)
            with contextlib.suppress(sqlite3.Error):
                await conn.rollback()
            raise

    async def _append_run(self, writes: list[_Write]) -> None:
        """Appends one after another, each in full or not at all (one INSERT statement each, through
        `rostrum_append`), in one call; then one more reads (and clears) their outcomes.

        An error of one append (a value SQLite cannot store, a constraint) stops `executemany` at its row,
        whose statement SQLite has undone: the appends before it stand, that one fails alone, and the ones
        after it are written by the next call. A storage fault fails the whole group (or, if busy, the
        group is retried)."""
        conn = self._writer
        pending: list[tuple[int, _Write]] = []
        for write in writes:
            write.result, write.error = None, None
            self._serial += 1
            pending.append((self._serial, write))
        while pending:
            failure: Exception | None = None
            try:
                await conn.executemany(INSERT_APPEND, [cast(_Append, w.append).row(n) for n, w in pending])
            except Exception as exc:
                if isinstance(exc, sqlite3.Error | OSError) and classify(exc, self.path) is not None:
                    raise  # a storage fault
                if not conn.in_transaction:  # SQLite rolled the whole transaction back: not this row's alone
                    raise
                failure = exc
            outcomes = {n: (seq, outcome) for n, seq, outcome in
                        await conn.execute_fetchall("DELETE FROM rostrum_append RETURNING n, seq, outcome")}
            settled = 0
            for n, write in pending:
                if n not in outcomes:
                    break
                write.result, write.error = cast(_Append, write.append).settle(*outcomes[n])
                settled += 1
            if settled == len(pending):
                return
            if failure is None:  # cannot happen: every row that ran has its outcome
                raise StoreError(f"database {self.path}: an append was neither stored nor refused", self.path)
            pending[settled][1].error = failure  # the row SQLite refused; the ones after it did not run
            pending = pending[settled + 1:]

    async def _write_alone(self, write: _Write) -> None:
        """One write in its own savepoint: its failure undoes only itself (a storage fault: the group)."""
        conn = self._writer
        assert write.apply is not None
        write.result, write.error = None, None
        await conn.execute("SAVEPOINT write")
        try:
            write.result = await write.apply(conn)
        except Exception as exc:
            if isinstance(exc, sqlite3.Error | OSError) and classify(exc, self.path) is not None:
                raise  # a storage fault: the whole group fails (or, if busy, is retried)
            await conn.execute("ROLLBACK TO write")
            write.error = exc
        await conn.execute("RELEASE write")

    # --- generic access (used by the accounts repository) ------------------------------------

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
        now = utcnow()
        data: dict[str, Any] = {"config": config}
        if actor:
            data["actor"] = actor
        debate_values = (
            debate_id, topic, topic.lower(), format_id, json.dumps(config), summary.get("status", "idle"),
            summary.get("total_rounds", 0), json.dumps(summary.get("participants", [])), now.isoformat(),
            now.isoformat(), actor or "",
        )
        event_values = (debate_id, 1, EventKind.CREATED.value, now.isoformat(), json.dumps(data), "created")

        async def apply(conn: aiosqlite.Connection) -> None:
            await conn.execute(INSERT_DEBATE, debate_values)
            await conn.execute(INSERT_EVENT, event_values)

        await self._submit(apply=apply)
        return DebateEvent(debate_id=debate_id, seq=1, kind=EventKind.CREATED, at=now, data=data)

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
        item = _Append(
            debate_id=debate_id, kind=kind.value, at=at.isoformat(), payload=json.dumps(data, default=str),
            idem_key=idem_key, expected_seq=expected_seq,
            summary={column: summary[column] for column in SUMMARY_COLUMNS if summary and column in summary},
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
