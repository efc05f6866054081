"""The leaderboard over debates the engine really ran (demo models): their verdicts are rated, and a
side-swapped rematch forms a series the series-only board counts once."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.series import rematch_config
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider
from webapp.results.leaderboard import LeaderboardFilters, leaderboard
from webapp.results.records import load_results
from webapp.settings import get_settings


@pytest.fixture
async def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    get_settings.cache_clear()
    engine = await Engine.open(tmp_path / "db.sqlite3", providers=OneProvider(), backoff_base=0.01)
    yield engine
    await engine.close()
    get_settings.cache_clear()


async def test_debates_the_engine_ran_are_rated_and_a_rematch_series_counts_once(engine: Engine) -> None:
    config = DebateConfig.model_validate({
        "topic": "Should cities ban private cars?", "format": "round-limited", "rounds": 1, "tags": ["Cities"],
        "participants": [{"name": "Ada", "position": "pro", "model": "demo"},
                         {"name": "Bo", "position": "con", "model": "demo-instant"}]})
    first = await engine.start(config)
    assert await first.join() is State.COMPLETED
    second = await engine.start(rematch_config(first.state.config, first.id))
    assert await second.join() is State.COMPLETED
    results = {r.debate_id: r for r in await load_results(engine.store)}
    assert set(results) == {first.id, second.id}
    one = results[first.id]
    assert (one.a, one.b, one.tags, one.series) == ("demo:demo", "demo:demo-instant", ("cities",), None)
    assert one.words_a > 0 and one.words_b > 0  # the verdict's word counts, by participant id
    assert one.judges and all(":" in judge for judge in one.judges)
    verdict = first.state.verdict
    assert verdict is not None
    expected = 0.5 if verdict.winner is None else (1.0 if verdict.winner == first.state.config.participants[0].id
                                                   else 0.0)
    assert one.score == expected
    assert results[second.id].series == first.id and results[second.id].a == "demo:demo-instant"
    board = await leaderboard(engine.store)
    assert board.comparisons == 2 and {r.model for r in board.ratings} == {"demo:demo", "demo:demo-instant"}
    series = await leaderboard(engine.store, LeaderboardFilters(series_only=True))
    assert (series.unit, series.comparisons, series.debates) == ("series", 1, 2)
    tagged = await leaderboard(engine.store, LeaderboardFilters(tag="cities", debate_ids=frozenset({first.id})))
    assert tagged.comparisons == 1
