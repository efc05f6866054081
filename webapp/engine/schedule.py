"""Turns a format declaration and a debate config into the ordered steps the runner executes.

A step is a batch of turns run together: one turn for a sequential phase, every speaker of the
phase for a parallel one. Each turn has a stable key (`phase/r<round>/<speaker>/<index>`), which is
how the log knows a turn is finished and must never be requested again.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from webapp.engine.formats import Format, Phase, get_format
from webapp.hygiene import has_visible_text
from webapp.models import TEMPERATURE_IGNORED_BY, DebateConfig, Participant
from webapp.models.lifecycle import TurnPlace
from webapp.providers.registry import spec_problem

if TYPE_CHECKING:
    from webapp.providers.endpoints import EndpointPolicy

# A participant's colour goes into the pages' style attributes: only #rgb or #rrggbb.
COLOR = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")


class ConfigError(ValueError):
    """An invalid debate configuration; `field` names what to fix."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class TurnSlot(TurnPlace):
    """One turn to be taken: who speaks, where, and doing what."""

    visible: bool = True


class Step(BaseModel):
    """Turns that run together (parallel phase) or a single turn (sequential phase)."""

    phase: str
    round: int
    parallel: bool
    turns: list[TurnSlot]


def model_specs(config: DebateConfig) -> list[tuple[str, Any]]:
    """Every model the debate will call, with the config path that names it: participants, then
    (when judging) the judges and the fallback judge."""
    specs: list[tuple[str, Any]] = [(f"participants[{i}]", p) for i, p in enumerate(config.participants)
                                    if not p.is_human]  # a person is not called
    if config.judge.enabled:
        specs += [(f"judge.judges[{i}]", j) for i, j in enumerate(config.judge.judges)]
        if config.judge.fallback is not None:
            specs.append(("judge.fallback", config.judge.fallback))
    return specs


def provider_problem(config: DebateConfig, policy: EndpointPolicy | None = None) -> tuple[str, str] | None:
    """The first participant or judge whose provider cannot be used (no key, no URL, a URL its key is
    not bound to, an address not to be called…), as (field, message); checked when a debate is created
    and again each time it starts running, since the environment and the registered endpoints may have
    changed in between. `policy`: the endpoint rules (default: the configuration's alone)."""
    for field, spec in model_specs(config):
        problem = spec_problem(spec, policy)
        if problem:
            return f"{field}.{problem.field}", problem.message
    return None


def default_cast(fmt: Format) -> list[Participant]:
    return [Participant(name=seat.name, position=seat.position) for seat in fmt.cast]


def _check_input(config: DebateConfig) -> None:
    """What a new debate must not be given, checked here rather than in the model so that a debate
    stored before these checks existed still loads."""
    if not has_visible_text(config.topic):
        raise ConfigError("topic", "the topic has no visible text (only invisible characters such as zero-width "
                                   "spaces, byte-order marks or control characters)")
    for index, participant in enumerate(config.participants):
        if participant.color and not COLOR.match(participant.color):
            raise ConfigError(f"participants[{index}].color",
                              f"{participant.color!r} is not a colour; use #rgb or #rrggbb, e.g. #2563eb")


def speaks(fmt: Format, participant: Participant, config: DebateConfig) -> bool:
    """Whether any phase of the format gives this participant a turn."""
    return any(p.id == participant.id for phase in fmt.phases for slot in phase.speakers
               for p in speakers_for(slot.side, config))


def _who_speaks(fmt: Format) -> str:
    if any(slot.side == "*" for phase in fmt.phases for slot in phase.speakers):
        return f"{fmt.title} gives turns to every position except moderator"
    sides = sorted(fmt.sides)
    return f"{fmt.title} gives turns only to the position{'s' if len(sides) > 1 else ''} " + \
        " and ".join(repr(side) for side in sides)


def prepare_config(config: DebateConfig) -> DebateConfig:
    """Fill the default cast and check the config against its format; raises `ConfigError`."""
    _check_input(config)
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
    for index, participant in enumerate(config.participants):
        if not speaks(fmt, participant, config):  # silent, yet a judge would score them (and they could win)
            raise ConfigError(
                f"participants[{index}].position",
                f"{participant.name} ({participant.position}) would never speak: {_who_speaks(fmt)}",
            )
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


def config_notes(config: DebateConfig) -> list[str]:
    """Warnings about a valid config: settings that will have no effect. Shown before a debate starts
    (the CLI prints them); never a reason to refuse it."""
    notes: list[str] = []
    for field, spec in model_specs(config):
        if spec.temperature is not None and spec.provider in TEMPERATURE_IGNORED_BY:
            notes.append(f"{field}.temperature: {spec.provider.title()} does not accept a temperature, so "
                         f"{spec.temperature:g} is not sent (the model's default is used)")
    return notes


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
