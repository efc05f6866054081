"""The scale-out benchmarks (`bench/postgres.py`, `bench/scale_workers.py`, `bench/scale_spectators.py`)
run end to end at a tiny size, so they cannot rot: each is started as a person starts it, on the test
session's PostgreSQL and Redis, and what it reports is checked for sense. Their speed targets are the
benchmarks' business (`make bench-scale`), not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.child_env import child_env
from tests.redis_fixtures import RedisServer

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
TIMEOUT = 240  # seconds: a generous bound for a few seconds' work on a loaded machine


def run_bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=ROOT, env=child_env(),
                            capture_output=True, text=True, timeout=TIMEOUT)
    # 0: targets met, 1: a target missed (timings on a busy test machine); anything else is a failure.
    assert result.returncode in (0, 1), f"{script} failed ({result.returncode}):\n{result.stderr[-3000:]}"
    return result


def figures(output: str) -> dict[str, float]:
    """`report()` lines of bench/run.py: name, value, maybe a target."""
    out = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith("live"):
            out[parts[0]] = float(parts[1])
    return out


def test_live_debates_on_postgres_bench(pg_dsn: str) -> None:
    result = run_bench("postgres.py", pg_dsn, "--live", "3", "--rounds", "1", "--skip-store", "--skip-paced")
    live = figures(result.stdout)
    assert live["live_debates"] == 3
    assert live["live_completed"] == 3
    assert live["live_events"] >= 3 * 10  # every debate's transitions, turns and verdict were timed
    assert 0 < live["live_commit_p50_ms"] <= live["live_commit_p99_ms"] <= live["live_commit_max_ms"]
    assert live["live_events_per_s"] > 0


def test_debates_over_workers_bench(pg_server: str, redis_server: RedisServer) -> None:
    result = run_bench("scale_workers.py", "--debates", "3", "--workers", "2", "--speed", "0", "--rounds", "1",
                       "--timeout", "120", "--pg-admin", pg_server, "--redis", redis_server.url, "--json")
    report: dict[str, Any] = json.loads(result.stdout)
    single, many = report["single"], report["many"]
    assert single["statuses"] == {"completed": 1}
    assert many["statuses"] == {"completed": 3}
    assert sum(many["shares"]) <= 3  # the leases seen while they ran (demo-instant debates end at once)
    assert many["wall_s"] >= many["debate_s_max"] > 0
    assert 0 <= many["in_turns_s_median"] <= many["debate_s_median"]  # a run is turns plus what lies between
    assert "postgres_cpu_s" in many and "redis_cpu_s" in many
    assert report["ratio"] == many["wall_s"] / single["wall_s"]


def test_spectators_over_instances_bench(pg_server: str, redis_server: RedisServer) -> None:
    result = run_bench("scale_spectators.py", "--spectators", "4", "--instances", "2", "--speed", "0",
                       "--rounds", "1", "--grace", "1", "--timeout", "120", "--pg-admin", pg_server,
                       "--redis", redis_server.url, "--json")
    report: dict[str, Any] = json.loads(result.stdout)
    alone, watched = report["runs"]
    assert [alone["spectators"], watched["spectators"]] == [0, 4]
    assert alone["status"] == watched["status"] == "completed"
    for instance in watched["instances"]:
        assert instance["spectators"] == instance["connected"] == 2
        assert instance["failed"] == instance["disconnected"] == 0
        assert instance["messages_median"] > 0  # the page's updates reached each spectator
    assert watched["shown_chars"] > 0
