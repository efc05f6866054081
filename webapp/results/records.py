"""The result of each completed, judged two-sided debate, read from the stored verdicts in ONE query.

Reading 10,000 debates' logs to find their verdicts would take seconds, and even parsing 10,000 verdict
events (reasoning and all) most of one: a trigger keeps a digest of each debate's last verdict in
`verdict_digests` (migration 010_verdict_digests, on either store: the parts a result needs, i.e.
availability, winner, word counts and each ruling's judge, winner, whether it failed and whether it
flipped), and one query of the store joins them to the listing rows (`EventStore.verdicts.results`).
The digest is derived from the log; `rebuild_digests` makes it again from the events.

Who won follows the outcome card (`webapp.ui.components.outcome`): a panel whose judges disagree
gives the majority's pick, and no majority is a split, rated as a tie; otherwise the verdict's winner
(None: a tie). A debate counts when it completed, its verdict is available, exactly two debaters took
part (a moderator is not a side), and it was a contest: a collaborative debate's synthesis or a
convergence debate's agreement has no winner.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from webapp.engine.formats import FORMATS
from webapp.store.protocol import EventStore
from webapp.store.verdicts import ResultRow

MODERATOR = "moderator"

@dataclass(frozen=True)
class DebateResult:
    """One rated debate: the two sides' models (provider:model), A's score (1 won, 0 lost, ½ tie)
    and what the filters and the head-to-head need."""

    debate_id: str
    topic: str
    created_at: datetime
    format: str
    a: str
    b: str
    score: float
    split: bool  # the judge panel disagreed
    words_a: int
    words_b: int
    cost_usd: float
    tags: tuple[str, ...] = ()
    judges: tuple[str, ...] = ()
    series: str | None = None  # the series id (its first debate's id) when the debate belongs to one

    @property
    def series_key(self) -> str:
        """The series this debate belongs to, or its own id: the first debate of a series names it."""
        return self.series or self.debate_id

    def score_of(self, model: str) -> float:
        return self.score if model == self.a else 1.0 - self.score


def model_label(participant: dict[str, Any]) -> str:
    return f"{participant.get('provider') or '?'}:{participant.get('model') or '?'}"


def decision(winner: str | None, rulings: Sequence[Mapping[str, Any]],
             undecided: Iterable[str] = ()) -> tuple[str | None, bool]:
    """(the winning participant id or None for a tie, whether the panel split), as the outcome card
    reads a verdict (`panel_tally`): judges that failed or flipped on swap are left out of a panel's
    count; a panel that disagrees gives its majority's pick, and no majority is a split (a tie)."""
    if len(rulings) >= 2:
        left_out = set(undecided)
        picks = Counter(r.get("winner") for r in rulings
                        if not r.get("error") and not r.get("flipped") and r.get("judge") not in left_out).most_common()
        if sum(n for _, n in picks) >= 2 and len(picks) > 1:
            majority = picks[0][1] > picks[1][1]
            return (picks[0][0] if majority else None), True
    return winner, False


def _contest(format_id: str, evaluation: str | None) -> bool:
    """Whether a format's debates have a winner (not a synthesis, not a convergence)."""
    fmt = FORMATS.get(format_id)
    if fmt is None:
        return True
    if fmt.judge_synthesis:
        return False
    kind = (evaluation or "quality") if fmt.termination.configurable else fmt.termination.kind
    return kind != "convergence"


def _result(row: ResultRow) -> DebateResult | None:
    (debate_id, topic, created_at, format_id, participants, cost, tags, series, evaluation, digest) = row
    if not _contest(format_id, evaluation):
        return None
    try:
        cast = [p for p in json.loads(participants or "[]") if p.get("position") != MODERATOR]
        verdict = json.loads(digest)
        tag_list = tuple(str(t) for t in json.loads(tags)) if tags else ()
        rulings = list(verdict.get("rulings") or [])
        words = dict(verdict.get("word_counts") or {})
    except (ValueError, AttributeError, TypeError):
        return None  # an unreadable row is left out, as judge health does
    if len(cast) != 2 or not verdict.get("available", True) or verdict.get("synthesis"):
        return None
    first, second = (str(p.get("id")) for p in cast)
    winner, split = decision(verdict.get("winner"), rulings, verdict.get("undecided_judges") or ())
    if winner is not None and winner not in (first, second):
        return None
    score = 0.5 if winner is None else (1.0 if winner == first else 0.0)
    return DebateResult(
        debate_id=debate_id, topic=topic, created_at=datetime.fromisoformat(created_at), format=format_id,
        a=model_label(cast[0]), b=model_label(cast[1]), score=score, split=split,
        words_a=int(words.get(first) or 0), words_b=int(words.get(second) or 0),
        cost_usd=float(cost or 0.0), tags=tag_list, judges=tuple(dict.fromkeys(str(r.get("judge")) for r in rulings)),
        series=series or None,
    )


async def load_results(store: EventStore,
                       memo: dict[ResultRow, DebateResult | None] | None = None) -> list[DebateResult]:
    """Every rated debate, oldest first (the last verdict of each). `memo` (kept by the caller between
    loads) maps rows read before to their result: after a new verdict only the changed rows are parsed."""
    rows = await store.verdicts.results()
    if memo is None:
        results = [r for r in map(_result, rows) if r is not None]
    else:
        known = dict(memo)
        memo.clear()
        for row in rows:
            memo[row] = known[row] if row in known else _result(row)
        results = [r for r in memo.values() if r is not None]
    results.sort(key=lambda r: (r.created_at, r.debate_id))
    return results


async def rebuild_digests(store: EventStore) -> int:
    """Make `verdict_digests` again from the stored verdict events; returns how many debates it holds."""
    return await store.verdicts.rebuild_digests()
