"""One debate worker: takes debates through their leases and runs them with its own engine.

Three loops share the worker's set of owned debates (one lock orders their steps):
- jobs: answers the jobs web processes leave (`run`, a person's command), woken at once by a ring on
  Redis (`rostrum:commands:<debate>`) and otherwise every `poll` seconds; a command goes through the
  engine's own command path (`DebateSession.send`), so the state machine refuses exactly as it does
  in a single process;
- upkeep: renews the leases of the debates it runs, gives up those that stopped running (paused,
  finished, waiting for a person) so any worker may take them next, and those whose lease it lost;
- takeover: a debate the log shows as running whose lease nobody renewed in time lost its worker
  (killed, say): its lease is taken and it continues from its log, which redoes the turn that was cut
  off and never a finished one (turns are committed with idempotency keys). A running debate without
  any lease is left alone: a process that runs debates without leases (the CLI, a web instance in the
  default mode, a tournament played there) has it.

Tournaments started from a web process in the external mode play here too: the jobs loop also looks
for running tournaments nobody plays (a web process asked for one, or the worker playing it died) and
plays each under the tournament's claim (`TournamentRunner` with this worker's client as its remote),
so a tournament's scheduling loop runs on one worker at a time and its debates are left as "run" jobs
that any worker takes. A worker already running debates leaves a new one a moment to a less busy
worker (`SPREAD_SECONDS`), so the debates of a tournament spread over the workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from typing import Any

from webapp.engine.engine import DebateNotFound, Engine
from webapp.engine.machine import ACTIVE_STATES, State, TransitionNotAllowed
from webapp.store import StaleWrite
from webapp.tournament.runner import TournamentRunner
from webapp.tournament.store import TournamentBusy, TournamentStore, owner_name
from webapp.workers.channels import COMMANDS_PATTERN, results_channel
from webapp.workers.client import WorkerClient
from webapp.workers.leases import Job, JobQueue, Leases, now

log = logging.getLogger(__name__)

LEASE_SECONDS = 15.0  # a dead worker's debates are taken over within this plus one poll
POLL_SECONDS = 1.0  # how often the tables are read when no ring arrives (and Redis is not configured)
REDIS_RETRY = 1.0  # seconds between attempts to reach Redis again
# Per debate a worker runs (up to SPREAD_MOST of them): how long it leaves a new debate's "run" job to
# a worker that runs fewer. An idle worker, woken by the ring, takes it in milliseconds; a lone busy
# worker takes it after this short wait.
SPREAD_SECONDS = 0.1
SPREAD_MOST = 4
JOB_CONCURRENCY = 8  # debates whose jobs one worker answers side by side


class Worker:
    """Runs debates on `engine` under leases of `lease` seconds; `redis_url` for instant commands."""

    def __init__(self, engine: Engine, *, redis_url: str | None = None, lease: float = LEASE_SECONDS,
                 poll: float = POLL_SECONDS, name: str | None = None) -> None:
        self.engine = engine
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.leases = Leases(engine.store, self.name, lease)
        self.jobs = JobQueue(engine.store)
        self.poll = min(poll, lease / 3)  # renewals must come well before expiry
        self.owned: set[str] = set()
        self._redis_url = redis_url
        self._redis: Any = None
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self.tournaments: dict[str, asyncio.Task[None]] = {}  # the tournaments this worker schedules
        self.tournament_store = TournamentStore(engine.store)
        self.client: WorkerClient | None = None  # how those tournaments hand their debates to the workers

    async def start(self) -> None:
        self.client = WorkerClient(self.engine.store, self._redis_url)
        if self._redis_url:
            import redis.asyncio as aioredis  # late: Redis is optional; without it the worker polls the job table

            self._redis = aioredis.from_url(self._redis_url, decode_responses=True, socket_connect_timeout=1.0)
            self._tasks.append(asyncio.create_task(self._listen(), name="worker-listen"))
        self._tasks += [asyncio.create_task(self._loop(self._answer_jobs, wake=True), name="worker-jobs"),
                        asyncio.create_task(self._loop(self._upkeep), name="worker-upkeep")]

    async def close(self) -> None:
        """Stop: runners stop without recording anything (as in a crash) and their leases are given
        up, so another worker continues those debates at once rather than after the lease expires."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        # Their claims are released: another worker continues them at its next look.
        playing = list(self.tournaments.values())
        for task in playing:
            task.cancel()
        await asyncio.gather(*playing, return_exceptions=True)
        self.tournaments.clear()
        if self.client is not None:
            await self.client.close()
        async with self._lock:
            for debate_id in list(self.owned):
                self.owned.discard(debate_id)
                session = self.engine.sessions.get(debate_id)
                running = session is not None and session.running
                await self.engine.forget(debate_id)
                if running:
                    await self.leases.expire(debate_id)  # another worker continues it now
                else:
                    await self.leases.release(debate_id)
        if self._redis is not None:
            await self._redis.aclose()

    # --- loops ----------------------------------------------------------------------------------

    async def _loop(self, step: Any, wake: bool = False) -> None:
        while True:
            try:
                async with self._lock:
                    await step()
            except asyncio.CancelledError:
                raise
            except Exception:  # a database hiccup must not end the worker: the next round tries again
                log.exception("worker %s: %s failed", self.name, getattr(step, "__name__", step))
            if wake:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll)
                self._wake.clear()
            else:
                await asyncio.sleep(self.poll)  # a period, not a synchronisation

    async def _listen(self) -> None:
        """Rings from web processes wake the jobs loop; without Redis (or while it is down) it polls."""
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.psubscribe(COMMANDS_PATTERN)
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if message is not None:
                        self._wake.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis went away: the table is still read every poll
                log.warning("worker %s: Redis unavailable (%s); polling the jobs table", self.name, type(exc).__name__)
                await asyncio.sleep(REDIS_RETRY)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    # --- steps ----------------------------------------------------------------------------------

    async def _take(self, debate_id: str) -> bool:
        """Take a debate's lease; on success drop any session of it held from before (the log moved on)."""
        if debate_id in self.owned:
            return True
        if not await self.leases.acquire(debate_id):
            return False
        await self.engine.forget(debate_id)
        self.owned.add(debate_id)
        return True

    async def _give_up(self, debate_id: str) -> None:
        self.owned.discard(debate_id)
        await self.engine.forget(debate_id)
        await self.leases.release(debate_id)

    async def _answer_jobs(self) -> None:
        try:
            await self._play_tournaments()
        except Exception:  # the jobs are answered all the same; the tournaments are looked at next round
            log.exception("worker %s: looking for tournaments to play failed", self.name)
        jobs = await self.jobs.pending()
        if not jobs:
            return
        elsewhere = await self.leases.held_elsewhere()
        loop = asyncio.get_running_loop()
        # The lock is held for the whole pass; a long one (a hundred debates started at once on a busy
        # machine: a second or more per job) would keep upkeep from renewing leases until they expired
        # and another worker took running debates over. So a pass starts no job after `poll` seconds,
        # and the loop comes straight back for the rest once upkeep has had its turn.
        deadline = loop.time() + self.poll
        by_debate: dict[str, list[Job]] = {}
        for job in jobs:
            if job.debate_id in elsewhere or self._leave_to_others(job):
                continue  # its worker answers it, or a less busy worker is given a moment to
            by_debate.setdefault(job.debate_id, []).append(job)
        # Debates side by side, each one's jobs in order: a job is a few commits (lease, transition,
        # answer), and one after another they made the last of 200 debates started at once wait
        # a minute or more; side by side their commits share the database's flushes.
        slots = asyncio.Semaphore(JOB_CONCURRENCY)
        begun = 0

        async def answer(debate_id: str, its_jobs: list[Job]) -> None:
            nonlocal begun
            async with slots:
                if begun and loop.time() > deadline:
                    self._wake.set()
                    return
                begun += 1
                if not await self._take(debate_id):
                    return  # another worker holds it
                for job in its_jobs:
                    ok, detail = await self._apply(job)
                    if await self.jobs.finish(job.id, ok, detail) and self._redis is not None:
                        with contextlib.suppress(Exception):  # the web side falls back to reading the table
                            await self._redis.publish(results_channel(job.debate_id), job.id)

        outcomes = await asyncio.gather(*(answer(d, js) for d, js in by_debate.items()), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome  # as before: the loop logs it, and the next pass tries again

    def _leave_to_others(self, job: Job) -> bool:
        """Whether to leave a new debate's "run" job, for now, to a worker running fewer debates; when
        none takes it in time, this worker's jobs loop is woken to take it."""
        if job.kind != "run" or job.debate_id in self.owned or not self.owned:
            return False
        wait = min(len(self.owned), SPREAD_MOST) * SPREAD_SECONDS - (now() - job.created_at)
        if wait <= 0:
            return False
        asyncio.get_running_loop().call_later(wait, self._wake.set)
        return True

    async def _play_tournaments(self) -> None:
        """Play the running tournaments nobody plays (see `TournamentStore.for_workers`)."""
        for tournament_id, task in list(self.tournaments.items()):
            if task.done():
                del self.tournaments[tournament_id]
        assert self.client is not None, "start() the worker first"
        for tournament_id in await self.tournament_store.for_workers():
            if tournament_id in self.tournaments:
                continue
            runner = TournamentRunner(self.engine, tournament_id, remote=self.client, owner=owner_name(worker=True),
                                      lease=self.leases.duration, poll=self.poll)
            self.tournaments[tournament_id] = asyncio.create_task(self._play_tournament(runner),
                                                                  name=f"tournament-{tournament_id}")

    async def _play_tournament(self, runner: TournamentRunner) -> None:
        try:
            row = await runner.run()
        except TournamentBusy:  # another worker took it first
            return
        except Exception:  # the tournament stays `running` and unclaimed: a worker tries again
            log.exception("worker %s: tournament %s failed", self.name, runner.tournament_id)
            return
        log.info("worker %s: tournament %s %s", self.name, row.id, row.status)
        if self.client is not None:  # whoever watches it (the other workers, a test) hears it ended here
            await self.client.ring_tournament(row.id)

    async def _apply(self, job: Job) -> tuple[bool, dict[str, Any]]:
        """Carry a job out through the engine's command path; what came of it, as stored for the asker."""
        try:
            if job.kind == "run":
                _, result = await self.engine.continue_debate(job.debate_id, actor=job.actor)
            elif job.kind == "command":
                args = dict(job.args)
                name = args.pop("command")
                session = await self.engine.session(job.debate_id)
                result = await session.send(name, actor=job.actor, **args)
            else:
                return False, {"message": f"unknown job kind {job.kind!r}"}
        except TransitionNotAllowed as exc:
            return False, {"message": str(exc), "refused": {"state": exc.state.value, "event": f"{exc.event}",
                                                          "reason": exc.reason}}
        except DebateNotFound as exc:
            return False, {"message": str(exc), "not_found": True}
        except (StaleWrite, ValueError) as exc:  # arguments the command does not take; a log moved under us
            return False, {"message": str(exc)}
        return True, {"message": result.message, "command": result.command and result.command.value,
                      "event": result.event and result.event.value}

    async def _upkeep(self) -> None:
        # All at once: renewing one lease per transaction costs a worker with a hundred debates a hundred
        # commits every poll, and on a busy machine that pass outlasted the leases it was renewing.
        ours = await self.leases.renew_all(self.owned)
        for debate_id in list(self.owned):
            if debate_id not in ours:
                log.warning("worker %s: lost the lease of debate %s; stops running it", self.name, debate_id)
                self.owned.discard(debate_id)
                await self.engine.forget(debate_id)
                continue
            session = self.engine.sessions.get(debate_id)
            if session is not None and not session.running and session.status in ACTIVE_STATES:
                # Stopped while its log says it runs (another process wrote to it: StaleWrite). Deleting the
                # lease would leave a running debate that no worker ever takes over; expired, the next
                # takeover (any worker's) continues it from its log.
                self.owned.discard(debate_id)
                await self.engine.forget(debate_id)
                await self.leases.expire(debate_id)
            elif session is not None and session.state.seat_deadline is not None:
                continue  # a human seat's turn with a time limit: this worker keeps its clock (and the lease)
            elif session is None or not session.running:
                await self._give_up(debate_id)  # paused, ended or waiting for a person: anyone may resume it
        await self._take_over()

    async def _take_over(self) -> None:
        """Continue the running debates whose worker stopped renewing their lease."""
        # A debate waiting for a human seat's turn is taken over too: its time limit needs a clock.
        orphans = await self.leases.orphans([s.value for s in ACTIVE_STATES] + [State.AWAITING_TURN.value])
        for debate_id in orphans:
            if debate_id in self.owned or not await self._take(debate_id):
                continue
            log.info("worker %s: taking over debate %s from its log", self.name, debate_id)
            session = await self.engine.session(debate_id)
            if session.status in ACTIVE_STATES:
                session.ensure_running()
            elif session.state.seat_deadline is not None:
                pass  # loading it started the seat's clock (from when the wait began, as its log says)
            else:  # it changed between the listing and the take
                await self._give_up(debate_id)

