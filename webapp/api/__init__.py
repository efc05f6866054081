"""Rostrum's HTTP API, version 1: FastAPI routes under `/api/v1` on the app NiceGUI runs.

`mount(app)` adds them as a sub-application (its own OpenAPI document at `/api/v1/openapi.json`, its
own JSON errors, untouched by the pages' "not found" page) and the interactive docs at `/api/docs`.
Requests to `/api/v1` are handed to that sub-application before NiceGUI's middlewares (`front_door`):
those serve pages — browser sessions, a per-visitor user storage that NiceGUI creates for every request
without a session cookie and keeps for good, cache headers — and an API client needs none of them; they
would also pass every write of an event stream through three more layers.
Requests are authenticated in `webapp.api.auth` (personal API tokens, `webapp.access.tokens`), the
routes are in `webapp.api.routes`, the live event stream in `webapp.api.events`. Those are imported, and the
sub-application built, on the first API request (`OnFirstRequest`): the first page needs none of it.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from swagger_ui_bundle import swagger_ui_path

PREFIX = "/api/v1"
OPENAPI = f"{PREFIX}/openapi.json"
DOCS = "/api/docs"
DOCS_FILES = "/api/docs-files"  # Swagger UI's script and style, from the swagger-ui-bundle package
DESCRIPTION = """Start, follow and steer debates from scripts, notebooks and CI.

Authenticate with a personal API token (made on the **API tokens** page or with
`python -m webapp tokens create --user NAME`): `Authorization: Bearer rst_…`. With sign-in off (a
server bound to loopback) the API is open, like the web pages. Each token may make a limited number of
requests a minute (429 with `Retry-After` beyond it)."""


def build() -> FastAPI:
    api = FastAPI(title="Rostrum API", version="1", description=DESCRIPTION, openapi_url="/openapi.json",
                  docs_url=None, redoc_url=None)
    # late: the routes (and FastAPI's analysis of each) cost start-up time the first page does not need
    from webapp.api.routes import router

    api.include_router(router)
    return api


class OnFirstRequest:
    """The API sub-application, built by `build()` when the first request reaches it: its routes are about a
    fifth of what Rostrum imports before serving (bench/README.md, "Start-up"). Building takes no await, so
    two first requests cannot both build it."""

    def __init__(self) -> None:
        self.app: FastAPI | None = None

    def built(self) -> FastAPI:
        if self.app is None:
            self.app = build()
        return self.app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.built()(scope, receive, send)


async def docs() -> HTMLResponse:
    return get_swagger_ui_html(openapi_url=OPENAPI, title="Rostrum API",
                               swagger_js_url=f"{DOCS_FILES}/swagger-ui-bundle.js",
                               swagger_css_url=f"{DOCS_FILES}/swagger-ui.css",
                               swagger_favicon_url=f"{DOCS_FILES}/favicon-32x32.png")


def front_door(api: ASGIApp, pages: ASGIApp) -> ASGIApp:
    """An ASGI app sending `/api/v1…` straight to `api` (with the scope a mount would give it), the rest
    to `pages` (the app's usual middleware stack)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == PREFIX or path.startswith(PREFIX + "/")):
            root = scope.get("root_path", "")
            await api({**scope, "app_root_path": scope.get("app_root_path", root), "root_path": root + PREFIX},
                      receive, send)
            return
        await pages(scope, receive, send)

    return app


def mount(app: FastAPI, wrap: Callable[[ASGIApp], ASGIApp] | None = None) -> None:
    """Add the API to `app` (again after a fresh `setup()`: the old mount is replaced). `wrap`: what every
    answer passes through besides the API's own handling (the security headers), since the front door
    hands `/api/v1` to the API before the app's middlewares."""
    app.router.routes[:] = [r for r in app.router.routes
                            if not (isinstance(r, Mount) and r.path in (PREFIX, DOCS_FILES))
                            and getattr(r, "path", None) != DOCS]
    api = OnFirstRequest()
    app.mount(PREFIX, api)  # what the front door does, for anything that builds the stack its own way
    app.add_api_route(DOCS, docs, include_in_schema=False, response_class=HTMLResponse)
    app.mount(DOCS_FILES, StaticFiles(directory=str(swagger_ui_path)), name="api-docs-files")
    build_stack = type(app).build_middleware_stack

    def build_with_front_door() -> ASGIApp:
        return front_door(wrap(api) if wrap is not None else api, build_stack(app))

    # Starlette builds the stack on the first request, after NiceGUI has added its middlewares.
    app.build_middleware_stack = build_with_front_door  # type: ignore[method-assign]
