"""The API tokens page: a person makes a token (shown once, working at once through the HTTP API, stored
only as a digest), sees and revokes their own; an admin sees and revokes everyone's; a viewer cannot
make a token with more rights than their own."""

from __future__ import annotations

import httpx
import pytest
from nicegui import core
from nicegui.testing import User

from tests.ui.helpers import engine, one
from tests.ui.test_access import add_users, auth_on, signed_in  # noqa: F401  (auth_on is a fixture)
from webapp.access.passwords import token_digest
from webapp.store.tokens import ApiTokens


async def api_status(token: str, path: str = "/api/v1/debates") -> int:
    transport = httpx.ASGITransport(core.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get(path, headers={"Authorization": f"Bearer {token}"})
    return response.status_code


@pytest.mark.usefixtures("auth_on")
async def test_a_person_makes_sees_and_revokes_their_own_token(user: User) -> None:
    await engine()
    await add_users(("ada", "operator"), ("root", "admin"))
    await signed_in(user, "ada", page="/tokens")
    await user.should_see("API tokens")
    await user.should_see(marker="tokens-empty")
    user.find(marker="token-name").type("notebook")
    user.find(marker="token-create").click()
    await user.should_see(marker="token-new")
    token = one(user, "token-value").value
    assert token.startswith("rst_")
    rows = await ApiTokens((await engine()).store).list("ada")
    assert [(r.name, r.role, r.suffix) for r in rows] == [("notebook", "operator", token[-4:])]
    assert await ApiTokens((await engine()).store).by_hash(token_digest(token)) is not None  # only the digest
    assert await api_status(token) == 200
    await user.should_see(f"…{token[-4:]}")
    user.find(marker="token-revoke").click()
    await user.should_see(marker="token-status", content="revoked")
    assert await api_status(token) == 401


@pytest.mark.usefixtures("auth_on")
async def test_admins_see_everyone_and_roles_only_shrink(user: User) -> None:
    from webapp.access import tokens

    await engine()
    await add_users(("vic", "viewer"), ("root", "admin"))
    store = (await engine()).store
    issued = await tokens.issue(store, "vic", name="vic's script")
    with pytest.raises(ValueError, match="more rights than its user"):
        await tokens.issue(store, "vic", tokens.Role.OPERATOR)
    await signed_in(user, "root", page="/tokens")
    await user.should_see("Everyone's tokens")
    await user.should_see("vic's script")
    user.find(marker="token-revoke").click()
    await user.should_see(marker="token-status", content="revoked")
    assert (await ApiTokens(store).get(issued.row.id)).revoked_by == "root"


async def test_with_sign_in_off_the_api_is_open_but_a_bad_token_is_still_refused(user: User) -> None:
    await engine()
    transport = httpx.ASGITransport(core.app, client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        assert (await client.get("/api/v1/debates")).status_code == 200  # like the pages on loopback
        created = await client.post("/api/v1/debates", json={"topic": "Tea beats coffee", "format": "classic"})
        assert created.status_code == 201
        assert (await client.get("/api/v1/debates", headers={"Authorization": "Bearer rst_gone"})).status_code == 401
        # Reading a finished debate does not keep it loaded (scripts read many).
        debate_id = created.json()["id"]
        await (await (await engine()).session(debate_id)).join()
        assert (await client.get(f"/api/v1/debates/{debate_id}")).json()["status"] == "completed"
        assert (await client.get(f"/api/v1/debates/{debate_id}/export.md")).status_code == 200
        assert debate_id not in (await engine()).sessions
    assert (await ApiTokens((await engine()).store).list()) == []
