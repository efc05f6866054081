"""The debate repository: the event log in SQLite (WAL), written by one writer task with group commit.

Writes go through one connection owned by one thread. `append`, `create_debate` and `delete_debate`
queue their work; the writer task takes everything queued, runs it in ONE transaction (`BEGIN
IMMEDIATE`, each write in its own SAVEPOINT) and commits once. `synchronous=FULL`: an event is on
disk before `append` returns, and the engine broadcasts only after that, so what a spectator saw
survives a power cut. With many
live debates, one fsync then covers every event that arrived while the previous one was being
written, instead of each event waiting for the fsyncs of all events queued before it.

A write that fails on its own (a stale `expected_seq`, an unknown debate, a bad value) rolls back its
savepoint and fails alone; the others in the group commit. A storage fault (disk full, I/O error,
read-only file) fails every write of the group with the classified error (`webapp.store.errors`).
A database locked by another process is retried with backoff for up to `lock_timeout` seconds
(default 10 s), then reported as `StoreBusy`.

Reads use a second, read-only connection on its own thread: in WAL mode they never wait for the
writer and never see a group that has not committed yet. Both threads are pool threads, so a store
that is never closed (a crash on the way out) does not keep the process from exiting.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

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
from webapp.store.migrations import migrate, refuse_newer

__all__ = [
    "DebateRow", "StaleWrite", "Store", "StoreBusy", "StoreCorrupt", "StoreError", "StoreFull", "StoreUnwritable",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

LOCK_TIMEOUT = 10.0  # seconds a write waits, in all, for a lock another process holds
MAX_GROUP = 512  # writes per group commit


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


class _NothingStored(Exception):
    """Raised by a write that turned out to have nothing to store (its idempotency key exists)."""


@dataclass(eq=False)
class _Write:
    """One queued write: `apply` runs in the writer thread inside its own savepoint."""

    apply: Callable[[sqlite3.Connection], Any]
    future: asyncio.Future[Any]
    result: Any = None
    error: BaseException | None = field(default=None)


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


def _connect(path: Path) -> sqlite3.Connection:
    """The writer's connection: autocommit mode (transactions are explicit), usable from the writer thread."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def _connect_reader(path: Path, lock_timeout: float) -> sqlite3.Connection:
    """The read connection (reader thread): autocommit, so each query sees the latest commit; no writes."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={int(lock_timeout * 1000)}")
        conn.execute("PRAGMA query_only=ON")
    except BaseException:
        conn.close()
        raise
    return conn


class _Transaction:
    """What `Store.transaction()` yields: `await tx.execute(sql, params)` on the writer connection."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        return await self._store._call(self._store._writer.execute, sql, tuple(params))


