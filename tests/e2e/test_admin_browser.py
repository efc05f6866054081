"""The admin pages in a real browser (sign-in off: this computer acts as its admin): a user added on the
page with a generated password that the Copy button puts on the clipboard, a share link copied and then
revoked (its address gone from the page), and the admin, tokens and webhooks pages at 390×844 and
1440×900, light and dark: no page wider than the screen, the audit table scrolling inside its card."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import both_schemes, in_scheme, launch_server, open_expansion, start_from_form
from tests.e2e.test_a11y import AXE, RULES
from tests.services import unavailable
from webapp.access.passwords import verify_password

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
PAGES = ["/admin", "/tokens", "/admin/webhooks"]
LOCAL_WORDS = "this computer (no sign-in)"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    workdir = tmp_path_factory.mktemp("admin")
    db = workdir / "admin.sqlite3"
    with launch_server(workdir, db=db, log_name="e2e-admin-server.log") as base:
        yield base, db


@contextmanager
def opened(browser: Browser, viewport: dict[str, int] = DESKTOP, scheme: str = "light") -> Iterator[Page]:
    """A page of a fresh browser context that may use the clipboard, closed after the block."""
    context = browser.new_context(viewport=viewport, color_scheme=scheme,  # type: ignore[arg-type]
                                  permissions=["clipboard-read", "clipboard-write"])
    try:
        yield context.new_page()
    finally:
        context.close()


def clipboard(page: Page) -> str:
    return str(page.evaluate("() => navigator.clipboard.readText()"))


def create_share_link(page: Page) -> str:
    """Open the debate page's share card, make a link, return its address (a write to the debate's log
    and the audit trail first: on a loaded machine that takes more than Playwright's default 5 s).

    The debate on the page ends first: its verdict appears above the share card, and a click while the
    page grew landed where the button had been (a clean-clone run beside a CPU-bound process made no link)."""
    expect(page.get_by_role("status").filter(has_text=re.compile(r"^Debate completed$"))).to_be_visible(
        timeout=90_000)
    create = open_expansion(page, "Share read-only").get_by_role("button", name="Create link")
    expect(create).to_be_visible(timeout=15_000)
    create.click()
    field = page.get_by_role("textbox", name="Share link")
    expect(field).to_be_visible(timeout=15_000)
    return field.input_value()


def copies(page: Page, field: str, said: str) -> str:
    """The text of the read-only field named `field`, checked to be what its Copy button puts on the
    clipboard (and says so)."""
    value = page.get_by_role("textbox", name=field).input_value()
    page.get_by_role("button", name=f"Copy {field.lower()}").click()
    expect(page.get_by_text(said)).to_be_visible()
    assert clipboard(page) == value
    return value


def axe_violations(page: Page) -> list[tuple[str, list[str]]]:
    """axe-core's findings on the page as it is now (the rules the accessibility suite checks)."""
    if not AXE.exists():
        unavailable("axe", f"axe-core is not installed ({AXE}): run `make axe`")
    if not page.evaluate("() => typeof axe === 'object'"):  # once per loaded page
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("rules => axe.run(document, {runOnly: {type: 'rule', values: rules}})", RULES)
    return [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in result["violations"]]


def overflow(page: Page) -> int:
    """How many pixels the page is wider than the viewport (0: it fits)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth"))


def test_a_user_added_on_the_page_gets_a_password_the_copy_button_copies(site: tuple[str, Path],
                                                                         browser: Browser) -> None:
    base, db = site
    with opened(browser) as page:
        page.goto(base + "/admin")
        page.get_by_label("Username").fill("bea")
        page.get_by_label("Role", exact=True).click()
        page.get_by_role("option", name="operator").click()
        page.get_by_role("button", name="Add user").click()
        expect(page.get_by_text("Added bea (operator)")).to_be_visible()
        password = copies(page, "Generated password", "Password copied")
        assert len(password) >= 16
        with sqlite3.connect(db) as connection:
            (stored,) = connection.execute("SELECT password_hash FROM users WHERE username = 'bea'").fetchone()
        assert verify_password(stored, password)

        page.get_by_label("Username").fill("BEA")  # taken (names ignore case): said, nothing added
        page.get_by_role("button", name="Add user").click()
        expect(page.get_by_role("alert").filter(has_text="a user named 'bea' already exists")).to_be_visible()

        page.reload()  # the trail says who, in words
        expect(page.get_by_role("cell", name="User bea added as operator")).to_be_visible()
        expect(page.get_by_role("cell", name=LOCAL_WORDS).first).to_be_visible()
        expect(page.get_by_role("cell", name="local", exact=True)).to_have_count(0)


def test_a_share_link_is_copied_then_revoked_and_its_address_leaves_the_page(site: tuple[str, Path],
                                                                            browser: Browser) -> None:
    base, _ = site
    with opened(browser) as page:
        start_from_form(page, base, "Should every link have a copy button?")
        address = create_share_link(page)
        assert "/s/" in address and copies(page, "Share link", "Link copied") == address
        expect(page.get_by_text(f"· by {LOCAL_WORDS} ·")).to_be_visible()  # the link's row

        page.get_by_role("button", name="Revoke").click()
        expect(page.get_by_text(re.compile(r"^Share link \w+ revoked$"))).to_be_visible()  # the confirmation
        expect(page.get_by_text("revoked", exact=True)).to_be_visible()
        expect(page.get_by_text("it no longer opens the debate")).to_be_visible()
        expect(page.get_by_role("textbox", name="Share link")).to_have_count(0)
        expect(page.get_by_role("button", name="Copy share link")).to_have_count(0)
        token = address.rsplit("/", 1)[1]
        assert token not in page.content()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_admin_pages_fit_the_screen(site: tuple[str, Path], browser: Browser, viewport: dict[str, int]) -> None:
    """Each page in light and dark: loaded in one, then switched to the other."""
    base, _ = site
    with opened(browser, viewport) as page:
        start_from_form(page, base, "Do wide tables belong inside their cards on a phone?")
        create_share_link(page)
        for scheme in both_schemes(0):
            in_scheme(page, scheme)
            wider = overflow(page)
            assert wider <= 0, f"the debate page with its share card is {wider} px too wide ({scheme})"
        page.goto(base + "/admin")
        page.get_by_label("Username").fill(f"wide-{viewport['width']}")
        page.get_by_role("button", name="Add user").click()
        expect(page.get_by_role("button", name="Copy generated password")).to_be_visible()
        for scheme in both_schemes(1):
            in_scheme(page, scheme)
            assert axe_violations(page) == [], scheme  # the form, a user's row and the password shown once
        for number, path in enumerate(PAGES):
            page.goto(base + path)
            page.wait_for_selector("h1")
            page.wait_for_load_state("networkidle")
            for scheme in both_schemes(number):
                in_scheme(page, scheme)
                assert overflow(page) <= 0, f"{path} is {overflow(page)} px wider than the screen ({scheme})"
                assert axe_violations(page) == [], (path, scheme)
        page.goto(base + "/admin")
        audit = page.locator(".q-table__middle").first
        expect(audit).to_be_visible()
        box = audit.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]
        if viewport is PHONE:  # wider than the phone: it scrolls inside its card, not the page
            assert audit.evaluate("e => e.scrollWidth > e.clientWidth")
