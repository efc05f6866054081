"""The leaderboard in a real browser: the rating chart draws, a head-to-head cell lists its debates and
their links open them; the charts' labels are readable in both themes and never print over each other."""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e.conftest import launch_server
from tests.e2e.test_a11y import AXE, SCHEMES, audit
from tests.leaderboard_corpus import ALPHA, BETA, GAMMA, league_file, store_result
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
        expect(page.locator(".rostrum-chart svg").first).to_be_visible(timeout=30_000)  # ECharts took the options
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
            expect(page.locator(".rostrum-chart svg").first).to_be_visible(timeout=30_000)
            assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
            expect(page.get_by_role("columnheader", name="W–L–T").first).to_be_attached()  # kept, not dropped
            phone.close()
        # the board with its table, chart and matrix, in both colour schemes (`make axe`; required by `make test`)
        if not AXE.exists() and "axe" in required():
            unavailable("axe", f"axe-core is not installed ({AXE})")
        if AXE.exists():
            context = browser.new_context()
            found = audit(context, base + "/leaderboard", ".rostrum-chart svg")  # light and dark
            context.close()
            assert found == [], json.dumps(found, indent=1)


# Every chart's drawn text (SVG): the lowest contrast against the card behind it, and the labels that
# print over one another. null until every chart has drawn some text.
CHART_TEXT = """() => {
    const rgb = (c) => { const m = String(c).match(/[0-9.]+/g); if (String(c).startsWith('#')) {
        const h = c.length === 4 ? [...c.slice(1)].map((x) => x + x).join('') : c.slice(1, 7);
        return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16)); } return m ? m.slice(0, 3).map(Number) : null; };
    const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 :
        Math.pow((v + 0.055) / 1.055, 2.4); }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
    const charts = [...document.querySelectorAll('.nicegui-echart')];
    if (!charts.length) return null;
    let lowest = 99, worst = '', overlaps = [];
    for (const el of charts) {
        let back = el, bg = null;
        while (back && (!bg || bg[3] === 0)) { const s = getComputedStyle(back).backgroundColor;
            const v = s.match(/[0-9.]+/g).map(Number); bg = v.length === 4 ? v : [...v, 1]; back = back.parentElement; }
        const texts = [...el.querySelectorAll('svg text')].filter((t) => t.textContent.trim());
        if (!texts.length) return null;
        for (const t of texts) {
            const c = rgb(t.getAttribute('fill') || getComputedStyle(t).fill);
            const r = ratio(c, bg.slice(0, 3));
            if (r < lowest) { lowest = r; worst = t.textContent + ' ' + t.getAttribute('fill'); }
        }
        const boxes = texts.map((t) => [t.textContent, t.getBoundingClientRect()]);
        for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
            const [a, p] = boxes[i], [b, q] = boxes[j];
            const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
            const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
            if (w > 1 && h > 1) overlaps.push(a + ' / ' + b);
        }
    }
    return {lowest, worst, overlaps};
}"""


def test_chart_labels_are_readable_in_both_themes_and_never_overlap(tmp_path: Path, browser: Browser) -> None:
    """Ratings over a day and a half, the later debates further apart (the time axis's day and hour
    labels crowd together), on a phone and a desktop, light and dark."""
    db = tmp_path / "spread.sqlite3"

    async def spread() -> None:
        from webapp.store import Store

        store = await Store.open(db)
        try:
            pairs = [(ALPHA, BETA), (BETA, GAMMA), (GAMMA, ALPHA)]
            for i in range(12):
                a, b = pairs[i % 3]
                at = datetime(2026, 10, 1, 9, 13, tzinfo=UTC) + timedelta(minutes=23 * i * i)
                await store_result(store, f"s{i}", a, b, "a" if i % 4 else "b", created=at.isoformat())
        finally:
            await store.close()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, spread()).result()
    with launch_server(tmp_path, db=db, log_name="leaderboard-charts-server.log") as base:
        for scheme in SCHEMES:
            for viewport in ({"width": 390, "height": 844}, {"width": 1440, "height": 900}):
                context = browser.new_context(viewport=viewport, color_scheme=scheme)  # type: ignore[arg-type]
                page = context.new_page()
                page.goto(base + "/leaderboard")
                expect(page.locator(".nicegui-echart")).to_have_count(2, timeout=30_000)  # ratings, over time
                where = f"{scheme} {viewport['width']} px"
                try:  # the theme's colours are put on once a chart has drawn: wait for them
                    page.wait_for_function(f"() => {{ const r = ({CHART_TEXT})(); return r && r.lowest >= 4.5; }}",
                                           timeout=10_000)
                except PlaywrightTimeout:
                    pytest.fail(f"{where}: chart text below 4.5:1 — {page.evaluate(CHART_TEXT)}")
                said = page.evaluate(CHART_TEXT)
                assert said["overlaps"] == [], f"{where}: labels print over each other: {said['overlaps']}"
                context.close()
