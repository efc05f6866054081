"""Throwaway PostgreSQL and Redis servers for the scale-out benchmarks, and what they share.

The servers are the tests' own (`tests/pg_fixtures.py`, `tests/redis_fixtures.py`: Debian's PostgreSQL 15
and redis-server, `make postgres redis` installs them), started in temporary directories on free
loopback ports and removed afterwards. PostgreSQL runs here with its default durability (`fsync`,
`synchronous_commit` and `full_page_writes` on, unlike the tests' server), since commit times are
among what the benchmarks measure.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import pg_fixtures  # noqa: E402  (the repository root is put on sys.path just above)
from tests.redis_fixtures import REDIS_BIN, running_redis  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its siblings, also when imported as bench.scale_services
import serving  # noqa: E402

BENCH_ENV_DROP = ("ROSTRUM_", "PYTEST_CURRENT_TEST")


class Unavailable(RuntimeError):
    """A server the benchmark needs cannot be started here (the message says why and what to install)."""


def clean_up_on_sigterm() -> None:
    """SIGTERM ends a benchmark as Ctrl-C does, so that its servers and workers are stopped on the way out
    (by default SIGTERM ends the process at once and leaves them running)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them ("0.52 0.61 0.70")."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def server_cpu_seconds(admin: str, redis_url: str) -> dict[str, float]:
    """CPU seconds so far of the PostgreSQL server of `admin` (the postmaster, its live backends and
    those it has reaped) and of the Redis server of `redis_url`, found by their ports in /proc: what
    the benchmarks' servers cost beside the processes measured. 0 for a server not on this machine."""
    pg_port = admin.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    redis_port = redis_url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, list[str]] = {}
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                lines[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                stats[int(entry.name)] = _stat(int(entry.name))
    out = {"postgres_cpu_s": 0.0, "redis_cpu_s": 0.0}
    for pid, line in lines.items():
        if pid not in stats:
            continue
        if "postgres" in line and f"-p {pg_port} " in line:  # the postmaster: its own and reaped children's
            fields = stats[pid]
            out["postgres_cpu_s"] += sum(int(x) for x in fields[11:15]) / tick
            out["postgres_cpu_s"] += sum(int(stats[c][11]) + int(stats[c][12]) for c in stats
                                         if stats[c][1] == str(pid)) / tick
        elif "redis-server" in line and f":{redis_port} " in line + " ":  # its title: "redis-server HOST:PORT"
            out["redis_cpu_s"] += (int(stats[pid][11]) + int(stats[pid][12])) / tick
    return out


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a process a benchmark starts: this one's without any ROSTRUM_ setting
    (each benchmark sets what it measures), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(BENCH_ENV_DROP)}
    env.update(extra)
    return env


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server with default durability for the block; yields its administrator DSN."""
    reason = pg_fixtures._unavailable()
    if reason is not None:
        raise Unavailable(reason)
    with pg_fixtures.running_server(durable=True) as admin:
        yield admin


def new_database(admin: str, prefix: str = "bench") -> str:
    """A new, empty database on the server of `admin`; its DSN."""
    return pg_fixtures.create_database(admin, f"{prefix}_{uuid.uuid4().hex[:10]}")


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A Redis server (no persistence) for the block; yields its URL."""
    if not REDIS_BIN.exists():
        raise Unavailable(f"redis-server is not installed ({REDIS_BIN} is missing): run `make redis`")
    with running_redis() as server:
        yield server.url


@contextlib.contextmanager
def services(admin: str | None = None, redis_url: str | None = None) -> Iterator[tuple[str, str]]:
    """(PostgreSQL administrator DSN, Redis URL) for the block: the ones given (servers already running,
    e.g. on a quiet machine; each run makes its own database), else throwaway ones started here."""
    with contextlib.ExitStack() as stack:
        if admin is None:
            admin = stack.enter_context(postgres_server())
        if redis_url is None:
            redis_url = stack.enter_context(redis_server())
        yield admin, redis_url


def start_worker(dsn: str, redis_url: str, speed: float, log: Path) -> subprocess.Popen[bytes]:
    """`python -m webapp worker` on `dsn` with Redis and demo models at `speed` tokens/s (started, not
    yet ready: see `worker_ready`). Its log (stderr) goes to `log`."""
    env = child_env(ROSTRUM_REDIS_URL=redis_url, ROSTRUM_DEMO_SPEED=f"{speed:g}", PYTHONUNBUFFERED="1")
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "webapp", "worker", "--db", dsn], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=out)


def worker_ready(process: subprocess.Popen[bytes]) -> None:
    """Returns once the worker says it is ready (its first line of output)."""
    assert process.stdout is not None
    line = process.stdout.readline()
    if b"ready" not in line:
        process.kill()
        process.wait()
        raise RuntimeError(f"a worker did not start: {line!r} (see its log)")


def stop(process: subprocess.Popen[Any], timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `timeout` seconds (a worker gets longer than
    `serving.stop`'s default: it lets go of its leases first)."""
    serving.stop(process, timeout)


async def wait_terminal(store: Any, debate_ids: list[str], timeout: float, every: float = 0.25) -> None:
    """Until every debate's listing row shows a terminal status. The debates run in other processes, so
    there is nothing here to await: the table is read every `every` seconds (the wall times themselves
    come from the log's timestamps, not from when this loop noticed)."""
    from webapp.engine.machine import TERMINAL_STATES

    terminal = [s.value for s in TERMINAL_STATES]
    waiting = set(debate_ids)
    deadline = time.monotonic() + timeout
    while waiting:
        waiting -= set(await store.ids_with_status(terminal))
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(waiting)} debate(s) did not end within {timeout:g} s")
        await asyncio.sleep(every)


async def run_span(store: Any, debate_id: str) -> tuple[datetime, datetime, str]:
    """When a debate started running (its first transition out of idle), when it ended (its last
    event), and its final status, from the log's own timestamps."""
    events = await store.events(debate_id)
    row = await store.get_row(debate_id)
    started = next(e.at for e in events if e.kind.value == "transition")
    return started, events[-1].at, row.status if row is not None else "?"
