"""The audience vote and the people's verdicts end to end below the UI: the gate's rules (who may vote
and judge, when each stage is open, every action audited), the swing, and what `show --json` and the
exports carry. Real SQLite files, the real engine with the demo provider."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from webapp.access.gate import Gate
from webapp.access.roles import LOCAL, PermissionDenied, Principal, Role
from webapp.engine import audience
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.store import Store
from webapp.store.accounts import Accounts
from webapp.store.audience import AudienceStore, Tally
from webapp.store.protocol import EventStore

VIEWER = Principal(name="vera", role=Role.VIEWER)
OPERATOR = Principal(name="otto", role=Role.OPERATOR)


def _engine(store: Store) -> Engine:
    return Engine(store, providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))


async def _audit(store: Store) -> list[tuple[str, str, str]]:
    rows = await store.fetchall("SELECT actor, action, outcome FROM audit ORDER BY id")
    return [(str(a), str(b), str(c)) for a, b, c in rows]


async def test_viewers_and_share_links_vote_before_and_after_and_judge_but_cannot_control(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "aud.sqlite3")
    engine = _engine(store)
    accounts = Accounts(store)
    await accounts.add_user("vera", "viewer", None)
    await accounts.add_user("otto", "operator", None)
    try:
        debate_id = await engine.create(DebateConfig(topic="Tea is better than coffee", format="classic"))
        session = await engine.session(debate_id)
        viewer = Gate(engine, VIEWER)
        link = Gate(engine, Principal(name="share-link", role=Role.VIEWER, kind="share-link", debate_id=debate_id))
        assert await viewer.vote(session, "before", "against") == "user:vera"
        assert await viewer.vote(session, "before", "for") == "user:vera"  # changed, not added
        assert await link.vote(session, "before", "against", browser_id="b-1") == "browser:b-1"
        with pytest.raises(ValueError, match="the after vote is closed"):
            await viewer.vote(session, "after", "for")
        with pytest.raises(PermissionDenied):
            await viewer.command(session, "stop")
        with pytest.raises(PermissionDenied):  # a share link votes but never judges
            await link.judge(session, "pro", {})
        with pytest.raises(ValueError, match="not ended"):
            await viewer.judge(session, None, {})
        session.ensure_running()
        assert await session.join() is State.COMPLETED
        with pytest.raises(ValueError, match="the before vote is closed"):
            await viewer.vote(session, "before", "against")
        await viewer.vote(session, "after", "for")
        await link.vote(session, "after", "for", browser_id="b-1")
        pro, con = audience.sides(session.state) or ("", "")
        with pytest.raises(ValueError, match=r"evidence.*outside"):
            await viewer.judge(session, pro, {"evidence": 120})
        with pytest.raises(ValueError, match="'logic' is not a criterion"):
            await viewer.judge(session, pro, {"logic": 50})
        await viewer.judge(session, pro, {"evidence": 80}, "a clear case")
        await viewer.judge(session, con, {"evidence": 60})  # edited while the after vote is open
        await Gate(engine, OPERATOR).set_after_vote(session, open_=False)  # closed early
        with pytest.raises(ValueError, match="the after vote is closed"):
            await viewer.vote(session, "after", "against")
        with pytest.raises(ValueError, match="can no longer be changed"):
            await viewer.judge(session, pro, {})
        with pytest.raises(PermissionDenied):
            await viewer.set_after_vote(session, open_=True)
        await Gate(engine, OPERATOR).set_after_vote(session, open_=True)  # reopened
        await viewer.vote(session, "after", "undecided")

        people = await audience.read_people(store, session.state)
        assert people["audience"]["before"] == {"for": 1, "against": 1, "undecided": 0}
        assert people["audience"]["after"] == {"for": 1, "against": 0, "undecided": 1}
        assert people["audience"]["swing"] == {"for": 0.0, "against": -50.0, "undecided": 50.0}
        assert people["audience"]["winner"] == "for"
        assert [(v["by"], v["winner"], v["scores"]) for v in people["human_verdicts"]] == [
            ("user:vera", con, {"evidence": 60.0})]
        assert people["people_verdict"]["winner"] == con and people["people_verdict"]["count"] == 1

        audit = await _audit(store)
        assert ("vera", "vote", "ok") in audit and ("share-link", "vote", "ok") in audit
        assert ("vera", "judge", "ok") in audit and ("vera", "judge", "failed") in audit
        assert ("vera", "stop", "refused") in audit and ("share-link", "judge", "refused") in audit
        assert ("otto", "manage_vote", "ok") in audit and ("vera", "manage_vote", "refused") in audit
    finally:
        for running in list(engine.sessions.values()):
            await running.shutdown()
        await store.close()


async def test_without_sign_in_each_browser_votes_once(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "local.sqlite3")
    engine = _engine(store)
    try:
        session = await engine.session(await engine.create(DebateConfig(topic="Cats or dogs", format="classic")))
        local = Gate(engine, LOCAL)
        with pytest.raises(ValueError, match="no session"):
            await local.vote(session, "before", "for", browser_id=None)
        for _ in range(3):  # a reload, a second tab: the same browser
            await local.vote(session, "before", "for", browser_id="tab-browser")
        await local.vote(session, "before", "against", browser_id="other-browser")
        assert (await AudienceStore(store).tally(session.id))["before"].public() == {
            "for": 1, "against": 1, "undecided": 0}
    finally:
        await store.close()


def test_the_swing_and_the_room_sentence() -> None:
    before = Tally.model_validate({"for": 3, "against": 5, "undecided": 2})
    after = Tally.model_validate({"for": 6, "against": 4, "undecided": 0})
    res = audience.result({"before": before, "after": after})
    assert res.swing == {"for": 30.0, "against": -10.0, "undecided": -20.0} and res.winner == "for"
    assert res.sentence("Ada", "Bo") == "The audience moved 30 points to Ada"
    moved_against = audience.result({"before": after, "after": before})
    assert moved_against.winner == "against"
    assert moved_against.sentence() == "The audience moved 10 points to the opposition"
    assert audience.result({"before": before, "after": Tally()}).winner is None


def test_show_json_and_exports_carry_the_audience_and_the_people(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from webapp.cli import EXIT_OK, main

    monkeypatch.setenv("ROSTRUM_DEMO_SPEED", "0")
    db = tmp_path / "show.sqlite3"

    def run(*argv: str) -> str:
        out = io.StringIO()
        assert main(list(argv), out=out) == EXIT_OK
        return out.getvalue()

    shown = run("debate", "Is nuclear power green?", "--format", "round-limited", "--rounds", "1",
                "--participant", "name=Ada,provider=demo,model=demo,position=pro",
                "--participant", "name=Bo,provider=demo,model=demo-instant,position=con", "--db", str(db))
    did = json.loads(run("list", "--json", "--db", str(db)))[0]["id"]
    assert did in shown
    empty = json.loads(run("show", did, "--json", "--db", str(db)))
    assert empty["audience"] == {"before": {"for": 0, "against": 0, "undecided": 0},
                                 "after": {"for": 0, "against": 0, "undecided": 0},
                                 "swing": {"for": 0.0, "against": 0.0, "undecided": 0.0}, "winner": None,
                                 "winner_participant": None}
    assert empty["human_verdicts"] == [] and empty["people_verdict"]["winner"] is None

    async def cast() -> None:
        store = await Store.open(db)
        try:
            people = AudienceStore(store)
            for n, choice in enumerate(("for", "against", "against", "undecided")):
                await people.vote(did, "before", f"user:p{n}", choice)  # type: ignore[arg-type]
            for n, choice in enumerate(("for", "for", "against", "for")):
                await people.vote(did, "after", f"user:p{n}", choice)  # type: ignore[arg-type]
            await people.set_verdict(did, "user:p0", "bo", {"logic": 64.0}, "Bo <b>won</b>")
        finally:
            await store.close()

    asyncio.run(cast())
    data = json.loads(run("show", did, "--json", "--db", str(db)))
    assert data["audience"]["before"] == {"for": 1, "against": 2, "undecided": 1}
    assert data["audience"]["after"] == {"for": 3, "against": 1, "undecided": 0}
    assert data["audience"]["swing"] == {"for": 50.0, "against": -25.0, "undecided": -25.0}
    assert data["audience"]["winner"] == "for" and data["audience"]["winner_participant"] == "ada"
    assert [(v["by"], v["winner"], v["scores"], v["note"]) for v in data["human_verdicts"]] == [
        ("user:p0", "bo", {"logic": 64.0}, "Bo <b>won</b>")]
    assert data["people_verdict"]["winner"] == "bo" and data["people_verdict"]["count"] == 1
    assert data["people_verdict"]["agrees_with_judges"] == (data["verdict"]["winner"] == "bo")
    for suffix in ("json", "md", "txt"):
        run("export", did, str(tmp_path / f"e.{suffix}"), "--db", str(db))
    assert json.loads((tmp_path / "e.json").read_text())["audience"]["winner"] == "for"
    md = (tmp_path / "e.md").read_text()
    assert "## The people" in md and "Swing (points): for +50" in md and "<b>" not in md
    assert "People's verdict: Bo (1 verdict)" in (tmp_path / "e.txt").read_text()
    def record(by: str) -> dict[str, tuple[int, int]]:
        board = json.loads(run("leaderboard", "--json", "--by", by, "--db", str(db)))
        return {line["model"]: (line["wins"], line["losses"]) for line in board["ratings"]}

    assert record("audience") == {"demo:demo": (1, 0), "demo:demo-instant": (0, 1)}  # the room went to Ada
    assert record("people") == {"demo:demo": (0, 1), "demo:demo-instant": (1, 0)}  # the people named Bo
    judges = json.loads(run("judges", "--json", "--db", str(db)))["judges"]
    assert judges and all(j["people_debates"] == 1 for j in judges)
    assert "Agreement with the people's verdicts" in run("judges", "--db", str(db))
    ruled = {r["judge"]: r["winner"] for r in data["verdict"]["rulings"] if r.get("error") is None}
    assert {j["judge"]: j["people_agreed"] for j in judges} == {k: int(w == "bo") for k, w in ruled.items()}


async def test_votes_and_verdicts_through_the_gate_on_every_store(any_store: EventStore) -> None:
    """The same rules on SQLite and PostgreSQL: one vote per browser, the verdict of a person replaced."""
    engine = Engine(any_store, providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))
    try:
        session = await engine.start(DebateConfig(topic="Is tea better than coffee?", format="classic"))
        assert await session.join() is State.COMPLETED
        local = Gate(engine, LOCAL)
        for choice in ("against", "for"):
            await local.vote(session, "after", choice, browser_id="one-browser")  # type: ignore[arg-type]
        pro = (audience.sides(session.state) or ("", ""))[0]
        await local.judge(session, pro, {"clarity": 90}, browser_id="one-browser")
        await local.judge(session, "tie", {}, "on reflection", browser_id="one-browser")
        people = await audience.read_people(any_store, session.state)
        assert people["audience"]["after"] == {"for": 1, "against": 0, "undecided": 0}
        assert [(v["by"], v["winner"], v["note"]) for v in people["human_verdicts"]] == [
            ("browser:one-browser", None, "on reflection")]
        assert people["people_verdict"]["winner"] == "tie"
    finally:
        for running in list(engine.sessions.values()):
            await running.shutdown()
