"""Workers' leases and jobs (migration `011_worker_leases`), on either store: the rules around the
store's tables (`EventStore.leases`, `EventStore.jobs`; the SQL is in `webapp.store.leases`).

`Leases`: who runs a debate and until when. Taking a lease is one conditional upsert, so of two workers
trying at once exactly one gets it; renewing and releasing only ever touch the caller's own lease.
`JobQueue`: what web processes ask of workers, and what came of it. Finishing a job is conditional
too, so a job is answered once even if two workers picked it up.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any

from webapp.store.leases import Job, Outcome
from webapp.store.protocol import EventStore

__all__ = ["Job", "JobQueue", "Leases", "Outcome", "now"]


def now() -> float:
    """Seconds since the epoch: lease times are compared across processes (and hosts: keep clocks in sync)."""
    return time.time()


class Leases:
    """Debate leases of one worker (`owner`), each `duration` seconds from its last renewal."""

    def __init__(self, store: EventStore, owner: str, duration: float) -> None:
        self.store = store
        self.table = store.leases
        self.owner = owner
        self.duration = duration

    async def acquire(self, debate_id: str) -> bool:
        """Take the debate's lease if nobody else holds a live one; whether this worker holds it now."""
        t = now()
        return await self.table.acquire(debate_id, self.owner, t + self.duration, t)

    async def renew(self, debate_id: str) -> bool:
        """Extend our lease; False when it is no longer ours (it expired and another worker took it)."""
        return await self.table.renew(debate_id, self.owner, now() + self.duration)

    async def renew_all(self, debate_ids: Iterable[str]) -> set[str]:
        """Extend our leases of `debate_ids` in one statement; the debates whose lease is still ours."""
        return await self.table.renew_all(self.owner, debate_ids, now() + self.duration)

    async def release(self, debate_id: str) -> None:
        """Give our lease up (the debate paused or ended, or this worker stops): any worker may take it."""
        await self.table.release(debate_id, self.owner)

    async def expire(self, debate_id: str) -> None:
        """Give our lease up while the debate still runs (this worker stops): the row stays, expired, so
        the next worker to look takes the debate over at once instead of after the lease's time."""
        await self.table.expire(debate_id, self.owner)

    async def orphans(self, statuses: list[str]) -> list[str]:
        """Debates in one of `statuses` whose lease has expired: a worker ran them and stopped renewing.
        A debate that never had a lease is not among them: a process that runs debates without leases
        (the CLI, a web instance in the default mode, a tournament) owns it, and no worker takes it."""
        return await self.table.expired(statuses, now())

    async def held_elsewhere(self) -> set[str]:
        """Debates whose lease another worker holds and has renewed in time."""
        return await self.table.live_elsewhere(self.owner, now())

    async def holder(self, debate_id: str) -> tuple[str, float] | None:
        """Who holds the debate's lease and until when (expired or not), or None."""
        return await self.table.holder(debate_id)


class JobQueue:
    """The `worker_jobs` table."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.table = store.jobs

    async def put(self, debate_id: str, kind: str, actor: str, args: dict[str, Any] | None = None) -> str:
        """Leave a job; returns its id (chosen here, so no database needs to hand one back)."""
        job = Job(uuid.uuid4().hex, debate_id, kind, args or {}, actor, now())
        await self.table.put(job)
        return job.id

    async def pending(self, limit: int = 100) -> list[Job]:
        """Unanswered jobs, oldest first."""
        return await self.table.pending(limit)

    async def finish(self, job_id: str, ok: bool, detail: dict[str, Any]) -> bool:
        """Record a job's outcome; False when another worker answered it first."""
        return await self.table.finish(job_id, Outcome(ok, detail), now())

    async def outcome(self, job_id: str) -> Outcome | None:
        """A job's outcome, or None while it waits."""
        return await self.table.outcome(job_id)
