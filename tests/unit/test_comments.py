"""Comments and reactions through the gate (`webapp.access.comments`), on a real SQLite store and a real
finished demo debate: who may (viewers, share links with and without comments, moderators), what is
refused (too long, empty, too many, an unknown turn or reaction), the audit trail of deletions, the
exports, and the live signal on the bus."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from webapp import export
from webapp.access.comments import RATE_LIMIT, CommentDesk, CommentRefused, person_key
from webapp.access.gate import Gate
from webapp.access.roles import LOCAL, Action, PermissionDenied, Principal, Role
from webapp.engine.engine import Engine
from webapp.engine.machine import State
from webapp.engine.runner import DebateSession
from webapp.models import DebateConfig
from webapp.providers.demo import OneProvider, RecordingDemoProvider
from webapp.store import Store
from webapp.store.accounts import Accounts
from webapp.store.comments import CommentStore


@pytest.fixture
async def debate(tmp_path: Path) -> AsyncIterator[tuple[Engine, DebateSession]]:
    store = await Store.open(tmp_path / "comments.sqlite3")
    engine = Engine(store, providers=OneProvider(RecordingDemoProvider("demo-instant", speed=0)))
    try:
        session = await engine.start(DebateConfig(topic="Tea is better than coffee", format="classic"))
        assert await session.join() is State.COMPLETED
        await Accounts(store).add_user("vic", "viewer", None)
        await Accounts(store).add_user("olga", "operator", None)
        yield engine, session
    finally:
        for running in list(engine.sessions.values()):
            await running.shutdown()
        await store.close()


def keys(session: DebateSession) -> list[str]:
    """The finished turns spectators see (the private preparation is not one of them)."""
    return [t.key for t in session.state.turns if t.visible]


def desk(engine: Engine, principal: Principal, browser: str = "b1") -> tuple[CommentDesk, list[str]]:
    signals: list[str] = []
    return CommentDesk(Gate(engine, principal), person_key(principal, browser), changed=signals.append), signals


async def test_a_viewer_comments_and_reacts_and_every_change_is_signalled(debate) -> None:
    engine, session = debate
    key = keys(session)[0]
    viewer, signals = desk(engine, Principal(name="vic", role=Role.VIEWER))
    row = await viewer.comment(session, key, "  <script>alert(1)</script> kept as written  ")
    assert row.body == "<script>alert(1)</script> kept as written" and row.author == "vic"
    assert await viewer.react(session, key, "👍") is True
    assert await viewer.react(session, key, "👍") is False  # a toggle: one of each per person
    assert await viewer.react(session, key, "❓") is True
    assert signals == [session.id] * 4
    talk = await CommentStore(engine.store).for_debate(session.id)
    assert talk[key].public()["reactions"] == {"👍": 0, "❓": 1, "⚠️": 0}
    with pytest.raises(PermissionDenied):  # viewers do not moderate
        await viewer.delete(session, row.id)


async def test_bad_comments_are_refused_with_a_message_and_nothing_is_stored(debate) -> None:
    engine, session = debate
    key = keys(session)[0]
    local, _ = desk(engine, LOCAL)
    with pytest.raises(CommentRefused, match=r"at most 500 characters \(this one has 501\)"):
        await local.comment(session, key, "x" * 501)
    with pytest.raises(CommentRefused, match="write something"):
        await local.comment(session, key, "   ")
    with pytest.raises(CommentRefused, match="not a finished turn"):
        await local.comment(session, "nowhere/r1/pro/0", "hello")
    with pytest.raises(CommentRefused, match="reaction"):
        await local.react(session, key, "🔥")
    assert await CommentStore(engine.store).for_debate(session.id) == {}
    await local.comment(session, key, "y" * 500)  # the limit itself is fine


async def test_the_rate_limit_is_per_person_and_counts_deleted_comments(debate) -> None:
    engine, session = debate
    key = keys(session)[0]
    ada, _ = desk(engine, LOCAL, "browser-a")
    first = await ada.comment(session, key, "one")
    await ada.delete(session, first.id)
    for n in range(RATE_LIMIT - 1):
        await ada.comment(session, key, f"more {n}")
    with pytest.raises(CommentRefused, match=f"at most {RATE_LIMIT} comments a minute; try again in"):
        await ada.comment(session, key, "one too many")
    other, _ = desk(engine, LOCAL, "browser-b")  # another browser is another person
    await other.comment(session, key, "mine")


async def test_a_share_link_reacts_and_comments_only_where_its_link_allows(debate) -> None:
    engine, session = debate
    key = keys(session)[0]
    accounts = Accounts(engine.store)
    closed = await accounts.add_link(session.id, "digest-closed", "olga", None)
    open_ = await accounts.add_link(session.id, "digest-open", "olga", None, comments=True)

    def holder(link_id: str, comments: bool) -> Principal:
        return Principal(name=f"share link {link_id}", role=Role.VIEWER, kind="share-link", debate_id=session.id,
                         link_comments=comments)

    silent, _ = desk(engine, holder(closed.id, False))
    assert await silent.react(session, key, "⚠️") is True
    with pytest.raises(PermissionDenied):
        await silent.comment(session, key, "let me in")
    # A principal claiming more than its link allows is still refused: the link is read again.
    forged, _ = desk(engine, holder(closed.id, True))
    with pytest.raises(PermissionDenied):
        await forged.comment(session, key, "let me in")
    talker, _ = desk(engine, holder(open_.id, True))
    row = await talker.comment(session, key, "thanks")
    assert row.author.startswith("Guest ")
    await accounts.revoke_link(open_.id, "olga")
    with pytest.raises(PermissionDenied):  # revoked since the page opened
        await talker.comment(session, key, "again")
    refused = [r for r in (await accounts.audit_page(actor="share-link"))[0] if r.outcome == "refused"]
    assert len(refused) == 3 and {r.action for r in refused} == {Action.COMMENT.value}
    assert [c.body for c in (await CommentStore(engine.store).for_debate(session.id))[key].comments] == ["thanks"]


async def test_operators_delete_comments_for_everyone_and_it_is_audited(debate) -> None:
    engine, session = debate
    key = keys(session)[1]
    viewer, _ = desk(engine, Principal(name="vic", role=Role.VIEWER))
    row = await viewer.comment(session, key, "rude words")
    operator, signals = desk(engine, Principal(name="olga", role=Role.OPERATOR))
    assert await operator.delete(session, row.id) is True
    assert signals == [session.id]
    assert await CommentStore(engine.store).for_debate(session.id) == {}
    rows, _ = await Accounts(engine.store).audit_page(actor="olga")
    assert rows[0].action == "comment_delete" and json.loads(rows[0].detail)["text"] == "rude words"
    with pytest.raises(CommentRefused):
        await operator.delete(session, "no-such-comment")


async def test_show_json_and_the_exports_carry_comments_and_reaction_counts(debate) -> None:
    engine, session = debate
    key = keys(session)[0]
    viewer, _ = desk(engine, Principal(name="vic", role=Role.VIEWER))
    await viewer.comment(session, key, "<b>bold?</b>")
    await viewer.react(session, key, "👍")
    talk = await CommentStore(engine.store).for_debate(session.id)
    data = json.loads(export.to_json(session.state, talk=talk))
    first = next(t for t in data["turns"] if t["key"] == key)
    assert first["reactions"] == {"👍": 1, "❓": 0, "⚠️": 0}
    assert [(c["author"], c["text"]) for c in first["comments"]] == [("vic", "<b>bold?</b>")]
    assert next(t for t in data["turns"] if t["key"] == keys(session)[1])["comments"] == []
    assert "person" not in json.dumps(first)
    markdown = export.to_markdown(session.state, talk=talk)
    assert "- **vic:** &lt;b>bold?&lt;/b>" in markdown and "Reactions: 👍 1" in markdown  # raw HTML made inert
    assert "<b>bold?</b>" not in markdown
    assert "vic: <b>bold?</b>" in export.to_text(session.state, talk=talk)
