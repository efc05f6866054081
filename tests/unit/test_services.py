"""tests/services.py: a missing service skips a test, unless the run requires it (`make test` does for
what it installed), and then the test fails with the reason."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
PROBE = textwrap.dedent("""
    from tests.services import unavailable

    def test_needs_redis():
        unavailable("redis", "redis-server is not installed here")
""")


def run_probe(tmp_path: Path, required: str) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "test_probe.py"
    test.write_text(PROBE)
    env = child_env()
    env["ROSTRUM_REQUIRE_SERVICES"] = required
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:randomly", "-p", "no:cacheprovider",
                           str(test), "--rootdir", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("required", "outcome"), [("", "1 skipped"), ("postgres,axe", "1 skipped"),
                                                   ("postgres,redis", "1 failed")])
def test_a_missing_service_skips_unless_required(tmp_path: Path, required: str, outcome: str) -> None:
    result = run_probe(tmp_path, required)
    assert outcome in result.stdout, result.stdout + result.stderr
    assert "redis-server is not installed here" in result.stdout


def test_an_unknown_required_service_is_a_usage_error(tmp_path: Path) -> None:
    result = run_probe(tmp_path, "redis,mongodb")
    assert result.returncode != 0 and "mongodb" in result.stdout + result.stderr
