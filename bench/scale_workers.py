"""Many debates over debate workers: wall time of N debates started at once ÷ wall time of one.

    .venv/bin/python bench/scale_workers.py [--debates 200] [--workers 2] [--speed 40] [--rounds 3]
                                            [--timeout 900] [--json]

Issue 14's target: "200 concurrent debates over 2 workers ÷ 1 debate ≤ 1.3". A throwaway PostgreSQL
(default durability) and Redis are started (`bench/scale_services.py`); for each run, a fresh database
and `--workers` fresh `python -m webapp worker` processes with demo models at `--speed` tokens/s. This
process plays the web instance with `ROSTRUM_WORKERS=external`: it creates the debates (classic, demo
models, `--rounds`), then asks for all of them to start at once through `WorkerClient.run`, as
`Engine.start` does there (a job row each and a ring on Redis; the workers race for the leases). The
wall time runs from that moment to the last event of the last debate (the log's own timestamp); the
run with one debate, same workers, same settings, is the baseline.

Also reported per run: how the debates were shared between the workers (their leases, read every
0.5 s while they run: a debate over in less is not counted; one taken over counts for both), how long
the last one waited to start, each debate's own duration (median / max), and the CPU seconds of the
workers and of the PostgreSQL and Redis servers (from /proc): on 2 cores, when those add up to nearly
2 × the wall time, the machine, not the design, was the limit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scale_services import (
    clean_up_on_sigterm,
    cpu_seconds,
    load_average,
    new_database,
    run_span,
    server_cpu_seconds,
    services,
    start_worker,
    stop,
    wait_terminal,
    worker_ready,
)

TARGET_RATIO = 1.3


async def turn_seconds(store: Any, debate_id: str) -> float:
    """Seconds a debate spent streaming turns (each turn's start to its finish); the rest of its run is
    between turns: commits, transitions, the verdict."""
    from webapp.engine.state import DebateState

    state = DebateState.from_events(await store.events(debate_id))
    return sum((turn.finished_at - turn.started_at).total_seconds() for turn in state.turns)


async def sample_leases(store: Any, holders: dict[str, set[str]], every: float = 0.5) -> None:
    """Which worker holds which debate, read every `every` seconds until cancelled (a lease row goes
    when its debate ends, so the shares are gathered while they run)."""
    while True:
        for debate_id, owner, _ in await store.leases.all():
            holders.setdefault(str(owner), set()).add(str(debate_id))
        await asyncio.sleep(every)


async def one_run(admin: str, redis_url: str, debates: int, workers: int, speed: float, rounds: int,
                  timeout: float, logs: Path) -> dict[str, Any]:
    from webapp.engine.engine import Engine
    from webapp.models import DebateConfig
    from webapp.settings import Settings
    from webapp.workers import WorkerClient

    load = load_average()
    dsn = new_database(admin)
    settings = Settings(db=dsn, redis_url=redis_url, demo_speed=speed, workers="external")
    engine = await Engine.open(dsn, settings=settings)  # makes the tables before the workers open them
    processes = [start_worker(dsn, redis_url, speed, logs / f"worker-{debates}-{i}.log") for i in range(workers)]
    client = WorkerClient(engine.store, redis_url)
    try:
        for process in processes:
            worker_ready(process)
        ids = [await engine.create(DebateConfig(topic=f"Scaled debate {i}", format="classic", rounds=rounds, seed=i))
               for i in range(debates)]
        cpu0 = [cpu_seconds(p.pid) for p in processes]
        servers0 = server_cpu_seconds(admin, redis_url)
        t0 = datetime.now(UTC)
        started = time.perf_counter()
        holders: dict[str, set[str]] = {}
        sampler = asyncio.create_task(sample_leases(engine.store, holders))
        await asyncio.gather(*(client.run(debate_id, actor="bench", timeout=timeout) for debate_id in ids))
        answered = time.perf_counter() - started
        await wait_terminal(engine.store, ids, timeout)
        sampler.cancel()
        shares = sorted((len(held) for held in holders.values()), reverse=True)
        cpu = [cpu_seconds(p.pid) - c for p, c in zip(processes, cpu0, strict=True)]
        servers = {name: value - servers0[name] for name, value in server_cpu_seconds(admin, redis_url).items()}
        spans = [await run_span(engine.store, debate_id) for debate_id in ids]
        in_turns = [await turn_seconds(engine.store, debate_id) for debate_id in ids]
    finally:
        await client.close()
        for process in processes:
            stop(process)
        await engine.close()
    end = max(span[1] for span in spans)
    wall = (end - t0).total_seconds()
    statuses: dict[str, int] = {}
    for span in spans:
        statuses[span[2]] = statuses.get(span[2], 0) + 1
    durations = [(span[1] - span[0]).total_seconds() for span in spans]
    return {
        "debates": debates, "workers": workers, "load_average": load, "wall_s": wall,
        "all_answered_s": answered,
        "last_start_s": max((span[0] - t0).total_seconds() for span in spans),
        "debate_s_median": statistics.median(durations), "debate_s_max": max(durations),
        "in_turns_s_median": statistics.median(in_turns),
        "between_turns_s_median": statistics.median(d - t for d, t in zip(durations, in_turns, strict=True)),
        "shares": shares, "statuses": statuses, "worker_cpu_s": [round(c, 1) for c in cpu],
        "postgres_cpu_s": round(servers["postgres_cpu_s"], 1), "redis_cpu_s": round(servers["redis_cpu_s"], 1),
    }


async def run(debates: int, workers: int, speed: float, rounds: int, timeout: float, *,
              pg_admin: str | None = None, redis: str | None = None, logs: Path | None = None) -> dict[str, Any]:
    with services(pg_admin, redis) as (admin, redis_url), \
            tempfile.TemporaryDirectory(prefix="rostrum-scale-workers-") as tmp:
        where = logs or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        single = await one_run(admin, redis_url, 1, workers, speed, rounds, timeout, where)
        many = await one_run(admin, redis_url, debates, workers, speed, rounds, timeout, where)
    return {"single": single, "many": many, "ratio": many["wall_s"] / single["wall_s"]}


def describe(run: dict[str, Any]) -> str:
    return (f"{run['debates']} debate(s) over {run['workers']} worker(s): wall {run['wall_s']:.1f} s "
            f"(load before {run['load_average']}); all started within {run['last_start_s']:.1f} s "
            f"(answers back in {run['all_answered_s']:.1f} s); each debate median {run['debate_s_median']:.1f} s "
            f"({run['in_turns_s_median']:.1f} s in turns, {run['between_turns_s_median']:.1f} s between), "
            f"max {run['debate_s_max']:.1f} s; shares {run['shares']}; statuses {run['statuses']}; "
            f"worker CPU {run['worker_cpu_s']} s, PostgreSQL {run['postgres_cpu_s']} s, Redis {run['redis_cpu_s']} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debates", type=int, default=200, help="debates started at once")
    parser.add_argument("--workers", type=int, default=2, help="`python -m webapp worker` processes")
    parser.add_argument("--speed", type=float, default=40, help="demo tokens per second")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each classic debate")
    parser.add_argument("--timeout", type=float, default=900, help="give up on a run after this many seconds")
    parser.add_argument("--pg-admin", help="postgresql:// URL of a running server to use (default: a throwaway one)")
    parser.add_argument("--redis", help="redis:// URL of a running Redis to use (default: a throwaway one)")
    parser.add_argument("--logs", type=Path, help="keep the workers' logs in this directory")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    clean_up_on_sigterm()
    results = asyncio.run(run(args.debates, args.workers, args.speed, args.rounds, args.timeout,
                              pg_admin=args.pg_admin, redis=args.redis, logs=args.logs))
    ok = results["ratio"] <= TARGET_RATIO
    if args.json:
        print(json.dumps(results))
    else:
        print(describe(results["single"]))
        print(describe(results["many"]))
        print(f"scale_workers_ratio {results['ratio']:.3f}  target <= {TARGET_RATIO}  {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
