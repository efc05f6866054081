"""The leaderboard: filters over the rated debates, the Bradley-Terry fit (plain and style-controlled),
per-model records and costs, the head-to-head matrix and the ratings over time; cached.

`await leaderboard(store, LeaderboardFilters(...))` is the public entry (the /leaderboard page, the
`leaderboard` command and any other page that shows a board, e.g. a tournament's, via `debate_ids`).

Results are derived, never stored twice: the rated debates are read from the stored verdicts
(`records.load_results`, one query) when the store's `last_change()` moved, and a board is computed
once per set of results and filters: a running debate's turns move `last_change()` but leave the
results, and so the computed boards, as they were.

A side-swapped series (`DebateConfig.series`) can be rated as ONE comparison (`series_only`): the pair
of models' mean score over the series' debates, so a judge's preference for a side cancels out and a
series counts once, however many rematches it had.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time
from itertools import pairwise
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from webapp.engine.audience import TIE, people_majority, result
from webapp.results.head_to_head import PairRecord, head_to_head
from webapp.results.records import DebateResult, load_results
from webapp.store.audience import AudienceStore
from webapp.store.protocol import EventStore
from webapp.store.verdicts import ResultRow

if TYPE_CHECKING:
    from webapp.results.ratings import Cells

REPS = 100  # bootstrap replicates of the plain fit (LMSYS uses 100 as well)
STYLE_REPS = 50  # of the style-controlled fit (it has more cells: each is a fit on them)
HISTORY_POINTS = 12  # ratings over time: fits at up to this many moments
CACHE_BOARDS = 64


class LeaderboardFilters(BaseModel):
    """Which debates a board is computed over (all filters combine; None: any)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str | None = None
    tag: str | None = None
    judge: str | None = None  # a judge model (provider:model) that ruled on the debate
    since: date | None = None
    until: date | None = None  # inclusive
    series_only: bool = False  # only side-swapped series, each rated once as a pair
    debate_ids: frozenset[str] | None = None  # only these debates (a tournament's)
    # Who decides each debate's winner: the AI judges (the verdict), the audience (the Oxford swing of
    # its vote) or the people's verdicts (their majority); a debate without that decision is left out.
    rated_by: Literal["judges", "audience", "people"] = "judges"

    def keeps(self, r: DebateResult) -> bool:
        if self.format and r.format != self.format:
            return False
        if self.tag and self.tag.lower() not in r.tags:
            return False
        if self.judge and self.judge not in r.judges:
            return False
        if self.since and r.created_at < datetime.combine(self.since, time.min, r.created_at.tzinfo):
            return False
        if self.until and r.created_at > datetime.combine(self.until, time.max, r.created_at.tzinfo):
            return False
        return self.debate_ids is None or r.debate_id in self.debate_ids


class ModelRating(BaseModel):
    """One model's line on the board."""

    model: str
    rank: int
    rating: float
    low: float  # 95% bootstrap interval
    high: float
    debates: int  # rated comparisons: debates, or series with `series_only`
    wins: int
    losses: int
    ties: int
    avg_cost_usd: float  # mean cost of its debates (the whole debate: both sides and the judges)


class StyleView(BaseModel):
    """The fit with the word-count difference as a covariate (style control): the ratings once
    verbosity is accounted for, and what length itself is worth."""

    ratings: list[ModelRating]
    # Effect on the log-odds of winning of saying all the words (normalised difference +1); > 0: longer wins.
    length_effect: float | None
    length_low: float | None
    length_high: float | None


# Below this many rated comparisons a fitted coefficient (the length effect) is not a result: "too few".
MIN_FOR_STYLE = 10
CLEAR = 0.9  # a pair's order is "clear" when one side is rated above in this share of bootstrap replicates
Z_CLEAR = 1.2816  # the normal quantile of CLEAR: how far the evidence must go
MORE_CAP = 200


class PairWords(BaseModel):
    """One line in words about two models next to each other on the board, for a team lead to act on."""

    a: str  # the higher-rated model
    b: str
    share: float | None  # of bootstrap replicates with a rated above b
    debates: int  # rated comparisons involving either model
    clear: bool
    more: int | None  # about how many more debates would tell (None: clear, or no estimate)
    words: str


