"""The SQLite store's file and connections: the database file's checks before it is opened (its
directory, its mode, a read-only file, the integrity check remembered per process), connections made
in daemon threads (`aiosqlite_connect`), waiting out another process's lock (`retry_busy`) and the
faults of opening classified (`open_error`). Used by `webapp.store.repository.Store`.

aiosqlite's threads are not daemon threads: one whose connection is never closed (a crash on the way
out) would keep the process from exiting. The store makes its connections in a short-lived daemon
thread, whose daemon status their threads inherit (`threading.Thread`'s documented default), and on an
event loop of that thread's own, so that an open cut short (cancelled) never leaves a connection
thread to report to a closed loop (`_establish`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import aiosqlite

from webapp.store.errors import StoreBusy, StoreCorrupt, StoreError, StoreFull, StoreUnwritable, classify

T = TypeVar("T")
ITER_CHUNK_SIZE = 64  # aiosqlite's default: rows per round trip when a cursor is iterated


# --- integrity check, once per process start ------------------------------------------------------

# Files whose quick_check passed in this process and that nobody has touched since (main.py checks the
# database before serving, then the app opens it again: the second open need not check it again).
checked_files: dict[str, tuple[int, ...]] = {}


def fingerprint(path: Path) -> tuple[int, ...] | None:
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


def existing_database(path: Path) -> bool:
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


@dataclass(eq=False)
class _Handover:
    """A connection being made for a caller that may stop waiting for it (cancelled)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    conn: aiosqlite.Connection | None = None
    abandoned: bool = False


async def aiosqlite_connect(connector: Callable[[], sqlite3.Connection]) -> aiosqlite.Connection:
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


async def retry_busy(attempt: Callable[[], Awaitable[T]], deadline: float,
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


def open_error(exc: sqlite3.Error | OSError, path: Path) -> StoreError:
    """A fault while opening: classified, and anything else SQLite rejects counts as not-a-Rostrum-database."""
    classified = classify(exc, path)
    if classified is not None:
        return classified
    if isinstance(exc, sqlite3.DatabaseError):
        return StoreCorrupt(f"database {path} is not a readable Rostrum database ({exc}); it was left untouched", path)
    return StoreError(f"cannot open database {path}: {exc}", path)
