"""A human seat from the terminal (real `python -m webapp` subprocesses on a real SQLite file): the
turn is read up to a line holding only `.`; with stdin closed the debate waits, saved, and `resume`
takes the rest; a SIGKILL while the seat waits loses nothing and the debate still waits."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "Cities should ban private cars from their centres"
DEBATE = ["debate", TOPIC, "--format", "classic", "--rounds", "1", "--questions", "1", "--seed", "3",
          "--participant", "name=Me,provider=human,position=pro",
          "--participant", "name=Bot,provider=demo,position=con"]


def _env() -> dict[str, str]:
    return child_env(ROSTRUM_DEMO_SPEED="0")


def _run(args: list[str], stdin: str, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "webapp", *args, "--db", str(db)], cwd=ROOT, env=_env(),
                          input=stdin, capture_output=True, text=True, timeout=180)


def _status(db: Path, debate_id: str) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("SELECT status FROM debates WHERE id = ?", (debate_id,)).fetchone()[0])


def _turns(db: Path, debate_id: str) -> list[dict[str, object]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT data FROM events WHERE debate_id = ? AND kind = 'turn' ORDER BY seq",
                            (debate_id,)).fetchall()
    return [json.loads(r[0])["turn"] for r in rows]


def _debate_id(text: str) -> str:
    match = re.search(r"Debate ([0-9a-f]{12})", text)
    assert match, text[-2000:]
    return match.group(1)


def test_turns_typed_on_stdin_then_closed_stdin_waits_and_resume_finishes(tmp_path: Path) -> None:
    db = tmp_path / "seat.sqlite3"
    first = _run(DEBATE, "My opening,\non two lines.\n.\nMy rebuttal.\n.\n", db)
    out = first.stdout
    assert first.returncode == 1, out[-2000:] + first.stderr[-2000:]
    assert "=== Your turn — Opening statements (Me) ===" in out
    assert "stdin is closed or empty. The debate waits for the turn" in out
    debate_id = _debate_id(out)
    assert f"Continue with: python -m webapp resume {debate_id}" in out
    assert _status(db, debate_id) == "awaiting_turn"
    mine = [t for t in _turns(db, debate_id) if t["speaker"] == "me" and t["act"] != "prepare"]
    assert [t["text"] for t in mine] == ["My opening,\non two lines.", "My rebuttal."]
    assert all(t["by"] == "cli" and t["cost_usd"] == 0.0 for t in mine)

    resumed = _run(["resume", debate_id], "A question for you?\n.\n" * 12, db)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert _status(db, debate_id) == "completed"
    after = _turns(db, debate_id)
    assert [t["text"] for t in after if t["speaker"] == "me" and t["act"] != "prepare"][:2] == \
        ["My opening,\non two lines.", "My rebuttal."]
    assert len({t["key"] for t in after}) == len(after)  # no turn stored twice
    with sqlite3.connect(db) as conn:
        audited = conn.execute("SELECT COUNT(*) FROM audit WHERE action = 'send_turn'").fetchone()[0]
    assert audited >= 3


def test_sigkill_while_the_seat_waits_loses_nothing_and_it_still_waits(tmp_path: Path) -> None:
    db = tmp_path / "kill.sqlite3"
    proc = subprocess.Popen([sys.executable, "-m", "webapp", *DEBATE, "--db", str(db)], cwd=ROOT, env=_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    buffer = b""
    try:
        assert proc.stdout is not None and proc.stdin is not None
        while b"=== Your turn" not in buffer:
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, buffer.decode()[-2000:]
            buffer += chunk
        # The seat waits for the person (stdin stays open): the waiting state is already in the log.
        debate_id = _debate_id(buffer.decode()) if re.search(rb"Debate [0-9a-f]{12}", buffer) else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    if not debate_id:
        with sqlite3.connect(db) as conn:
            debate_id = str(conn.execute("SELECT id FROM debates").fetchone()[0])
    assert _status(db, debate_id) == "awaiting_turn"
    before = _turns(db, debate_id)

    resumed = _run(["resume", debate_id], "", db)  # nobody at the terminal: it keeps waiting
    assert resumed.returncode == 1, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert "It waits for Me (a person) to send their turn." in resumed.stdout
    assert _status(db, debate_id) == "awaiting_turn"
    assert _turns(db, debate_id) == before  # nothing lost, nothing redone

    finished = _run(["resume", debate_id], "Back after the crash.\n.\n" * 12, db)
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    after = _turns(db, debate_id)
    assert after[:len(before)] == before
    assert any(t["text"] == "Back after the crash." for t in after)
