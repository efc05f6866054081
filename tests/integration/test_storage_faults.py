"""Storage faults at start-up are reported as what they are, with the path and what to do: by the web
app (`python main.py`, a real subprocess, refuses to serve) and by the CLI, never as a traceback and
never as "corrupt" unless the file is."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child_env import child_env
from webapp.cli import EXIT_FAILED, main
from webapp.store import repository

ROOT = Path(__file__).resolve().parents[2]


def _serve(workdir: Path, db: Path) -> subprocess.CompletedProcess[str]:
    """`python main.py` with `db` as its database, expected to stop before serving."""
    env = child_env(("NICEGUI_", "ROSTRUM_"), ROSTRUM_DB=str(db), ROSTRUM_PORT="1",  # never bound
                    PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, str(ROOT / "main.py")], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=120)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_app_refuses_an_unwritable_directory_with_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the database directory should be")
    db = blocker / "rostrum.sqlite3"
    result = _serve(tmp_path, db)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"rostrum: cannot create the directory {blocker} for database {db}" in result.stderr
    assert "corrupt" not in result.stderr and "move the file aside" not in result.stderr
    assert "writable" in result.stderr.splitlines()[-1]  # the advice


def test_the_app_still_refuses_a_corrupt_file_and_leaves_it_untouched(tmp_path: Path) -> None:
    db = tmp_path / "rostrum.sqlite3"
    db.write_bytes(b"not a database at all\x00\x01" * 400)
    before = _digest(db)
    result = _serve(tmp_path, db)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"database {db} is not a readable Rostrum database" in result.stderr
    assert "move the file aside or set ROSTRUM_DB to another path" in result.stderr
    assert _digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rostrum.sqlite3"]


def test_the_cli_reports_an_unwritable_directory_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("in the way")
    db = blocker / "sub" / "rostrum.sqlite3"
    assert main(["list", "--db", str(db)]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert f"error: cannot create the directory {db.parent} for database {db}" in err
    assert "hint: make the file and its directory writable" in err
    assert not blocker.is_dir()


def test_the_cli_reports_a_locked_database_as_busy_not_corrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "rostrum.sqlite3"
    assert main(["list", "--db", str(db)]) == 0  # created and migrated
    capsys.readouterr()
    monkeypatch.setattr(repository, "LOCK_TIMEOUT", 0.2)  # instead of waiting 10 s for the other process
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process in the middle of a write
    try:
        assert main(["list", "--db", str(db)]) == EXIT_FAILED
    finally:
        other.rollback()
        other.close()
    err = capsys.readouterr().err
    assert f"error: database {db} is locked: another process holds the database" in err
    assert "hint: another process holds the database; retry" in err
    assert "corrupt" not in err and "move the file aside" not in err
