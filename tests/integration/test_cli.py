"""The CLI end to end (in-process): running debates, validation messages, list/show/export/formats."""

from __future__ import annotations

import io
import json
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.child_env import child_env
from webapp.cli import EXIT_OK, EXIT_STOPPED, EXIT_USAGE, main, parse_spec
from webapp.engine.formats import FORMATS
from webapp.engine.machine import TRANSITIONS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _instant_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    monkeypatch.delenv("ROSTRUM_DEMO_FAIL", raising=False)


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def debate_id(output: str) -> str:
    match = re.search(r"Debate ([0-9a-f]{12})", output)
    assert match, output[:400]
    return match.group(1)


def read_until(process: subprocess.Popen[str], found: Callable[[str], bool], timeout: float) -> list[str]:
    """Lines of the process's stdout up to and including the first `found` one (fails at the deadline
    or if the output ends first). A reader thread keeps the deadline even while no line comes."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in iter(process.stdout.readline, ""):
            lines.put(line)
            if found(line):
                return
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"not seen within {timeout} s; output so far:\n{''.join(seen)}") from None
        if line is None:
            raise AssertionError(f"the output ended first:\n{''.join(seen)}")
        seen.append(line)
        if found(line):
            return seen


def count_debates(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM debates").fetchone()[0]


def test_debate_streams_phases_progress_verdict_and_costs(tmp_path: Path) -> None:
    db = tmp_path / "cli.sqlite3"
    code, out = run("debate", "Should cities ban cars downtown?", "--format", "oxford", "--rounds", "2",
                    "--db", str(db), "--seed", "3")
    assert code == EXIT_OK
    assert "=== Opening statements ===" in out
    assert "=== Rebuttal — Round 1 of 2 ===" in out and "=== Rebuttal — Round 2 of 2 ===" in out
    assert "Proposition (pro, demo:demo):" in out and "Opposition (con, demo:demo):" in out
    assert "=== Verdict ===" in out and "Winner:" in out
    assert "=== Cost ===" in out and "simulated demo prices" in out
    assert "Time debating: " in out and "Rebuttal " in out.split("Time debating: ", 1)[1]
    assert out.rstrip().endswith("completed (all rounds completed)")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--rounds", "0"], "rounds"),
        (["--cost-limit", "-1"], "budget.cost_limit"),
        (["--format", "nope"], "format"),
        (["--format", "classic", "--rounds", "9"], "rounds"),
        (["--warn-at", "5", "--cost-limit", "1"], "budget"),
        (["--participant", "name=Solo,position=pro"], "participants"),
        (["--participant", "provider=openai,model=gpt-4o,position=pro", "--participant", "position=con"],
         "participants[0].provider"),
        (["--participant", "nonsense"], "--participant #1"),
    ],
)
def test_invalid_values_are_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], field: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env with a key
    db = tmp_path / "bad.sqlite3"
    code, _ = run("debate", "A topic", "--db", str(db), *args)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert err.startswith("error: ") and field in err
    assert count_debates(db) == 0  # nothing half-written


def test_empty_topic_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "empty.sqlite3"
    code, _ = run("debate", "   ", "--db", str(db))
    assert code == EXIT_USAGE
    assert "topic" in capsys.readouterr().err
    assert count_debates(db) == 0


def test_huge_topic_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run("debate", "x" * 5000, "--db", str(tmp_path / "huge.sqlite3"))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "topic" in err and "2000" in err


def test_show_json_has_the_documented_shape(tmp_path: Path) -> None:
    db = tmp_path / "show.sqlite3"
    code, out = run("debate", "Is nuclear power green?", "--format", "round-limited", "--rounds", "1",
                    "--participant", "name=Ada,provider=demo,model=demo,position=pro,persona=calm, precise",
                    "--participant", "name=Bo,provider=demo,model=demo-instant,position=con",
                    "--db", str(db))
    assert code == EXIT_OK
    code, out = run("show", debate_id(out), "--json", "--db", str(db))
    assert code == EXIT_OK
    data = json.loads(out)
    assert {"id", "topic", "format", "status", "participants", "turns", "transitions", "verdict", "cost"} <= set(data)
    assert data["status"] == "completed" and data["format"] == "round-limited"
    assert [(p["id"], p["name"], p["role"], p["model"]) for p in data["participants"]] == [
        ("ada", "Ada", "pro", "demo"), ("bo", "Bo", "con", "demo-instant")]
    turn = data["turns"][0]
    assert {"seq", "phase", "round", "speaker", "text", "usage", "cost_usd"} <= set(turn)
    assert turn["usage"]["input_tokens"] > 0 and turn["usage"]["output_tokens"] > 0
    assert {"from", "to", "event", "at"} <= set(data["transitions"][0])
    assert set(data["verdict"]["scores"]) == {"ada", "bo"}
    assert all(0 <= s <= 100 for s in data["verdict"]["scores"].values())
    assert data["cost"]["total_usd"] > 0 and "demo:demo" in data["cost"]["by_model"]


def test_list_show_and_export_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "exp.sqlite3"
    _, out = run("debate", "Tabs or spaces <script>alert(1)</script>?", "--format", "structured", "--db", str(db))
    did = debate_id(out)
    code, listed = run("list", "--json", "--db", str(db))
    assert code == EXIT_OK and json.loads(listed)[0]["id"] == did
    for suffix in ("md", "json", "txt"):
        path = tmp_path / f"t.{suffix}"
        code, _ = run("export", did, str(path), "--db", str(db))
        assert code == EXIT_OK
        text = path.read_text(encoding="utf-8")
        assert "Tabs or spaces" in text
    assert json.loads((tmp_path / "t.json").read_text())["id"] == did
    code, md = run("show", did, "--markdown", "--db", str(db))
    assert code == EXIT_OK and "Opening" in md


def test_unknown_debate_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run("show", "doesnotexist", "--db", str(tmp_path / "x.sqlite3"))
    assert code == EXIT_USAGE and "no debate" in capsys.readouterr().err


def test_cost_limit_stops_before_the_crossing_call(tmp_path: Path) -> None:
    db = tmp_path / "limit.sqlite3"
    code, out = run("debate", "Cost test", "--format", "oxford", "--cost-limit", "0.02", "--db", str(db))
    assert code == EXIT_STOPPED
    assert "would cross the $0.0200 limit" in out
    assert "stopped (cost limit)" in out
    _, shown = run("show", debate_id(out), "--json", "--db", str(db))
    assert json.loads(shown)["cost"]["total_usd"] <= 0.02


def test_formats_json_lists_every_declaration() -> None:
    code, out = run("formats", "--json")
    assert code == EXIT_OK
    data = {f["id"]: f for f in json.loads(out)}
    assert set(data) == set(FORMATS)
    classic = data["classic"]
    assert [p["id"] for p in classic["phases"]] == [p.id for p in FORMATS["classic"].phases]
    assert classic["phases"][0]["parallel"] is True
    assert all({"id", "title", "speakers", "turns_per_speaker", "parallel"} <= set(p) for p in classic["phases"])


def test_diagram_is_generated_from_the_declaration() -> None:
    code, out = run("diagram", "--format", "lincoln-douglas")
    assert code == EXIT_OK and out.startswith("stateDiagram-v2")
    for t in TRANSITIONS:
        assert f"{t.source.value} --> " in out
    assert "Affirmative constructive" in out


def test_parse_spec_keeps_commas_inside_values() -> None:
    spec = parse_spec("name=Ada,provider=demo,persona=calm, precise, kind,position=pro", "--participant")
    assert spec == {"name": "Ada", "provider": "demo", "persona": "calm, precise, kind", "position": "pro"}


def test_clarification_questions_are_answered_on_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "collab.sqlite3"
    monkeypatch.setattr("sys.stdin", io.StringIO("Ship by March\n\nTen people\n" + "\n" * 20))
    code, out = run("debate", "Plan our team offsite", "--format", "collaborative", "--rounds", "1",
                    "--db", str(db))
    assert code == EXIT_OK
    assert "=== Clarification questions (press Enter to skip one) ===" in out
    assert "asks: What does success look like" in out
    assert "=== Synthesis ===" in out
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT data FROM events WHERE kind = 'clarification_answer'").fetchall()
    answers = [json.loads(r[0]) for r in rows]
    first = answers[0]["answers"]
    assert "Ship by March" in next(iter(first.values()))
    assert any("" in given for given in first.values())  # a skipped question is stored as unanswered


def test_a_toml_config_file_runs_and_flags_override_it(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]  # the README's own example
    config = tmp_path / "debate.toml"
    config.write_text(example, encoding="utf-8")
    db = tmp_path / "toml.sqlite3"
    code, out = run("debate", "--config", str(config), "--rounds", "1", "--db", str(db))
    assert code == EXIT_OK
    _, shown = run("show", debate_id(out), "--json", "--db", str(db))
    data = json.loads(shown)
    assert data["topic"] == "Should juries be replaced by professional judges?" and data["format"] == "oxford"
    assert [p["name"] for p in data["participants"]] == ["Ada", "Bo"]
    assert {t["round"] for t in data["turns"] if t["phase"] == "rebuttal"} == {1}  # --rounds won over the file
    assert set(data["verdict"]["criteria"]) == {"argument quality", "evidence", "fairness"}


def test_a_broken_config_file_is_refused_with_its_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('topic = "x"\nrounds = [\n', encoding="utf-8")
    code, _ = run("debate", "--config", str(config), "--db", str(tmp_path / "b.sqlite3"))
    assert code == EXIT_USAGE and "--config" in capsys.readouterr().err


# --- who did it: the CLI's commands are recorded as `cli`, the runner's own steps as `system` -----


def transitions(db: Path, did: str) -> list[dict]:
    _, shown = run("show", did, "--json", "--db", str(db))
    return json.loads(shown)["transitions"]


def audit_rows(db: Path) -> list[tuple[str, str, str | None, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT actor, action, debate_id, outcome FROM audit ORDER BY id").fetchall()


def test_a_cli_debate_is_created_by_cli_and_its_own_steps_are_the_system(tmp_path: Path) -> None:
    db = tmp_path / "actor.sqlite3"
    code, out = run("debate", "Who started this?", "--format", "oxford", "--rounds", "1", "--db", str(db))
    assert code == EXIT_OK
    did = debate_id(out)
    _, shown = run("show", did, "--json", "--db", str(db))
    data = json.loads(shown)
    assert data["created_by"] == "cli"
    start, *rest = data["transitions"]
    assert (start["event"], start["actor"]) == ("START", "cli")  # started on behalf of its creator
    assert rest and {t["actor"] for t in rest} == {"system"}  # then nobody intervened
    assert [(a["action"], a["actor"]) for a in data["actions"]] == [("start", "cli")]
    assert audit_rows(db) == [("cli", "start", did, "ok")]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT created_by FROM debates WHERE id = ?", (did,)).fetchone() == ("cli",)


def test_resume_after_an_error_is_a_cli_retry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "retry.sqlite3"
    monkeypatch.setenv("ROSTRUM_DEMO_FAIL", "2:auth!")  # the second turn fails until the "key" is fixed
    code, out = run("debate", "Fail then fix", "--format", "oxford", "--rounds", "1", "--db", str(db))
    did = debate_id(out)
    assert code == 1 and f"python -m webapp resume {did}" in out
    monkeypatch.delenv("ROSTRUM_DEMO_FAIL")
    code, out = run("resume", did, "--db", str(db))
    assert code == EXIT_OK, out
    steps = transitions(db, did)
    retry = [t for t in steps if t["event"] == "RETRY"]
    assert len(retry) == 1 and retry[0]["actor"] == "cli"
    assert next(t for t in steps if t["to"] == "error")["actor"] == "system"
    _, shown = run("show", did, "--json", "--db", str(db))
    assert [(a["action"], a["actor"]) for a in json.loads(shown)["actions"]] == [("start", "cli"), ("retry", "cli")]
    assert audit_rows(db) == [("cli", "start", did, "ok"), ("cli", "resume", did, "ok")]


@pytest.mark.parametrize(("flags", "event", "exit_code"), [
    ([], "ACKNOWLEDGE_WARNING", EXIT_OK),
    (["--stop-at-warning"], "STOP", EXIT_STOPPED),
])
def test_the_cost_warning_is_answered_by_cli(tmp_path: Path, flags: list[str], event: str, exit_code: int) -> None:
    db = tmp_path / "warn.sqlite3"
    code, out = run("debate", "Warn me", "--format", "oxford", "--rounds", "1", "--no-judge", "--warn-at", "0.001",
                    "--db", str(db), *flags)
    assert code == exit_code
    answered = [t for t in transitions(db, debate_id(out)) if t["event"] == event]
    assert len(answered) == 1 and answered[0]["actor"] == "cli"


def test_clarification_answers_typed_on_the_terminal_are_the_cli_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "clar.sqlite3"
    monkeypatch.setattr("sys.stdin", io.StringIO("Soon\n" + "\n" * 20))
    code, out = run("debate", "Plan a picnic", "--format", "collaborative", "--rounds", "1", "--no-judge",
                    "--db", str(db))
    assert code == EXIT_OK
    answered = [t for t in transitions(db, debate_id(out)) if t["event"] == "CLARIFICATION_ANSWERED"]
    assert answered and {t["actor"] for t in answered} == {"cli"}


def test_ctrl_c_pauses_as_cli_and_resume_continues_as_cli(tmp_path: Path) -> None:
    db = tmp_path / "sigint.sqlite3"
    env = child_env(ROSTRUM_DEMO_SPEED="30", PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "webapp", "debate", "Interrupt me", "--format", "oxford", "--rounds", "1",
         "--no-judge", "--db", str(db)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = read_until(process, lambda line: line.startswith("Proposition (pro, demo:demo):"), timeout=60)
        process.send_signal(signal.SIGINT)  # streaming the first turn: pause it
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    output = "".join(seen) + rest
    assert process.returncode == 1, output
    assert "Paused (Ctrl-C)." in output
    did = debate_id(output)
    pause = [t for t in transitions(db, did) if t["event"] == "PAUSE"]
    assert len(pause) == 1 and pause[0]["actor"] == "cli"

    code, out = run("resume", did, "--db", str(db))  # the instant demo speed from the fixture
    assert code == EXIT_OK, out
    steps = transitions(db, did)
    assert [(t["event"], t["actor"]) for t in steps if t["actor"] != "system"] == [
        ("START", "cli"), ("PAUSE", "cli"), ("RESUME", "cli")]
    assert steps[-1]["to"] == "completed"


def test_a_bad_setting_is_named_as_its_variable_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from webapp.settings import get_settings

    monkeypatch.setenv("ROSTRUM_TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal")
    get_settings.cache_clear()
    try:
        code, out = run("list", "--db", str(tmp_path / "s.sqlite3"))
    finally:
        monkeypatch.delenv("ROSTRUM_TRUSTED_PROXIES")
        get_settings.cache_clear()
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and out == ""
    assert err == ("error: invalid setting: ROSTRUM_TRUSTED_PROXIES: 'proxy.internal' is not an IP address or "
                   "network (e.g. 10.0.0.0/8)\n")
    assert not (tmp_path / "s.sqlite3").exists()
