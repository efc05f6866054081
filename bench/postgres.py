"""The store benchmarks of `bench/run.py` on the PostgreSQL store, against a server you name:

    .venv/bin/python bench/postgres.py postgresql://user:password@127.0.0.1:5432/empty_db

The database should be empty (its tables are made on open; the run adds ~1,600 debates). Reports the
same figures as the SQLite store's `bench_store` (appends per second, one debate after another; a page
of 20 out of 1,000; a search; rebuilding a 600-event debate) and appends per second with 50 debates
appending at once, the case PostgreSQL is there for. Targets: the SQLite store's.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from run import report  # bench/run.py (this script's directory is on sys.path)

from webapp.models import EventKind
from webapp.store.postgres import PostgresStore
from webapp.store.protocol import redacted

TARGETS = {"appends_per_s": (">", 150), "list_page_s": ("<", 0.02), "search_s": ("<", 0.02),
           "rebuild_600_events_s": ("<", 0.5)}


async def run(dsn: str) -> dict[str, float]:
    from webapp.engine.state import DebateState
    from webapp.models import DebateConfig

    store = await PostgresStore.open(dsn)
    try:
        config = DebateConfig(topic="store", format="roundtable", rounds=10).model_dump(mode="json")
        await store.create_debate("bench-log", "store", "roundtable", config, {"status": "idle"})
        n = 600
        t0 = time.perf_counter()
        for i in range(n):
            await store.append("bench-log", EventKind.NOTE, {"type": "retry", "turn": f"bench/{i}", "text": "x" * 800})
        appends = n / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        DebateState.from_events(await store.events("bench-log"))
        rebuild = time.perf_counter() - t0
        for i in range(1000):
            await store.create_debate(f"bench{i:05d}", f"Topic number {i}", "classic", {}, {"status": "completed"})
        t0 = time.perf_counter()
        for _ in range(20):
            await store.list_debates(limit=20, offset=500)
        listing = (time.perf_counter() - t0) / 20
        t0 = time.perf_counter()
        for _ in range(20):
            await store.list_debates(query="number 99", statuses=["completed"], limit=20)
        search = (time.perf_counter() - t0) / 20

        async def writer(debate_id: str) -> None:
            for i in range(40):
                await store.append(debate_id, EventKind.NOTE, {"n": i, "text": "y" * 400}, expected_seq=i + 2)

        ids = [f"live{i:02d}" for i in range(50)]
        for debate_id in ids:
            await store.create_debate(debate_id, "live", "classic", {}, {"status": "debating"})
        t0 = time.perf_counter()
        await asyncio.gather(*(writer(d) for d in ids))
        parallel = 50 * 40 / (time.perf_counter() - t0)
    finally:
        await store.close()
    return {"appends_per_s": appends, "rebuild_600_events_s": rebuild, "list_page_s": listing, "search_s": search,
            "parallel_appends_per_s": parallel}


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].startswith(("postgresql://", "postgres://")):
        print(__doc__, file=sys.stderr)
        return 2
    print(f"PostgreSQL store at {redacted(sys.argv[1])}")
    return report(asyncio.run(run(sys.argv[1])), TARGETS)


if __name__ == "__main__":
    raise SystemExit(main())
