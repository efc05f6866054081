"""Team access in a real browser (`ROSTRUM_AUTH=on`): an operator starts a debate that a viewer
watches read-only, wrong credentials are refused alike, and nothing secret reaches a viewer's
browser — not the provider key, the database path, nor any password hash."""

from __future__ import annotations

import asyncio
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Response, Route, WebSocket, expect
from playwright.sync_api import Error as PlaywrightError

from tests.e2e.conftest import DEBATE_URL, launch_server, open_expansion, start_from_form
from webapp.access.passwords import hash_password
from webapp.settings import SECRET_FILE_NAME
from webapp.store import Store
from webapp.store.accounts import Accounts

pytestmark = pytest.mark.e2e

FAILED = "Wrong username or password."
CONTROLS = ("Pause", "Resume", "Retry", "Stop")

LOGIN_URL = re.compile(r".*/login(\?.*)?$")
# Slower than the other e2e module's speed: a turn then streams for seconds, to a page that is there.
DEMO_SPEED = "20"
# Every debate here is held running, not raced: the demo provider writes half of turn 1 (and later of
# turn 3) and then nothing until the operator pauses and resumes (`release`), which redoes the turn.
# The demo runs on a wall-clock schedule, so without the hold a loaded machine let the debate end
# before a signed-in viewer or guest was there to watch it, or before the operator's Pause.
HOLD = "1:stall,3:stall"


@dataclass
class Team:
    base: str
    db: Path
    provider_key: str
    passwords: dict[str, str]  # username -> password
    hashes: dict[str, str]  # username -> argon2 hash, as stored
    storage_secret: str = ""

    def secrets(self, except_password_of: str) -> dict[str, str]:
        """What must never reach `except_password_of`'s browser (their own password they typed)."""
        found = {"provider key": self.provider_key, "database path": str(self.db),
                 "database file name": self.db.name, "storage secret": self.storage_secret}
        for name, digest in self.hashes.items():
            found[f"{name}'s password hash"] = digest
            found[f"{name}'s password hash (digest part)"] = digest.rsplit("$", 1)[1]
        for name, password in self.passwords.items():
            if name != except_password_of:
                found[f"{name}'s password"] = password
        return found


async def _make_users(db: Path, users: list[tuple[str, str, str]]) -> None:
    store = await Store.open(db)
    try:
        for name, role, password in users:
            await Accounts(store).add_user(name, role, hash_password(password))
    finally:
        await store.close()


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    workdir = tmp_path_factory.mktemp("team")
    db = workdir / f"rostrum-team-{secrets.token_hex(4)}.sqlite3"
    users = [("ada", "admin", "admin-" + secrets.token_urlsafe(12)),
             ("olga", "operator", "operator-" + secrets.token_urlsafe(12)),
             ("vic", "viewer", "viewer-" + secrets.token_urlsafe(12))]
    asyncio.run(_make_users(db, users))
    with sqlite3.connect(db) as connection:
        hashes = dict(connection.execute("SELECT username, password_hash FROM users").fetchall())
    assert set(hashes) == {"ada", "olga", "vic"} and all(h.startswith("$argon2") for h in hashes.values())
    key = f"placeholder-e2e-key-{secrets.token_hex(16)}"
    env = {"ROSTRUM_AUTH": "on", "OPENAI_API_KEY": key, "ROSTRUM_DEMO_SPEED": DEMO_SPEED,
           "ROSTRUM_DEMO_FAIL": HOLD}
    with launch_server(workdir, db=db, extra_env=env, log_name="e2e-team-server.log") as base:
        secret = (db.parent / SECRET_FILE_NAME).read_text(encoding="utf-8").strip()
        assert secret
        yield Team(base, db, key, {name: pw for name, _, pw in users}, hashes, secret)


def sign_in(page: Page, team: Team, name: str, expect_url: re.Pattern[str] | str | None = None) -> None:
    """Fill the sign-in form the page shows and wait to leave /login."""
    expect(page).to_have_url(LOGIN_URL)
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(team.passwords[name])
    page.get_by_role("button", name="Sign in").click()
    # A condition, bounded for a hang rather than timed: an argon2id check, five store writes, two
    # redirects and a page build took more than Playwright's default 5 s at load 20 on 2 cores.
    expect(page).to_have_url(expect_url or re.compile(r"^(?!.*/login).*$"), timeout=30_000)
    expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()  # the account menu


