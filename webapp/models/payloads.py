"""The typed payload of every kind of log event: one pydantic model per `EventKind` (and per sub-kind
of notes and warnings), joined in one discriminated union; and `DebateEvent`, the record as stored.

They sit with the other stored models, below the engine, so the stored record validates its payload
without importing the engine (and the engine, the store and the readers above all name the same
models); `webapp.engine.events` names them for the engine and its callers.

A stored event is `(kind, data)`: `data` is the JSON object in the log. `parse_payload(kind, data)`
validates it into the model for its kind; `Payload.to_data()` gives back the JSON object to store.
Payloads keep fields they do not declare (`extra="allow"`), so a log written by an older or newer
version loads, and round trips leave `data` exactly as stored: `to_data()` returns only the fields
that were given (or the sub-kind tag), never defaults that were not there.

The kind itself is not a field of the stored data (an error's `kind` is "retryable"/"fatal"): it is
injected as `event_kind` for validation only and excluded from every dump.

The engine builds events as these models (`DebateSession._commit(payload)`), folds them as these models
(`DebateState` keeps the payloads themselves) and everyone reads them as these models
(`DebateEvent.payload`); `to_data()` and `DebateEvent.data` are the JSON edge (the log's storage, exports,
the wire). A model given to a payload in code (a `Turn`, a `Verdict`, a `Usage`) is stored whole, every
field, as the dicts it replaced were; `TransitionParams` (`webapp.models.params`, with the records it
carries) and nested payloads keep only what was given.

Adding an `EventKind` without a payload model here fails at import (`PAYLOADS` must cover every
kind), and `DebateState` refuses to import without a handler for it: nothing is silently ignored.
"""

from __future__ import annotations

import copy
from datetime import datetime
from functools import cached_property
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, model_validator

from webapp.models.debate import DebateConfig, EventKind, Turn, Usage, Verdict
from webapp.models.lifecycle import Event, Position, State
from webapp.models.params import ErrorInfo, SeatTurn, Sparse, TransitionParams

__all__ = ["PAYLOADS", "ActionPayload", "CallCostNote", "CallRecord", "ClarificationAnswerPayload",
           "ClarificationDoneNote", "ClarificationQuestionsPayload", "CostLimit", "CostWarning", "CreatedPayload",
           "DebateEvent", "ErrorInfo", "ErrorPayload", "EventPayload", "NotePayload", "OnTopicNote", "Payload",
           "RetryNote", "RoundDecisionPayload", "RoundScoresPayload", "SeatTurn", "Sparse", "SummaryPayload",
           "TransitionParams", "TransitionPayload", "TurnPayload", "VerdictPayload", "WarningPayload", "logged",
           "parse_payload", "payload_kind"]

# Sub-kind tags that are always written, even when the model filled them in by default.
_TAGS = ("type",)


def _whole(value: Any) -> Any:
    """A value given in code, as the plain data it is validated (and stored) from: a model whole, every
    field, except a `Sparse` one (only the fields it was given); lists and dicts item by item."""
    if isinstance(value, BaseModel):
        given = value.model_fields_set if isinstance(value, Sparse) else None
        extra = value.model_extra or {}
        return {name: _whole(item) for name, item in value if given is None or name in given or name in extra}
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, dict):
        return {key: _whole(item) for key, item in value.items()}
    return value


class Payload(Sparse):
    """Base of every event payload."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    # When the event was committed; set from its `DebateEvent` (the log's own field, never stored twice).
    _logged_at: datetime | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _models_whole(cls, data: Any) -> Any:
        # A `Turn` or `Usage` built in code has only the fields it was given "set": stored sparse, the log
        # would lose the defaults its readers (SQL digests, webhooks, older versions) expect.
        if isinstance(data, dict) and any(isinstance(v, BaseModel | list) for v in data.values()):
            return {key: _whole(value) for key, value in data.items()}
        return data

    @property
    def logged_at(self) -> datetime | None:
        """When the event carrying this payload was committed (None for one not yet in a log)."""
        return self._logged_at

    def model_post_init(self, context: Any, /) -> None:
        # A tag filled in by its default still has to be stored, or the event could not be read back.
        for tag in _TAGS:
            if tag in type(self).model_fields:
                self.model_fields_set.add(tag)

    def to_data(self) -> dict[str, Any]:
        """The JSON object stored in the log (what was given, validated; no invented defaults)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class CallRecord(BaseModel):
    """The cost record of one auxiliary model call (judge, summary, question, check). Some carry more
    (kept as extra fields): `output_mode` and `repair` for a judge's answer, `cut_off` for a billed
    attempt that ended without its answer."""

    model_config = ConfigDict(extra="allow")

    model: str
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    cost_source: str = ""
    purpose: str = ""
    participant: str = "judge"


# --- one model per kind ------------------------------------------------------------------------


