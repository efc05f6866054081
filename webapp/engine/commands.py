"""A person's commands to a debate: pause, resume (or start), stop, retry, acknowledge the spending
warning, answer clarification questions, send a human seat's turn.

`send(command, actor=…, **args)` checks the arguments (`engine/api.py`) and asks the machine first:
a command the debate cannot take now raises `TransitionNotAllowed` saying why, and changes nothing.
Commands that stop work cancel the runner first, so no tokens keep being billed.

A mixin of `DebateSession` (see runner.py).
"""

from __future__ import annotations

from typing import Any, assert_never

from webapp.engine.api import (
    COMMAND_EVENTS,
    AnswerArgs,
    Command,
    CommandResult,
    SendTurnArgs,
    StopArgs,
    parse_args,
)
from webapp.engine.commit import is_storage_error
from webapp.engine.events import ClarificationAnswerPayload
from webapp.engine.machine import ACTIVE_STATES, Event, State, TransitionNotAllowed
from webapp.engine.params import TransitionParams
from webapp.engine.session_parts import SessionParts
from webapp.engine.state import SYSTEM_ACTOR
from webapp.wording import counted


class Commands(SessionParts):
    """What a person can ask of a debate (a mixin of `DebateSession`)."""

    def _refusal(self, command: Command) -> str | None:
        """Why a person's `command` would be refused now, or None when it would be accepted."""
        if self.deleted:
            return "the debate was deleted"
        if self._storage_problem is not None:
            return f"storage is unavailable ({self._storage_problem}); try again once it is back"
        machine = self.state.machine
        if command is Command.RESUME and self.state.status is State.IDLE:
            return "it is starting" if self.running else None
        params = TransitionParams(manual=True) if command is Command.RETRY else TransitionParams()
        if machine.can(COMMAND_EVENTS[command], params):
            return None
        try:
            machine.require(COMMAND_EVENTS[command], params)
        except TransitionNotAllowed as exc:
            return exc.reason or str(exc)
        return None  # pragma: no cover - `can` and `require` agree

    def _check(self, command: Command) -> None:
        """Raise `TransitionNotAllowed` (saying why) unless a person may send `command` now."""
        reason = self._refusal(command)
        if reason is not None:
            raise TransitionNotAllowed(self.state.status, COMMAND_EVENTS[command], reason)

    async def send(self, command: Command | str, *, actor: str, **args: Any) -> CommandResult:
        """Carry out a person's command, recorded with `actor` (a username, `cli`, `share-link`).

        Raises `TransitionNotAllowed` (saying why) when the debate cannot take it now, and
        `pydantic.ValidationError` (a `ValueError`) for arguments the command does not take."""
        command = Command(command)
        parsed = parse_args(command, args)
        match command:
            case Command.PAUSE:
                return await self._pause(actor)
            case Command.RESUME:
                return await self._resume(actor)
            case Command.STOP:
                assert isinstance(parsed, StopArgs)
                return await self._stop(parsed.verdict, parsed.reason, actor)
            case Command.RETRY:
                return await self._retry(actor)
            case Command.ACKNOWLEDGE_WARNING:
                return await self._acknowledge(actor)
            case Command.ANSWER_CLARIFICATION:
                assert isinstance(parsed, AnswerArgs)
                return await self._answer(parsed.answers, actor)
            case Command.SEND_TURN:
                assert isinstance(parsed, SendTurnArgs)
                return await self._send_turn(parsed.text, parsed.assisted_by, actor)
        assert_never(command)

    # The methods below are the older spelling of `send` (kept for callers not yet migrated). Each
    # takes the `actor` who asked: it is recorded with the transition, so the log says who paused,
    # stopped or answered. Without an actor the step is the system's (an automatic retry, say).

    async def pause(self, interrupted: bool = False, actor: str | None = None, reason: str | None = None) -> None:
        await self._pause(actor, interrupted=interrupted, reason=reason)

    async def resume(self, actor: str | None = None) -> None:
        await self._resume(actor)

    async def stop(self, verdict: bool = True, reason: str = "stopped by user", actor: str | None = None) -> None:
        await self._stop(verdict, reason, actor)

    async def retry(self, actor: str | None = None) -> None:
        await self._retry(actor)

    async def acknowledge_warning(self, actor: str | None = None) -> None:
        await self._acknowledge(actor)

    async def answer_clarification(self, answers: dict[str, list[str]], actor: str | None = None) -> None:
        """Record the user's answers (per participant, in question order; '' = unanswered)."""
        await self._answer(answers, actor)

    async def _pause(self, actor: str | None, interrupted: bool = False, reason: str | None = None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.PAUSE)
            await self._halt()
            where = self.state.machine.context.position.model_copy()
            params = (TransitionParams(interrupted=interrupted, position=where, reason=reason) if reason
                      else TransitionParams(interrupted=interrupted, position=where))
            await self._halted_transition(Event.PAUSE, actor, params)
        return CommandResult(Command.PAUSE, Event.PAUSE,
                             "Marked interrupted." if interrupted else f"Paused by {actor or SYSTEM_ACTOR}.")

    async def _resume(self, actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.RESUME)
            if self.state.status is State.IDLE:  # created but never started: start it now
                person = actor if actor and actor != SYSTEM_ACTOR else None
                await self._transition(Event.START, actor=person or self.state.created_by or None)
                self.ensure_running()
                return CommandResult(Command.RESUME, Event.START, f"Started by {actor or SYSTEM_ACTOR}.")
            await self._transition(Event.RESUME, actor=actor)
            self.ensure_running()
        return CommandResult(Command.RESUME, Event.RESUME, f"Resumed by {actor or SYSTEM_ACTOR}.")

    async def _stop(self, verdict: bool, reason: str, actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.STOP)
            # Stopping with a verdict while the judge is already at work: let it finish rather than
            # cancel and pay for the same judging twice.
            if not (verdict and self.state.status is State.JUDGING):
                await self._halt()
            await self._halted_transition(Event.STOP, actor, TransitionParams(
                verdict=verdict, reason=reason, position=self.state.machine.context.position.model_copy()))
            self.ensure_running()
            judged = self.state.status is State.JUDGING
        who = actor or SYSTEM_ACTOR
        return CommandResult(Command.STOP, Event.STOP, f"Stopped by {who}; the judge rules on what was said."
                             if judged else f"Stopped by {who} without a verdict.")

    async def _retry(self, actor: str | None) -> CommandResult:
        """A person's retry (any actor but the system) runs the failed step again whatever automatic
        retries were used, and grants a fresh automatic budget; the system's retry needs one left."""
        manual = bool(actor) and actor != SYSTEM_ACTOR
        async with self._command_lock:
            state = self.state
            if manual:
                self._check(Command.RETRY)
            else:
                state.machine.require(Event.RETRY)
            exhausted = not state.machine.can(Event.RETRY)  # the automatic budget was used up
            error = state.error
            await self._transition(Event.RETRY, actor, TransitionParams(manual=True) if manual else TransitionParams())
            self.ensure_running()
        what = f" ({error.provider or 'error'}: {error.message})" if error is not None and error.message else ""
        if not manual:
            message = f"Retrying the failed step automatically{what}."
        elif exhausted:
            used = counted(state.max_retries, "automatic retry")
            message = (f"Retried by {actor}: the failed step{what} runs again. Its {used} had been used up; it has "
                       f"a fresh budget of {state.max_retries}.")
        else:
            message = f"Retried by {actor}: the failed step{what} runs again."
        return CommandResult(Command.RETRY, Event.RETRY, message)

    async def _acknowledge(self, actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.ACKNOWLEDGE_WARNING)
            await self._transition(Event.ACKNOWLEDGE_WARNING, actor=actor)
            self.ensure_running()
        return CommandResult(Command.ACKNOWLEDGE_WARNING, Event.ACKNOWLEDGE_WARNING,
                             f"Spending warning acknowledged by {actor or SYSTEM_ACTOR}; the debate continues.")

    async def _answer(self, answers: dict[str, list[str]], actor: str | None) -> CommandResult:
        async with self._command_lock:
            self._check(Command.ANSWER_CLARIFICATION)
            iteration = len(self.state.clarifications)
            clean = {pid: [str(a).strip()[:2000] for a in items] for pid, items in answers.items()}
            answer = (ClarificationAnswerPayload(iteration=iteration, answers=clean, actor=actor) if actor
                      else ClarificationAnswerPayload(iteration=iteration, answers=clean))
            await self._commit(answer, idem_key=f"answer/{iteration}")
            await self._transition(Event.CLARIFICATION_ANSWERED, actor=actor)
            self.ensure_running()
        return CommandResult(Command.ANSWER_CLARIFICATION, Event.CLARIFICATION_ANSWERED,
                             "Answers recorded; the debate continues.")

    async def _halted_transition(self, event: Event, actor: str | None, params: TransitionParams) -> None:
        """A transition sent after the runner was halted: if storage fails, nobody drives the debate
        any more, so it is interrupted until the record can be finished."""
        try:
            await self._transition(event, actor, params)
        except Exception as exc:
            if is_storage_error(exc) and self.state.status in ACTIVE_STATES:
                self._storage_failed(exc)
            raise
