"""The debate repository: the event log in SQLite (WAL) through aiosqlite, written by one writer task
with group commit.

Writes go through one `aiosqlite` connection (its own thread). `append`, `create_debate` and
`delete_debate` queue their work; the writer task takes everything queued, runs it in ONE transaction
(`BEGIN IMMEDIATE`, each write in its own SAVEPOINT) and commits once. `synchronous=FULL`: an event is
on disk before `append` returns, and the engine broadcasts only after that, so what a spectator saw
survives a power cut. With many live debates, one fsync then covers every event that arrived while the
previous one was being written, instead of each event waiting for the fsyncs of all events queued
before it.

A write that fails on its own (a stale `expected_seq`, an unknown debate, a bad value) rolls back its
savepoint and fails alone; the others in the group commit. A storage fault (disk full, I/O error,
read-only file) fails every write of the group with the classified error (`webapp.store.errors`).
A database locked by another process is retried with backoff for up to `lock_timeout` seconds
(default 10 s), then reported as `StoreBusy`.

Every call to an aiosqlite connection is a round trip to its thread, so a group of appends is not
written statement by statement: the appends of a group are checked against ONE read of their debates'
`last_seq` and idempotency keys (stale, unknown, replayed: refused before anything is written, so
alone), then their events go in with one `executemany` and their listing rows with one more. Only if
SQLite refuses that batch (a value it cannot store, say) is the group redone write by write, each in
its savepoint, so the failure stays with its own append. A group of 50 appends is thus about six round
trips, not 250.

Reads use a second `aiosqlite` connection, read-only, on its own thread: in WAL mode they never wait
for the writer and never see a group that has not committed yet. aiosqlite's threads are not daemon
threads, and one that is never closed (a crash on the way out) would keep the process from exiting;
the store makes its connections from a short-lived daemon thread, whose daemon status the connection
threads inherit (`threading.Thread`'s documented default), so they never do.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import aiosqlite
from pydantic import BaseModel

from webapp.models import DebateEvent, EventKind, utcnow
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

__all__ = [
    "DebateRow", "StaleWrite", "Store", "StoreBusy", "StoreCorrupt", "StoreError", "StoreFull", "StoreUnwritable",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

LOCK_TIMEOUT = 10.0  # seconds a write waits, in all, for a lock another process holds
MAX_GROUP = 512  # writes per group commit
ITER_CHUNK_SIZE = 64  # aiosqlite's default: rows per round trip when a cursor is iterated


class StaleWrite(RuntimeError):
    """Another process appended to this debate's log since this one last read it."""


class DebateRow(BaseModel):
    """One debate as the dashboard lists it."""

    id: str
    topic: str
    format: str
    status: str
    phase: str | None = None
    round: int = 0
    total_rounds: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    interrupted: bool = False
    turn_count: int = 0
    participants: list[dict[str, Any]] = []
    created_by: str = ""
    created_at: datetime
    updated_at: datetime


ROW_COLUMNS = tuple(DebateRow.model_fields)
ROW_SELECT = ", ".join(ROW_COLUMNS)
SUMMARY_COLUMNS = (
    "status", "phase", "round", "total_rounds", "cost_usd", "turn_count", "unpriced", "interrupted"
)
INSERT_EVENT = "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)"


class _NothingStored(Exception):
    """Raised by a write that turned out to have nothing to store (its idempotency key exists)."""


@dataclass(eq=False)
class _Append:
    """What an append writes, kept as data so that the appends of a group can be written together."""

    debate_id: str
    kind: str
    at: str
    payload: str
    idem_key: str | None
    summary: dict[str, Any]  # the listing columns it sets (of SUMMARY_COLUMNS)
    expected_seq: int | None

    def stale(self, seq: int) -> StaleWrite | None:
        if self.expected_seq is None or seq == self.expected_seq:
            return None
        return StaleWrite(
            f"debate {self.debate_id} was changed by another process (its log is at event {seq - 1}, "
            f"this process expected {self.expected_seq - 1}); reload it"
        )


