"""How long a person's command takes to reach the worker that runs the debate and come back answered.

    .venv/bin/python bench/worker_commands.py --redis redis://127.0.0.1:6379/0 [--db postgresql://…]
                                              [--debates 5] [--commands 60] [--json]

Starts one `python -m webapp worker` on the database (`--db`, default a new SQLite file in a temporary
directory; a PostgreSQL database should be empty), has it run `--debates` demo debates, then sends
pause and resume to them in turn from this process, through `Engine.command` as a web instance with
`ROSTRUM_WORKERS=external` does: each time is from the call until the answer is back (the job row
written, the ring on Redis, the worker's transition committed, its answer received, the web session
caught up). Target: p99 ≤ 200 ms with Redis (issue 14). Without `--redis` the job table is polled and
the figures show the poll interval instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webapp.engine.api import Command
from webapp.engine.engine import Engine
from webapp.engine.machine import State, TransitionNotAllowed
from webapp.models import DebateConfig
from webapp.settings import Settings
from webapp.workers import WorkerClient

ROOT = Path(__file__).resolve().parents[1]
TARGET_P99_MS = 200.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def run(db: str, redis_url: str | None, debates: int, commands: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROSTRUM_")}
    env |= {"ROSTRUM_DEMO_SPEED": "5"} | ({"ROSTRUM_REDIS_URL": redis_url} if redis_url else {})
    worker = subprocess.Popen([sys.executable, "-m", "webapp", "worker", "--db", db], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE)
    assert worker.stdout is not None
    await asyncio.to_thread(worker.stdout.readline)  # "worker … ready"
    engine = await Engine.open(settings=Settings(db=db))
    client = WorkerClient(engine.store, redis_url)
    engine.workers = client
    try:
        sessions = [await engine.start(DebateConfig(topic=f"Bench {i}", format="classic")) for i in range(debates)]
        latencies: list[float] = []
        refused = 0
        for i in range(commands):
            session = sessions[i % debates]
            command = Command.RESUME if session.status is State.PAUSED else Command.PAUSE
            t0 = time.perf_counter()
            try:
                await engine.command(session, command, actor="bench")
            except TransitionNotAllowed:
                refused += 1
            latencies.append((time.perf_counter() - t0) * 1000)
        return {"commands": float(commands), "refused": float(refused),
                "command_p50_ms": statistics.median(latencies), "command_p99_ms": percentile(latencies, 99),
                "command_max_ms": max(latencies)}
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        await client.close()
        await engine.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="postgresql:// URL or SQLite file (default: a new temporary file)")
    parser.add_argument("--redis", default=None, help="redis:// URL (without it, the job table is polled)")
    parser.add_argument("--debates", type=int, default=5)
    parser.add_argument("--commands", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "bench.sqlite3")
        results = asyncio.run(run(db, args.redis, args.debates, args.commands))
    if args.json:
        print(json.dumps(results))
    else:
        for name, value in results.items():
            print(f"{name:>16}: {value:.1f}")
    ok = args.redis is None or results["command_p99_ms"] <= TARGET_P99_MS
    if not ok:
        print(f"missed: command_p99_ms ≤ {TARGET_P99_MS:g}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