class CreatedPayload(Payload):
    event_kind: Literal[EventKind.CREATED] = Field(default=EventKind.CREATED, exclude=True)
    config: DebateConfig
    actor: str | None = None  # who created the debate (absent in logs older than team access)
    _stored_config: dict[str, Any] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_stored_config(cls, data: Any, handler: Any) -> Any:
        # The config's validators normalise it (ids, colours, defaults): keep what was stored, so
        # `to_data()` gives the event back exactly.
        model = handler(data)
        if isinstance(data, dict) and isinstance(data.get("config"), dict):
            model._stored_config = copy.deepcopy(data["config"])
        return model

    def to_data(self) -> dict[str, Any]:
        data = super().to_data()
        if self._stored_config is not None:
            data["config"] = copy.deepcopy(self._stored_config)
        return data


class TransitionPayload(Payload):
    event_kind: Literal[EventKind.TRANSITION] = Field(default=EventKind.TRANSITION, exclude=True)
    event: Event
    from_: State = Field(alias="from")
    to: State
    params: TransitionParams = Field(default_factory=TransitionParams)
    actor: str | None = None  # a person (or `cli`, `share-link`); absent: the system


class TurnPayload(Payload):
    event_kind: Literal[EventKind.TURN] = Field(default=EventKind.TURN, exclude=True)
    turn: Turn
    cost_source: str = ""


class CostWarning(Payload):
    """Spending reached warn-at (once per debate)."""

    event_kind: Literal[EventKind.WARNING] = Field(default=EventKind.WARNING, exclude=True)
    type: Literal["cost_warning"] = "cost_warning"
    message: str
    spent_usd: float = 0.0
    warn_at: float | None = None


class CostLimit(Payload):
    """A call was not made because of the hard limit."""

    event_kind: Literal[EventKind.WARNING] = Field(default=EventKind.WARNING, exclude=True)
    type: Literal["cost_limit"] = "cost_limit"
    message: str
    spent_usd: float = 0.0
    estimate_usd: float | None = None
    limit_usd: float | None = None
    remaining_usd: float | None = None
    judge_runs: bool = False


WarningPayload = Annotated[CostWarning | CostLimit, Field(discriminator="type")]


class ErrorPayload(ErrorInfo, Payload):
    event_kind: Literal[EventKind.ERROR] = Field(default=EventKind.ERROR, exclude=True)
    state: State | None = None
    position: Position | None = None


class VerdictPayload(Payload):
    event_kind: Literal[EventKind.VERDICT] = Field(default=EventKind.VERDICT, exclude=True)
    verdict: Verdict
    calls: list[CallRecord] = Field(default_factory=list)


class RoundDecisionPayload(Payload):
    event_kind: Literal[EventKind.ROUND_DECISION] = Field(default=EventKind.ROUND_DECISION, exclude=True)
    round: int
    stop: bool = False
    reason: str = ""
    cap: bool | None = None  # stopped at the planned rounds or the hard cap, nobody asked
    agreement: float | None = None  # convergence: the judge's agreement rating, 0-100
    irreconcilable: bool | None = None
    score: float | None = None  # quality: the judge's score, 0-100
    threshold: int | None = None
    calls: list[CallRecord] = Field(default_factory=list)


class RoundScoresPayload(Payload):
    event_kind: Literal[EventKind.ROUND_SCORES] = Field(default=EventKind.ROUND_SCORES, exclude=True)
    round: int
    scores: dict[str, float] = Field(default_factory=dict)
    winner: str | None = None
    available: bool = True
    error: str | None = None
    calls: list[CallRecord] = Field(default_factory=list)


class ClarificationQuestionsPayload(Payload):
    event_kind: Literal[EventKind.CLARIFICATION_QUESTIONS] = Field(default=EventKind.CLARIFICATION_QUESTIONS,
                                                                    exclude=True)
    iteration: int
    questions: dict[str, list[str]] = Field(default_factory=dict)
    calls: list[CallRecord] = Field(default_factory=list)


class ClarificationAnswerPayload(Payload):
    event_kind: Literal[EventKind.CLARIFICATION_ANSWER] = Field(default=EventKind.CLARIFICATION_ANSWER, exclude=True)
    iteration: int
    answers: dict[str, list[str]] = Field(default_factory=dict)
    actor: str | None = None


class SummaryPayload(Payload):
    event_kind: Literal[EventKind.SUMMARY] = Field(default=EventKind.SUMMARY, exclude=True)
    key: str
    participant: str = ""
    covered: int = 0
    turn_keys: list[str] = Field(default_factory=list)
    extends: str | None = None
    text: str = ""
    calls: list[CallRecord] = Field(default_factory=list)


