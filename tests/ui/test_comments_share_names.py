"""A shared page shows the debate, not who is on the team (README, "Threat model"), for comments too: when
a team member comments, a share link's holder is told "a team member", live (the talk room of share
links) and on reload (the page's snapshot) alike, while team members see the name both ways. A guest's
own tag names nobody and is shown to everyone; no person key reaches any page."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nicegui import core
from nicegui.testing import User

from tests.ui.helpers import one, start_demo
from tests.ui.test_access import accounts, add_users, auth_on, browser, signed_in  # noqa: F401 (a fixture)
from webapp.access.passwords import new_token, token_digest
from webapp.ui.components import turn_talk

TEAM, LINK = "a team member", "link"


def authors(turns: dict[str, Any], key: str) -> list[str]:
    return [c["author"] for c in turns.get(key, {}).get("comments", [])]


async def test_a_share_links_holder_sees_a_team_member_live_and_on_reload(
        user: User, auth_on: None, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    await add_users(("olga", "operator"))
    session = await start_demo("Who said that?")
    await session.join()
    key = next(t.key for t in session.state.turns if t.visible)
    token = new_token()
    await (await accounts()).add_link(session.id, token_digest(token), "olga", None, comments=True)

    await signed_in(user, "olga", page=f"/debate/{session.id}")
    await user.should_see(marker="turn-talk-hub")
    guest = browser("10.7.7.7")
    await guest.open(f"/s/{token}")
    await guest.should_see(marker="turn-talk-hub")
    team_hub, guest_hub = one(user, "turn-talk-hub"), one(guest, "turn-talk-hub")
    assert (team_hub.room, guest_hub.room) == (turn_talk.talk_room(session.id, True),
                                               turn_talk.talk_room(session.id, False))

    sent: dict[str, dict[str, Any]] = {}  # room -> the last comments sent to it
    both = asyncio.Event()
    emit = core.sio.emit

    async def recording(event: str, data: Any = None, room: str | None = None, **kwargs: Any) -> None:
        if event == turn_talk.TALK_EVENT:
            sent[str(room)] = data
            if {team_hub.room, guest_hub.room} <= set(sent):
                both.set()
        await emit(event, data, room=room, **kwargs)

    monkeypatch.setattr(core.sio, "emit", recording)

    # Olga (a team member) comments and reacts; the guest comments too.
    await team_hub.desk.comment(session, key, "I wrote this")
    await team_hub.desk.react(session, key, "👍")
    await guest_hub.desk.comment(session, key, "and I this")
    guest_tag = (await guest_hub.desk.store.for_debate(session.id))[key].comments[1].author
    assert guest_tag.startswith("Guest ")

    async with asyncio.timeout(10):  # live: each room is sent what its pages may see
        while True:
            await both.wait()
            both.clear()
            if len(authors(sent[guest_hub.room]["turns"], key)) == 2 and \
                    len(authors(sent[team_hub.room]["turns"], key)) == 2:
                break
    assert authors(sent[team_hub.room]["turns"], key) == ["olga", guest_tag]
    assert authors(sent[guest_hub.room]["turns"], key) == [TEAM, guest_tag]
    assert sent[guest_hub.room]["turns"][key]["reactions"]["👍"] == 1
    for data in sent.values():  # never a person key (a browser's id, a user's key)
        assert "user:" not in json.dumps(data) and "link:" not in json.dumps(data)
    assert "olga" not in json.dumps(sent[guest_hub.room], ensure_ascii=False)

    # A (re)connecting page is sent the same on its own.
    replaced: list[Any] = []
    monkeypatch.setattr(guest_hub, "run_method", lambda name, *args: replaced.append((name, args)))
    await guest_hub._resync()
    assert replaced[-1][0] == "replace" and authors(replaced[-1][1][0], key) == [TEAM, guest_tag]

    # On reload: the snapshot says what the room said.
    await guest.open(f"/s/{token}")
    await guest.should_see(marker="turn-talk-hub")
    assert authors(one(guest, "turn-talk-hub").props["turns"], key) == [TEAM, guest_tag]
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="turn-talk-hub")
    assert authors(one(user, "turn-talk-hub").props["turns"], key) == ["olga", guest_tag]
