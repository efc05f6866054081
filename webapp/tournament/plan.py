"""A tournament as data: who plays, on which topics, in which format, and its deterministic schedule.

A round robin: every pair of models meets once per topic (twice with `swap_sides`, each model
taking each side once). Each pairing is a `Slot` with a stable key; the debate played for a slot
carries the tournament's id and that key in its config, so "has this slot a debate?" is answered
from the store and survives restarts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime

from pydantic import Field, field_validator, model_validator

from webapp.engine import budget as money
from webapp.engine import estimate as ranges
from webapp.engine.estimate import DebateEstimate
from webapp.engine.formats import get_format
from webapp.engine.schedule import plan, prepare_config
from webapp.engine.spending import JUDGE_READ_MARGIN
from webapp.models import (
    TOPIC_MAX_CHARS,
    Budget,
    DebateConfig,
    JudgeConfig,
    Participant,
    ProviderName,
    Strict,
    utcnow,
)
from webapp.providers.base import estimate_tokens
from webapp.settings import Settings
from webapp.wording import counted

MAX_MODELS = 8
MAX_TOPICS = 50
# What the estimate before each debate assumes a turn reads (the system prompt, the topic and the
# transcript so far, on average): a round figure, not a measurement.
INPUT_TOKENS_PER_TURN = 1500


class Contender(Strict):
    """One model taking part (as `provider:model`)."""

    provider: ProviderName = "demo"
    model: str = Field(min_length=1, max_length=200)
    base_url: str | None = None
    preset: str | None = None
    api_key_env: str | None = None

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    @classmethod
    def parse(cls, text: str) -> Contender:
        """`openai:gpt-4o-mini` → provider and model; a bare name is a demo model."""
        text = text.strip()
        provider, sep, model = text.partition(":")
        if not sep:
            return cls(provider="demo", model=text)
        return cls.model_validate({"provider": provider.strip(), "model": model.strip()})


class Tournament(Strict):
    """A round robin of models over topics; its debates are ordinary debates linked to it."""

    id: str = ""
    name: str = Field(default="", max_length=120)
    models: list[Contender] = Field(min_length=2, max_length=MAX_MODELS)
    topics: list[str] = Field(min_length=1, max_length=MAX_TOPICS)
    format: str = "classic"
    rounds: int | None = Field(default=None, ge=1, le=50)
    swap_sides: bool = False
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    budget_usd: float | None = Field(default=None, gt=0, description="total for the whole tournament")
    concurrency: int = Field(default=1, ge=1, le=16, description="debates running at once")
    max_tokens: int = Field(default=1024, ge=16, le=64000, description="each debater's output allowance per turn")
    seed: int = Field(default=0, ge=0)
    created_by: str = ""
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("topics")
    @classmethod
    def _clean_topics(cls, value: list[str]) -> list[str]:
        topics = [t.strip() for t in value if t.strip()]
        if not topics:
            raise ValueError("at least one topic is required")
        for index, topic in enumerate(topics):
            if len(topic) > TOPIC_MAX_CHARS:
                raise ValueError(f"topic {index + 1} is longer than {TOPIC_MAX_CHARS} characters")
        return topics

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        get_format(value)  # KeyError (UnknownFormat) names the formats; whether two can debate in it,
        return value  # the engine's validation of a slot's debate says

    @model_validator(mode="after")
    def _different_models(self) -> Tournament:
        labels = [m.label for m in self.models]
        if len(set(labels)) != len(labels):
            raise ValueError("models: each model may take part once")
        if not self.name:
            self.name = f"{counted(len(self.models), 'model')} × {counted(len(self.topics), 'topic')}"
        return self


@dataclass(frozen=True)
class Slot:
    """One pairing: on topic `topic`, model `pro` argues for and model `con` against (indices into
    `Tournament.models`). `swapped`: the return match of the pair, sides exchanged."""

    topic: int
    a: int
    b: int
    swapped: bool

    @property
    def key(self) -> str:
        return f"t{self.topic}-m{self.a}-m{self.b}{'-s' if self.swapped else ''}"

    @property
    def pro(self) -> int:
        return self.b if self.swapped else self.a

    @property
    def con(self) -> int:
        return self.a if self.swapped else self.b


def schedule(tournament: Tournament) -> list[Slot]:
    """Every slot, in playing order: topic by topic, each pair, its return match right after it."""
    slots: list[Slot] = []
    for topic in range(len(tournament.topics)):
        for a, b in itertools.combinations(range(len(tournament.models)), 2):
            slots.append(Slot(topic, a, b, False))
            if tournament.swap_sides:
                slots.append(Slot(topic, a, b, True))
    return slots


def _participant(tournament: Tournament, index: int, position: str) -> Participant:
    who = tournament.models[index]
    return Participant(name=who.label[:60], provider=who.provider, model=who.model, position=position,
                       base_url=who.base_url, preset=who.preset, api_key_env=who.api_key_env,
                       max_tokens=tournament.max_tokens)


def slot_config(tournament: Tournament, slot: Slot, cost_limit: float | None = None) -> DebateConfig:
    """The debate played for `slot` (no clarification questions: nobody is there to answer them)."""
    return DebateConfig(
        topic=tournament.topics[slot.topic], format=tournament.format, rounds=tournament.rounds,
        participants=[_participant(tournament, slot.pro, "pro"), _participant(tournament, slot.con, "con")],
        judge=tournament.judge, budget=Budget(cost_limit=cost_limit), seed=tournament.seed,
        clarification=False, tournament=tournament.id, tournament_slot=slot.key,
    )


def sample_configs(tournament: Tournament) -> list[DebateConfig]:
    """The debate of every pairing on the first topic: every model and every pairing appears, so
    validating these (a missing key, rounds the format refuses) checks the whole tournament."""
    return [slot_config(tournament, slot) for slot in schedule(tournament) if slot.topic == 0 and not slot.swapped]


def estimate_debate(tournament: Tournament, slot: Slot, settings: Settings | None = None) -> float | None:
    """The most one slot's debate is expected to cost: each turn reading `INPUT_TOKENS_PER_TURN` and
    writing its whole allowance, plus each judge's verdict over the transcript. None when a model is
    unpriced (no estimate can be made)."""
    config = prepare_config(slot_config(tournament, slot))
    turns = [turn for step in plan(get_format(config.format), config) for turn in step.turns]
    total = 0.0
    for turn in turns:
        speaker = config.participant(turn.speaker)
        cost = money.estimate_call(speaker, INPUT_TOKENS_PER_TURN, speaker.max_tokens, settings)
        if cost.usd is None:
            return None
        total += cost.usd
    if config.judge.enabled:
        # Every judge reads the whole transcript (with the engine's margin for long tokens) and may
        # write its whole allowance; judging with the order swapped asks each judge twice.
        transcript = int(len(turns) * tournament.max_tokens * JUDGE_READ_MARGIN) + INPUT_TOKENS_PER_TURN
        asks = 2 if config.judge.swap_sides else 1
        for spec in config.judge.judges:
            cost = money.estimate_call(spec, transcript, spec.max_tokens, settings)
            if cost.usd is None:
                return None
            total += cost.usd * asks
    return total


# A debate's range depends on its topic only through the topic's length in tokens (`engine.estimate`):
# (pro, con, topic tokens) -> its estimate, for one set of models, format and judges.
RangeMemo = dict[tuple[int, int, int], DebateEstimate]


def estimate_range(tournament: Tournament, settings: Settings | None = None,
                   memo: RangeMemo | None = None) -> DebateEstimate:
    """The whole tournament's cost range as the new-debate form gives one debate's (`engine.estimate`):
    the sum of its debates' low and high figures. A caller that estimates again after a topic was
    edited passes the same `memo` (dropping it when anything else changed): only new pairings of
    pairing and topic length are estimated."""
    memo = {} if memo is None else memo
    total = DebateEstimate()
    for slot in schedule(tournament):
        key = (slot.pro, slot.con, estimate_tokens(tournament.topics[slot.topic]))
        if key not in memo:
            memo[key] = ranges.estimate_debate(slot_config(tournament, slot), settings)
        one = memo[key]
        total.low_usd += one.low_usd
        total.high_usd += one.high_usd
        total.turns_low += one.turns_low
        total.turns_high += one.turns_high
        total.judge_calls_low += one.judge_calls_low
        total.judge_calls_high += one.judge_calls_high
        for kind in ("free_models", "priced_models", "unpriced_models"):
            seen: list[str] = getattr(total, kind)
            seen.extend(model for model in getattr(one, kind) if model not in seen)
    return total