def pair_words(a: str, b: str, share: float | None, debates: int) -> PairWords:
    """"a beats b in 92 % of bootstrap samples (8 debates)", or "no clear difference yet — about N more
    debates would tell" (the normal approximation: the evidence grows with the square root of the
    debates, so reaching CLEAR from a share p needs n·(z(CLEAR)/z(p))² debates in all)."""
    n = f"{debates} debate{'s' if debates != 1 else ''}"
    if share is None:
        return PairWords(a=a, b=b, share=None, debates=debates, clear=False, more=None,
                         words=f"{a} and {b}: too few debates to compare (n = {debates})")
    if share >= CLEAR:
        return PairWords(a=a, b=b, share=share, debates=debates, clear=True, more=None,
                         words=f"{a} beats {b} in {share:.0%} of bootstrap samples ({n})".replace("%", " %"))
    z = NormalDist().inv_cdf(min(max(share, 0.55), 0.999))
    more = max(1, math.ceil(debates * (Z_CLEAR / z) ** 2) - debates)
    about = f"more than {MORE_CAP}" if more > MORE_CAP else f"about {more}"
    return PairWords(a=a, b=b, share=share, debates=debates, clear=False, more=min(more, MORE_CAP + 1),
                     words=f"{a} vs {b}: no clear difference yet ({a} ahead in {share:.0%} of bootstrap samples, "
                           f"{n}) — {about} more debates would tell".replace("%", " %"))


class DebateBrief(BaseModel):
    """What a head-to-head cell's list says about one debate."""

    topic: str
    a: str
    b: str
    score: float  # a's: 1 won, 0 lost, ½ tie
    split: bool
    created_at: datetime


class HistoryPoint(BaseModel):
    """The ratings (point fits, no intervals) over the comparisons up to `at`."""

    at: datetime
    ratings: dict[str, float]


class Leaderboard(BaseModel):
    """A computed board (`public()` is what `leaderboard --json` prints)."""

    filters: LeaderboardFilters
    unit: str  # "debate" or "series"
    comparisons: int
    debates: int
    ratings: list[ModelRating]
    style: StyleView
    words: list[PairWords] = []  # one line per neighbouring pair of the plain ratings, best first
    pairs: list[PairRecord]
    history: list[HistoryPoint]
    computed_at: datetime
    # The rated debates by id, for a head-to-head cell's list (`brief`); not part of the model's data.
    _results: dict[str, DebateResult] = PrivateAttr(default_factory=dict)
    # (a, b) -> the share of bootstrap replicates rating a above b, and each comparison's two models:
    # what `words_for` says about any two models of the board, in any order.
    _beats: dict[tuple[str, str], float] = PrivateAttr(default_factory=dict)
    _compared: list[tuple[str, str]] = PrivateAttr(default_factory=list)

    def words_for(self, order: Sequence[str]) -> list[PairWords]:
        """One line in words per neighbouring pair of `order` (models the board did not rate are left
        out), the one ahead named first: the board's own lines (`words`, in rating order) or, say, a
        tournament's standings in the order of its table."""
        rated = {m for pair in self._compared for m in pair}
        out = []
        for upper, lower in pairwise([m for m in order if m in rated]):
            share = self._beats.get((upper, lower))
            if share is not None and share < 0.5:  # the fit puts the lower one ahead: say it that way round
                upper, lower, share = lower, upper, 1 - share
            involved = sum(1 for pair in self._compared if {upper, lower} & set(pair))
            out.append(pair_words(upper, lower, share, involved))
        return out

    def brief(self, debate_id: str) -> DebateBrief | None:
        """What a head-to-head list says about one of the board's debates."""
        r = self._results.get(debate_id)
        if r is None:
            return None
        return DebateBrief(topic=r.topic, a=r.a, b=r.b, score=r.score, split=r.split, created_at=r.created_at)

    def pair(self, a: str, b: str) -> PairRecord | None:
        x, y = sorted((a, b))
        return next((p for p in self.pairs if p.a == x and p.b == y), None)

    def public(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"pairs"})
        data["filters"]["debate_ids"] = sorted(self.filters.debate_ids) if self.filters.debate_ids else None
        data["pairs"] = [p.public() for p in self.pairs]
        return data


@dataclass(slots=True)
class _Unit:
    """One rated comparison: a debate, or a series rated as a pair."""

    a: str
    b: str
    score: float
    words_a: int
    words_b: int
    at: datetime
    debates: tuple[str, ...]


