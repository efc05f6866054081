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

aiosqlite's threads are not daemon threads: one whose connection is never closed (a crash on the way
out) would keep the process from exiting. The store makes its connections in a short-lived daemon
thread, whose daemon status their threads inherit (`threading.Thread`'s documented default), and on an
event loop of that thread's own, so that an open cut short (cancelled) never leaves a connection
thread to report to a closed loop (`_establish`).
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
from typing import Any, ClassVar, TypeVar, cast

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
    tags: list[str] = []  # the config's topic tags: filled by `list_debates` (not a column of its own)
    tournament: str | None = None  # the config's tournament id, likewise (the dashboard groups by it)


ROW_COLUMNS = tuple(name for name in DebateRow.model_fields if name not in ("tags", "tournament"))
ROW_SELECT = ", ".join(ROW_COLUMNS)
SUMMARY_COLUMNS = (
    "status", "phase", "round", "total_rounds", "cost_usd", "turn_count", "unpriced", "interrupted"
)
# The orders a listing can be sorted in (SQL, from this fixed table only). "status": those that need a
# person first (failed, waiting), then running, paused, created, stopped, completed; newest first within.
_STATUS_RANK = ("CASE status WHEN 'error' THEN 0 WHEN 'awaiting_acknowledgement' THEN 1 "
                "WHEN 'awaiting_clarification' THEN 1 WHEN 'awaiting_turn' THEN 1 "
                "WHEN 'paused' THEN 3 WHEN 'idle' THEN 4 "
                "WHEN 'stopped' THEN 5 WHEN 'completed' THEN 6 ELSE 2 END")
LIST_ORDERS: dict[str, str] = {
    "newest": "created_at DESC, rowid DESC",
    "oldest": "created_at ASC, rowid ASC",
    "cost": "cost_usd DESC, created_at DESC, rowid DESC",
    "status": f"{_STATUS_RANK}, created_at DESC, rowid DESC",
}
# A participant's model as the dashboard and the leaderboard name it ("provider:model"), from the listing's
# participants (`p`: a row of json_each over them).
MODEL_LABEL = "json_extract(p.value, '$.provider') || ':' || json_extract(p.value, '$.model')"
INSERT_EVENT = "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)"

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
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # made here: only this account may enter
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
    if not path.exists():
        # Created empty, mode 0600, before SQLite opens it: SQLite would make it 0644 (under umask 022),
        # and gives its -wal and -shm files the database file's mode. Accounts, hashes and the audit are
        # in there: nobody else on the machine reads them.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return existed


def _connect(path: Path) -> sqlite3.Connection:
    """The writer's sqlite3 connection, made on (and then used from) its aiosqlite thread: autocommit
    mode while it is opened and migrated (`Store.open` then sets `isolation_level`)."""
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


class LogReads:
    """The reads both stores answer with the same SQL (`?` placeholders): the log, the change marker,
    id prefixes and the listing page. What differs is how each database reaches into JSON, given by
    the four fragments a store class sets."""

    SEARCH_TAGS: ClassVar[str]  # a condition: one of the debate's tags contains the `?` pattern
    HAS_MODEL: ClassVar[str]  # a condition: a participant uses the `?` "provider:model"
    HAS_TAG: ClassVar[str]  # a condition: the debate carries the `?` tag
    TAGS_COLUMN: ClassVar[str]  # the debate's tags as a JSON array, selected after `ROW_SELECT`
    TOURNAMENT_COLUMN: ClassVar[str]  # the id of the tournament it belongs to (NULL: none), selected last

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        raise NotImplementedError

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
            (prefix, like_escaped(prefix) + "%"))
        ids = {r[0] for r in rows}
        if prefix in ids:
            return prefix
        return str(rows[0][0]) if len(rows) == 1 else None

    async def list_debates(
        self, query: str = "", statuses: list[str] | None = None, offset: int = 0, limit: int = 20,
        order: str = "newest", model: str | None = None, tag: str | None = None,
    ) -> tuple[list[DebateRow], int]:
        """A page of debates in `order` (one of `LIST_ORDERS`: newest first by default), and how many
        match in all. `query`: the topic or a tag contains it; `model` ("provider:model"): one of the
        participants uses it; `tag`: the debate carries that topic tag."""
        if order not in LIST_ORDERS:
            raise ValueError(f"order: one of {', '.join(LIST_ORDERS)}, not {order!r}")
        where: list[str] = ["1=1"]
        params: list[Any] = []
        if query.strip():
            where.append(f"(topic_search LIKE ? ESCAPE '\\' OR {self.SEARCH_TAGS})")
            pattern = f"%{like_escaped(query.strip().lower())}%"
            params.extend((pattern, pattern))
        if statuses:
            where.append(f"status IN ({','.join('?' * len(statuses))})")
            params.extend(statuses)
        if model:
            where.append(self.HAS_MODEL)
            params.append(model)
        if tag:
            where.append(self.HAS_TAG)
            params.append(tag.strip().lower())
        clause = " AND ".join(where)
        total = await self.fetchone(f"SELECT count(*) FROM debates WHERE {clause}", params)
        rows = await self.fetchall(
            f"SELECT {ROW_SELECT}, {self.TAGS_COLUMN}, {self.TOURNAMENT_COLUMN} FROM debates WHERE {clause} "
            f"ORDER BY {LIST_ORDERS[order]} LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [tagged_row(r) for r in rows], int(total[0]) if total else 0


def like_escaped(text: str) -> str:
    """`text` matched literally by `LIKE … ESCAPE '\\'`."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def token_actor_pattern(person: str) -> str:
    """A `LIKE … ESCAPE '\\'` pattern for what `person` does with an API token (`ada (token …f3a9)`,
    `webapp.access.roles.Principal.actor`): their debates count towards their daily limit too."""
    return f"{like_escaped(person)} (token %"


class Store(LogReads):
    """Access to the event log. Open with `await Store.open(path)`."""

    dialect = "sqlite"  # which SQL the queries written per database use (`EventStore.dialect`)
    SEARCH_TAGS = "EXISTS (SELECT 1 FROM json_each(debates.config, '$.tags') t WHERE lower(t.value) LIKE ? ESCAPE '\\')"
    HAS_MODEL = f"EXISTS (SELECT 1 FROM json_each(debates.participants) p WHERE {MODEL_LABEL} = ?)"
    HAS_TAG = "EXISTS (SELECT 1 FROM json_each(debates.config, '$.tags') t WHERE t.value = ?)"
    TAGS_COLUMN = "json_extract(config, '$.tags')"
    TOURNAMENT_COLUMN = "json_extract(config, '$.tournament')"

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
        self._options: tuple[tuple[Any, ...], tuple[list[str], list[str]]] | None = None  # `models_and_tags`

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
            for statement in APPEND_SCHEMA:  # the connection's own (temp) schema: the file is not touched
                await conn.execute(statement)
            # From now on the first INSERT of a group begins its transaction, in the same call (BEGIN
            # IMMEDIATE, then the statement); every other transaction begins explicitly.
            conn.isolation_level = "IMMEDIATE"
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
                await _retry_busy(lambda: self._guard(self._writer.execute("BEGIN IMMEDIATE")), deadline, self._busy)
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

    async def models_and_tags(self) -> tuple[list[str], list[str]]:
        """Every participant model ("provider:model") and every topic tag of the stored debates (the
        dashboard's filters offer them). Scanning every debate's JSON takes a while with thousands of
        them, so the answer is kept until a debate is created or deleted (in any process)."""
        marker = tuple(await self.fetchone(
            "SELECT count(*), coalesce(max(rowid), 0), coalesce(max(created_at), '') FROM debates") or ())
        if self._options is not None and self._options[0] == marker:
            return self._options[1]
        models = await self.fetchall(
            f"SELECT DISTINCT {MODEL_LABEL} FROM debates, json_each(debates.participants) p ORDER BY 1")
        tags = await self.fetchall(
            "SELECT DISTINCT t.value FROM debates, json_each(debates.config, '$.tags') t ORDER BY 1")
        options = [str(r[0]) for r in models if r[0]], [str(r[0]) for r in tags if r[0]]
        self._options = (marker, options)
        return options

    async def series_ids(self, series: str) -> list[str]:
        """The debates of a series, oldest first: its first debate (whose id names the series) and every
        debate whose config names it (`DebateConfig.series`; uses the `debates_series` index)."""
        rows = await self.fetchall(
            "SELECT id FROM debates WHERE id = ? OR json_extract(config, '$.series') = ? ORDER BY created_at, rowid",
            (series, series),
        )
        return [r[0] for r in rows]

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

        return bool(await self._submit(apply=apply))

    async def committed_spend(self, created_by: str, since: datetime, terminal: Iterable[str]) -> float:
        """What debates `created_by` created since `since` have spent, or may still spend: a debate that
        has ended counts what it spent; one that has not, its hard limit (or its spend, if higher). Debates
        the person created with an API token (`ada (token …f3a9)`) are theirs too."""
        statuses = list(terminal)
        marks = ",".join("?" * len(statuses))
        row = await self.fetchone(
            f"SELECT coalesce(sum(CASE WHEN status IN ({marks}) THEN cost_usd ELSE max(cost_usd, coalesce("
            "json_extract(config, '$.budget.cost_limit'), cost_usd)) END), 0) FROM debates "
            "WHERE (created_by = ? OR created_by LIKE ? ESCAPE '\\') AND created_at >= ?",
            (*statuses, created_by, token_actor_pattern(created_by), since.isoformat()),
        )
        return float(row[0]) if row else 0.0

    @staticmethod
    def _row(r: tuple[Any, ...]) -> DebateRow:
        return debate_row(r)


def debate_row(r: tuple[Any, ...]) -> DebateRow:
    """A listing row from the `ROW_SELECT` columns of `debates` (either store's)."""
    values = dict(zip(ROW_COLUMNS, r, strict=True))
    values["participants"] = json.loads(values["participants"])
    return DebateRow.model_validate(values)


def tagged_row(r: tuple[Any, ...]) -> DebateRow:
    """A listing row from the `ROW_SELECT` columns followed by the config's tags (JSON text, or NULL)
    and its tournament's id (or NULL)."""
    row = debate_row(r[:-2])
    try:
        tags = json.loads(r[-2]) if r[-2] else []
    except ValueError:
        tags = []
    if isinstance(tags, list):
        row.tags = [str(t) for t in tags if t is not None]
    row.tournament = str(r[-1]) if r[-1] else None
    return row


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
