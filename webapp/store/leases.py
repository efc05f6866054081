"""The two tables debate workers coordinate through (migration `011_worker_leases`), on either store.

`LeaseTable` (`debate_leases`): who runs a debate and until when. Taking a lease is one conditional
upsert, so of two workers trying at once exactly one gets it; renewing and releasing only ever touch
the caller's own lease. `JobTable` (`worker_jobs`): what web processes ask of workers, and what came of
it; finishing a job is conditional too, so a job is answered once even if two workers picked it up.
Times are seconds since the epoch, given by the caller (`webapp.workers.leases` keeps the clock).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from webapp.store.sql import SqlRunner, marks

# Taken when there is no lease, when the last one has expired, or when it is already ours (renewal by
# acquire is harmless). The WHERE of the upsert is what makes the take atomic on both databases.
ACQUIRE = """INSERT INTO debate_leases (debate_id, owner, expires_at) VALUES (?, ?, ?)
    ON CONFLICT (debate_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
    WHERE debate_leases.expires_at < ? OR debate_leases.owner = excluded.owner"""


@dataclass(frozen=True)
class Job:
    """One request for a worker: `kind` is "run" (start or continue the debate) or "command" (`args`
    holds the command's name and arguments)."""

    id: str
    debate_id: str
    kind: str
    args: dict[str, Any]
    actor: str
    created_at: float = 0.0  # seconds since the epoch


@dataclass(frozen=True)
class Outcome:
    """What came of a job: `ok`, and `detail` (the command's sentence, or why it was refused)."""

    ok: bool
    detail: dict[str, Any]


class LeaseTable:
    """The `debate_leases` table of one store (`EventStore.leases`)."""

    def __init__(self, db: SqlRunner) -> None:
        self.db = db

    async def acquire(self, debate_id: str, owner: str, until: float, now: float) -> bool:
        """Take the debate's lease until `until` if nobody else holds one live at `now`; whether `owner` has it."""
        async with self.db.transaction() as tx:
            done = await tx.execute(ACQUIRE, (debate_id, owner, until, now))
        return done.rowcount > 0

    async def renew(self, debate_id: str, owner: str, until: float) -> bool:
        """Extend `owner`'s lease; False when it is no longer theirs."""
        async with self.db.transaction() as tx:
            done = await tx.execute("UPDATE debate_leases SET expires_at = ? WHERE debate_id = ? AND owner = ?",
                                    (until, debate_id, owner))
        return done.rowcount > 0

    async def renew_all(self, owner: str, debate_ids: Iterable[str], until: float) -> set[str]:
        """Extend `owner`'s leases of `debate_ids` in one statement; the debates whose lease is still
        theirs (a renewed lease cannot be taken, so what the second read sees is what the update kept)."""
        ids = list(debate_ids)
        if not ids:
            return set()
        async with self.db.transaction() as tx:
            await tx.execute(f"UPDATE debate_leases SET expires_at = ? WHERE owner = ? AND debate_id IN ({marks(ids)})",
                             (until, owner, *ids))
        rows = await self.db.fetchall(
            f"SELECT debate_id FROM debate_leases WHERE owner = ? AND debate_id IN ({marks(ids)})", (owner, *ids))
        return {str(r[0]) for r in rows}

    async def release(self, debate_id: str, owner: str) -> None:
        async with self.db.transaction() as tx:
            await tx.execute("DELETE FROM debate_leases WHERE debate_id = ? AND owner = ?", (debate_id, owner))

    async def expire(self, debate_id: str, owner: str) -> None:
        """Let `owner`'s lease lapse now, keeping the row (the next worker to look takes the debate over)."""
        async with self.db.transaction() as tx:
            await tx.execute("UPDATE debate_leases SET expires_at = 0 WHERE debate_id = ? AND owner = ?",
                             (debate_id, owner))

    async def expired(self, statuses: list[str], now: float) -> list[str]:
        """Debates in one of `statuses` whose lease expired before `now`, the longest lapsed first."""
        rows = await self.db.fetchall(
            "SELECT l.debate_id FROM debate_leases l JOIN debates d ON d.id = l.debate_id"
            f" WHERE l.expires_at < ? AND d.status IN ({marks(statuses)}) ORDER BY l.expires_at", (now, *statuses))
        return [str(r[0]) for r in rows]

    async def live_elsewhere(self, owner: str, now: float) -> set[str]:
        """Debates whose lease someone other than `owner` holds, live at `now`."""
        rows = await self.db.fetchall("SELECT debate_id FROM debate_leases WHERE owner <> ? AND expires_at >= ?",
                                      (owner, now))
        return {str(r[0]) for r in rows}

    async def holder(self, debate_id: str) -> tuple[str, float] | None:
        """Who holds the debate's lease and until when (expired or not), or None."""
        row = await self.db.fetchone("SELECT owner, expires_at FROM debate_leases WHERE debate_id = ?", (debate_id,))
        return None if row is None else (str(row[0]), float(row[1]))

    async def all(self) -> list[tuple[str, str, float]]:
        """Every lease as (debate, owner, expiry), by debate (for monitoring and benchmarks)."""
        rows = await self.db.fetchall("SELECT debate_id, owner, expires_at FROM debate_leases ORDER BY debate_id")
        return [(str(r[0]), str(r[1]), float(r[2])) for r in rows]


class JobTable:
    """The `worker_jobs` table of one store (`EventStore.jobs`)."""

    def __init__(self, db: SqlRunner) -> None:
        self.db = db

    async def put(self, job: Job) -> None:
        async with self.db.transaction() as tx:
            await tx.execute(
                "INSERT INTO worker_jobs (id, debate_id, kind, args, actor, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (job.id, job.debate_id, job.kind, json.dumps(job.args), job.actor, job.created_at))

    async def pending(self, limit: int) -> list[Job]:
        """Unanswered jobs, oldest first."""
        rows = await self.db.fetchall(
            "SELECT id, debate_id, kind, args, actor, created_at FROM worker_jobs WHERE done_at IS NULL"
            " ORDER BY created_at, id LIMIT ?", (limit,))
        return [Job(str(r[0]), str(r[1]), str(r[2]), json.loads(r[3]), str(r[4]), float(r[5])) for r in rows]

    async def finish(self, job_id: str, outcome: Outcome, at: float) -> bool:
        """Record a job's outcome; False when it was answered already."""
        async with self.db.transaction() as tx:
            done = await tx.execute(
                "UPDATE worker_jobs SET done_at = ?, ok = ?, message = ? WHERE id = ? AND done_at IS NULL",
                (at, 1 if outcome.ok else 0, json.dumps(outcome.detail), job_id))
        return done.rowcount > 0

    async def outcome(self, job_id: str) -> Outcome | None:
        """A job's outcome, or None while it waits."""
        row = await self.db.fetchone("SELECT ok, message FROM worker_jobs WHERE id = ? AND done_at IS NOT NULL",
                                     (job_id,))
        return None if row is None else Outcome(bool(row[0]), json.loads(row[1]))
