"""Live spectators: what real watching browsers cost one debate.

    .venv/bin/python bench/spectators.py [--clients 0,100,400] [--rounds 3] [--speed 40] [--json]
                                         [--generators 1] [--root DIR]

For each spectator count, a fresh server (`bench/spectator_server.py`: the real app as main.py serves
it, on 127.0.0.1 with its own temporary database and `ROSTRUM_DEMO_SPEED`) gets one classic debate of
demo models. A load generator in a separate process (`spectators.py _generate`, one or more) opens the
debate page that many times as real NiceGUI clients: `GET /debate/ID`, then a websocket speaking
engine.io v4 / socket.io v5 as nicegui.js does (handshake from the page's query, pong to every ping,
`ack` of the last message id every 3 s, no permessage-deflate: the byte counts are raw frame payloads).
Clients are ramped up (`--ramp-batch` per `--ramp-every` s); once every handshake is done the debate
is started (as the page's Resume button would) and run to its end.

Reported per spectator count: the debate's wall time and its ratio to the run with 0 spectators,
the server's CPU seconds during the debate, its peak RSS and RSS per spectator, spectators connected
and disconnected (socket closed before the run ended), websocket bytes per spectator ÷ the streamed
text bytes (median over spectators), bytes per spectator by socket.io event name, and — once the live
layer sends `rl` events — the streamed characters each spectator really received (offset-aware) against
what the engine streamed. The load average is read before each run.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVER = HERE / "spectator_server.py"

# --- the load generator (a separate process) -----------------------------------------------------

_EVENT = re.compile(r'42\d*\["((?:[^"\\]|\\.)*)"')
_MESSAGE_ID = re.compile(r'"_id":\s*(\d+)')
_QUERY = re.compile(r"query: (\{.*?\}),\s*\n")


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Spectator:
    """One NiceGUI client of the debate page, speaking the socket.io protocol the way nicegui.js does."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.page_bytes = 0
        self.bytes = 0  # text frame payloads received (UTF-8 bytes)
        self.bytes_before_start = 0
        self.bytes_sent = 0
        self.frames = 0
        self.event_bytes: Counter[str] = Counter()
        self.event_count: Counter[str] = Counter()
        self.handshaken = asyncio.Event()
        self.failed: str | None = None
        self.disconnected: str | None = None  # why the socket closed before we closed it
        self.stopping = False
        self.started = False
        self.started_at: float | None = None
        self.disconnected_after: float | None = None  # seconds after the debate started
        self.next_message_id = 0
        self.acked_message_id = -1
        self.client_id = ""
        self.query: dict[str, Any] = {}
        # the live protocol ("rl" events): characters received per (turn, attempt), offset-aware
        self.attempts: dict[Any, Any] = {}
        self.have: dict[tuple[Any, Any], int] = {}
        self.rl_chars = 0
        self.rl_gaps = 0
        self.rl_items: Counter[int] = Counter()
        self.rl_item_bytes: Counter[int] = Counter()  # JSON bytes of the items by type (about; no spaces)
        self.ws: Any = None

    async def run(self, pages: Any, sockets: Any, base: str, debate_id: str, explicit_handshake: bool) -> None:
        try:
            await self._run(pages, sockets, base, debate_id, explicit_handshake)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bench reports failures, it does not stop on them
            if not self.handshaken.is_set():
                self.failed = f"{type(exc).__name__}: {exc}"
            else:
                self._lost(f"{type(exc).__name__}: {exc}")
        finally:
            self.handshaken.set()  # never leave the ramp waiting (failed says whether it worked)

    async def _run(self, pages: Any, sockets: Any, base: str, debate_id: str, explicit_handshake: bool) -> None:
        async with pages.get(f"{base}/debate/{debate_id}") as response:
            html = await response.text()
            self.page_bytes = len(html.encode())
            if response.status != 200:
                raise RuntimeError(f"GET /debate/{debate_id}: {response.status}")
        found = _QUERY.search(html)
        if found is None:
            raise RuntimeError("no socket.io query in the page")
        try:
            query = ast.literal_eval(found.group(1))  # NiceGUI 3.18 renders a Python dict
        except (ValueError, SyntaxError):
            query = json.loads(found.group(1))
        if explicit_handshake:
            query["implicit_handshake"] = False
        query["document_id"] = str(uuid.uuid4())
        query["tab_id"] = str(uuid.uuid4())
        self.query = query
        self.client_id = query["client_id"]
        self.next_message_id = int(query.get("next_message_id") or 0)
        params = {"EIO": "4", "transport": "websocket",
                  **{k: _query_value(v) for k, v in query.items() if v is not None}}
        ws_base = base.replace("http://", "ws://", 1)
        async with sockets.ws_connect(f"{ws_base}/_nicegui_ws/socket.io/", params=params, compress=0,
                                   max_msg_size=0, autoping=True, heartbeat=None) as ws:
            self.ws = ws
            acker = asyncio.create_task(self._ack_every(3.0))
            try:
                await self._read(ws)
            finally:
                acker.cancel()
        self._lost(f"closed by the server (code {ws.close_code})")

    async def _send(self, ws: Any, text: str) -> None:
        self.bytes_sent += len(text.encode())
        await ws.send_str(text)

    async def _ack_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            await self.ack()

    async def ack(self) -> None:
        ws = self.ws
        if ws is None or ws.closed or not self.handshaken.is_set() or self.acked_message_id >= self.next_message_id:
            return
        payload = json.dumps(["ack", {"client_id": self.client_id, "next_message_id": self.next_message_id}])
        await self._send(ws, "42" + payload)
        self.acked_message_id = self.next_message_id

    async def _read(self, ws: Any) -> None:
        import aiohttp

        async for message in ws:
            if message.type == aiohttp.WSMsgType.TEXT:
                data: str = message.data
                size = len(data) if data.isascii() else len(data.encode())
                await self._packet(ws, data, size)
            elif message.type == aiohttp.WSMsgType.BINARY:
                self._count("(binary)", len(message.data))
            elif message.type == aiohttp.WSMsgType.ERROR:
                self._lost(f"websocket error: {message.data!r}")
                break
            elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                break

    def _count(self, kind: str, size: int) -> None:
        self.frames += 1
        self.bytes += size
        if not self.started:
            self.bytes_before_start += size
        self.event_bytes[kind] += size
        self.event_count[kind] += 1

    async def _packet(self, ws: Any, data: str, size: int) -> None:
        kind = data[:1]
        if kind == "2":  # engine.io ping
            self._count("(ping)", size)
            await self._send(ws, "3")
            return
        if kind == "0":  # engine.io open: connect to the default namespace
            self._count("(open)", size)
            await self._send(ws, "40")
            return
        if kind != "4":
            self._count(f"(engine.io {kind})", size)
            if kind == "1":
                self._lost("engine.io close")
            return
        sio = data[1:2]
        if sio == "2":  # an event
            found = _EVENT.match(data)
            name = found.group(1) if found else "?"
            self._count(name, size)
            if name == "rl":
                self._live(json.loads(data[data.index("["):]))
            elif '"_id"' in data:
                ids = _MESSAGE_ID.findall(data[data.rfind('"_id"'):])
                if ids:
                    self.next_message_id = max(self.next_message_id, int(ids[0]) + 1)
            return
        if sio == "0":  # namespace connected (with an implicit handshake, the handshake is done)
            self._count("(connect)", size)
            if self.query.get("implicit_handshake"):
                self.handshaken.set()
            else:
                await self._send(ws, "420" + json.dumps(["handshake", self.query]))
            return
        if sio == "3":  # an ack: ours is the handshake's
            self._count("(ack)", size)
            if data.startswith("430"):
                if json.loads(data[3:]) == [True]:
                    self.handshaken.set()
                else:
                    self.failed = "handshake refused"
                    await ws.close()
            return
        if sio == "4":
            self._count("(connect error)", size)
            self.failed = f"connect refused: {data[2:]}"
            await ws.close()
            return
        if sio == "1":
            self._count("(disconnect)", size)
            self._lost("socket.io disconnect")
            return
        self._count(f"(socket.io {sio})", size)

    def _live(self, packet: list[Any]) -> None:
        """`["rl", items]`: type 0 text [0, kid, offset, text], 1 attempt [1, kid, attempt],
        2 cut [2, kid, reason], 3 committed [3, kid], 4 status [4, {...}]."""
        items = packet[1] if len(packet) > 1 else []
        if isinstance(items, str):
            items = json.loads(items)
        for item in items:
            code = item[0]
            self.rl_items[code] += 1
            self.rl_item_bytes[code] += len(json.dumps(item, separators=(",", ":"), ensure_ascii=False).encode())
            if code == 0:
                kid, offset, text = item[1], int(item[2]), item[3]
                key = (kid, self.attempts.get(kid))
                have = self.have.get(key, 0)
                end = offset + len(text)
                if offset > have:  # text we never got the start of
                    self.rl_gaps += 1
                    new = len(text)
                else:
                    new = max(0, end - have)
                self.have[key] = max(have, end)
                self.rl_chars += new
            elif code == 1:
                self.attempts[item[1]] = item[2]

    def _lost(self, why: str) -> None:
        """The socket went away before we closed it (the first reason is kept)."""
        if self.stopping or self.disconnected is not None:
            return
        self.disconnected = why[:200]
        if self.started_at is not None:
            self.disconnected_after = round(time.perf_counter() - self.started_at, 1)

    def result(self) -> dict[str, Any]:
        return {
            "disconnected_after": self.disconnected_after,
            "bytes": self.bytes, "bytes_before_start": self.bytes_before_start, "bytes_sent": self.bytes_sent,
            "frames": self.frames, "page_bytes": self.page_bytes, "failed": self.failed,
            "disconnected": self.disconnected, "event_bytes": dict(self.event_bytes),
            "event_count": dict(self.event_count), "rl_chars": self.rl_chars, "rl_gaps": self.rl_gaps,
            "rl_items": {str(k): v for k, v in self.rl_items.items()},
            "rl_item_bytes": {str(k): v for k, v in self.rl_item_bytes.items()},
        }


