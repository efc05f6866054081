"""Benchmarks for the engine and the store (not tests: targets are checked and reported here).

    .venv/bin/python bench/run.py            # or: make bench

Targets (2-core machine): a demo-instant classic debate in < 1.5 s; store appends ≥ 150 events/s
with synchronous=FULL; listing a page of 20 out of 1,000 debates in < 20 ms; rebuilding a
600-turn debate's state from its log in < 0.5 s; peak RSS < 250 MB; with 50 live debates appending,
event commits p50 ≤ 2 ms and p99 ≤ 10 ms (`bench/commits.py`); `python main.py` answers its first
HTTP 200 in < 1 s (`bench/startup.py`); the leaderboard over 10,000 stored debates, bootstrap included,
in < 1 s (`bench/leaderboard.py`).
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import commits  # bench/commits.py (this script's directory is on sys.path)
import leaderboard  # bench/leaderboard.py
import startup  # bench/startup.py

from webapp.engine.engine import Engine
from webapp.engine.state import DebateState
from webapp.models import DebateConfig, EventKind
from webapp.providers.demo import OneProvider


async def bench_debate(tmp: Path) -> dict[str, float]:
    engine = await Engine.open(tmp / "debate.sqlite3", providers=OneProvider())
    times = []
    for seed in range(5):
        t0 = time.perf_counter()
        session = await engine.start(DebateConfig(topic="Benchmarks matter", format="classic", seed=seed))
        status = await session.join()
        if status.value != "completed":
            raise SystemExit(f"benchmark debate ended {status.value}: {session.state.machine.context.error}")
        times.append(time.perf_counter() - t0)
    turns = len(session.state.turns)
    await engine.close()
    return {"classic_debate_s_median": statistics.median(times), "turns": turns}


async def bench_store(tmp: Path) -> dict[str, float]:
    engine = await Engine.open(tmp / "store.sqlite3", providers=OneProvider())
    debate_id = await engine.create(DebateConfig(topic="store", format="roundtable", rounds=10))
    n = 600
    t0 = time.perf_counter()
    for i in range(n):
        await engine.store.append(debate_id, EventKind.NOTE, {"type": "retry", "turn": f"bench/{i}", "text": "x" * 800})
    appends = n / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    DebateState.from_events(await engine.store.events(debate_id))
    rebuild = time.perf_counter() - t0
    for i in range(1000):
        await engine.store.create_debate(f"bench{i:05d}", f"Topic number {i}", "classic", {}, {"status": "completed"})
    t0 = time.perf_counter()
    for _ in range(20):
        await engine.list_debates(limit=20, offset=500)
    listing = (time.perf_counter() - t0) / 20
    t0 = time.perf_counter()
    for _ in range(20):
        await engine.list_debates(query="number 99", statuses=["completed"], limit=20)
    search = (time.perf_counter() - t0) / 20
    await engine.close()
    return {"appends_per_s": appends, "rebuild_600_events_s": rebuild, "list_page_s": listing, "search_s": search}


async def bench_commits() -> dict[str, float]:
    """Commit latency with 50 debates appending at once (see bench/commits.py)."""
    results = await commits.run(debates=50, events=40, pace_ms=40.0)
    return {
        "commit_p50_ms": results["paced"]["p50_ms"],
        "commit_p99_ms": results["paced"]["p99_ms"],
        "commit_burst_p99_ms": results["burst"]["p99_ms"],
        "fsync_floor_p99_ms": results["fsync_floor"]["p99_ms"],
    }


async def bench_leaderboard() -> dict[str, float]:
    """The leaderboard over 10,000 stored debates, bootstrap included (see bench/leaderboard.py)."""
    results = await leaderboard.run(10_000)
    return {name: results[name] for name in ("leaderboard_10k_s", "leaderboard_10k_cpu_s", "leaderboard_new_verdict_s")}


def bench_startup() -> dict[str, float]:
    """Seconds from `python main.py` to its first HTTP 200 (see bench/startup.py)."""
    return {"startup_first_200_s": startup.run(runs=3)["first_200_s_median"]}


TARGETS = {
    "classic_debate_s_median": ("<", 1.5),
    "appends_per_s": (">", 150),
    "list_page_s": ("<", 0.02),
    "search_s": ("<", 0.02),
    "rebuild_600_events_s": ("<", 0.5),
    "peak_rss_mb": ("<", 250),
    "commit_p50_ms": ("<", 2.0),
    "commit_p99_ms": ("<", 10.0),
    "startup_first_200_s": ("<", 1.0),
    "leaderboard_10k_s": ("<", 1.0),
}


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        results = await bench_debate(Path(tmp))
        results |= await bench_store(Path(tmp))
    results |= await bench_commits()
    results |= await bench_leaderboard()
    results["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results |= bench_startup()
    return report(results, TARGETS)


def report(results: dict[str, float], targets: dict[str, tuple[str, float]]) -> int:
    """Print each figure against its target; 1 when any target is missed (the exit code)."""
    failed = 0
    for name, value in results.items():
        target = targets.get(name)
        verdict = ""
        if target:
            op, bound = target
            ok = value < bound if op == "<" else value > bound
            failed += not ok
            verdict = f"  target {op} {bound}  {'ok' if ok else 'MISSED'}"
        print(f"{name:<26} {value:>12.4f}{verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
