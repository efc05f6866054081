"""The audience's votes, the people's verdicts and the "after" vote's closing time (migration
`018_audience`), on either store: SQL both databases accept, `?` placeholders (`webapp.store.sql`).

A vote is keyed by (debate, stage, voter) and a verdict by (debate, voter): casting again replaces the
earlier one in the same statement (`ON CONFLICT … DO UPDATE`), so a reload, a second tab or a second
web instance can change a person's vote but never add one. Whether a stage is open is decided by the
caller (`webapp.engine.audience`) from the debate's log and `after_closes_at` here.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from webapp.models import utcnow
from webapp.store.protocol import EventStore
from webapp.store.sql import runner

Stage = Literal["before", "after"]
Choice = Literal["for", "against", "undecided"]
STAGES: tuple[Stage, ...] = ("before", "after")
CHOICES: tuple[Choice, ...] = ("for", "against", "undecided")

_VOTE = """INSERT INTO audience_votes (debate_id, stage, voter, choice, at) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (debate_id, stage, voter) DO UPDATE SET choice = excluded.choice, at = excluded.at"""
_VERDICT = """INSERT INTO human_verdicts (debate_id, voter, winner, scores, note, at) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (debate_id, voter) DO UPDATE SET winner = excluded.winner, scores = excluded.scores,
    note = excluded.note, at = excluded.at"""
_WINDOW = """INSERT INTO audience_windows (debate_id, after_closes_at, changed_by) VALUES (?, ?, ?)
    ON CONFLICT (debate_id) DO UPDATE SET after_closes_at = excluded.after_closes_at,
    changed_by = excluded.changed_by"""


class Tally(BaseModel):
    """How many people chose each answer in one stage."""

    for_: int = Field(default=0, alias="for")
    against: int = 0
    undecided: int = 0

    model_config = {"populate_by_name": True}

    @property
    def total(self) -> int:
        return self.for_ + self.against + self.undecided

    def public(self) -> dict[str, int]:
        return {"for": self.for_, "against": self.against, "undecided": self.undecided}


class HumanVerdict(BaseModel):
    """One person's verdict: the winner's participant id (None: a tie), 0–100 per criterion, a note."""

    by: str
    winner: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    note: str = ""
    at: datetime


class AudienceStore:
    """The audience tables of one store."""

    def __init__(self, store: EventStore) -> None:
        self.store = runner(store)

    # --- votes ---------------------------------------------------------------------------------

    async def vote(self, debate_id: str, stage: Stage, voter: str, choice: Choice) -> None:
        """Record (or change) `voter`'s answer in `stage`."""
        if stage not in STAGES:
            raise ValueError(f"stage: {stage!r} is not one of {', '.join(STAGES)}")
        if choice not in CHOICES:
            raise ValueError(f"choice: {choice!r} is not one of {', '.join(CHOICES)}")
        async with self.store.transaction() as tx:
            await tx.execute(_VOTE, (debate_id, stage, voter, choice, utcnow().isoformat()))

    async def tally(self, debate_id: str) -> dict[Stage, Tally]:
        """Both stages' counts (zeros for a stage without votes)."""
        rows = await self.store.fetchall(
            "SELECT stage, choice, count(*) FROM audience_votes WHERE debate_id = ? GROUP BY stage, choice",
            (debate_id,))
        counts: dict[Stage, dict[str, int]] = {stage: {} for stage in STAGES}
        for stage, choice, n in rows:
            counts[stage][str(choice)] = int(n)
        return {stage: Tally.model_validate(counts[stage]) for stage in STAGES}

    async def votes_of(self, debate_id: str, voter: str) -> dict[Stage, Choice]:
        """What `voter` chose in each stage they voted in."""
        rows = await self.store.fetchall(
            "SELECT stage, choice FROM audience_votes WHERE debate_id = ? AND voter = ?", (debate_id, voter))
        return {r[0]: r[1] for r in rows}

    # --- the after vote's window -----------------------------------------------------------------

    async def set_after_closes(self, debate_id: str, closes_at: float, by: str) -> None:
        """Close the after vote at `closes_at` (seconds since the epoch): now to close it early, later to
        reopen it."""
        async with self.store.transaction() as tx:
            await tx.execute(_WINDOW, (debate_id, float(closes_at), by))

    async def after_closes(self, debate_id: str) -> float | None:
        """When an operator set the after vote to close (None: the default window applies)."""
        row = await self.store.fetchone("SELECT after_closes_at FROM audience_windows WHERE debate_id = ?",
                                        (debate_id,))
        return float(row[0]) if row else None

    # --- people's verdicts -------------------------------------------------------------------------

    async def set_verdict(self, debate_id: str, voter: str, winner: str | None, scores: dict[str, float],
                          note: str = "") -> HumanVerdict:
        verdict = HumanVerdict(by=voter, winner=winner, scores=scores, note=note, at=utcnow())
        async with self.store.transaction() as tx:
            await tx.execute(_VERDICT, (debate_id, voter, winner, json.dumps(scores, sort_keys=True), note,
                                        verdict.at.isoformat()))
        return verdict

    async def verdicts(self, debate_id: str) -> list[HumanVerdict]:
        rows = await self.store.fetchall(
            "SELECT voter, winner, scores, note, at FROM human_verdicts WHERE debate_id = ? ORDER BY at, voter",
            (debate_id,))
        return [_verdict(r) for r in rows]

    async def all_verdicts(self) -> dict[str, list[HumanVerdict]]:
        """Every debate's people's verdicts (for judge health and the leaderboard)."""
        rows = await self.store.fetchall(
            "SELECT debate_id, voter, winner, scores, note, at FROM human_verdicts ORDER BY debate_id, at, voter")
        out: dict[str, list[HumanVerdict]] = {}
        for r in rows:
            out.setdefault(str(r[0]), []).append(_verdict(r[1:]))
        return out

    async def all_tallies(self) -> dict[str, dict[Stage, Tally]]:
        """Every debate's vote counts (for the leaderboard rated by the audience)."""
        rows = await self.store.fetchall(
            "SELECT debate_id, stage, choice, count(*) FROM audience_votes GROUP BY debate_id, stage, choice")
        counts: dict[str, dict[Stage, dict[str, int]]] = {}
        for debate_id, stage, choice, n in rows:
            counts.setdefault(str(debate_id), {s: {} for s in STAGES})[stage][str(choice)] = int(n)
        return {d: {s: Tally.model_validate(c[s]) for s in STAGES} for d, c in counts.items()}


def _verdict(r: tuple[Any, ...]) -> HumanVerdict:
    return HumanVerdict(by=r[0], winner=r[1], scores=json.loads(r[2]), note=r[3] or "", at=r[4])
