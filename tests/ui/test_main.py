"""`python main.py` refuses a corrupt database with a clear message and a non-zero exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_corrupt_database_stops_the_start_with_a_clear_message(tmp_path: Path) -> None:
    db = tmp_path / "broken.sqlite3"
    db.write_bytes(b"this is not a database" * 200)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update(ROSTRUM_DB=str(db), ROSTRUM_PORT="1")
    result = subprocess.run([sys.executable, str(ROOT / "main.py")], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert "broken.sqlite3" in result.stderr and "ROSTRUM_DB" in result.stderr
    assert db.read_bytes() == b"this is not a database" * 200  # left untouched
