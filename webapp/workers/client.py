"""The web side of debate workers: leave a job, ring the worker, wait for its answer.

A command is answered as the engine would answer it in this process: a `CommandResult`, or the same
`TransitionNotAllowed` (same state, event, reason and sentence) when the state machine refuses it.
With Redis the ring and the answer travel by pub/sub (milliseconds); the job table is the durable
record either way, and what is read when no message comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from webapp.engine.api import Command, CommandResult
from webapp.engine.engine import DebateNotFound
from webapp.engine.machine import Event, State, TransitionNotAllowed
from webapp.store.protocol import EventStore
from webapp.workers.channels import commands_channel, results_channel, tournament_channel
from webapp.workers.leases import JobQueue, Outcome

ANSWER_TIMEOUT = 10.0  # seconds a command waits for a worker before giving up
POLL_SECONDS = 0.25  # how often the job table is read while waiting (the answer may come without a message)


class WorkerUnavailable(TimeoutError):
    """No worker answered in time (none is running, or none can reach the database)."""


class WorkerClient:
    """Sends jobs to the debate workers sharing `store` (and `redis_url`, when configured)."""

    def __init__(self, store: EventStore, redis_url: str | None = None, poll: float = POLL_SECONDS) -> None:
        self.queue = JobQueue(store)
        self.poll = poll
        self._redis: Any = None
        if redis_url:
            import redis.asyncio as aioredis  # late: Redis is optional; without it the job table alone carries jobs

            self._redis = aioredis.from_url(redis_url, decode_responses=True, socket_connect_timeout=1.0)

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()

    async def ring_tournament(self, tournament_id: str) -> None:
        """Wake the workers about a tournament whose status a web process just changed (to play it, or
        to stop it); without Redis they see it at their next look at the store."""
        if self._redis is not None:
            with contextlib.suppress(Exception):
                await self._redis.publish(tournament_channel(tournament_id), "")

    async def run(self, debate_id: str, actor: str, timeout: float = ANSWER_TIMEOUT) -> CommandResult:
        """Have a worker start (or continue) a debate, as `Engine.continue_debate` does."""
        return self._result(await self._ask(debate_id, "run", actor, {}, timeout))

    async def send(self, debate_id: str, command: Command | str, *, actor: str, timeout: float = ANSWER_TIMEOUT,
                   **args: Any) -> CommandResult:
        """A person's command, carried out by the debate's worker like `DebateSession.send`."""
        command = Command(command)
        return self._result(await self._ask(debate_id, "command", actor, {"command": command.value, **args}, timeout))

    async def _ask(self, debate_id: str, kind: str, actor: str, args: dict[str, Any], timeout: float) -> Outcome:
        pubsub = None
        if self._redis is not None:
            with contextlib.suppress(Exception):  # without Redis the table still carries the job
                pubsub = self._redis.pubsub()
                await pubsub.subscribe(results_channel(debate_id))  # before the job exists: no answer is missed
        try:
            job_id = await self.queue.put(debate_id, kind, actor, args)
            if pubsub is not None:
                with contextlib.suppress(Exception):
                    await self._redis.publish(commands_channel(debate_id), job_id)
            deadline = time.monotonic() + timeout
            while True:
                outcome = await self.queue.outcome(job_id)
                if outcome is not None:
                    return outcome
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerUnavailable(f"no debate worker answered within {timeout:g} s")
                await self._wait_for(pubsub, job_id, min(self.poll, left))
        finally:
            if pubsub is not None:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    @staticmethod
    async def _wait_for(pubsub: Any, job_id: str, seconds: float) -> None:
        """Until the worker says it answered `job_id`, or `seconds` pass (then the table is read again)."""
        if pubsub is None:
            await asyncio.sleep(seconds)  # nothing to await without Redis: the table is polled
            return
        end = time.monotonic() + seconds
        with contextlib.suppress(Exception):
            while (left := end - time.monotonic()) > 0:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
                if message is not None and message.get("data") == job_id:
                    return

    @staticmethod
    def _result(outcome: Outcome) -> CommandResult:
        detail = outcome.detail
        if outcome.ok:
            command = Command(detail["command"]) if detail.get("command") else None
            event = Event(detail["event"]) if detail.get("event") else None
            return CommandResult(command, event, str(detail.get("message", "")))
        refused = detail.get("refused")
        if refused is not None:
            raise TransitionNotAllowed(State(refused["state"]), refused["event"], refused["reason"])
        if detail.get("not_found"):
            raise DebateNotFound(str(detail.get("message", "")))
        raise ValueError(str(detail.get("message", "the worker could not carry the job out")))
