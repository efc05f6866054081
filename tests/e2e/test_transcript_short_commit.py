"""The short form of a commit (key, meta, notes, place; no speaker, group or text: the channel sends it for a
turn whose start it announced) reaching a page that never heard of that turn (it joined the debate's room
between the turn's stream and its commit). The transcript drew a group header without a title as if it
were a turn and Vue's render threw: every turn vanished and no finished turn got its comment box (the
comments test's "comment boxes did not appear within 90 s"). Now the turn is shown, with its comment box,
the rest of the transcript stays, and the page asks the server for the whole turn (a resync)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, WebSocket, expect

from tests.e2e.conftest import start_from_form

pytestmark = pytest.mark.e2e

GHOST = 9996  # a turn id no debate of this server reaches
SHORT = [[3, GHOST, {"key": "ghost/r1/proposition/1", "meta": "", "notes": [], "n": 1_000_000}]]


def test_a_short_commit_of_a_turn_the_page_never_heard_of(server: str, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    sockets: list[WebSocket] = []
    page.on("websocket", lambda ws: sockets.append(ws))
    start_from_form(page, server, "Should libraries open on Sundays?")
    page.wait_for_function("() => window.socket && window.socket.listeners('rl').length > 0")
    turns = page.locator(".rostrum-turn")
    expect(turns.first).to_be_visible(timeout=30_000)
    before = turns.count()
    # A resync is an element event to the server (NiceGUI's "event" message): the only one this page sends.
    with sockets[-1].expect_event("framesent", lambda frame: str(frame).startswith('42["event"'), timeout=10_000):
        page.evaluate("(items) => window.socket.listeners('rl').forEach((fn) => fn(items))", SHORT)
    ghost = page.locator("[data-key='ghost/r1/proposition/1'].rostrum-turn-final")
    expect(ghost.locator(".rostrum-talk")).to_be_visible()  # a finished turn: its comment box
    assert turns.count() >= before + 1  # the rest of the transcript is still drawn
    assert not [e for e in errors if "TypeError" in e or "Cannot read" in e], errors
    context.close()