class RetryNote(Payload):
    """A call failed and is retried automatically (`turn`: a turn key, or the purpose of an
    auxiliary call such as "verdict")."""

    event_kind: Literal[EventKind.NOTE] = Field(default=EventKind.NOTE, exclude=True)
    type: Literal["retry"] = "retry"
    turn: str
    attempt: int = 1
    error: ErrorInfo = Field(default_factory=ErrorInfo)
    wait_s: float = 0.0


class OnTopicNote(Payload):
    """The judge's on-topic check of a turn (strict mode): its flag and its cost."""

    event_kind: Literal[EventKind.NOTE] = Field(default=EventKind.NOTE, exclude=True)
    type: Literal["on_topic"] = "on_topic"
    turn: str
    round: int = 0
    flag: str | None = None
    calls: list[CallRecord] = Field(default_factory=list)


class ClarificationDoneNote(Payload):
    """The participants had no (more) questions."""

    event_kind: Literal[EventKind.NOTE] = Field(default=EventKind.NOTE, exclude=True)
    type: Literal["clarification_done"] = "clarification_done"
    iteration: int
    calls: list[CallRecord] = Field(default_factory=list)


class CallCostNote(Payload):
    """The cost of a call that is not part of another event: an attempt cut off, timed out or
    cancelled (billed all the same), or an auxiliary call recorded as it completed."""

    event_kind: Literal[EventKind.NOTE] = Field(default=EventKind.NOTE, exclude=True)
    type: Literal["call_cost"] = "call_cost"
    turn: str = ""
    purpose: str = ""
    reason: str = ""
    calls: list[CallRecord] = Field(default_factory=list)


NotePayload = Annotated[RetryNote | OnTopicNote | ClarificationDoneNote | CallCostNote, Field(discriminator="type")]


class ActionPayload(Payload):
    """Something a person did that is not a transition (a share link created or revoked)."""

    event_kind: Literal[EventKind.ACTION] = Field(default=EventKind.ACTION, exclude=True)
    action: str
    actor: str = ""
    detail: dict[str, Any] = Field(default_factory=dict)


EventPayload = Annotated[
    CreatedPayload | TransitionPayload | TurnPayload | WarningPayload | ErrorPayload | VerdictPayload
    | RoundDecisionPayload | RoundScoresPayload | ClarificationQuestionsPayload | ClarificationAnswerPayload
    | SummaryPayload | NotePayload | ActionPayload,
    Field(discriminator="event_kind"),
]

_ADAPTER: TypeAdapter[Any] = TypeAdapter(EventPayload)


def _members(annotation: Any) -> list[type[Payload]]:
    """The payload classes of a (nested, annotated) union."""
    args = get_args(annotation)
    if not args:
        return [annotation]
    found: list[type[Payload]] = []
    for arg in args:
        if isinstance(arg, type) and issubclass(arg, Payload):
            found.append(arg)
        elif get_args(arg):
            found += _members(arg)
    return found


# kind -> the payload classes of that kind (several for notes and warnings, told apart by `type`).
PAYLOADS: dict[EventKind, tuple[type[Payload], ...]] = {}
for _cls in _members(EventPayload):
    _kind = _cls.model_fields["event_kind"].default
    PAYLOADS[_kind] = (*PAYLOADS.get(_kind, ()), _cls)
_missing = set(EventKind) - set(PAYLOADS)
if _missing:  # pragma: no cover - a programming error caught at import
    raise RuntimeError(f"event kinds without a payload model: {sorted(_missing)}")


def parse_payload(kind: EventKind | str, data: dict[str, Any]) -> Payload:
    """Validate an event's data into its kind's payload model (raises `pydantic.ValidationError`)."""
    payload: Payload = _ADAPTER.validate_python({**data, "event_kind": EventKind(kind)})
    return payload


def payload_kind(payload: Payload) -> EventKind:
    kind: EventKind = type(payload).model_fields["event_kind"].default
    return kind


class DebateEvent(BaseModel):
    """One committed record of the log; `seq` is its position within the debate.

    Read it through `payload`: the typed model of its kind (above), parsed once when
    first read, or the very model the engine committed. `data` is the same as the JSON object stored,
    for the JSON edges only (the store, exports, the wire)."""

    debate_id: str
    seq: int
    kind: EventKind
    at: datetime
    data: dict[str, Any] = Field(default_factory=dict)

    @cached_property
    def payload(self) -> Payload:
        """The typed payload; raises `pydantic.ValidationError` for data that does not fit its kind."""
        payload = parse_payload(self.kind, self.data)
        payload._logged_at = self.at
        return payload


def logged(debate_id: str, seq: int, at: datetime, payload: Payload) -> DebateEvent:
    """The log record of a payload built in code: its stored JSON made once, the model kept as its
    `payload` (already validated: read back, it is not parsed again)."""
    record = DebateEvent(debate_id=debate_id, seq=seq, kind=payload_kind(payload), at=at, data=payload.to_data())
    payload._logged_at = at
    record.__dict__["payload"] = payload
    return record
