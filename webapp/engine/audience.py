"""The audience's vote and the people's verdict, as rules on a debate's state: which debates have a vote
(two sides, pro and con), when each stage is open, the Oxford swing, and the people's majority.

Pure functions over what the log says (`DebateState`) and what the audience tables hold
(`webapp.store.audience`): the UI, the CLI and the exports all ask here, so they agree.

The "before" vote is open from the start until the first rebuttal begins (the first phase whose id
names a rebuttal; in a format without one, the second phase). The "after" vote opens when the debate
ends and stays open for `after_minutes` (an operator may close it early or reopen it: the store then
holds the closing time). The swing is each answer's change in share, in percentage points; the room's
winner is the side whose share grew more (Oxford-style: the motion is carried by the swing, not by the
final count).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from webapp.engine.machine import TERMINAL_STATES
from webapp.engine.state import DebateState
from webapp.store.audience import AudienceStore, HumanVerdict, Stage, Tally
from webapp.store.protocol import EventStore

DEFAULT_AFTER_MINUTES = 10.0
TIE = "tie"


def sides(state: DebateState) -> tuple[str, str] | None:
    """The participant ids of the pro and the con side, if the debate has exactly those two sides."""
    pro = [p.id for p in state.config.participants if p.position == "pro"]
    con = [p.id for p in state.config.participants if p.position == "con"]
    if len(pro) == 1 and len(con) == 1:
        return pro[0], con[0]
    return None


def has_vote(state: DebateState) -> bool:
    return sides(state) is not None


def _cutoff(state: DebateState) -> int:
    ids = [p.id for p in state.format.phases]
    for i, phase_id in enumerate(ids):
        if "rebuttal" in phase_id:
            return i
    return min(1, len(ids))


def before_open(state: DebateState) -> bool:
    """Whether the before vote still takes votes: the debate has not ended nor reached its first rebuttal."""
    if state.status in TERMINAL_STATES:
        return False
    ids = [p.id for p in state.format.phases]
    reached = {ids.index(t.phase) for t in state.turns if t.phase in ids}
    phase = state.position.phase
    if phase in ids:
        reached.add(ids.index(phase))
    return not reached or max(reached) < _cutoff(state)


def ended_at(state: DebateState) -> datetime | None:
    """When the debate ended (its last move to a terminal state), or None while it has not."""
    if state.status not in TERMINAL_STATES:
        return None
    for move in reversed(state.transitions):
        if move.to in TERMINAL_STATES:
            return move.at
    return state.created_at


def after_closes_at(state: DebateState, override: float | None,
                    after_minutes: float = DEFAULT_AFTER_MINUTES) -> float | None:
    """When the after vote closes (seconds since the epoch), or None while the debate has not ended."""
    end = ended_at(state)
    if end is None:
        return None
    if override is not None:
        return override
    return end.timestamp() + after_minutes * 60


def stage_open(state: DebateState, stage: Stage, override: float | None, now: float,
               after_minutes: float = DEFAULT_AFTER_MINUTES) -> bool:
    if not has_vote(state):
        return False
    if stage == "before":
        return before_open(state)
    closes = after_closes_at(state, override, after_minutes)
    return closes is not None and now < closes


def open_stage(state: DebateState, override: float | None, now: float,
               after_minutes: float = DEFAULT_AFTER_MINUTES) -> Stage | None:
    """The stage taking votes now, if any."""
    stage: Stage
    for stage in ("before", "after"):
        if stage_open(state, stage, override, now, after_minutes):
            return stage
    return None


def shares(tally: Tally) -> dict[str, float]:
    """Each answer's share of the stage's votes, in percent (zeros without votes)."""
    total = tally.total
    counts = tally.public()
    return {k: (100.0 * v / total if total else 0.0) for k, v in counts.items()}


class AudienceResult(BaseModel):
    """Both stages, the swing (percentage points per answer) and the room's winner ("for", "against",
    "tie"; None until both stages have votes)."""

    before: dict[str, int]
    after: dict[str, int]
    swing: dict[str, float]
    winner: str | None = None

    def sentence(self, pro_name: str = "the proposition", con_name: str = "the opposition") -> str:
        """"The audience moved 18 points to the proposition" (or what stands in for it)."""
        if self.winner is None:
            return "Not enough votes yet: the swing needs votes before and after."
        if self.winner == TIE:
            return "The audience did not move: both sides' shares changed alike."
        gained = self.swing["for"] if self.winner == "for" else self.swing["against"]
        side = pro_name if self.winner == "for" else con_name
        points = round(gained)
        return f"The audience moved {points} point{'s' if points != 1 else ''} to {side}"


def result(tallies: dict[Stage, Tally]) -> AudienceResult:
    before, after = tallies["before"], tallies["after"]
    b, a = shares(before), shares(after)
    swing = {k: round(a[k] - b[k], 1) for k in b}
    winner: str | None = None
    if before.total and after.total:
        if swing["for"] > swing["against"]:
            winner = "for"
        elif swing["against"] > swing["for"]:
            winner = "against"
        else:
            winner = TIE
    return AudienceResult(before=before.public(), after=after.public(), swing=swing, winner=winner)


def audience_winner_id(state: DebateState, res: AudienceResult) -> str | None:
    """The participant the room's swing went to (None: a tie or no result)."""
    pair = sides(state)
    if pair is None or res.winner in (None, TIE):
        return None
    return pair[0] if res.winner == "for" else pair[1]


