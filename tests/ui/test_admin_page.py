"""The admin page: accounts added on the page (a generated password shown once, a bad or taken name
said at its field, everything audited), roles changed and accounts disabled from it, the audit trail
in words (never raw JSON), the local actor named as such, and share links that show a copyable
address only while it works."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from nicegui.testing import User

from tests.ui.helpers import engine, one, start_demo
from tests.ui.test_access import (  # noqa: F401  (auth_on is a fixture)
    accounts,
    add_users,
    audit_rows,
    auth_on,
    browser,
    sign_in,
    signed_in,
)
from webapp.access.gate import Gate
from webapp.access.passwords import verify_password
from webapp.access.roles import Principal, Role
from webapp.models import utcnow

LOCAL_WORDS = "this computer (no sign-in)"


def role_select(user: User, username: str) -> Any:
    """The role menu on `username`'s row."""
    return next(e for e in user.find(marker="user-role").elements
                if e.props.get("aria-label", "").strip('"') == f"Role of {username}")


@pytest.mark.usefixtures("auth_on")
async def test_an_admin_adds_a_user_whose_generated_password_is_shown_once_and_works(user: User) -> None:
    await add_users(("root", "admin"))
    await signed_in(user, "root", page="/admin")
    user.find(marker="new-user-name").type("bea")
    one(user, "new-user-role").value = "operator"
    user.find(marker="new-user-add").click()
    await user.should_see(marker="new-user-done")
    await user.should_see("Added bea (operator)")
    password = one(user, "new-user-secret").value
    await user.should_see(marker="new-user-secret-copy")
    row = await (await accounts()).user("bea")
    assert row is not None and row.role == "operator" and verify_password(row.password_hash, password)
    await user.should_see(marker="user-bea")
    assert one(user, "new-user-name").value == ""  # ready for the next one
    added = await audit_rows("user_add")
    assert [(r.actor, r.outcome) for r in added] == [("root", "ok")]
    assert password not in "".join(r.detail for r in await audit_rows())  # never in the trail

    bea = browser()
    await sign_in(bea, "bea", password)
    await bea.should_see(marker="account")
    assert one(bea, "account-role").text == "Role: operator"

    await user.open("/admin")  # shown once: a reload shows it no more
    await user.should_see(marker="user-bea")
    await user.should_not_see(marker="new-user-secret")


@pytest.mark.usefixtures("auth_on")
async def test_a_taken_bad_or_reserved_name_and_a_short_password_are_said_at_their_field(user: User) -> None:
    await add_users(("root", "admin"))
    await signed_in(user, "root", page="/admin")
    name = one(user, "new-user-name")
    for typed, said in (("ROOT", "a user named 'root' already exists"), ("no spaces please", "use 1-64 letters"),
                        ("local", "reserved for actions that are not a person's")):
        name.value = typed
        user.find(marker="new-user-add").click()
        await user.should_see(marker="new-user-problem", content=said)
        assert said in (name.error or "")
        assert name.value == typed  # kept, to be corrected
    name.value = "cy"
    one(user, "new-user-how").value = "type"
    one(user, "new-user-password").value = "short"
    user.find(marker="new-user-add").click()
    await user.should_see(marker="new-user-problem", content="at least 8 characters")
    assert name.error is None
    assert [u.username for u in await (await accounts()).users()] == ["root"]
    failed = [r for r in await audit_rows("user_add") if r.outcome == "failed"]
    assert len(failed) == 4 and "short" not in "".join(r.detail for r in failed)
    one(user, "new-user-password").value = "long enough now"
    user.find(marker="new-user-add").click()
    await user.should_see(marker="user-cy")
    row = await (await accounts()).user("cy")
    assert row is not None and verify_password(row.password_hash, "long enough now")


