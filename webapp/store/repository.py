"""The debate repository: one aiosqlite connection, one transaction per event, WAL journal.

`synchronous=FULL`: an event is on disk before `append` returns, and the engine broadcasts only
after that, so what a spectator saw survives a power cut. The cost (an fsync per event) is a few
milliseconds per turn, negligible next to model latency.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite
from pydantic import BaseModel

from webapp.models import DebateEvent, EventKind, utcnow
from webapp.store.migrations import LATEST, MIGRATIONS


class StoreCorrupt(RuntimeError):
    """The database file failed its integrity check; it is left untouched."""


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


async def schema_version(db: aiosqlite.Connection) -> int:
    await db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    async with db.execute("SELECT max(version) FROM schema_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


async def migrate(db: aiosqlite.Connection, target: int = LATEST) -> int:
    """Apply every migration after the current version, each in its own transaction."""
    version = await schema_version(db)
    await db.commit()
    if version > LATEST:
        raise RuntimeError(f"database schema v{version} is newer than this Rostrum (v{LATEST})")
    while version < target:
        script = MIGRATIONS[version]
        await db.executescript(
            f"BEGIN;\n{script}\nINSERT INTO schema_version (version) VALUES ({version + 1});\nCOMMIT;"
        )
        version += 1
    return version


class Store:
    """Access to the event log. Open with `await Store.open(path)`."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        self._db = db
        self.path = path
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str | Path) -> Store:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists() and path.stat().st_size > 0
        try:
            db = await aiosqlite.connect(path)
        except sqlite3.Error as exc:
            raise StoreCorrupt(f"cannot open database {path}: {exc}") from exc
        try:
            if existed:
                async with db.execute("PRAGMA quick_check") as cur:
                    rows = [r[0] for r in await cur.fetchall()]
                if rows != ["ok"]:
                    raise StoreCorrupt(f"database {path} failed its integrity check: {'; '.join(rows[:3])}")
            await db.execute("PRAGMA journal_mode=WAL")
            await db.execute("PRAGMA synchronous=FULL")
            await db.execute("PRAGMA foreign_keys=ON")
            await db.execute("PRAGMA busy_timeout=5000")
            await migrate(db)
        except sqlite3.DatabaseError as exc:
            await db.close()
            raise StoreCorrupt(
                f"database {path} is not a readable Rostrum database ({exc}); it was left untouched"
            ) from exc
        except BaseException:
            await db.close()
            raise
        return cls(db, path)

    async def close(self) -> None:
        await self._db.close()

    # --- generic access (used by the accounts repository) ------------------------------------

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction (write lock taken at once), committed on exit, rolled back on error."""
        async with self._lock:
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                await self._db.commit()
            except BaseException:
                if self._db.in_transaction:
                    await self._db.rollback()
                raise

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row | tuple[Any, ...]]:
        async with self._db.execute(sql, tuple(params)) as cur:
            return list(await cur.fetchall())

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> tuple[Any, ...] | None:
        async with self._db.execute(sql, tuple(params)) as cur:
            row = await cur.fetchone()
        return tuple(row) if row is not None else None

    # --- debates -----------------------------------------------------------------------------

    async def create_debate(
        self, debate_id: str, topic: str, format_id: str, config: dict[str, Any], summary: dict[str, Any],
        actor: str | None = None,
    ) -> DebateEvent:
        """Insert the debate and its CREATED event in one transaction. `actor` (who created it) is
        kept in the event and in the listing (per-person spending)."""
        now = utcnow()
        async with self._lock:
            try:
                await self._db.execute(
                    "INSERT INTO debates (id, topic, topic_search, format, config, status, total_rounds,"
                    " participants, created_at, updated_at, last_seq, created_by) VALUES (?,?,?,?,?,?,?,?,?,?,1,?)",
                    (
                        debate_id,
                        topic,
                        topic.lower(),
                        format_id,
                        json.dumps(config),
                        summary.get("status", "idle"),
                        summary.get("total_rounds", 0),
                        json.dumps(summary.get("participants", [])),
                        now.isoformat(),
                        now.isoformat(),
                        actor or "",
                    ),
                )
                data: dict[str, Any] = {"config": config}
                if actor:
                    data["actor"] = actor
                await self._db.execute(
                    "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)",
                    (debate_id, 1, EventKind.CREATED.value, now.isoformat(), json.dumps(data), "created"),
                )
                await self._db.commit()
            except BaseException:
                await self._db.rollback()
                raise
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
        """Commit one event (and the listing projection) atomically.

        Returns None when `idem_key` was already stored: a replay cannot store a turn twice.
        With `expected_seq`, raises `StaleWrite` (storing nothing) if the event would not get that
        sequence number, i.e. another process wrote to this debate meanwhile.
        """
        at = at or utcnow()
        payload = json.dumps(data, default=str)
        async with self._lock:
            try:
                # Take the write lock before reading last_seq, so two processes cannot pick the same seq.
                await self._db.execute("BEGIN IMMEDIATE")
                async with self._db.execute(
                    "SELECT last_seq FROM debates WHERE id = ?", (debate_id,)
                ) as cur:
                    row = await cur.fetchone()
                if row is None:
                    raise KeyError(f"no debate {debate_id!r}")
                seq = int(row[0]) + 1
                if expected_seq is not None and seq != expected_seq:
                    raise StaleWrite(
                        f"debate {debate_id} was changed by another process (its log is at event {seq - 1}, "
                        f"this process expected {expected_seq - 1}); reload it"
                    )
                try:
                    await self._db.execute(
                        "INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)",
                        (debate_id, seq, kind.value, at.isoformat(), payload, idem_key),
                    )
                except sqlite3.IntegrityError:
                    await self._db.rollback()
                    if idem_key is not None:
                        return None
                    raise
                sets = ["last_seq = ?", "updated_at = ?"]
                values: list[Any] = [seq, at.isoformat()]
                for column in SUMMARY_COLUMNS:
                    if summary and column in summary:
                        sets.append(f"{column} = ?")
                        values.append(summary[column])
                await self._db.execute(
                    f"UPDATE debates SET {', '.join(sets)} WHERE id = ?", (*values, debate_id)
                )
                await self._db.commit()
            except BaseException:
                if self._db.in_transaction:
                    await self._db.rollback()
                raise
        return DebateEvent(debate_id=debate_id, seq=seq, kind=kind, at=at, data=data)

    async def events(self, debate_id: str) -> list[DebateEvent]:
        """A debate's whole log, in order."""
        return await self.events_after(debate_id, 0)

    async def events_after(self, debate_id: str, seq: int) -> list[DebateEvent]:
        """Events appended after `seq` (by this or another process), in order."""
        async with self._db.execute(
            "SELECT seq, kind, at, data FROM events WHERE debate_id = ? AND seq > ? ORDER BY seq", (debate_id, seq)
        ) as cur:
            rows = await cur.fetchall()
        return [
            DebateEvent(debate_id=debate_id, seq=r[0], kind=EventKind(r[1]), at=datetime.fromisoformat(r[2]),
                        data=json.loads(r[3]))
            for r in rows
        ]

    async def last_change(self) -> tuple[int, str]:
        """A cheap marker that moves whenever any debate is created or appended to, in any process."""
        async with self._db.execute("SELECT count(*), coalesce(max(updated_at), '') FROM debates") as cur:
            row = await cur.fetchone()
        return int(row[0]), str(row[1])

    async def find_id(self, prefix: str) -> str | None:
        """A debate id from a full id or a unique prefix of one."""
        async with self._db.execute(
            "SELECT id FROM debates WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 2",
            (prefix, prefix.replace("%", "\\%").replace("_", "\\_") + "%"),
        ) as cur:
            rows = await cur.fetchall()
        ids = {r[0] for r in rows}
        if prefix in ids:
            return prefix
        return rows[0][0] if len(rows) == 1 else None

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
        async with self._db.execute(f"SELECT count(*) FROM debates WHERE {clause}", params) as cur:
            total = int((await cur.fetchone())[0])
        async with self._db.execute(
            f"SELECT {ROW_SELECT} FROM debates WHERE {clause} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        ) as cur:
            rows = await cur.fetchall()
        return [self._row(r) for r in rows], total

    async def ids_with_status(self, statuses: list[str]) -> list[str]:
        async with self._db.execute(
            f"SELECT id FROM debates WHERE status IN ({','.join('?' * len(statuses))}) ORDER BY created_at",
            statuses,
        ) as cur:
            return [r[0] for r in await cur.fetchall()]

    async def get_row(self, debate_id: str) -> DebateRow | None:
        async with self._db.execute(f"SELECT {ROW_SELECT} FROM debates WHERE id = ?", (debate_id,)) as cur:
            row = await cur.fetchone()
        return self._row(row) if row else None

    async def delete_debate(self, debate_id: str) -> bool:
        """Remove a debate, its whole log and its share links (really removed, not hidden)."""
        async with self.transaction() as db:
            cur = await db.execute("DELETE FROM debates WHERE id = ?", (debate_id,))
            return cur.rowcount > 0

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
