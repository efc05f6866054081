"""The engine's public surface for the UI and the CLI: a typed command enum with typed arguments,
what a command did, and a read-only view of one debate session.

    result = await session.send(Command.STOP, actor="ada", verdict=False)
    result.message              # "Stopped by ada without a verdict."
    session.view()              # a frozen SessionView: status, position, interrupted, allowed, error, …
    session.allowed_commands    # the commands a person may send now

Nothing here reaches into the machine: callers never need `session.state.machine`.

The log's typed payloads are part of the surface too (re-exported from `webapp.engine.events`): a
reader of an event (`event.payload`) or of the fold (`state.notes`, `state.warnings`, …) tells them
apart with `isinstance` and reads their fields. So are the fold's own records (`state.transitions`:
`TransitionRecord`, `state.actions`: `ActionRecord`) and the error a debate stopped on (`ErrorInfo`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from webapp.engine.events import (
    CallCostNote,
    CallRecord,
    ClarificationAnswerPayload,
    ClarificationQuestionsPayload,
    CostLimit,
    CostWarning,
    CreatedPayload,
    ErrorPayload,
    OnTopicNote,
    Payload,
    RetryNote,
    RoundDecisionPayload,
    RoundScoresPayload,
    SummaryPayload,
    TransitionPayload,
    TurnPayload,
    VerdictPayload,
)
from webapp.engine.machine import TERMINAL_STATES, Event, Position, State
from webapp.engine.params import ErrorInfo, SeatTurn
from webapp.engine.records import ActionRecord, TransitionRecord

__all__ = [
    "COMMAND_EVENTS",
    "TERMINAL_STATES",
    "ActionRecord",
    "AnswerArgs",
    "CallCostNote",
    "CallRecord",
    "ClarificationAnswerPayload",
    "ClarificationQuestionsPayload",
    "Command",
    "CommandArgs",
    "CommandResult",
    "CostLimit",
    "CostWarning",
    "CreatedPayload",
    "ErrorInfo",
    "ErrorPayload",
    "OnTopicNote",
    "Payload",
    "RetryNote",
    "RoundDecisionPayload",
    "RoundScoresPayload",
    "SeatTurn",
    "SendTurnArgs",
    "SessionView",
    "StopArgs",
    "SummaryPayload",
    "TransitionPayload",
    "TransitionRecord",
    "TurnPayload",
    "VerdictPayload",
    "parse_args",
]


class Command(StrEnum):
    """What a person (or the CLI) can ask of a debate. Values match the access layer's command names."""

    PAUSE = "pause"
    RESUME = "resume"  # also starts a debate that was created but never started
    STOP = "stop"
    RETRY = "retry"
    ACKNOWLEDGE_WARNING = "acknowledge_warning"
    ANSWER_CLARIFICATION = "answer_clarification"
    SEND_TURN = "send_turn"  # a human seat's turn, written by the person holding the seat


class CommandArgs(BaseModel):
    """Arguments of a command; unknown ones are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class StopArgs(CommandArgs):
    verdict: bool = True  # let the judge rule on what was said
    reason: str = Field(default="stopped by user", max_length=500)


class AnswerArgs(CommandArgs):
    answers: dict[str, list[str]]  # participant id -> answers in question order ('' = unanswered)


class SendTurnArgs(CommandArgs):
    text: str = Field(min_length=1, max_length=40000)
    assisted_by: str | None = Field(default=None, max_length=200)  # the model that drafted it, if any


COMMAND_ARGS: dict[Command, type[CommandArgs]] = {
    Command.PAUSE: CommandArgs,
    Command.RESUME: CommandArgs,
    Command.STOP: StopArgs,
    Command.RETRY: CommandArgs,
    Command.ACKNOWLEDGE_WARNING: CommandArgs,
    Command.ANSWER_CLARIFICATION: AnswerArgs,
    Command.SEND_TURN: SendTurnArgs,
}

# The machine event each command sends (RESUME sends START to a debate that never started).
COMMAND_EVENTS: dict[Command, Event] = {
    Command.PAUSE: Event.PAUSE,
    Command.RESUME: Event.RESUME,
    Command.STOP: Event.STOP,
    Command.RETRY: Event.RETRY,
    Command.ACKNOWLEDGE_WARNING: Event.ACKNOWLEDGE_WARNING,
    Command.ANSWER_CLARIFICATION: Event.CLARIFICATION_ANSWERED,
    Command.SEND_TURN: Event.TURN_SENT,
}


def parse_args(command: Command, args: dict[str, Any]) -> CommandArgs:
    """Validate a command's arguments (raises `pydantic.ValidationError`, a `ValueError`)."""
    return COMMAND_ARGS[command].model_validate(args)


@dataclass(frozen=True)
class CommandResult:
    """What a command did: the machine event it sent (None when it only restarted work) and a
    sentence for the person who asked."""

    command: Command | None
    event: Event | None
    message: str


@dataclass(frozen=True)
class SeatDraft:
    """What "Draft with a model" gives the person holding a human seat: the draft (to edit and send), and
    a sentence about money when there is one to say (the answer was capped to fit the hard limit, or
    spending has reached warn-at: the debate will wait for an OK before its next model call)."""

    text: str
    model: str
    warning: str | None = None


@dataclass(frozen=True)
class SessionView:
    """A read-only snapshot of one debate session, for pages and the terminal.

    `interrupted` is true when the log says the debate was paused by a restart or crash, and also while
    this process cannot write to storage (`storage_problem` says why; the interruption is recorded once
    storage returns). `allowed` holds the commands a person may send now (roles aside)."""

    id: str
    status: State
    position: Position
    running: bool
    interrupted: bool
    interruption: str | None
    storage_problem: str | None
    error: ErrorInfo | None  # the provider failure it stopped on (frozen), while in `error`
    retries_used: int
    max_retries: int
    allowed: frozenset[Command]
    ended_because: str | None
    deleted: bool
    last_seq: int