class Store:
    """Access to the event log. Open with `await Store.open(path)`."""

    def __init__(self, path: Path, writer: sqlite3.Connection, executor: ThreadPoolExecutor,
                 reader: sqlite3.Connection, read_executor: ThreadPoolExecutor,
                 lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self._writer = writer
        self._executor = executor
        self._reader = reader
        self._read_executor = read_executor
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
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rostrum-store")
        read_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rostrum-store-read")
        loop = asyncio.get_running_loop()
        busy_ms = max(20, min(1000, int(lock_timeout * 250)))
        deadline = time.monotonic() + lock_timeout
        writer: sqlite3.Connection | None = None
        reader: sqlite3.Connection | None = None
        try:
            remembered = _checked.pop(str(path.resolve()), None)
            trust = remembered is not None and remembered == _fingerprint(path)
            writer = await _retry_busy(
                lambda: loop.run_in_executor(executor, cls._open_writer, path, busy_ms, trust), deadline)
            conn = writer
            await _retry_busy(lambda: loop.run_in_executor(executor, cls._prepare, conn, path), deadline)
            reader = await loop.run_in_executor(read_executor, _connect_reader, path, lock_timeout)
        except BaseException as exc:
            if reader is not None:
                await loop.run_in_executor(read_executor, reader.close)
            if writer is not None:
                await loop.run_in_executor(executor, writer.close)
            executor.shutdown(wait=False)
            read_executor.shutdown(wait=False)
            if isinstance(exc, sqlite3.Error | OSError):
                raise _open_error(exc, path) from exc
            raise
        store = cls(path, writer, executor, reader, read_executor, lock_timeout)
        store._remember_check = remember_check  # checked, or created, here: either way known to be sound
        return store

    @staticmethod
    def _open_writer(path: Path, busy_ms: int, trust: bool) -> sqlite3.Connection:
        """Connect and run the integrity check (writer thread); `trust`: this process already checked this
        very file."""
        _ensure_directory(path)
        existed = path.exists() and path.stat().st_size > 0
        if existed and not os.access(path, os.W_OK):
            raise StoreUnwritable(f"database {path} is read-only: Rostrum cannot write to it", path)
        conn = _connect(path)
        try:
            conn.execute(f"PRAGMA busy_timeout={busy_ms}")
            if existed and not trust:
                rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
                if rows != ["ok"]:
                    raise StoreCorrupt(
                        f"database {path} failed its integrity check: {'; '.join(rows[:3])}; it was left untouched",
                        path)
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _prepare(conn: sqlite3.Connection, path: Path) -> None:
        """WAL, FULL sync, foreign keys, migrations (writer thread; retried while another process holds a lock)."""
        try:
            refuse_newer(conn)  # before anything changes the file, even its journal mode
        except StoreTooNew as exc:
            raise StoreTooNew(f"{path}: {exc}; it was left untouched", path) from None
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreUnwritable(f"database {path} cannot use write-ahead logging (journal mode {mode}): "
                                  "is it on a read-only or network filesystem?", path)
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        try:
            migrate(conn)
        except StoreTooNew as exc:
            raise StoreTooNew(f"{path}: {exc}; it was left untouched", path) from None

    async def close(self) -> None:
        """Commit what is queued, then close both connections."""
        self._closing = True
        self._wake.set()
        task = self._writer_task
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            await task
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._read_executor, self._reader.close)
        await loop.run_in_executor(self._executor, self._writer.close)
        self._read_executor.shutdown(wait=False)
        self._executor.shutdown(wait=False)
        if self._remember_check:
            fingerprint = _fingerprint(self.path)
            if fingerprint is not None:
                _checked[str(self.path.resolve())] = fingerprint

    # --- the writer --------------------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn` on the writer connection's thread; storage faults come back classified."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        except (sqlite3.Error, OSError) as exc:
            classified = classify(exc, self.path)
            if classified is None:
                raise
            raise classified from exc

    async def _submit(self, apply: Callable[[sqlite3.Connection], Any]) -> Any:
        """Queue a write for the next group commit; returns its result once that group has committed."""
        if self._closing:
            raise StoreError(f"database {self.path} is closed", self.path)
        loop = self._bind_loop()
        write = _Write(apply, loop.create_future())
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
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + self.lock_timeout
        try:
            await _retry_busy(lambda: loop.run_in_executor(self._executor, self._run_group, batch), deadline,
                              self._busy)
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

    def _run_group(self, batch: list[_Write]) -> None:
        """One transaction for the whole group, one savepoint per write (writer thread)."""
        conn = self._writer
        try:
            conn.execute("BEGIN IMMEDIATE")
            for write in batch:
                write.result, write.error = None, None
                conn.execute("SAVEPOINT write")
                try:
                    write.result = write.apply(conn)
                except _NothingStored:
                    conn.execute("ROLLBACK TO write")
                except Exception as exc:
                    if isinstance(exc, sqlite3.Error | OSError) and classify(exc, self.path) is not None:
                        raise  # a storage fault: the whole group fails (or, if busy, is retried)
                    conn.execute("ROLLBACK TO write")
                    write.error = exc
                conn.execute("RELEASE write")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    # --- generic access (used by the accounts repository) ------------------------------------

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Transaction]:
        """One write transaction (write lock taken at once, waiting out another process's lock with
        backoff), committed on exit, rolled back on error. `await tx.execute(sql, params)` inside."""
        loop = self._bind_loop()
        async with self._lock:
            deadline = time.monotonic() + self.lock_timeout
            await _retry_busy(lambda: self._call(self._writer.execute, "BEGIN IMMEDIATE"), deadline, self._busy)
            try:
                yield _Transaction(self)
                await self._call(self._writer.execute, "COMMIT")
            except BaseException:
                if self._writer.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        await loop.run_in_executor(self._executor, self._writer.execute, "ROLLBACK")
                raise

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` on the read connection's thread (committed data only); storage faults classified."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._read_executor, fn, self._reader)
        except (sqlite3.Error, OSError) as exc:
            classified = classify(exc, self.path)
            if classified is None:
                raise
            raise classified from exc

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        args = tuple(params)
        return await self._read(lambda conn: conn.execute(sql, args).fetchall())

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        args = tuple(params)
        row = await self._read(lambda conn: conn.execute(sql, args).fetchone())
        return tuple(row) if row is not None else None

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

        def apply(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO debates (id, topic, topic_search, format, config, status, total_rounds,"
                " participants, created_at, updated_at, last_seq, created_by) VALUES (?,?,?,?,?,?,?,?,?,?,1,?)",
                debate_values,
            )
            conn.execute("INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)",
                         event_values)

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
        payload = json.dumps(data, default=str)
        sets = ["last_seq = ?", "updated_at = ?"]
        values: list[Any] = [at.isoformat()]
        for column in SUMMARY_COLUMNS:
            if summary and column in summary:
                sets.append(f"{column} = ?")
                values.append(summary[column])
        update = f"UPDATE debates SET {', '.join(sets)} WHERE id = ?"

        def apply(conn: sqlite3.Connection) -> int:
            # Inside the group's write transaction: nobody else can pick the same seq.
            row = conn.execute("SELECT last_seq FROM debates WHERE id = ?", (debate_id,)).fetchone()
            if row is None:
                raise KeyError(f"no debate {debate_id!r}")
            seq = int(row[0]) + 1
            if expected_seq is not None and seq != expected_seq:
                raise StaleWrite(
                    f"debate {debate_id} was changed by another process (its log is at event {seq - 1}, "
                    f"this process expected {expected_seq - 1}); reload it"
                )
            try:
                conn.execute(
                    "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)",
                    (debate_id, seq, kind.value, at.isoformat(), payload, idem_key),
                )
            except sqlite3.IntegrityError:
                if idem_key is not None and conn.execute(
                    "SELECT 1 FROM events WHERE debate_id = ? AND idem_key = ?", (debate_id, idem_key)
                ).fetchone():
                    raise _NothingStored from None
                raise
            conn.execute(update, (seq, *values, debate_id))
            return seq

        seq = await self._submit(apply)
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
        def apply(conn: sqlite3.Connection) -> bool:
            return conn.execute("DELETE FROM debates WHERE id = ?", (debate_id,)).rowcount > 0

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
    def _row(r: sqlite3.Row | tuple[Any, ...]) -> DebateRow:
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