@dataclass(eq=False)
class _Write:
    """One queued write: `apply` runs on the writer connection inside its own savepoint; an append also
    carries its data (`append`), so that it can be written with the others of its group."""

    apply: Callable[[aiosqlite.Connection], Awaitable[Any]]
    future: asyncio.Future[Any]
    append: _Append | None = None
    result: Any = None
    error: BaseException | None = field(default=None)


class _BatchRefused(Exception):
    """SQLite refused a batch of appends for a reason of one of them: redo the group write by write."""


# --- integrity check, once per process start ------------------------------------------------------

# Files whose quick_check passed in this process and that nobody has touched since (main.py checks the
# database before serving, then the app opens it again: the second open need not check it again).
_checked: dict[str, tuple[int, ...]] = {}


def _fingerprint(path: Path) -> tuple[int, ...] | None:
    """Identity and state of a database file and its WAL: any change, by anyone, changes it."""
    try:
        st = path.stat()
    except OSError:
        return None
    wal = Path(f"{path}-wal")
    try:
        wst = wal.stat()
        wal_state: tuple[int, ...] = (wst.st_ino, wst.st_size, wst.st_mtime_ns)
    except OSError:
        wal_state = (0, 0, 0)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, *wal_state)


def _ensure_directory(path: Path) -> None:
    """The database's directory exists and is writable, or a `StoreUnwritable` that says why."""
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        classified = classify(exc, path)
        kind = type(classified) if isinstance(classified, StoreFull) else StoreUnwritable
        culprit = exc.filename or parent
        reason = "a file is in the way" if isinstance(exc, FileExistsError | NotADirectoryError) else exc.strerror
        raise kind(f"cannot create the directory {parent} for database {path}: {culprit}: {reason}", path) from exc
    if path.is_dir():
        raise StoreUnwritable(f"database path {path} is a directory, not a database file", path)
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise StoreUnwritable(f"cannot create database {path}: its directory {parent} is not writable", path)


def _existing_database(path: Path) -> bool:
    """Whether a database is there already (its directory made if need be); refuses a read-only one."""
    _ensure_directory(path)
    existed = path.exists() and path.stat().st_size > 0
    if existed and not os.access(path, os.W_OK):
        raise StoreUnwritable(f"database {path} is read-only: Rostrum cannot write to it", path)
    return existed


def _connect(path: Path) -> sqlite3.Connection:
    """The writer's sqlite3 connection, made on (and then used from) its aiosqlite thread: autocommit
    mode, the transactions are explicit."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def _connect_reader(path: Path) -> sqlite3.Connection:
    """The read connection's sqlite3 connection (its aiosqlite thread): autocommit, so each query sees
    the latest commit. `Store.open` makes it read-only."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


