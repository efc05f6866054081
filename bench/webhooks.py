"""What webhooks cost a debate: a classic debate on `demo-instant` (SQLite, real fsyncs), run N times
in each of three set-ups, median wall time of each:

- `none`: no webhooks at all (no relay, no sender);
- `answering`: an endpoint that wants every debate event, a receiver on this machine answering at once,
  the relay and the sender running (the debate's events are queued and sent while it runs);
- `holding`: the same, but the receiver holds every request until the run ends (a dead-slow receiver).

The goal ("notifications never slow a debate"): `answering` and `holding` within noise of `none`.

    .venv/bin/python bench/webhooks.py [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.webhook_receiver import Receiver
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.settings import Settings
from webapp.store import Store
from webapp.store.webhooks import WebhookStore
from webapp.webhooks import Webhooks
from webapp.webhooks.events import EVENTS

SETTINGS = Settings(_env_file=None, demo_speed=0, webhook_allow_private=True)


class Setup:
    """One of the three set-ups: its own store, engine, receiver and (but for `none`) webhooks."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.times: list[float] = []

    async def open(self, folder: Path) -> None:
        self.store = await Store.open(folder / f"{self.mode}.sqlite3")
        self.engine = Engine(self.store, settings=SETTINGS,
                             providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))
        self.receiver = Receiver(asyncio.get_running_loop())
        self.receiver.start()
        self.webhooks = None
        if self.mode != "none":
            await WebhookStore(self.store).add_endpoint(self.receiver.url, list(EVENTS), "whsec_bench", "bench")
            self.webhooks = Webhooks(self.engine, SETTINGS)
            await self.webhooks.start()
        if self.mode == "holding":
            self.receiver.hold.clear()

    async def run(self, n: int) -> None:
        t0 = time.perf_counter()
        session = await self.engine.start(DebateConfig(topic=f"Tea is better than coffee ({self.mode} {n})",
                                                       format="classic"))
        assert await session.join() is State.COMPLETED
        self.times.append(time.perf_counter() - t0)

    async def close(self) -> None:
        self.receiver.hold.set()
        if self.webhooks is not None:
            await self.webhooks.close()
        self.receiver.stop()
        await self.store.close()


async def main(runs: int) -> None:
    setups = [Setup(mode) for mode in ("none", "answering", "holding")]
    with tempfile.TemporaryDirectory() as tmp:
        for setup in setups:
            await setup.open(Path(tmp))
        try:
            for n in range(runs):  # interleaved: the machine's drift touches every set-up alike
                for setup in setups:
                    await setup.run(n)
        finally:
            for setup in setups:
                await setup.close()
    for setup in setups:
        print(f"{setup.mode:10s} median {statistics.median(setup.times) * 1000:7.1f} ms   "
              f"min {min(setup.times) * 1000:7.1f} ms   runs {len(setup.times)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    asyncio.run(main(parser.parse_args().runs))
