"""Judge health: how each judge model has behaved across every stored debate.

Derived from the stored verdict events (the last verdict of each debate), never stored itself:

- **parse failures**: rulings that failed (`error`) or needed more than one reply (`parse_failures`),
  out of all its rulings;
- **order**: of the rulings that named a winner and recorded the order the judge saw the participants
  in (`order`), how often the winner was the one presented first, and second;
- **swap**: of the rulings re-judged with the order reversed (`flipped` is not None), how often the
  winner flipped;
- **agreement** with the other judges of the same debates: each pair of usable rulings on one debate
  is compared — the share of identical winners, and Cohen's kappa over the winners' positions ("pro",
  "con", …, "tie"), which discounts the agreement two judges would reach by chance;
- **agreement with the people**: over the debates people gave verdicts on (`webapp.store.audience`), how
  often the judge's winner was the people's majority (`webapp.engine.audience.people_majority`), and
  Cohen's kappa over the positions, as between judges.

A judge is flagged **unreliable** (`JudgeStats.unreliable`, shown on its verdict cards and in the
leaderboard's judge filter) when more than 20 % of its rulings failed or needed a repair, or when its
winner changed in more than 50 % of the debates re-judged with the sides swapped — but only with enough
data (`RELIABILITY_RULE`): one bad debate does not brand a judge.

`JudgeHealth(store).report()` caches the figures until a verdict is stored or a debate deleted.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from webapp.engine.audience import people_majority
from webapp.models import JudgeRuling, Verdict
from webapp.store.audience import AudienceStore
from webapp.store.protocol import EventStore

TIE = "tie"
# Small models, honestly: where a judge's verdicts are shown, a judge that cannot be trusted says so.
UNRELIABLE_FAILURE_RATE = 0.20  # above this share of rulings failed or needing a repair
UNRELIABLE_FLIP_RATE = 0.50  # above this share of sides-swapped re-judgings changing the winner
MIN_DEBATES = 3  # never from fewer debates than this
MIN_RULINGS = 5  # rulings before the failure rate counts
MIN_REJUDGED = 3  # sides-swapped re-judgings before the flip rate counts
RELIABILITY_RULE = (f"judged only with enough data: at least {MIN_DEBATES} debates, and {MIN_RULINGS} rulings for "
                    f"the failure rate or {MIN_REJUDGED} sides-swapped re-judgings for the flip rate")


def cohen_kappa(pairs: Iterable[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items; None when it is undefined (no items, or
    both raters always gave one and the same label, so chance explains everything)."""
    items = list(pairs)
    if not items:
        return None
    n = len(items)
    observed = sum(a == b for a, b in items) / n
    left, right = Counter(a for a, _ in items), Counter(b for _, b in items)
    expected = sum(left[label] * right[label] for label in left) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


