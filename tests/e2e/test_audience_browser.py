"""The audience vote and the people's verdict in real browsers (`ROSTRUM_AUTH=on`): two people vote
before and after a debate from two browser contexts and both see the counts and the swing live; a
reload or a second tab changes a person's vote but never adds one; a viewer votes and gives a verdict
but has no control over the debate."""

from __future__ import annotations

import asyncio
import re
import secrets
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.e2e.conftest import launch_server, open_expansion, settle
from webapp.access.passwords import hash_password, new_token, token_digest
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig, Participant
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.store import Store
from webapp.store.accounts import Accounts

pytestmark = pytest.mark.e2e

LOGIN_URL = re.compile(r".*/login(\?.*)?$")


@dataclass
class Setup:
    base: str
    db: Path
    passwords: dict[str, str]
    idle: str  # created, never started: its before vote is open
    ended: str  # completed: its after vote is open
    share_token: str  # a share link to `ended`


def _config(topic: str) -> DebateConfig:
    return DebateConfig(topic=topic, format="round-limited", rounds=1, participants=[
        Participant(name="Ada", provider="demo", model="demo-instant", position="pro"),
        Participant(name="Bo", provider="demo", model="demo-instant", position="con")])


async def _prepare(db: Path, users: dict[str, tuple[str, str]], token: str) -> tuple[str, str]:
    store = await Store.open(db)
    engine = Engine(store, providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))
    try:
        for name, (role, password) in users.items():
            await Accounts(store).add_user(name, role, hash_password(password))
        idle = await engine.create(_config("Should cities ban cars?"))
        ended = await engine.start(_config("Is tea better than coffee?"))
        assert await ended.join() is State.COMPLETED
        await Accounts(store).add_link(ended.id, token_digest(token), "olga", None)
        return idle, ended.id
    finally:
        for running in list(engine.sessions.values()):
            await running.shutdown()
        await store.close()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("audience")
    db = workdir / "audience.sqlite3"
    users = {"olga": ("operator", "op-" + secrets.token_urlsafe(10)),
             "vic": ("viewer", "vw-" + secrets.token_urlsafe(10))}
    token = new_token()
    idle, ended = asyncio.run(_prepare(db, users, token))
    with launch_server(workdir, db=db, extra_env={"ROSTRUM_AUTH": "on", "ROSTRUM_DEMO_SPEED": "0"},
                       log_name="e2e-audience-server.log") as base:
        yield Setup(base, db, {name: pw for name, (_, pw) in users.items()}, idle, ended, token)