def new_page(browser: Browser, **options: object) -> tuple[BrowserContext, Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, **options)
    return context, context.new_page()


def wait_for_growing_stream(page: Page) -> None:
    """See one turn's streaming text grow in place by a few words (a turn that ends first is
    replaced by the next one to watch)."""
    page.wait_for_function("""() => {
        const w = window.__watched;
        const live = (s) => s.isConnected && s.closest('.rostrum-turn-live');  // a finished turn stops growing
        if (w && live(w.stream) && w.stream.textContent.length > w.length + 15) return true;
        if (!w || !live(w.stream)) {
            const s = [...document.querySelectorAll('.rostrum-turn-live .rostrum-turn-text')]
                .find(s => s.textContent.length > 0);
            window.__watched = s ? {stream: s, length: s.textContent.length} : null;
        }
        return false;
    }""", timeout=20_000, polling=10)


def release(operator: Page) -> None:
    """Pause and resume the held debate: the held turn is redone and streams (to pages already there)."""
    operator.get_by_role("button", name="Pause", exact=True).click()
    expect(operator.locator(".q-badge", has_text="paused")).to_be_visible()
    operator.get_by_role("button", name="Resume", exact=True).click()
    expect(operator.locator(".q-badge", has_text="running")).to_be_visible()




def test_operator_starts_a_debate_that_a_viewer_watches_read_only(team: Team, browser: Browser) -> None:
    operator_context, operator = new_page(browser)
    operator.goto(team.base + "/")
    sign_in(operator, team, "olga", re.compile(r".*/$"))
    expect(operator.get_by_text("No debates yet")).to_be_visible()
    operator.get_by_role("button", name="Start a demo debate").click()
    operator.wait_for_url(DEBATE_URL)
    url = operator.url
    expect(operator.locator(".q-badge", has_text="running")).to_be_visible()
    expect(operator.get_by_role("button", name="Pause", exact=True)).to_be_enabled()

    # the viewer follows a link to the debate: sign in first, then land on it
    viewer_context, viewer = new_page(browser, accept_downloads=True)
    viewer.goto(url)
    expect(viewer).to_have_url(re.compile(r".*/login\?next=%2Fdebate%2F[0-9a-f]+$"))
    expect(viewer.get_by_role("link", name="New debate")).to_have_count(0)  # no navigation before sign-in
    sign_in(viewer, team, "vic", url)
    expect(viewer.locator(".q-badge", has_text="running")).to_be_visible()  # held at turn 1

    for name in CONTROLS:  # while the operator's Pause is live, the viewer has no command buttons at all
        expect(viewer.get_by_role("button", name=name, exact=True)).to_have_count(0)
    expect(viewer.get_by_text("Viewers can watch and export; controls need an operator.")).to_be_visible()
    expect(viewer.get_by_role("button", name="New debate")).to_have_count(0)
    expect(viewer.get_by_role("link", name="New debate")).to_have_count(0)
    expect(viewer.get_by_role("link", name="Admin")).to_have_count(0)
    expect(viewer.get_by_role("link", name="Debates")).to_be_visible()
    expect(operator.get_by_role("button", name="Pause", exact=True)).to_be_enabled()
    release(operator)
    wait_for_growing_stream(viewer)  # the viewer watches it stream

    with viewer.expect_download() as info:  # viewers may export
        viewer.get_by_role("button", name="Export").click()  # a menu of the three formats
        viewer.get_by_text("Markdown (.md)").click()
    assert info.value.suggested_filename.endswith(".md")

    viewer.goto(team.base + "/")  # the dashboard: the debate, but nothing to start one with
    expect(viewer.get_by_text("Should cities ban private cars from their centres?")).to_be_visible()
    expect(viewer.get_by_role("button", name="New debate")).to_have_count(0)
    expect(viewer.get_by_role("link", name="New debate")).to_have_count(0)
    expect(viewer.get_by_role("button", name="Start a demo debate")).to_have_count(0)

    viewer.get_by_role("button", name="vic", exact=True).click()
    expect(viewer.get_by_text("Role: viewer", exact=True)).to_be_visible()
    viewer.get_by_text("Sign out", exact=True).click()
    expect(viewer).to_have_url(LOGIN_URL)
    expect(viewer.get_by_label("Password")).to_be_visible()
    viewer.goto(url)  # signed out: the debate is behind sign-in again
    expect(viewer).to_have_url(re.compile(r".*/login\?next=%2Fdebate%2F[0-9a-f]+$"))
    expect(viewer.get_by_label("Username")).to_be_visible()
    viewer_context.close()
    operator_context.close()


