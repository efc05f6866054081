"""Rematches with sides swapped, and the result of a series of them.

A judge may favour a position (the side presented second, the affirmative…) rather than the better
debater. A rematch runs the same debate again with the participants' seats exchanged: each debater
takes the next debater's position *and* its place in the speaking order (with two debaters, pro and
con swap; with more, the seats rotate by one), so every phase hears the same positions in the same
order, argued by other models. A participant keeps its id, model, persona and colour; a name that only
names the seat ("Affirmative", "Pro 1") stays with the seat.

The debates are linked as a series: `DebateConfig.series` is the first debate's id and `rematch_of`
the debate re-run. Whether the model or the position won is derived from the debates' verdicts,
never stored (`series_result`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webapp.engine.formats import get_format
from webapp.engine.machine import ACTIVE_STATES, TERMINAL_STATES
from webapp.engine.panel import decided_winner
from webapp.engine.schedule import ConfigError
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, Participant

if TYPE_CHECKING:
    from webapp.engine.engine import Engine


class NotEnded(ValueError):
    """A rematch was asked of a debate that has not ended."""


def _seat_name(participant: Participant, cast_names: Mapping[str, str]) -> bool:
    """Whether a name only names the seat: the format's name for that position, or "Pro 1"-style."""
    name, position = participant.name.strip().lower(), participant.position
    if cast_names.get(position, "").lower() == name:
        return True
    return re.fullmatch(rf"{re.escape(position)} \d+", name) is not None


def swapped_participants(config: DebateConfig) -> list[Participant]:
    """The cast with the debaters' seats exchanged (rotated by one for more than two); moderators stay."""
    try:
        cast_names = {seat.position: seat.name for seat in get_format(config.format).cast}
    except KeyError:
        cast_names = {}
    seats = [i for i, p in enumerate(config.participants) if p.position != "moderator"]
    if len(seats) < 2:
        raise ConfigError("participants", "a rematch with sides swapped needs at least two debaters")
    people = list(config.participants)
    out = list(people)
    for k, seat in enumerate(seats):
        holder, mover = people[seat], people[seats[k - 1]]  # the previous seat's debater moves here
        update: dict[str, object] = {"position": holder.position}
        if _seat_name(mover, cast_names):
            update["name"] = holder.name if _seat_name(holder, cast_names) else \
                cast_names.get(holder.position, holder.position.title())
        out[seat] = mover.model_copy(update=update)
    return out


def rematch_config(config: DebateConfig, original_id: str) -> DebateConfig:
    """The config of the side-swapped rematch of debate `original_id` (whose config is `config`)."""
    data = config.model_dump(mode="json")
    data["participants"] = [p.model_dump(mode="json") for p in swapped_participants(config)]
    data["rematch_of"] = original_id
    data["series"] = config.series or original_id
    # A rematch is a debate of its own, outside any tournament (whose slot has its one debate already).
    data["tournament"] = data["tournament_slot"] = None
    return DebateConfig.model_validate(data)


def check_can_rematch(state: DebateState) -> None:
    """A rematch starts from a debate that has ended (completed or stopped); raises `NotEnded`."""
    if state.status not in TERMINAL_STATES:
        raise NotEnded(f"debate {state.id} has not ended ({state.status.value}); a rematch starts from a "
                       "finished or stopped debate")


def series_id(state: DebateState) -> str:
    return state.config.series or state.id


async def series_states(engine: Engine, state: DebateState) -> list[DebateState]:
    """The debates of `state`'s series, oldest first (`state` itself as given); empty for a debate alone.
    A debate this process runs is read from its session, any other folded from its log."""
    ids = await engine.store.series_ids(series_id(state))
    if len(ids) < 2:
        return []
    states: list[DebateState] = []
    for debate_id in ids:
        session = engine.sessions.get(debate_id)
        if debate_id == state.id:
            states.append(state)
        elif session is not None:
            states.append(session.state)
        else:
            events = await engine.store.events(debate_id)
            if events:  # deleted meanwhile: left out
                states.append(DebateState.from_events(events))
    return states


# --- the series result ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Game:
    """One debate of a series, as the result needs it."""

    id: str
    status: str
    ended: bool
    running: bool
    judged: bool  # ended with a usable verdict (a winner or a tie)
    winner: str | None  # participant id; None for a tie or no verdict
    seats: tuple[str, ...]  # its debaters' ids in seat order (list order: the speaking order)
    positions: tuple[str, ...]  # the position of each seat (the same in every debate of a series)

    def seat(self, pid: str | None) -> int | None:
        return self.seats.index(pid) if pid in self.seats else None

    def seat_label(self, seat: int) -> str:
        position = self.positions[seat]
        if self.positions.count(position) == 1:
            return position
        return f"{position}, speaking {['first', 'second', 'third'][seat] if seat < 3 else f'#{seat + 1}'}"


