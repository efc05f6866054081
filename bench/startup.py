"""Start-up: seconds from `python main.py` to its first HTTP 200 on `/`.

    .venv/bin/python bench/startup.py [--runs 5] [--debates 0] [--json]

Each run starts main.py as a real subprocess (its own working directory and database, no test
variables, sign-in off on 127.0.0.1) and polls `GET /` every 10 ms until it answers 200; the server is
then stopped. `--debates N` first fills the database with N finished debates of 20 events each, to
show what the start-up integrity check (`PRAGMA quick_check`) costs on a large file.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its siblings, also when imported as bench.startup
from serving import NotServing, free_port, running, wait_until_answering

ROOT = Path(__file__).resolve().parents[1]


def fill(db: Path, debates: int) -> None:
    """A database at the current schema holding `debates` finished debates (written directly: fast)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The schema comes from the code under test (whatever version it is).
    subprocess.run([sys.executable, "-c", "import asyncio, sys\nfrom webapp.store import Store\n"
                    "async def main():\n    await (await Store.open(sys.argv[1])).close()\nasyncio.run(main())",
                    str(db)], check=True, cwd=ROOT, env=env)
    conn = sqlite3.connect(db)
    now = "2026-01-01T00:00:00+00:00"
    text = json.dumps({"turn": {"text": "An argument of about the usual length. " * 12}})
    with conn:
        conn.executemany(
            "INSERT INTO debates (id, topic, topic_search, format, config, status, total_rounds, participants,"
            " created_at, updated_at, last_seq) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            ((f"d{i:07d}", f"Topic {i}", f"topic {i}", "classic", "{}", "completed", 3, "[]", now, now, 20)
             for i in range(debates)),
        )
        conn.executemany(
            "INSERT INTO events (debate_id, seq, kind, at, data) VALUES (?,?,?,?,?)",
            ((f"d{i:07d}", seq, "note", now, text) for i in range(debates) for seq in range(1, 21)),
        )
    conn.close()


def first_200(workdir: Path, db: Path, timeout: float = 60.0) -> float:
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k != "PYTEST_CURRENT_TEST" and not k.startswith(("NICEGUI_", "ROSTRUM_"))}
    env.update({"ROSTRUM_DB": str(db), "ROSTRUM_PORT": str(port), "ROSTRUM_HOST": "127.0.0.1"})
    t0 = time.perf_counter()
    with running([sys.executable, str(ROOT / "main.py")], cwd=workdir, env=env,
                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as process:
        try:
            return wait_until_answering(process, f"http://127.0.0.1:{port}/", timeout=timeout, interval=0.01,
                                        started=t0)
        except NotServing as exc:
            if exc.exited:
                said = process.stderr.read() if process.stderr is not None else ""
                raise SystemExit(f"main.py exited with {process.returncode}: {said[-2000:]}") from None
            raise SystemExit(f"no HTTP 200 within {timeout} s") from None


def run(runs: int = 5, debates: int = 0) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        db = workdir / "data" / "rostrum.sqlite3"
        if debates:
            fill(db, debates)
        first_200(workdir, db)  # warm-up: bytecode caches, the new database, its migration
        times = [first_200(workdir, db) for _ in range(runs)]
        size_mb = db.stat().st_size / 1e6
    return {"first_200_s_median": statistics.median(times), "first_200_s_min": min(times),
            "first_200_s_max": max(times), "db_mb": size_mb}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--debates", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = run(args.runs, args.debates)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, value in results.items():
            print(f"{name:<22} {value:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
