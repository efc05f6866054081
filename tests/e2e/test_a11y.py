"""Accessibility audit: axe-core on every page, in light and dark mode, for the rules issue 12 names.

axe-core comes from npm into a git-ignored test-only folder (`make axe`, part of `make test`). The
debates are made by the CLI on the server's database (the web app follows it): one completed, one
still running (slow demo speed) while its page is audited.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.conftest import ROOT, in_scheme, launch_server, settle, spy_report
from tests.services import unavailable

pytestmark = pytest.mark.e2e

AXE = ROOT / "tests" / "e2e" / ".axe" / "node_modules" / "axe-core" / "axe.min.js"
# The rules issue 12 names, and heading-order (no skipped heading levels).
RULES = ["html-has-lang", "page-has-heading-one", "role-img-alt", "image-alt", "button-name", "link-name",
         "scrollable-region-focusable", "color-contrast", "heading-order"]
SCHEMES = ["light", "dark"]
# Rules a page is let off (none: every page passes every rule).
PENDING: dict[str, set[str]] = {"dashboard": set()}


class Site:
    def __init__(self, base: str, db: Path, workdir: Path) -> None:
        self.base, self.db, self.workdir = base, db, workdir

    def env(self, speed: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST" and not k.startswith("NICEGUI_")}
        env.update(ROSTRUM_DEMO_SPEED=speed, PYTHONPATH=str(ROOT))
        return env

    def debate(self, topic: str, fail: str = "") -> str:
        """A finished demo debate (completed, or errored by `fail`: ROSTRUM_DEMO_FAIL); returns its id."""
        env = self.env("0") | ({"ROSTRUM_DEMO_FAIL": fail} if fail else {})
        done = subprocess.run([sys.executable, "-m", "webapp", "debate", topic, "--rounds", "1", "--db", str(self.db)],
                              cwd=self.workdir, env=env, capture_output=True, timeout=120)
        assert done.returncode == (1 if fail else 0), done.stderr
        return self.find(topic)

    def start(self, topic: str, speed: str) -> subprocess.Popen[bytes]:
        """A demo debate run by the CLI in the background, held running while it is audited: its fourth
        turn (the second opening statement, after two parallel preparations) stalls half-written on every
        attempt (the demo runs on a wall-clock schedule, so a debate left to run could end on a loaded
        machine before its page was opened)."""
        command = [sys.executable, "-m", "webapp", "debate", topic, "--rounds", "3", "--db", str(self.db)]
        return subprocess.Popen(command, cwd=self.workdir, env=self.env(speed) | {"ROSTRUM_DEMO_FAIL": "4:stall!"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def find(self, topic: str) -> str:
        listing = subprocess.run([sys.executable, "-m", "webapp", "list", "--json", "--db", str(self.db)],
                                 cwd=self.workdir, env=self.env("0"), check=True, capture_output=True, text=True,
                                 timeout=60)
        return next(d["id"] for d in json.loads(listing.stdout) if d["topic"] == topic)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    if not AXE.exists():
        unavailable("axe", f"axe-core is not installed ({AXE}): run `make axe`")
    workdir = tmp_path_factory.mktemp("a11y")
    db = workdir / "e2e.sqlite3"
    with launch_server(workdir, db=db, log_name="a11y-server.log") as base:
        yield Site(base, db, workdir)


@pytest.fixture(scope="module")
def context(browser: Browser) -> Iterator[BrowserContext]:
    """One browser context for the whole module (a page per audit, closed after it): a context costs far
    more to open than a page."""
    opened = browser.new_context(viewport={"width": 1280, "height": 900}, reduced_motion="reduce")
    try:
        yield opened
    finally:
        opened.close()


def audit(context: BrowserContext, url: str, ready: str, pending: set[str] | None = None,
          expand: tuple[str, str] | None = None, width: int = 1280) -> list[dict[str, Any]]:
    """Open `url` in a new page of `context`, `width` px wide, wait until the element matching `ready`
    shows (and, with `expand`, click the button named `expand[0]` and wait for `expand[1]`), then run axe
    for RULES (less `pending`) in light and in dark (the page follows the system's scheme as it changes:
    one load for both) and count the h1 headings (one per page); returns the violations, each naming its
    scheme."""
    page: Page = context.new_page()
    console: list[str] = []  # for a failure's diagnosis (a reload after a lost socket, a Mermaid error)
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("framenavigated", lambda f: console.append(f"navigated: {f.url}") if f == page.main_frame else None)
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        expect(page.locator(ready).first).to_be_visible(timeout=30_000)
        if expand is not None:
            settle(page.get_by_role("button", name=expand[0])).click()
            try:
                expect(page.locator(expand[1]).first).to_be_visible(timeout=30_000)  # Mermaid loads on opening
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nthe page's console:\n" + "\n".join(console)
                                     + "\nwhat the page did:\n" + spy_report(page)) from None
        page.add_script_tag(path=str(AXE))
        rules = [rule for rule in RULES if rule not in (pending or set())]
        found = []
        for scheme in SCHEMES:
            in_scheme(page, scheme)
            result = page.evaluate("rules => axe.run(document, {runOnly: {type: 'rule', values: rules}})", rules)
            found += [{"scheme": scheme, "rule": v["id"],
                       "nodes": [(n["target"], n["html"][:160], n.get("failureSummary", "")) for n in v["nodes"]]}
                      for v in result["violations"]]
        # axe asks for at least one h1; the issue asks for exactly one per page
        h1 = page.evaluate("[...document.querySelectorAll('h1')].map(e => e.textContent.trim())")
        if len(h1) != 1:
            found.append({"rule": "one-h1", "nodes": h1})
        return found
    finally:
        page.close()


def test_the_empty_dashboard_settings_and_404_pass_axe(site: Site, context: BrowserContext) -> None:
    pages = {
        "/": "h1",
        "/new": "h1",
        "/settings": "h1",
        "/judges": "h1",
        "/leaderboard": "text=No rated debates yet",
        "/tournaments": "h1",
        "/tournaments/new": "h1",
        "/admin": "h1",
        "/no/such/page": "h1",
    }
    found = {path: audit(context, site.base + path, ready, PENDING["dashboard"] if path == "/" else set())
             for path, ready in pages.items()}
    # the form's second level too: the participants' advanced settings (colour palette, persona...)
    found["/new, advanced"] = audit(context, site.base + "/new", "h1",
                                    expand=("Advanced: persona, temperature, colour, tokens", "text=#1 Affirmative"))
    assert found == {path: [] for path in found}, json.dumps(found, indent=1)


def test_pages_on_a_phone_pass_axe(site: Site, context: BrowserContext) -> None:
    """At 390 px the header shows icons only: the links keep their names."""
    pages = {"/": "h1", "/new": "h1", "/settings": "h1", "/no/such/page": "h1"}
    found = {path: audit(context, site.base + path, ready, PENDING["dashboard"] if path == "/" else set(),
                         width=390) for path, ready in pages.items()}
    assert found == {path: [] for path in pages}, json.dumps(found, indent=1)


LIVE_TOPIC = "Should every page pass axe?"


@pytest.fixture(scope="module")
def debates(site: Site) -> Iterator[dict[str, str]]:
    """The debates the debate-page audit opens, seeded by the CLI: a completed one, one
    that ended in an error, and one held running (`running`: its id, added once the dashboard lists it)."""
    seeded = {"completed": site.debate("Are audits worth it?"),
              "errored": site.debate("Can a key be missing?", fail="1:auth!")}
    running = site.start(LIVE_TOPIC, speed="30")
    try:
        yield seeded
    finally:
        running.terminate()
        running.wait(30)


def test_debate_pages_and_a_full_dashboard_pass_axe(site: Site, context: BrowserContext,
                                                     debates: dict[str, str]) -> None:
    page = context.new_page()
    try:
        page.goto(site.base + "/")
        expect(page.get_by_text(LIVE_TOPIC).first).to_be_visible(timeout=30_000)
    finally:
        page.close()
    if "running" not in debates:
        debates["running"] = site.find(LIVE_TOPIC)
    done, live = debates["completed"], debates["running"]
    page = context.new_page()
    try:  # the live region says who speaks where (a hidden line: for screen readers)
        page.goto(f"{site.base}/debate/{live}")
        region = page.locator("[aria-live=polite]")
        expect(region).to_have_count(1)
        expect(region).to_have_text(re.compile(r"^(.+: )?\S.* (speaking|preparing)$|^The judge"), timeout=30_000)
    finally:
        page.close()
    found = {
        "/": audit(context, site.base + "/", ".q-header", PENDING["dashboard"]),
        "completed": audit(context, f"{site.base}/debate/{done}", "h1",
                           expand=('Expand "How this debate runs"', ".rostrum-diagram-fit svg")),
        "errored": audit(context, f"{site.base}/debate/{debates['errored']}", "h1"),
        "completed, on a phone": audit(context, f"{site.base}/debate/{done}", "h1", width=390),
        "running": audit(context, f"{site.base}/debate/{live}", ".rostrum-turn"),
        "missing debate": audit(context, f"{site.base}/debate/not-a-debate", "h1"),
        "/leaderboard": audit(context, site.base + "/leaderboard", "h1"),
    }
    assert found == {name: [] for name in found}, json.dumps(found, indent=1)


SEED = """
import asyncio, sys
from webapp.cli import opened
from webapp.ui.components.presets import quick_demo_config

