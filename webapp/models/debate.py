"""A debate's configuration and its records: participants, judges, budget, timeouts, turns, usage,
verdicts, and the kinds of events its log holds.

Everything that enters the engine (a form, a CLI spec, a config file) is validated into a
`DebateConfig`; everything the engine records is a `DebateEvent` of one of the `EventKind`s below, its
payload one of the models in `webapp.models.payloads`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from webapp.models.lifecycle import TurnPlace

TOPIC_MAX_CHARS = 2000
PERSONA_MAX_CHARS = 4000
MAX_PARTICIPANTS = 8
DEFAULT_CRITERIA = ["argument quality", "evidence", "rebuttal", "clarity", "persuasiveness"]
MAX_TAGS = 10
TAG_MAX_CHARS = 32
TAG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.+-]*$")
PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"]

ProviderName = Literal["demo", "openai", "anthropic", "compatible", "human"]
# A participant whose turns a person writes (a human seat): no model is called for it and it costs $0.
HUMAN = "human"
HUMAN_TURN_SECONDS = 600  # a human seat's time per turn unless the debate sets another
# Providers whose API rejects `temperature`: it is not sent to them (the form and the CLI say so).
TEMPERATURE_IGNORED_BY: frozenset[str] = frozenset({"anthropic"})

# Positions a participant can hold; aliases are normalised so formats can name sides simply.
POSITION_ALIASES = {
    "affirmative": "pro",
    "aff": "pro",
    "for": "pro",
    "proposition": "pro",
    "negative": "con",
    "neg": "con",
    "against": "con",
    "opposition": "con",
    "mod": "moderator",
}


def utcnow() -> datetime:
    """Timezone-aware now; every timestamp in the log is UTC."""
    return datetime.now(UTC)


def slugify(text: str) -> str:
    """A short identifier made from a display name."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:32] or "p"


class Strict(BaseModel):
    """Base for configuration models: unknown fields are errors, not silently dropped."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class Participant(Strict):
    """One debater (or moderator): which model speaks, from which side, in which voice."""

    id: str = ""
    name: str = Field(default="", max_length=60)
    provider: ProviderName = "demo"
    model: str = Field(default="demo", min_length=1, max_length=200)
    position: str = Field(default="pro", min_length=1, max_length=40)
    persona: str = Field(default="", max_length=PERSONA_MAX_CHARS)
    base_url: str | None = None
    preset: str | None = Field(default=None, description="compatible-server preset name")
    api_key_env: str | None = Field(default=None, description="name of the env variable holding the key")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=16, le=64000)
    color: str | None = None
    context_tokens: int | None = Field(default=None, ge=500, description="context budget in tokens")
    concurrency: int | None = Field(default=None, ge=1, le=64, description=(
        "calls at once to this model's endpoint (None: 1 for local servers, unlimited for hosted APIs)"))
    seat: str | None = Field(default=None, max_length=64, description=(
        "provider human: the username who takes the seat (None: whoever takes it first)"))

    @property
    def is_human(self) -> bool:
        """A person writes this participant's turns (a human seat)."""
        return self.provider == HUMAN

    @model_validator(mode="after")
    def _human_seat(self) -> Participant:
        # A person has no model: the label says so wherever a model name is shown (costs, exports).
        if self.provider == HUMAN:
            self.model = HUMAN
        elif self.seat:
            raise ValueError("seat is only for provider human (a person takes the seat)")
        return self

    @field_validator("position")
    @classmethod
    def _normalise_position(cls, value: str) -> str:
        value = value.strip().lower()
        return POSITION_ALIASES.get(value, value)

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("base_url must start with http:// or https://")
        return value.rstrip("/")


