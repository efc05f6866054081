"""End-to-end fixtures: `python main.py` on a free port (one server per module) and headless Chromium.

The server runs in a subprocess without `PYTEST_CURRENT_TEST` in its environment (NiceGUI would
otherwise behave as if under test), with its own temporary database and a fast demo speed (a test that acts on a
running debate uses a server whose debates are held: `ROSTRUM_DEMO_FAIL`, never the demo's pace).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, Playwright, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]
DEMO_SPEED = "240"  # tokens per second: a quick demo in ~2 s

# Playwright's 5 s default for an `expect` is a bound for a hang, not a wait: every expect returns as soon
# as its condition holds. With other suites beside it (load 20-28 on 2 cores) a page build, a sign-in's
# argon2 check or a form's notice took more than 5 s with nothing wrong; 15 s still reports a hang soon.
# (What a test waits for is a condition: a debate it acts on is held, never raced — see ROSTRUM_DEMO_FAIL.)
expect.set_options(timeout=15_000)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def launch_server(workdir: Path, db: Path | None = None, extra_env: dict[str, str] | None = None,
                  log_name: str = "e2e-server.log") -> Iterator[str]:
    """Run `python main.py` in `workdir` on a free port until the block ends; yields its base URL.

    `db` defaults to `workdir / "e2e.sqlite3"`; `extra_env` is added last (e.g. `ROSTRUM_AUTH`); the
    server's log is copied to `tests/artifacts/<log_name>` afterwards."""
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k != "PYTEST_CURRENT_TEST" and not k.startswith(("NICEGUI_", "OPENAI_", "ANTHROPIC_"))}
    env.update(ROSTRUM_DB=str(db or workdir / "e2e.sqlite3"), ROSTRUM_PORT=str(port), ROSTRUM_HOST="127.0.0.1",
               ROSTRUM_DEMO_SPEED=DEMO_SPEED, PYTHONUNBUFFERED="1")
    env.pop("ROSTRUM_DEMO_FAIL", None)
    env.update(extra_env or {})
    log = (workdir / "server.log").open("w")
    process = subprocess.Popen([sys.executable, str(ROOT / "main.py")], cwd=workdir, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    # A bound for a hang, not a guess at the start-up time: the loop leaves as soon as the server answers
    # (or its process ended). 30 s ran out at load 15 on 2 cores before the server had printed a line.
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(base + "/", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the server did not start:\n{(workdir / 'server.log').read_text()}")
        time.sleep(0.2)  # polling a port that is not open yet: there is no event to await
    try:
        yield base
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(workdir / "server.log", ARTIFACTS / log_name)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with launch_server(tmp_path_factory.mktemp("server")) as base:
        yield base


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    # Debian's Chromium where it exists (`make chromium` installs it with apt); elsewhere the browser
    # `playwright install chromium` downloaded, which Playwright finds by itself.
    executable = CHROMIUM if Path(CHROMIUM).exists() else None
    if executable is None and not Path(playwright.chromium.executable_path).exists():
        pytest.fail("no Chromium: run `make chromium` (apt-get install chromium, or playwright install chromium)")
    browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
    _spy_on_every_page(browser)
    OPEN_BROWSERS.append(browser)
    try:
        yield browser
    finally:
        OPEN_BROWSERS.remove(browser)
        browser.close()


OPEN_BROWSERS: list[Browser] = []


def _spy_on_every_page(browser: Browser) -> None:
    """Every page of `browser` records what it did (SPY_JS), for the report of a failed test."""
    new_context, new_page = browser.new_context, browser.new_page

    def spied_context(*args: Any, **kwargs: Any) -> BrowserContext:
        context = new_context(*args, **kwargs)
        context.add_init_script(SPY_JS)
        return context

    def spied_page(*args: Any, **kwargs: Any) -> Page:
        page = new_page(*args, **kwargs)
        page.add_init_script(SPY_JS)
        return page

    browser.new_context = spied_context  # type: ignore[method-assign]
    browser.new_page = spied_page  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed browser test's report shows what each of its still open pages did (clicks as the page
    saw them, its socket's traffic): the evidence for a click that changed nothing."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call" and report.failed:
        for browser in OPEN_BROWSERS:
            for context in browser.contexts:
                for page in context.pages:
                    report.sections.append((f"what {page.url} did", spy_report(page)))


DEBATE_URL = re.compile(r".*/debate/[0-9a-f]+$")


# A record of what a page did, for a failure's diagnosis: clicks as the page saw them, what its socket
# sent and received, connects and disconnects (`context.add_init_script(SPY_JS)`, then `spy_report(page)`).
SPY_JS = """
(() => {
  const log = window.__rostrumSpy = [];
  const now = () => Math.round(performance.now());
  const name = (e) => (e?.closest?.('[aria-label],button,[role=button]')?.getAttribute('aria-label')
                       || e?.textContent || '').trim().slice(0, 40);
  for (const type of ['pointerdown', 'pointerup', 'click'])
    document.addEventListener(type, (e) => log.push([now(), type, name(e.target)]), true);
  // socket.io's `io()` is wrapped as it is defined (the page's live module takes `window.socket` over)
  let io;
  Object.defineProperty(window, 'io', {configurable: true, get: () => io, set(real) {
    io = (...a) => {
      const s = real(...a);
      const emit = s.emit.bind(s);
      s.emit = (event, ...args) => {
        log.push([now(), 'sent', event, args[0]?.id ?? '']);
        return emit(event, ...args);
      };
      s.onAny((event, msg) => log.push([now(), 'got', event,
                                        event === 'update' ? Object.keys(msg || {}).join(',') : '']));
      s.on('connect', () => log.push([now(), 'connect']));
      s.on('disconnect', (why) => log.push([now(), 'disconnect', why]));
      return s;
    };
  }});
})();
"""


def spy_report(page: Page) -> str:
    """What SPY_JS recorded on `page`, and its socket's state, one line per entry."""
    try:
        state = page.evaluate("""() => ({handshake: window.did_handshake, connected: window.socket?.connected,
            transport: window.socket?.io?.engine?.transport?.name, next: window.nextMessageId,
            now: Math.round(performance.now()), log: window.__rostrumSpy || []})""")
    except Exception as exc:  # a report must not hide the failure it explains
        return f"(no report: {exc})"
    lines = [" ".join(str(part) for part in entry) for entry in state.pop("log")]
    return json.dumps(state) + "\n" + "\n".join(lines[-80:])


# Scrolls the element into view and resolves once the page has stopped moving under it: a debate page's
# finished turns are laid out in full only when they come within 1,500 px of the window (an
# IntersectionObserver in transcript.js), so a jump to the page's end lays out the last turns a moment
# later and what is under the pointer moves. A click's press and release then landed on different
# elements and it clicked neither (seen for "How this debate runs": pointerdown on the header, pointerup
# on "Notes per criterion" 48 ms later). False if it has not settled in 30 s.
SETTLE_JS = """async (el) => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
  const laidOut = () => [...document.querySelectorAll('.rostrum-turn-lazy')].every((turn) => {
    const box = turn.getBoundingClientRect();
    return box.bottom < -1490 || box.top > innerHeight + 1490;
  });
  const until = performance.now() + 30000;
  while (performance.now() < until) {
    el.scrollIntoView({block: 'center'});
    await frame();
    await frame();
    while (!laidOut() && performance.now() < until) await frame();
    const box = el.getBoundingClientRect();
    if (laidOut() && box.top >= 0 && box.bottom <= innerHeight) return true;
  }
  return false;
}"""


def settle(target: Locator) -> Locator:
    """`target`, scrolled into view on a page that has stopped moving under it (SETTLE_JS)."""
    assert target.evaluate(SETTLE_JS), f"the page kept moving under {target}"
    return target


def animations_done(target: Locator) -> Locator:
    """`target` once its animations and its children's have ended (allSettled: a cancelled one, like a
    ripple, has ended too)."""
    target.evaluate("e => Promise.allSettled(e.getAnimations({subtree: true}).map(a => a.finished))")
    return target


def open_expansion(page: Page, title: str) -> Locator:
    """Open the collapsible section `title` (clicked once the page has settled under it: `settle`) and
    return it once it has finished opening: NiceGUI opens it when the server's answer arrives (its content
    may be made then, like the share card's) and Quasar slides it open, so what is inside moves until then."""
    section = page.locator(".q-expansion-item").filter(has=page.get_by_text(title, exact=True))
    settle(section.get_by_text(title, exact=True)).click()
    expect(section.locator(".q-expansion-item__container > [aria-expanded=true]")).to_have_count(1)
    expect(section.locator(".q-expansion-item__content")).to_be_visible()
    return animations_done(section)


def both_schemes(number: int) -> tuple[str, str]:
    """Light and dark, in the order that starts with the scheme the `number`th page (from 0) of a run of
    pages each checked in both loads in (the scheme emulated last carries over to the next page): one load
    per page, not one per page and scheme."""
    return ("light", "dark") if number % 2 == 0 else ("dark", "light")


# Resolves once the colours a scheme switch started have settled: Quasar's items fade their colour in
# 0.3 s, and an audit in between measured black text on the dark background. (Transitions only: a live
# page's spinners animate forever.)
TRANSITIONS_DONE_JS = """async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
  await frame();
  await frame();  // the style change that starts the transitions has happened
  await Promise.allSettled(document.getAnimations().filter((a) => a instanceof CSSTransition).map((a) => a.finished));
}"""


def in_scheme(page: Page, scheme: str) -> None:
    """Switch the open page to the colour scheme `scheme` (Quasar follows the system's as it changes) and
    return once its colours have settled."""
    page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
    page.wait_for_function("dark => document.body.classList.contains('body--dark') === dark", arg=scheme == "dark")
    page.evaluate(TRANSITIONS_DONE_JS)


def start_from_form(page: Page, base: str, topic: str) -> str:
    """Start a Quick demo debate on `topic` from the new-debate form; returns the debate page's URL."""
    page.goto(base + "/new")
    page.get_by_role("button", name="Quick demo").click()
    expect(page.get_by_text("Preset applied: Quick demo")).to_be_visible()  # a fresh form: the topic after it
    page.get_by_label("What should they debate? *").fill(topic)
    expect(page.get_by_label("What should they debate? *")).to_have_value(topic)
    page.get_by_role("button", name="Start debate").click()
    page.wait_for_url(DEBATE_URL)
    return page.url