@dataclass(eq=False)
class _Handover:
    """A connection being made for a caller that may stop waiting for it (cancelled)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    conn: aiosqlite.Connection | None = None
    abandoned: bool = False


async def _aiosqlite_connect(connector: Callable[[], sqlite3.Connection]) -> aiosqlite.Connection:
    """An aiosqlite connection on the sqlite3 connection `connector` makes, whose thread is a daemon
    thread; `connector`'s errors are raised here. Made off the event loop (`_establish`); if the caller
    is cancelled meanwhile, the connection is closed, not left for the garbage collector."""
    handover = _Handover()
    try:
        await asyncio.to_thread(_establish, connector, handover)
    except asyncio.CancelledError:
        with handover.lock:
            handover.abandoned = True
            made = handover.conn
        if made is not None:
            await made.close()
        raise
    assert handover.conn is not None
    return handover.conn


def _establish(connector: Callable[[], sqlite3.Connection], handover: _Handover) -> None:
    """Make an aiosqlite connection (into `handover`) in a daemon thread of its own, on an event loop of
    its own.

    - A daemon thread: aiosqlite starts a plain thread per connection, and a non-daemon thread blocked
      on its queue keeps the interpreter from exiting when the connection is never closed. A thread's
      daemon flag defaults to that of the thread creating it, and `aiosqlite.Connection` creates its
      thread when it is constructed: constructed in a daemon thread, its thread is a daemon too.
    - An event loop of its own: aiosqlite's thread hands each result to the loop of the call, and dies
      ("Exception in thread ...: Event loop is closed") when that loop has closed. Awaited on the
      caller's loop, connecting would be cut short if the caller were cancelled (an app stopped while
      starting), and its result could then arrive at a closed loop. This loop closes only once the
      connection is made, and closed again if the caller is gone or `connector` failed.
    - A connector that raises would have aiosqlite stop its thread without waiting for it, with the same
      result; so it never does: on error it hands over a stand-in connection, closed before the error
      is raised.
    """
    failed: list[BaseException] = []

    def connect() -> sqlite3.Connection:  # on the connection's thread
        try:
            return connector()
        except BaseException as exc:
            failed.append(exc)
            return sqlite3.connect(":memory:", check_same_thread=False)

    async def establish() -> None:
        conn = await aiosqlite.Connection(connect, ITER_CHUNK_SIZE)
        with handover.lock:
            keep = not failed and not handover.abandoned
            if keep:
                handover.conn = conn
        if not keep:
            await conn.close()

    def run() -> None:  # in a daemon thread
        try:
            asyncio.run(establish())
        except BaseException as exc:
            failed.append(exc)

    maker = threading.Thread(target=run, name="rostrum-store-connect", daemon=True)
    maker.start()
    maker.join()
    if failed:
        raise failed[0]


class _Transaction:
    """What `Store.transaction()` yields: `await tx.execute(sql, params)` on the writer connection,
    which returns an `aiosqlite.Cursor` (`rowcount`, `lastrowid`, `await cursor.fetchall()`...)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> aiosqlite.Cursor:
        return await self._store._guard(self._store._writer.execute(sql, tuple(params)))


