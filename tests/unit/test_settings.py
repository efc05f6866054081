"""Keys come from the environment first, then `.env` — re-read when the file changes, not on every call."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from webapp.settings import read_env_var


def test_env_wins_then_dotenv_and_dotenv_changes_are_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ROSTRUM_TEST_KEY", raising=False)
    assert read_env_var("ROSTRUM_TEST_KEY") is None  # no .env at all
    env = tmp_path / ".env"
    env.write_text('ROSTRUM_TEST_KEY="from-file-1"\n', encoding="utf-8")
    assert read_env_var("ROSTRUM_TEST_KEY") == "from-file-1"
    env.write_text("export ROSTRUM_TEST_KEY=from-file-2\n", encoding="utf-8")
    os.utime(env, ns=(env.stat().st_atime_ns, env.stat().st_mtime_ns + 1_000_000))  # a later write
    assert read_env_var("ROSTRUM_TEST_KEY") == "from-file-2"
    monkeypatch.setenv("ROSTRUM_TEST_KEY", "from-environment")
    assert read_env_var("ROSTRUM_TEST_KEY") == "from-environment"
