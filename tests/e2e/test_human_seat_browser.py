"""A human seat filled from the browser: a debate waiting for a person's turn (left waiting by the CLI
with stdin closed, in the same database) shows its holder the composer with the phase, a live word
count and a countdown; Send turn commits the turn (audited) and the debate goes on. Someone who does
not hold the seat sees "<Name> is writing…" instead; Pause and Resume work while the seat waits."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.child_env import child_env
from tests.e2e.conftest import ROOT, launch_server

pytestmark = pytest.mark.e2e


def _waiting_debate(db: Path, topic: str, seat: str = "") -> str:
    """A debate created by the CLI that waits for Me's first turn (nobody at the terminal)."""
    me = "name=Me,provider=human,position=pro" + (f",seat={seat}" if seat else "")
    done = subprocess.run(
        [sys.executable, "-m", "webapp", "debate", topic, "--format", "classic", "--rounds", "1", "--questions", "1",
         "--participant", me, "--participant", "name=Bot,provider=demo,position=con", "--db", str(db)],
        cwd=ROOT, env=child_env(ROSTRUM_DEMO_SPEED="0"), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120)
    assert done.returncode == 1 and "waits for" in done.stdout, done.stdout[-2000:]
    match = re.search(r"Debate ([0-9a-f]{12}): awaiting_turn", done.stdout)
    assert match, done.stdout[-2000:]
    return match.group(1)


def test_the_seat_holder_sends_a_turn_and_others_see_them_writing(tmp_path: Path, browser: Browser) -> None:
    db = tmp_path / "seat.sqlite3"
    mine = _waiting_debate(db, "Should night buses run every hour?")
    theirs = _waiting_debate(db, "Should trams have right of way?", seat="ada")
    with launch_server(tmp_path, db=db, log_name="e2e-seat-server.log") as base:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(f"{base}/debate/{mine}")
        expect(page.get_by_text("Your turn — Opening statements")).to_be_visible(timeout=20000)
        count = page.locator("[data-seat-count]")
        expect(count).to_have_text("0 / 300 words")
        expect(page.locator("[data-seat-clock]").first).to_have_text(re.compile(r"^\d+:\d\d left$"))
        box = page.locator("textarea[data-seat-text], [data-seat-text] textarea").first
        box.fill("Hourly night buses keep shift workers safe.")
        expect(count).to_have_text("7 / 300 words")
        page.get_by_role("button", name="Send turn").click()
        expect(page.get_by_text("Hourly night buses keep shift workers safe.").first).to_be_visible(timeout=20000)
        # The bot answers, then the seat is due again (the rebuttal): the composer comes back for it.
        expect(page.get_by_text("Your turn — Rebuttal")).to_be_visible(timeout=60000)
        expect(page.get_by_role("button", name="Send turn")).to_be_enabled()
        expect(count).to_have_text("0 / 250 words")
        # Draft with a model: the draft streams into the box, the count follows it, the person edits and sends.
        page.get_by_role("button", name="Draft with a model").click()
        expect(box).not_to_have_value("", timeout=30000)
        expect(count).not_to_have_text("0 / 250 words")
        box.press("End")
        box.type(" My own ending.")
        page.get_by_role("button", name="Send turn").click()
        expect(page.get_by_text("My own ending.").first).to_be_visible(timeout=20000)

        other = context.new_page()
        other.goto(f"{base}/debate/{theirs}")
        expect(other.get_by_text("Me is writing…")).to_be_visible(timeout=20000)
        expect(other.get_by_role("button", name="Send turn")).to_have_count(0)
        # Pause and Resume work while the seat waits: paused, nobody is writing; resumed, the wait is back.
        other.get_by_role("button", name="Pause").click()
        expect(other.get_by_text("Me is writing…")).to_have_count(0)
        expect(other.get_by_role("button", name="Resume")).to_be_enabled()
        other.get_by_role("button", name="Resume").click()
        expect(other.get_by_text("Me is writing…")).to_be_visible()
        context.close()
    with sqlite3.connect(db) as conn:
        texts = [r[0] for r in conn.execute(
            "SELECT json_extract(data, '$.turn.text') FROM events WHERE debate_id = ? AND kind = 'turn'", (mine,))]
        audited = conn.execute("SELECT COUNT(*) FROM audit WHERE action = 'send_turn' AND debate_id = ?",
                               (mine,)).fetchone()[0]
        assisted = [r[0] for r in conn.execute(
            "SELECT json_extract(data, '$.turn.assisted_by') FROM events WHERE debate_id = ? AND kind = 'turn'"
            " AND json_extract(data, '$.turn.text') LIKE '%My own ending.'", (mine,))]
        drafted = conn.execute("SELECT COUNT(*) FROM audit WHERE action = 'draft_turn' AND debate_id = ?",
                               (mine,)).fetchone()[0]
    assert "Hourly night buses keep shift workers safe." in texts
    assert audited == 2 and drafted == 1 and assisted == ["demo:demo"]


def test_a_human_seat_from_the_form(tmp_path: Path, browser: Browser) -> None:
    with launch_server(tmp_path, log_name="e2e-seat-form-server.log") as base:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(base + "/new")
        page.get_by_role("button", name="Quick demo").click()
        expect(page.get_by_text("Preset applied: Quick demo")).to_be_visible()  # a fresh form: the topic after it
        page.get_by_label("What should they debate? *").fill("Should libraries open on Sundays?")
        expect(page.get_by_text("Kept in this tab")).to_be_attached()  # connected: the form is what it shows
        page.get_by_label("Provider").first.click()
        page.locator(".q-menu .q-item", has_text="Human (a person takes the seat)").click()
        expect(page.get_by_label("Who takes the seat")).to_be_visible()
        page.get_by_role("button", name="Start debate").click()
        page.wait_for_url(re.compile(r".*/debate/[0-9a-f]+$"))
        expect(page.get_by_text(re.compile("^Your turn — "))).to_be_visible(timeout=60000)
        page.locator("textarea[data-seat-text], [data-seat-text] textarea").first.fill("Sunday hours serve families.")
        page.get_by_role("button", name="Send turn").click()
        expect(page.get_by_text("Sunday hours serve families.").first).to_be_visible(timeout=20000)
        context.close()
