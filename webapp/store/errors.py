"""Storage faults, classified: what went wrong, with the database's path, and what a person can do.

`StoreError` is the base; each subclass has an `advice` line for the person at the keyboard and says
whether it is `transient` (worth retrying: only a lock held by another process is). `classify` turns
a raw `sqlite3` or `OSError` into one of them, or returns None for errors that are not storage faults
(a constraint, a programming error), which callers re-raise unchanged.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path


class StoreError(RuntimeError):
    """The database could not be used. `path` is the database file."""

    advice: str = "check the database file and its directory, then try again"
    transient: bool = False

    def __init__(self, message: str, path: Path | str | None = None) -> None:
        super().__init__(message)
        self.path = Path(path) if path is not None else None


class StoreCorrupt(StoreError):
    """The database file failed its integrity check or is not a Rostrum database; it is left untouched."""

    advice = "move the file aside or set ROSTRUM_DB to another path, then start again"


class StoreBusy(StoreError):
    """Another process held the database's write lock for longer than this one would wait."""

    advice = "another process holds the database; retry in a moment"
    transient = True


class StoreUnwritable(StoreError):
    """The database (or its directory) cannot be written: read-only file or filesystem, no permission,
    or a directory that cannot be created."""

    advice = "make the file and its directory writable, or set ROSTRUM_DB to a writable path"


class StoreFull(StoreUnwritable):
    """The disk (or filesystem quota) holding the database is full."""

    advice = "free some disk space, then retry"


class StoreIOError(StoreError):
    """The operating system reported an I/O error reading or writing the database."""

    advice = "check the disk holding the database (an I/O error is often a failing or unplugged disk)"


class StoreTooNew(StoreError):
    """The database was migrated by a newer Rostrum; this one does not touch it."""

    advice = "run the newer Rostrum, or set ROSTRUM_DB to another path"


# SQLite primary result codes (the low byte of an extended code).
SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 3, 5, 6, 8
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 10, 11, 13, 14, 26
SQLITE_READONLY_DIRECTORY = SQLITE_READONLY | (6 << 8)


def classify(exc: BaseException, path: Path) -> StoreError | None:
    """The storage fault `exc` stands for, or None when it is not one (re-raise it as it is)."""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return _classify_sqlite(exc, path)
    if isinstance(exc, OSError):
        return _classify_os(exc, path)
    return None


def _classify_sqlite(exc: sqlite3.Error, path: Path) -> StoreError | None:
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    detail = f"{getattr(exc, 'sqlite_errorname', None) or type(exc).__name__}: {exc}"
    if primary in (SQLITE_BUSY, SQLITE_LOCKED):
        return StoreBusy(f"database {path} is locked: another process holds the database ({detail})", path)
    if primary == SQLITE_READONLY:
        where = f"its directory {path.parent}" if code == SQLITE_READONLY_DIRECTORY else "it"
        return StoreUnwritable(f"database {path} is read-only: Rostrum cannot write to {where} ({detail})", path)
    if primary == SQLITE_FULL:
        return StoreFull(f"the disk holding database {path} is full ({detail})", path)
    if primary in (SQLITE_CANTOPEN, SQLITE_PERM):
        return StoreUnwritable(
            f"cannot open database {path}: the file or its directory {path.parent} is missing, not a directory "
            f"or not writable ({detail})", path)
    if primary == SQLITE_IOERR:
        return StoreIOError(f"disk I/O error on database {path} ({detail})", path)
    if primary in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return StoreCorrupt(f"database {path} is not a readable Rostrum database ({detail}); it was left untouched",
                            path)
    return None


def _classify_os(exc: OSError, path: Path) -> StoreError:
    where = f"{exc.filename}" if exc.filename else str(path)
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreFull(f"the disk holding database {path} is full ({where}: {reason})", path)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        return StoreUnwritable(f"cannot write database {path}: {where}: {reason}", path)
    if exc.errno == errno.EIO:
        return StoreIOError(f"disk I/O error on database {path} ({where}: {reason})", path)
    return StoreUnwritable(f"cannot use database {path}: {where}: {reason}", path)


class StoreUnavailable(StoreError):
    """The database server could not be reached, or the connection to it was lost."""

    advice = "check that the PostgreSQL server in ROSTRUM_DB is running and reachable, then retry"
    transient = True


class DuplicateKey(ValueError):
    """A row with the same unique key is stored already (a constraint of the data, not a storage fault).
    Both stores raise it: the SQLite store translates SQLite's unique and primary-key violations
    (`as_duplicate`), the PostgreSQL store asyncpg's `UniqueViolationError`."""


_DUPLICATE_NAMES = ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")


def as_duplicate(exc: BaseException) -> BaseException:
    """`exc` as a `DuplicateKey` when it is SQLite's "that key is stored already", else `exc` itself
    (a foreign key, NOT NULL or CHECK failure stays what it is)."""
    if isinstance(exc, sqlite3.IntegrityError) and getattr(exc, "sqlite_errorname", "") in _DUPLICATE_NAMES:
        duplicate = DuplicateKey(str(exc))
        duplicate.__cause__ = exc
        return duplicate
    return exc


# What code outside the store catches, so that only the store knows which driver it runs on (no
# `import sqlite3` elsewhere). A storage fault once the store's own retries are spent: its classified
# errors, and a raw SQLite operational error should one ever escape unclassified.
STORAGE_FAULTS: tuple[type[BaseException], ...] = (StoreError, sqlite3.OperationalError)
# "That row exists already", on either store.
DUPLICATE_KEYS: tuple[type[BaseException], ...] = (DuplicateKey,)