class JudgeSpec(Strict):
    """One judge model."""

    provider: ProviderName = "demo"
    model: str = Field(default="demo", min_length=1, max_length=200)
    base_url: str | None = None
    preset: str | None = None
    api_key_env: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int = Field(default=1500, ge=64, le=64000)
    concurrency: int | None = Field(default=None, ge=1, le=64, description=(
        "calls at once to this model's endpoint (None: 1 for local servers, unlimited for hosted APIs)"))

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    @field_validator("provider")
    @classmethod
    def _not_a_person(cls, value: str) -> str:
        if value == HUMAN:
            raise ValueError("a judge must be a model: provider human is only for participants (a human seat)")
        return value


class JudgeConfig(Strict):
    """The judge (or panel of judges) and what they rule on."""

    judges: list[JudgeSpec] = Field(default_factory=lambda: [JudgeSpec()], min_length=1, max_length=5)
    fallback: JudgeSpec | None = None
    criteria: list[str] = Field(default_factory=lambda: list(DEFAULT_CRITERIA), min_length=1, max_length=10)
    frequency: Literal["end", "round", "mid"] = "end"
    enabled: bool = True
    swap_sides: bool = Field(default=False, description=(
        "judge twice, the second time with the presentation order reversed; a judge whose winner flips "
        "counts as undecided"))

    @field_validator("judges")
    @classmethod
    def _different_models(cls, value: list[JudgeSpec]) -> list[JudgeSpec]:
        # A panel is there to hear different models; the same model twice only doubles its weight.
        seen: set[tuple[str, str, str | None]] = set()
        for index, spec in enumerate(value):
            key = (spec.provider, spec.model, spec.base_url)
            if key in seen:
                raise ValueError(f"judges[{index}] repeats {spec.label}; a panel needs different models")
            seen.add(key)
        return value

    @field_validator("criteria")
    @classmethod
    def _clean_criteria(cls, value: list[str]) -> list[str]:
        cleaned = [c.strip() for c in value if c.strip()]
        if not cleaned:
            raise ValueError("at least one judging criterion is required")
        return cleaned


class Budget(Strict):
    """Spending guard rails in USD: a warning threshold and a hard limit."""

    warn_at: float | None = Field(default=None, ge=0)
    cost_limit: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _limit_above_warning(self) -> Budget:
        if self.warn_at is not None and self.cost_limit is not None and self.cost_limit < self.warn_at:
            raise ValueError("cost_limit must be greater than or equal to warn_at")
        return self


