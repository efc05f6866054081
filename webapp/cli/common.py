"""What every command shares: exit codes, the actor, usage errors, the engine opened for one command."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator

from pydantic import ValidationError

from webapp.access.roles import CLI
from webapp.bus import BusPublisher, open_bus
from webapp.engine.engine import Engine
from webapp.hygiene import strip_controls
from webapp.settings import Settings, get_settings
from webapp.webhooks import Webhooks

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 3
ACTOR = CLI.actor  # what the debate's log and the audit trail record for everything done here
WEBHOOK_DRAIN_SECONDS = 20.0  # at most, a command that ran debates waits at its end for their webhooks (it
# returns as soon as none is due: a busy machine must not drop them, an idle one does not wait)


class UsageError(Exception):
    """A bad command line or config; the message names the field."""


def format_validation(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "config"
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


@contextlib.asynccontextmanager
async def opened(db: str, settings: Settings | None = None, runs: bool = False) -> AsyncIterator[Engine]:
    """The engine on `db` for one command, closed however the command ends. With `runs` (a command
    that runs debates), the webhooks of what it commits are queued and sent, and at the end what is due
    gets a few seconds to go out (what does not is sent by the web app or a worker later)."""
    settings = settings or get_settings()
    engine = await Engine.open(db, settings=settings)
    # A debate this command runs streams to web processes on the live bus (when Redis is configured).
    bus = open_bus(settings.redis_url)
    await bus.start()
    publisher = BusPublisher(engine, bus)
    webhooks = Webhooks(engine, settings) if runs else None
    if webhooks is not None:
        await webhooks.start()
    try:
        yield engine
    finally:
        if webhooks is not None:
            await webhooks.close(drain=WEBHOOK_DRAIN_SECONDS)
        publisher.close()
        await bus.close()
        await engine.close()


def settings_of(args: argparse.Namespace) -> Settings | None:
    """The one settings object `main` read for this command (None when called without `main`)."""
    return getattr(args, "settings", None)


def say_error(message: str) -> None:
    """A line on stderr, without control characters (it may quote a topic or a provider's words)."""
    sys.stderr.write(strip_controls(message) + "\n")
