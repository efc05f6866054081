"""Committing a debate's events, and replaying what another process wrote.

Every event is folded into a fork of the state, appended with the log position its writer last read
(`expected_seq`: `StaleWrite` when another process wrote meanwhile, after which the log is read again),
and only then swapped in and broadcast. A transition is committed as a `Move`: the machine decides its
source and target under the commit lock. When storage fails while nobody else drives the debate, it is
interrupted in memory and a recorder task keeps trying to write the interruption to the log.

A mixin of `DebateSession` (see runner.py).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from webapp.engine.events import ActionPayload, Payload, TransitionPayload, TurnPayload, logged
from webapp.engine.machine import ACTIVE_STATES, Event, State, TransitionNotAllowed
from webapp.engine.params import TransitionParams, typed_params
from webapp.engine.session_parts import SessionParts
from webapp.engine.state import SYSTEM_ACTOR, DebateState
from webapp.engine.stream import LiveEvent, LiveStatus
from webapp.models import DebateEvent, utcnow
from webapp.store import StaleWrite, StoreError
from webapp.store.errors import STORAGE_FAULTS

# A storage fault, once the store's own retries are spent: its classified errors (locked, read-only,
# full, I/O, …), and a raw driver error should one ever escape unclassified (the store says which).
STORAGE_ERRORS = STORAGE_FAULTS

log = logging.getLogger(__name__)

STORAGE_RETRY_CAP = 30.0  # seconds between attempts to record an interruption, at most


def is_storage_error(exc: BaseException) -> bool:
    """A failure to read or write the log (not a conflict with another writer: that is `StaleWrite`)."""
    return isinstance(exc, STORAGE_ERRORS) and not isinstance(exc, StaleWrite)


def _describe_storage(exc: BaseException) -> str:
    """The store's message (it names the database) and, for a classified fault, what a person can do."""
    message = str(exc) or type(exc).__name__
    advice = getattr(exc, "advice", None) if isinstance(exc, StoreError) else None
    return f"{message} ({advice})" if advice else message


@dataclass(frozen=True)
class Move:
    """A transition to commit: the machine decides its source and target under the commit lock."""

    event: Event
    params: TransitionParams
    actor: str | None = None

    def payload(self, source: State, target: State) -> TransitionPayload:
        # Stored sparse: the parameters given, each model inside them whole (`events._whole`).
        data: dict[str, Any] = {"event": self.event, "from": source, "to": target, "params": self.params}
        if self.actor and self.actor != SYSTEM_ACTOR:  # the runner's own transitions are the system's (the default)
            data["actor"] = self.actor
        return TransitionPayload.model_validate(data)


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a shielded commit's outcome as seen (its caller may have been cancelled meanwhile)."""
    if not task.cancelled():
        task.exception()


