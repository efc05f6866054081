"""The interactive API docs are served by this server: Swagger UI's script and style come from the
swagger-ui-bundle package, not a CDN (a hosted instance may have no internet, and its CSP allows only
its own origin's scripts)."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.testclient import TestClient

from webapp import api


def test_the_docs_page_loads_swagger_ui_from_this_server() -> None:
    app = FastAPI()
    api.mount(app)
    client = TestClient(app)
    page = client.get(api.DOCS)
    assert page.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(src.startswith("/") and not src.startswith("//") for src in sources), sources
    assert "cdn" not in page.text.lower()
    script = client.get(f"{api.DOCS_FILES}/swagger-ui-bundle.js")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.text
    assert client.get(f"{api.DOCS_FILES}/swagger-ui.css").status_code == 200
    assert client.get(api.OPENAPI).json()["info"]["title"] == "Rostrum API"
