"""Live streams the transcript must survive: a turn started again under the attempt number the page shows
live (a debate worker that took a debate over redoes the cut-off turn from its start, as attempt 1 again)
restarts the page's text, not the dead attempt's text with the redo's tail appended; and a turn the page
hears of only when committed, after the next turn started (committed while the live bus was down), takes
its place in log order."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import start_from_form

pytestmark = pytest.mark.e2e

KID = 9999  # a turn id no debate of this server reaches: the items below are this test's own
# What the live stream of a takeover looks like: the dead worker's attempt, then the survivor's.
DEAD = [[1, KID, 1, {"speaker": "proposition", "group": "Takeover"}], [0, KID, 0, "The dead worker said this much "],
        [0, KID, 31, "and then it was killed"]]
REDO = [[1, KID, 1, {"speaker": "proposition", "group": "Takeover"}], [0, KID, 0, "The survivor "],
        [0, KID, 13, "says something else entirely, at greater length than before."]]
DONE = [[3, KID, {"meta": "", "notes": []}]]


def test_a_second_start_of_the_same_attempt_restarts_the_turn(server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    start_from_form(page, server, "Should night buses run every hour?")
    page.wait_for_function("() => window.socket && window.socket.listeners('rl').length > 0")
    turn = page.locator(f"[data-key='k{KID}'] .rostrum-turn-text")
    # Handed to the page's own listener, as if the server had sent them (one batch each).
    for batch in (DEAD, REDO):
        page.evaluate("(items) => window.socket.listeners('rl').forEach((fn) => fn(items))", batch)
    expect(turn).to_have_text("The survivor says something else entirely, at greater length than before.")
    page.evaluate("(items) => window.socket.listeners('rl').forEach((fn) => fn(items))", DONE)
    expect(page.locator(f"[data-key='k{KID}'].rostrum-turn-final .rostrum-turn-text")).to_have_text(
        "The survivor says something else entirely, at greater length than before.")
    context.close()


EARLIER, LATER = 9997, 9998  # two more ids of this test's own
# The later turn starts streaming; the earlier one (committed while the bus was down) is heard of only now.
OUT_OF_ORDER = [
    [[1, LATER, 1, {"speaker": "opposition", "group": "Order"}], [0, LATER, 0, "The later turn streams"]],
    [[3, EARLIER, {"speaker": "proposition", "group": "Order", "text": "The earlier turn, whole.", "meta": "",
                   "notes": [], "n": 1_000_000}]],
    [[3, LATER, {"meta": "", "notes": [], "n": 1_000_001}]],
]


def test_a_turn_heard_of_late_takes_its_place_in_log_order(server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    start_from_form(page, server, "Should trams have right of way?")
    page.wait_for_function("() => window.socket && window.socket.listeners('rl').length > 0")
    for batch in OUT_OF_ORDER:
        page.evaluate("(items) => window.socket.listeners('rl').forEach((fn) => fn(items))", batch)
    later = page.locator(f"[data-key='k{LATER}'].rostrum-turn-final")
    expect(later).to_have_count(1)
    order = page.evaluate("""(keys) => [...document.querySelectorAll('[data-key]')]
        .map((e) => e.dataset.key).filter((k) => keys.includes(k))""", [f"k{EARLIER}", f"k{LATER}"])
    assert order == [f"k{EARLIER}", f"k{LATER}"]
    context.close()
