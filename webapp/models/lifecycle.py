"""The words of a debate's life cycle: its states, the events that move it, where in the format it
is (`Position`) and which turn a record is about (`TurnPlace`).

They are recorded in the log (a transition's event, from and to; an error's state and position), so
they sit beside the other stored models, below the engine: the log's payload models name them without
importing the engine. What moves where, and on which guard, is declared in `webapp.engine.machine`.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class State(StrEnum):
    """Where a debate is in its life cycle."""

    IDLE = "idle"
    INITIALIZING = "initializing"
    CLARIFYING = "clarifying"
    AWAITING_CLARIFICATION = "awaiting_clarification"
    AWAITING_TURN = "awaiting_turn"  # a human seat's turn: the debate waits for the person to write it
    PREPARATION = "preparation"
    DEBATING = "debating"
    JUDGING = "judging"
    PAUSED = "paused"
    AWAITING_ACK = "awaiting_acknowledgement"
    ERROR = "error"
    COMPLETED = "completed"
    STOPPED = "stopped"


class Event(StrEnum):
    """What can happen to a debate."""

    START = "START"
    INIT_COMPLETE = "INIT_COMPLETE"
    QUESTIONS_READY = "QUESTIONS_READY"
    CLARIFICATION_ANSWERED = "CLARIFICATION_ANSWERED"
    CLARIFICATION_COMPLETE = "CLARIFICATION_COMPLETE"
    TURN_COMPLETE = "TURN_COMPLETE"
    PHASE_COMPLETE = "PHASE_COMPLETE"
    ROUND_COMPLETE = "ROUND_COMPLETE"
    ALL_ROUNDS_COMPLETE = "ALL_ROUNDS_COMPLETE"
    VERDICT_READY = "VERDICT_READY"
    PAUSE = "PAUSE"
    RESUME = "RESUME"
    STOP = "STOP"
    ERROR = "ERROR"
    RETRY = "RETRY"
    COST_WARNING = "COST_WARNING"
    ACKNOWLEDGE_WARNING = "ACKNOWLEDGE_WARNING"
    TURN_DUE = "TURN_DUE"  # a human seat is to speak
    TURN_SENT = "TURN_SENT"  # the person sent their turn
    TURN_TIMEOUT = "TURN_TIMEOUT"  # the person's time ran out: the turn is skipped with a note


class TurnPlace(BaseModel):
    """Which turn: its key and where it sits (phase, round, speaker, what it does, its index). The turn
    the schedule plans (`TurnSlot`), the turn a human seat owes (`SeatTurn`) and the finished turn in the
    log (`Turn`) all start with these fields, in this order."""

    key: str
    phase: str
    round: int
    speaker: str
    act: str = "speak"
    index: int = 0


class Position(BaseModel):
    """Exactly where in the format the debate is: kept across pause, error and restart."""

    phase: str | None = None
    round: int = 0
    speaker: str | None = None
    turn: int = 0