def test_wrong_password_and_unknown_user_get_the_same_refusal(team: Team, browser: Browser) -> None:
    context, page = new_page(browser)
    for name, password in (("vic", "not-" + team.passwords["vic"]), ("nobody-" + secrets.token_hex(3), "whatever1")):
        page.goto(team.base + "/login")
        expect(page.get_by_text(FAILED)).to_have_count(0)
        page.get_by_label("Username").fill(name)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert").filter(has_text=FAILED)).to_have_text(FAILED)
        expect(page.get_by_label("Password")).to_have_value("")  # cleared for another try
        expect(page).to_have_url(team.base + "/login")
        expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)  # not signed in
    page.goto(team.base + "/")
    expect(page).to_have_url(LOGIN_URL)  # still nobody
    context.close()


@dataclass
class Recorder:
    """Everything one browser context received: websocket frames, HTTP bodies, rendered pages.

    Subresources pass through a route that reads each body before handing it to the page (a
    `response` event may come too late: Chromium drops a body once the page navigated away). Pages
    themselves are not fulfilled from the route — Chromium's local-network checks would then block
    their websocket to 127.0.0.1 — and are read from their `response` event while still shown."""

    frames: list[str] = field(default_factory=list)
    bodies: dict[str, str] = field(default_factory=dict)
    html: dict[str, str] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)  # responses whose body could not be read
    closing: bool = False

    def attach(self, context: BrowserContext) -> None:
        context.route("**/*", self._route)
        context.on("page", self._page)
        for page in context.pages:
            self._page(page)

    def _page(self, page: Page) -> None:
        page.on("websocket", self._websocket)
        page.on("response", self._document)

    def _route(self, route: Route) -> None:
        if route.request.is_navigation_request():
            route.continue_()
            return
        try:
            response = route.fetch()
            self._record(response.status, route.request.url, response.headers, response.body())
            route.fulfill(response=response)
        except PlaywrightError as exc:
            if not self.closing:  # a late request of a context being closed: the page never got it
                self.unread.append(f"{route.request.url}: {exc}")

    def _document(self, response: Response) -> None:
        if not response.request.is_navigation_request():
            return
        try:
            redirect = 300 <= response.status < 400  # no body, but its Location header
            self._record(response.status, response.url, response.headers, b"" if redirect else response.body())
        except PlaywrightError as exc:
            if not self.closing:
                self.unread.append(f"{response.url}: {exc}")

    def _record(self, status: int, url: str, headers: dict[str, str], body: bytes) -> None:
        self.bodies[f"{status} {url}"] = f"{headers}\n{body.decode('utf-8', 'replace')}"

    def _websocket(self, ws: WebSocket) -> None:
        ws.on("framereceived", lambda payload: self.frames.append(
            payload if isinstance(payload, str) else payload.decode("utf-8", "replace")))

    def close(self, context: BrowserContext) -> None:
        self.closing = True
        context.close()

    def snapshot(self, page: Page) -> None:
        self.html[f"{len(self.html)} {page.url}"] = page.content()

    def leaks(self, secrets_: dict[str, str]) -> list[str]:
        sources = {f"frame {i}": f for i, f in enumerate(self.frames)} | \
            {f"response {k}": v for k, v in self.bodies.items()} | {f"html {k}": v for k, v in self.html.items()}
        return [f"{what} in {where}" for where, text in sources.items()
                for what, value in secrets_.items() if value and value in text]


