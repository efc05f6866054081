"""Issue 14's scaling benchmarks, one command (`make bench-scale` runs `all`):

    .venv/bin/python -m bench.scale_out store [ARGS]       # bench/postgres.py: store figures, 50 live debates
    .venv/bin/python -m bench.scale_out spectators [ARGS]  # bench/scale_spectators.py: 400 over 2 instances
    .venv/bin/python -m bench.scale_out workers [ARGS]     # bench/scale_workers.py: 200 debates over 2 workers
    .venv/bin/python -m bench.scale_out all                # the three at their default sizes

ARGS go to that benchmark (`--help` lists them). Each starts its own throwaway PostgreSQL (default
durability) and Redis unless given servers; each prints the load average with its figures, which on a
shared machine they follow. Exits non-zero when a target is missed. About 6 minutes for `all` on 2 cores.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import postgres  # bench/postgres.py
import scale_spectators  # bench/scale_spectators.py
import scale_workers  # bench/scale_workers.py

BENCHMARKS: dict[str, Callable[[list[str] | None], int]] = {
    "store": postgres.main,
    "spectators": scale_spectators.main,
    "workers": scale_workers.main,
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in (*BENCHMARKS, "all"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] != "all":
        return BENCHMARKS[argv[0]](argv[1:])
    failed = []
    for name, bench in BENCHMARKS.items():
        print(f"\n== {name} ==", flush=True)
        if bench([]) != 0:
            failed.append(name)
    if failed:
        print(f"\nmissed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
