"""Wires the web app together: static files, pages and the engine's life cycle.

`main.py` calls `setup()` then `ui.run(...)`. NiceGUI's `user` test fixture runs main.py afresh
for every test (with `ui.run` intercepted), so everything is registered here, not at import time.
"""

from __future__ import annotations

from pathlib import Path

from nicegui import app, ui

from webapp.ui import runtime
from webapp.ui.layout import PRODUCT

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
FAVICON = STATIC_DIR / "favicon.svg"


def setup() -> None:
    """Register the pages, the static files and the engine's start and stop."""
    from webapp.ui.pages import admin, dashboard, debate, judges, login, new_debate, settings, share

    rt = runtime.reset()
    app.add_static_files("/static", STATIC_DIR)
    app.on_startup(rt.start)
    app.on_shutdown(rt.stop)
    ui.page("/", title=f"{PRODUCT} · Debates")(dashboard.page)
    ui.page("/new", title=f"{PRODUCT} · New debate")(new_debate.page)
    ui.page("/debate/{debate_id}", title=f"{PRODUCT} · Debate")(debate.page)
    ui.page("/judges", title=f"{PRODUCT} · Judges")(judges.page)
    ui.page("/settings", title=f"{PRODUCT} · Settings")(settings.page)
    ui.page("/login", title=f"{PRODUCT} · Sign in")(login.page)
    ui.page("/admin", title=f"{PRODUCT} · Admin")(admin.page)
    ui.page("/s/{token}", title=f"{PRODUCT} · Shared debate")(share.page)