class JudgeStats(BaseModel):
    """One judge model's figures; the rates are None where nothing was there to count."""

    judge: str
    debates: int = 0
    rulings: int = 0
    failed: int = 0
    ordered: int = 0  # rulings with a winner whose presentation order is known
    picked_first: int = 0
    picked_second: int = 0
    ties: int = 0
    rejudged: int = 0
    flipped: int = 0
    compared: int = 0  # comparisons with another judge's ruling on the same debate
    agreed: int = 0
    kappa: float | None = None
    people_debates: int = 0  # its usable rulings on debates with people's verdicts
    people_agreed: int = 0  # … that named the people's majority winner
    people_kappa: float | None = None

    @property
    def people_agreement(self) -> float | None:
        return _rate(self.people_agreed, self.people_debates)

    @property
    def failure_rate(self) -> float | None:
        return _rate(self.failed, self.rulings)

    @property
    def first_rate(self) -> float | None:
        return _rate(self.picked_first, self.ordered)

    @property
    def second_rate(self) -> float | None:
        return _rate(self.picked_second, self.ordered)

    @property
    def flip_rate(self) -> float | None:
        return _rate(self.flipped, self.rejudged)

    @property
    def agreement(self) -> float | None:
        return _rate(self.agreed, self.compared)

    def unreliable(self) -> list[str]:
        """Why this judge's verdicts are unreliable, each with its figure; empty when they are not, or when
        there is too little data to say (`RELIABILITY_RULE`)."""
        if self.debates < MIN_DEBATES:
            return []
        reasons = []
        failures, flips = self.failure_rate, self.flip_rate
        if self.rulings >= MIN_RULINGS and failures is not None and failures > UNRELIABLE_FAILURE_RATE:
            reasons.append(f"{failures:.0%} of its rulings failed to parse or needed a repair "
                           f"({self.failed} of {self.rulings})")
        if self.rejudged >= MIN_REJUDGED and flips is not None and flips > UNRELIABLE_FLIP_RATE:
            reasons.append(f"its winner flipped when the sides were swapped in {flips:.0%} of re-judged debates "
                           f"({self.flipped} of {self.rejudged})")
        return reasons

    def unreliable_note(self) -> str | None:
        """"Unreliable judge: …" with the figures, or None."""
        reasons = self.unreliable()
        return f"Unreliable judge: {'; '.join(reasons)}" if reasons else None

    def public(self) -> dict[str, Any]:
        """The figures and their rates, as `judges --json` prints them."""
        return {**self.model_dump(), "failure_rate": self.failure_rate, "first_rate": self.first_rate,
                "second_rate": self.second_rate, "flip_rate": self.flip_rate, "agreement": self.agreement,
                "people_agreement": self.people_agreement, "unreliable": self.unreliable()}


class PairStats(BaseModel):
    """Two judges on the debates both ruled on."""

    judges: tuple[str, str]
    debates: int
    agreed: int
    kappa: float | None

    @property
    def agreement(self) -> float | None:
        return _rate(self.agreed, self.debates)

    def public(self) -> dict[str, Any]:
        return {**self.model_dump(), "agreement": self.agreement}


class HealthReport(BaseModel):
    debates: int  # debates with a verdict
    judges: list[JudgeStats]
    pairs: list[PairStats]

    def public(self) -> dict[str, Any]:
        return {"debates": self.debates, "judges": [j.public() for j in self.judges],
                "pairs": [p.public() for p in self.pairs]}

    def unreliable_notes(self) -> dict[str, str]:
        """judge → its "Unreliable judge: …" note, for the judges that have one."""
        return {j.judge: note for j in self.judges if (note := j.unreliable_note()) is not None}


@dataclass
class _Tally:
    stats: JudgeStats
    debates: set[str] = field(default_factory=set)
    labels: list[tuple[str, str]] = field(default_factory=list)  # (this judge's, the other's) per comparison
    people: list[tuple[str, str]] = field(default_factory=list)  # (this judge's, the people's) per debate


def _usable(ruling: JudgeRuling) -> bool:
    return ruling.error is None


