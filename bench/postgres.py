"""The store benchmarks of `bench/run.py` on the PostgreSQL store, and 50 live debates on it:

    .venv/bin/python bench/postgres.py [postgresql://user:password@127.0.0.1:5432/empty_db]
                                       [--live 50] [--rounds 3] [--paced-speed 40] [--paced-rounds 1]
                                       [--skip-store] [--skip-paced]

Without a DSN, a throwaway PostgreSQL 15 server with default durability is started for the run
(`bench/scale_services.py`; `make postgres` installs it). A database you name should be empty (its
tables are made on open; the run adds ~1,600 debates). Reports the same figures as the SQLite store's
`bench_store` (appends per second, one debate after another; a page of 20 out of 1,000; a search;
rebuilding a 600-event debate; targets: the SQLite store's) and appends per second with 50 debates
appending at once, the case PostgreSQL is there for.

Then the issue-14 figure "events per second and commit p50/p99 on Postgres under 50 live debates":
`--live` real debates (classic, demo models, run by one engine as a web process or worker would) at
once, every `append` timed from call to committed. `live_*`: demo models at once (no pacing), so the
events per second are what the store and the engine reach together; `live_paced_*`: demo models at
`--paced-speed` tokens/s, the commit latency a debate sees in normal running. The load average is
printed first: on a shared machine the figures follow it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from run import report  # bench/run.py
from scale_services import clean_up_on_sigterm, load_average, new_database, postgres_server

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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def live(dsn: str, debates: int, speed: float, rounds: int) -> dict[str, float]:
    """`debates` classic debates of demo models at `speed` tokens/s (0: no pacing) started at once on
    one engine; every append's time from call to commit, and events committed per second."""
    from webapp.engine.engine import Engine
    from webapp.models import DebateConfig
    from webapp.settings import Settings

    engine = await Engine.open(dsn, settings=Settings(db=dsn, demo_speed=speed))
    latencies: list[float] = []
    append = engine.store.append

    async def timed_append(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await append(*args, **kwargs)
        finally:
            latencies.append((time.perf_counter() - t0) * 1000)

    engine.store.append = timed_append  # type: ignore[method-assign]  # this engine's store only
    try:
        configs = [DebateConfig(topic=f"Live debate {i}", format="classic", rounds=rounds, seed=i)
                   for i in range(debates)]
        ids = [await engine.create(config) for config in configs]
        latencies.clear()  # creating is not part of the run
        t0 = time.perf_counter()
        sessions = [await engine.session(debate_id) for debate_id in ids]
        for session in sessions:
            session.ensure_running()
        statuses = await asyncio.gather(*(session.join() for session in sessions))
        wall = time.perf_counter() - t0
    finally:
        await engine.close()
    completed = sum(1 for status in statuses if status.value == "completed")
    return {"debates": float(debates), "completed": float(completed), "events": float(len(latencies)),
            "wall_s": wall, "events_per_s": len(latencies) / wall,
            "commit_p50_ms": percentile(latencies, 50), "commit_p99_ms": percentile(latencies, 99),
            "commit_max_ms": max(latencies)}


async def run_all(dsn: str | None, args: argparse.Namespace, admin: str | None) -> dict[str, float]:
    """Each part on its own database when the server is ours (a DSN you name is used for all)."""

    def database() -> str:
        if admin is None:
            assert dsn is not None
            return dsn
        return new_database(admin)

    results: dict[str, float] = {}
    if not args.skip_store:
        results |= await run(database())
    if args.live:
        figures = await live(database(), args.live, 0.0, args.rounds)
        results |= {f"live_{name}": value for name, value in figures.items()}
        if not args.skip_paced:
            figures = await live(database(), args.live, args.paced_speed, args.paced_rounds)
            results |= {f"live_paced_{name}": value for name, value in figures.items()}
    return results


@contextlib.contextmanager
def server(dsn: str | None) -> Iterator[str | None]:
    """None when a DSN was given; else the administrator DSN of a throwaway server for the block."""
    if dsn is not None:
        yield None
        return
    with postgres_server() as admin:
        yield admin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dsn", nargs="?", help="postgresql:// URL of an empty database (default: a throwaway server)")
    parser.add_argument("--live", type=int, default=50, help="live debates at once (0: skip)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each live debate (no pacing)")
    parser.add_argument("--paced-speed", type=float, default=40, help="demo tokens/s of the paced live run")
    parser.add_argument("--paced-rounds", type=int, default=1, help="rounds of each paced live debate")
    parser.add_argument("--skip-store", action="store_true", help="only the live debates")
    parser.add_argument("--skip-paced", action="store_true", help="only the unpaced live debates")
    args = parser.parse_args(argv)
    clean_up_on_sigterm()
    if args.dsn is not None and not args.dsn.startswith(("postgresql://", "postgres://")):
        parser.error("the DSN must be a postgresql:// URL")
    print(f"load average before: {load_average()}")
    with server(args.dsn) as admin:
        where = redacted(args.dsn) if args.dsn else "a throwaway server (default settings: fsync on)"
        print(f"PostgreSQL store at {where}")
        return report(asyncio.run(run_all(args.dsn, args, admin)), TARGETS)


if __name__ == "__main__":
    raise SystemExit(main())