@pytest.mark.usefixtures("auth_on")
async def test_role_changes_disabling_and_new_passwords_read_as_sentences_in_the_trail(user: User) -> None:
    await add_users(("root", "admin"), ("ops", "viewer"))
    await signed_in(user, "root", page="/admin")
    await user.should_see(marker="user-ops")
    role_select(user, "ops").value = "operator"
    await user.should_see("ops is now operator")
    assert (await (await accounts()).user("ops")).role == "operator"  # type: ignore[union-attr]
    user.find(marker="user-toggle-ops").click()
    await user.should_see("ops disabled")
    assert (await (await accounts()).user("ops")).disabled  # type: ignore[union-attr]
    user.find(marker="user-passwd-ops").click()
    await user.should_see(marker="user-new-secret")
    fresh = one(user, "user-new-secret").value
    assert verify_password((await (await accounts()).user("ops")).password_hash, fresh)  # type: ignore[union-attr]
    assert len(user.find(marker="user-passwd").elements) == 1  # root's own row has none: it would end this sign-in

    await user.open("/admin")
    await user.should_see(marker="audit")
    details = [r["detail"] for r in one(user, "audit").rows]
    assert "Role of ops changed from viewer to operator" in details
    assert "Account ops disabled: they can no longer sign in" in details
    assert "New password set for ops" in details
    assert not [d for d in details if "{" in d or '"' in d], details  # words, not JSON


async def test_the_local_actor_and_share_links_in_words(user: User) -> None:
    """Sign-in off: what this computer does is by "this computer (no sign-in)", wherever it is shown."""
    session = await start_demo("Tea or coffee?")
    eng = await engine()
    gate = Gate(eng, Principal(name="local", role=Role.ADMIN, kind="local"))
    link, _ = await gate.share(session, 24)
    await user.open("/admin")
    await user.should_see(marker="audit")
    rows = one(user, "audit").rows
    share = next(r for r in rows if r["action"] == "share")
    assert share["actor"] == LOCAL_WORDS
    expires = link.expires_at
    assert expires is not None
    assert share["detail"] == (f"Share link {link.id} created for debate “Tea or coffee?”, "
                               f"expires {expires:%Y-%m-%d %H:%M} UTC")
    assert all(r["actor"] != "local" for r in rows)

    await user.open(f"/debate/{session.id}")
    await user.should_see(f"{LOCAL_WORDS} created a share link")  # the debate's activity timeline
    await user.should_not_see("local created")
    one(user, "share-section").value = True
    await user.should_see(marker="share-about")
    assert f"by {LOCAL_WORDS}" in one(user, "share-about").text


async def test_a_share_link_offers_its_address_to_copy_only_while_it_works(user: User) -> None:
    session = await start_demo("Shall the link stay?")
    await user.open(f"/debate/{session.id}")
    one(user, "share-section").value = True
    user.find(marker="share-create").click()
    await user.should_see(marker="share-url")
    url = one(user, "share-url").value
    assert "/s/" in url
    await user.should_see(marker="share-url-copy")
    assert one(user, "share-status").text == "active"

    user.find(marker="share-revoke").click()
    await user.should_see(marker="share-status", content="revoked")
    await user.should_not_see(marker="share-url")  # no address left that looks usable
    await user.should_not_see(marker="share-url-copy")
    await user.should_see("it no longer opens the debate")
    assert url not in str(user.client.layout.props) and all(
        url not in (getattr(e, "text", "") or "") for e in user.client.layout.descendants())

    user.find(marker="share-create").click()  # a second link, then it expires while the page is open
    await user.should_see(marker="share-url")
    second = one(user, "share-url").value
    eng = await engine()
    async with eng.store.transaction() as db:
        await db.execute("UPDATE share_links SET expires_at = ? WHERE revoked_at IS NULL",
                         ((utcnow() - timedelta(seconds=1)).isoformat(),))
    user.find(marker="share-create").click()  # any refresh of the list shows it
    await user.should_see(marker="share-status", content="expired")
    values = [e.value for e in user.find(marker="share-url").elements]
    assert second not in values and len(values) == 1  # only the third link, which works
    await user.should_see("expired")

