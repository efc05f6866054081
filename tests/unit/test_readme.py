"""The README documents the two commands first, carries the current generated diagram, and keeps up
with the settings, the CLI's commands and the team-hosting recipes it describes."""

import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from webapp.cli import build_parser
from webapp.engine.mermaid import to_mermaid
from webapp.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text of one `## title` section, up to the next `## `."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start: end if end != -1 else len(README)]


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_readme_diagram_is_the_generated_one() -> None:
    assert to_mermaid() in README, "regenerate the README diagram with: python -m webapp diagram"


def test_readme_opens_with_the_two_commands() -> None:
    first_block = README.split("```bash", 1)[1].split("```", 1)[0]
    assert "make run" in first_block and "make test" in first_block
    assert README.index("make run") < README.index("## Hosting for a team")


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci


def test_every_setting_is_in_the_settings_table() -> None:
    table = section("Settings")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(ROSTRUM_[A-Z_]+)` \| ([^|]+) \|", table, re.M)}
    expected = {f"ROSTRUM_{name.upper()}" for name in Settings.model_fields}
    assert set(rows) == expected, f"missing: {expected - set(rows)}, stale: {set(rows) - expected}"
    assert rows["ROSTRUM_HOST"].strip() == "`127.0.0.1`" == f"`{Settings.model_fields['host'].default}`"
    assert rows["ROSTRUM_AUTH"].strip() == "`auto`"
    assert rows["ROSTRUM_SESSION_HOURS"].strip() == f"`{Settings.model_fields['session_hours'].default:g}`"
    assert rows["ROSTRUM_AUTH_HEADER_ROLE"].strip() == f"`{Settings.model_fields['auth_header_role'].default}`"
    assert rows["ROSTRUM_STORAGE_SECRET"].strip() == "generated beside the database"
    assert "rostrum-local" not in README


def test_every_cli_command_is_documented() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    cli = section("The command line")
    for name, sub in commands.items():
        assert f"python -m webapp {name}" in cli, name
        if name == "users":
            users = next(a for a in sub._actions if a.dest == "users_command").choices
            assert set(users) == {"add", "list", "set-role", "disable", "enable", "passwd"}
            for command in users:
                assert f"users {command} " in cli or f"users {command}\n" in cli, command


def test_the_hosting_section_covers_what_a_team_needs() -> None:
    hosting = section("Hosting for a team")
    for needed in ("ROSTRUM_HOST=0.0.0.0", "ROSTRUM_AUTH=off", "python -m webapp users add ada --role admin",
                   "printf '%s\\n' \"$PW\" | python -m webapp users add", "/s/TOKEN", "410", "/admin",
                   "show ID --json", "ROSTRUM_USER_DAILY_USD", "oauth2-proxy", "X-Forwarded-Email",
                   "ROSTRUM_AUTH_HEADER=X-Forwarded-Email ROSTRUM_TRUSTED_PROXIES=127.0.0.1", "TLS",
                   "sqlite3 data/rostrum.sqlite3 \".backup 'backup.sqlite3'\"", ".rostrum-storage-secret"):
        assert needed in hosting, needed
    # The start-up message quoted is the one main.py prints.
    main_py = (ROOT / "main.py").read_text(encoding="utf-8")
    quoted = re.search(r'CREATE_ADMIN = "([^"]+)"', main_py)
    assert quoted and f"    {quoted.group(1)}\n" in hosting
    roles = re.findall(r"^\| `(admin|operator|viewer)` \|", hosting, re.M)
    assert roles == ["admin", "operator", "viewer"]
    nginx = code_blocks(hosting, "nginx")
    assert len(nginx) == 1 and "proxy_set_header X-Forwarded-Email $email;" in nginx[0]
    assert "X-Forwarded-For" not in nginx[0]  # uvicorn would replace the proxy's address by it


@pytest.mark.parametrize("tool", ["sqlite3", "python"])
def test_the_backup_commands_copy_a_live_database(tmp_path: Path, tool: str) -> None:
    command = next(line for block in code_blocks(section("Hosting for a team"), "bash")
                   for line in block.splitlines() if line.startswith(f"{tool} ") and "backup" in line)
    if tool == "sqlite3" and shutil.which("sqlite3") is None:
        pytest.skip("no sqlite3 command-line tool here")
    (tmp_path / "data").mkdir()
    live = sqlite3.connect(tmp_path / "data" / "rostrum.sqlite3")
    try:
        live.execute("PRAGMA journal_mode=WAL")
        live.execute("CREATE TABLE debates (id TEXT)")
        live.execute("INSERT INTO debates VALUES ('still-in-the-wal')")
        live.commit()  # committed, but not checkpointed: the rows are in the -wal file while this stays open
        assert (tmp_path / "data" / "rostrum.sqlite3-wal").stat().st_size > 0
        argv = shlex.split(command.split("#", 1)[0])
        if tool == "python":
            argv[0] = sys.executable
        subprocess.run(argv, cwd=tmp_path, check=True, timeout=60)
    finally:
        live.close()
    with sqlite3.connect(tmp_path / "backup.sqlite3") as copy:
        assert copy.execute("SELECT id FROM debates").fetchall() == [("still-in-the-wal",)]
