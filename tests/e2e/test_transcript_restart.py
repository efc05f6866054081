"""A turn started again under the attempt number the page shows live (a debate worker that took a debate
over redoes the cut-off turn from its start, as attempt 1 again) restarts the page's text: the page
shows the redo's text, not the dead attempt's text with the redo's tail appended."""

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
