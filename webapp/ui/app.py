"""Wires the web app together: static files, pages and the engine's life cycle.

`main.py` calls `setup()` then `ui.run(...)`. NiceGUI's `user` test fixture runs main.py afresh
for every test (with `ui.run` intercepted), so everything is registered here, not at import time.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import Response
from nicegui import Client, app, ui
from starlette.exceptions import HTTPException as StarletteHTTPException

from webapp.ui import runtime
from webapp.ui.layout import PRODUCT, install_head

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
FAVICON = STATIC_DIR / "favicon.svg"
# Every page says its language (`<html lang="en-US">`), for screen readers and translation tools.
LANGUAGE = "en-US"


def _page_miss(request: Request, exception: Exception) -> bool:
    """True for an address no page serves; False for a 404 an API route or a static file raised
    itself (those keep FastAPI's JSON answer, as NiceGUI does)."""
    endpoint = request.scope.get("endpoint")
    return not (endpoint is not None and endpoint is not app and not request.scope.get("nicegui_page_path")
                and isinstance(exception, StarletteHTTPException))


async def page_not_found(request: Request, exception: Exception) -> Response:
    """An unknown address: the "not found" page inside the shared frame, with HTTP 404."""
    from webapp.ui.auth import principal_for
    from webapp.ui.pages.debate import not_found

    if not _page_miss(request, exception):
        assert isinstance(exception, StarletteHTTPException)
        return await http_exception_handler(request, exception)
    principal = await principal_for(request)  # None (not signed in): the page shows no navigation
    with Client(ui.page("", title=f"{PRODUCT} · Page not found", language=LANGUAGE), request=request) as client:
        not_found(principal, f"There is no page at {request.url.path}.", title="Page not found", back=True)
    return client.build_response(request, 404)


def setup() -> None:
    """Register the pages, the static files and the engine's start and stop."""
    from webapp import api
    from webapp.ui.pages import (
        admin,
        dashboard,
        debate,
        judges,
        leaderboard,
        login,
        new_debate,
        settings,
        share,
        tokens,
        tournaments,
    )

    rt = runtime.reset()
    api.mount(app)  # the HTTP API under /api/v1 (its docs at /api/docs)
    app.add_static_files("/static", STATIC_DIR)
    install_head()
    app.on_startup(rt.start)
    app.on_shutdown(rt.stop)
    app.add_exception_handler(404, page_not_found)  # replaces NiceGUI's bare "404" page
    for path, title, page in (
        ("/", "Debates", dashboard.page),
        ("/new", "New debate", new_debate.page),
        ("/debate/{debate_id}", "Debate", debate.page),
        ("/judges", "Judges", judges.page),
        ("/leaderboard", "Leaderboard", leaderboard.page),
        ("/tournaments", "Tournaments", tournaments.list_page),
        ("/tournaments/new", "New tournament", tournaments.new_page),
        ("/tournaments/{tournament_id}", "Tournament", tournaments.page),
        ("/settings", "Settings", settings.page),
        ("/tokens", "API tokens", tokens.page),
        ("/login", "Sign in", login.page),
        ("/admin", "Admin", admin.page),
        ("/s/{token}", "Shared debate", share.page),
    ):
        ui.page(path, title=f"{PRODUCT} · {title}", language=LANGUAGE)(page)
