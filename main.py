"""Serve Rostrum: `python main.py` (host, port and database from ROSTRUM_* settings or .env).

The demo provider works without any key, so a fresh checkout can run a debate at once. Bound to
127.0.0.1 by default, with sign-in off; on any other address sign-in is on (see README, "Hosting
for a team").
"""

from __future__ import annotations

import gc

# What start-up imports and builds (modules, classes, routes, pages) lives as long as the process, yet
# the cyclic collector walked it over and over while it grew: 0.15-0.3 s of a 1.1 s start-up on 2 cores
# (bench/README.md, "Start-up"). So it does not collect until the server is up, then freezes what exists
# by then out of later collections (`_collect_from_now_on`). Only when run as the server: imported by
# NiceGUI's test plugin, this module leaves the collector alone.
if __name__ == "__main__":
    gc.disable()

import asyncio
import os
import sys

from nicegui import app, ui

from webapp.settings import get_settings, storage_secret
from webapp.ui.app import FAVICON, PRODUCT, compression, private_files, setup

CREATE_ADMIN = "python -m webapp users add NAME --role admin"


async def _check_store() -> int:
    """Open the database once before serving: a corrupt, locked, read-only or unwritable database stops
    the start with a clear message. Returns how many active admins exist. The integrity check done here
    is remembered, so the app's own open of the same, untouched file does not repeat it."""
    from webapp.store.accounts import Accounts
    from webapp.store.protocol import is_postgres_url, open_store

    db = get_settings().db
    store = await open_store(db, **({} if is_postgres_url(db) else {"remember_check": True}))
    try:
        return await Accounts(store).count_admins()
    finally:
        await store.close()


def _preflight() -> None:
    from pydantic import ValidationError

    from webapp.store import StoreError

    try:
        settings = get_settings()
    except ValidationError as exc:
        for error in exc.errors():
            name = "ROSTRUM_" + "_".join(str(p) for p in error["loc"]).upper()
            print(f"rostrum: invalid setting {name}: {error['msg'].removeprefix('Value error, ')}", file=sys.stderr)
        sys.exit(2)
    problem = settings.auth_problem()
    if problem is not None:
        print(f"rostrum: refusing to start: {problem}", file=sys.stderr)
        sys.exit(2)
    try:
        admins = asyncio.run(_check_store())
    except StoreError as exc:  # corrupt, locked by another process, read-only, full, unwritable directory…
        print(f"rostrum: {exc}", file=sys.stderr)
        print(f"rostrum: {exc.advice}.", file=sys.stderr)
        sys.exit(2)
    if settings.auth_enabled and admins == 0:
        print("rostrum: sign-in is on and there is no admin account yet. Create one with:", file=sys.stderr)
        print(f"    {CREATE_ADMIN}", file=sys.stderr)


def _collect_from_now_on() -> None:
    """The server is up: what start-up made is kept out of collections for good, and collecting resumes."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


setup()
app.on_startup(_collect_from_now_on)

if __name__ in {"__main__", "__mp_main__"}:
    if not os.environ.get("NICEGUI_USER_SIMULATION"):
        private_files()  # before anything is written: the database, its WAL, per-browser storage
    if __name__ == "__main__" and not os.environ.get("NICEGUI_USER_SIMULATION"):
        _preflight()
    settings = get_settings()
    ui.run(
        title=PRODUCT,
        host=settings.host,
        port=settings.port,
        favicon=FAVICON,
        dark=None,  # follow the system
        storage_secret=storage_secret(settings),
        reload=settings.reload,
        show=False,
        show_welcome_message=True,
        gzip_middleware_factory=compression,
        # The client address must be the peer's own: ROSTRUM_TRUSTED_PROXIES is checked against it, and
        # uvicorn would otherwise replace it with whatever X-Forwarded-For a local proxy passes on.
        proxy_headers=False,
    )
