"""The new-debate form in a real browser: Ctrl+Enter starts the debate from the topic, and a failed
start scrolls to the first error and puts the cursor in it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

pytestmark = pytest.mark.e2e

TOPIC = "What should they debate? *"


def test_ctrl_enter_in_the_topic_starts_the_debate(server: str, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(server + "/new")
    topic = page.get_by_label(TOPIC)
    topic.fill("Should museums be free?")
    topic.press("Control+Enter")
    page.wait_for_url(re.compile(r".*/debate/[0-9a-f]+$"))
    expect(page.get_by_text("Should museums be free?").first).to_be_visible()
    page.close()


def test_a_failed_start_focuses_the_first_error_in_view(server: str, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(server + "/new")
    start = page.get_by_role("button", name="Start debate")
    start.scroll_into_view_if_needed()
    start.click()
    expect(page.get_by_text("Please fix 1 problem:")).to_be_visible()
    topic = page.get_by_label(TOPIC)
    expect(topic).to_be_focused()
    expect(topic).to_be_in_viewport()
    page.close()


def test_a_reload_keeps_the_form(server: str, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(server + "/new")
    expect(page.get_by_text("Kept in this tab")).to_be_visible()
    page.get_by_label(TOPIC).fill("Should trains be free?")
    page.get_by_role("button", name="Add participant").click()
    # the server has seen the topic once it shows the third participant (a socket keeps messages in order)
    expect(page.get_by_text("Participants (3)")).to_be_visible()
    page.reload()
    expect(page.get_by_label(TOPIC)).to_have_value("Should trains be free?")
    expect(page.get_by_text("Participants (3)")).to_be_visible()
    page.get_by_role("button", name="Reset form").click()
    expect(page.get_by_label(TOPIC)).to_have_value("")
    expect(page.get_by_text("Participants (2)")).to_be_visible()
    page.close()
