"""Pages that hold on a phone (390×844) and on a desktop (1440×900), light and dark: no page is wider
than the screen, the header is one row on a phone (navigation in a menu), and the live debate's sticky
bar — with Pause and Stop — stays visible right below the header while the reader scrolls."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.conftest import DEBATE_URL, launch_server
from tests.e2e.conftest import start_from_form as start

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
PAGES = ["/", "/new", "/leaderboard", "/tournaments", "/tournaments/new", "/judges", "/settings"]
SHOTS = os.environ.get("ROSTRUM_SHOTS")  # a folder: screenshots for a person to look at


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Slow enough that a debate is still running while the page is scrolled."""
    with launch_server(tmp_path_factory.mktemp("phone"), extra_env={"ROSTRUM_DEMO_SPEED": "15"},
                       log_name="e2e-phone-server.log") as base:
        yield base


def context_for(browser: Browser, viewport: dict[str, int], scheme: str) -> BrowserContext:
    return browser.new_context(viewport=viewport, color_scheme=scheme)  # type: ignore[arg-type]


def overflow(page: Page) -> int:
    """How many pixels the page is wider than the viewport (0: it fits)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth"))


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_no_page_is_wider_than_the_screen_and_the_header_is_one_row_on_a_phone(
        slow_server: str, browser: Browser, viewport: dict[str, int], scheme: str) -> None:
    context = context_for(browser, viewport, scheme)
    page = context.new_page()
    try:
        url = start(page, slow_server, "Should every street have a bench?")
        for path in [*PAGES, url.removeprefix(slow_server)]:
            page.goto(slow_server + path)
            page.wait_for_selector("h1")
            assert overflow(page) <= 0, f"{path} is {overflow(page)} px wider than the screen"
            shot(page, f"{scheme}-{viewport['width']}-{path.strip('/').replace('/', '-') or 'home'}")
        header = page.locator(".q-header").bounding_box()
        assert header is not None
        if viewport is PHONE:
            assert header["height"] <= 64, f"the header takes {header['height']} px: more than one row"
            expect(page.get_by_role("link", name="Leaderboard")).to_be_hidden()  # in the menu, closed
            page.get_by_role("button", name="Menu").click()
            link = page.get_by_role("link", name="Leaderboard")
            expect(link).to_be_visible()
            link.click()
            page.wait_for_url(slow_server + "/leaderboard")
        else:
            expect(page.get_by_role("button", name="Menu")).to_be_hidden()
            expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Leaderboard")) \
                .to_be_visible()
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_sticky_bar_with_pause_and_stop_stays_under_the_header_while_scrolling(
        slow_server: str, browser: Browser, viewport: dict[str, int], scheme: str) -> None:
    context = context_for(browser, viewport, scheme)
    page = context.new_page()
    try:
        page.goto(slow_server + "/new")  # a Quick demo of eight rounds: still running once the page is long
        page.get_by_role("button", name="Quick demo").click()
        expect(page.get_by_text("Preset applied: Quick demo")).to_be_visible()  # a fresh form: the topic after it
        page.get_by_label("What should they debate? *").fill("Should parks stay open all night?")
        rounds = page.get_by_label("Rounds")
        expect(rounds).to_have_value("1")  # the preset has been applied: what is typed now stays
        rounds.fill("8")
        rounds.blur()
        expect(rounds).to_have_value("8")
        page.get_by_role("button", name="Start debate").click()
        page.wait_for_url(DEBATE_URL)
        # Long enough to scroll well past the top (a desktop shows more of it at once).
        page.wait_for_function("() => document.documentElement.scrollHeight > window.innerHeight + 150",
                               timeout=90_000)
        page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
        page.wait_for_function("() => window.scrollY > 100")
        bar = page.locator(".rostrum-sticky")
        pause = bar.get_by_role("button", name="Pause", exact=True)
        stop = bar.get_by_role("button", name="Stop", exact=True)
        expect(pause).to_be_visible()
        expect(stop).to_be_visible()
        header, box = page.locator(".q-header").bounding_box(), bar.bounding_box()
        assert header is not None and box is not None
        assert abs(box["y"] - (header["y"] + header["height"])) <= 2, (header, box)  # right below, not under it
        assert page.evaluate("() => { const b = document.querySelector('.rostrum-sticky "
                             ".rostrum-stepper'); const r = b.getBoundingClientRect(); return "
                             "document.elementFromPoint(r.left + 4, r.top + r.height / 2)?.closest("
                             "'.rostrum-sticky') !== null; }"), "the stepper is covered"
        shot(page, f"{scheme}-{viewport['width']}-scrolled")
        stop.click()
        page.get_by_role("menuitem", name="Stop without a verdict").click()
        expect(page.get_by_role("menuitem", name="Stop without a verdict")).to_be_hidden()
        expect(bar.get_by_role("button", name="Pause", exact=True)).to_have_count(0)  # ended: no buttons
        expect(page.get_by_role("group", name="Debate controls")).to_have_count(0)
    finally:
        context.close()