class Store:
    """Access to the event log. Open with `await Store.open(path)`."""

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
            existed = _existing_database(path)
            return _connect(path)

        writer: aiosqlite.Connection | None = None
        reader: aiosqlite.Connection | None = None
        try:
            remembered = _checked.pop(str(path.resolve()), None)
            trust = remembered is not None and remembered == _fingerprint(path)
            writer = await _aiosqlite_connect(connect_writer)
            conn = writer
            await conn.execute(f"PRAGMA busy_timeout={busy_ms}")
            if existed and not trust:
                await _retry_busy(lambda: cls._check(conn, path), deadline)
            await _retry_busy(lambda: cls._prepare(conn, path), deadline)
            reader = await _aiosqlite_connect(lambda: _connect_reader(path))
            await reader.execute(f"PRAGMA busy_timeout={int(lock_timeout * 1000)}")
            await reader.execute("PRAGMA query_only=ON")
        except BaseException as exc:
            for opened in (reader, writer):
                if opened is not None:
                    with contextlib.suppress(Exception):
                        await opened.close()
            if isinstance(exc, sqlite3.Error | OSError):
                raise _open_error(exc, path) from exc
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
            fingerprint = _fingerprint(self.path)
            if fingerprint is not None:
                _checked[str(self.path.resolve())] = fingerprint

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

    async def _submit(self, apply: Callable[[aiosqlite.Connection], Awaitable[Any]],
                      append: _Append | None = None) -> Any:
        """Queue a write for the next group commit; returns its result once that group has committed."""
        if self._closing:
            raise StoreError(f"database {self.path} is closed", self.path)
        loop = self._bind_loop()
        write = _Write(apply, loop.create_future(), append)
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
            await _retry_busy(lambda: self._run_group(batch), deadline, self._busy)
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
        """One transaction for the whole group: its appends written together when SQLite takes them
        all, and otherwise, like every other write, one at a time, each in its own savepoint."""
        conn = self._writer
        try:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                await self._write_together(batch)
            except _BatchRefused:
                await conn.rollback()
                await conn.execute("BEGIN IMMEDIATE")
                for write in batch:
                    await self._write_alone(write)
            await conn.commit()
        except BaseException:
            # Also when cancelled half-way: the connection is left with no transaction open. (aiosqlite
            # runs calls in order, so this comes after any statement still in flight; a no-op when
            # SQLite already rolled back, as it does on some faults.)
            with contextlib.suppress(sqlite3.Error):
                await conn.rollback()
            raise

    async def _write_alone(self, write: _Write) -> None:
        """One write in its own savepoint: its failure undoes only itself (a storage fault: the group)."""
        conn = self._writer
        write.result, write.error = None, None
        await conn.execute("SAVEPOINT write")
        try:
            write.result = await write.apply(conn)
        except _NothingStored:
            await conn.execute("ROLLBACK TO write")
        except Exception as exc:
            if isinstance(exc, sqlite3.Error | OSError) and classify(exc, self.path) is not None:
                raise  # a storage fault: the whole group fails (or, if busy, is retried)
            await conn.execute("ROLLBACK TO write")
            write.error = exc
        await conn.execute("RELEASE write")

    async def _write_together(self, batch: list[_Write]) -> None:
        """The group in order, each run of consecutive appends written as one batch: one read of their
        debates' `last_seq` and idempotency keys decides, append by append and exactly as if each ran
        alone after the ones before it, its sequence number or its refusal (unknown debate, stale
        `expected_seq`, a key already stored: nothing written, so no savepoint needed); then one
        `executemany` for the events and one per shape of listing update, one row per debate with
        what its last append left. Raises `_BatchRefused` if SQLite refuses any of it for another
        reason (the caller redoes the group write by write)."""
        run: list[_Write] = []
        for write in [*batch, None]:
            if write is not None and write.append is not None:
                run.append(write)
                continue
            if run:
                await self._append_together(run)
                run = []
            if write is not None:
                await self._write_alone(write)

    async def _append_together(self, writes: list[_Write]) -> None:
        conn = self._writer
        appends = [cast(_Append, w.append) for w in writes]
        ids = sorted({a.debate_id for a in appends})
        keyed = sorted({(a.debate_id, a.idem_key) for a in appends if a.idem_key is not None})
        sql = f"SELECT id, last_seq, NULL FROM debates WHERE id IN ({','.join('?' * len(ids))})"
        if keyed:  # in the same round trip: which of their idempotency keys are stored already
            sql += (" UNION ALL SELECT debate_id, NULL, idem_key FROM events WHERE (debate_id, idem_key) IN "
                    f"(VALUES {','.join(['(?,?)'] * len(keyed))})")
        last: dict[str, int] = {}
        stored: set[tuple[str, str]] = set()
        for debate_id, last_seq, key in await conn.execute_fetchall(sql, [*ids, *(v for pair in keyed for v in pair)]):
            if key is None:
                last[debate_id] = int(last_seq)
            else:
                stored.add((debate_id, key))
        events: list[tuple[Any, ...]] = []
        listing: dict[str, dict[str, Any]] = {}  # per debate: the listing columns, in the order set
        for write, item in zip(writes, appends, strict=True):
            write.result, write.error = None, None
            if item.debate_id not in last:
                write.error = KeyError(f"no debate {item.debate_id!r}")
                continue
            seq = last[item.debate_id] + 1
            if (stale := item.stale(seq)) is not None:
                write.error = stale
                continue
            if item.idem_key is not None:
                if (item.debate_id, item.idem_key) in stored:
                    continue  # a replay: nothing stored, None returned
                stored.add((item.debate_id, item.idem_key))
            last[item.debate_id] = seq
            events.append((item.debate_id, seq, item.kind, item.at, item.payload, item.idem_key))
            columns = listing.setdefault(item.debate_id, {})
            columns.update({"last_seq": seq, "updated_at": item.at}, **item.summary)
            write.result = seq
        if not events:
            return
        shapes: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        for debate_id, columns in listing.items():
            shapes.setdefault(tuple(columns), []).append((*columns.values(), debate_id))
        try:
            await conn.executemany(INSERT_EVENT, events)
            for names, rows in shapes.items():
                await conn.executemany(
                    f"UPDATE debates SET {', '.join(f'{name} = ?' for name in names)} WHERE id = ?", rows)
        except (sqlite3.Error, OSError) as exc:
            if classify(exc, self.path) is not None:
                raise  # a storage fault: the whole group fails (or, if busy, is retried)
            raise _BatchRefused from exc

    # --- generic access (used by the accounts repository) ------------------------------------

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Transaction]:
        """One write transaction (write lock taken at once, waiting out another process's lock with
        backoff), committed on exit, rolled back on error. `await tx.execute(sql, params)` inside."""
        self._bind_loop()
        async with self._lock:
            deadline = time.monotonic() + self.lock_timeout
            await _retry_busy(lambda: self._guard(self._writer.execute("BEGIN IMMEDIATE")), deadline, self._busy)
            try:
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

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of a query (meant for one-row queries) on the read connection, or None.

        The query runs to its end in one call: a statement left open on the read connection between
        two calls would keep its snapshot, and the reads queued behind it would not see later commits.
        """
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

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
            await conn.execute(
                "INSERT INTO debates (id, topic, topic_search, format, config, status, total_rounds,"
                " participants, created_at, updated_at, last_seq, created_by) VALUES (?,?,?,?,?,?,?,?,?,?,1,?)",
                debate_values,
            )
            await conn.execute(INSERT_EVENT, event_values)

        await self._submit(apply)
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
        columns = ("last_seq", "updated_at", *item.summary)
        update = f"UPDATE debates SET {', '.join(f'{column} = ?' for column in columns)} WHERE id = ?"

        async def apply(conn: aiosqlite.Connection) -> int:
            """The append on its own (when its group could not be written as one batch)."""
            # Inside the group's write transaction: nobody else can pick the same seq.
            rows = await conn.execute_fetchall("SELECT last_seq FROM debates WHERE id = ?", (debate_id,))
            row = next(iter(rows), None)
            if row is None:
                raise KeyError(f"no debate {debate_id!r}")
            seq = int(row[0]) + 1
            if (stale := item.stale(seq)) is not None:
                raise stale
            try:
                await conn.execute(INSERT_EVENT, (debate_id, seq, item.kind, item.at, item.payload, idem_key))
            except sqlite3.IntegrityError:
                if idem_key is not None and await conn.execute_fetchall(
                    "SELECT 1 FROM events WHERE debate_id = ? AND idem_key = ?", (debate_id, idem_key)
                ):
                    raise _NothingStored from None
                raise
            await conn.execute(update, (seq, item.at, *item.summary.values(), debate_id))
            return seq

        seq = await self._submit(apply, item)
        if seq is None:  # the idempotency key was already stored
            return None
        return DebateEvent(debate_id=debate_id, seq=seq, kind=kind, at=at, data=data)

    async def events(self, debate_id: str) -> list[DebateEvent]:
        """A debate's whole log, in order."""
        return await self.events_after(debate_id, 0)

    async def events_after(self, debate_id: str, seq: int) -> list[DebateEvent]:
        """Events appended after `seq` (by this or another process), in order."""
        rows = await self.fetchall(
            "SELECT seq, kind, at, data FROM events WHERE debate_id = ? AND seq > ? ORDER BY seq", (debate_id, seq)
        )
        return [
            DebateEvent(debate_id=debate_id, seq=r[0], kind=EventKind(r[1]), at=datetime.fromisoformat(r[2]),
                        data=json.loads(r[3]))
            for r in rows
        ]

    async def last_change(self) -> tuple[int, str]:
        """A cheap marker that moves whenever any debate is created or appended to, in any process."""
        row = await self.fetchone("SELECT count(*), coalesce(max(updated_at), '') FROM debates")
        assert row is not None
        return int(row[0]), str(row[1])

    async def find_id(self, prefix: str) -> str | None:
        """A debate id from a full id or a unique prefix of one."""
        rows = await self.fetchall(
            "SELECT id FROM debates WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 2",
            (prefix, prefix.replace("%", "\\%").replace("_", "\\_") + "%"),
        )
        ids = {r[0] for r in rows}
        if prefix in ids:
            return prefix
        return str(rows[0][0]) if len(rows) == 1 else None

    async def list_debates(
        self, query: str = "", statuses: list[str] | None = None, offset: int = 0, limit: int = 20
    ) -> tuple[list[DebateRow], int]:
        """A page of debates, newest first, and how many match in all."""
        where, params = ["1=1"], []
        if query.strip():
            where.append("topic_search LIKE ? ESCAPE '\\'")
            escaped = query.strip().lower().replace("%", "\\%").replace("_", "\\_")
            params.append(f"%{escaped}%")
        if statuses:
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            params.extend(statuses)
        clause = " AND ".join(where)
        total = await self.fetchone(f"SELECT count(*) FROM debates WHERE {clause}", params)
        rows = await self.fetchall(
            f"SELECT {ROW_SELECT} FROM debates WHERE {clause} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [self._row(r) for r in rows], int(total[0]) if total else 0

    async def ids_with_status(self, statuses: list[str]) -> list[str]:
        rows = await self.fetchall(
            f"SELECT id FROM debates WHERE status IN ({','.join('?' * len(statuses))}) ORDER BY created_at",
            statuses,
        )
        return [r[0] for r in rows]

    async def get_row(self, debate_id: str) -> DebateRow | None:
        row = await self.fetchone(f"SELECT {ROW_SELECT} FROM debates WHERE id = ?", (debate_id,))
        return self._row(row) if row else None

    async def delete_debate(self, debate_id: str) -> bool:
        """Remove a debate, its whole log and its share links (really removed, not hidden)."""
        async def apply(conn: aiosqlite.Connection) -> bool:
            return (await conn.execute("DELETE FROM debates WHERE id = ?", (debate_id,))).rowcount > 0

        return bool(await self._submit(apply))

    async def committed_spend(self, created_by: str, since: datetime, terminal: Iterable[str]) -> float:
        """What debates `created_by` created since `since` have spent, or may still spend: a debate that
        has ended counts what it spent; one that has not, its hard limit (or its spend, if higher)."""
        statuses = list(terminal)
        marks = ",".join("?" * len(statuses))
        row = await self.fetchone(
            f"SELECT coalesce(sum(CASE WHEN status IN ({marks}) THEN cost_usd ELSE max(cost_usd, coalesce("
            "json_extract(config, '$.budget.cost_limit'), cost_usd)) END), 0) FROM debates "
            "WHERE created_by = ? AND created_at >= ?",
            (*statuses, created_by, since.isoformat()),
        )
        return float(row[0]) if row else 0.0

    @staticmethod
    def _row(r: tuple[Any, ...]) -> DebateRow:
        values = dict(zip(ROW_COLUMNS, r, strict=True))
        values["participants"] = json.loads(values["participants"])
        return DebateRow.model_validate(values)


async def _retry_busy(attempt: Callable[[], Awaitable[T]], deadline: float,
                      on_wait: Callable[[float], None] | None = None) -> T:
    """Run `attempt`; while it fails because another process holds the database, wait with exponential
    backoff and try again until `deadline`, then let the (busy) error through."""
    delay, waited = 0.02, 0.0
    while True:
        try:
            return await attempt()
        except (sqlite3.Error, StoreBusy) as exc:
            if isinstance(exc, sqlite3.Error) and not isinstance(classify(exc, Path()), StoreBusy):
                raise
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            if on_wait is not None:
                on_wait(waited)
            pause = min(delay, remaining)
            await asyncio.sleep(pause)
            waited += pause
            delay = min(delay * 2, 1.0)


def _open_error(exc: sqlite3.Error | OSError, path: Path) -> StoreError:
    """A fault while opening: classified, and anything else SQLite rejects counts as not-a-Rostrum-database."""
    classified = classify(exc, path)
    if classified is not None:
        return classified
    if isinstance(exc, sqlite3.DatabaseError):
        return StoreCorrupt(f"database {path} is not a readable Rostrum database ({exc}); it was left untouched", path)
    return StoreError(f"cannot open database {path}: {exc}", path)
