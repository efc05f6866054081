"""Tournaments end to end through the CLI: 3 models × 2 topics × swapped sides completes; a total
budget that runs out half-way stops it cleanly and it resumes; a SIGKILL mid-way loses nothing and
runs no pairing (and no finished turn) twice."""

from __future__ import annotations

import io
import json
import re
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.child_env import child_env
from tests.fakellm import FakeLLMServer, RecordedRequest
from tests.integration.test_cli import read_until
from webapp.cli import EXIT_OK, EXIT_STOPPED, EXIT_USAGE, main
from webapp.tournament.plan import Contender, Tournament, estimate_debate, schedule

ROOT = Path(__file__).resolve().parents[2]
TOPICS = "Cities should ban private cars\n# a comment line\n\nHomework should be abolished\n"
SHAPE = ["--format", "round-limited", "--rounds", "1", "--swap-sides"]  # 2 turns a debate: quick
SLOTS = 12  # 3 pairs × 2 topics × 2 sides


@pytest.fixture(autouse=True)
def _instant_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    monkeypatch.delenv("ROSTRUM_DEMO_FAIL", raising=False)


@pytest.fixture
def topics(tmp_path: Path) -> Path:
    path = tmp_path / "topics.txt"
    path.write_text(TOPICS, encoding="utf-8")
    return path


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def tournament_id(output: str) -> str:
    match = re.search(r"Tournament ([0-9a-f]{12})", output)
    assert match, output[:400]
    return match.group(1)


def slots(db: Path, tid: str) -> list[tuple[str, str, str, int]]:
    """(slot, debate id, status, turn count) of every debate of the tournament."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT json_extract(config, '$.tournament_slot'), id, status, turn_count FROM debates "
            "WHERE json_extract(config, '$.tournament') = ? ORDER BY created_at", (tid,)).fetchall()


def tournament_status(db: Path, tid: str) -> tuple[str, str | None]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT status, stop_reason FROM tournaments WHERE id = ?", (tid,)).fetchone()


def turns(db: Path) -> list[tuple[str, str, str]]:
    """(debate id, turn key, text) of every stored turn."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT debate_id, data FROM events WHERE kind = 'turn' ORDER BY debate_id, seq")
        return [(d, json.loads(data)["turn"]["key"], json.loads(data)["turn"]["text"]) for d, data in rows]


def test_three_models_two_topics_swapped_sides_complete(tmp_path: Path, topics: Path) -> None:
    db = tmp_path / "t.sqlite3"
    code, out = run("tournament", "--db", str(db), "--models", "alpha,beta,gamma", "--topics", str(topics),
                    *SHAPE, "--concurrency", "2")
    assert code == EXIT_OK, out
    tid = tournament_id(out)
    played = slots(db, tid)
    assert sorted(s for s, *_ in played) == sorted(
        f"t{t}-m{a}-m{b}{s}" for t in (0, 1) for a, b in ((0, 1), (0, 2), (1, 2)) for s in ("", "-s"))
    assert {status for _, _, status, _ in played} == {"completed"}
    assert tournament_status(db, tid) == ("completed", None)
    assert "Debates done: 12/12" in out
    # Every pairing was played from both sides: alpha argued for against beta once and against once.
    with sqlite3.connect(db) as conn:
        sides = conn.execute(
            "SELECT json_extract(config, '$.participants[0].model'), json_extract(config, '$.participants[1].model') "
            "FROM debates WHERE json_extract(config, '$.topic') = 'Cities should ban private cars'").fetchall()
    assert sorted(sides) == sorted([("alpha", "beta"), ("beta", "alpha"), ("alpha", "gamma"), ("gamma", "alpha"),
                                    ("beta", "gamma"), ("gamma", "beta")])
    # The standings count a result for every judged debate: 12 debates, 2 players each.
    table = re.findall(r"demo:(\w+): (\d+)-(\d+)-(\d+)", out.split("Standings", 1)[1])
    assert sorted(name for name, *_ in table) == ["alpha", "beta", "gamma"]
    assert sum(int(w) + int(lo) + int(t) for _, w, lo, t in table) == 2 * SLOTS


