"""Pages that hold on a phone (390×844) and on a desktop (1440×900), light and dark: no page is wider
than the screen, the header is one row on a phone (navigation in a menu), and the live debate's sticky
bar — with Pause and Stop — stays visible right below the header while the reader scrolls. Every main
page is visited on a phone: the dashboard, the forms, a running and a finished debate, the leaderboard,
judges, tournaments and a tournament, settings and admin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.child_env import child_env
from tests.e2e.conftest import DEBATE_URL, ROOT, both_schemes, in_scheme, launch_server
from tests.e2e.conftest import start_from_form as start

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
PAGES = ["/", "/new", "/leaderboard", "/tournaments", "/tournaments/new", "/judges", "/settings"]
SHOTS = os.environ.get("ROSTRUM_SHOTS")  # a folder: screenshots for a person to look at


@dataclass(frozen=True)
class Site:
    base: str
    workdir: Path

    @property
    def db(self) -> Path:
        return self.workdir / "e2e.sqlite3"  # `launch_server`'s default

    def cli(self, *args: str) -> str:
        """`python -m webapp …` on the site's database at full demo speed; returns what it printed."""
        done = subprocess.run([sys.executable, "-m", "webapp", *args, "--db", str(self.db)], cwd=self.workdir,
                              env=child_env(drop=("ROSTRUM_", "NICEGUI_"), ROSTRUM_DEMO_SPEED="0",
                                            PYTHONPATH=str(ROOT)),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """Slow enough that a debate is still running while the page is scrolled."""
    workdir = tmp_path_factory.mktemp("phone")
    with launch_server(workdir, extra_env={"ROSTRUM_DEMO_SPEED": "15"}, log_name="e2e-phone-server.log") as base:
        yield Site(base, workdir)


@pytest.fixture(scope="module")
def slow_server(site: Site) -> str:
    return site.base


def context_for(browser: Browser, viewport: dict[str, int]) -> BrowserContext:
    """Pages load in light (`both_schemes` starts there); a test switches them with `in_scheme`."""
    return browser.new_context(viewport=viewport, color_scheme="light")


def overflow(page: Page) -> int:
    """How many pixels the page is wider than the viewport (0: it fits)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth"))


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


# Scrolls to the end of the page and reads, before anything else can run, how far it scrolled, the
# header's bottom and the sticky bar's top.
SCROLLED_JS = """() => {
  window.scrollTo(0, document.documentElement.scrollHeight);
  return {scrollY: window.scrollY, header: document.querySelector('.q-header').getBoundingClientRect().bottom,
          bar: document.querySelector('.rostrum-sticky').getBoundingClientRect().top};
}"""


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_no_page_is_wider_than_the_screen_and_the_header_is_one_row_on_a_phone(
        slow_server: str, browser: Browser, viewport: dict[str, int]) -> None:
    """Each page in light and dark: loaded in one, then switched to the other."""
    context = context_for(browser, viewport)
    page = context.new_page()
    try:
        url = start(page, slow_server, "Should every street have a bench?")
        for number, path in enumerate([*PAGES, url.removeprefix(slow_server)]):
            page.goto(slow_server + path)
            page.wait_for_selector("h1")
            for scheme in both_schemes(number):
                in_scheme(page, scheme)
                assert overflow(page) <= 0, f"{path} ({scheme}) is {overflow(page)} px wider than the screen"
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


# Every combination the sticky bar is checked in, on one live debate: the screen and the colour scheme are
# switched on the open page (Quasar follows both as they change), so one debate serves all four instead
# of four debates each streamed until their page is long enough.
VIEWS = [(PHONE, "light"), (PHONE, "dark"), (DESKTOP, "light"), (DESKTOP, "dark")]


def test_the_sticky_bar_with_pause_and_stop_stays_under_the_header_while_scrolling(
        slow_server: str, browser: Browser) -> None:
    context = context_for(browser, PHONE)
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
        bar = page.locator(".rostrum-sticky")
        for viewport, scheme in VIEWS:
            page.set_viewport_size(viewport)  # type: ignore[arg-type]
            in_scheme(page, scheme)
            view = f"{viewport['width']}-{scheme}"
            # Long enough to scroll well past the top (a desktop shows more of it at once).
            page.wait_for_function("() => document.documentElement.scrollHeight > window.innerHeight + 300",
                                   timeout=90_000)
            expect(bar.get_by_role("button", name="Pause", exact=True)).to_be_visible()
            expect(bar.get_by_role("button", name="Stop", exact=True)).to_be_visible()
            # Scrolled to the end and measured in one step: the live page changes height as turns stream
            # and commit, and measured later the page had once shrunk back above the point where the bar
            # sticks.
            where = page.evaluate(SCROLLED_JS)
            assert where["scrollY"] > 100, (view, where)
            assert abs(where["bar"] - where["header"]) <= 2, (view, where)  # right below, not under it
            assert page.evaluate("() => { const b = document.querySelector('.rostrum-sticky "
                                 ".rostrum-stepper'); const r = b.getBoundingClientRect(); return "
                                 "document.elementFromPoint(r.left + 4, r.top + r.height / 2)?.closest("
                                 "'.rostrum-sticky') !== null; }"), f"{view}: the stepper is covered"
            shot(page, f"{scheme}-{viewport['width']}-scrolled")
        bar.get_by_role("button", name="Stop", exact=True).click()
        page.get_by_role("menuitem", name="Stop without a verdict").click()
        expect(page.get_by_role("menuitem", name="Stop without a verdict")).to_be_hidden()
        expect(bar.get_by_role("button", name="Pause", exact=True)).to_have_count(0)  # ended: no buttons
        expect(page.get_by_role("group", name="Debate controls")).to_have_count(0)
    finally:
        context.close()


# The page's width against the viewport's, and whether the sticky bar is where it should be and in view.
WIDER = "() => document.scrollingElement.scrollWidth - window.innerWidth"
BAR_UNDER_HEADER = """() => {
    const header = document.querySelector('.q-header').getBoundingClientRect();
    const bar = document.querySelector('.rostrum-sticky').getBoundingClientRect();
    const x = bar.left + Math.min(40, bar.width / 2), y = bar.top + bar.height / 2;
    const seen = document.elementFromPoint(x, y)?.closest('.rostrum-sticky') !== null;
    return {gap: Math.round(bar.top - header.bottom), seen, height: Math.round(bar.height)};
}"""
# The lowest contrast of a role="alert" panel's text against the panel (a warning that reads as one).
ALERT_CONTRAST = """(el) => {
    const pen = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
    const rgb = (css) => { pen.clearRect(0, 0, 1, 1); pen.fillStyle = css; pen.fillRect(0, 0, 1, 1);
        const d = pen.getImageData(0, 0, 1, 1).data; return [d[0], d[1], d[2], d[3]]; };  // any CSS colour
    const lum = (c) => 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
    function f(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
    let back = el, bg = null;
    while (back && (!bg || bg[3] === 0)) {
        bg = rgb(getComputedStyle(back).backgroundColor); back = back.parentElement; }
    let lowest = 99;
    for (const t of el.querySelectorAll('.q-label, div')) {
        if (!t.childNodes.length || ![...t.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
        const [a, b] = [lum(rgb(getComputedStyle(t).color)), lum(bg)].sort((p, q) => q - p);
        lowest = Math.min(lowest, (a + 0.05) / (b + 0.05));
    }
    return lowest;
}"""


def test_every_main_page_fits_a_phone_and_the_debates_keep_their_bar_under_the_header(
        site: Site, browser: Browser) -> None:
    """Each page in light and dark: loaded in one, then switched to the other."""
    topics = site.workdir / "topics.txt"
    topics.write_text("Should phones be banned at dinner?\n", encoding="utf-8")
    tournament = re.search(r"Tournament ([0-9a-f]{12})", site.cli(
        "tournament", "--models", "alpha,beta,gamma", "--topics", str(topics), "--format", "round-limited",
        "--rounds", "1"))
    assert tournament is not None
    # A finished debate whose spending crossed warn-at during the verdict (its warning is a panel).
    warned = re.search(r"Debate ([0-9a-f]{12}): completed", site.cli(
        "debate", "Should the verdict warn?", "--format", "round-limited", "--rounds", "1", "--warn-at", "0.008"))
    assert warned is not None
    finished = f"/debate/{warned.group(1)}"
    context = context_for(browser, PHONE)
    page = context.new_page()
    try:
        running = start(page, site.base, "Should night buses be free?").removeprefix(site.base)
        paths = ["/", "/new", running, finished, "/leaderboard", "/judges", "/tournaments",
                 f"/tournaments/{tournament.group(1)}", "/tournaments/new", "/settings", "/admin"]
        for number, path in enumerate(paths):
            page.goto(site.base + path)
            page.wait_for_selector("h1")
            page.wait_for_function("() => window.socket?.connected")  # parts built once connected follow
            if path == "/leaderboard" or (path.startswith("/tournaments/") and path != "/tournaments/new"):
                page.locator(".rostrum-chart svg").first.wait_for()  # the charts have drawn
            for scheme in both_schemes(number):
                in_scheme(page, scheme)
                wider = page.evaluate(WIDER)
                assert wider <= 0, f"{path} ({scheme}) is {wider} px wider than the screen"
                shot(page, f"every-{scheme}-{path.strip('/').replace('/', '-') or 'home'}")
                if path in (running, finished):  # scrolled to the end: the bar sits right under the header
                    page.evaluate("() => window.scrollTo(0, document.scrollingElement.scrollHeight)")
                    page.wait_for_function("() => window.scrollY > 100")
                    bar = page.evaluate(BAR_UNDER_HEADER)
                    assert bar["seen"] and abs(bar["gap"]) <= 2, f"{path} ({scheme}): the sticky bar {bar}"
                if path == finished:
                    alert = page.get_by_role("alert").filter(has_text="during the verdict")
                    expect(alert).to_be_visible()
                    contrast = alert.evaluate(ALERT_CONTRAST)
                    assert contrast >= 4.5, f"the warning reads {contrast}:1 ({scheme})"
    finally:
        context.close()
