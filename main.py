"""Serve Rostrum: `python main.py` (host, port and database from ROSTRUM_* settings or .env).

The demo provider works without any key, so a fresh checkout can run a debate at once.
"""

from __future__ import annotations

import asyncio
import os
import sys

from nicegui import ui

from webapp.settings import get_settings
from webapp.ui.app import FAVICON, PRODUCT, setup


async def _check_store() -> None:
    """Open the database once before serving: a corrupt file stops the start with a clear message."""
    from webapp.store import Store

    store = await Store.open(get_settings().db)
    await store.close()


def _preflight() -> None:
    from webapp.store.repository import StoreCorrupt

    try:
        asyncio.run(_check_store())
    except StoreCorrupt as exc:
        print(f"rostrum: {exc}", file=sys.stderr)
        print("rostrum: move the file aside or set ROSTRUM_DB to another path, then start again.",
              file=sys.stderr)
        sys.exit(2)


setup()

if __name__ in {"__main__", "__mp_main__"}:
    settings = get_settings()
    if __name__ == "__main__" and not os.environ.get("NICEGUI_USER_SIMULATION"):
        _preflight()
    ui.run(
        title=PRODUCT,
        host=settings.host,
        port=settings.port,
        favicon=FAVICON,
        dark=None,  # follow the system
        storage_secret=settings.storage_secret,
        reload=settings.reload,
        show=False,
        show_welcome_message=True,
    )