async def generate(base: str, debate_id: str, clients: int, batch: int, every: float, explicit: bool,
                   handshake_timeout: float) -> None:
    """Connect `clients` spectators, say "ready", then follow the orchestrator's commands on stdin:
    `start` (the debate starts now), `stop` (close everything and print the result)."""
    import aiohttp

    loop = asyncio.get_running_loop()
    spectators = [Spectator(i) for i in range(clients)]
    tasks: list[asyncio.Task[None]] = []
    # Pages and sockets on separate connections, as a browser does: uvicorn 0.54 closes a websocket that was
    # upgraded on a reused keep-alive connection once its keep-alive timeout (5 s) runs out.
    pages = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=True),
                                  timeout=aiohttp.ClientTimeout(total=None))
    sockets = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=None))
    t0 = time.perf_counter()
    for i, spectator in enumerate(spectators):
        tasks.append(asyncio.create_task(spectator.run(pages, sockets, base, debate_id, explicit)))
        if (i + 1) % batch == 0 and i + 1 < clients:
            await asyncio.sleep(every)
    try:
        await asyncio.wait_for(asyncio.gather(*(s.handshaken.wait() for s in spectators)), handshake_timeout)
    except TimeoutError:
        pass
    ready = sum(1 for s in spectators if s.handshaken.is_set() and s.failed is None and s.disconnected is None)
    emit({"event": "ready", "connected": ready, "ramp_s": time.perf_counter() - t0,
          "failed": Counter(s.failed for s in spectators if s.failed)})
    cpu0 = wall0 = 0.0
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if line == "start":
            now = time.perf_counter()
            for s in spectators:
                s.started, s.started_at = True, now
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu0, wall0 = usage.ru_utime + usage.ru_stime, time.perf_counter()
        elif line in ("stop", ""):
            break
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, wall = usage.ru_utime + usage.ru_stime - cpu0, time.perf_counter() - wall0
    for s in spectators:
        s.stopping = True
    await asyncio.gather(*(s.ack() for s in spectators), return_exceptions=True)
    for s in spectators:
        if s.ws is not None and not s.ws.closed:
            await s.ws.close()
    await asyncio.wait(tasks, timeout=10)
    for task in tasks:
        task.cancel()
    await pages.close()
    await sockets.close()
    emit({"event": "result", "cpu_s": cpu, "wall_s": wall, "spectators": [s.result() for s in spectators]})


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# --- the orchestrator ----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def http_json(url: str, method: str = "GET", timeout: float = 30) -> Any:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST" and not k.startswith("ROSTRUM_")}
    env.update(extra)
    return env


