"""Comments and reactions under finished turns, in Chromium with two browser contexts (two people on an
instance without sign-in): a comment typed in one tab appears live in the other, as text (`<script>` is
shown, never run); a reaction's count moves in both; a deleted comment disappears for everyone; 501
characters and a sixth comment within a minute are refused with a message; a share link made without
comments offers no comment box, and a comment forced through its page is refused by the gate."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import launch_server, start_from_form
from webapp.access.passwords import new_token, token_digest
from webapp.store import Store
from webapp.store.accounts import Accounts

pytestmark = pytest.mark.e2e

HOSTILE = "<script>window.__pwned = 1</script><b>not bold</b>"


@pytest.fixture(scope="module")
def talk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    workdir = tmp_path_factory.mktemp("comments")
    db = workdir / "comments.sqlite3"
    with launch_server(workdir, db=db, extra_env={"ROSTRUM_DEMO_SPEED": "400"},
                       log_name="e2e-comments-server.log") as base:
        yield base, db


def finished_debate(page: Page, base: str) -> str:
    url = start_from_form(page, base, "Should comments be allowed under every turn?")
    page.wait_for_function("() => document.querySelectorAll('.rostrum-talk').length >= 4", timeout=90_000)
    return url


def first_talk(page: Page):  # the first finished turn's reactions and comments
    return page.locator(".rostrum-talk").first


def send(page: Page, text: str) -> None:
    box = first_talk(page)
    if not box.locator("textarea").is_visible():
        box.get_by_role("button", name="Comment", exact=True).click()
    box.locator("textarea").fill(text)
    box.get_by_role("button", name="Send").click()


def test_two_people_see_each_others_comments_and_reactions_live(talk_server: tuple[str, Path],
                                                                 browser: Browser) -> None:
    base, _ = talk_server
    ada_context, bob_context = browser.new_context(), browser.new_context()
    ada, bob = ada_context.new_page(), bob_context.new_page()
    url = finished_debate(ada, base)
    bob.goto(url)
    expect(first_talk(bob)).to_be_visible(timeout=30_000)

    # A comment typed in one tab appears in the other, as text.
    send(ada, HOSTILE)
    bob_comment = first_talk(bob).locator(".rostrum-comment-text")
    expect(bob_comment).to_have_text(HOSTILE, timeout=10_000)
    assert first_talk(bob).locator("script, b").count() == 0
    assert bob.evaluate("() => window.__pwned") is None and ada.evaluate("() => window.__pwned") is None
    expect(first_talk(ada).locator("textarea")).to_have_value("")  # sent: the box is emptied

    # Reactions: one of each per person, counted live for both.
    first_talk(bob).locator('[data-emoji="👍"]').click()
    expect(first_talk(ada).locator('[data-emoji="👍"] .rostrum-reaction-count')).to_have_text("1", timeout=10_000)
    expect(first_talk(bob).locator('[data-emoji="👍"]')).to_have_attribute("aria-pressed", "true")
    first_talk(ada).locator('[data-emoji="👍"]').click()
    expect(first_talk(bob).locator('[data-emoji="👍"] .rostrum-reaction-count')).to_have_text("2", timeout=10_000)
    first_talk(bob).locator('[data-emoji="👍"]').click()  # taken back
    expect(first_talk(ada).locator('[data-emoji="👍"] .rostrum-reaction-count')).to_have_text("1", timeout=10_000)

    # Deleting (sign-in off: the local person moderates) removes it for everyone.
    first_talk(bob).get_by_role("button", name="Delete comment by").click()
    expect(first_talk(ada).locator(".rostrum-comment")).to_have_count(0, timeout=10_000)
    expect(first_talk(bob).locator(".rostrum-comment")).to_have_count(0)

    # 501 characters: refused with a message, nothing shown to anyone.
    send(ada, "x" * 501)
    expect(first_talk(ada).get_by_role("alert")).to_contain_text("at most 500 characters (this one has 501)")
    expect(first_talk(ada).locator(".rostrum-composer-count")).to_have_text("501/500")

    # The rate limit: the deleted comment counts, so four more pass and the next is refused.
    for n in range(4):
        send(ada, f"comment {n}")
        expect(first_talk(bob).locator(".rostrum-comment")).to_have_count(n + 1, timeout=10_000)
    send(ada, "one too many")
    expect(first_talk(ada).get_by_role("alert")).to_contain_text("at most 5 comments a minute")
    expect(first_talk(bob).locator(".rostrum-comment")).to_have_count(4)
    # Another person (the other browser) is not limited by the first one's comments.
    send(bob, "my first")
    expect(first_talk(ada).locator(".rostrum-comment")).to_have_count(5, timeout=10_000)

    # A reload shows what is stored (and this person's own reaction).
    ada.reload()
    expect(first_talk(ada).locator(".rostrum-comment")).to_have_count(5, timeout=30_000)
    expect(first_talk(ada).locator('[data-emoji="👍"]')).to_have_attribute("aria-pressed", "true")
    ada_context.close()
    bob_context.close()


async def _link(db: Path, debate_id: str, token: str, comments: bool) -> None:
    store = await Store.open(db)
    try:
        await Accounts(store).add_link(debate_id, token_digest(token), "test", None, comments=comments)
    finally:
        await store.close()


FORCE_COMMENT = """async (key) => {
    const m = await import("rostrum-talk");
    m.talk.hub.send("comment", {turn: key, text: "forced through"});
}"""


def test_a_share_link_without_comments_reacts_but_cannot_comment(talk_server: tuple[str, Path],
                                                                  browser: Browser) -> None:
    base, db = talk_server
    owner = browser.new_context()
    page = owner.new_page()
    url = finished_debate(page, base)
    debate_id = url.rsplit("/", 1)[1]
    closed, open_ = new_token(), new_token()
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs an event loop in this thread
        pool.submit(asyncio.run, _link(db, debate_id, closed, comments=False)).result()
        pool.submit(asyncio.run, _link(db, debate_id, open_, comments=True)).result()

    guest_context = browser.new_context()
    guest = guest_context.new_page()
    guest.goto(f"{base}/s/{closed}")
    talk = first_talk(guest)
    expect(talk).to_be_visible(timeout=30_000)
    expect(talk.get_by_role("button", name="Comment", exact=True)).to_have_count(0)
    talk.locator('[data-emoji="❓"]').click()  # reacting is allowed
    expect(first_talk(page).locator('[data-emoji="❓"] .rostrum-reaction-count')).to_have_text("1", timeout=10_000)
    # Not just hidden: a comment sent from the page anyway is refused by the gate and audited.
    key = talk.get_attribute("data-turn")
    guest.evaluate(FORCE_COMMENT, key)
    expect(talk.get_by_role("alert")).to_contain_text("not allowed", timeout=10_000)
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT count(*) FROM comments WHERE body = 'forced through'").fetchone()[0] == 0
        refused = connection.execute("SELECT count(*) FROM audit WHERE action = 'comment' AND outcome = 'refused'"
                                     " AND debate_id = ?", (debate_id,)).fetchone()[0]
    assert refused == 1

    # A link that allows comments: its holder comments, seen live by the owner's page.
    talker = guest_context.new_page()
    talker.goto(f"{base}/s/{open_}")
    expect(first_talk(talker)).to_be_visible(timeout=30_000)
    send(talker, "a guest's view")
    expect(first_talk(page).locator(".rostrum-comment-text")).to_have_text("a guest's view", timeout=10_000)
    expect(first_talk(page).locator(".rostrum-comment-author")).to_contain_text("Guest ")
    guest_context.close()
    owner.close()


def test_a_turn_that_finishes_while_watched_gets_its_comment_box_at_once(tmp_path: Path, browser: Browser) -> None:
    """A turn streamed on the open page (not in its snapshot) offers reactions and comments as soon as it
    is committed, without a reload, and a comment on it reaches the other tab."""
    # The first turn stalls half-written until a pause and resume: the page is there before any turn ends
    # (at the demo's wall-clock pace a loaded machine built the page when too few turns were left).
    with launch_server(tmp_path, extra_env={"ROSTRUM_DEMO_SPEED": "20", "ROSTRUM_DEMO_FAIL": "1:stall"},
                       log_name="e2e-comments-live.log") as base:
        context = browser.new_context()
        page = context.new_page()
        url = start_from_form(page, base, "Should a live turn take comments once it ends?")
        page.wait_for_selector(".rostrum-turn-live", timeout=30_000)
        before = page.locator(".rostrum-turn-final").count()
        assert before == 0  # held at the first turn
        page.get_by_role("button", name="Pause", exact=True).click()
        expect(page.locator(".q-badge", has_text="paused")).to_be_visible()
        page.get_by_role("button", name="Resume", exact=True).click()
        # Two more turns finish while the page watches: the browser heard of them only live.
        page.wait_for_function(f"() => document.querySelectorAll('.rostrum-turn-final').length >= {before + 2}",
                               timeout=90_000)
        page.wait_for_function("""() => [...document.querySelectorAll('.rostrum-turn-final')]
            .every((turn) => turn.querySelector('.rostrum-talk'))""", timeout=10_000)
        other_context = browser.new_context()
        other = other_context.new_page()
        other.goto(url)
        expect(first_talk(other)).to_be_visible(timeout=30_000)
        send(page, "heard it live")
        expect(first_talk(other).locator(".rostrum-comment-text")).to_have_text("heard it live", timeout=10_000)
        other_context.close()
        context.close()