def people_majority(verdicts: list[HumanVerdict]) -> tuple[str | None, int]:
    """The winner most people named (participant id, or "tie" for a tie or an even split between the
    most named) and how many verdicts there are; (None, 0) without verdicts."""
    if not verdicts:
        return None, 0
    counts = Counter(v.winner or TIE for v in verdicts)
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return TIE, len(verdicts)
    return ranked[0][0], len(verdicts)


def ai_winner(state: DebateState) -> str | None:
    """The AI judges' winner: a participant id, "tie", or None without a verdict."""
    verdict = state.verdict
    if verdict is None or not verdict.available:
        return None
    return verdict.winner or TIE


def check_human_verdict(state: DebateState, winner: str | None, scores: dict[str, Any], note: str
                        ) -> tuple[str | None, dict[str, float], str]:
    """A person's verdict made valid, or ValueError naming the field."""
    ids = {p.id for p in state.config.participants if p.position != "moderator"}
    if winner in ("", TIE):
        winner = None
    if winner is not None and winner not in ids:
        raise ValueError(f"winner: {winner!r} is not a participant of this debate")
    criteria = set(state.config.judge.criteria)
    clean: dict[str, float] = {}
    for name, value in scores.items():
        if name not in criteria:
            raise ValueError(f"scores: {name!r} is not a criterion of this debate")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"scores.{name}: give a number from 0 to 100") from None
        if not 0 <= number <= 100:
            raise ValueError(f"scores.{name}: {number:g} is outside 0–100")
        clean[name] = number
    if len(note) > 2000:
        raise ValueError("note: at most 2000 characters")
    return winner, clean, note.strip()


def summary(state: DebateState, tallies: dict[Stage, Tally], verdicts: list[HumanVerdict]) -> dict[str, Any]:
    """What `show --json` and the exports carry: `audience` (None for a debate without sides),
    `human_verdicts` and `people_verdict` (the majority, its count, whether the AI agrees)."""
    out: dict[str, Any] = {"audience": None}
    if has_vote(state):
        res = result(tallies)
        out["audience"] = res.model_dump() | {"winner_participant": audience_winner_id(state, res)}
    out["human_verdicts"] = [v.model_dump(mode="json") for v in verdicts]
    majority, count = people_majority(verdicts)
    ai = ai_winner(state)
    out["people_verdict"] = {"winner": majority, "count": count,
                             "agrees_with_judges": None if majority is None or ai is None else majority == ai}
    return out


async def read_people(store: EventStore, state: DebateState) -> dict[str, Any]:
    """`summary` read from `store` (for `show --json`, the exports and the API)."""
    people = AudienceStore(store)
    return summary(state, await people.tally(state.id), await people.verdicts(state.id))
