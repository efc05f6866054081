"""HTTP API event streams: what 100 Server-Sent-Events clients cost one debate.

    .venv/bin/python bench/sse_clients.py [--clients 0,100] [--rounds 2] [--speed 40] [--json]

For each round and each client count (alternating, so a busy machine weighs on both alike), a fresh
`python main.py` (127.0.0.1, sign-in off, its own temporary database, `ROSTRUM_DEMO_SPEED`) gets one
classic debate of demo models through `POST /api/v1/debates`, paused at once; then this process opens
that many `GET /api/v1/debates/{id}/events` streams (httpx, one connection each), waits until each has
read the log so far, resumes the debate and reads every stream to its `end`.

Reported: the debate's wall time measured in the server's log (from the `resume` transition to the
last event), its ratio to the run with no client, the server's CPU seconds over the run, how many
clients reached the end, and the streamed characters each received (deltas) against the stored turns.
Goal (issue 25): 100 clients ≤ 1.10× the wall time with none.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
CONFIG = {"topic": "Night buses pay for themselves", "format": "classic", "clarification": False}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Client:
    """One event-stream reader: counts what arrives, notices the end."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.ended = False
        self.chars = 0
        self.events = 0
        self.error: str | None = None

    async def run(self, http: httpx.AsyncClient, debate_id: str, resumed: asyncio.Event) -> None:
        """Read raw bytes while the debate runs (little work on the machine the server shares); parse
        them once it has ended."""
        chunks: list[bytes] = []
        try:
            async with http.stream("GET", f"/api/v1/debates/{debate_id}/events") as response:
                tail = b""
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
                    if not self.ready.is_set() and b"event: event" in chunk:
                        self.ready.set()  # it has read (some of) the log: it is subscribed
                    if b"event: end" in tail + chunk:
                        self.ended = True
                        break
                    tail = chunk[-16:]
        except Exception as exc:  # counted and reported: a bench must finish its round
            self.error = repr(exc)
        finally:
            self.ready.set()
        self.parse(b"".join(chunks).decode())

    def parse(self, body: str) -> None:
        kind = ""
        for line in body.splitlines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind == "delta":
                self.chars += len(json.loads(line[6:])["text"])
            elif line.startswith("data: ") and kind == "event":
                self.events += 1


async def log_of(http: httpx.AsyncClient, debate_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with http.stream("GET", f"/api/v1/debates/{debate_id}/events") as response:
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind == "event":
                events.append(json.loads(line[6:]))
    return events


def wall_from_log(events: list[dict[str, Any]]) -> float:
    from datetime import datetime

    resumed = [e for e in events if e["kind"] == "transition" and str(e["data"].get("event", "")).lower() == "resume"]
    start = datetime.fromisoformat(resumed[-1]["at"])
    end = datetime.fromisoformat(events[-1]["at"])
    return (end - start).total_seconds()


async def one_run(clients: int, speed: str) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="rostrum-sse-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ROSTRUM_", "NICEGUI_", "PYTEST_"))}
        env.update(ROSTRUM_DB=str(Path(tmp) / "bench.sqlite3"), ROSTRUM_PORT=str(port), ROSTRUM_HOST="127.0.0.1",
                   ROSTRUM_DEMO_SPEED=speed, ROSTRUM_AUTH="off", PYTHONUNBUFFERED="1")
        log = (Path(tmp) / "server.log").open("w")
        server = subprocess.Popen([sys.executable, str(ROOT / "main.py")], cwd=tmp, env=env, stdout=log,
                                  stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
        try:
            async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(10, read=300), limits=limits) as http:
                deadline = time.monotonic() + 30
                while True:
                    try:
                        if (await http.get("/api/v1/debates")).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError("the server did not start")
                    await asyncio.sleep(0.2)  # polling a port that is not open yet
                debate_id = (await http.post("/api/v1/debates", json=CONFIG)).json()["id"]
                paused = await http.post(f"/api/v1/debates/{debate_id}/commands/pause")
                assert paused.status_code == 200, paused.text
                resumed = asyncio.Event()
                readers = [Client() for _ in range(clients)]
                tasks = [asyncio.create_task(r.run(http, debate_id, resumed)) for r in readers]
                await asyncio.gather(*(r.ready.wait() for r in readers))
                cpu0 = cpu_seconds(server.pid)
                resumed.set()
                assert (await http.post(f"/api/v1/debates/{debate_id}/commands/resume")).status_code == 200
                if tasks:
                    await asyncio.gather(*tasks)
                else:
                    while (await http.get(f"/api/v1/debates/{debate_id}")).json()["status"] not in (
                            "completed", "stopped"):
                        await asyncio.sleep(0.5)  # no stream to wait on in the run without clients
                cpu = cpu_seconds(server.pid) - cpu0
                events = await log_of(http, debate_id)
                document = (await http.get(f"/api/v1/debates/{debate_id}")).json()
        finally:
            server.terminate()
            server.wait(10)
            log.close()
    stored = sum(len(t["text"]) for t in document["turns"])
    return {"clients": clients, "wall_s": round(wall_from_log(events), 2), "server_cpu_s": round(cpu, 2),
            "ended": sum(r.ended for r in readers), "errors": sum(r.error is not None for r in readers),
            "chars_median": statistics.median([r.chars for r in readers]) if readers else None,
            "stored_chars": stored, "status": document["status"]}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="0,100")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--speed", default="40", help="demo tokens per second")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    runs: list[dict[str, Any]] = []
    for round_no in range(args.rounds):
        for clients in counts:
            result = await one_run(clients, args.speed)
            result["round"] = round_no + 1
            result["load"] = round(os.getloadavg()[0], 2)
            runs.append(result)
            if not args.json:
                print(json.dumps(result), flush=True)
    base = statistics.median(r["wall_s"] for r in runs if r["clients"] == counts[0])
    summary = {str(c): {"wall_s_median": statistics.median(r["wall_s"] for r in runs if r["clients"] == c),
                        "ratio": round(statistics.median(r["wall_s"] for r in runs if r["clients"] == c) / base, 3)}
               for c in counts}
    print(json.dumps({"runs": runs, "summary": summary} if args.json else summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
