"""`worker`: run debates for web processes until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import TextIO

from webapp.cli.common import EXIT_OK, opened, settings_of
from webapp.settings import get_settings


async def cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    """Run debates for web processes: take debates by lease, answer their jobs, until SIGTERM/SIGINT."""
    # late: only `worker` runs debates for web processes (redis and the lease loop stay unloaded otherwise)
    from webapp.workers import Worker

    settings = settings_of(args) or get_settings()
    async with opened(args.db, settings, runs=True) as engine:
        worker = Worker(engine, redis_url=settings.redis_url, lease=args.lease, poll=args.poll)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await worker.start()
        out.write(f"worker {worker.name} ready (lease {args.lease:g} s)\n")
        out.flush()
        try:
            await stop.wait()
        finally:
            await worker.close()
    return EXIT_OK
