"""Copying a whole database from one store to another (`python -m webapp migrate-store --from sqlite:PATH
--to postgresql://…`): every debate with its complete log, the accounts, share links, audit trail, saved
profiles and templates (the library), tournaments and webhooks, then a check that nothing was lost or changed on
the way.

Rows are copied as they are stored, not replayed through `append`: sequence numbers, idempotency keys,
timestamps and the JSON text of each event arrive byte for byte, so the copy folds to the same debates
(and the target's trigger digests the verdicts for the leaderboard as they arrive).
Each debate (its listing row and its events) is copied in one transaction of the target. Afterwards the
row count of every table is compared; each debate's checksum (SHA-256 over its listing row and its
events, in order), and each other copied table's (over all its rows), are computed on both sides and
compared.

Every table of the source is accounted for, in one of four groups: copied (`COPIED`), derived from the
log and remade by the target itself (`DERIVED`, compared by count), transient (`TRANSIENT`, not copied,
see there), or a store's own bookkeeping (`BOOKKEEPING`). A table in none of them — one a later migration
added without saying here how it moves — stops the copy before it starts, rather than being left behind.

The target must hold none of the copied rows yet: a copy into a database in use would mix two
histories (and could not be verified by counting).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from webapp.store.postgres import PostgresStore
from webapp.store.protocol import is_postgres_url, open_store, redacted
from webapp.store.sql import SqlRunner, runner

# Every column of each copied table, in the order copied (the same in both stores' schemas).
DEBATE_COLUMNS = (
    "id", "topic", "topic_search", "format", "config", "status", "phase", "round", "total_rounds", "cost_usd",
    "turn_count", "participants", "created_at", "updated_at", "last_seq", "unpriced", "interrupted", "created_by",
)
EVENT_COLUMNS = ("debate_id", "seq", "kind", "at", "data", "idem_key")
TABLES: dict[str, tuple[str, ...]] = {  # the tables copied after the debates, in an order foreign keys allow
    "users": ("username", "password_hash", "role", "created_at", "last_login_at", "disabled"),
    "share_links": ("id", "debate_id", "token_hash", "created_by", "created_at", "expires_at", "revoked_at",
                    "revoked_by", "comments"),
    "audit": ("id", "at", "actor", "action", "debate_id", "outcome", "detail"),
    # saved participant profiles and debate templates (`webapp.store.library`)
    "library": ("id", "kind", "name", "data", "created_by", "created_at", "updated_at"),
    # (a tournament's debates name it in their config; its claim is copied as it was and lapses)
    "tournaments": ("id", "name", "spec", "status", "stop_reason", "created_by", "created_at", "updated_at",
                    "owner", "lease_until"),
    # endpoints admins registered in Settings (`webapp.store.endpoints`)
    "endpoints": ("name_key", "name", "base_url", "key_env", "created_by", "created_at"),
    # webhook endpoints (their signing secrets too: the receivers verify with them) and the delivery log
    # (a pending delivery goes on being retried by the new store's senders; a sender's lease lapses)
    "webhook_endpoints": ("id", "url", "events", "secret", "format", "created_by", "created_at"),
    "webhook_deliveries": ("id", "endpoint_id", "event", "event_key", "subject", "payload", "status", "attempts",
                           "created_at", "next_attempt_at", "give_up_at", "lease_owner", "lease_until",
                           "last_attempt_at", "last_status", "last_error", "delivered_at"),
    # personal API tokens (only their digests): a moved server keeps its scripts working
    "api_tokens": ("id", "username", "name", "role", "token_hash", "suffix", "created_at", "expires_at",
                   "last_used_at", "revoked_at", "revoked_by"),
    # comments and reactions on turns (`webapp.store.comments`)
    "comments": ("id", "debate_id", "turn_key", "person", "author", "body", "at", "deleted_at", "deleted_by"),
    "reactions": ("debate_id", "turn_key", "person", "emoji", "at"),
    # the audience's votes, the people's verdicts and operators' closing times of after votes
    "audience_votes": ("debate_id", "stage", "voter", "choice", "at"),
    "human_verdicts": ("debate_id", "voter", "winner", "scores", "note", "at"),
    "audience_windows": ("debate_id", "after_closes_at", "changed_by"),
}
ORDER_BY = {"users": "username", "share_links": "created_at, id", "audit": "id", "library": "created_at, id",
            "tournaments": "created_at, id", "endpoints": "name_key", "webhook_endpoints": "created_at, id",
            "webhook_deliveries": "created_at, id", "api_tokens": "created_at, id",
            "comments": "at, id", "reactions": "debate_id, turn_key, person, emoji",
            "audience_votes": "debate_id, stage, voter", "human_verdicts": "debate_id, voter",
            "audience_windows": "debate_id"}
COPIED = ("debates", "events", *TABLES)
# Made by the target from what is copied: each debate's last verdict digest, kept by a trigger on `events`
# (migration 010) as the verdict events arrive. Compared by count.
DERIVED = ("verdict_digests",)
# Not copied, because they describe processes running now, not history: which worker holds a debate
# until when (`debate_leases`, seconds on that worker's clock) and the commands web processes left for
# workers (`worker_jobs`). After a move the new processes take leases of their own, and a debate a worker
# was running is resumed like any interrupted one; the copy is made with the app stopped, when no job is
# pending (a debate's history is its log, which is copied whole). Nor are browser sessions and sign-in
# throttle counters (`login_sessions`, `login_throttle`): after a move everyone signs in again.
TRANSIENT = ("debate_leases", "worker_jobs", "login_sessions", "login_throttle")
# Each store's record of its own schema (which migrations it applied): made by opening the target.
BOOKKEEPING = ("_rostrum_migrations", "schema_version")


class TransferError(RuntimeError):
    """The copy could not be made, or does not match its source."""


@dataclass
class TransferReport:
    """What was copied, and how it was checked."""

    debates: int = 0
    events: int = 0
    rows: dict[str, int] = field(default_factory=dict)  # per table of `TABLES`
    checksums: dict[str, str] = field(default_factory=dict)  # per debate, equal on both sides
    table_checksums: dict[str, str] = field(default_factory=dict)  # per table of `TABLES`

    def summary(self) -> str:
        others = ", ".join(f"{count} {table.replace('_', ' ')}" for table, count in self.rows.items())
        return (f"copied {self.debates} debate(s) with {self.events} event(s), {others}; every table's count "
                "and checksum and every debate's checksum match the source (worker leases and jobs, which "
                "belong to running processes, are not copied)")


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


async def debate_checksum(store: SqlRunner, debate_id: str) -> str:
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


async def table_checksum(store: SqlRunner, table: str) -> str:
    """SHA-256 over every row of one of `TABLES`, as stored (rows sorted here, not by the database: the
    two stores' collations need not agree)."""
    rows = sorted(json.dumps(list(r), default=str) for r in
                  await store.fetchall(f"SELECT {_select(TABLES[table])} FROM {table}"))
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


async def _count(store: SqlRunner, table: str) -> int:
    row = await store.fetchone(f"SELECT count(*) FROM {table}")
    return int(row[0]) if row else 0


async def table_names(store: SqlRunner) -> set[str]:
    """The names of the tables in a store's database."""
    if store.dialect.name == "postgresql":
        rows = await store.fetchall("SELECT table_name FROM information_schema.tables "
                                    "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'")
    else:
        # (not SQLite's own tables, `sqlite_sequence` and the like)
        rows = await store.fetchall("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")
    return {str(r[0]) for r in rows}


def unaccounted(tables: set[str]) -> set[str]:
    """The tables of `tables` that are neither copied, derived, transient nor bookkeeping."""
    return tables - {*COPIED, *DERIVED, *TRANSIENT, *BOOKKEEPING}


async def copy_store(source: SqlRunner, target: SqlRunner,
                     progress: Callable[[str], Awaitable[None] | None] | None = None) -> TransferReport:
    """Copy everything in `source` into the empty `target`, then verify it (`TransferError` if it differs)."""
    unknown = unaccounted(await table_names(source))
    if unknown:
        raise TransferError(f"the source has table(s) migrate-store does not know how to copy: "
                            f"{', '.join(sorted(unknown))} (see webapp/store/transfer.py)")
    for table in COPIED:
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
        report.table_checksums[table] = await table_checksum(source, table)
    await verify(source, target, report)
    return report


async def verify(source: SqlRunner, target: SqlRunner, report: TransferReport) -> None:
    """Every copied and derived table's count, every copied debate's checksum and every other copied
    table's checksum, the same on both sides."""
    problems = []
    for table in (*COPIED, *DERIVED):
        have, want = await _count(target, table), await _count(source, table)
        if have != want:
            problems.append(f"{table}: {have} row(s) in the target, {want} in the source")
    for debate_id, checksum in report.checksums.items():
        if await debate_checksum(target, debate_id) != checksum:
            problems.append(f"debate {debate_id}: its copy differs from the source (checksum)")
    for table, checksum in report.table_checksums.items():
        if await table_checksum(target, table) != checksum:
            problems.append(f"{table}: the copied rows differ from the source's (checksum)")
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
            return await copy_store(runner(src), runner(dst), progress)
        finally:
            await dst.close()
    finally:
        await src.close()