def signed_in(browser: Browser, setup: Setup, name: str, debate_id: str) -> tuple[BrowserContext, Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{setup.base}/debate/{debate_id}")
    expect(page).to_have_url(LOGIN_URL)
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(setup.passwords[name])
    page.get_by_role("button", name="Sign in").click()
    # Bounded for a hang, as in test_team_access: an argon2id check, the store's writes, two redirects and
    # a page build outlast Playwright's default 5 s on a loaded 2-core machine.
    expect(page).to_have_url(re.compile(rf".*/debate/{debate_id}$"), timeout=30_000)
    expect(card(page)).to_be_visible(timeout=30_000)  # the card's first read of the store is in
    return context, page


def card(page: Page) -> Locator:
    return page.locator(".rostrum-audience")


def vote(page: Page, choice: str) -> None:
    button = card(page).get_by_role("button", name=choice, exact=True)
    settle(button).click()
    expect(button).to_have_attribute("aria-pressed", "true")


def stage(page: Page, name: str) -> Locator:
    return card(page).locator(f"[data-stage='{name}']")


def test_two_voters_see_the_counts_and_the_swing_live_and_never_count_twice(setup: Setup, browser: Browser) -> None:
    vic_context, vic = signed_in(browser, setup, "vic", setup.idle)
    olga_context, olga = signed_in(browser, setup, "olga", setup.idle)
    try:
        expect(card(vic)).to_contain_text("this vote closes when the first rebuttal begins")
        vote(vic, "For")
        vote(olga, "Against")
        for page in (vic, olga):  # each sees the other's vote without reloading
            expect(stage(page, "before")).to_have_text("Before: For 1 (50%) · Against 1 (50%) · Undecided 0 (0%)")
        vic.reload()  # the vote is remembered and not counted again
        expect(card(vic).get_by_role("button", name="For", exact=True)).to_have_attribute("aria-pressed", "true")
        vote(vic, "For")
        second = vic_context.new_page()  # a second tab of the same person changes their vote
        second.goto(f"{setup.base}/debate/{setup.idle}")
        vote(second, "Undecided")
        expected = "Before: For 0 (0%) · Against 1 (50%) · Undecided 1 (50%)"
        for page in (vic, olga, second):
            expect(stage(page, "before")).to_have_text(expected)
        second.close()

        olga.locator("[data-control='resume']").click()  # the operator starts the debate
        for page in (vic, olga):
            expect(card(page)).to_contain_text("The debate has ended: vote again", timeout=60_000)
        vote(vic, "For")
        vote(olga, "For")
        for page in (vic, olga):
            expect(stage(page, "after")).to_have_text("After: For 2 (100%) · Against 0 (0%) · Undecided 0 (0%)")
            expect(card(page)).to_contain_text("The audience moved 100 points to Ada")
    finally:
        vic_context.close()
        olga_context.close()
    with sqlite3.connect(setup.db) as db:
        rows = db.execute("SELECT stage, voter, choice FROM audience_votes WHERE debate_id = ? ORDER BY stage, voter",
                          (setup.idle,)).fetchall()
    assert rows == [("after", "user:olga", "for"), ("after", "user:vic", "for"),
                    ("before", "user:olga", "against"), ("before", "user:vic", "undecided")]


def test_a_viewer_votes_and_judges_but_cannot_control(setup: Setup, browser: Browser) -> None:
    context, page = signed_in(browser, setup, "vic", setup.ended)
    try:
        expect(card(page)).to_contain_text("The debate has ended: vote again")
        for name in ("Pause", "Resume", "Retry", "Stop"):  # shown, but not for a viewer (the gate refuses too)
            controls = page.get_by_role("button", name=name, exact=True)
            for n in range(controls.count()):
                expect(controls.nth(n)).to_be_disabled()
        expect(card(page).get_by_role("button", name=re.compile("after vote"))).to_have_count(0)  # operators only
        vote(page, "Against")
        expect(stage(page, "after")).to_contain_text("Against 1")  # (the share-link test votes For only)
        expect(card(page)).to_contain_text("No one has given a verdict yet.")
        open_expansion(page, "Your verdict").get_by_label("Winner").click()
        expect(page.get_by_role("listbox")).to_be_visible()
        page.get_by_role("option", name="Bo").click()
        card(page).get_by_label("evidence (0–100)").fill("70")
        card(page).get_by_label("Note (optional)").fill("Bo answered every point")
        card(page).get_by_role("button", name="Save my verdict").click()
        expect(card(page)).to_contain_text("Bo (majority of 1 verdict)")
    finally:
        context.close()
    with sqlite3.connect(setup.db) as db:
        verdicts = db.execute("SELECT voter, winner, scores, note FROM human_verdicts WHERE debate_id = ?",
                              (setup.ended,)).fetchall()
        audit = db.execute("SELECT action, outcome FROM audit WHERE actor = 'vic' AND debate_id = ?",
                           (setup.ended,)).fetchall()
    assert verdicts == [("user:vic", "bo", '{"evidence": 70.0}', "Bo answered every point")]
    assert ("vote", "ok") in audit and ("judge", "ok") in audit


def test_a_share_link_holder_votes_once_per_browser_and_cannot_judge(setup: Setup, browser: Browser) -> None:
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2)]
    try:
        pages = [context.new_page() for context in contexts]
        for page in pages:
            page.goto(f"{setup.base}/s/{setup.share_token}")
            expect(card(page)).to_contain_text("The debate has ended: vote again")
        vote(pages[0], "Undecided")
        pages[0].reload()  # the same browser: its vote is changed, not added
        vote(pages[0], "For")
        vote(pages[1], "For")
        for page in pages:
            expect(stage(page, "after")).to_contain_text("For 2")
            expect(card(page).get_by_text("Your verdict")).to_have_count(0)  # a link votes but does not judge
    finally:
        for context in contexts:
            context.close()
    with sqlite3.connect(setup.db) as db:
        voters = db.execute("SELECT voter, choice FROM audience_votes WHERE debate_id = ? AND voter LIKE 'browser:%'",
                            (setup.ended,)).fetchall()
    assert len(voters) == 2 and {c for _, c in voters} == {"for"}
