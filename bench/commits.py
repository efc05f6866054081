"""Event-commit latency with many live debates appending at once (the store's group commit).

    .venv/bin/python bench/commits.py [--debates 50] [--events 40] [--pace-ms 40] [--json]

Each debate is a task that appends events the way a runner does (a turn-sized payload, the listing
summary and `expected_seq`), pausing a random 0..2×pace between appends like a debate waiting for a
model. The latency of an append is the time from the call to its return, i.e. until the event is
committed with `synchronous=FULL`. Two scenarios: `paced` (live debates) and `burst` (no pause at all:
every debate appends back to back, the worst case). `fsync_floor` is the disk's own latency: one
process committing one event at a time with plain sqlite3 and no contention, so the other numbers can
be read against what the disk itself does at the moment (on a shared machine it varies a lot).

It uses only `Store.open`, `create_debate`, `append` and `close`, so the same script measures an older
checkout too (run it from that checkout's `bench/`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webapp.models import EventKind
from webapp.store import Store


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def _debate(store: Store, debate_id: str, events: int, pace_s: float, rng: random.Random,
                  latencies: list[float]) -> None:
    seq = 1
    for i in range(events):
        if pace_s:
            await asyncio.sleep(rng.uniform(0, 2 * pace_s))
        t0 = time.perf_counter()
        await store.append(
            debate_id, EventKind.NOTE, {"type": "retry", "turn": f"bench/{i}", "text": "word " * 200},
            idem_key=f"turn/{i}", summary={"status": "debating", "round": i // 4 + 1, "turn_count": i + 1,
                                           "cost_usd": i * 0.001},
            expected_seq=seq + 1,
        )
        latencies.append(time.perf_counter() - t0)
        seq += 1


async def scenario(path: Path, debates: int, events: int, pace_s: float, seed: int = 7) -> dict[str, float]:
    store = await Store.open(path)
    try:
        ids = [f"bench{i:03d}" for i in range(debates)]
        for debate_id in ids:
            await store.create_debate(debate_id, f"Topic {debate_id}", "classic", {}, {"status": "debating"})
        latencies: list[float] = []
        rng = random.Random(seed)
        t0 = time.perf_counter()
        await asyncio.gather(*(
            _debate(store, debate_id, events, pace_s, random.Random(rng.random()), latencies) for debate_id in ids
        ))
        wall = time.perf_counter() - t0
    finally:
        await store.close()
    return {
        "appends": len(latencies),
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "max_ms": max(latencies) * 1000,
        "mean_ms": statistics.fmean(latencies) * 1000,
        "appends_per_s": len(latencies) / wall,
    }


def fsync_floor(path: Path, commits: int = 500) -> dict[str, float]:
    """One event per transaction, nothing else running in this process: what a commit costs the disk."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE events (data TEXT)")
    latencies = []
    for _ in range(commits):
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO events VALUES (?)", ("word " * 200,))
        conn.execute("COMMIT")
        latencies.append(time.perf_counter() - t0)
    conn.close()
    return {"commits": commits, "p50_ms": percentile(latencies, 50) * 1000, "p99_ms": percentile(latencies, 99) * 1000,
            "max_ms": max(latencies) * 1000}


async def run(debates: int = 50, events: int = 40, pace_ms: float = 40.0) -> dict[str, dict[str, float]]:
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["fsync_floor"] = fsync_floor(Path(tmp) / "floor.sqlite3")
        results["paced"] = await scenario(Path(tmp) / "paced.sqlite3", debates, events, pace_ms / 1000)
        results["burst"] = await scenario(Path(tmp) / "burst.sqlite3", debates, events, 0.0)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--debates", type=int, default=50)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--pace-ms", type=float, default=40.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(run(args.debates, args.events, args.pace_ms))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for name, values in results.items():
        print(f"{name:<11} " + "  ".join(f"{k} {v:9.2f}" for k, v in values.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
