"""`python -m webapp users …` and `delete`: accounts managed from the shell, through the command gate
(audited as `cli`), with argon2 hashes that are never printed, on real SQLite files."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child_env import child_env
from webapp.access.passwords import verify_password
from webapp.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from webapp.store import Store
from webapp.store.accounts import Accounts

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"


class Terminal(io.StringIO):
    """A stdin that says it is a terminal (what `getpass` and the confirmation prompt look for)."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _instant_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    monkeypatch.delenv("ROSTRUM_DEMO_FAIL", raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "users.sqlite3"


@pytest.fixture
def cli(db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run one command in-process with `stdin` as its standard input; returns (code, stdout, stderr)."""

    def run(*argv: str, stdin: str | io.StringIO = "") -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", stdin if isinstance(stdin, io.StringIO) else io.StringIO(stdin))
        capsys.readouterr()
        out = io.StringIO()
        code = main([*argv, "--db", str(db)], out=out)
        return code, out.getvalue(), capsys.readouterr().err

    return run


def rows(db: Path, sql: str, *params: object) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def user_row(db: Path, name: str) -> dict | None:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        row = conn.execute("SELECT * FROM users WHERE username = ?", (name,)).fetchone()
    return dict(row) if row else None


def audit(db: Path) -> list[tuple[str, str, str, dict]]:
    found = rows(db, "SELECT actor, action, outcome, detail FROM audit ORDER BY id")
    return [(actor, action, outcome, json.loads(detail) if detail.startswith("{") else detail)
            for actor, action, outcome, detail in found]


# --- add --------------------------------------------------------------------------------------


def test_add_reads_the_first_line_of_stdin_and_stores_an_argon2id_hash(cli, db: Path) -> None:
    code, out, err = cli("users", "add", "ada", "--role", "admin", stdin=f"  {PASSWORD}  \nsecond line ignored\n")
    assert (code, err) == (EXIT_OK, "")
    assert "Added ada (admin)" in out
    row = user_row(db, "ada")
    assert row is not None and row["role"] == "admin" and row["disabled"] == 0
    assert row["password_hash"].startswith("$argon2id$")
    assert PASSWORD not in row["password_hash"]
    # Only the line break is removed: surrounding spaces are part of the password.
    assert verify_password(row["password_hash"], f"  {PASSWORD}  ")
    assert not verify_password(row["password_hash"], PASSWORD)
    assert audit(db) == [("cli", "user_add", "ok", {"role": "admin", "user": "ada"})]


def test_a_windows_line_ending_is_a_line_ending_too(cli, db: Path) -> None:
    assert cli("users", "add", "bo", "--role", "viewer", stdin=f"{PASSWORD}\r\n")[0] == EXIT_OK
    assert verify_password(user_row(db, "bo")["password_hash"], PASSWORD)


def test_add_on_a_terminal_prompts_twice_without_echo(cli, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompts: list[str] = []
    answers = iter([PASSWORD, PASSWORD])

    def fake_getpass(prompt: str = "") -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr("getpass.getpass", fake_getpass)
    code, out, _ = cli("users", "add", "ada", "--role", "operator", stdin=Terminal())
    assert code == EXIT_OK and "Added ada (operator)" in out
    assert len(prompts) == 2 and "ada" in prompts[0]
    assert verify_password(user_row(db, "ada")["password_hash"], PASSWORD)


def test_two_different_passwords_on_a_terminal_are_refused(cli, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([PASSWORD, PASSWORD + "!"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    code, _, err = cli("users", "add", "ada", "--role", "admin", stdin=Terminal())
    assert code == EXIT_USAGE and "do not match" in err
    assert user_row(db, "ada") is None


def test_a_short_password_is_refused_and_nothing_is_stored(cli, db: Path) -> None:
    code, out, err = cli("users", "add", "ada", "--role", "admin", stdin="short\n")
    assert code == EXIT_USAGE and out == ""
    assert err.startswith("error: password:") and "at least 8 characters" in err
    assert rows(db, "SELECT count(*) FROM users") == [(0,)]
    assert audit(db) == []


def test_an_empty_stdin_is_refused_with_how_to_pipe_a_password(cli, db: Path) -> None:
    code, _, err = cli("users", "add", "ada", "--role", "admin", stdin="")
    assert code == EXIT_USAGE and "stdin is empty" in err and "printf" in err
    assert user_row(db, "ada") is None


def test_a_taken_name_is_refused_without_case_and_the_first_account_is_kept(cli, db: Path) -> None:
    assert cli("users", "add", "ada", "--role", "admin", stdin=f"{PASSWORD}\n")[0] == EXIT_OK
    before = user_row(db, "ada")
    code, _, err = cli("users", "add", "ADA", "--role", "viewer", stdin="another password\n")
    assert code == EXIT_USAGE and "already exists" in err and "'ada'" in err
    assert rows(db, "SELECT count(*) FROM users") == [(1,)]
    assert user_row(db, "ada") == before


@pytest.mark.parametrize(("name", "problem"), [("cli", "reserved"), ("system", "reserved"), ("a b", "username"),
                                               ("_under", "username"), ("x" * 65, "username")])
def test_bad_and_reserved_names_are_refused(cli, db: Path, name: str, problem: str) -> None:
    code, _, err = cli("users", "add", name, "--role", "viewer", stdin=f"{PASSWORD}\n")
    assert code == EXIT_USAGE and problem in err
    assert rows(db, "SELECT count(*) FROM users") == [(0,)]


def test_a_role_outside_the_three_is_a_usage_error(cli, db: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        cli("users", "add", "ada", "--role", "superuser", stdin=f"{PASSWORD}\n")
    assert exc.value.code == EXIT_USAGE


def test_no_password_makes_a_proxy_header_account(cli, db: Path) -> None:
    code, out, _ = cli("users", "add", "ada@example.com", "--role", "operator", "--no-password")
    assert code == EXIT_OK and "proxy header" in out
    assert user_row(db, "ada@example.com")["password_hash"] is None


# --- list -------------------------------------------------------------------------------------


def test_list_shows_a_table_and_json_without_any_hash(cli, db: Path) -> None:
    code, out, _ = cli("users", "list")
    assert code == EXIT_OK and "No users yet" in out and "users add NAME --role admin" in out
    cli("users", "add", "ada", "--role", "admin", stdin=f"{PASSWORD}\n")
    cli("users", "add", "bo@example.com", "--role", "viewer", "--no-password")
    cli("users", "add", "cy", "--role", "operator", stdin=f"{PASSWORD}\n")
    cli("users", "disable", "cy")

    code, table, _ = cli("users", "list")
    assert code == EXIT_OK
    header, *lines = table.splitlines()
    assert header.split() == ["username", "role", "status", "signs", "in", "with", "created", "(UTC)", "last",
                              "sign-in", "(UTC)"]
    by_name = {line.split()[0]: line for line in lines}
    assert set(by_name) == {"ada", "bo@example.com", "cy"}
    assert re.match(r"ada\s+admin\s+active\s+password\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+never$", by_name["ada"])
    assert re.match(r"bo@example.com\s+viewer\s+active\s+proxy header\s", by_name["bo@example.com"])
    assert re.match(r"cy\s+operator\s+disabled\s+password\s", by_name["cy"])

    code, listed, _ = cli("users", "list", "--json")
    assert code == EXIT_OK
    data = {u["username"]: u for u in json.loads(listed)}
    assert data["ada"] == {"username": "ada", "role": "admin", "created_at": data["ada"]["created_at"],
                           "last_login_at": None, "disabled": False, "has_password": True}
    assert data["bo@example.com"]["has_password"] is False and data["cy"]["disabled"] is True
    hashes = [h for (h,) in rows(db, "SELECT password_hash FROM users WHERE password_hash IS NOT NULL")]
    assert len(hashes) == 2
    for text in (table, listed):
        assert "argon2" not in text and "password_hash" not in text
        assert not any(h in text or h.split("$")[-1] in text for h in hashes)


# --- set-role, disable, enable, passwd ----------------------------------------------------------


def test_the_last_admin_can_be_neither_demoted_nor_disabled(cli, db: Path) -> None:
    cli("users", "add", "ada", "--role", "admin", stdin=f"{PASSWORD}\n")
    code, _, err = cli("users", "set-role", "ada", "operator")
    assert code == EXIT_USAGE and "only active admin" in err and "users set-role" in err
    code, _, err = cli("users", "disable", "ada")
    assert code == EXIT_USAGE and "only active admin" in err
    assert user_row(db, "ada")["role"] == "admin" and user_row(db, "ada")["disabled"] == 0

    # With a second admin both work, and then the remaining admin is protected again.
    cli("users", "add", "bo", "--role", "admin", stdin=f"{PASSWORD}\n")
    code, out, _ = cli("users", "set-role", "ada", "operator")
    assert code == EXIT_OK and "ada: admin → operator" in out
    assert user_row(db, "ada")["role"] == "operator"
    assert cli("users", "disable", "bo")[0] == EXIT_USAGE
    assert cli("users", "set-role", "bo", "viewer")[0] == EXIT_USAGE
    assert user_row(db, "bo")["role"] == "admin"


def test_disable_and_enable_are_recorded_and_audited_as_cli(cli, db: Path) -> None:
    cli("users", "add", "ada", "--role", "admin", stdin=f"{PASSWORD}\n")
    cli("users", "add", "bo", "--role", "operator", stdin=f"{PASSWORD}\n")
    code, out, _ = cli("users", "disable", "bo")
    assert code == EXIT_OK and "bo: disabled" in out
    assert user_row(db, "bo")["disabled"] == 1
    code, out, _ = cli("users", "enable", "BO")  # names are matched without case
    assert code == EXIT_OK and "bo: enabled" in out
    assert user_row(db, "bo")["disabled"] == 0
    cli("users", "set-role", "bo", "viewer")
    assert audit(db) == [
        ("cli", "user_add", "ok", {"role": "admin", "user": "ada"}),
        ("cli", "user_add", "ok", {"role": "operator", "user": "bo"}),
        ("cli", "user_disable", "ok", {"user": "bo"}),
        ("cli", "user_enable", "ok", {"user": "bo"}),
        ("cli", "user_set_role", "ok", {"from": "operator", "role": "viewer", "user": "bo"}),
    ]


def test_passwd_replaces_the_hash(cli, db: Path) -> None:
    cli("users", "add", "ada", "--role", "admin", stdin=f"{PASSWORD}\n")
    old = user_row(db, "ada")["password_hash"]
    code, out, _ = cli("users", "passwd", "ada", stdin="a brand new one\n")
    assert code == EXIT_OK and "password changed" in out
    new = user_row(db, "ada")["password_hash"]
    assert new != old and new.startswith("$argon2id$")
    assert verify_password(new, "a brand new one") and not verify_password(new, PASSWORD)
    assert audit(db)[-1] == ("cli", "user_passwd", "ok", {"user": "ada"})
    # A weak new password changes nothing.
    code, _, err = cli("users", "passwd", "ada", stdin="tiny\n")
    assert code == EXIT_USAGE and "at least 8" in err
    assert user_row(db, "ada")["password_hash"] == new


@pytest.mark.parametrize("argv", [["set-role", "zed", "admin"], ["disable", "zed"], ["enable", "zed"],
                                  ["passwd", "zed"]])
def test_an_unknown_user_is_named_in_the_error(cli, db: Path, argv: list[str]) -> None:
    cli("users", "add", "ada", "--role", "admin", stdin=f"{PASSWORD}\n")
    code, out, err = cli("users", *argv, stdin=f"{PASSWORD}\n")
    assert code == EXIT_USAGE and out == ""
    assert "no user named 'zed'" in err
    assert rows(db, "SELECT count(*) FROM users") == [(1,)]
    assert [a[1] for a in audit(db)] == ["user_add"]


def test_the_readme_recipe_pipes_the_password_to_a_real_process(tmp_path: Path) -> None:
    db = tmp_path / "piped.sqlite3"
    env = child_env(ROSTRUM_DB=str(db), PYTHONPATH=str(ROOT))  # run from elsewhere: no stray .env
    done = subprocess.run([sys.executable, "-m", "webapp", "users", "add", "ada", "--role", "admin"],
                          input=f"{PASSWORD}\n", capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Added ada (admin)" in done.stdout
    assert verify_password(user_row(db, "ada")["password_hash"], PASSWORD)
    listed = subprocess.run([sys.executable, "-m", "webapp", "users", "list", "--json"], capture_output=True,
                            text=True, cwd=tmp_path, env=env, timeout=60)
    assert [u["username"] for u in json.loads(listed.stdout)] == ["ada"]
    assert "$argon2" not in listed.stdout


# --- delete -----------------------------------------------------------------------------------


def debate_id(output: str) -> str:
    match = re.search(r"Debate ([0-9a-f]{12})", output)
    assert match, output[:400]
    return match.group(1)


async def _share(db: Path, debate: str) -> None:
    store = await Store.open(db)
    try:
        await Accounts(store).add_link(debate, hashlib.sha256(debate.encode()).hexdigest(), "ada", None)
    finally:
        await store.close()


def counts(db: Path, debate: str) -> dict[str, int]:
    return {table: rows(db, f"SELECT count(*) FROM {table} WHERE {column} = ?", debate)[0][0]
            for table, column in (("debates", "id"), ("events", "debate_id"), ("share_links", "debate_id"))}


def test_delete_removes_the_debate_its_log_and_its_share_links(cli, db: Path) -> None:
    _, out, _ = cli("debate", "Delete me?", "--format", "oxford", "--rounds", "1", "--no-judge")
    gone = debate_id(out)
    _, out, _ = cli("debate", "Keep me?", "--format", "oxford", "--rounds", "1", "--no-judge")
    kept = debate_id(out)
    asyncio.run(_share(db, gone))
    asyncio.run(_share(db, kept))
    assert counts(db, gone)["events"] > 1 and counts(db, gone)["share_links"] == 1

    # Not on a terminal and no --yes: refused, nothing removed.
    code, _, err = cli("delete", gone, stdin="y\n")
    assert code == EXIT_USAGE and "--yes" in err
    assert counts(db, gone)["debates"] == 1
    # On a terminal, anything but yes keeps it.
    code, out, _ = cli("delete", gone, stdin=Terminal("n\n"))
    assert code == EXIT_FAILED and "Delete me?" in out and "Not deleted" in out
    assert counts(db, gone)["debates"] == 1

    code, out, _ = cli("delete", gone[:6], "--yes")  # a unique prefix names it
    assert code == EXIT_OK and f"Deleted {gone}" in out
    assert counts(db, gone) == {"debates": 0, "events": 0, "share_links": 0}
    assert counts(db, kept)["debates"] == 1 and counts(db, kept)["share_links"] == 1
    _, listed, _ = cli("list", "--json")
    assert [d["id"] for d in json.loads(listed)] == [kept]
    assert ("cli", "delete", "ok", {"topic": "Delete me?"}) in audit(db)
    code, _, err = cli("show", gone)
    assert code == EXIT_USAGE and "no debate" in err


def test_delete_confirmed_on_a_terminal(cli, db: Path) -> None:
    _, out, _ = cli("debate", "Short-lived", "--format", "oxford", "--rounds", "1", "--no-judge")
    did = debate_id(out)
    code, out, _ = cli("delete", did, stdin=Terminal("yes\n"))
    assert code == EXIT_OK and "cannot be undone" in out and f"Deleted {did}" in out
    assert counts(db, did)["debates"] == 0


def test_delete_of_an_unknown_id(cli, db: Path) -> None:
    code, _, err = cli("delete", "feedfacecafe", "--yes")
    assert code == EXIT_USAGE and "no debate with id 'feedfacecafe'" in err
