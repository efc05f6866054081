"""`python -m webapp leaderboard` (its JSON schema, text and filters) and `debate --tag`."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from tests.integration.test_cli import _instant_demo, run  # noqa: F401  (the autouse fixture applies here too)
from tests.leaderboard_corpus import ALPHA, BETA, GAMMA, league_file
from webapp.cli import EXIT_OK, EXIT_USAGE


@pytest.fixture
def league(tmp_path: Path) -> str:
    db = tmp_path / "league.sqlite3"
    asyncio.run(league_file(db))
    return str(db)


RATING_KEYS = {"model": str, "rank": int, "rating": float, "low": float, "high": float, "debates": int, "wins": int,
               "losses": int, "ties": int, "avg_cost_usd": float}


def test_leaderboard_json_schema(league: str) -> None:
    code, output = run("leaderboard", "--json", "--db", league)
    assert code == EXIT_OK
    data = json.loads(output)
    assert set(data) == {"filters", "unit", "comparisons", "debates", "ratings", "style", "words", "pairs",
                         "history", "computed_at"}
    assert [(w["a"], w["b"]) for w in data["words"]] == [(ALPHA, GAMMA), (GAMMA, BETA)]  # neighbours, in words
    assert all(set(w) == {"a", "b", "share", "debates", "clear", "more", "words"} for w in data["words"])
    assert data["unit"] == "debate" and data["comparisons"] == 5 and data["debates"] == 5
    assert set(data["filters"]) == {"format", "tag", "judge", "since", "until", "series_only", "debate_ids",
                                    "rated_by"}
    for line in [*data["ratings"], *data["style"]["ratings"]]:
        assert {k: type(line[k]) for k in RATING_KEYS} == RATING_KEYS
        assert line["low"] <= line["rating"] <= line["high"]
    assert [r["model"] for r in data["ratings"]] == [ALPHA, GAMMA, BETA]
    assert set(data["style"]) == {"ratings", "length_effect", "length_low", "length_high"}
    assert data["style"]["length_effect"] is None  # five debates: too few for a length effect
    assert {(p["a"], p["b"]) for p in data["pairs"]} == {(ALPHA, BETA), (ALPHA, GAMMA), (BETA, GAMMA)}
    for pair in data["pairs"]:
        assert set(pair) == {"a", "b", "wins", "losses", "ties", "split", "debates", "split_share"}
        assert len(pair["debates"]) == pair["wins"] + pair["losses"] + pair["ties"]
    assert all(set(point) == {"at", "ratings"} for point in data["history"])


def test_leaderboard_text_and_filters(league: str) -> None:
    code, output = run("leaderboard", "--db", league)
    assert code == EXIT_OK
    assert "Leaderboard over 5 debates" in output and "Style-controlled" in output
    lines = [line for line in output.splitlines() if line.strip().startswith(("1 ", "2 ", "3 "))]
    assert lines[0].split()[1] == ALPHA
    code, output = run("leaderboard", "--json", "--db", league, "--tag", "ethics", "--since", "2026-01-06")
    assert code == EXIT_OK and json.loads(output)["comparisons"] == 1
    code, output = run("leaderboard", "--db", league, "--tag", "nothing-like-this")
    assert code == EXIT_OK and "No rated debates" in output and "with these filters" in output
    assert run("leaderboard", "--db", league, "--since", "yesterday")[0] == EXIT_USAGE
    assert run("leaderboard", "--db", league, "--format", "no-such-format")[0] == EXIT_USAGE


def test_debate_takes_tags_from_the_flags_and_the_config_file(tmp_path: Path) -> None:
    db = str(tmp_path / "tags.sqlite3")
    config = tmp_path / "debate.toml"
    config.write_text('topic = "Tags are useful"\ntags = ["From-File"]\n')
    code, _ = run("debate", "--config", str(config), "--tag", "Ethics", "--tag", "AI policy", "--no-judge",
                  "--rounds", "1", "--db", db)
    assert code == EXIT_OK
    conn = sqlite3.connect(db)
    [(tags,)] = conn.execute("SELECT json_extract(config, '$.tags') FROM debates").fetchall()
    conn.close()
    assert json.loads(tags) == ["from-file", "ethics", "ai-policy"]
    code, _ = run("debate", "Too many", "--no-judge", *[f"--tag=t{i}" for i in range(11)], "--db", db)
    assert code == EXIT_USAGE
