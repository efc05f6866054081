"""Who may comment, react and delete on a debate page, with sign-in on: what each page is told it may
do (the gate checks again on every action: tests/unit/test_comments.py), and the share card's switch
that lets a link's holders comment."""

from __future__ import annotations

from nicegui.testing import User

from tests.ui.helpers import one, start_demo
from tests.ui.test_access import accounts, add_users, auth_on, browser, signed_in  # noqa: F401 (a fixture)


def rights(user: User) -> dict[str, bool]:
    return dict(one(user, "turn-talk-hub").props["can"])


async def test_viewers_comment_operators_moderate_and_a_link_comments_only_if_its_switch_says(
        user: User, auth_on: None) -> None:  # noqa: F811
    await add_users(("ops", "operator"), ("vic", "viewer"))
    session = await start_demo("Talk about it")
    await session.join()

    viewer = browser("10.5.5.5")
    await signed_in(viewer, "vic", page=f"/debate/{session.id}")
    await viewer.should_see(marker="turn-talk-hub")
    assert rights(viewer) == {"comment": True, "react": True, "moderate": False}

    await signed_in(user, "ops", page=f"/debate/{session.id}")
    await user.should_see(marker="turn-talk-hub")
    assert rights(user) == {"comment": True, "react": True, "moderate": True}
    tokens = []
    for comments in (False, True):
        one(user, "share-section").value = True  # open the collapsed card
        await user.should_see(marker="share-comments")
        one(user, "share-comments").value = comments
        user.find(marker="share-create").click()
        await user.should_see("comments allowed" if comments else "no comments")  # the new link is listed
        shown = {e.value.rsplit("/s/", 1)[1] for e in user.find(marker="share-url").elements}  # each link made here
        tokens += sorted(shown - set(tokens))
    assert tokens[0] != tokens[1]
    links = sorted(await (await accounts()).links(session.id), key=lambda link: link.created_at)
    assert [link.comments for link in links] == [False, True]

    for token, may_comment in zip(tokens, (False, True), strict=True):
        guest = browser("10.6.6.6")
        await guest.open(f"/s/{token}")
        await guest.should_see(marker="turn-talk-hub")
        assert rights(guest) == {"comment": may_comment, "react": True, "moderate": False}
