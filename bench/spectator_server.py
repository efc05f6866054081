"""The real Rostrum app, served exactly as main.py serves it, plus a few bench-only routes.

    ROSTRUM_DB=/tmp/x.db ROSTRUM_DEMO_SPEED=40 .venv/bin/python bench/spectator_server.py --port 8123 [--root DIR]

Started by `bench/spectators.py` (one fresh process per measured run). The routes, on top of the app's
own pages (sign-in is off on 127.0.0.1):

- `GET  /bench/ready`                 200 once the engine is open
- `POST /bench/debates?rounds=3`      creates (does not start) a classic debate of demo models; → {"id"}
- `POST /bench/debates/{id}/start`    starts it as the debate page's Resume button would (actor `local`;
                                      on a worker with `ROSTRUM_WORKERS=external`) and starts counting:
                                      wall time, process CPU, streamed characters
- `GET  /bench/debates/{id}`          status, wall and CPU seconds from the start to the terminal state,
                                      streamed chars/bytes, current and peak RSS, NiceGUI clients
- `POST /bench/mark`                  the loop-lag window starts now (for an instance that started nothing)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# `--root DIR` serves another checkout of the app (an export of an older commit, say); default: this one.
sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--root") + 1]).resolve() if "--root" in sys.argv
                       else Path(__file__).resolve().parents[1]))

from fastapi import HTTPException
from nicegui import Client, app, ui

from webapp.engine.machine import TERMINAL_STATES
from webapp.engine.runner import DebateSession
from webapp.engine.schedule import phase_visible
from webapp.engine.stream import LiveChunk, LiveMessage
from webapp.models import DebateConfig
from webapp.settings import get_settings, storage_secret
from webapp.ui import runtime
from webapp.ui.app import FAVICON, PRODUCT, setup
from webapp.ui.components.presets import blank_form, form_to_config

TOPIC = "Should cities ban private cars from their centres?"


def rss_mb() -> float:
    """Resident memory now (VmRSS), in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


@dataclass
class Measure:
    """What one started debate cost this process."""

    session: DebateSession
    t0: float = field(default_factory=time.perf_counter)
    cpu0: float = field(default_factory=time.process_time)
    rss_at_start_mb: float = field(default_factory=rss_mb)
    wall_s: float | None = None
    cpu_s: float | None = None
    chunks: int = 0
    chars: int = 0
    visible_chars: int = 0
    bytes: int = 0
    unsubscribe: Any = None
    lag_start: int = field(default_factory=lambda: len(lag.samples))

    def listen(self, message: LiveMessage) -> None:
        if isinstance(message, LiveChunk):
            self.chunks += 1
            self.chars += len(message.text)
            self.bytes += len(message.text.encode())
            if self.shown(message.key):
                self.visible_chars += len(message.text)
        self.check_end()

    def shown(self, key: str) -> bool:
        """Whether spectators are shown this turn (not private preparation notes)."""
        live = self.session.live_turns.get(key)
        if live is None:
            return True
        state = self.session.state
        try:
            return phase_visible(state.format.phase(live.phase), state.config)
        except KeyError:
            return True

    def check_end(self) -> None:
        if self.wall_s is None and self.session.status in TERMINAL_STATES:
            self.wall_s = time.perf_counter() - self.t0
            self.cpu_s = time.process_time() - self.cpu0

    async def watch(self) -> None:
        """The listener sees the terminal event; this is the fallback (and says when the runner stops)."""
        await self.session.join()
        self.check_end()


measures: dict[str, Measure] = {}
lag_mark = 0  # where `GET /bench/debates/{id}` starts its loop-lag window when this process started nothing


