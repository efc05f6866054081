"""Start-up imports: what `python main.py` imports before its first HTTP 200, NiceGUI's share beside Rostrum's.

    .venv/bin/python bench/startup_imports.py [--runs 3] [--top 15]

Each run starts main.py with `python -X importtime` (its own working directory and database) and waits
for the first 200 on `/`; the server is then stopped. The cumulative import time of each top-level
import is summed: `nicegui` (with what it brings: FastAPI, socket.io, uvicorn …) against the `webapp.*`
modules (with whatever they import first). `-X importtime` itself slows imports down, so compare the
shares, not the seconds with `startup.py`'s.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving import NotServing, free_port, running, wait_until_answering
from startup import ROOT

LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def one_run() -> tuple[float, Counter[str]]:
    """Seconds to the first 200, and the cumulative microseconds of each top-level import."""
    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ROSTRUM_", "PYTEST", "NICEGUI_"))}
        env.update(ROSTRUM_PORT=str(port), ROSTRUM_DB=str(Path(work) / "db.sqlite3"), PYTHONPATH=str(ROOT))
        log = Path(work) / "importtime.txt"
        started = time.perf_counter()
        with log.open("w") as err, running([sys.executable, "-X", "importtime", str(ROOT / "main.py")], cwd=work,
                                           env=env, stdout=subprocess.DEVNULL, stderr=err) as server:
            try:
                first = wait_until_answering(server, f"http://127.0.0.1:{port}/", timeout=120, interval=0.01,
                                             started=started, request_timeout=5)
            except NotServing as exc:
                raise SystemExit(f"main.py did not answer ({exc}): see {log}") from None
        tops: Counter[str] = Counter()
        for line in log.read_text().splitlines():
            match = LINE.match(line)
            if match and len(match[3]) == 1:  # a top-level import (indent 1), with everything under it
                tops[match[4]] += int(match[2])
    return first, tops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    firsts, nicegui, rostrum, last = [], [], [], Counter[str]()
    for _ in range(args.runs):
        first, tops = one_run()
        firsts.append(first)
        nicegui.append(tops["nicegui"] / 1e6)
        rostrum.append(sum(us for name, us in tops.items() if name.startswith("webapp")) / 1e6)
        last = tops
    for name, values, digits in (("first_200_s (under -X importtime)", firsts, 2), ("nicegui_import_s", nicegui, 3),
                                 ("rostrum_import_s", rostrum, 3)):
        print(f"{name:36} median {statistics.median(values):.{digits}f}  "
              f"({min(values):.{digits}f}–{max(values):.{digits}f})")
    print("top-level imports of the last run (cumulative s):")
    for name, us in last.most_common(args.top):
        print(f"  {us / 1e6:7.3f}  {name}")


if __name__ == "__main__":
    main()