def units(results: Sequence[DebateResult], series_only: bool) -> list[_Unit]:
    """The comparisons to rate: each debate between two different models, or (series_only) each
    side-swapped series of two or more debates between one pair, with the pair's mean score."""
    if not series_only:
        return [_Unit(r.a, r.b, r.score, r.words_a, r.words_b, r.created_at, (r.debate_id,))
                for r in results if r.a != r.b]
    groups: dict[str, list[DebateResult]] = defaultdict(list)
    for r in results:
        groups[r.series_key].append(r)
    out = []
    for members in groups.values():
        models = {frozenset((r.a, r.b)) for r in members}
        if len(members) < 2 or len(models) != 1 or len(next(iter(models))) != 2:
            continue
        a, b = sorted(next(iter(models)))
        score = sum(r.score_of(a) for r in members) / len(members)
        words_a = sum(r.words_a if r.a == a else r.words_b for r in members)
        words_b = sum(r.words_b if r.a == a else r.words_a for r in members)
        out.append(_Unit(a, b, score, words_a, words_b, max(r.created_at for r in members),
                         tuple(r.debate_id for r in members)))
    out.sort(key=lambda u: u.at)
    return out


def _style(u: _Unit) -> float:
    total = u.words_a + u.words_b
    return (u.words_a - u.words_b) / total if total else 0.0