class Timeouts(Strict):
    """Per-debate timeouts in seconds. A timeout left empty takes the default of each provider's
    kind (`HOSTED_TIMEOUTS`, or the far more generous `LOCAL_TIMEOUTS` for a server on this machine
    or network, which may run on a CPU); one that is given applies to every provider.

    An empty timeout is stored as null (and read back as empty); an attribute read directly gives
    the hosted default, so `for_server(local)` is what a call must use. Configs stored before the
    per-kind defaults carry explicit values and keep them."""

    connect: float = Field(default=10.0, gt=0, le=300)
    first_token: float = Field(default=60.0, gt=0, le=900)
    turn: float = Field(default=120.0, gt=0, le=3600)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_default(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data

    @model_serializer(mode="wrap")
    def _store_empty_as_null(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in type(self).model_fields:
                if name not in self.model_fields_set and name in data:
                    data[name] = None
        return data

    def for_server(self, local: bool) -> Timeouts:
        """The timeouts a call to a local (True) or hosted server runs under: what was given, else
        that kind's default."""
        defaults = LOCAL_TIMEOUTS if local else HOSTED_TIMEOUTS
        return Timeouts(**{name: getattr(self, name) if name in self.model_fields_set else defaults[name]
                           for name in type(self).model_fields})


# Default timeouts (seconds) by kind of server: hosted APIs answer within seconds; a local server
# (Ollama, vLLM, llama.cpp, LM Studio, any base URL on this machine or network) may load the model
# first and generate on a CPU.
HOSTED_TIMEOUTS: dict[str, float] = {"connect": 10.0, "first_token": 60.0, "turn": 120.0}
LOCAL_TIMEOUTS: dict[str, float] = {"connect": 10.0, "first_token": 300.0, "turn": 900.0}


class ContextPolicy(Strict):
    """How a participant's history is kept inside its context budget."""

    strategy: Literal["truncate", "sliding-window", "summarize"] = "truncate"
    window: int = Field(default=6, ge=1, le=100, description="turns kept by sliding-window")


class DebateConfig(Strict):
    """Everything needed to run one debate; validated before anything is stored."""

    topic: str = Field(min_length=1, max_length=TOPIC_MAX_CHARS)
    format: str = "classic"
    rounds: int | None = Field(default=None, ge=1, le=50)
    questions: int = Field(default=3, ge=1, le=10, description="cross-examination questions per side")
    participants: list[Participant] = Field(default_factory=list, max_length=MAX_PARTICIPANTS)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    budget: Budget = Field(default_factory=Budget)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    context: ContextPolicy = Field(default_factory=ContextPolicy)
    word_limit: int | None = Field(default=None, ge=20, le=5000, description="overrides the phases' limits")
    word_limit_action: Literal["truncate", "reject"] = "truncate"
    strict: bool = Field(default=False, description="flag off-topic turns")
    seed: int = Field(default=0, ge=0)
    max_retries: int = Field(default=3, ge=0, le=20)
    human_turn_seconds: int = Field(default=HUMAN_TURN_SECONDS, ge=0, le=86400, description=(
        "a human seat's time to write a turn, in seconds (0: no limit); on time-out the turn is skipped"))
    show_preparation: bool = False
    clarification: bool = True
    clarification_questions: int = Field(default=3, ge=0, le=10)
    clarification_iterations: int = Field(default=3, ge=1, le=10)
    convergence_threshold: int = Field(default=85, ge=1, le=100)
    quality_threshold: int = Field(default=80, ge=1, le=100)
    evaluation: Literal["quality", "convergence", "fixed"] = Field(
        default="quality", description="collaborative: how each round is evaluated (threshold: quality_threshold)"
    )
    series: str | None = Field(default=None, max_length=64, description=(
        "id of the series of side-swapped rematches this debate belongs to (the first debate's id)"))
    rematch_of: str | None = Field(default=None, max_length=64, description="the debate this one re-runs")
    tournament: str | None = Field(default=None, max_length=64, description="the tournament this debate is part of")
    tournament_slot: str | None = Field(default=None, max_length=64, description=(
        "its pairing's stable key in that tournament (one debate per slot: see webapp.tournament.plan)"))
    tags: list[str] = Field(default_factory=list, description=(
        f"topic tags (at most {MAX_TAGS}, lower-case, up to {TAG_MAX_CHARS} characters: letters, digits, - _ . +)"))

    @field_validator("tags", mode="before")
    @classmethod
    def _clean_tags(cls, value: Any) -> Any:
        # "Ethics, AI" from a form or a config file is two tags; spaces inside a tag become hyphens.
        if isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, list | tuple):
            return value
        tags: list[str] = []
        for raw in value:
            if not isinstance(raw, str):
                raise ValueError("each tag must be text")
            tag = "-".join(raw.strip().lower().split())
            if not tag:
                continue
            if len(tag) > TAG_MAX_CHARS:
                raise ValueError(f"tag {tag[:40]!r} is longer than {TAG_MAX_CHARS} characters")
            if not TAG_PATTERN.match(tag):
                raise ValueError(f"tag {tag!r}: use letters, digits and - _ . + only")
            if tag not in tags:
                tags.append(tag)
        if len(tags) > MAX_TAGS:
            raise ValueError(f"at most {MAX_TAGS} tags")
        return tags

    @field_validator("topic")
    @classmethod
    def _topic_has_words(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("topic must not be empty")
        return value

    @model_validator(mode="after")
    def _assign_ids(self) -> DebateConfig:
        seen: set[str] = set()
        for index, participant in enumerate(self.participants):
            if not participant.name:
                participant.name = f"{participant.position.title()} {index + 1}"
            base = participant.id or slugify(participant.name)
            pid, n = base, 2
            while pid in seen:
                pid, n = f"{base}-{n}", n + 1
            participant.id = pid
            seen.add(pid)
            if not participant.color:
                participant.color = PALETTE[index % len(PALETTE)]
        return self

    def participant(self, participant_id: str) -> Participant:
        for p in self.participants:
            if p.id == participant_id:
                return p
        raise KeyError(participant_id)


class Usage(BaseModel):
    """Tokens used by one provider call."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            estimated=self.estimated or other.estimated,
        )


class Turn(TurnPlace):
    """A finished turn, exactly as stored in the log."""

    text: str
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    model: str = ""
    provider: str = ""
    attempt: int = 1
    started_at: datetime
    finished_at: datetime
    first_token_s: float | None = None
    finish_reason: str | None = None
    notes: list[str] = Field(default_factory=list, description="word limit, off-topic, compression notes")
    visible: bool = True
    by: str | None = Field(default=None, description="a human seat's turn: who wrote it")
    assisted_by: str | None = Field(default=None, description="a human seat's turn drafted with this model")
    skipped: bool = Field(default=False, description="a human seat's turn skipped (the time ran out)")


class CriterionScore(BaseModel):
    """One participant's score and note on one criterion."""

    score: float = Field(ge=0, le=100)
    note: str = ""


class JudgeRuling(BaseModel):
    """One judge's ruling (a panel has several)."""

    judge: str
    winner: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    criteria: dict[str, dict[str, CriterionScore]] = Field(default_factory=dict)
    reasoning: str = ""
    confidence: float | None = None
    error: str | None = None
    order: list[str] = Field(default_factory=list, description="participant ids in the order this judge saw them")
    swap_winner: str | None = Field(default=None, description="the winner when re-judged with the order reversed")
    flipped: bool | None = Field(default=None, description=(
        "None: not re-judged; True: the winner changed with the order (undecided for this debate)"))
    output_mode: str | None = Field(default=None, description=(
        "json_schema | tool | json_object+schema | json_object | prompt"))
    parse_failures: int = Field(default=0, description="replies that could not be used before this ruling")


class Verdict(BaseModel):
    """The final ruling: winner (None for a tie), 0–100 scores, per-criterion notes and reasoning."""

    available: bool = True
    winner: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    criteria: dict[str, dict[str, CriterionScore]] = Field(default_factory=dict)
    reasoning: str = ""
    confidence: float | None = None
    rulings: list[JudgeRuling] = Field(default_factory=list)
    disagreement: float | None = None
    labels: dict[str, str] = Field(default_factory=dict, description="neutral label -> participant id")
    raw_text: str | None = None
    synthesis: str | None = None
    ended_because: str | None = None
    word_counts: dict[str, int] = Field(default_factory=dict, description="participant id -> words spoken")
    length_flag: bool = Field(default=False, description="the winner spoke over 1.5x the words of the loser")
    undecided_judges: list[str] = Field(default_factory=list, description="judges whose winner flipped on swap")
    notes: list[str] = Field(default_factory=list, description="how the verdict was obtained (fallbacks used)")


class EventKind(StrEnum):
    """Every kind of record in a debate's append-only log."""

    CREATED = "created"
    TRANSITION = "transition"
    TURN = "turn"
    WARNING = "warning"
    ERROR = "error"
    VERDICT = "verdict"
    ROUND_DECISION = "round_decision"
    ROUND_SCORES = "round_scores"
    CLARIFICATION_QUESTIONS = "clarification_questions"
    CLARIFICATION_ANSWER = "clarification_answer"
    SUMMARY = "summary"
    NOTE = "note"
    ACTION = "action"  # a person's action that is not a transition (share link created, revoked)
