"""Serve Rostrum: `python main.py` (host, port and database from ROSTRUM_* settings or .env).

The demo provider works without any key, so a fresh checkout can run a debate at once. Bound to
127.0.0.1 by default, with sign-in off; on any other address sign-in is on (see README, "Hosting
for a team").
"""

from __future__ import annotations

import asyncio
import os
import sys

from nicegui import ui

from webapp.settings import get_settings, storage_secret
from webapp.ui.app import FAVICON, PRODUCT, private_files, setup

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


setup()

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
        # The client address must be the peer's own: ROSTRUM_TRUSTED_PROXIES is checked against it, and
        # uvicorn would otherwise replace it with whatever X-Forwarded-For a local proxy passes on.
        proxy_headers=False,
    )
