"""The SQLite store's writer: one task that commits whatever writes are queued in ONE transaction.

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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import aiosqlite

from webapp.store.errors import StoreError, as_duplicate, classify
from webapp.store.rows import SUMMARY_COLUMNS, StaleWrite
from webapp.store.sqlite_files import retry_busy

T = TypeVar("T")
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
class QueuedAppend:
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
            return None, StaleWrite.at(self.debate_id, seq, self.expected_seq)
        return None, KeyError(f"no debate {self.debate_id!r}")


@dataclass(eq=False)
class QueuedWrite:
    """One queued write: an append (`append`), written with the other appends of its group, or another
    write (`apply`), run on the writer connection inside its own savepoint."""

    future: asyncio.Future[Any]
    append: QueuedAppend | None = None
    apply: Callable[[aiosqlite.Connection], Awaitable[Any]] | None = None
    result: Any = None
    error: BaseException | None = field(default=None)


class GroupCommit:
    """The writer of `webapp.store.repository.Store` (a base class of it): `_submit` queues a write,
    the writer task commits groups of them."""

    path: Path
    lock_timeout: float
    commits: int
    _writer: aiosqlite.Connection
    _lock: asyncio.Lock
    _pending: collections.deque[QueuedWrite]
    _wake: asyncio.Event
    _writer_task: asyncio.Task[None] | None
    _closing: bool
    _serial: int

    def _busy(self, waited: float) -> None:
        raise NotImplementedError

    async def _submit(self, append: QueuedAppend | None = None,
                      apply: Callable[[aiosqlite.Connection], Awaitable[Any]] | None = None) -> Any:
        """Queue a write for the next group commit; returns its result once that group has committed."""
        if self._closing:
            raise StoreError(f"database {self.path} is closed", self.path)
        loop = self._bind_loop()
        write = QueuedWrite(loop.create_future(), append, apply)
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
                batch: list[QueuedWrite] = []
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

    async def _commit_group(self, batch: list[QueuedWrite]) -> None:
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

    async def _run_group(self, batch: list[QueuedWrite]) -> None:
        """One transaction for the whole group, the writes in their order: each run of appends with one
        `executemany` (which also begins the transaction, `isolation_level` being IMMEDIATE), any other
        write on its own in a savepoint."""
        conn = self._writer
        try:
            run: list[QueuedWrite] = []
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

    async def _append_run(self, writes: list[QueuedWrite]) -> None:
        """Appends one after another, each in full or not at all (one INSERT statement each, through
        `rostrum_append`), in one call; then one more reads (and clears) their outcomes.

        An error of one append (a value SQLite cannot store, a constraint) stops `executemany` at its row,
        whose statement SQLite has undone: the appends before it stand, that one fails alone, and the ones
        after it are written by the next call. A storage fault fails the whole group (or, if busy, the
        group is retried)."""
        conn = self._writer
        pending: list[tuple[int, QueuedWrite]] = []
        for write in writes:
            write.result, write.error = None, None
            self._serial += 1
            pending.append((self._serial, write))
        while pending:
            failure: Exception | None = None
            try:
                await conn.executemany(INSERT_APPEND, [cast(QueuedAppend, w.append).row(n) for n, w in pending])
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
                write.result, write.error = cast(QueuedAppend, write.append).settle(*outcomes[n])
                settled += 1
            if settled == len(pending):
                return
            if failure is None:  # cannot happen: every row that ran has its outcome
                raise StoreError(f"database {self.path}: an append was neither stored nor refused", self.path)
            pending[settled][1].error = failure  # the row SQLite refused; the ones after it did not run
            pending = pending[settled + 1:]

    async def _write_alone(self, write: QueuedWrite) -> None:
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
            write.error = as_duplicate(exc)
        await conn.execute("RELEASE write")