def stop_process(process: subprocess.Popen[Any], timeout: float = 20) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_ready(process: subprocess.Popen[Any], base: str, log: Path, timeout: float = 60) -> None:
    """Until the server's engine is open (another process: its port is polled)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            http_json(f"{base}/bench/ready", timeout=2)
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start; see {log}") from None
            time.sleep(0.1)


def read_line(process: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """The next JSON line a generator prints (its stdout is a pipe)."""
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError("the load generator did not answer")
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"the load generator ended (exit {process.wait()})")
    return dict(json.loads(line))


def one_run(clients: int, args: argparse.Namespace) -> dict[str, Any]:
    load = load_average()
    work = Path(tempfile.mkdtemp(prefix="rostrum-spectators-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = child_env(ROSTRUM_DB=str(work / "bench.db"), ROSTRUM_DEMO_SPEED=str(args.speed))
    command = [sys.executable, str(SERVER), "--port", str(port)] + (["--root", args.root] if args.root else [])
    with open(work / "server.log", "w") as log:
        server = subprocess.Popen(command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    generators: list[subprocess.Popen[str]] = []
    try:
        wait_ready(server, base, work / "server.log")
        debate_id = http_json(f"{base}/bench/debates?rounds={args.rounds}", "POST")["id"]
        before = http_json(f"{base}/bench/debates/{debate_id}")
        shares = [clients // args.generators + (1 if i < clients % args.generators else 0)
                  for i in range(args.generators)] if clients else []
        for share in (s for s in shares if s):
            generators.append(subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "_generate", "--base", base, "--debate", debate_id,
                 "--clients", str(share), "--ramp-batch", str(args.ramp_batch), "--ramp-every", str(args.ramp_every)]
                + (["--explicit-handshake"] if args.explicit_handshake else []),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env()))
        readies = [read_line(g, 300) for g in generators]
        connected = http_json(f"{base}/bench/debates/{debate_id}")
        for g in generators:
            assert g.stdin is not None
            g.stdin.write("start\n")
            g.stdin.flush()
        http_json(f"{base}/bench/debates/{debate_id}/start", "POST")
        max_rss = connected["rss_mb"]
        deadline = time.monotonic() + args.timeout
        while True:
            time.sleep(0.5)
            stats = http_json(f"{base}/bench/debates/{debate_id}")
            max_rss = max(max_rss, stats["rss_mb"])
            if stats["terminal"] and stats["wall_s"] is not None:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the debate did not end within {args.timeout} s: {stats}")
        time.sleep(args.grace)  # let the last flushes reach every spectator
        final = http_json(f"{base}/bench/debates/{debate_id}")
        for g in generators:
            assert g.stdin is not None
            g.stdin.write("stop\n")
            g.stdin.flush()
        results = [read_line(g, 120) for g in generators]
    finally:
        for g in generators:
            stop_process(g, 30)
        stop_process(server)
    spectators = [s for r in results for s in r["spectators"]]
    return summarise(clients, load, before, connected, final, max_rss, readies, results, spectators)


def summarise(clients: int, load: str, before: dict[str, Any], connected: dict[str, Any], final: dict[str, Any],
              max_rss: float, readies: list[dict[str, Any]], results: list[dict[str, Any]],
              spectators: list[dict[str, Any]]) -> dict[str, Any]:
    streamed_bytes = final["streamed_bytes"] or 1
    ok = [s for s in spectators if not s["failed"]]
    event_bytes: Counter[str] = Counter()
    event_count: Counter[str] = Counter()
    for s in ok:
        event_bytes.update(s["event_bytes"])
        event_count.update(s["event_count"])
    n = len(ok) or 1
    rl = [s["rl_chars"] for s in ok]
    stayed = [s for s in ok if not s["disconnected"]]
    end = final["wall_s"] or 0.0
    dropped = [s for s in ok if s["disconnected"]]
    during = [s for s in dropped if s["disconnected_after"] is None or s["disconnected_after"] <= end]
    rl_items: Counter[str] = Counter()
    rl_item_bytes: Counter[str] = Counter()
    for s in ok:
        rl_items.update(s.get("rl_items", {}))
        rl_item_bytes.update(s.get("rl_item_bytes", {}))
    return {
        "clients": clients,
        "load_average": load,
        "wall_s": final["wall_s"],
        "cpu_s": final["cpu_s"],
        "peak_rss_mb": final["peak_rss_mb"],
        "max_sampled_rss_mb": max(max_rss, final["rss_mb"]),
        "rss_before_clients_mb": before["rss_mb"],
        "rss_with_clients_mb": connected["rss_mb"],
        "rss_per_spectator_connected_mb": (connected["rss_mb"] - before["rss_mb"]) / clients if clients else None,
        "server_clients_at_start": connected["clients"],
        "server_connected_at_start": connected["connected_clients"],
        "outbox_history_at_end": final.get("outbox_history"),
        "loop_lag_p50_ms": final.get("lag_p50_ms"),
        "loop_lag_p99_ms": final.get("lag_p99_ms"),
        "loop_lag_max_ms": final.get("lag_max_ms"),
        "connected": sum(r["connected"] for r in readies),
        "failed": sum(1 for s in spectators if s["failed"]),
        "failures": Counter(s["failed"] for s in spectators if s["failed"]).most_common(3),
        "disconnected": len(during),  # before the debate ended
        "disconnected_after_end": len(dropped) - len(during),  # while listening for the last flushes
        "disconnects": Counter(s["disconnected"] for s in ok if s["disconnected"]).most_common(3),
        "server_socket_closes": final.get("socket_closes"),
        "disconnected_after_s": sorted(s["disconnected_after"] for s in ok
                                       if s["disconnected_after"] is not None)[::max(1, clients // 10)],
        "ramp_s": max((r["ramp_s"] for r in readies), default=0.0),
        "streamed_chunks": final["streamed_chunks"],
        "streamed_chars": final["streamed_chars"],
        "streamed_visible_chars": final.get("streamed_visible_chars"),
        "streamed_bytes": final["streamed_bytes"],
        "bytes_per_spectator_median": statistics.median(s["bytes"] for s in ok) if ok else None,
        "bytes_ratio_median": statistics.median(s["bytes"] for s in ok) / streamed_bytes if ok else None,
        "bytes_ratio_max": max(s["bytes"] for s in ok) / streamed_bytes if ok else None,
        "bytes_ratio_shown_median": (statistics.median(s["bytes"] for s in ok) / final["streamed_visible_chars"]
                                     if ok and final.get("streamed_visible_chars") else None),
        "bytes_before_start_median": statistics.median(s["bytes_before_start"] for s in ok) if ok else None,
        "bytes_sent_median": statistics.median(s["bytes_sent"] for s in ok) if ok else None,
        "page_bytes_median": statistics.median(s["page_bytes"] for s in ok) if ok else None,
        "frames_median": statistics.median(s["frames"] for s in ok) if ok else None,
        "bytes_by_event_per_spectator": {k: round(v / n) for k, v in event_bytes.most_common()},
        "messages_by_event_per_spectator": {k: round(event_count[k] / n, 1) for k, _ in event_bytes.most_common()},
        "rl_chars_min": min(rl) if rl else None,
        "rl_chars_median": statistics.median(rl) if rl else None,
        "rl_gaps_total": sum(s["rl_gaps"] for s in ok),
        "rl_chars_min_connected_to_the_end": min((s["rl_chars"] for s in stayed), default=None),
        "rl_items_per_spectator": {k: round(v / n, 1) for k, v in sorted(rl_items.items())},
        "rl_item_bytes_per_spectator": {k: round(v / n) for k, v in sorted(rl_item_bytes.items())},
        "generator_cpu_s": sum(r["cpu_s"] for r in results),
        "generator_wall_s": max((r["wall_s"] for r in results), default=0.0),
        "generators": len(results),
    }


def table(runs: list[dict[str, Any]]) -> str:
    base = next((r for r in runs if r["clients"] == 0), None)

    def f(value: Any, fmt: str) -> str:
        return "—" if value is None else format(value, fmt)

    lines = ["| spectators | load (1/5/15) | wall s | ratio vs 0 | server CPU s | peak RSS MB | RSS/spectator MB "
             "| connected / disconnected before the end | bytes/spectator ÷ streamed (median) "
             "| rl chars min / median / shown |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        ratio = r["wall_s"] / base["wall_s"] if base and r["clients"] else (1.0 if r["clients"] == 0 else None)
        per = (r["peak_rss_mb"] - base["peak_rss_mb"]) / r["clients"] if base and r["clients"] else None
        lines.append(
            f"| {r['clients']} | {r['load_average'].replace(' ', '/')} | {r['wall_s']:.1f} | {f(ratio, '.2f')} "
            f"| {r['cpu_s']:.1f} | {r['peak_rss_mb']:.0f} | {f(per, '.3f')} (connected: "
            f"{f(r['rss_per_spectator_connected_mb'], '.3f')}) | {r['connected']} / {r['disconnected']}"
            f"{' (+' + str(r['failed']) + ' failed)' if r['failed'] else ''} | {f(r['bytes_ratio_median'], '.1f')} "
            f"| {f(r['rl_chars_min'], '')} / {f(r['rl_chars_median'], '')} / {r['streamed_visible_chars']} |")
    names = {"0": "text", "1": "started", "2": "cut", "3": "committed", "4": "status", "5": "note"}
    out = "\n".join(lines)
    for r in runs:
        if not r["clients"]:
            continue
        top = ", ".join(f"{k} {v / 1024:.0f} KB ({r['messages_by_event_per_spectator'][k]:g} msgs)"
                        for k, v in list(r["bytes_by_event_per_spectator"].items())[:6])
        out += (f"\n\n{r['clients']} spectators — per spectator: {top}; page {r['page_bytes_median'] / 1024:.0f} KB, "
                f"sent {r['bytes_sent_median'] / 1024:.1f} KB; streamed {r['streamed_bytes']} bytes in "
                f"{r['streamed_chunks']} chunks; ramp {r['ramp_s']:.1f} s; generator CPU {r['generator_cpu_s']:.1f} s "
                f"over {r['generator_wall_s']:.1f} s ({r['generators']} process(es)); server loop lag p50/p99/max "
                + "/".join(f(r[f"loop_lag_{q}_ms"], ".0f") for q in ("p50", "p99", "max")) + " ms")
        if r["rl_item_bytes_per_spectator"]:
            out += "; rl items per spectator: " + ", ".join(
                f"{names.get(k, k)} {v / 1024:.1f} KB ({r['rl_items_per_spectator'][k]:g})"
                for k, v in r["rl_item_bytes_per_spectator"].items())
        if r["disconnected_after_end"]:
            out += f"; {r['disconnected_after_end']} more disconnected after the debate ended (before the bench closed)"
        if r["disconnects"] or r["failures"]:
            out += (f"; disconnects {r['disconnects']} failures {r['failures']}, server closed sockets for: "
                    f"{r.get('server_socket_closes')}, at (s after start) {r['disconnected_after_s']}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = sys.argv[1:2] == ["_generate"]
    if sub:
        parser.add_argument("_generate")
        parser.add_argument("--base", required=True)
        parser.add_argument("--debate", required=True)
        parser.add_argument("--clients", type=int, required=True)
        parser.add_argument("--ramp-batch", type=int, default=50)
        parser.add_argument("--ramp-every", type=float, default=0.5)
        parser.add_argument("--explicit-handshake", action="store_true")
        parser.add_argument("--handshake-timeout", type=float, default=120)
        args = parser.parse_args()
        asyncio.run(generate(args.base, args.debate, args.clients, args.ramp_batch, args.ramp_every,
                             args.explicit_handshake, args.handshake_timeout))
        return 0
    parser.add_argument("--clients", default="0,100,400", help="comma-separated spectator counts (one run each)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the classic debate")
    parser.add_argument("--speed", type=float, default=40, help="demo tokens per second")
    parser.add_argument("--generators", type=int, default=1, help="load-generator processes")
    parser.add_argument("--ramp-batch", type=int, default=50, help="spectators connected per step")
    parser.add_argument("--ramp-every", type=float, default=0.5, help="seconds between steps")
    parser.add_argument("--explicit-handshake", action="store_true",
                        help="send the handshake event (as a prefetched page does) instead of the implicit one")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds to keep listening after the debate ends")
    parser.add_argument("--timeout", type=float, default=600, help="give up on a debate after this many seconds")
    parser.add_argument("--root", help="serve another checkout of the app (e.g. an export of an older commit)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = []
    for clients in [int(c) for c in args.clients.split(",") if c.strip()]:
        runs.append(one_run(clients, args))
        if not args.json:
            print(f"{clients} spectators: wall {runs[-1]['wall_s']:.1f} s, load before {runs[-1]['load_average']}",
                  file=sys.stderr)
    if args.json:
        print(json.dumps(runs, indent=2))
    else:
        print(table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
