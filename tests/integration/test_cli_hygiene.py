"""The CLI's input and output hygiene, its waits for a person, and the settings it must honour:
control characters never reach the terminal (JSON stays exact), a topic starting with `-` is
explained, invalid input is refused naming the field, an ignored temperature is noted, the
clarification wait answers to Ctrl-C and to a closed stdin, and ROSTRUM_MAX_RETRIES is used."""

from __future__ import annotations

import io
import json
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child_env import child_env
from tests.fakellm import FakeLLMServer
from tests.integration.test_cli import count_debates, debate_id, read_until, run
from tests.provider_helpers import register_fake_llm
from webapp.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from webapp.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
# Everything a terminal acts on rather than shows, except the newline and the tab.
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(autouse=True)
def _instant_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    monkeypatch.delenv("ROSTRUM_DEMO_FAIL", raising=False)
    monkeypatch.delenv("ROSTRUM_MAX_RETRIES", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def status_of(db: Path, did: str) -> str:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT status FROM debates WHERE id = ?", (did,)).fetchone()[0]


# --- output ------------------------------------------------------------------------------------

HOSTILE_TOPIC = "Cars \x1b[31mred\x1b[0m \x1b]0;pwned\x07 clear\x1b[2J bell\x07 nul\x00 \u202eevil\u202c downtown?"


def test_model_output_and_user_input_reach_the_terminal_without_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "clean.sqlite3"
    code, out = run("debate", HOSTILE_TOPIC, "--format", "oxford", "--rounds", "1", "--no-judge", "--db", str(db))
    assert code == EXIT_OK
    assert "Topic: Cars red  clear bell nul evil downtown?" in out  # the words, without what acts on a terminal
    assert not CONTROLS.search(out), repr(CONTROLS.search(out))
    did = debate_id(out)
    # the demo model repeats the topic: its output carried the same sequences, and they were removed
    code, shown = run("show", did, "--json", "--db", str(db))
    data = json.loads(shown)
    assert data["topic"] == HOSTILE_TOPIC  # JSON stays exact
    assert any("\x1b[31m" in turn["text"] for turn in data["turns"])
    for flag in ("--markdown", "--text"):
        code, shown = run("show", did, flag, "--db", str(db))
        assert code == EXIT_OK and not CONTROLS.search(shown) and "evil downtown" in shown
    code, listed = run("list", "--db", str(db))
    assert code == EXIT_OK and not CONTROLS.search(listed)
    assert not CONTROLS.search(capsys.readouterr().err)


def test_exports_written_by_the_cli_are_inert_and_json_is_exact(tmp_path: Path) -> None:
    db = tmp_path / "exp.sqlite3"
    topic = "Tabs <script>alert(1)</script> or <img src=x onerror=alert(2)>\x1b[2J?"
    _, out = run("debate", topic, "--format", "oxford", "--rounds", "1", "--no-judge", "--db", str(db))
    did = debate_id(out)
    for suffix in ("md", "txt", "json"):
        assert run("export", did, str(tmp_path / f"t.{suffix}"), "--db", str(db))[0] == EXIT_OK
    md = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert "<script" not in md and "<img" not in md and "\x1b" not in md
    assert "&lt;script>alert(1)&lt;/script>" in md and "onerror=alert(2)" in md  # the words are all there
    txt = (tmp_path / "t.txt").read_text(encoding="utf-8")
    assert "\x1b" not in txt and "<script>alert(1)</script>" in txt
    assert json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))["topic"] == topic


# --- input -------------------------------------------------------------------------------------


def test_a_topic_starting_with_a_dash_is_named_with_how_to_pass_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "dash.sqlite3"
    code, out = run("debate", "-quiet-quitting", "--format", "oxford", "--db", str(db))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and out == ""
    assert err.startswith("error: topic: '-quiet-quitting' starts with '-'") and " -- -quiet-quitting" in err
    assert "unrecognized arguments" not in err
    assert count_debates(db) == 0
    # what the message suggests works
    code, out = run("debate", "--format", "oxford", "--rounds", "1", "--no-judge", "--db", str(db), "--",
                    "-quiet-quitting")
    assert code == EXIT_OK and "Topic: -quiet-quitting" in out


def test_an_unknown_option_with_a_topic_is_still_argparse_s_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run("debate", "A topic", "--no-such-flag")
    assert info.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["\u200b\ufeff"], "topic"),
        (["\x00\u200d"], "topic"),
        (["Colours", "--participant", "position=pro,color=notacolor", "--participant", "position=con"],
         "participants[0].color"),
        (["Three sides", "--format", "classic", "--participant", "position=pro", "--participant", "position=con",
          "--participant", "name=Sam,position=skeptic"], "participants[2].position"),
    ],
)
def test_invalid_input_is_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], field: str
) -> None:
    db = tmp_path / "bad.sqlite3"
    code, out = run("debate", *args, "--db", str(db))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and out == ""
    assert err.startswith(f"error: {field}: "), err
    assert count_debates(db) == 0


