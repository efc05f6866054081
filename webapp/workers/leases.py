"""The two tables workers coordinate through (migration `011_worker_leases`), on either store.

`Leases`: who runs a debate and until when. Taking a lease is one conditional upsert, so of two workers
trying at once exactly one gets it; renewing and releasing only ever touch the caller's own lease.
`JobQueue`: what web processes ask of workers, and what came of it. Finishing a job is conditional
too, so a job is answered once even if two workers picked it up.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from webapp.store.protocol import EventStore

# Taken when there is no lease, when the last one has expired, or when it is already ours (renewal by
# acquire is harmless). The WHERE of the upsert is what makes the take atomic on both databases.
ACQUIRE = """INSERT INTO debate_leases (debate_id, owner, expires_at) VALUES (?, ?, ?)
    ON CONFLICT (debate_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
    WHERE debate_leases.expires_at < ? OR debate_leases.owner = excluded.owner"""


def now() -> float:
    """Seconds since the epoch: lease times are compared across processes (and hosts: keep clocks in sync)."""
    return time.time()


class Leases:
    """Debate leases of one worker (`owner`), each `duration` seconds from its last renewal."""

    def __init__(self, store: EventStore, owner: str, duration: float) -> None:
        self.store = store
        self.owner = owner
        self.duration = duration

    async def acquire(self, debate_id: str) -> bool:
        """Take the debate's lease if nobody else holds a live one; whether this worker holds it now."""
        t = now()
        async with self.store.transaction() as tx:
            done = await tx.execute(ACQUIRE, (debate_id, self.owner, t + self.duration, t))
        return done.rowcount > 0

    async def renew(self, debate_id: str) -> bool:
        """Extend our lease; False when it is no longer ours (it expired and another worker took it)."""
        async with self.store.transaction() as tx:
            done = await tx.execute("UPDATE debate_leases SET expires_at = ? WHERE debate_id = ? AND owner = ?",
                                    (now() + self.duration, debate_id, self.owner))
        return done.rowcount > 0

    async def renew_all(self, debate_ids: Iterable[str]) -> set[str]:
        """Extend our leases of `debate_ids` in one statement; the debates whose lease is still ours (a
        renewed lease cannot be taken, so what the second read sees is what the update kept)."""
        ids = list(debate_ids)
        if not ids:
            return set()
        marks = ", ".join("?" * len(ids))
        async with self.store.transaction() as tx:
            await tx.execute(f"UPDATE debate_leases SET expires_at = ? WHERE owner = ? AND debate_id IN ({marks})",
                             (now() + self.duration, self.owner, *ids))
        rows = await self.store.fetchall(
            f"SELECT debate_id FROM debate_leases WHERE owner = ? AND debate_id IN ({marks})", (self.owner, *ids))
        return {str(r[0]) for r in rows}

    async def release(self, debate_id: str) -> None:
        """Give our lease up (the debate paused or ended, or this worker stops): any worker may take it."""
        async with self.store.transaction() as tx:
            await tx.execute("DELETE FROM debate_leases WHERE debate_id = ? AND owner = ?", (debate_id, self.owner))

    async def expire(self, debate_id: str) -> None:
        """Give our lease up while the debate still runs (this worker stops): the row stays, expired, so
        the next worker to look takes the debate over at once instead of after the lease's time."""
        async with self.store.transaction() as tx:
            await tx.execute("UPDATE debate_leases SET expires_at = 0 WHERE debate_id = ? AND owner = ?",
                             (debate_id, self.owner))

    async def orphans(self, statuses: list[str]) -> list[str]:
        """Debates in one of `statuses` whose lease has expired: a worker ran them and stopped renewing.
        A debate that never had a lease is not among them: a process that runs debates without leases
        (the CLI, a web instance in the default mode, a tournament) owns it, and no worker takes it."""
        marks = ", ".join("?" * len(statuses))
        rows = await self.store.fetchall(
            "SELECT l.debate_id FROM debate_leases l JOIN debates d ON d.id = l.debate_id"
            f" WHERE l.expires_at < ? AND d.status IN ({marks}) ORDER BY l.expires_at", (now(), *statuses))
        return [str(r[0]) for r in rows]

    async def held_elsewhere(self) -> set[str]:
        """Debates whose lease another worker holds and has renewed in time."""
        rows = await self.store.fetchall("SELECT debate_id FROM debate_leases WHERE owner <> ? AND expires_at >= ?",
                                         (self.owner, now()))
        return {str(r[0]) for r in rows}

    async def holder(self, debate_id: str) -> tuple[str, float] | None:
        """Who holds the debate's lease and until when (expired or not), or None."""
        row = await self.store.fetchone("SELECT owner, expires_at FROM debate_leases WHERE debate_id = ?",
                                        (debate_id,))
        return None if row is None else (str(row[0]), float(row[1]))


@dataclass(frozen=True)
class Job:
    """One request for a worker: `kind` is "run" (start or continue the debate) or "command" (`args`
    holds the command's name and arguments)."""

    id: str
    debate_id: str
    kind: str
    args: dict[str, Any]
    actor: str
    created_at: float = 0.0  # seconds since the epoch (`now`)


@dataclass(frozen=True)
class Outcome:
    """What came of a job: `ok`, and `detail` (the command's sentence, or why it was refused)."""

    ok: bool
    detail: dict[str, Any]


class JobQueue:
    """The `worker_jobs` table."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def put(self, debate_id: str, kind: str, actor: str, args: dict[str, Any] | None = None) -> str:
        """Leave a job; returns its id (chosen here, so no database needs to hand one back)."""
        job_id = uuid.uuid4().hex
        async with self.store.transaction() as tx:
            await tx.execute(
                "INSERT INTO worker_jobs (id, debate_id, kind, args, actor, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (job_id, debate_id, kind, json.dumps(args or {}), actor, now()))
        return job_id

    async def pending(self, limit: int = 100) -> list[Job]:
        """Unanswered jobs, oldest first."""
        rows = await self.store.fetchall(
            "SELECT id, debate_id, kind, args, actor, created_at FROM worker_jobs WHERE done_at IS NULL"
            " ORDER BY created_at, id LIMIT ?", (limit,))
        return [Job(str(r[0]), str(r[1]), str(r[2]), json.loads(r[3]), str(r[4]), float(r[5])) for r in rows]

    async def finish(self, job_id: str, ok: bool, detail: dict[str, Any]) -> bool:
        """Record a job's outcome; False when another worker answered it first."""
        async with self.store.transaction() as tx:
            done = await tx.execute(
                "UPDATE worker_jobs SET done_at = ?, ok = ?, message = ? WHERE id = ? AND done_at IS NULL",
                (now(), 1 if ok else 0, json.dumps(detail), job_id))
        return done.rowcount > 0

    async def outcome(self, job_id: str) -> Outcome | None:
        """A job's outcome, or None while it waits."""
        row = await self.store.fetchone("SELECT ok, message FROM worker_jobs WHERE id = ? AND done_at IS NOT NULL",
                                        (job_id,))
        return None if row is None else Outcome(bool(row[0]), json.loads(row[1]))