def test_nothing_secret_reaches_a_viewers_browser(team: Team, browser: Browser) -> None:
    operator_context, operator = new_page(browser)
    operator.goto(team.base + "/new")
    sign_in(operator, team, "olga", re.compile(r".*/new$"))
    url = start_from_form(operator, team.base, "Should libraries lend tools as well as books?")
    debate_id = url.rsplit("/", 1)[1]
    # Paused while the viewer signs in (held at turn 1 until then).
    operator.get_by_role("button", name="Pause", exact=True).click()
    expect(operator.locator(".q-badge", has_text="paused")).to_be_visible()

    recorder = Recorder()
    context, page = new_page(browser)
    recorder.attach(context)
    page.goto(team.base + f"/debate/{debate_id}")
    sign_in(page, team, "vic", url)
    expect(page.locator(".q-badge", has_text="paused")).to_be_visible()
    operator.get_by_role("button", name="Resume", exact=True).click()  # the held turn is redone and streams
    wait_for_growing_stream(page)  # tokens arrived over the websocket while recording
    recorder.snapshot(page)

    page.goto(team.base + "/")
    expect(page.get_by_text("Should libraries lend tools as well as books?")).to_be_visible()
    recorder.snapshot(page)

    page.goto(team.base + "/settings")
    expect(page.get_by_text("Defaults for new debates")).to_be_visible()
    expect(page.get_by_text("Only an admin can change the server's defaults.")).to_be_visible()
    expect(page.get_by_role("heading", name="This server")).to_have_count(0)  # the database path card: admins only
    expect(page.get_by_text("Providers", exact=True)).to_have_count(0)
    recorder.snapshot(page)

    for path in ("/new", "/admin"):
        response = page.goto(team.base + path)
        assert response is not None and response.status == 403, path
        expect(page.get_by_text("Not allowed")).to_be_visible()
        expect(page.get_by_text("Your role (viewer) cannot")).to_be_visible()
        recorder.snapshot(page)

    page.goto(team.base + f"/debate/{debate_id}")  # back to the live debate for a last look
    # (the heading: on a slow machine the debate may have ended, and its outcome headline shows too)
    expect(page.locator("h1.rostrum-topic")).to_have_text("Should libraries lend tools as well as books?")
    recorder.snapshot(page)
    recorder.close(context)

    # the recording is real: the socket carried page updates, and every page's HTML is there
    assert len(recorder.frames) > 20, recorder.frames
    assert any(f.startswith('42["rl"') for f in recorder.frames)  # tokens came this way (the live stream's event)
    assert len(recorder.html) == 6 and any(key.endswith("/settings") for key in recorder.html)
    assert any(key.startswith("200 ") and "/debate/" in key for key in recorder.bodies)
    assert any(key.startswith("303 ") for key in recorder.bodies)  # the sign-in redirect went through too
    assert any("/_nicegui/" in key and key.endswith(".js") for key in recorder.bodies)
    assert not recorder.unread
    assert recorder.leaks(team.secrets(except_password_of="vic")) == []

    # control: the same recording of an admin's settings page does find the database path
    admin_recorder = Recorder()
    admin_context, admin = new_page(browser)
    admin_recorder.attach(admin_context)
    admin.goto(team.base + "/settings")
    sign_in(admin, team, "ada", re.compile(r".*/settings$"))
    expect(admin.get_by_role("heading", name="This server")).to_be_visible()
    expect(admin.get_by_text("key configured").first).to_be_visible()
    admin_recorder.snapshot(admin)
    admin_recorder.close(admin_context)
    operator_context.close()
    admin_leaks = admin_recorder.leaks(team.secrets(except_password_of="ada"))
    assert any(leak.startswith("database path in ") for leak in admin_leaks), admin_leaks
    assert not [leak for leak in admin_leaks if not leak.startswith(("database path", "database file name"))]


# --- issue 20: security headers and CSP, session fixation, open tabs cut off, file modes -------------

CSP_WATCH = """window.__csp = []; document.addEventListener('securitypolicyviolation',
    e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"""


def test_pages_work_under_the_content_security_policy(team: Team, browser: Browser) -> None:
    """With the headers on, every page renders, the websocket connects and streams, menus and
    downloads work, and the browser reports no policy violation."""
    context, page = new_page(browser, accept_downloads=True)
    context.add_init_script(CSP_WATCH)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    response = page.goto(team.base + "/new")
    assert response is not None
    headers = response.headers  # the login page the redirect led to
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    sign_in(page, team, "olga", re.compile(r".*/new$"))
    url = start_from_form(page, team.base, "Do headers make a site safer?")
    release(page)  # commands work too
    wait_for_growing_stream(page)  # the websocket connected and streams under connect-src 'self'
    expect(page.get_by_role("button", name="Pause", exact=True)).to_be_enabled()  # held at turn 3
    with page.expect_download() as info:
        page.get_by_role("button", name="Export").click()
        page.get_by_text("JSON (.json)").click()
    assert info.value.suggested_filename.endswith(".json")
    for path in ("/", "/leaderboard", "/tournaments", "/judges", "/settings", url.removeprefix(team.base)):
        page.goto(team.base + path)
        expect(page.get_by_role("button", name="olga", exact=True)).to_be_visible()  # rendered by Vue
    page.get_by_role("button", name="How this debate runs").click()  # the state diagram renders (Mermaid)
    expect(page.locator(".rostrum-diagram-fit svg").first).to_be_visible(timeout=15_000)
    violations = page.evaluate("window.__csp")
    assert violations == [], violations
    assert not [e for e in errors if "Content Security Policy" in e], errors
    context.close()