def test_budget_runs_out_half_way_then_resumes(tmp_path: Path, topics: Path) -> None:
    db = tmp_path / "t.sqlite3"
    plan = Tournament(models=[Contender.parse(m) for m in ("alpha", "beta", "gamma")], topics=["x", "y"],
                      format="round-limited", rounds=1, swap_sides=True)
    estimate = estimate_debate(plan, schedule(plan)[0])
    assert estimate is not None and estimate > 0  # the demo models carry a simulated price
    budget = round(estimate * 2.2, 4)  # a debate costs far less than its worst case: several fit, not all

    code, out = run("tournament", "--db", str(db), "--models", "alpha,beta,gamma", "--topics", str(topics),
                    *SHAPE, "--budget", str(budget))
    assert code == EXIT_STOPPED, out
    tid = tournament_id(out)
    status, reason = tournament_status(db, tid)
    assert status == "stopped" and reason is not None and reason.startswith("budget reached"), reason
    first = slots(db, tid)
    assert 0 < len(first) < SLOTS, first
    assert {s for _, _, s, _ in first} == {"completed"}  # stopped between debates, none cut short
    with sqlite3.connect(db) as conn:
        spent = conn.execute("SELECT sum(cost_usd) FROM debates").fetchone()[0]
    assert 0 < spent <= budget
    assert f"--resume {tid}" in out

    code, out = run("tournament", "--db", str(db), "--resume", tid, "--budget", "10")
    assert code == EXIT_OK, out
    after = slots(db, tid)
    assert len(after) == SLOTS and len({s for s, *_ in after}) == SLOTS
    assert after[: len(first)] == first  # what was played before is kept, not played again
    assert tournament_status(db, tid) == ("completed", None)


def test_usage_errors_name_the_option(tmp_path: Path, topics: Path) -> None:
    db = str(tmp_path / "t.sqlite3")
    code, _ = run("tournament", "--db", db, "--models", "alpha", "--topics", str(topics))
    assert code == EXIT_USAGE  # one model is no tournament
    code, _ = run("tournament", "--db", db, "--models", "alpha,alpha", "--topics", str(topics))
    assert code == EXIT_USAGE
    code, _ = run("tournament", "--db", db, "--resume", "000000000000")
    assert code == EXIT_USAGE


def short_reply(request: RecordedRequest) -> str:
    """A short answer naming the model (a few chunks: the slow stream stays short)."""
    return f"{request.body.get('model')} holds that the case stands."


def test_sigkill_mid_way_then_resume_runs_nothing_twice(tmp_path: Path, topics: Path) -> None:
    """The debaters are served by the fake LLM server, which records every request: after the kill, the
    resumed run asks exactly for the turns not yet stored (a finished turn is never asked again)."""
    db = tmp_path / "t.sqlite3"
    with FakeLLMServer(reply=short_reply, chunk_delay=0.02) as server:
        command = [sys.executable, "-m", "webapp", "tournament", "--db", str(db), "--topics", str(topics),
                   "--models", "compatible:alpha,compatible:beta,compatible:gamma", "--base-url", server.openai_url,
                   *SHAPE, "--concurrency", "2"]
        proc = subprocess.Popen(command, cwd=ROOT, env=child_env(PYTHONUNBUFFERED="1", ROSTRUM_DEMO_SPEED="0"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ended: list[str] = []

        def third_end(line: str) -> bool:
            if line.lstrip().startswith("ended"):
                ended.append(line)
            return len(ended) >= 3

        try:
            seen = "".join(read_until(proc, third_end, timeout=60))
            read_until(proc, lambda line: "playing" in line, timeout=60)  # a debate after the third is on
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        tid = tournament_id(seen)
        before = slots(db, tid)
        stored_before = turns(db)
        assert 0 < len(before) < SLOTS, before
        assert tournament_status(db, tid)[0] == "running"  # killed: nothing said it stopped
        asked_before = len(server.requests)
        server.chunk_delay = 0.0  # slow only so that the kill lands mid-way

        code, out = run("tournament", "--db", str(db), "--resume", tid)  # in-process: the rerun
        assert code == EXIT_OK, out
        asked_after = len(server.requests) - asked_before

    after = slots(db, tid)
    assert Counter(s for s, *_ in after) == Counter({slot: 1 for slot in {s for s, *_ in after}})
    assert len(after) == SLOTS  # every pairing ran exactly once
    assert {s for _, _, s, _ in after} == {"completed"}
    assert [d for _, d, *_ in after[: len(before)]] == [d for _, d, *_ in before]  # the same debates continued
    stored = turns(db)
    keys = Counter((d, k) for d, k, _ in stored)
    assert max(keys.values()) == 1, "a turn was stored twice"
    assert set(stored_before) <= set(stored), "a finished turn changed after the kill"
    assert asked_after == len(stored) - len(stored_before), "the resume asked again for a finished turn"



def test_a_model_without_its_key_is_named_before_anything_is_stored(tmp_path: Path, topics: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "t.sqlite3"
    code, _ = run("tournament", "--db", str(db), "--models", "alpha,beta,openai:gpt-4o-mini,gamma,delta",
                  "--topics", str(topics))
    assert code == EXIT_USAGE
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM tournaments").fetchone()[0] == 0
