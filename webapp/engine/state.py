"""A debate's current state as a fold over its event log.

`DebateState.from_events(events)` rebuilds everything — machine state and context, finished turns,
costs, warnings, verdict — so a restarted process resumes exactly where the log says it stopped.

Every event kind has exactly one handler (`HANDLERS`, checked at import and by a test), called with
the event's typed payload (`webapp.engine.events`). The runner folds a new event into a `fork()` of
the state and swaps it in (`adopt`) only once the event is committed, so a failed write leaves the
state it had; a fork copies the machine and, on first write, only the containers the event changes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from webapp.engine.budget import Ledger
from webapp.engine.events import (
    ActionPayload,
    CallCostNote,
    ClarificationAnswerPayload,
    ClarificationDoneNote,
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
from webapp.engine.formats import Format, get_format
from webapp.engine.machine import DebateMachine, Event, MachineContext, State
from webapp.engine.params import ErrorInfo, Position, SeatTurn
from webapp.engine.records import ActionRecord, TransitionRecord
from webapp.engine.schedule import total_rounds
from webapp.models import DebateConfig, DebateEvent, EventKind, Turn, Verdict

SYSTEM_ACTOR = "system"  # transitions the runner makes by itself

Note = RetryNote | OnTopicNote | ClarificationDoneNote | CallCostNote

# Containers a handler may change: a fork shares them until it first writes to one (copy on write).
_CONTAINERS = ("turns", "turn_keys", "transitions", "actions", "warnings", "errors", "notes", "round_decisions",
               "round_scores", "clarifications", "answers", "summaries", "phase_marks", "round_marks", "ledger")


class DebateState:
    """Everything known about one debate, derived from its events.

    Read it, never change it: it is replaced (not mutated) as events are committed. The read-only
    properties below (`status`, `position`, `interrupted`, `error`, …) are the public view of the
    machine; `machine` itself is the engine's."""

    def __init__(self, debate_id: str, config: DebateConfig, created_at: datetime) -> None:
        self.id = debate_id
        self.config = config
        self.format: Format = get_format(config.format)
        self.created_at = created_at
        self.created_by = ""
        self.machine = DebateMachine(
            MachineContext(
                max_retries=config.max_retries,
                judge_enabled=config.judge.enabled,
                clarification=self.format.clarification and config.clarification,
                preparation=any(s.act == "prepare" for p in self.format.phases for s in p.speakers),
                human_seat=any(p.is_human for p in config.participants),
            )
        )
        self.turns: list[Turn] = []
        self.turn_keys: set[str] = set()
        self.transitions: list[TransitionRecord] = []
        self.actions: list[ActionRecord] = []  # what people did: commands and other actions, by whom
        # The payloads of the log's events themselves (each knows when it was logged: `logged_at`).
        self.warnings: list[CostWarning | CostLimit] = []
        self.errors: list[ErrorPayload] = []
        # Retry notes, on-topic checks, "no more questions", call costs: in the log, so a reload shows them too.
        self.notes: list[Note] = []
        self.verdict: Verdict | None = None
        self.ledger = Ledger()
        self.round_decisions: dict[int, RoundDecisionPayload] = {}
        self.round_scores: list[RoundScoresPayload] = []
        self.clarifications: list[ClarificationQuestionsPayload] = []
        self.answers: list[ClarificationAnswerPayload] = []
        self.summaries: dict[str, SummaryPayload] = {}
        self.phase_marks: set[tuple[str, int]] = set()
        self.round_marks: set[int] = set()
        self.cost_warned = False
        # A human seat's turn being waited for (the TURN_DUE params) and since when (the time limit
        # counts from the last time the debate started waiting: a pause gives the person the full time).
        self.seat: SeatTurn | None = None
        self.awaiting_since: datetime | None = None
        self.last_seq = 0
        self.total_rounds = total_rounds(self.format, config)
        self._shared: set[str] = set()

    # --- derived views ---------------------------------------------------------------------

    @property
    def status(self) -> State:
        return self.machine.state

    @property
    def position(self) -> Position:
        """Where in the format the debate is (the turn being taken, or the one cut off)."""
        return self.machine.context.position.model_copy()

    @property
    def interrupted(self) -> bool:
        """Paused by a restart, a crash or unavailable storage, rather than by a person."""
        return self.status is State.PAUSED and self.machine.context.interrupted

    @property
    def interruption(self) -> str | None:
        """Why it was interrupted, when the log says (None for a person's pause)."""
        return self.machine.context.interruption if self.interrupted else None

    @property
    def error(self) -> ErrorInfo | None:
        """The provider error the debate stopped on (while in `error`), as recorded (frozen)."""
        return self.machine.context.error

    @property
    def retries_used(self) -> int:
        """Automatic retries used since a person last retried."""
        return self.machine.context.retries_used

    @property
    def max_retries(self) -> int:
        return self.machine.context.max_retries

    @property
    def return_state(self) -> State | None:
        """The state a paused, warned or failed debate goes back to when it continues."""
        return self.machine.context.return_state

    @property
    def skipped_states(self) -> frozenset[State]:
        """The states this debate's configuration never enters: clarifying without clarification, preparation
        without a preparing phase, a person's turn without a human seat, judging without a judge."""
        ctx = self.machine.context
        skipped: set[State] = set()
        if not ctx.clarification:
            skipped |= {State.CLARIFYING, State.AWAITING_CLARIFICATION}
        if not ctx.preparation:
            skipped.add(State.PREPARATION)
        if not ctx.human_seat:
            skipped.add(State.AWAITING_TURN)
        if not ctx.judge_enabled:
            skipped.add(State.JUDGING)
        return frozenset(skipped)

    @property
    def seat_deadline(self) -> datetime | None:
        """When the human seat's turn being waited for times out (None: not waiting, or no limit)."""
        if self.status is not State.AWAITING_TURN or self.seat is None or self.awaiting_since is None:
            return None
        limit = self.seat.time_limit_s
        return self.awaiting_since + timedelta(seconds=limit) if limit else None

    @property
    def stopping(self) -> bool:
        """A stop was asked for (the verdict may still be coming)."""
        return self.machine.context.stopping

    @property
    def phase_durations(self) -> dict[str, float]:
        return dict(self.machine.context.phase_durations)

    def elapsed(self, now: datetime | None = None) -> float:
        """Active seconds so far (paused and waiting time excluded)."""
        return self.machine.elapsed(now)

    @property
    def ended_because(self) -> str | None:
        if self.verdict and self.verdict.ended_because:
            return self.verdict.ended_because
        if self.machine.context.stop_reason:
            return self.machine.context.stop_reason
        for decision in self.round_decisions.values():
            if decision.stop:
                return decision.reason
        return None

    def summary(self) -> dict[str, Any]:
        """The listing projection stored beside each event."""
        position = self.machine.context.position
        return {
            "status": self.status.value,
            "phase": position.phase,
            "round": position.round,
            "total_rounds": self.total_rounds,
            "cost_usd": round(self.ledger.total_usd, 6),
            "turn_count": len(self.turns),
            "unpriced": int(bool(self.ledger.unpriced_models)),
            "interrupted": int(self.interrupted),
        }

    # --- copies ----------------------------------------------------------------------------

    def fork(self) -> DebateState:
        """A state to fold new events into without touching this one: the machine is copied now,
        each container on the fork's first write to it."""
        twin = copy.copy(self)
        twin.machine = self.machine.copy()
        twin._shared = set(_CONTAINERS)
        return twin

    def adopt(self, fork: DebateState) -> None:
        """Take over the contents of a fork of this state once its events are committed: the swap.
        This object stays the debate's state (whoever holds it sees the committed events), and only
        a reload from the log replaces it."""
        self.__dict__.update(fork.__dict__)
        self._shared = set()

    def _own(self, name: str) -> Any:
        """The container `name`, copied first if it is still shared with the state this was forked from."""
        value = getattr(self, name)
        if name in self._shared:
            value = copy.deepcopy(value) if name == "ledger" else copy.copy(value)
            setattr(self, name, value)
            self._shared.discard(name)
        return value

    # --- the fold --------------------------------------------------------------------------

    @classmethod
    def from_events(cls, events: list[DebateEvent]) -> DebateState:
        if not events or events[0].kind is not EventKind.CREATED:
            raise ValueError("a debate's log must start with its CREATED event")
        first = events[0]
        created = first.payload
        assert isinstance(created, CreatedPayload)
        state = cls(first.debate_id, created.config, first.at)
        for event in events:
            state.apply(event)
        return state

    def apply(self, event: DebateEvent, sent: bool = False) -> None:
        """Fold one event in. `sent=True`: a live transition already applied to the machine."""
        payload = event.payload  # validated before anything changes
        if event.kind is EventKind.TRANSITION:
            assert isinstance(payload, TransitionPayload)
            self._on_transition(event, payload, sent)
        else:
            HANDLERS[event.kind](self, event, payload)
        self.last_seq = event.seq

    def _on_created(self, event: DebateEvent, payload: CreatedPayload) -> None:
        self.created_by = payload.actor or ""

    def _on_transition(self, event: DebateEvent, payload: TransitionPayload, sent: bool = False) -> None:
        params = payload.params
        if not sent:
            self.machine.send(payload.event, at=event.at, params=params)
        if payload.event is Event.TURN_DUE and payload.params.seat is not None:
            self.seat = payload.params.seat
        if self.status is State.AWAITING_TURN:
            if payload.from_ is not State.AWAITING_TURN:
                self.awaiting_since = event.at
        elif self.status is not State.PAUSED:
            self.seat, self.awaiting_since = None, None
        if payload.event is Event.PHASE_COMPLETE and payload.params.phase:
            self._own("phase_marks").add((payload.params.phase, int(payload.params.round or 1)))
        if payload.event is Event.ROUND_COMPLETE and payload.params.round:
            self._own("round_marks").add(int(payload.params.round))
        actor = payload.actor or SYSTEM_ACTOR
        self._own("transitions").append(
            TransitionRecord(payload.event, payload.from_, payload.to, event.at, actor, params))
        if actor != SYSTEM_ACTOR:
            self._own("actions").append(ActionRecord(payload.event.value.lower(), actor, event.at, params.to_data()))

    def _on_action(self, event: DebateEvent, payload: ActionPayload) -> None:
        self._own("actions").append(ActionRecord(payload.action, payload.actor, event.at, dict(payload.detail)))

    def _on_turn(self, event: DebateEvent, payload: TurnPayload) -> None:
        turn = payload.turn
        if turn.key in self.turn_keys:
            return
        self._own("turns").append(turn)
        self._own("turn_keys").add(turn.key)
        label = f"{turn.provider}:{turn.model}"
        self._own("ledger").add(label, turn.speaker, turn.round, turn.usage, turn.cost_usd, payload.cost_source)

    def _on_warning(self, event: DebateEvent, payload: CostWarning | CostLimit) -> None:
        self._own("warnings").append(payload)
        if isinstance(payload, CostWarning):
            self.cost_warned = True

    def _on_error(self, event: DebateEvent, payload: ErrorPayload) -> None:
        self._own("errors").append(payload)

    def _on_verdict(self, event: DebateEvent, payload: VerdictPayload) -> None:
        self.verdict = payload.verdict
        self._charge(event, payload)

    def _on_round_decision(self, event: DebateEvent, payload: RoundDecisionPayload) -> None:
        self._own("round_decisions")[payload.round] = payload
        self._charge(event, payload)

    def _on_round_scores(self, event: DebateEvent, payload: RoundScoresPayload) -> None:
        self._own("round_scores").append(payload)
        self._charge(event, payload)

    def _on_clarification_questions(self, event: DebateEvent, payload: ClarificationQuestionsPayload) -> None:
        self._own("clarifications").append(payload)
        self._charge(event, payload)

    def _on_clarification_answer(self, event: DebateEvent, payload: ClarificationAnswerPayload) -> None:
        self._own("answers").append(payload)

    def _on_summary(self, event: DebateEvent, payload: SummaryPayload) -> None:
        self._own("summaries")[payload.key] = payload
        self._charge(event, payload)

    def _on_note(self, event: DebateEvent, payload: Note) -> None:
        self._own("notes").append(payload)
        self._charge(event, payload)

    def _charge(self, event: DebateEvent, payload: Payload) -> None:
        """Auxiliary model calls (judge checks, summaries, questions) cost money too."""
        calls = getattr(payload, "calls", None) or []
        if not calls:
            return
        ledger = self._own("ledger")
        round_no = int(getattr(payload, "round", 0) or 0)
        for call in calls:
            ledger.add(call.model, call.participant, round_no, call.usage, call.cost_usd, call.cost_source)


Handler = Callable[[DebateState, DebateEvent, Any], None]

# One handler per event kind; a kind without one is a programming error caught at import.
HANDLERS: dict[EventKind, Handler] = {
    EventKind.CREATED: DebateState._on_created,
    EventKind.TRANSITION: lambda state, event, payload: state._on_transition(event, payload),
    EventKind.TURN: DebateState._on_turn,
    EventKind.WARNING: DebateState._on_warning,
    EventKind.ERROR: DebateState._on_error,
    EventKind.VERDICT: DebateState._on_verdict,
    EventKind.ROUND_DECISION: DebateState._on_round_decision,
    EventKind.ROUND_SCORES: DebateState._on_round_scores,
    EventKind.CLARIFICATION_QUESTIONS: DebateState._on_clarification_questions,
    EventKind.CLARIFICATION_ANSWER: DebateState._on_clarification_answer,
    EventKind.SUMMARY: DebateState._on_summary,
    EventKind.NOTE: DebateState._on_note,
    EventKind.ACTION: DebateState._on_action,
}
_unhandled = set(EventKind) - set(HANDLERS)
if _unhandled:  # pragma: no cover - a programming error caught at import
    raise RuntimeError(f"event kinds without a handler in DebateState: {sorted(_unhandled)}")
