"""The debate repository on PostgreSQL (asyncpg): the same append-only event log, listing projection,
idempotency keys and stale-write check as the SQLite store (`webapp.store.repository.Store`), for
deployments that run several processes or hosts on one database. Selected by
`ROSTRUM_DB=postgresql://…` (`webapp.store.protocol.open_store`).

Each append is one transaction on a pooled connection: the debate's listing row is locked
(`SELECT … FOR UPDATE`), which orders the appends of one debate across every process, then the
refusals are checked in the SQLite store's order (unknown debate, stale `expected_seq`, an idempotency
key stored before: nothing written), then the event is inserted and the listing updated. PostgreSQL's
commit makes it durable before `append` returns, as SQLite's `synchronous=FULL` does. Appends to
different debates run in parallel on different connections; no group commit is needed.

The schema mirrors SQLite's (`webapp.store.pg_migrations`), text for text, so the repositories that
keep their own SQL (accounts, judge health) run the same queries on both, with their `?` placeholders
numbered (`webapp.store.sql.numbered`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from webapp.models import DebateEvent, EventKind, utcnow
from webapp.store.errors import (
    DuplicateKey,
    StoreError,
    StoreFull,
    StoreTooNew,
    StoreUnavailable,
    StoreUnwritable,
)
from webapp.store.pg_migrations import migrate
from webapp.store.protocol import redacted
from webapp.store.repository import (
    INSERT_EVENT,
    ROW_SELECT,
    SUMMARY_COLUMNS,
    DebateRow,
    LogReads,
    StaleWrite,
    debate_row,
    token_actor_pattern,
)
from webapp.store.sql import numbered

__all__ = ["PostgresStore", "redacted"]

log = logging.getLogger(__name__)

POOL_SIZE = 10  # connections per process: appends to different debates run side by side
CLOSE_TIMEOUT = 5.0  # seconds `close` waits for connections still in use
# How each listing column's value is sent (asyncpg wants the exact Python type of the column).
_COLUMN_TYPES: dict[str, type] = {
    "status": str, "phase": str, "round": int, "total_rounds": int, "cost_usd": float, "turn_count": int,
    "unpriced": int, "interrupted": int,
}


def _fault(exc: BaseException, where: str) -> StoreError | None:
    """The storage fault a driver or socket error stands for, or None (a constraint, a bug: re-raise)."""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, asyncpg.exceptions.DiskFullError):
        return StoreFull(f"database {where}: the server's disk is full ({exc})")
    if isinstance(exc, asyncpg.exceptions.ReadOnlySQLTransactionError | asyncpg.exceptions.InsufficientPrivilegeError):
        return StoreUnwritable(f"database {where} cannot be written: {exc}")
    if isinstance(exc, asyncpg.exceptions.InvalidCatalogNameError):
        return StoreUnavailable(f"database {where} does not exist: {exc}")
    if isinstance(exc, OSError | TimeoutError | asyncpg.exceptions.PostgresConnectionError
                  | asyncpg.exceptions.OperatorInterventionError | asyncpg.exceptions.TooManyConnectionsError):
        return StoreUnavailable(f"database {where} cannot be reached: {exc}")
    return None


@dataclass(frozen=True)
class _Executed:
    """What a statement of `PostgresStore.transaction()` reports (like a DB-API cursor's `rowcount`)."""

    rowcount: int
    rows: list[tuple[Any, ...]]


# A debate's tags as a JSON array (an empty one when the config has none, or not a list).
_TAGS = "CASE WHEN jsonb_typeof(config::jsonb -> 'tags') = 'array' THEN config::jsonb -> 'tags' ELSE '[]'::jsonb END"
_MODEL_LABEL = "(p.value ->> 'provider') || ':' || (p.value ->> 'model')"


def _rowcount(status: str) -> int:
    """Rows a command touched, from its status tag (`UPDATE 3`, `INSERT 0 1`, `DELETE 0`)."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else -1


class _PgTransaction:
    """What `PostgresStore.transaction()` yields: `await tx.execute(sql, params)` with `?` placeholders."""

    def __init__(self, conn: Any, where: str) -> None:
        self._conn = conn
        self._where = where

    async def execute(self, sql: str, params: Iterable[Any] = ()) -> _Executed:
        values = tuple(params)
        text = numbered(sql)
        try:
            if re.match(r"\s*(SELECT|WITH)\b", sql, re.IGNORECASE) or re.search(r"\bRETURNING\b", sql, re.IGNORECASE):
                rows = [tuple(r) for r in await self._conn.fetch(text, *values)]
                return _Executed(len(rows), rows)
            return _Executed(_rowcount(await self._conn.execute(text, *values)), [])
        except asyncpg.exceptions.UniqueViolationError as exc:
            raise DuplicateKey(str(exc)) from exc


class PostgresStore(LogReads):
    """Access to the event log in PostgreSQL. Open with `await PostgresStore.open(dsn)`."""

    dialect = "postgresql"  # which SQL the queries written per database use (`EventStore.dialect`)
    SEARCH_TAGS = f"EXISTS (SELECT 1 FROM jsonb_array_elements_text({_TAGS}) t WHERE lower(t) LIKE ? ESCAPE '\\')"
    HAS_MODEL = f"EXISTS (SELECT 1 FROM jsonb_array_elements(participants::jsonb) p WHERE {_MODEL_LABEL} = ?)"
    HAS_TAG = "coalesce(config::jsonb -> 'tags', '[]'::jsonb) @> jsonb_build_array(?::text)"
    TAGS_COLUMN = "(config::jsonb -> 'tags')::text"
    TOURNAMENT_COLUMN = "config::jsonb ->> 'tournament'"

    def __init__(self, dsn: str, pool: Any) -> None:
        self.dsn = dsn
        self.where = redacted(dsn)
        self.path = None  # no file (callers that show one show `where`)
        self._pool = pool

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    @classmethod
    async def open(cls, dsn: str, *, pool_size: int = POOL_SIZE) -> PostgresStore:
        """Connect to `dsn` and migrate the database if needed. Raises `StoreUnavailable` when the
        server cannot be reached, `StoreTooNew` for a database a newer Rostrum migrated."""
        where = redacted(dsn)
        try:
            pool = await asyncpg.create_pool(dsn, min_size=1, max_size=pool_size)
        except Exception as exc:
            fault = _fault(exc, where)
            if fault is None:
                raise StoreError(f"cannot open database {where}: {exc}") from exc
            raise fault from exc
        store = cls(dsn, pool)
        try:
            async with store._connection() as conn:
                await migrate(conn, where=where)
        except BaseException:
            await pool.close()
            raise
        return store

    async def close(self) -> None:
        """Close the pool: waits for connections in use to be released (a few seconds at most, then
        they are cut: a task cancelled mid-query must not keep the process from stopping)."""
        try:
            await asyncio.wait_for(self._pool.close(), CLOSE_TIMEOUT)
        except TimeoutError:
            log.warning("database %s: connections still in use after %.0f s; closing them", self.where,
                        CLOSE_TIMEOUT)
            self._pool.terminate()

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        """A pooled connection; driver and socket faults come back classified."""
        try:
            async with self._pool.acquire() as conn:
                yield conn
        except (StoreTooNew, StaleWrite, KeyError, DuplicateKey):
            raise
        except asyncpg.exceptions.DataError as exc:
            # A value the column cannot hold (a list for text, out of range): the caller's, not the
            # database's, fault. A ValueError, as the driver's own check of a value's type is.
            raise ValueError(f"database {self.where}: {exc}") from exc
        except Exception as exc:
            fault = _fault(exc, self.where)
            if fault is None:
                raise
            raise fault from exc

    # --- generic access (accounts, judge health) -------------------------------------------

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[_PgTransaction]:
        """One write transaction, committed on exit, rolled back on error."""
        async with self._connection() as conn, conn.transaction():
            yield _PgTransaction(conn, self.where)

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a query (`?` placeholders), committed data only."""
        async with self._connection() as conn:
            return [tuple(r) for r in await conn.fetch(numbered(sql), *params)]

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    # --- debates -----------------------------------------------------------------------------

    async def create_debate(
        self, debate_id: str, topic: str, format_id: str, config: dict[str, Any], summary: dict[str, Any],
        actor: str | None = None,
    ) -> DebateEvent:
        """Insert the debate and its CREATED event in one transaction (as `Store.create_debate`)."""
        now = utcnow()
        data: dict[str, Any] = {"config": config}
        if actor:
            data["actor"] = actor
        async with self._connection() as conn, conn.transaction():
            try:
                await conn.execute(
                    "INSERT INTO debates (id, topic, topic_search, format, config, status, total_rounds,"
                    " participants, created_at, updated_at, last_seq, created_by)"
                    " VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,1,$11)",
                    debate_id, topic, topic.lower(), format_id, json.dumps(config), str(summary.get("status", "idle")),
                    int(summary.get("total_rounds", 0)), json.dumps(summary.get("participants", [])),
                    now.isoformat(), now.isoformat(), actor or "",
                )
            except asyncpg.exceptions.UniqueViolationError as exc:
                raise DuplicateKey(f"a debate with id {debate_id!r} exists already") from exc
            await conn.execute(numbered(INSERT_EVENT), debate_id, 1, EventKind.CREATED.value, now.isoformat(),
                               json.dumps(data), "created")
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
        """Commit one event (and the listing projection) atomically; the same contract as `Store.append`:
        None when `idem_key` was stored before, `StaleWrite` when `expected_seq` is not the next number,
        `KeyError` for an unknown debate; nothing is written in those cases."""
        at = at or utcnow()
        payload = json.dumps(data, default=str)
        listing = {column: summary[column] for column in SUMMARY_COLUMNS if summary and column in summary}
        async with self._connection() as conn, conn.transaction():
            last = await conn.fetchval("SELECT last_seq FROM debates WHERE id = $1 FOR UPDATE", debate_id)
            if last is None:
                raise KeyError(f"no debate {debate_id!r}")
            seq = int(last) + 1
            if expected_seq is not None and expected_seq != seq:
                raise StaleWrite(
                    f"debate {debate_id} was changed by another process (its log is at event {seq - 1}, "
                    f"this process expected {expected_seq - 1}); reload it"
                )
            if idem_key is not None and await conn.fetchval(
                "SELECT 1 FROM events WHERE debate_id = $1 AND idem_key = $2", debate_id, idem_key
            ):
                return None
            await conn.execute(numbered(INSERT_EVENT), debate_id, seq, kind.value, at.isoformat(), payload, idem_key)
            sets = ["last_seq = $2", "updated_at = $3"]
            values: list[Any] = [debate_id, seq, at.isoformat()]
            for column, value in listing.items():
                kind_of = _COLUMN_TYPES[column]
                # (a str subclass, e.g. a state enum, is sent as the text it is, never through str())
                values.append(value if value is None or kind_of is str else kind_of(value))
                sets.append(f"{column} = ${len(values)}")
            await conn.execute(f"UPDATE debates SET {', '.join(sets)} WHERE id = $1", *values)
        return DebateEvent(debate_id=debate_id, seq=seq, kind=kind, at=at, data=data)

    async def models_and_tags(self) -> tuple[list[str], list[str]]:
        """Every participant model and topic tag of the stored debates (the dashboard's filters)."""
        models = await self.fetchall(
            f"SELECT DISTINCT {_MODEL_LABEL} FROM debates, jsonb_array_elements(participants::jsonb) p ORDER BY 1")
        tags = await self.fetchall(
            "SELECT DISTINCT t FROM debates, "
            f"jsonb_array_elements_text({_TAGS}) t ORDER BY 1")
        return [str(r[0]) for r in models if r[0]], [str(r[0]) for r in tags if r[0]]

    async def series_ids(self, series: str) -> list[str]:
        """The debates of a series, oldest first (uses the `debates_series` expression index)."""
        rows = await self.fetchall(
            "SELECT id FROM debates WHERE id = ? OR (config::jsonb ->> 'series') = ? ORDER BY created_at, rowid",
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
        return debate_row(row) if row else None

    async def delete_debate(self, debate_id: str) -> bool:
        """Remove a debate, its whole log and its share links (really removed, not hidden)."""
        async with self._connection() as conn:
            return _rowcount(await conn.execute("DELETE FROM debates WHERE id = $1", debate_id)) > 0

    async def committed_spend(self, created_by: str, since: datetime, terminal: Iterable[str]) -> float:
        """As `Store.committed_spend`: spent by ended debates, the hard limit (or spend, if higher) of others."""
        statuses = list(terminal)
        marks = ",".join("?" * len(statuses)) or "NULL"
        row = await self.fetchone(
            f"SELECT coalesce(sum(CASE WHEN status IN ({marks}) THEN cost_usd ELSE greatest(cost_usd, coalesce("
            "(config::jsonb #>> '{budget,cost_limit}')::double precision, cost_usd)) END), 0) FROM debates "
            "WHERE (created_by = ? OR created_by LIKE ? ESCAPE '\\') AND created_at >= ?",
            (*statuses, created_by, token_actor_pattern(created_by), since.isoformat()),
        )
        return float(row[0]) if row else 0.0