def test_an_anthropic_temperature_is_noted_not_refused_and_not_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fake_llm: FakeLLMServer
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    register_fake_llm(monkeypatch, fake_llm.url)  # the key goes only to registered endpoints
    code, out = run("debate", "Temperature", "--format", "oxford", "--rounds", "1", "--no-judge",
                    "--participant", f"name=Ada,provider=anthropic,model=claude-test,"
                                     f"base_url={fake_llm.anthropic_url},temperature=0.7,position=pro",
                    "--participant", "name=Bo,position=con", "--db", str(tmp_path / "t.sqlite3"))
    err = capsys.readouterr().err
    assert code == EXIT_OK, out + err
    assert ("note: participants[0].temperature: Anthropic does not accept a temperature, so 0.7 is not sent "
            "(the model's default is used)") in err
    assert fake_llm.model_requests and all("temperature" not in r.body for r in fake_llm.model_requests)


# --- waiting for a person: clarification questions ---------------------------------------------


@pytest.mark.parametrize("stdin", [None, ""], ids=["stdin-closed", "stdin-empty"])
def test_without_a_stdin_the_questions_wait_and_resume_answers_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stdin: str | None
) -> None:
    db = tmp_path / "closed.sqlite3"
    monkeypatch.setattr("sys.stdin", None if stdin is None else io.StringIO(stdin))
    code, out = run("debate", "Plan a picnic", "--format", "collaborative", "--rounds", "1", "--no-judge",
                    "--db", str(db))
    assert code == EXIT_FAILED, out
    assert "Cannot ask the clarification questions: stdin is closed or empty" in out
    did = debate_id(out)
    assert f"python -m webapp resume {did}" in out
    assert status_of(db, did) == "awaiting_clarification"  # nothing lost, nothing answered for the user
    monkeypatch.setattr("sys.stdin", io.StringIO("Saturday\n" + "\n" * 20))
    code, out = run("resume", did, "--db", str(db))
    assert code == EXIT_OK, out
    assert status_of(db, did) == "completed"


def test_ctrl_c_at_the_clarification_prompt_stops_waiting_and_resume_asks_again(tmp_path: Path) -> None:
    db = tmp_path / "sigint.sqlite3"
    env = child_env(ROSTRUM_DEMO_SPEED="0", PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "webapp", "debate", "Plan our offsite", "--format", "collaborative", "--rounds", "1",
         "--no-judge", "--db", str(db)],
        cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:  # stdin stays open and empty: the CLI waits for an answer, as on a terminal nobody types at
        seen = read_until(process, lambda line: " asks: " in line, timeout=60)
        process.send_signal(signal.SIGINT)
        # before the fix: a blocking readline on the loop, and the Ctrl-C was never acted on
        seen += read_until(process, lambda line: re.match(r"Debate [0-9a-f]{12}: ", line) is not None, timeout=30)
        process.wait(timeout=30)  # it exits with its stdin still open
    finally:
        if process.poll() is None:
            process.kill()
        rest, _ = process.communicate()
    output = "".join(seen) + rest
    assert process.returncode == EXIT_FAILED, output
    assert "Interrupted (Ctrl-C) before the questions were answered; nothing was sent." in output
    assert "Traceback" not in output
    did = debate_id(output)
    assert status_of(db, did) == "awaiting_clarification"

    stdin = io.StringIO("Next month\n" + "\n" * 20)
    old, sys.stdin = sys.stdin, stdin
    try:
        code, out = run("resume", did, "--db", str(db))
    finally:
        sys.stdin = old
    assert code == EXIT_OK, out
    assert "asks: " in out and status_of(db, did) == "completed"


# --- settings ----------------------------------------------------------------------------------


def test_rostrum_max_retries_sets_a_cli_debate_s_retries_unless_the_config_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROSTRUM_MAX_RETRIES", "7")
    get_settings.cache_clear()
    db = tmp_path / "retries.sqlite3"
    _, out = run("debate", "Retries", "--format", "oxford", "--rounds", "1", "--no-judge", "--db", str(db))
    config = tmp_path / "c.toml"
    config.write_text('topic = "Retries from a file"\nmax_retries = 1\n', encoding="utf-8")
    _, out2 = run("debate", "--config", str(config), "--format", "oxford", "--rounds", "1", "--no-judge",
                  "--db", str(db))
    with sqlite3.connect(db) as conn:
        configs = dict(conn.execute("SELECT id, config FROM debates").fetchall())
    assert json.loads(configs[debate_id(out)])["max_retries"] == 7
    assert json.loads(configs[debate_id(out2)])["max_retries"] == 1
