"""Debate workers: processes that run debates (`python -m webapp worker`) while web processes only
render them and send commands (`ROSTRUM_WORKERS=external`).

A debate is run by at most one worker at a time, the one holding its lease (`debate_leases`), which
that worker renews; a worker that dies stops renewing, and another takes the debate over from its log
once the lease has expired. Web processes leave jobs in `worker_jobs` ("run debate X", a person's
command) and ring the owning worker through Redis, when configured, so a command arrives at once; the
table is the durable fallback that workers also poll. Tournaments started from such a web process play
on the workers too: their status is the request, one worker at a time schedules each (under the
tournament's claim) and its debates are "run" jobs any worker takes. See README, "Scaling out".
"""

from __future__ import annotations

from webapp.workers.client import WorkerClient
from webapp.workers.leases import Job, JobQueue, Leases
from webapp.workers.worker import Worker

__all__ = ["Job", "JobQueue", "Leases", "Worker", "WorkerClient"]