@dataclass(frozen=True)
class SeriesResult:
    kind: str  # pending | incomplete | same-model | same-position | ties | mixed
    headline: str
    games: tuple[Game, ...]


def game_of(state: DebateState) -> Game:
    verdict = state.verdict
    ended = state.status in TERMINAL_STATES
    judged = ended and verdict is not None and verdict.available
    return Game(
        id=state.id, status=state.status.value, ended=ended, running=state.status in ACTIVE_STATES, judged=judged,
        winner=decided_winner(verdict) if judged else None,  # by the panel rule, as the banner says
        seats=tuple(p.id for p in state.config.participants if p.position != "moderator"),
        positions=tuple(p.position for p in state.config.participants if p.position != "moderator"),
    )


def _seat_names(state: DebateState) -> dict[str, str]:
    try:
        return {seat.position: seat.name for seat in get_format(state.config.format).cast}
    except KeyError:
        return {}


def participant_label(state: DebateState, pid: str) -> str:
    """A participant's one name across a series, from the first debate `state`: "Ada (openai:gpt-4o)".

    A name that only names the seat ("Proposition", "Pro 1") moves with the seat in a rematch, so it
    cannot name the participant across the series: the model does ("demo:demo"), and where two debaters
    run the same model, the seat it held in the first debate tells them apart ("demo:demo, first
    Proposition")."""
    try:
        p = state.config.participant(pid)
    except KeyError:
        return pid
    model = f"{p.provider}:{p.model}"
    if not _seat_name(p, _seat_names(state)):
        return f"{p.name} ({model})"
    if len(shared_models(state).get(model, ())) > 1:
        return f"{model}, first {p.name}"
    return model


def shared_models(state: DebateState) -> dict[str, list[str]]:
    """The debaters' ids by model ("demo:demo"), for telling when two of them run the same model."""
    out: dict[str, list[str]] = {}
    for p in state.config.participants:
        if p.position != "moderator":
            out.setdefault(f"{p.provider}:{p.model}", []).append(p.id)
    return out


def _ordinal(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def series_result(states: list[DebateState]) -> SeriesResult | None:
    """What a series of debates (oldest first) came to; None for a debate alone."""
    if len(states) < 2:
        return None
    games = tuple(game_of(s) for s in states)
    first = states[0]
    unfinished = [(i, g) for i, g in enumerate(games) if not g.ended]
    if unfinished:
        index, game = unfinished[0]
        which = "the rematch" if index > 0 else "the first debate"
        how = "is still running" if game.running else f"has not finished ({game.status.replace('_', ' ')})"
        return SeriesResult("pending", f"Pending: {which} {how}", games)
    unjudged = [i for i, g in enumerate(games) if not g.judged]
    if unjudged:
        which = "the rematch" if unjudged[0] > 0 else "the first debate"
        return SeriesResult("incomplete", f"No series result: {which} ended without a verdict", games)
    winners = [g.winner for g in games]
    n = len(games)
    both = "both sides" if n == 2 else f"all {n} debates, on every side"
    champion = winners[0]
    if champion is not None and all(w == champion for w in winners) and len({g.seat(champion) for g in games}) > 1:
        headline = f"{participant_label(first, champion)} won {both}"
        model = next((m for m, ids in shared_models(first).items() if champion in ids), "")
        if len(shared_models(first).get(model, ())) > 1:
            # Both sides ran one model: it beat itself, which says something of the runs, not of the model.
            headline += f"; both sides ran {model}, so no model beat another" if len(games[0].seats) == 2 else \
                f"; other debaters ran {model} too, so no model beat another"
        return SeriesResult("same-model", headline, games)
    seats = [g.seat(w) for g, w in zip(games, winners, strict=True)]
    if seats[0] is not None and all(seat == seats[0] for seat in seats):
        side = games[0].seat_label(seats[0])
        if n == 2:
            return SeriesResult("same-position", f"Each side won once: the position ({side}), not the model, "
                                                 "decided", games)
        return SeriesResult("same-position", f"The {side} position won all {n} debates: the position, not the "
                                             "model, decided", games)
    if all(w is None for w in winners):
        return SeriesResult("ties", "Every debate of the series was a tie", games)
    wins: dict[str, int] = {}
    for w in winners:
        if w is not None:
            wins[w] = wins.get(w, 0) + 1
    parts = [f"{participant_label(first, pid)} won {_ordinal(count)}" for pid, count in wins.items()]
    ties = winners.count(None)
    if ties:
        parts.append(f"{_ordinal(ties)} a tie" if ties > 1 else "one tie")
    return SeriesResult("mixed", "No clear result: " + ", ".join(parts), games)
