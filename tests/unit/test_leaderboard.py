"""The leaderboard over a stored league: which debates count, filters, side-swapped series counted
once, the head-to-head records, the cache and the verdict digests (migration 010_verdict_digests)."""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path

from tests.leaderboard_corpus import ALPHA, BETA, GAMMA, store_league, store_result
from webapp.models import EventKind, Verdict
from webapp.results.leaderboard import LeaderboardFilters, compute, leaderboard, units
from webapp.results.records import DebateResult, decision, load_results, rebuild_digests
from webapp.store import Store
from webapp.store.migrations import NAMES, migrate


async def test_completed_judged_two_sided_debates_are_rated(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "db.sqlite3")
    try:
        await store_league(store)
        await store_result(store, "collab", ALPHA, BETA, "a", fmt="collaborative")  # no winner in this format
        results = {r.debate_id: r for r in await load_results(store)}
        assert sorted(results) == ["d1", "d2", "d3", "d4", "d5"]  # d6 is still being judged
        assert (results["d2"].a, results["d2"].b, results["d2"].score) == (BETA, ALPHA, 0.0)
        assert results["d3"].score == 0.5
        assert results["d5"].split and results["d5"].score == 1.0 and not results["d1"].split
        assert results["d5"].judges == ("demo:j1", "demo:j2", "demo:j3")
        assert results["d2"].tags == ("ethics", "ai")
        board = await leaderboard(store)
        assert [r.model for r in board.ratings] == [ALPHA, GAMMA, BETA]
        lines = {r.model: r for r in board.ratings}
        assert (lines[ALPHA].wins, lines[ALPHA].losses, lines[ALPHA].ties, lines[ALPHA].debates) == (3, 0, 1, 4)
        assert (lines[BETA].wins, lines[BETA].losses, lines[BETA].ties) == (0, 3, 1)
        assert lines[GAMMA].avg_cost_usd == 0.02
        assert all(r.low <= r.rating <= r.high for r in board.ratings)
        pair = board.pair(BETA, ALPHA)
        assert pair is not None and (pair.a, pair.wins, pair.losses, pair.ties) == (ALPHA, 2, 0, 1)
        assert pair.debates == ["d1", "d2", "d3"] and pair.split_share == 0
        split = board.pair(ALPHA, GAMMA)
        assert split is not None and split.split == 1 and split.split_share == 1.0
        assert board.history and board.history[-1].ratings[ALPHA] == lines[ALPHA].rating
    finally:
        await store.close()


async def test_filters_by_tag_judge_format_dates_and_debates(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "db.sqlite3")
    try:
        await store_league(store)

        async def rated(**filters: object) -> int:
            return (await leaderboard(store, LeaderboardFilters.model_validate(filters))).comparisons

        assert await rated() == 5
        assert await rated(tag="ethics") == 2
        assert await rated(tag="ETHICS") == 2
        assert await rated(judge="demo:j2") == 1
        assert await rated(format="oxford") == 0
        assert await rated(since=date(2026, 2, 1)) == 3
        assert await rated(until=date(2026, 1, 6)) == 2  # the whole last day counts
        assert await rated(debate_ids=frozenset({"d1", "d4", "d6"})) == 2
    finally:
        await store.close()


def _result(debate_id: str, a: str, b: str, score: float, series: str | None) -> DebateResult:
    from datetime import UTC, datetime
    return DebateResult(debate_id=debate_id, topic="t", created_at=datetime(2026, 1, 1, tzinfo=UTC), format="classic",
                        a=a, b=b, score=score, split=False, words_a=100, words_b=300, cost_usd=0.0, series=series)


def test_a_side_swapped_series_counts_once_as_a_pair() -> None:
    results = [
        _result("s1", ALPHA, BETA, 1.0, None),  # the series' first debate names it
        _result("s2", BETA, ALPHA, 1.0, "s1"),  # sides swapped: beta, now pro, wins -> 1–1 over the series
        _result("t1", ALPHA, GAMMA, 1.0, None),
        _result("t2", GAMMA, ALPHA, 0.0, "t1"),  # alpha wins from both sides
        _result("lone", BETA, GAMMA, 1.0, None),  # not a series: left out
    ]
    rated = units(results, series_only=True)
    assert [(u.a, u.b, u.score) for u in rated] == [(ALPHA, BETA, 0.5), (ALPHA, GAMMA, 1.0)]
    assert rated[0].words_a == 400 and rated[0].words_b == 400  # each side's words summed over the series
    board = compute(results, LeaderboardFilters(series_only=True), reps=10, style_reps=0)
    assert board.unit == "series" and board.comparisons == 2 and board.debates == 4
    lines = {r.model: r for r in board.ratings}
    assert (lines[ALPHA].wins, lines[ALPHA].ties, lines[ALPHA].debates) == (1, 1, 2)
    assert len(units(results, series_only=False)) == 5