async def main() -> None:
    async with opened(sys.argv[1]) as engine:
        for number in range(int(sys.argv[2])):
            await engine.create(quick_demo_config(f"Seeded debate {number + 1}: should a dashboard row be one "
                                                  "line high, however long the topic of the debate is?"))

asyncio.run(main())
"""


def test_the_dashboard_shows_at_least_twelve_rows_on_a_1440_by_900_screen(site: Site, browser: Browser) -> None:
    """With the filters (search, status, sort, model, tag) above the list, twelve rows still fit the
    first screen, whole; the page's buttons show a focus ring when reached by keyboard."""
    subprocess.run([sys.executable, "-c", SEED, str(site.db), "14"], cwd=site.workdir, env=site.env("0"),
                   check=True, capture_output=True, timeout=120)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        page.goto(site.base + "/")
        rows = page.locator(".rostrum-row")
        expect(rows.nth(13)).to_be_attached(timeout=30_000)  # the seeded debates are listed
        expect(page.get_by_label("Tag")).to_be_visible()  # the filter bar is there
        boxes = [rows.nth(i).bounding_box() for i in range(rows.count())]
        whole = [b for b in boxes if b is not None and b["y"] >= 0 and b["y"] + b["height"] <= 900]
        assert len(whole) >= 12, boxes[:14]
        assert page.evaluate("window.scrollY") == 0
        # a focus ring on the page's buttons too, not only on the navigation's links
        button = page.get_by_role("button", name="New debate")
        for _ in range(15):
            page.keyboard.press("Tab")
            if button.evaluate("e => e === document.activeElement"):
                break
        ring = button.evaluate("e => [getComputedStyle(e).outlineStyle, parseFloat(getComputedStyle(e).outlineWidth)]")
        assert ring[0] == "solid" and ring[1] >= 2, ring
        page.keyboard.press("Tab")  # the search field: Quasar marks the whole field focused (its border)
        expect(page.locator(".q-field--focused")).to_have_count(1)
    finally:
        context.close()


