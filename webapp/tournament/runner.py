"""Playing a tournament: at most `concurrency` debates at once, the total budget checked (against an
estimate) before each new debate, a clean stop with a recorded reason, and resuming after a restart.

Nothing is remembered in memory that the store does not also say: the debate of each slot is found by
its config (`tournament`, `tournament_slot`), so a rerun after a crash continues the unfinished debates
and creates only the missing ones; the unique slot index refuses a second debate for a slot.

Where the debates play: in this process (the CLI, a web app in the default mode), or, with a `remote`
(the debate workers' client, `ROSTRUM_WORKERS=external`), on the debate workers: each debate is created
here and handed over as a "run" job that any worker may take (so a tournament's debates spread over the
workers), and followed through the store until it ends or needs a person. The scheduling loop itself
then runs on a worker too (`webapp.workers.Worker` takes the running tournaments nobody plays), under
the tournament's claim; a stop is the tournament's status, set by any web process and read here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from webapp.engine.api import Command
from webapp.engine.engine import Engine, RemoteRunner
from webapp.engine.machine import ACTIVE_STATES, State, TransitionNotAllowed
from webapp.engine.runner import DebateSession
from webapp.models import utcnow
from webapp.store.errors import DUPLICATE_KEYS
from webapp.tournament.plan import Slot, Tournament, estimate_debate, schedule, slot_config
from webapp.tournament.progress import TERMINAL, TournamentCompleted, budget_words, standings
from webapp.tournament.store import (
    LEASE_S,
    SlotDebate,
    TournamentBusy,
    TournamentRow,
    TournamentStore,
    owner_name,
)

log = logging.getLogger(__name__)

# A debate handed to the workers is still theirs to play while its status is one of these (created and
# not yet taken, or running); any other status means it ended or waits for a person.
PLAYING = frozenset({*(s.value for s in ACTIVE_STATES), State.IDLE.value})
FOLLOW_SECONDS = 1.0  # how often the store is read for the debates (and the stop) of a tournament on workers
TaskFactory = Callable[[Coroutine[Any, Any, Any]], "asyncio.Task[Any]"]


class TournamentRunner:
    """Plays one tournament to its end, or until its budget or a person stops it. With `remote`, its
    debates play on the debate workers and this runner only schedules and follows them (reading the
    store every `poll` seconds); `owner` and `lease` name and time its claim."""

    def __init__(self, engine: Engine, tournament_id: str, actor: str | None = None,
                 on_debate: Callable[[Slot, DebateSession, bool], None] | None = None, *,
                 remote: RemoteRunner | None = None, owner: str | None = None, lease: float = LEASE_S,
                 poll: float = FOLLOW_SECONDS) -> None:
        self.engine = engine
        self.store = TournamentStore(engine.store)
        self.tournament_id = tournament_id
        self.actor = actor
        # Told of each debate as it starts or resumes (False) and as it stops (True): the CLI prints it.
        # Only for debates played in this process.
        self.on_debate = on_debate
        self.remote = remote
        self.owner = owner or owner_name()
        self.lease = lease
        self.poll = poll
        self.stop_requested = False
        self.stop_reason = "stopped by a person"
        self.sessions: dict[str, DebateSession] = {}  # the debates playing now

    def request_stop(self, reason: str = "stopped by a person") -> None:
        """Start no further debate; those playing go on (see `pause_playing`)."""
        self.stop_requested = True
        self.stop_reason = reason

    async def pause_playing(self, actor: str) -> None:
        """Pause the debates playing now (a resume continues them where they were)."""
        for session in list(self.sessions.values()):
            with contextlib.suppress(TransitionNotAllowed):
                await session.pause(actor=actor)

    async def run(self) -> TournamentRow:
        """Play every slot without a finished debate; returns the tournament as it ends. Cancelled (a
        shutdown), the tournament stays `running` in the store, so the next start resumes it."""
        row = await self.store.get(self.tournament_id)
        if row is None:
            raise KeyError(self.tournament_id)
        tournament = row.tournament
        actor = self.actor or tournament.created_by or "system"
        owner = self.owner
        # Raises TournamentBusy: another process plays it.
        await self.store.claim(tournament.id, owner, self.lease)
        heartbeat = asyncio.create_task(self._keep_claim(tournament.id, owner))
        try:
            if self.remote is None:
                return await self._play_all(tournament, actor)
            row = await self.store.get(tournament.id)
            if row is None:
                raise KeyError(tournament.id)
            if row.status != "running":  # stopped between the worker's look and the claim
                return row
            return await self._play_watched(tournament, actor, owner)
        finally:
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
            with contextlib.suppress(Exception):  # the store may be closing: the claim then lapses
                await asyncio.shield(self.store.release(tournament.id, owner))

    async def _keep_claim(self, tournament_id: str, owner: str) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                await self.store.renew(tournament_id, owner, self.lease)
            except Exception:  # a busy or failing store: try again next time (the lease has slack)
                log.exception("tournament %s: renewing its claim failed", tournament_id)

    async def _play_all(self, tournament: Tournament, actor: str) -> TournamentRow:
        if self.remote is None:  # on the workers it already is (that is what asked for it): a stop since stays
            await self.store.set_status(tournament.id, "running")
        free = asyncio.Semaphore(tournament.concurrency)
        tasks: set[asyncio.Task[None]] = set()
        reason: str | None = None
        debates = await self.store.debates(tournament.id)  # this runner creates the others itself
        try:
            for slot in schedule(tournament):
                existing = debates.get(slot.key)
                if existing is not None and existing.row.status in TERMINAL:
                    continue
                await free.acquire()
                if self.stop_requested:
                    free.release()
                    break
                cost_limit = None
                if existing is None:
                    refusal, cost_limit = await self._budget_check(tournament, slot)
                    # Money held back for the debates still running is not spent yet: wait for them to
                    # end (they usually spend far less than their share) before refusing the next one.
                    while refusal is not None and (running := [t for t in tasks if not t.done()]):
                        await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                        refusal, cost_limit = await self._budget_check(tournament, slot)
                    if refusal is not None:
                        free.release()
                        reason = refusal
                        break
                # Created (or continued) here, before the next budget check: that check must see this
                # debate's hard limit as committed.
                try:
                    if self.remote is None:
                        session = await self._session(tournament, slot, existing, cost_limit, actor)
                    else:  # shielded: a stop must not leave a debate created and never handed over
                        debate_id = await asyncio.shield(self._hand_over(self.remote, tournament, slot, existing,
                                                                         cost_limit, actor))
                except Exception:  # one debate that cannot start must not stop the others; the end says so
                    log.exception("tournament %s: slot %s could not start", tournament.id, slot.key)
                    free.release()
                    continue
                if self.remote is None:
                    self.sessions[session.id] = session
                    tasks.add(asyncio.create_task(self._play(tournament, slot, session, actor, free)))
                else:
                    tasks.add(asyncio.create_task(self._follow(self.remote, tournament, slot, debate_id, actor,
                                                               free)))
            if tasks:
                await asyncio.gather(*tasks)
            if self.stop_requested and reason is None:
                reason = self.stop_reason
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return await self._finish(tournament, reason)

    async def _budget_check(self, tournament: Tournament, slot: Slot) -> tuple[str | None, float | None]:
        """(why the next debate may not start, or None; the hard limit it gets)."""
        if tournament.budget_usd is None:
            return None, None
        estimate = estimate_debate(tournament, slot, self.engine.settings)
        if estimate is None:
            return "budget: a model has no known price, so a debate's cost cannot be estimated", None
        committed = await self.store.committed(tournament.id, TERMINAL)
        left = tournament.budget_usd - committed
        if estimate > left:
            spent = sum(d.row.cost_usd for d in (await self.store.debates(tournament.id)).values())
            return "budget reached: " + budget_words(estimate, tournament.budget_usd, spent, committed), None
        return None, estimate

    async def _play(self, tournament: Tournament, slot: Slot, session: DebateSession, actor: str,
                    free: asyncio.Semaphore) -> None:
        try:
            if self.on_debate is not None:
                self.on_debate(slot, session, False)
            await drive(session, actor)
            if self.on_debate is not None:
                self.on_debate(slot, session, True)
        except Exception:  # one debate that fails must not stop the others; the end reports it
            log.exception("tournament %s: slot %s failed", tournament.id, slot.key)
        finally:
            self.sessions.pop(session.id, None)
            free.release()

    async def _session(self, tournament: Tournament, slot: Slot, existing: SlotDebate | None,
                       cost_limit: float | None, actor: str) -> DebateSession:
        """The slot's debate, running: the one stored (continued) or a new one."""
        if existing is None:
            config = slot_config(tournament, slot, cost_limit)
            try:
                debate_id = await self.engine.create(config, actor=tournament.created_by or actor)
            except DUPLICATE_KEYS:  # another process created it a moment ago: continue it
                found = (await self.store.debates(tournament.id)).get(slot.key)
                if found is None:
                    raise
                existing = found
            else:
                session = await self.engine.session(debate_id)
                session.ensure_running()
                return session
        session, _ = await self.engine.continue_debate(existing.row.id, actor=actor)
        return session

    # --- debates on the workers -------------------------------------------------------------------

    async def _play_watched(self, tournament: Tournament, actor: str, owner: str) -> TournamentRow:
        """Play on the workers while reading the tournament's row: when a web process stopped it (its
        status is no longer `running`) or another worker holds its claim now, scheduling ends here at
        once; the debates in flight are the workers' and finish there, and the status is left as set."""
        play = asyncio.create_task(self._play_all(tournament, actor))
        watch = asyncio.create_task(self._watch_row(tournament.id, owner))
        try:
            done, _ = await asyncio.wait({play, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (play, watch):
                task.cancel()
            await asyncio.gather(play, watch, return_exceptions=True)
        if play in done:
            return play.result()
        log.info("tournament %s: %s; no further debate starts here", tournament.id, watch.result())
        row = await self.store.get(tournament.id)
        if row is None:
            raise KeyError(tournament.id)
        return row

    async def _watch_row(self, tournament_id: str, owner: str) -> str:
        """Until the tournament is stopped from elsewhere or its claim is lost; says which."""
        while True:
            await asyncio.sleep(self.poll)  # a period: the row is another process's to change
            try:
                row = await self.store.get(tournament_id)
            except Exception:  # a store hiccup: read again next time
                log.exception("tournament %s: reading its row failed", tournament_id)
                continue
            if row is None:
                return "it was deleted"
            if row.status != "running":
                self.request_stop(row.stop_reason or "stopped by a person")
                return f"it was {row.status} elsewhere"
            if row.owner != owner:
                return f"its claim passed to {row.owner}"

    async def _hand_over(self, remote: RemoteRunner, tournament: Tournament, slot: Slot,
                         existing: SlotDebate | None, cost_limit: float | None, actor: str) -> str:
        """Create the slot's debate if it has none, and have a worker start (or continue) it."""
        if existing is None:
            config = slot_config(tournament, slot, cost_limit)
            try:
                debate_id = await self.engine.create(config, actor=tournament.created_by or actor)
            except DUPLICATE_KEYS:  # another process created it a moment ago
                found = (await self.store.debates(tournament.id)).get(slot.key)
                if found is None:
                    raise
                debate_id = found.row.id
        else:
            debate_id = existing.row.id
        try:
            await remote.run(debate_id, actor=actor)
        except TimeoutError:  # the job stays in the table: the next worker to read it starts the debate
            log.warning("tournament %s: no worker has taken debate %s yet", tournament.id, debate_id)
        return debate_id

    async def _follow(self, remote: RemoteRunner, tournament: Tournament, slot: Slot, debate_id: str, actor: str,
                      free: asyncio.Semaphore) -> None:
        """Wait (reading the store) until a debate on the workers ends or needs a person; like `drive`,
        accept a cost warning on the tournament's behalf."""
        try:
            while True:
                row = await self.engine.store.get_row(debate_id)
                if row is None:  # deleted: the end reports the slot as missing
                    return
                if row.status == State.AWAITING_ACK.value:
                    try:
                        await remote.send(debate_id, Command.ACKNOWLEDGE_WARNING, actor=actor)
                        continue
                    except TransitionNotAllowed:  # it moved on meanwhile (a person answered it)
                        continue
                    except TimeoutError:  # no worker answered yet: ask again after a while
                        pass
                if row.status not in PLAYING:
                    return
                await asyncio.sleep(self.poll)  # a period: the debate plays in another process
        except Exception:  # one debate that fails must not stop the others; the end reports it
            log.exception("tournament %s: following slot %s failed", tournament.id, slot.key)
        finally:
            free.release()

    async def _finish(self, tournament: Tournament, reason: str | None) -> TournamentRow:
        debates = await self.store.debates(tournament.id)
        slots = schedule(tournament)
        unfinished = [debates[s.key].row.id for s in slots if s.key in debates and debates[s.key].row.status
                      not in TERMINAL]
        missing = [s for s in slots if s.key not in debates]
        if reason is None and not unfinished and not missing:
            await self.store.set_status(tournament.id, "completed")
            self._announce_completed(tournament, debates)
        else:
            if reason is None:
                reason = (f"{len(unfinished)} debate(s) need a person (failed or waiting): {', '.join(unfinished)}"
                          if unfinished else f"{len(missing)} debate(s) could not be created")
            await self.store.set_status(tournament.id, "stopped", reason)
        row = await self.store.get(tournament.id)
        assert row is not None
        return row

    def _announce_completed(self, tournament: Tournament, debates: dict[str, SlotDebate]) -> None:
        """Tell this process the tournament completed (`Engine.notices`): its webhook relay queues
        `tournament.completed` for the endpoints that want it, as it queues a debate's events."""
        table = standings(tournament, debates)
        leader = table[0].label if table and table[0].played else None
        self.engine.notices.emit(TournamentCompleted(
            tournament.id, tournament.name or tournament.id, utcnow(), len(debates),
            sum(d.row.cost_usd for d in debates.values()), leader))


async def drive(session: DebateSession, actor: str) -> State:
    """Run one debate until it ends or needs a person. Nobody is there to acknowledge a cost warning,
    so the tournament does (its own budget is the guard); clarification questions are switched off."""
    session.ensure_running()
    while True:
        status = await session.join()
        if status is State.AWAITING_ACK:
            await session.acknowledge_warning(actor=actor)
            continue
        return status


class TournamentManager:
    """The tournaments this process is playing (the web app's background; one task each).

    When the engine's debates run on workers (`Engine.workers`, `ROSTRUM_WORKERS=external`), so do
    tournaments: `play` and `stop` then only set the tournament's status (the durable request the
    workers read) and ring them; this process plays nothing itself."""

    def __init__(self, engine: Engine, task_factory: TaskFactory | None = None) -> None:
        self.engine = engine
        self.task_factory: TaskFactory = task_factory or asyncio.ensure_future
        self.runners: dict[str, tuple[TournamentRunner, asyncio.Task[Any]]] = {}

    def running(self, tournament_id: str) -> bool:
        entry = self.runners.get(tournament_id)
        return entry is not None and not entry[1].done()

    @property
    def on_workers(self) -> bool:
        """Whether tournaments play on the debate workers rather than in this process."""
        return self.engine.workers is not None

    def plays(self, row: TournamentRow) -> bool:
        """Whether the tournament is being played (here, or on the workers when they play tournaments)."""
        return row.status == "running" if self.on_workers else self.running(row.id)

    async def play(self, tournament_id: str, actor: str | None = None) -> None:
        """Play (or continue) a tournament: here in the background, or on the debate workers."""
        if not self.on_workers:
            self.start(tournament_id, actor=actor)
            return
        await TournamentStore(self.engine.store).request_play(tournament_id)
        await self._ring(tournament_id)

    async def stop(self, tournament_id: str, reason: str = "stopped by a person") -> bool:
        """Start no further debate of the tournament (those running finish); True if it was playing
        (here, or on the workers)."""
        if not self.on_workers:
            return self.request_stop(tournament_id, reason)
        stopping = await TournamentStore(self.engine.store).request_stop(tournament_id, reason)
        await self._ring(tournament_id)
        return stopping

    async def _ring(self, tournament_id: str) -> None:
        """Wake the workers now rather than at their next look at the store (which is the fallback)."""
        ring = getattr(self.engine.workers, "ring_tournament", None)  # `WorkerClient`, without importing it
        if ring is not None:
            with contextlib.suppress(Exception):
                await ring(tournament_id)

    def start(self, tournament_id: str, actor: str | None = None) -> None:
        """Play (or continue) a tournament in the background; nothing if it is already playing here."""
        if self.running(tournament_id):
            return
        runner = TournamentRunner(self.engine, tournament_id, actor=actor)
        self.runners[tournament_id] = (runner, self.task_factory(self._run(runner)))

    async def _run(self, runner: TournamentRunner) -> None:
        try:
            await runner.run()
        except asyncio.CancelledError:
            raise
        except TournamentBusy as exc:  # another process plays it: nothing to do here
            log.info("%s", exc)
        except Exception:
            log.exception("tournament %s failed", runner.tournament_id)

    def request_stop(self, tournament_id: str, reason: str = "stopped by a person") -> bool:
        """Start no further debate (those running finish); True if it was playing here."""
        entry = self.runners.get(tournament_id)
        if entry is None or entry[1].done():
            return False
        entry[0].request_stop(reason)
        return True

    async def resume_unfinished(self) -> list[str]:
        """After a restart: continue every tournament the store says was playing."""
        ids = await TournamentStore(self.engine.store).with_status("running")
        for tournament_id in ids:
            self.start(tournament_id)
        return ids

    async def close(self) -> None:
        """Cancel the drivers (the debates' runners are the engine's to stop); the store still says
        `running`, so the next start resumes them."""
        tasks = [task for _, task in self.runners.values() if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.runners.clear()
