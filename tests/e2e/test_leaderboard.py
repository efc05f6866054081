"""The leaderboard in a real browser: the rating chart draws, a head-to-head cell lists its debates and
their links open them."""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import launch_server
from tests.e2e.test_a11y import AXE, SCHEMES, audit
from tests.leaderboard_corpus import ALPHA, BETA, league_file
from tests.services import required, unavailable

pytestmark = pytest.mark.e2e


def test_the_chart_draws_and_a_head_to_head_cell_opens_its_debates(tmp_path: Path, browser: Browser) -> None:
    db = tmp_path / "league.sqlite3"
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs an event loop in this thread
        pool.submit(asyncio.run, league_file(db)).result()
    with launch_server(tmp_path, db=db, log_name="leaderboard-server.log") as base:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(base + "/leaderboard")
        expect(page.get_by_role("heading", name="Ratings over 5 debates")).to_be_visible(timeout=30_000)
        expect(page.locator(".nicegui-echart canvas").first).to_be_visible(timeout=30_000)  # ECharts took the options
        page.get_by_role("button", name=f"{ALPHA} against {BETA}: 2–0–1").click()
        expect(page.get_by_text(f"{ALPHA} against {BETA}: 2 won, 0 lost, 1 tied")).to_be_visible()
        page.get_by_role("link", name="Topic d1").click()
        page.wait_for_url(re.compile(r".*/debate/d1$"))
        page.close()
        for scheme in SCHEMES:  # on a phone: the page fits, the wide tables scroll inside their cards
            phone = browser.new_context(viewport={"width": 390, "height": 844},
                                        color_scheme=scheme)  # type: ignore[arg-type]
            page = phone.new_page()
            page.goto(base + "/leaderboard")
            expect(page.locator(".nicegui-echart canvas").first).to_be_visible(timeout=30_000)
            assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
            expect(page.get_by_role("columnheader", name="W–L–T").first).to_be_attached()  # kept, not dropped
            phone.close()
        # the board with its table, chart and matrix, in both colour schemes (`make axe`; required by `make test`)
        if not AXE.exists() and "axe" in required():
            unavailable("axe", f"axe-core is not installed ({AXE})")
        if AXE.exists():
            found = {}
            for scheme in SCHEMES:
                context = browser.new_context(color_scheme=scheme)  # type: ignore[arg-type]
                found[scheme] = audit(context, base + "/leaderboard", ".nicegui-echart canvas")
                context.close()
            assert found == {scheme: [] for scheme in SCHEMES}, json.dumps(found, indent=1)