def test_navigation_links_work_by_keyboard_show_focus_and_fold_into_a_menu_on_a_phone(
        site: Site, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(site.base + "/settings")
        nav = page.get_by_role("navigation", name="Main")
        settings = nav.get_by_role("link", name="Settings")
        expect(settings).to_have_attribute("aria-current", "page")
        expect(settings).to_have_attribute("href", "/settings")  # a real link: opens in a new tab too
        expect(nav.get_by_role("link", name="Debates")).not_to_have_attribute("aria-current", "page")
        judges = nav.get_by_role("link", name="Judges")
        for _ in range(10):  # Tab through the header until the Judges link has the focus
            page.keyboard.press("Tab")
            if judges.evaluate("e => e === document.activeElement"):
                break
        assert judges.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"  # a visible focus ring
        page.keyboard.press("Enter")
        page.wait_for_url(site.base + "/judges")
        expect(page.get_by_role("heading", level=1)).to_have_text("Judges")
    finally:
        context.close()
    phone = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = phone.new_page()
        page.goto(site.base + "/")
        link = page.get_by_role("link", name="New debate")  # in the navigation menu: one header row
        expect(link).to_be_hidden()
        page.get_by_role("button", name="Menu").click()
        expect(link).to_be_visible()
        expect(link.locator(".rostrum-nav-label")).to_be_visible()  # the menu names its links
    finally:
        phone.close()


@pytest.fixture(scope="module")
def auth_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with sign-in on (its own start-up: sign-in is a server setting)."""
    if not AXE.exists():
        unavailable("axe", f"axe-core is not installed ({AXE}): run `make axe`")
    with launch_server(tmp_path_factory.mktemp("a11y-auth"), extra_env={"ROSTRUM_AUTH": "on"},
                       log_name="a11y-login-server.log") as base:
        yield base


def test_the_sign_in_page_passes_axe(auth_base: str, browser: Browser) -> None:
    context = browser.new_context()
    try:
        found = {path: audit(context, auth_base + path, "h1") for path in ("/login", "/no/such/page")}
    finally:
        context.close()
    assert found == {path: [] for path in found}, json.dumps(found, indent=1)


_TOURNAMENTS: dict[Path, str] = {}


def finished_tournament(site: Site) -> str:
    """The id of a small demo tournament played by the CLI (once per site)."""
    if site.db not in _TOURNAMENTS:
        topics = site.workdir / "topics.txt"
        topics.write_text("Are tournaments fair?\n", encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "webapp", "tournament", "--models", "alpha,beta", "--topics",
                               str(topics), "--format", "round-limited", "--rounds", "1", "--db", str(site.db)],
                              cwd=site.workdir, env=site.env("0"), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        found = re.search(r"Tournament ([0-9a-f]{12})", done.stdout)
        assert found is not None, done.stdout
        _TOURNAMENTS[site.db] = found.group(1)
    return _TOURNAMENTS[site.db]


def test_tournament_pages_pass_axe(site: Site, context: BrowserContext) -> None:
    page = f"{site.base}/tournaments/{finished_tournament(site)}"
    found = {
        "list": audit(context, f"{site.base}/tournaments", '.q-card a[href^="/tournaments/"]'),
        "tournament": audit(context, page, ".q-table"),
        "/leaderboard, rated": audit(context, f"{site.base}/leaderboard", ".q-table"),
    }
    assert found == {name: [] for name in found}, json.dumps(found, indent=1)
