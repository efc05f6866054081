"""Turns a format declaration and a debate config into the ordered steps the runner executes.

A step is a batch of turns run together: one turn for a sequential phase, every speaker of the
phase for a parallel one. Each turn has a stable key (`phase/r<round>/<speaker>/<index>`), which is
how the log knows a turn is finished and must never be requested again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from webapp.engine.formats import Format, Phase, get_format
from webapp.models import DebateConfig, Participant


class ConfigError(ValueError):
    """An invalid debate configuration; `field` names what to fix."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class TurnSlot(BaseModel):
    """One turn to be taken: who speaks, where, and doing what."""

    key: str
    phase: str
    round: int
    speaker: str
    act: str
    index: int
    visible: bool = True


class Step(BaseModel):
    """Turns that run together (parallel phase) or a single turn (sequential phase)."""

    phase: str
    round: int
    parallel: bool
    turns: list[TurnSlot]


def provider_problem(config: DebateConfig) -> tuple[str, str] | None:
    """The first participant or judge whose provider cannot be used (no key, no URL…), as
    (field, message); checked when a debate is created and again each time it starts running,
    since the environment may have changed in between."""
    from webapp.providers.registry import check_spec  # the registry imports the providers; load late

    specs: list[tuple[str, Any]] = [(f"participants[{i}]", p) for i, p in enumerate(config.participants)]
    if config.judge.enabled:
        specs += [(f"judge.judges[{i}]", j) for i, j in enumerate(config.judge.judges)]
        if config.judge.fallback is not None:
            specs.append(("judge.fallback", config.judge.fallback))
    for field, spec in specs:
        problem = check_spec(spec)
        if problem:
            return f"{field}.provider", problem
    return None


def default_cast(fmt: Format) -> list[Participant]:
    return [Participant(name=seat.name, position=seat.position) for seat in fmt.cast]


def prepare_config(config: DebateConfig) -> DebateConfig:
    """Fill the default cast and check the config against its format; raises `ConfigError`."""
    try:
        fmt = get_format(config.format)
    except KeyError as exc:
        raise ConfigError("format", str(exc)) from None
    if not config.participants:
        config = config.model_copy(update={"participants": default_cast(fmt)})
        config = DebateConfig.model_validate(config.model_dump())
    n = len(config.participants)
    if n < fmt.min_participants:
        raise ConfigError(
            "participants", f"{fmt.title} needs at least {fmt.min_participants} participants, got {n}"
        )
    if n > fmt.max_participants:
        raise ConfigError(
            "participants", f"{fmt.title} allows at most {fmt.max_participants} participants, got {n}"
        )
    positions = {p.position for p in config.participants}
    for side in sorted(fmt.sides):
        if side not in positions:
            raise ConfigError(
                "participants", f"{fmt.title} needs a participant with position {side!r}"
            )
    debaters = [p for p in config.participants if p.position != "moderator"]
    if not debaters:
        raise ConfigError("participants", "at least one participant must not be a moderator")
    if config.rounds is not None:
        term = fmt.termination
        if not fmt.has_rounds:
            raise ConfigError("rounds", f"{fmt.title} has a fixed sequence of phases; leave rounds empty")
        if not term.min_rounds <= config.rounds <= term.max_rounds:
            raise ConfigError(
                "rounds",
                f"{fmt.title} takes {term.min_rounds} to {term.max_rounds} rounds, got {config.rounds}",
            )
    return config


def total_rounds(fmt: Format, config: DebateConfig) -> int:
    """Rounds of the block: the fixed count, or the hard cap for judge-driven termination."""
    if not fmt.has_rounds:
        return 1
    if fmt.termination.kind == "fixed":
        return config.rounds or fmt.termination.default_rounds
    return config.rounds or fmt.termination.max_rounds


def pre_phases(fmt: Format) -> list[Phase]:
    out: list[Phase] = []
    for phase in fmt.phases:
        if phase.scope == "round":
            break
        out.append(phase)
    return out


def round_phases(fmt: Format) -> list[Phase]:
    return [p for p in fmt.phases if p.scope == "round"]


def post_phases(fmt: Format) -> list[Phase]:
    block_seen = False
    out: list[Phase] = []
    for phase in fmt.phases:
        if phase.scope == "round":
            block_seen = True
        elif block_seen:
            out.append(phase)
    return out if block_seen else []


def speakers_for(side: str, config: DebateConfig) -> list[Participant]:
    if side == "*":
        return [p for p in config.participants if p.position != "moderator"]
    return [p for p in config.participants if p.position == side]


def phase_visible(phase: Phase, config: DebateConfig) -> bool:
    """Private phases (preparation notes) are shown to others only when the debate asks for it."""
    return not phase.private or (phase.optional == "show_preparation" and config.show_preparation)


def phase_steps(fmt: Format, phase: Phase, round_no: int, config: DebateConfig) -> list[Step]:
    """The steps of one phase in one round, in speaking order."""
    repeat = config.questions if phase.repeat == "questions" else phase.repeat
    visible = phase_visible(phase, config)
    slots: list[TurnSlot] = []
    index = 0
    for _ in range(repeat):
        for slot in phase.speakers:
            for participant in speakers_for(slot.side, config):
                for _turn in range(phase.turns_per_speaker):
                    slots.append(
                        TurnSlot(
                            key=f"{phase.id}/r{round_no}/{participant.id}/{index}",
                            phase=phase.id,
                            round=round_no,
                            speaker=participant.id,
                            act=slot.act,
                            index=index,
                            visible=visible,
                        )
                    )
                    index += 1
    if phase.parallel:
        return [Step(phase=phase.id, round=round_no, parallel=True, turns=slots)] if slots else []
    return [Step(phase=phase.id, round=round_no, parallel=False, turns=[s]) for s in slots]


def plan(fmt: Format, config: DebateConfig, rounds: int | None = None) -> list[Step]:
    """Every step of a debate with a fixed number of rounds, in order."""
    rounds = rounds if rounds is not None else total_rounds(fmt, config)
    steps: list[Step] = []
    for phase in pre_phases(fmt):
        steps += phase_steps(fmt, phase, 1, config)
    for round_no in range(1, rounds + 1):
        for phase in round_phases(fmt):
            steps += phase_steps(fmt, phase, round_no, config)
    for phase in post_phases(fmt):
        steps += phase_steps(fmt, phase, 1, config)
    return steps
