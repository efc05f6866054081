"""Profiles in a real browser: a participant's profile menu saves it, another row's "Use profile…"
fills that row from it (menus and dialogs as Chromium renders them)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

pytestmark = pytest.mark.e2e

PERSONA = "Persona / system prompt"
PROFILES = re.compile(r"^Profiles for ")  # each participant row's profile menu


def test_save_a_row_as_a_profile_and_use_it_on_another(server: str, browser: Browser) -> None:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(server + "/new")
    page.get_by_text("Advanced: persona, temperature, colour, tokens").click()  # personas are one level down
    page.get_by_label(PERSONA).nth(1).fill("An economist who counts every cost.")
    page.get_by_role("button", name=PROFILES).nth(1).click()
    page.get_by_text("Save as profile", exact=True).click()
    page.get_by_label("Name of the new profile").fill("Cost counter")
    page.get_by_role("button", name="Save as profile").click()
    expect(page.get_by_text("Saved as profile: Cost counter")).to_be_visible()

    page.get_by_role("button", name=PROFILES).nth(0).click()
    page.get_by_text("Use profile…", exact=True).click()
    expect(page.get_by_text("Cost counter", exact=True)).to_be_visible()
    page.get_by_role("button", name="Use", exact=True).click()
    expect(page.get_by_label(PERSONA).nth(0)).to_have_value("An economist who counts every cost.")
    page.close()