def _history(rated: list[_Unit], grid: Cells, models: list[str]) -> list[HistoryPoint]:
    """Point ratings on the comparisons up to each of a few moments (no intervals: a trend line)."""
    from webapp.results.ratings import point_ratings  # late: numpy and scipy, on the first board (see `compute`)

    if not rated:
        return []
    step = max(1, len(rated) // HISTORY_POINTS)
    cuts = sorted({*range(step, len(rated), step), len(rated)})[-HISTORY_POINTS:]
    first_seen: dict[str, int] = {}
    for position, u in enumerate(rated):
        first_seen.setdefault(u.a, position)
        first_seen.setdefault(u.b, position)
    points = []
    for cut in cuts:
        ratings = point_ratings(grid, len(models), cut)
        points.append(HistoryPoint(at=rated[cut - 1].at, ratings={
            m: round(float(ratings[i]), 1) for i, m in enumerate(models) if first_seen[m] < cut}))
    return points


def compute(results: Sequence[DebateResult], filters: LeaderboardFilters, *, reps: int = REPS,
            style_reps: int = STYLE_REPS) -> Leaderboard:
    """The board for `filters` over `results` (CPU only: no store)."""
    # numpy and scipy load on the first board, not with the app (they take a second or more to import).
    from webapp.results.ratings import Comparison, cells, fit

    chosen = [r for r in results if filters.keeps(r)]
    rated = units(chosen, filters.series_only)
    models = sorted({m for u in rated for m in (u.a, u.b)})
    index = {m: i for i, m in enumerate(models)}
    comparisons = [Comparison(index[u.a], index[u.b], u.score, _style(u)) for u in rated]
    plain = fit(comparisons, len(models), reps=reps)
    styled = fit(comparisons, len(models), with_style=True, reps=style_reps)
    record: dict[str, list[int]] = {m: [0, 0, 0] for m in models}  # wins, losses, ties
    for u in rated:
        for model in (u.a, u.b):
            s = u.score if model == u.a else 1 - u.score
            record[model][0 if s > 0.5 else 1 if s < 0.5 else 2] += 1
    costs: dict[str, list[float]] = {m: [] for m in models}
    counted = {debate_id for u in rated for debate_id in u.debates}
    for r in chosen:
        if r.debate_id in counted:
            costs[r.a].append(r.cost_usd)
            costs[r.b].append(r.cost_usd)

    def lines(board: Any) -> list[ModelRating]:
        order = sorted(range(len(models)), key=lambda i: (-board.ratings[i], models[i]))
        out = []
        for rank, i in enumerate(order, start=1):
            m = models[i]
            wins, losses, ties = record[m]
            spent = costs[m]
            out.append(ModelRating(model=m, rank=rank, rating=round(float(board.ratings[i]), 1),
                                   low=round(float(board.low[i]), 1), high=round(float(board.high[i]), 1),
                                   debates=wins + losses + ties, wins=wins, losses=losses, ties=ties,
                                   avg_cost_usd=sum(spent) / len(spent) if spent else 0.0))
        return out

    ranked = lines(plain)
    # A coefficient fitted on a handful of debates (or with no spread at all) is not a result.
    length = (styled.style, styled.style_low, styled.style_high)
    if len(rated) < MIN_FOR_STYLE or length[1] == length[2]:
        length = (None, None, None)
    board = Leaderboard(
        filters=filters, unit="series" if filters.series_only else "debate", comparisons=len(rated),
        debates=len(counted), ratings=ranked,
        style=StyleView(ratings=lines(styled), length_effect=length[0], length_low=length[1],
                        length_high=length[2]),
        pairs=head_to_head(chosen), history=_history(rated, cells(comparisons), models),
        computed_at=datetime.now().astimezone(),
    )
    board._results = {r.debate_id: r for r in chosen if r.debate_id in counted}
    board._compared = [(u.a, u.b) for u in rated]
    if plain.beats is not None:
        board._beats = {(a, b): float(plain.beats[index[a], index[b]]) for a in models for b in models if a != b}
    board.words = board.words_for([r.model for r in ranked])
    return board


@dataclass
class _Cache:
    """One store's rated debates (as of `marker`) and the boards computed over exactly those."""

    marker: tuple[int, str] | None = None
    results: list[DebateResult] = field(default_factory=list)
    boards: OrderedDict[LeaderboardFilters, Leaderboard] = field(default_factory=OrderedDict)
    rows: dict[ResultRow, DebateResult | None] = field(default_factory=dict)  # parsed rows (`load_results`)
    lock: asyncio.Lock | None = None


_caches: weakref.WeakKeyDictionary[EventStore, _Cache] = weakref.WeakKeyDictionary()


async def rated_debates(store: EventStore) -> list[DebateResult]:
    """The store's rated debates, re-read only when the store changed since the last call."""
    cache = _caches.setdefault(store, _Cache())
    marker = await store.last_change()
    if marker != cache.marker:
        results = await load_results(store, cache.rows)
        if results != cache.results:
            cache.boards.clear()  # a new verdict (or a deletion): every board is stale
            cache.results = results
        cache.marker = marker
    return cache.results


async def _people_decided(store: EventStore, results: list[DebateResult], by: str) -> list[DebateResult]:
    """`results` re-scored by the audience's swing or the people's majority verdict; debates without
    one are left out. The engine's rules decide (`webapp.engine.audience`), as on the debate page."""
    people = AudienceStore(store)
    winners: dict[str, str] = {}  # debate id -> participant id, "tie", or "for"/"against" (the room)
    if by == "people":
        for debate_id, verdicts in (await people.all_verdicts()).items():
            majority, _ = people_majority(verdicts)
            if majority is not None:
                winners[debate_id] = majority
    else:
        for debate_id, tallies in (await people.all_tallies()).items():
            room = result(tallies).winner
            if room is not None:
                winners[debate_id] = room
    wanted = [r for r in results if r.debate_id in winners]
    if not wanted:
        return []
    casts = {debate_id: [p for p in cast if p.get("position") != "moderator"]
             for debate_id, cast in (await store.participants([r.debate_id for r in wanted])).items()}
    out = []
    for r in wanted:
        cast = casts.get(r.debate_id) or []
        if len(cast) != 2:
            continue
        winner = winners[r.debate_id]
        if winner in ("for", "against"):
            side = "pro" if winner == "for" else "con"
            winner = next((str(p.get("id")) for p in cast if p.get("position") == side), "")
        ids = [str(p.get("id")) for p in cast]
        if winner == TIE:
            out.append(replace(r, score=0.5, split=False))
        elif winner in ids:
            out.append(replace(r, score=1.0 if winner == ids[0] else 0.0, split=False))
    return out


async def leaderboard(store: EventStore, filters: LeaderboardFilters | None = None) -> Leaderboard:
    """The board for `filters` (default: every rated debate), from the cache when nothing it depends
    on changed. The fit runs in a worker thread: the event loop keeps serving meanwhile. Boards rated
    by the audience or the people's verdicts are computed afresh (votes are not in the log the cache
    follows)."""
    filters = filters or LeaderboardFilters()
    if filters.rated_by != "judges":
        decided = await _people_decided(store, await rated_debates(store), filters.rated_by)
        return await asyncio.to_thread(compute, decided, filters)
    cache = _caches.setdefault(store, _Cache())
    if cache.lock is None:
        cache.lock = asyncio.Lock()
    async with cache.lock:  # two tabs asking at once compute it once
        results = await rated_debates(store)
        board = cache.boards.get(filters)
        if board is None:
            board = await asyncio.to_thread(compute, results, filters)
            cache.boards[filters] = board
            while len(cache.boards) > CACHE_BOARDS:
                cache.boards.popitem(last=False)
        else:
            cache.boards.move_to_end(filters)
        return board


async def choices(store: EventStore) -> dict[str, list[str]]:
    """What the filters can be set to: the formats, tags, judges and models of the rated debates."""
    results = await rated_debates(store)
    return {
        "formats": sorted({r.format for r in results}),
        "tags": sorted({t for r in results for t in r.tags}),
        "judges": sorted({j for r in results for j in r.judges}),
        "models": sorted({m for r in results for m in (r.a, r.b)}),
    }
