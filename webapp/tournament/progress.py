"""Where a tournament stands, read from the store: its debates done out of all slots, the money spent and
held back for the debates still running, an estimate of the time left, the standings per model, and the
words of a budget stop (figures that add up: spent + reserved + left = budget).

Nothing here changes anything; the tournament's page, the CLI, the HTTP API and the runner read it.
`TournamentCompleted` is what a runner announces on `Engine.notices` when a tournament has played every
debate (the webhook relay hears it and queues `tournament.completed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from webapp.engine.machine import TERMINAL_STATES
from webapp.settings import Settings
from webapp.tournament.plan import Slot, Tournament, estimate_debate, schedule
from webapp.tournament.store import SlotDebate, TournamentRow, TournamentStore

TERMINAL = frozenset(s.value for s in TERMINAL_STATES)


@dataclass(frozen=True)
class TournamentCompleted:
    """A tournament played every debate (a notice on `Engine.notices`): what its webhook says."""

    tournament_id: str
    name: str
    at: datetime
    debates: int
    cost_usd: float
    leader: str | None  # the first of the standings, if anyone played


@dataclass
class Standing:
    """One model's results in the tournament's finished, judged debates."""

    label: str
    wins: int = 0
    losses: int = 0
    ties: int = 0

    @property
    def played(self) -> int:
        return self.wins + self.losses + self.ties

    @property
    def points(self) -> float:
        return self.wins + 0.5 * self.ties


def budget_words(estimate: float, budget: float, spent: float, committed: float) -> str:
    """The figures of a budget stop, named so that they add up: spent + reserved + left = budget."""
    reserved = max(0.0, committed - spent)
    left = max(0.0, budget - committed)
    held = f", ${reserved:.4f} reserved for the debates still running" if reserved > 0 else ""
    whole = f"${budget:.2f}" if budget >= 1 else f"${budget:.4f}"  # a budget under $1 keeps its fraction
    return (f"the next debate may cost up to ${estimate:.4f}, and of the {whole} budget ${spent:.4f} is "
            f"spent{held} and ${left:.4f} is left")


@dataclass
class Progress:
    """Where a tournament stands, read from the store: for its page and the CLI."""

    row: TournamentRow
    slots: list[Slot]
    debates: dict[str, SlotDebate]
    done: int = 0
    spent: float = 0.0
    eta_seconds: float | None = None
    live: list[SlotDebate] = field(default_factory=list)
    committed: float = 0.0  # spent, plus what the running debates may still spend (their hard limits)
    to_finish: float | None = None  # the most the debates not yet played may cost (None: unpriced)

    @property
    def total(self) -> int:
        return len(self.slots)

    @property
    def reserved(self) -> float:
        """Held back for the debates still running: part of the budget, not spent yet."""
        return max(0.0, self.committed - self.spent)

    def left(self, budget: float) -> float:
        return max(0.0, budget - self.committed)

    def add_to_finish(self, budget: float) -> float | None:
        """What to add to the budget so that every debate not played yet fits (None: it fits, or unpriced)."""
        if self.to_finish is None:
            return None
        more = self.to_finish - self.left(budget)
        return more if more > 0 else None


def standings(tournament: Tournament, debates: dict[str, SlotDebate]) -> list[Standing]:
    """Wins, losses and ties per model (a verdict without a winner is a tie; no verdict, no result),
    best first."""
    table = {m.label: Standing(m.label) for m in tournament.models}
    for debate in debates.values():
        if debate.row.status not in TERMINAL or not debate.has_verdict:
            continue
        labels = {p.get("id"): f"{p.get('provider')}:{p.get('model')}" for p in debate.row.participants}
        players = [label for label in labels.values() if label in table]
        if debate.winner is None:
            for label in players:
                table[label].ties += 1
            continue
        winner = labels.get(debate.winner)
        for label in players:
            if label == winner:
                table[label].wins += 1
            else:
                table[label].losses += 1
    return sorted(table.values(), key=lambda s: (-s.points, -s.wins, s.label))


async def progress(store: TournamentStore, row: TournamentRow, settings: Settings | None = None) -> Progress:
    """Debates done out of all slots, money spent, the live debates and an estimate of the time left
    (the mean length of the finished debates, times what is left, over the concurrency)."""
    slots = schedule(row.tournament)
    debates = await store.debates(row.id)
    keys = {slot.key for slot in slots}
    mine = {key: debate for key, debate in debates.items() if key in keys}
    finished = [d for d in mine.values() if d.row.status in TERMINAL]
    result = Progress(row=row, slots=slots, debates=mine, done=len(finished),
                      spent=sum(d.row.cost_usd for d in mine.values()),
                      live=[d for d in mine.values() if d.row.status not in TERMINAL],
                      committed=await store.committed(row.id, TERMINAL))
    if row.tournament.budget_usd is not None:
        estimates = [estimate_debate(row.tournament, slot, settings) for slot in slots if slot.key not in mine]
        result.to_finish = None if any(e is None for e in estimates) else sum(e or 0.0 for e in estimates)
    if finished and result.done < result.total and row.status == "running":
        mean = sum((d.row.updated_at - d.row.created_at).total_seconds() for d in finished) / len(finished)
        result.eta_seconds = mean * (result.total - result.done) / row.tournament.concurrency
    return result