def health(verdicts: Iterable[tuple[str, Verdict, dict[str, str]]],
           people: dict[str, str] | None = None) -> HealthReport:
    """The report from (debate id, its verdict, participant id -> position) of each judged debate, and
    `people`: debate id -> the people's majority winner (a participant id, or "tie")."""
    people = people or {}
    tallies: dict[str, _Tally] = {}
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    debates = 0

    def tally(judge: str) -> _Tally:
        if judge not in tallies:
            tallies[judge] = _Tally(JudgeStats(judge=judge))
        return tallies[judge]

    for debate_id, verdict, positions in verdicts:
        debates += 1

        def label(winner: str | None, positions: dict[str, str] = positions) -> str:
            return TIE if winner is None else positions.get(winner, winner)

        for ruling in verdict.rulings:
            t = tally(ruling.judge)
            s = t.stats
            t.debates.add(debate_id)
            s.rulings += 1
            if ruling.error is not None or ruling.parse_failures > 0:
                s.failed += 1
            if not _usable(ruling):
                continue
            if ruling.winner is None:
                s.ties += 1
            elif ruling.winner in ruling.order:
                s.ordered += 1
                place = ruling.order.index(ruling.winner)
                s.picked_first += place == 0
                s.picked_second += place == 1
            if ruling.flipped is not None:
                s.rejudged += 1
                s.flipped += bool(ruling.flipped)
            majority = people.get(debate_id)
            if majority is not None:
                s.people_debates += 1
                s.people_agreed += (ruling.winner or TIE) == majority
                t.people.append((label(ruling.winner), label(None if majority == TIE else majority)))
        usable = [r for r in verdict.rulings if _usable(r)]
        for a in usable:
            for b in usable:
                if a.judge == b.judge:
                    continue
                t = tally(a.judge)
                t.stats.compared += 1
                t.stats.agreed += a.winner == b.winner
                t.labels.append((label(a.winner), label(b.winner)))
                if a.judge < b.judge:
                    pairs.setdefault((a.judge, b.judge), []).append((label(a.winner), label(b.winner)))
    judges = []
    for t in tallies.values():
        t.stats.debates = len(t.debates)
        t.stats.kappa = cohen_kappa(t.labels)
        t.stats.people_kappa = cohen_kappa(t.people)
        judges.append(t.stats)
    judges.sort(key=lambda s: (-s.rulings, s.judge))
    pair_stats = [PairStats(judges=key, debates=len(labels), agreed=sum(x == y for x, y in labels),
                            kappa=cohen_kappa(labels)) for key, labels in sorted(pairs.items())]
    return HealthReport(debates=debates, judges=judges, pairs=pair_stats)


async def people_majorities(store: EventStore) -> dict[str, str]:
    """debate id -> the people's majority winner (participant id or "tie"), for debates with verdicts."""
    out: dict[str, str] = {}
    for debate_id, verdicts in (await AudienceStore(store).all_verdicts()).items():
        majority, _ = people_majority(verdicts)
        if majority is not None:
            out[debate_id] = majority
    return out


async def stored_verdicts(store: EventStore) -> list[tuple[str, Verdict, dict[str, str]]]:
    """The last verdict of every debate, with its participants' positions; unreadable ones are left out."""
    last: dict[str, tuple[int, str, str | None]] = {}
    for debate_id, seq, data, participants in await store.verdicts.events():
        if debate_id not in last or seq > last[debate_id][0]:  # a later verdict replaces an earlier one
            last[debate_id] = (seq, data, participants)
    out = []
    for debate_id, (_, data, participants) in sorted(last.items()):
        try:
            verdict = Verdict.model_validate(json.loads(data).get("verdict") or {})
            positions = {str(p.get("id")): str(p.get("position")) for p in json.loads(participants or "[]")}
        except (ValueError, ValidationError, AttributeError):
            continue
        out.append((debate_id, verdict, positions))
    return out


class JudgeHealth:
    """The report for one store, recomputed only when the stored verdicts changed."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._marker: tuple[Any, ...] | None = None
        self._report: HealthReport | None = None
        self._pending: asyncio.Future[HealthReport] | None = None

    async def report(self) -> HealthReport:
        """The current report. Callers arriving while one is being read share it: every spectator's page
        of a debate asks at the moment its verdict arrives, and one check (and recomputation) serves all."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._read())
            self._pending.add_done_callback(self._done)
        return await asyncio.shield(self._pending)

    def _done(self, future: asyncio.Future[HealthReport]) -> None:
        if self._pending is future:
            self._pending = None

    async def _read(self) -> HealthReport:
        marker = await self.store.verdicts.marker()
        if self._report is None or marker != self._marker:
            self._report = health(await stored_verdicts(self.store), await people_majorities(self.store))
            self._marker = marker
        return self._report


_reports: weakref.WeakKeyDictionary[EventStore, JudgeHealth] = weakref.WeakKeyDictionary()


def judge_health(store: EventStore) -> JudgeHealth:
    """The one cached `JudgeHealth` of a store (the /judges page and the CLI use it)."""
    if store not in _reports:
        _reports[store] = JudgeHealth(store)
    return _reports[store]


async def unreliable_judges(store: EventStore) -> dict[str, str]:
    """judge → its "Unreliable judge: …" note, for every judge that has one (from the cached report)."""
    return (await judge_health(store).report()).unreliable_notes()