class Committing(SessionParts):
    """Writing events to the log and reading back what others wrote (a mixin of `DebateSession`)."""

    async def record_action(self, action: str, actor: str, detail: dict[str, Any] | None = None) -> None:
        """Note in the log something a person did that is not a transition (a share link created or
        revoked), so the debate's own history says who did it."""
        await self._commit(ActionPayload(action=action, actor=actor, detail=detail) if detail
                           else ActionPayload(action=action, actor=actor))

    async def catch_up(self) -> int:
        """Fold in and broadcast events another process appended to this debate's log (a debate run
        by the CLI, say, watched from the web app); returns how many. Nothing to do while this
        process runs the debate itself, nor while its storage is unavailable."""
        if self.running or self._storage_problem is not None:
            return 0
        async with self._commit_lock:
            newer = await self.store.events_after(self.id, self.state.last_seq)
            if not newer:
                return 0
            state = self.state.fork()
            try:
                for event in newer:
                    state.apply(event)
            except (TransitionNotAllowed, ValueError):  # cannot happen with a sound log; rebuild, not guess
                await self._reload()
            else:
                self.state.adopt(state)
        for event in newer:
            self._publish(event, replayed=True)
        return len(newer)

    async def _commit(self, payload: Payload | Move, idem_key: str | None = None) -> DebateEvent | None:
        """Persist, then swap in and broadcast, one event: a payload, or a transition (`Move`) the
        machine decides under the commit lock. Shielded: a cancelled caller cannot leave the in-memory
        state and the log disagreeing."""
        inner = asyncio.ensure_future(self._commit_inner(payload, idem_key))
        inner.add_done_callback(_retrieve)
        return await asyncio.shield(inner)

    async def _commit_inner(self, payload: Payload | Move, idem_key: str | None) -> DebateEvent | None:
        async with self._commit_lock:
            state = self.state
            at = utcnow()
            if isinstance(payload, TurnPayload) and idem_key in state.turn_keys:
                return None
            # Fold into a copy: until the log has the event, the state (and everyone reading it) is
            # exactly as before, whatever fails on the way.
            new = state.fork()
            move = payload if isinstance(payload, Move) else None
            if isinstance(payload, Move):
                # raises, changing nothing
                source, target = new.machine.send(payload.event, at=at, params=payload.params)
                payload = payload.payload(source, target)
            record = logged(state.id, state.last_seq + 1, at, payload)
            new.apply(record, sent=move is not None)
            try:
                stored = await self.store.append(state.id, record.kind, record.data, idem_key=idem_key,
                                                 summary=new.summary(), at=at, expected_seq=record.seq)
            except StaleWrite:  # another process wrote to this debate: read the log as it now is
                await self._reload()
                raise
            if stored is None:  # already in the log (a replay): the log wins
                await self._reload()
                return None
            if move is None or "position" not in move.params.model_fields_set:
                # where the debate is may have been noted meanwhile (a turn just started): keep it
                new.machine.context.position = state.machine.context.position
            state.adopt(new)  # the swap: no await between the commit and it
        self._publish(record)
        return record

    def _publish(self, event: DebateEvent, replayed: bool = False) -> None:
        """Tell subscribers about an event that is already in the log."""
        self._watch_seat()
        self.broadcaster.emit(LiveEvent(self.id, event, replayed))
        if self._on_event is not None:
            self._on_event(self, event)

    async def _reload(self) -> None:
        """Read the log as it now is (another process wrote to it) and tell every subscriber to look again."""
        self.state = DebateState.from_events(await self.store.events(self.state.id))
        self._watch_seat()
        self.broadcaster.emit(LiveStatus(self.id, "reloaded", "the log was read again"))

    async def notice_takeover(self) -> bool:
        """While this process runs the debate: if another process has written to its log since our last
        write, it took the debate over (it found it interrupted, say, and resumed it). Stop driving it,
        read the log as it is, and tell subscribers; returns whether that happened. Cheap when nothing
        changed: one indexed read. Watched debates call this every second, so open tabs show the new
        owner's state within about a second instead of whenever this runner next tries to write."""
        if not self.running or self._storage_problem is not None:
            return False
        async with self._commit_lock:  # a commit of our own holds it until its state is swapped in
            newer = await self.store.events_after(self.id, self.state.last_seq)
        if not newer:
            return False
        log.warning("debate %s: another process wrote to its log; this process stops driving it", self.id)
        await self._halt()
        async with self._commit_lock:
            await self._reload()
        return True

    async def _transition(self, event: Event, actor: str | None = None, params: TransitionParams | None = None,
                          **given: Any) -> DebateEvent | None:
        """Commit `event` with its parameters: `params`, or the same as keywords (validated here, before
        anything changes)."""
        return await self._commit(Move(event, typed_params(params, given), actor))

    def _storage_failed(self, exc: BaseException) -> None:
        """Storage failed while nobody else will write for this debate: interrupt it in memory and
        keep trying to record the interruption until storage is back."""
        if self._storage_problem is not None:
            return
        self._storage_problem = _describe_storage(exc)
        log.error("debate %s: storage unavailable (%s); interrupted until it can be recorded",
                  self.id, self._storage_problem)
        for key in list(self.live):
            self._abort_live(key, "storage unavailable")
        self.broadcaster.emit(LiveStatus(self.id, "storage_unavailable", self._storage_problem))
        self._recorder = self._task_factory(self._finish_record())

    async def _finish_record(self) -> None:
        """Retry (with backoff) until the interruption is in the log, then lift the in-memory one."""
        delay = self.storage_retry_base
        problem = self._storage_problem or "storage unavailable"
        try:
            while True:
                await asyncio.sleep(delay)
                try:
                    await self._record_interruption(problem)
                except StaleWrite as exc:  # another process drives it now; our view was reloaded
                    log.warning("%s", exc)
                except Exception as exc:
                    if not is_storage_error(exc):
                        log.exception("debate %s: recording the interruption failed", self.id)
                    else:
                        delay = min(delay * 2, STORAGE_RETRY_CAP)
                        continue
                break
        finally:
            if self._recorder is asyncio.current_task():
                self._recorder = None
        self._storage_problem = None
        log.warning("debate %s: storage is back; the debate is %s", self.id, self.state.status.value)
        self.broadcaster.emit(LiveStatus(self.id, "storage_restored"))
        if self._on_release is not None:
            self._on_release(self)

    async def _record_interruption(self, problem: str) -> None:
        async with self._command_lock:
            async with self._commit_lock:
                await self._reload()  # the log is the truth: a write that failed may yet have landed
            state = self.state
            if state.status in ACTIVE_STATES or state.status is State.IDLE:
                await self._transition(Event.PAUSE, interrupted=True, reason=f"storage was unavailable: {problem}",
                                       position=state.machine.context.position.model_copy())