class LoopLag:
    """How late the event loop runs a 50 ms timer: what every socket (pongs included) waits on top."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + 0.05
            await asyncio.sleep(0.05)
            self.samples.append(max(0.0, loop.time() - due))

    def since(self, start: int) -> dict[str, float]:
        window = sorted(self.samples[start:]) or [0.0]
        return {"lag_p50_ms": 1000 * window[len(window) // 2], "lag_p99_ms": 1000 * window[int(len(window) * 0.99)],
                "lag_max_ms": 1000 * window[-1], "lag_over_1s": sum(1 for x in window if x > 1.0)}


lag = LoopLag()
close_reasons: Counter[str] = Counter()


def count_socket_closes() -> None:
    """Count why the server closes engine.io sockets (ping timeout, transport close, …): wraps
    `AsyncSocket.close` of python-engineio, recording the reason, changing nothing else."""
    from engineio.async_socket import AsyncSocket

    original = AsyncSocket.close

    async def close(self: Any, wait: bool = True, abort: bool = False, reason: Any = None) -> None:
        if not self.closed and not self.closing:
            close_reasons[str(reason)] += 1
        await original(self, wait=wait, abort=abort, reason=reason)

    AsyncSocket.close = close  # type: ignore[method-assign]


def classic_config(rounds: int) -> DebateConfig:
    form = blank_form()
    form.update(topic=TOPIC, rounds=rounds)
    return DebateConfig.model_validate(form_to_config(form))


async def ready() -> dict[str, Any]:
    await runtime.current().engine()
    lag.start()
    return {"ok": True, "pid": os.getpid()}


async def create_debate(rounds: int = 3) -> dict[str, Any]:
    engine = await runtime.current().engine()
    debate_id = await engine.create(classic_config(rounds), actor="local")
    return {"id": debate_id}


async def start_debate(debate_id: str) -> dict[str, Any]:
    engine = await runtime.current().engine()
    if debate_id in measures:
        raise HTTPException(409, "already started")
    session = await engine.session(debate_id)
    gc.collect()
    measure = Measure(session)
    measure.unsubscribe = session.subscribe(measure.listen)
    measures[debate_id] = measure
    if getattr(engine, "workers", None) is not None:
        # ROSTRUM_WORKERS=external: the Resume button's path, which hands the debate to a worker
        # (`continue_debate` would run it in this process).
        from webapp.engine.api import Command

        result = await engine.command(session, Command.RESUME, actor="local")
    else:
        _, result = await engine.continue_debate(debate_id, actor="local")
    asyncio.get_running_loop().create_task(measure.watch())
    return {"id": debate_id, "status": session.status.value, "message": result.message}


async def debate_stats(debate_id: str) -> dict[str, Any]:
    engine = await runtime.current().engine()
    session = await engine.session(debate_id)
    measure = measures.get(debate_id)
    if measure is not None:
        measure.check_end()
    return {
        "id": debate_id,
        "status": session.status.value,
        "terminal": session.status in TERMINAL_STATES,
        "running": session.running,
        "wall_s": measure.wall_s if measure else None,
        "cpu_s": measure.cpu_s if measure else None,
        "elapsed_s": time.perf_counter() - measure.t0 if measure else None,
        "cpu_so_far_s": time.process_time() - measure.cpu0 if measure else None,
        "streamed_chunks": measure.chunks if measure else 0,
        "streamed_chars": measure.chars if measure else 0,
        "streamed_visible_chars": measure.visible_chars if measure else 0,
        "streamed_bytes": measure.bytes if measure else 0,
        "rss_mb": rss_mb(),
        "peak_rss_mb": peak_rss_mb(),
        "rss_at_start_mb": measure.rss_at_start_mb if measure else None,
        **lag.since(measure.lag_start if measure else lag_mark),
        "socket_closes": dict(close_reasons),
        "clients": len(Client.instances),
        "connected_clients": sum(1 for c in Client.instances.values() if c.has_socket_connection),
        # messages kept for a reconnect; the spectators' acks prune them
        "outbox_history": sum(len(c.outbox.message_history) for c in Client.instances.values()),
    }


async def mark() -> dict[str, Any]:
    """Start the loop-lag window now (an instance that only watches a debate started elsewhere)."""
    global lag_mark
    lag_mark = len(lag.samples)
    return {"ok": True}


async def element_census() -> dict[str, Any]:
    """What the newest page holds: NiceGUI elements by tag/class (reading where a page's memory goes)."""
    if not Client.instances:
        return {"clients": 0}
    client = list(Client.instances.values())[-1]
    kinds = Counter(f"{type(e).__name__}:{e.tag}" for e in client.elements.values())
    lines: list[str] = []

    def walk(element: Any, depth: int) -> None:
        marks = ",".join(element._markers)
        lines.append(f"{'  ' * depth}{type(element).__name__}:{element.tag} {marks}")
        for child in element:
            walk(child, depth + 1)

    walk(client.layout, 0)
    return {"clients": len(Client.instances), "elements": len(client.elements), "kinds": dict(kinds.most_common()),
            "tree": lines}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--root", help="the checkout to serve (default: the one this script is in)")
    args = parser.parse_args()
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    os.environ["ROSTRUM_PORT"] = str(args.port)
    count_socket_closes()
    setup()
    app.add_api_route("/bench/ready", ready, methods=["GET"])
    app.add_api_route("/bench/debates", create_debate, methods=["POST"])
    app.add_api_route("/bench/debates/{debate_id}/start", start_debate, methods=["POST"])
    app.add_api_route("/bench/debates/{debate_id}", debate_stats, methods=["GET"])
    app.add_api_route("/bench/elements", element_census, methods=["GET"])
    app.add_api_route("/bench/mark", mark, methods=["POST"])
    settings = get_settings()
    assert settings.host == "127.0.0.1" and not settings.auth_enabled, "the bench serves loopback without sign-in"
    ui.run(
        title=PRODUCT,
        host="127.0.0.1",
        port=args.port,
        favicon=FAVICON,
        dark=None,
        storage_secret=storage_secret(settings),
        reload=False,
        show=False,
        show_welcome_message=False,
        proxy_headers=False,
    )


if __name__ in {"__main__", "__mp_main__"}:
    main()