def test_a_cookie_copied_before_sign_in_stays_signed_out(team: Team, browser: Browser) -> None:
    context, page = new_page(browser)
    page.goto(team.base + "/login")
    before = context.cookies()
    assert before
    sign_in(page, team, "olga")
    after = {c["name"]: c["value"] for c in context.cookies()}
    assert after != {c["name"]: c["value"] for c in before}
    thief = browser.new_context()
    thief.add_cookies(before)  # type: ignore[arg-type]
    stolen = thief.new_page()
    stolen.goto(team.base + "/new")
    expect(stolen).to_have_url(LOGIN_URL)
    thief.close()
    context.close()


def test_signing_out_in_another_tab_takes_the_controls_away(team: Team, browser: Browser) -> None:
    context, debate = new_page(browser)
    debate.goto(team.base + "/new")
    sign_in(debate, team, "olga", re.compile(r".*/new$"))
    start_from_form(debate, team.base, "Does a sign-out reach every tab?")
    expect(debate.get_by_role("button", name="Pause", exact=True)).to_be_enabled()
    other = context.new_page()
    other.goto(team.base + "/")
    other.get_by_role("button", name="olga", exact=True).click()
    other.get_by_text("Sign out", exact=True).click()
    expect(other).to_have_url(LOGIN_URL)
    expect(debate.get_by_text("You signed out.")).to_be_visible()
    expect(debate.get_by_role("button", name="Pause", exact=True)).to_have_count(0)
    expect(debate.get_by_role("button", name="Export")).to_have_count(0)
    context.close()


def test_the_database_and_browser_storage_are_private_files(team: Team, browser: Browser) -> None:
    context, page = new_page(browser)
    page.goto(team.base + "/login")
    sign_in(page, team, "vic")
    page.get_by_role("button", name=re.compile("^Theme")).click()  # writes this browser's storage file
    workdir = team.db.parent
    storage = workdir / ".nicegui"
    deadline = time.monotonic() + 10
    while not list(storage.glob("storage-user-*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)  # NiceGUI writes the file in the background: no event reaches this process
    files = [team.db, Path(f"{team.db}-wal"), Path(f"{team.db}-shm"), workdir / SECRET_FILE_NAME,
             *storage.glob("storage-*.json")]
    assert any(f.name.startswith("storage-user-") for f in files)
    modes = {f.name: oct(f.stat().st_mode & 0o777) for f in files if f.exists()}
    assert set(modes.values()) == {"0o600"}, modes
    assert oct(storage.stat().st_mode & 0o777) == "0o700"
    context.close()


def test_revoking_a_link_stops_the_open_shared_page(team: Team, browser: Browser) -> None:
    """The guest's open page stops receiving the stream the moment the link is revoked (the operator's
    page goes on streaming) and has nothing left to export."""
    operator_context, operator = new_page(browser)
    operator.goto(team.base + "/new")
    sign_in(operator, team, "olga", re.compile(r".*/new$"))
    start_from_form(operator, team.base, "Should a revoked link go dark at once?")
    open_expansion(operator, "Share read-only").get_by_role("button", name="Create link").click()
    link = operator.get_by_role("textbox", name="Share link").input_value()
    assert "/s/" in link

    recorder = Recorder()
    guest_context, guest = new_page(browser)
    recorder.attach(guest_context)
    guest.goto(link)
    expect(guest.get_by_role("button", name="Export")).to_be_visible()  # the guest's page is there
    release(operator)
    wait_for_growing_stream(guest)
    expect(guest.get_by_role("button", name="Export")).to_be_visible()
    operator.get_by_role("button", name="Revoke").click()
    expect(guest.get_by_text("This share link was revoked.")).to_be_visible()
    expect(guest.get_by_role("button", name="Export")).to_have_count(0)
    streamed = sum(f.startswith('42["rl"') for f in recorder.frames)
    operator.evaluate("window.__watched = null")
    release(operator)  # at turn 1's redo, turn 2, or held at turn 3: it streams on
    wait_for_growing_stream(operator)  # to the operator
    assert sum(f.startswith('42["rl"') for f in recorder.frames) == streamed  # and no more to the guest
    recorder.close(guest_context)
    operator_context.close()
