"""The new-debate and new-tournament forms in Chromium, on a desktop (1440×900) and a phone (390×844),
light and dark:
no form is wider than the screen, a row's buttons stay on that row, a long error at a narrow field
pushes what follows down instead of running over it, a notice never covers "Start debate", and the
Format menu opens on the first click,
also right after a reload (when the tab's kept form is put back)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import animations_done

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
TOPIC = "What should they debate? *"
# How far the forms reach past the right edge of the window: the page's scroll width, and every card and
# field (a page may hide its overflow and still cut a form off).
OVERFLOW_JS = """() => {
  const w = window.innerWidth;
  const boxes = [...document.querySelectorAll('.q-card, .q-field')].map(e => e.getBoundingClientRect().right);
  const right = Math.max(...boxes);
  return Math.max(document.documentElement.scrollWidth - w, right - w);
}"""
# The first error message's box and those of every field's control and of the "Advanced" toggle with
# text `arguments[0]`, read in one evaluation so that no scroll can fall between them.
BOXES_JS = """(advanced) => {
  const box = e => {
    const r = e.getBoundingClientRect();
    return {x: r.x, y: r.y, width: r.width, height: r.height};
  };
  const said = [...document.querySelectorAll('.q-field__messages')]
    .find(e => e.textContent.includes('Two participants are called'));
  const leaves = [...document.querySelectorAll('*')].filter(e => e.childElementCount === 0);
  const others = [...document.querySelectorAll('.q-field__control')]
    .concat(leaves.filter(e => e.textContent.trim() === advanced))
    .filter(e => e.getClientRects().length > 0);
  return [box(said), others.map(box)];
}"""


@pytest.fixture(params=[(DESKTOP, "light"), (DESKTOP, "dark"), (PHONE, "light"), (PHONE, "dark")],
                ids=["desktop-light", "desktop-dark", "phone-light", "phone-dark"])
def page(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Page]:
    viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    try:
        yield context.new_page()
    finally:
        context.close()


def centre_y(locator: Locator) -> float:
    box = locator.bounding_box()
    assert box is not None
    return box["y"] + box["height"] / 2


def assert_on_its_row(page: Page, button: Locator, number: str) -> None:
    """`button` sits on the first line of its row, beside the row's number ("#1")."""
    row = page.locator(".rostrum-form-row").filter(has=button)
    label = row.get_by_text(number, exact=True)
    assert abs(centre_y(button) - centre_y(label)) < 12, f"{button} is not on the line of {number}"


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def test_no_form_is_wider_than_the_screen_and_row_buttons_stay_on_their_row(server: str, page: Page) -> None:
    page.goto(server + "/new")
    page.get_by_role("button", name="Add judge").click()
    expect(page.get_by_role("button", name="Remove judge")).to_have_count(2)
    assert page.evaluate(OVERFLOW_JS) <= 0
    assert_on_its_row(page, page.get_by_role("button", name="Remove Affirmative"), "#1")
    assert_on_its_row(page, page.get_by_role("button", name="Remove judge").first, "#1")

    page.goto(server + "/tournaments/new")
    expect(page.get_by_role("button", name="Remove model #1")).to_be_visible()
    assert page.evaluate(OVERFLOW_JS) <= 0
    assert_on_its_row(page, page.get_by_role("button", name="Remove model #1"), "#1")
    assert_on_its_row(page, page.get_by_role("button", name="Remove judge #1"), "#1")


def test_a_long_error_at_a_narrow_field_stays_clear_of_what_follows(server: str, page: Page) -> None:
    page.goto(server + "/new")
    expect(page.get_by_text("Kept in this tab")).to_be_attached()  # connected: what is typed now is the form's
    page.get_by_label(TOPIC).fill("Should exams be open-book?")
    names = page.get_by_label("Name", exact=True)
    names.nth(1).fill(names.nth(0).input_value())  # the first one's name
    page.get_by_role("button", name="Start debate").click()
    message = page.locator(".q-field__messages", has_text="Two participants are called")
    expect(message).to_be_visible()
    # The failed start scrolls its first error into view and focuses it, and Quasar slides the message in:
    # measured once both are over, all in one go (boxes read one by one straddled the scroll once).
    expect(page.locator(".q-field--error input").first).to_be_focused()
    animations_done(message)
    said, others = page.evaluate(BOXES_JS, "Advanced: persona, temperature, colour, tokens")
    assert others, "no field measured"
    for box in others:
        assert not overlaps(said, box), f"the error {said} runs over another element {box}"


def test_a_notice_never_covers_start_debate(server: str, page: Page) -> None:
    """"Preset applied" shows for 5 s where notices appear, at the bottom: on a phone, where the action bar
    lies on that edge, it appears above the bar (a click on "Start debate" under it was lost)."""
    page.goto(server + "/new")
    page.get_by_role("button", name="Quick demo").click()
    notice = page.locator(".q-notification", has_text="Preset applied: Quick demo")
    expect(notice).to_be_visible()
    animations_done(notice)
    start = page.get_by_role("button", name="Start debate")
    said, button = notice.bounding_box(), start.bounding_box()
    assert said is not None and button is not None
    assert not overlaps(said, button), f"the notice {said} covers Start debate {button}"


def test_the_format_menu_opens_on_the_first_click(server: str, browser: Browser) -> None:
    page = browser.new_page(viewport=DESKTOP)
    try:
        page.goto(server + "/tournaments/new")
        page.get_by_label("Topics, one per line *").fill("Tea or coffee?")
        page.get_by_label("Format", exact=True).click()
        page.get_by_role("option", name="Oxford").click()  # one click opened it
        rounds = page.get_by_label("Rounds")
        expect(rounds).to_have_attribute("placeholder", "3")  # the format's default, shown in the empty field
        expect(page.get_by_text("1–10; empty = 3")).to_be_visible()

        # After a reload the tab's kept form is put back once the page has connected: a click made
        # before that must not be undone by it.
        page.goto(server + "/new")
        page.get_by_label(TOPIC).fill("Should exams be open-book?")
        expect(page.get_by_text("Kept in this tab: a reload shows it again.")).to_be_visible()
        page.reload()
        page.get_by_label("Format", exact=True).click()
        expect(page.get_by_text("Kept in this tab: a reload shows it again.")).to_be_visible()  # put back
        expect(page.get_by_label(TOPIC)).to_have_value("Should exams be open-book?")
        expect(page.get_by_role("option", name="Oxford")).to_be_visible()  # the menu is still open
    finally:
        page.close()
