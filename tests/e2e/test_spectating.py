"""The page a spectator watches, in Chromium: it follows the live turn (and stops when the reader
scrolls away), keeps text cut by a pause, never shrinks a turn when it finishes, and never lets a
model make the browser fetch an image from a host it chose."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import launch_server
from tests.e2e.conftest import start_from_form as start

pytestmark = pytest.mark.e2e

LONG = 90_000  # ms



@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Slow enough (12 tokens/s) that a turn streams for several seconds: time to scroll and to pause."""
    with launch_server(tmp_path_factory.mktemp("spectating"), extra_env={"ROSTRUM_DEMO_SPEED": "12"},
                       log_name="e2e-spectating-server.log") as base:
        yield base


@pytest.fixture(scope="module")
def held_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Every debate is held at its third turn: the two opening statements end, then the first rebuttal
    streams half its words and waits (until a pause or stop cancels it). A test that acts on a live turn
    waits for that state, not for a moment of the demo's wall-clock schedule, which a loaded machine
    let pass (the turn ended, or the debate did, before the click)."""
    with launch_server(tmp_path_factory.mktemp("spectating-held"),
                       extra_env={"ROSTRUM_DEMO_SPEED": "30", "ROSTRUM_DEMO_FAIL": "3:stall"},
                       log_name="e2e-spectating-held-server.log") as base:
        yield base


# Held at the third turn: two finished turns, and a live one that has shown more than 40 characters.
HELD = ("() => document.querySelectorAll('.rostrum-turn-final').length === 2 && [...document.querySelectorAll("
        "'.rostrum-turn-live .rostrum-turn-text')].some(e => e.textContent.length > 40)")


LIVE_IN_VIEW = """() => {
    const live = [...document.querySelectorAll('.rostrum-turn-live')].pop();
    if (!live || !live.querySelector('.rostrum-turn-text')) return false;
    const box = live.getBoundingClientRect();
    return box.bottom <= window.innerHeight + 1 && box.bottom > 0;
}"""


# The live turn's element and its text's length; then GREW([length, n]) is true once that turn is n
# characters longer, or no longer live.
LIVE_LENGTH = """() => {
    const live = [...document.querySelectorAll('.rostrum-turn-live')].pop();
    window.__watched = live;
    return live ? live.textContent.length : 0;
}"""
GREW = """([length, n]) => {
    const live = [...document.querySelectorAll('.rostrum-turn-live')].pop();
    return live !== window.__watched || live.textContent.length >= length + n;
}"""


def test_follow_mode_keeps_the_live_turn_in_view_until_the_reader_scrolls_away(
        slow_server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1000, "height": 420})
    page = context.new_page()
    start(page, slow_server, "Should every town have a public library open at night?")
    # Streaming far below the fold: the page scrolls itself so the live turn's end stays in view.
    page.wait_for_function(f"() => window.scrollY > 500 && ({LIVE_IN_VIEW})()", timeout=60_000, polling="raf")
    expect(page.locator(".rostrum-jump-live")).to_be_hidden()
    # The reader scrolls up: following stops, and "Jump to live" is offered.
    page.mouse.wheel(0, -5000)
    page.wait_for_function("() => window.scrollY === 0")
    jump = page.locator(".rostrum-jump-live")
    expect(jump).to_be_visible(timeout=10_000)
    # Text keeps streaming meanwhile (the live turn grows by 200 characters, or the next turn begins):
    # the page must stay where the reader is.
    page.wait_for_function(GREW, arg=[page.evaluate(LIVE_LENGTH), 200], timeout=30_000, polling="raf")
    assert page.evaluate("() => window.scrollY") == 0
    jump.click()
    page.wait_for_function(LIVE_IN_VIEW, timeout=10_000, polling="raf")
    expect(jump).to_be_hidden()
    context.close()


def test_following_waits_while_the_reader_writes_a_comment(slow_server: str, browser: Browser) -> None:
    """Follow mode leaves the page where it is while a field has focus: a comment being written on the
    turn just above the live one does not slide away as the live turn streams on (nor does the button
    under a press: a release elsewhere clicks nothing)."""
    context = browser.new_context(viewport={"width": 1000, "height": 420})
    page = context.new_page()
    start(page, slow_server, "Should every village have a night bus?")
    page.wait_for_function(f"() => window.scrollY > 500 && ({LIVE_IN_VIEW})()", timeout=60_000, polling="raf")
    talk = page.locator(".rostrum-turn-final .rostrum-talk").last  # the turn just above the live one
    talk.get_by_role("button", name="Comment", exact=True).click()
    box = talk.locator("textarea")
    box.fill("Half a thought")
    expect(box).to_be_focused()
    top = box.evaluate("e => e.getBoundingClientRect().top")
    page.wait_for_function(GREW, arg=[page.evaluate(LIVE_LENGTH), 100], timeout=30_000, polling="raf")
    assert abs(box.evaluate("e => e.getBoundingClientRect().top") - top) <= 2, "the page moved while writing"
    context.close()


def test_pausing_mid_turn_keeps_the_text_shown_and_marks_it(held_server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    start(page, held_server, "Should homework be banned in primary schools?")
    page.wait_for_function(HELD, timeout=LONG)
    page.get_by_role("button", name="Pause").click()
    expect(page.locator(".q-badge", has_text="paused")).to_be_visible()
    cut = page.locator(".rostrum-cut").first
    expect(cut).to_be_visible()
    assert len(cut.locator(".rostrum-md").inner_text()) > 40, "the text shown before the pause is still there"
    expect(cut.locator(".rostrum-note")).to_have_text("Cut off by a pause or stop — will be redone.")
    assert page.locator(".rostrum-caret").count() == 0, "no blinking caret while nothing streams"
    page.get_by_role("button", name="Resume").click()
    expect(page.locator(".rostrum-cut .rostrum-note").first).to_have_text(
        "Cut off by a pause or stop — redone below.", timeout=LONG)
    expect(page.get_by_text(re.compile(r"^Winner: "))).to_be_visible(timeout=LONG)
    context.close()


def test_a_turn_never_shrinks_when_it_finishes(slow_server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    start(page, slow_server, "Should museums be free to enter?")
    page.wait_for_selector(".rostrum-turn-live .rostrum-turn-text", timeout=30_000)
    # Measure every turn's height on every animation frame across two turn ends.
    page.evaluate("""() => {
        window.__shrinks = []; window.__frames = 0;
        const last = new Map();
        const tick = () => {
            window.__frames++;
            for (const el of document.querySelectorAll('.rostrum-turn')) {
                const h = el.getBoundingClientRect().height, key = el.dataset.key, before = last.get(key);
                if (before !== undefined && h < before - 0.5) window.__shrinks.push([key, before, h]);
                last.set(key, h);
            }
            requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        window.__finalAtStart = document.querySelectorAll('.rostrum-turn-final').length;
    }""")
    page.wait_for_function("() => document.querySelectorAll('.rostrum-turn-final').length >= "
                           "window.__finalAtStart + 2", timeout=LONG)
    assert page.evaluate("() => window.__frames") > 30
    assert page.evaluate("() => window.__shrinks") == []
    # the stepper moved on through the live stream alone (no page update is sent for it)
    expect(page.locator(".rostrum-phase-pill[data-phase='opening']")).to_have_attribute("data-state", "done")
    expect(page.locator(".rostrum-phase-pill[data-phase='rebuttal']")).to_have_attribute("data-state", "current")
    context.close()


def test_a_markdown_image_from_a_model_is_a_link_and_is_never_fetched(server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    # The demo model quotes the topic, so its turns carry the image too.
    start(page, server, "Is this a tracking pixel ![pixel](https://evil.example/pixel.png) or art?")
    expect(page.get_by_text(re.compile(r"^Winner: "))).to_be_visible(timeout=LONG)
    links = page.locator(".rostrum-turn .rostrum-image-link")
    expect(links.first).to_have_text("image: pixel (evil.example)")
    assert links.first.get_attribute("rel") == "noopener noreferrer nofollow"
    assert page.locator(".rostrum-turn img").count() == 0
    assert not [url for url in requested if "evil.example" in url]
    context.close()


def test_hostile_model_output_is_escaped_by_the_browser_renderer(server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    start(page, server, "<b>bold?</b> [click](javascript:alert(1)) <img src=x onerror=alert(2)> Is HTML safe?")
    expect(page.get_by_text(re.compile(r"^Winner: "))).to_be_visible(timeout=LONG)
    turns = page.locator(".rostrum-turn-final .rostrum-turn-text")
    assert "<b>bold?</b>" in turns.first.inner_text(), "raw HTML is shown as text"
    assert page.locator(".rostrum-turn b, .rostrum-turn img, .rostrum-turn script").count() == 0
    assert page.locator(".rostrum-turn a[href^='javascript']").count() == 0
    Path(page.url)  # the page is still alive
    context.close()


@pytest.mark.parametrize("viewport", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}],
                         ids=["desktop", "phone"])
def test_a_finished_debate_shows_its_outcome_without_scrolling(
        server: str, browser: Browser, viewport: dict[str, int]) -> None:
    context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    page = context.new_page()
    start(page, server, "Should cities plant a tree for every child born?")
    expect(page.get_by_text(re.compile(r"^Winner: "))).to_be_visible(timeout=LONG)
    url = page.url
    page.goto(server + "/")
    page.goto(url)  # a reader who arrives after the end
    headline = page.locator("[role=status]", has_text=re.compile(r"(wins|Tie|split|unavailable)"))
    expect(headline.first).to_be_in_viewport(ratio=1)
    verdict_link = page.get_by_role("link", name="Full verdict")
    expect(verdict_link).to_be_in_viewport()
    assert page.evaluate("() => window.scrollY") == 0
    context.close()


def test_a_late_joiner_lands_on_the_live_turn(held_server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    page = context.new_page()
    start(page, held_server, "Should libraries lend musical instruments?")
    page.wait_for_function(HELD, timeout=LONG)
    phone = browser.new_context(viewport={"width": 390, "height": 600})
    late = phone.new_page()
    late.goto(page.url)  # joins mid-turn, with finished turns above the live one
    late.wait_for_function(f"() => window.scrollY > 0 && ({LIVE_IN_VIEW})()", timeout=20_000, polling="raf")
    # Already at the live turn: no "Jump to live" offered while the turn is in view.
    late.wait_for_function("() => { const t = document.querySelector('.rostrum-turn-live .rostrum-turn-text'); "
                           "return t && t.textContent.length > 40; }", timeout=20_000)
    expect(late.get_by_role("button", name="Jump to live ↓")).to_be_hidden()
    phone.close()
    context.close()


def test_a_late_joiner_sees_a_cut_off_turn_as_the_first_tab_does(held_server: str, browser: Browser) -> None:
    """Tab A has Stop's menu open when tab B stops the debate mid-turn: A's menu closes with the debate,
    and a tab opened afterwards shows the cut-off text and its note exactly as A does (the streamed text
    of a cut attempt is never stored: the page's channel keeps it)."""
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    first = context.new_page()
    url = start(first, held_server, "Should buses be free at night?")
    first.wait_for_function(HELD, timeout=LONG)
    first.get_by_role("button", name="Stop", exact=True).click()
    menu_item = first.get_by_role("menuitem", name="Stop and judge what was said")
    expect(menu_item).to_be_visible()
    second = context.new_page()
    second.goto(url)
    second.get_by_role("button", name="Stop", exact=True).click()
    second.get_by_role("menuitem", name="Stop without a verdict").click()
    expect(first.locator(".q-badge", has_text="stopped")).to_be_visible(timeout=LONG)
    expect(menu_item).to_be_hidden()  # the menu went with the debate, in the tab that did not stop it
    cut = first.locator(".rostrum-cut")
    expect(cut.locator(".rostrum-note")).to_have_text(["Cut off by a pause or stop — the debate ended here."])
    seen = cut.locator(".rostrum-md").inner_text()
    assert len(seen) > 40
    late = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    late.goto(url)
    late_cut = late.locator(".rostrum-cut")
    expect(late_cut.locator(".rostrum-note")).to_have_text(["Cut off by a pause or stop — the debate ended here."])
    assert late_cut.locator(".rostrum-md").inner_text() == seen
    assert first.locator(".rostrum-turn").count() == late.locator(".rostrum-turn").count()
    late.context.close()
    context.close()
