"""Copying a whole database from one store to another (`python -m webapp migrate-store --from sqlite:PATH
--to postgresql://…`): every debate with its complete log, the accounts, share links, audit trail and
tournaments, then a check that nothing was lost or changed on the way.

Rows are copied as they are stored, not replayed through `append`: sequence numbers, idempotency keys,
timestamps and the JSON text of each event arrive byte for byte, so the copy folds to the same debates
(and the target's trigger digests the verdicts for the leaderboard as they arrive).
Each debate (its listing row and its events) is copied in one transaction of the target. Afterwards the
row count of every table is compared, and each debate's checksum (SHA-256 over its listing row and its
events, in order) is computed on both sides and compared.

The target must hold no debates and no accounts yet: a copy into a database in use would mix two
histories (and could not be verified by counting).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from webapp.store.postgres import PostgresStore
from webapp.store.protocol import EventStore, is_postgres_url, open_store, redacted

# Every column of each copied table, in the order copied (the same in both stores' schemas).
DEBATE_COLUMNS = (
    "id", "topic", "topic_search", "format", "config", "status", "phase", "round", "total_rounds", "cost_usd",
    "turn_count", "participants", "created_at", "updated_at", "last_seq", "unpriced", "interrupted", "created_by",
)
EVENT_COLUMNS = ("debate_id", "seq", "kind", "at", "data", "idem_key")
TABLES: dict[str, tuple[str, ...]] = {  # the tables copied after the debates, in an order foreign keys allow
    "users": ("username", "password_hash", "role", "created_at", "last_login_at", "disabled"),
    "share_links": ("id", "debate_id", "token_hash", "created_by", "created_at", "expires_at", "revoked_at",
                    "revoked_by"),
    "audit": ("id", "at", "actor", "action", "debate_id", "outcome", "detail"),
    # (a tournament's debates name it in their config; its claim is copied as it was and lapses)
    "tournaments": ("id", "name", "spec", "status", "stop_reason", "created_by", "created_at", "updated_at",
                    "owner", "lease_until"),
}
ORDER_BY = {"users": "username", "share_links": "created_at, id", "audit": "id", "tournaments": "created_at, id"}


class TransferError(RuntimeError):
    """The copy could not be made, or does not match its source."""


@dataclass
class TransferReport:
    """What was copied, and how it was checked."""

    debates: int = 0
    events: int = 0
    rows: dict[str, int] = field(default_factory=dict)  # users, share links, audit rows
    checksums: dict[str, str] = field(default_factory=dict)  # per debate, equal on both sides

    def summary(self) -> str:
        others = ", ".join(f"{count} {table.replace('_', ' ')}" for table, count in self.rows.items())
        return (f"copied {self.debates} debate(s) with {self.events} event(s), {others}; every table's count "
                "and every debate's checksum match the source")


def parse_target(text: str) -> str | Path:
    """`sqlite:PATH`, a plain path, or a `postgresql://` URL: what `open_store` takes."""
    if is_postgres_url(text):
        return text
    for prefix in ("sqlite://", "sqlite:"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    if not text:
        raise TransferError("a SQLite database needs a path: sqlite:PATH")
    return Path(text)


def _select(columns: tuple[str, ...]) -> str:
    return ", ".join(columns)


def _insert(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({_select(columns)}) VALUES ({', '.join('?' * len(columns))})"


async def debate_checksum(store: EventStore, debate_id: str) -> str:
    """SHA-256 over a debate's listing row and its whole log, as stored (the same on any store that
    holds the same debate)."""
    digest = hashlib.sha256()
    row = await store.fetchone(f"SELECT {_select(DEBATE_COLUMNS)} FROM debates WHERE id = ?", (debate_id,))
    digest.update(json.dumps(list(row or ()), default=str).encode())
    for event in await store.fetchall(
        f"SELECT {_select(EVENT_COLUMNS)} FROM events WHERE debate_id = ? ORDER BY seq", (debate_id,)
    ):
        digest.update(b"\n" + json.dumps(list(event), default=str).encode())
    return digest.hexdigest()


async def _count(store: EventStore, table: str) -> int:
    row = await store.fetchone(f"SELECT count(*) FROM {table}")
    return int(row[0]) if row else 0


async def copy_store(source: EventStore, target: EventStore,
                     progress: Callable[[str], Awaitable[None] | None] | None = None) -> TransferReport:
    """Copy everything in `source` into the empty `target`, then verify it (`TransferError` if it differs)."""
    for table in ("debates", "users"):
        if await _count(target, table):
            raise TransferError(f"the target already holds {table}: copy into an empty database only")
    report = TransferReport()
    ids = [r[0] for r in await source.fetchall("SELECT id FROM debates ORDER BY rowid")]
    for debate_id in ids:
        row = await source.fetchone(f"SELECT {_select(DEBATE_COLUMNS)} FROM debates WHERE id = ?", (debate_id,))
        if row is None:  # deleted while copying
            continue
        events = await source.fetchall(
            f"SELECT {_select(EVENT_COLUMNS)} FROM events WHERE debate_id = ? ORDER BY seq", (debate_id,)
        )
        async with target.transaction() as tx:
            await tx.execute(_insert("debates", DEBATE_COLUMNS), row)
            for event in events:
                await tx.execute(_insert("events", EVENT_COLUMNS), event)
        report.debates += 1
        report.events += len(events)
        report.checksums[debate_id] = await debate_checksum(source, debate_id)
        if progress is not None:
            done = progress(f"{debate_id}: {len(events)} event(s)")
            if done is not None:
                await done
    for table, columns in TABLES.items():
        rows = await source.fetchall(f"SELECT {_select(columns)} FROM {table} ORDER BY {ORDER_BY[table]}")
        async with target.transaction() as tx:
            for values in rows:
                await tx.execute(_insert(table, columns), values)
            if table == "audit" and rows and isinstance(target, PostgresStore):
                # PostgreSQL: ids were given explicitly, so the identity sequence goes on after them.
                await tx.execute("SELECT setval(pg_get_serial_sequence('audit', 'id'), (SELECT max(id) FROM audit))")
        report.rows[table] = len(rows)
    await verify(source, target, report)
    return report


async def verify(source: EventStore, target: EventStore, report: TransferReport) -> None:
    """Every table's count, and every copied debate's checksum, the same on both sides."""
    problems = []
    for table in ("debates", "events", *TABLES):
        have, want = await _count(target, table), await _count(source, table)
        if have != want:
            problems.append(f"{table}: {have} row(s) in the target, {want} in the source")
    for debate_id, checksum in report.checksums.items():
        if await debate_checksum(target, debate_id) != checksum:
            problems.append(f"debate {debate_id}: its copy differs from the source (checksum)")
    if problems:
        raise TransferError("the copy does not match its source: " + "; ".join(problems))


async def migrate_store(source: str | Path, target: str | Path,
                        progress: Callable[[str], Awaitable[None] | None] | None = None) -> TransferReport:
    """Open both stores (migrating each to the current schema), copy, verify, close."""
    if str(source) == str(target):
        raise TransferError(f"source and target are the same database ({redacted(source)})")
    src = await open_store(source)
    try:
        dst = await open_store(target)
        try:
            return await copy_store(src, dst, progress)
        finally:
            await dst.close()
    finally:
        await src.close()
