"""A debate killed with SIGKILL mid-turn resumes with `resume ID`, keeps every finished turn
byte-identical, stores no turn twice, and ends with the same transcript as an uninterrupted run."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

TOPIC = "Should remote work be the default for office jobs?"
ROOT = Path(__file__).resolve().parents[2]


def _env(speed: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["ROSTRUM_DEMO_SPEED"] = speed
    env.pop("ROSTRUM_DEMO_FAIL", None)
    return env


def _turns(db: Path, debate_id: str) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT data FROM events WHERE debate_id = ? AND kind = 'turn' ORDER BY seq", (debate_id,)
        ).fetchall()
    return [(json.loads(r[0])["turn"]["key"], json.loads(r[0])["turn"]["text"]) for r in rows]


def _run_until_mid_turn(db: Path) -> str:
    """Start a slow debate; SIGKILL it while the fourth turn is streaming. Returns the debate id."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "webapp", "debate", TOPIC, "--format", "classic", "--questions", "1",
         "--seed", "7", "--db", str(db)],
        cwd=ROOT, env=_env("400"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    buffer = b""
    try:
        assert proc.stdout is not None
        while True:
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, f"debate ended before the kill point: {buffer.decode()[-2000:]}"
            buffer += chunk
            text = buffer.decode(errors="replace")
            # The rebuttal header has appeared and its first speaker has streamed a few words.
            if "=== Rebuttal" in text and len(text.split("=== Rebuttal", 1)[1].split()) > 15:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    match = re.search(r"Debate ([0-9a-f]{12})", buffer.decode())
    assert match, buffer.decode()[:500]
    return match.group(1)


def test_sigkill_mid_turn_then_resume(tmp_path: Path) -> None:
    db = tmp_path / "crash.sqlite3"
    debate_id = _run_until_mid_turn(db)

    before = _turns(db, debate_id)
    assert 3 <= len(before) < 10, before  # preparation (2) + opening (2) finished; rebuttal was cut
    with sqlite3.connect(db) as conn:
        status = conn.execute("SELECT status FROM debates WHERE id = ?", (debate_id,)).fetchone()[0]
    assert status == "debating"

    resumed = subprocess.run(
        [sys.executable, "-m", "webapp", "resume", debate_id, "--db", str(db)],
        cwd=ROOT, env=_env("0"), capture_output=True, text=True, timeout=120,
    )
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert "completed" in resumed.stdout

    after = _turns(db, debate_id)
    keys = [k for k, _ in after]
    assert len(keys) == len(set(keys)), "a turn was stored twice"
    assert after[: len(before)] == before, "finished turns changed after the crash"

    fresh_db = tmp_path / "fresh.sqlite3"
    fresh = subprocess.run(
        [sys.executable, "-m", "webapp", "debate", TOPIC, "--format", "classic", "--questions", "1",
         "--seed", "7", "--db", str(fresh_db)],
        cwd=ROOT, env=_env("0"), capture_output=True, text=True, timeout=120,
    )
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    fresh_id = re.search(r"Debate ([0-9a-f]{12})", fresh.stdout).group(1)
    # The same turns with the same text; by key, since the two preparations run in parallel and either
    # may be stored first (a loaded machine stored them in the other order).
    assert dict(_turns(fresh_db, fresh_id)) == dict(after)
    assert len(_turns(fresh_db, fresh_id)) == len(after)
