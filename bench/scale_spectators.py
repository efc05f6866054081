"""Spectators spread over several web instances watching one debate run by a worker.

    .venv/bin/python bench/scale_spectators.py [--spectators 400] [--instances 2] [--rounds 3] [--speed 40]
                                               [--ramp-batch 50] [--ramp-every 0.5] [--grace 2] [--json]

Issue 14's target: "400 spectators spread over 2 instances watching one debate: wall time ÷ with none
≤ 1.2". A throwaway PostgreSQL (default durability) and Redis are started (`bench/scale_services.py`).
For each spectator count (0, then `--spectators`) on a fresh database: one `python -m webapp worker`
and `--instances` web instances (`bench/spectator_server.py`: the real app as main.py serves it, plus
bench-only routes) with `ROSTRUM_WORKERS=external` (they only render and send commands) and the Redis
live bus. Instance 0 creates a classic debate of demo models at `--speed` tokens/s; the spectators are
shared evenly between the instances, each share opened by a load generator of its own
(`bench/spectators.py _generate`: real NiceGUI clients over socket.io, in a separate process). Once
every handshake is done the debate is started on instance 0 as its Resume button would (a job for the
worker), and run to its end.

Wall time: from the start request to the debate's last event (the log's timestamp). Reported per run
and instance: spectators connected and disconnected before the end (sockets the server closed),
socket.io messages received per spectator (median), streamed characters received through the live
`rl` events (min / median) against the characters of shown turns in the log, websocket bytes per
spectator, the instance's CPU seconds and peak RSS, and its event loop's lag; the worker's CPU seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scale_services import (
    child_env,
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
from spectators import SERVER, free_port, http_json, read_line, wait_ready

GENERATOR = Path(__file__).resolve().parent / "spectators.py"
TARGET_RATIO = 1.2


def start_instance(dsn: str, redis_url: str, speed: float, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """One web instance (`spectator_server.py`) with external workers; returns it and its base URL once
    it answers."""
    port = free_port()
    env = child_env(ROSTRUM_DB=dsn, ROSTRUM_REDIS_URL=redis_url, ROSTRUM_WORKERS="external",
                    ROSTRUM_DEMO_SPEED=f"{speed:g}")
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, str(SERVER), "--port", str(port)], cwd=log.parent, env=env,
                                   stdout=out, stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}"


def send(generator: subprocess.Popen[str], line: str) -> None:
    assert generator.stdin is not None
    generator.stdin.write(line + "\n")
    generator.stdin.flush()


async def shown_chars(store: Any, debate_id: str) -> int:
    """Characters of the turns spectators are shown (private preparation notes left out)."""
    from webapp.engine.state import DebateState

    state = DebateState.from_events(await store.events(debate_id))
    return sum(len(turn.text) for turn in state.turns if turn.visible)


async def one_run(admin: str, redis_url: str, spectators: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from webapp.store.postgres import PostgresStore

    load = load_average()
    dsn = new_database(admin)
    store = await PostgresStore.open(dsn)  # makes the tables before the other processes open them
    worker = start_worker(dsn, redis_url, args.speed, work / f"worker-{spectators}.log")
    instances = [start_instance(dsn, redis_url, args.speed, work / f"web-{spectators}-{i}.log")
                 for i in range(args.instances)]
    generators: list[tuple[int, subprocess.Popen[str]]] = []
    try:
        worker_ready(worker)
        for i, (process, base) in enumerate(instances):
            wait_ready(process, base, work / f"web-{spectators}-{i}.log")
        debate_id = http_json(f"{instances[0][1]}/bench/debates?rounds={args.rounds}", "POST")["id"]
        shares = [spectators // args.instances + (1 if i < spectators % args.instances else 0)
                  for i in range(args.instances)]
        for i, share in enumerate(shares):
            if share:
                generators.append((i, subprocess.Popen(
                    [sys.executable, str(GENERATOR), "_generate", "--base", instances[i][1], "--debate", debate_id,
                     "--clients", str(share), "--ramp-batch", str(args.ramp_batch),
                     "--ramp-every", str(args.ramp_every)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())))
        readies = {i: read_line(g, 300) for i, g in generators}
        cpu0 = [cpu_seconds(p.pid) for p, _ in instances] + [cpu_seconds(worker.pid)]
        servers0 = server_cpu_seconds(admin, redis_url)
        for _, g in generators:
            send(g, "start")
        for _, base in instances[1:]:
            http_json(f"{base}/bench/mark", "POST")
        t0 = datetime.now(UTC)
        http_json(f"{instances[0][1]}/bench/debates/{debate_id}/start", "POST")
        await wait_terminal(store, [debate_id], args.timeout)
        cpu = [cpu_seconds(p.pid) - c for (p, _), c in zip(instances, cpu0, strict=False)]
        worker_cpu = cpu_seconds(worker.pid) - cpu0[-1]
        servers = {name: value - servers0[name] for name, value in server_cpu_seconds(admin, redis_url).items()}
        await asyncio.sleep(args.grace)  # the last flushes reach every spectator (a period, not a sync)
        stats = [http_json(f"{base}/bench/debates/{debate_id}") for _, base in instances]
        for _, g in generators:
            send(g, "stop")
        results = {i: read_line(g, 120) for i, g in generators}
        started, end, status = await run_span(store, debate_id)
        shown = await shown_chars(store, debate_id)
    finally:
        for _, g in generators:
            stop(g, 30)
        for process, _ in instances:
            stop(process)
        stop(worker)
        await store.close()
    per_instance = []
    for i in range(args.instances):
        clients = results.get(i, {}).get("spectators", [])
        per_instance.append(summarise(i, shares[i], readies.get(i), clients, stats[i], cpu[i], shown,
                                      (end - t0).total_seconds()))
    return {"spectators": spectators, "load_average": load, "status": status,
            "wall_s": (end - t0).total_seconds(), "start_s": (started - t0).total_seconds(),
            "worker_cpu_s": worker_cpu, **servers, "shown_chars": shown, "instances": per_instance}


def summarise(index: int, share: int, ready: dict[str, Any] | None, clients: list[dict[str, Any]],
              stats: dict[str, Any], cpu: float, shown: int, wall: float) -> dict[str, Any]:
    ok = [c for c in clients if not c["failed"]]
    dropped = [c for c in ok if c["disconnected"]]
    during = [c for c in dropped if c["disconnected_after"] is None or c["disconnected_after"] <= wall]
    rl = [c["rl_chars"] for c in ok]

    def median(key: str) -> float | None:
        return statistics.median(c[key] for c in ok) if ok else None

    return {
        "instance": index, "spectators": share, "connected": ready["connected"] if ready else 0,
        "failed": len(clients) - len(ok), "disconnected": len(during),
        "disconnected_after_end": len(dropped) - len(during),
        "messages_median": median("frames"), "bytes_median": median("bytes"),
        "rl_chars_min": min(rl) if rl else None, "rl_chars_median": statistics.median(rl) if rl else None,
        "rl_gaps": sum(c["rl_gaps"] for c in ok), "shown_chars": shown,
        "cpu_s": cpu, "peak_rss_mb": stats["peak_rss_mb"], "lag_p99_ms": stats.get("lag_p99_ms"),
        "lag_max_ms": stats.get("lag_max_ms"), "socket_closes": stats.get("socket_closes"),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    runs = []
    with services(args.pg_admin, args.redis) as (admin, redis_url), \
            tempfile.TemporaryDirectory(prefix="rostrum-scale-spectators-") as tmp:
        for spectators in (0, args.spectators):
            runs.append(await one_run(admin, redis_url, spectators, args, Path(tmp)))
            if not args.json:
                print(f"{spectators} spectators: wall {runs[-1]['wall_s']:.1f} s", file=sys.stderr)
    return {"runs": runs, "ratio": runs[1]["wall_s"] / runs[0]["wall_s"]}


def table(results: dict[str, Any]) -> str:
    def f(value: Any, fmt: str) -> str:
        return "—" if value is None else format(value, fmt)

    lines = ["| spectators | load (1/5/15) | wall s | ratio | worker CPU s | instance | connected / disconnected "
             "| messages/spectator | rl chars min / median / shown | KB/spectator | instance CPU s | peak RSS MB "
             "| lag p99 / max ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    base = results["runs"][0]["wall_s"]
    for run in results["runs"]:
        for i, inst in enumerate(run["instances"]):
            head = (f"| {run['spectators']} | {run['load_average'].replace(' ', '/')} | {run['wall_s']:.1f} "
                    f"| {run['wall_s'] / base:.2f} | {run['worker_cpu_s']:.1f} ") if i == 0 else "| | | | | "
            lines.append(
                head + f"| {inst['instance']} | {inst['connected']} / {inst['disconnected']}"
                f"{' (+' + str(inst['failed']) + ' failed)' if inst['failed'] else ''} "
                f"| {f(inst['messages_median'], '.0f')} | {f(inst['rl_chars_min'], '')} / "
                f"{f(inst['rl_chars_median'], '')} / {inst['shown_chars']} "
                f"| {f(inst['bytes_median'] and inst['bytes_median'] / 1024, '.0f')} | {inst['cpu_s']:.1f} "
                f"| {inst['peak_rss_mb']:.0f} | {f(inst['lag_p99_ms'], '.0f')} / {f(inst['lag_max_ms'], '.0f')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spectators", type=int, default=400, help="spectators in the measured run (shared evenly)")
    parser.add_argument("--instances", type=int, default=2, help="web instances")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the classic debate")
    parser.add_argument("--speed", type=float, default=40, help="demo tokens per second")
    parser.add_argument("--ramp-batch", type=int, default=50, help="spectators connected per step (per instance)")
    parser.add_argument("--ramp-every", type=float, default=0.5, help="seconds between steps")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds to keep listening after the debate ends")
    parser.add_argument("--timeout", type=float, default=600, help="give up on a debate after this many seconds")
    parser.add_argument("--pg-admin", help="postgresql:// URL of a running server to use (default: a throwaway one)")
    parser.add_argument("--redis", help="redis:// URL of a running Redis to use (default: a throwaway one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    clean_up_on_sigterm()
    results = asyncio.run(run(args))
    measured = results["runs"][1]["instances"]
    disconnected = sum(inst["disconnected"] + inst["failed"] for inst in measured)
    ok = results["ratio"] <= TARGET_RATIO and disconnected == 0
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(table(results))
        for one in results["runs"]:
            print(f"{one['spectators']} spectators: PostgreSQL CPU {one['postgres_cpu_s']:.1f} s, "
                  f"Redis CPU {one['redis_cpu_s']:.1f} s")
        print(f"scale_spectators_ratio {results['ratio']:.3f}  target <= {TARGET_RATIO}, 0 disconnected "
              f"({disconnected})  {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