def test_a_panel_decision_follows_the_outcome_card() -> None:
    def rulings(*picks: str | None) -> list[dict[str, object]]:
        return [{"judge": f"j{i}", "winner": w} for i, w in enumerate(picks)]

    assert decision("a", rulings("a", "a")) == ("a", False)
    assert decision("a", rulings("a", "a", "b")) == ("a", True)
    assert decision("a", rulings("a", "b")) == (None, True)  # no majority: a split, rated as a tie
    assert decision("b", [{"judge": "j0", "winner": "a", "error": True}, {"judge": "j1", "winner": "b"}]) == (
        "b", False)  # one usable ruling: the verdict's winner
    assert decision(None, rulings(None)) == (None, False)


async def test_the_board_is_cached_until_a_verdict_is_stored(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "db.sqlite3")
    try:
        await store_league(store)
        board = await leaderboard(store)
        await store.append("d6", EventKind.NOTE, {"type": "retry", "text": "a turn elsewhere"})
        assert await leaderboard(store) is board  # the store moved, the results did not
        await store_result(store, "d7", BETA, GAMMA, "a")
        fresh = await leaderboard(store)
        assert fresh is not board and fresh.comparisons == 6
        await store.delete_debate("d7")
        assert (await leaderboard(store)).comparisons == 5
    finally:
        await store.close()


async def test_a_later_verdict_replaces_the_earlier_and_digests_can_be_rebuilt(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "db.sqlite3")
    try:
        await store_result(store, "d1", ALPHA, BETA, "a")
        verdict = Verdict(winner="b", word_counts={"a": 1, "b": 2})
        await store.append("d1", EventKind.VERDICT, {"verdict": verdict.model_dump(mode="json")})
        [result] = await load_results(store)
        assert result.score == 0.0 and result.words_b == 2
        assert await rebuild_digests(store) == 1
        [again] = await load_results(store)
        assert again == result
    finally:
        await store.close()


def test_the_migration_back_fills_digests_from_stored_verdicts(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "old.sqlite3", isolation_level=None)
    migrate(conn, only=NAMES[:-1])
    conn.execute("INSERT INTO debates (id, topic, format, config, status, created_at, updated_at) "
                 "VALUES ('old', 't', 'classic', '{}', 'completed', '2026-01-01', '2026-01-01')")
    for seq, winner in ((1, "a"), (2, "b")):
        data = Verdict(winner=winner, reasoning="x" * 500).model_dump_json()
        conn.execute("INSERT INTO events (debate_id, seq, kind, at, data) VALUES ('old', ?, 'verdict', '2026', ?)",
                     (seq, f'{{"verdict": {data}}}'))
    assert migrate(conn) == [NAMES[-1]]
    [(seq, digest)] = conn.execute("SELECT seq, digest FROM verdict_digests").fetchall()
    assert seq == 2 and '"winner":"b"' in digest and "xxxx" not in digest
    conn.close()


async def test_the_dashboards_model_and_tag_options_follow_new_and_deleted_debates(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "db.sqlite3")
    try:
        await store_result(store, "d1", ALPHA, BETA, "a", tags=("ethics",))
        assert await store.models_and_tags() == ([ALPHA, BETA], ["ethics"])
        await store_result(store, "d2", GAMMA, BETA, "a", tags=("science",))
        assert await store.models_and_tags() == ([ALPHA, BETA, GAMMA], ["ethics", "science"])
        await store.delete_debate("d1")
        assert await store.models_and_tags() == ([BETA, GAMMA], ["science"])
        rows, total = await store.list_debates(model=GAMMA, tag="SCIENCE")
        assert total == 1 and rows[0].id == "d2"
    finally:
        await store.close()
