"""Wires the web app together: static files, pages and the engine's life cycle.

`main.py` calls `setup()` then `ui.run(...)`. NiceGUI's `user` test fixture runs main.py afresh
for every test (with `ui.run` intercepted), so everything is registered here, not at import time.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

from fastapi import Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.responses import Response
from nicegui import Client, app, ui
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webapp import api
from webapp.settings import image_hosts
from webapp.ui import runtime
from webapp.ui.auth import principal_for
from webapp.ui.layout import PRODUCT, install_head
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
    webhooks,
)
from webapp.ui.sign_in import FINISH_PATH, finish_sign_in

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"
FAVICON = STATIC_DIR / "favicon.svg"
# zlib's own default level: Starlette's 9 costs twice the CPU for under 1 % less on NiceGUI's scripts
# (measured on its eight largest files: 341 ms against 179 ms, 1,312 against 1,322 KiB), and every page
# load sends them, compressed anew for each request.
GZIP_LEVEL: Final = 6


def compression(asgi: ASGIApp) -> GZipMiddleware:
    """The gzip middleware `ui.run` puts in front of the app (its `gzip_middleware_factory`)."""
    return GZipMiddleware(asgi, minimum_size=500, compresslevel=GZIP_LEVEL)


# Every page says its language (`<html lang="en-US">`), for screen readers and translation tools.
LANGUAGE: Final = "en-US"


def private_files() -> None:
    """Files the server makes are its own: mode 0600, directories 0700 (umask 077). That covers
    NiceGUI's per-browser storage files (`.nicegui/storage-user-….json`, rewritten on each change)
    and anything else written while serving; the database is created 0600 by the store itself (its
    -wal and -shm files take its mode), the storage secret by `settings.storage_secret`."""
    os.umask(0o077)  # NiceGUI makes its folder when it first stores something: 0700 from now on
    folder = Path(os.environ.get("NICEGUI_STORAGE_PATH", ".nicegui")).resolve()
    if not folder.is_dir():
        return
    for path, mode in ((folder, 0o700), *((f, 0o600) for f in folder.glob("storage-*.json"))):
        with contextlib.suppress(OSError):  # made by an older Rostrum under a looser umask
            os.chmod(path, mode)


def content_security_policy() -> str:
    """What a page may load and run. NiceGUI renders its pages with inline scripts and compiles Vue
    templates in the browser, so scripts need 'unsafe-inline' and 'unsafe-eval'; everything else is
    this server's own (the websocket too: 'self' covers ws/wss to the same host), except images from
    `ROSTRUM_IMAGE_HOSTS`. No page may be framed, post a form elsewhere, or change its base URL."""
    images = " ".join(f"https://{host}" for host in image_hosts())
    return ("default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; "
            "style-src 'self' 'unsafe-inline'; "
            f"img-src 'self' data: blob:{' ' + images if images else ''}; font-src 'self' data:; "
            "connect-src 'self'; media-src 'self' data: blob:; worker-src 'self' blob:; object-src 'none'; "
            "base-uri 'self'; form-action 'self'; frame-ancestors 'none'")


class SecurityHeaders:
    """Adds the security headers to every HTTP answer (pages, static files, downloads, redirects).
    HSTS is the TLS proxy's to send (README, "TLS"): this server speaks plain HTTP behind it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headers = [(b"content-security-policy", content_security_policy().encode()),
                        (b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
                        (b"referrer-policy", b"same-origin")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *(h for h in self.headers if h[0] not in names)]
            await send(message)

        await self.app(scope, receive, with_headers)


def _page_miss(request: Request, exception: Exception) -> bool:
    """True for an address no page serves; False for a 404 an API route or a static file raised
    itself (those keep FastAPI's JSON answer, as NiceGUI does)."""
    endpoint = request.scope.get("endpoint")
    return not (endpoint is not None and endpoint is not app and not request.scope.get("nicegui_page_path")
                and isinstance(exception, StarletteHTTPException))


async def page_not_found(request: Request, exception: Exception) -> Response:
    """An unknown address: the "not found" page inside the shared frame, with HTTP 404."""
    if not _page_miss(request, exception):
        assert isinstance(exception, StarletteHTTPException)
        return await http_exception_handler(request, exception)
    principal = await principal_for(request)  # None (not signed in): the page shows no navigation
    with Client(ui.page("", title=f"{PRODUCT} · Page not found", language=LANGUAGE), request=request) as client:
        debate.not_found(principal, f"There is no page at {request.url.path}.", title="Page not found", back=True)
    return client.build_response(request, 404)


def setup() -> None:
    """Register the pages, the static files and the engine's start and stop."""
    rt = runtime.reset()
    app.add_middleware(SecurityHeaders)
    app.add_api_route(FINISH_PATH, finish_sign_in, methods=["GET"], include_in_schema=False)
    api.mount(app, wrap=SecurityHeaders)  # the HTTP API under /api/v1 (its docs at /api/docs)
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
        ("/admin/webhooks", "Webhooks", webhooks.page),
        ("/s/{token}", "Shared debate", share.page),
    ):
        ui.page(path, title=f"{PRODUCT} · {title}", language=LANGUAGE)(page)
