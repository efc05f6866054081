"""The new-debate form in a real browser: Ctrl+Enter starts the debate from the topic, a keyboard-only
start takes a handful of keys, a failed start scrolls to the first error and puts the cursor in it,
the essentials and Start fit one 1440×900 screen, and the action bar stays in view on a phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import DEBATE_URL, start_from_form

pytestmark = pytest.mark.e2e

TOPIC = "What should they debate? *"
# What the first level of the form shows on a fresh form, by accessible name: how many of each (two
# participants, one judge).
ESSENTIALS = {TOPIC: 1, "Format": 1, "Rounds": 1, "Name": 2, "Provider": 3, "Model": 3, "Position": 2,
              "Warn at (USD)": 1, "Hard limit (USD)": 1}


def test_ctrl_enter_in_the_topic_starts_the_debate(server: str, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(server + "/new")
    topic = page.get_by_label(TOPIC)
    topic.fill("Should museums be free?")
    topic.press("Control+Enter")
    page.wait_for_url(re.compile(r".*/debate/[0-9a-f]+$"))
    expect(page.get_by_text("Should museums be free?").first).to_be_visible()
    page.close()


def test_a_debate_starts_by_keyboard_alone_in_at_most_twelve_key_presses(server: str, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(server + "/new")
    topic = page.get_by_label(TOPIC)
    expect(topic).to_be_focused()  # the page opens with the cursor in the topic
    page.keyboard.type("Should museums be free?")
    presses = 0

    def press(*keys: str) -> None:
        nonlocal presses
        for key in keys:
            page.keyboard.press(key)
            presses += 1

    press("Tab", "ArrowDown", "ArrowDown", "ArrowDown", "Enter")  # Format: open, down twice to Oxford, pick
    # The form is re-rendered for Oxford (the classic shape's cross-examination goes), then the cursor
    # is put back on the new format field: wait for both before typing on.
    expect(page.get_by_text("Cross-examination: affirmative asks")).to_have_count(0)
    expect(page.locator(".q-field--focused")).to_contain_text("Oxford")
    press("Tab", "2")  # Rounds
    expect(page.get_by_label("Rounds")).to_have_value("2")
    press("Control+Enter")
    page.wait_for_url(DEBATE_URL)
    assert presses <= 12
    expect(page.get_by_text("Should museums be free?").first).to_be_visible()
    expect(page.get_by_text("Oxford").first).to_be_visible()
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
    assert_clear_of_the_bars(page, topic)
    # an error in a folded "Advanced" section: it opens, and the field is focused in view, above the bar
    topic.fill("Should museums be free?")
    section = page.get_by_role("button", name="Advanced: timeouts and retries")
    section.click()
    retries = page.get_by_label("Retries per debate")
    retries.fill("50")
    section.click()
    expect(retries).to_be_hidden()
    page.keyboard.press("Control+Enter")
    expect(page.get_by_role("button", name="The number of retries must be at most 20")).to_be_visible()
    expect(retries).to_be_focused()
    assert_clear_of_the_bars(page, retries)
    page.close()


def assert_clear_of_the_bars(page: Page, field: Locator) -> None:
    """The focused field is already where it will stay, whole and clear of the header and of the sticky
    "Cost and start" bar: checked once, at once, since focus comes after the scroll (a smooth scroll left
    it under the bar for as long as the scroll ran, seconds on a busy machine)."""
    box = field.bounding_box()
    bar = page.get_by_role("region", name="Cost and start").bounding_box()
    header = page.locator("header").first.bounding_box()
    assert box is not None and bar is not None and header is not None
    assert header["y"] + header["height"] <= box["y"], (box, header)
    assert box["y"] + box["height"] <= bar["y"], (box, bar)


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


def test_the_essentials_fit_one_screen_and_the_action_bar_stays_in_view_on_a_phone(server: str,
                                                                                   browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(server + "/new")
    start = page.get_by_role("button", name="Start debate")
    expect(start).to_be_visible()
    bar = page.get_by_role("region", name="Cost and start").bounding_box()
    assert bar is not None and bar["y"] + bar["height"] <= 900
    expect(page.get_by_text("Estimated cost: Free")).to_be_visible()
    for name, count in ESSENTIALS.items():
        fields = page.get_by_label(name, exact=True).filter(visible=True)  # not the ones under "Advanced"
        assert fields.count() == count, name
        for index in range(count):
            box = fields.nth(index).bounding_box()
            assert box is not None, name
            # on the first screen, and above the action bar (not hidden under it)
            assert box["y"] >= 0 and box["y"] + box["height"] <= bar["y"], (name, index, box, bar)
    assert page.evaluate("window.scrollY") == 0
    page.close()

    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.goto(server + "/new")
    expect(phone.get_by_text("Estimated cost: Free")).to_be_visible()
    phone.mouse.wheel(0, 1200)
    phone.wait_for_function("window.scrollY > 600")  # scrolled well past the first screen
    start = phone.get_by_role("button", name="Start debate")
    expect(start).to_be_in_viewport(ratio=1)
    bar = phone.get_by_role("region", name="Cost and start").bounding_box()
    assert bar is not None and bar["y"] + bar["height"] <= 844
    phone.close()


def test_clone_on_the_dashboard_opens_the_form_filled_in(server: str, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    topic = "Should clones keep their settings?"
    start_from_form(page, server, topic)
    page.goto(server + "/")
    clone = page.get_by_label(f"Clone: {topic}")
    expect(clone).to_have_attribute("href", re.compile(r"^/new\?from=[0-9a-f]+$"))  # a real link
    clone.click()
    page.wait_for_url(re.compile(r".*/new\?from=[0-9a-f]+$"))
    expect(page.get_by_label(TOPIC)).to_have_value(topic)
    expect(page.get_by_label("Rounds")).to_have_value("1")  # the Quick demo's one round, not the form's default
    expect(page.get_by_text("Participants (2)")).to_be_visible()
    page.close()
