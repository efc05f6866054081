"""Head-to-head records: for each pair of models, wins, losses and ties, how often the judge panel
split, and which debates they are (the drill-down of a matrix cell)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from webapp.results.records import DebateResult


class PairRecord(BaseModel):
    """Two models' record against each other, from `a`'s side (`a` < `b` alphabetically)."""

    a: str
    b: str
    wins: int = 0  # a's wins
    losses: int = 0
    ties: int = 0
    split: int = 0  # debates whose judge panel disagreed
    debates: list[str] = []  # debate ids, oldest first

    @property
    def total(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def split_share(self) -> float:
        return self.split / self.total if self.total else 0.0

    def seen_from(self, model: str) -> tuple[int, int, int]:
        """(wins, losses, ties) of `model` in this pair."""
        return (self.wins, self.losses, self.ties) if model == self.a else (self.losses, self.wins, self.ties)

    def public(self) -> dict[str, object]:
        return {**self.model_dump(), "split_share": self.split_share}


def head_to_head(results: Iterable[DebateResult]) -> list[PairRecord]:
    """One record per pair of models that met (debates of a model against itself are left out)."""
    tallies: dict[tuple[str, str], list[Any]] = {}  # wins, losses, ties, split, debate ids (plain: fast)
    for r in results:
        if r.a == r.b:
            continue
        key = (r.a, r.b) if r.a < r.b else (r.b, r.a)
        tally = tallies.get(key)
        if tally is None:
            tally = tallies[key] = [0, 0, 0, 0, []]
        score = r.score if key[0] == r.a else 1.0 - r.score
        tally[0 if score > 0.5 else 1 if score < 0.5 else 2] += 1
        tally[3] += r.split
        tally[4].append(r.debate_id)
    return [PairRecord(a=a, b=b, wins=t[0], losses=t[1], ties=t[2], split=t[3], debates=t[4])
            for (a, b), t in sorted(tallies.items())]
