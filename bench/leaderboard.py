"""Leaderboard over 10,000 stored debates: target < 1 s, bootstrap included (cached; recomputed when a
verdict is stored).

    .venv/bin/python bench/leaderboard.py [--debates N]     # also part of `make bench` (bench/run.py)

Stores N completed, judged debates between 12 demo "models" of known strengths (written straight into
the database file: the store's own write path is benchmarked elsewhere), then times: the first board
(one query for the verdicts, the plain fit with 100 bootstrap replicates, the style-controlled fit with
50, the head-to-head and the ratings over time), the same board again (cached), and the board after one
more verdict is stored (the cache invalidated: everything again).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import webapp.results.ratings  # noqa: F401  numpy and scipy, imported once per process: not part of the timing
from webapp.models import EventKind, JudgeRuling, Verdict
from webapp.results.leaderboard import leaderboard
from webapp.store import Store

MODELS = 12


def _verdict(winner: str | None, words: tuple[int, int], rng: random.Random) -> dict[str, object]:
    judges = ["demo:judge-a", "demo:judge-b", "demo:judge-c"]
    rulings = [JudgeRuling(judge=j, winner=winner if rng.random() < 0.85 else ("a" if winner == "b" else "b"),
                           reasoning="Reasons. " * 40, order=["a", "b"]) for j in judges]
    verdict = Verdict(winner=winner, scores={"a": 70, "b": 65}, rulings=rulings, reasoning="Overall. " * 80,
                      word_counts={"a": words[0], "b": words[1]})
    return {"verdict": verdict.model_dump(mode="json"), "calls": []}


def populate(path: Path, n: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    strengths = [rng.gauss(0, 1) for _ in range(MODELS)]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    conn = sqlite3.connect(path)
    debates, events = [], []
    for i in range(n):
        x, y = rng.sample(range(MODELS), 2)
        cast = [{"id": "a", "name": "A", "provider": "demo", "model": f"m{x:02d}", "position": "pro"},
                {"id": "b", "name": "B", "provider": "demo", "model": f"m{y:02d}", "position": "con"}]
        p = 1 / (1 + math.exp(-(strengths[x] - strengths[y])))
        u = rng.random()
        winner = None if u < 0.08 else ("a" if u < 0.08 + 0.92 * p else "b")
        at = (start + timedelta(minutes=i)).isoformat()
        debate_id = f"bench{i:06d}"
        config = {"topic": f"Topic {i}", "format": "classic", "participants": cast,
                  "tags": ["ethics"] if i % 3 == 0 else ["science"]}
        debates.append((debate_id, f"Topic {i}", f"topic {i}", "classic", json.dumps(config), "completed",
                        json.dumps(cast), at, at, 2, "", 0.01 + 0.001 * (i % 7)))
        events.append((debate_id, 1, EventKind.CREATED.value, at, json.dumps({"config": config}), "created"))
        words = (rng.randint(300, 900), rng.randint(300, 900))
        events.append((debate_id, 2, EventKind.VERDICT.value, at, json.dumps(_verdict(winner, words, rng)), None))
    with conn:
        conn.executemany("INSERT INTO debates (id, topic, topic_search, format, config, status, participants, "
                         "created_at, updated_at, last_seq, created_by, cost_usd) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                         debates)
        conn.executemany("INSERT INTO events (debate_id, seq, kind, at, data, idem_key) VALUES (?,?,?,?,?,?)", events)
    conn.close()


async def run(debates: int = 10_000) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "leaderboard.sqlite3"
        store = await Store.open(path)
        await store.close()
        populate(path, debates)
        store = await Store.open(path)
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            board = await leaderboard(store)
            first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
            if board.comparisons != debates:
                raise SystemExit(f"expected {debates} rated debates, got {board.comparisons}")
            t0 = time.perf_counter()
            again = await leaderboard(store)
            cached = time.perf_counter() - t0
            assert again is board
            last = f"bench{debates - 1:06d}"
            await store.append(last, EventKind.VERDICT, _verdict("a", (500, 500), random.Random(1)))
            t0, c0 = time.perf_counter(), time.process_time()
            fresh = await leaderboard(store)
            invalidated, invalidated_cpu = time.perf_counter() - t0, time.process_time() - c0
            assert fresh is not board
        finally:
            await store.close()
    # CPU seconds too: on a shared machine the wall time also counts other processes' turns.
    return {"leaderboard_10k_s": first, "leaderboard_10k_cpu_s": first_cpu, "leaderboard_cached_s": cached,
            "leaderboard_new_verdict_s": invalidated, "leaderboard_new_verdict_cpu_s": invalidated_cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debates", type=int, default=10_000)
    args = parser.parse_args()
    results = asyncio.run(run(args.debates))
    for name, value in results.items():
        print(f"{name:<30} {value:>10.4f}")
    return 0 if results["leaderboard_10k_s"] < 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
