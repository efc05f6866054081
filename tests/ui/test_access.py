"""Team access through the pages: sign-in, roles enforced on the server for every command (a forged
event included), throttling, session expiry, share links, the proxy identity header, the admin
page, deleting, per-person daily limits and the activity timeline."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from nicegui import core
from nicegui.testing import User

from tests.child_env import child_env
from tests.ui.helpers import demo_speed, engine, navigate_per_tab, notified, one, press, send_command, start_demo
from webapp.access.passwords import hash_password
from webapp.access.roles import Action, Role
from webapp.engine.machine import State
from webapp.models import utcnow
from webapp.settings import get_settings
from webapp.store.accounts import Accounts
from webapp.ui import auth as ui_auth
from webapp.ui import runtime
from webapp.ui.components.presets import quick_demo_config
from webapp.ui.live import LiveHub

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"
# One argon2 hash for every account of these tests: hashing is deliberately slow.
_HASH: list[str] = []


def password_hash() -> str:
    if not _HASH:
        _HASH.append(hash_password(PASSWORD))
    return _HASH[0]


@pytest.fixture
def auth_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_AUTH", "on")
    get_settings.cache_clear()


async def accounts() -> Accounts:
    return Accounts((await engine()).store)


async def add_users(*names_roles: tuple[str, str]) -> None:
    store = await accounts()
    for name, role in names_roles:
        await store.add_user(name, role, password_hash())


def browser(address: str = "127.0.0.1", headers: dict[str, str] | None = None) -> User:
    """Another simulated browser, optionally from another address or with extra headers."""
    transport = httpx.ASGITransport(core.app, client=(address, 40000))
    return User(httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers or {}))


async def sign_in(user: User, name: str, password: str = PASSWORD, page: str = "/") -> None:
    await user.open(page)
    await user.should_see(marker="login", retries=50)
    user.find(marker="username").type(name)
    user.find(marker="password").type(password)
    user.find(marker="sign-in").click()


async def signed_in(user: User, name: str, page: str = "/") -> None:
    await sign_in(user, name, page=page)
    await user.should_see(marker="account", retries=150)


def click_forged(user: User, marker: str) -> None:
    """What a tampered browser can send: a click event for an element, enabled or not, straight
    over the websocket (NiceGUI's own event path)."""
    element = one(user, marker)
    listener = next(li for li in element._event_listeners.values() if li.type == "click")
    user.client.handle_event({"id": element.id, "listener_id": listener.id, "args": []})


async def audit_rows(action: str | None = None) -> list:
    rows, _ = await (await accounts()).audit_page(0, 500)
    return [r for r in rows if action is None or r.action == action]


# --- sign-in ---------------------------------------------------------------------------------------


async def test_with_auth_on_every_page_asks_to_sign_in_first(user: User, auth_on: None) -> None:
    session = await start_demo("Are pages private?")
    for path in ("/", "/new", "/settings", "/admin", f"/debate/{session.id}"):
        response = await user.http_client.get(path)
        assert response.status_code == 303 and response.headers["location"].startswith("/login?next="), path
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="login", retries=50)
    await user.should_not_see(marker="topic")


async def test_sign_in_lands_on_the_page_asked_for_and_shows_who_and_role(user: User, auth_on: None) -> None:
    await add_users(("ada", "operator"))
    session = await start_demo("Where do I land?")
    await signed_in(user, "ada", page=f"/debate/{session.id}")
    await user.should_see("Where do I land?")
    assert one(user, "account-name").text == "ada"
    assert one(user, "account-role").text == "Role: operator"
    row = await (await accounts()).user("ada")
    assert row is not None and row.last_login_at is not None


async def test_wrong_password_and_unknown_user_get_the_same_message(user: User, auth_on: None) -> None:
    await add_users(("ada", "viewer"))
    await sign_in(user, "ada", "wrong password!")
    await user.should_see("Wrong username or password.", retries=50)
    await sign_in(user, "nobody", "wrong password!")
    await user.should_see("Wrong username or password.", retries=50)
    await user.should_not_see(marker="account")
    refused = await audit_rows("sign_in")
    assert [r.outcome for r in refused] == ["refused", "refused"]


async def test_a_disabled_account_cannot_sign_in_and_loses_its_open_session(user: User, auth_on: None) -> None:
    await add_users(("ada", "viewer"), ("root", "admin"))
    await signed_in(user, "ada")
    await (await accounts()).set_disabled("ada", True)
    await user.open("/")  # the next page load finds the account disabled
    await user.should_see(marker="login", retries=50)
    await sign_in(user, "ada")
    await user.should_see("Wrong username or password.", retries=50)


async def test_sign_out_from_the_header_menu(user: User, auth_on: None) -> None:
    await add_users(("ada", "viewer"))
    await signed_in(user, "ada")
    user.find(marker="sign-out").click()
    await user.should_see(marker="login", retries=50)
    response = await user.http_client.get("/")
    assert response.status_code == 303


async def test_repeated_failures_are_throttled_per_username_and_per_address(user: User, auth_on: None) -> None:
    await add_users(("ada", "viewer"), ("bob", "viewer"))
    for _ in range(5):
        await sign_in(user, "ada", "not the password")
        await user.should_see("Wrong username or password.", retries=50)
    await sign_in(user, "ada")  # even the right password waits now
    await user.should_see("Too many failed sign-ins", retries=50)
    await user.should_not_see(marker="account")
    # Another address is still throttled for that username ...
    elsewhere = browser("10.1.1.1")
    await sign_in(elsewhere, "ada")
    await elsewhere.should_see("Too many failed sign-ins", retries=50)
    # ... and the first address is throttled for every username it tries.
    await sign_in(user, "bob")
    await user.should_see("Too many failed sign-ins", retries=50)
    # A fresh address and a fresh username sign in at once.
    other = browser("10.2.2.2")
    await signed_in(other, "bob")


async def test_a_sign_in_expires_after_the_session_hours(user: User, auth_on: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_SESSION_HOURS", "2")
    get_settings.cache_clear()
    await add_users(("ada", "operator"))
    session = await start_demo("Does my sign-in last?")
    await session.join()
    await signed_in(user, "ada")
    later = utcnow() + timedelta(hours=2, minutes=1)
    monkeypatch.setattr(ui_auth, "utcnow", lambda: later)
    await user.open(f"/debate/{session.id}")
    await user.should_see(marker="login", retries=50)


# --- roles, enforced on the server ------------------------------------------------------------------


@pytest.mark.parametrize("role", ["admin", "operator", "viewer"])
async def test_pause_from_the_page_by_role(user: User, auth_on: None, role: str,
                                          monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    await demo_speed(monkeypatch, 50)
    await add_users(("pat", role))
    session = await start_demo("Who may pause?")
    await signed_in(user, "pat", page=f"/debate/{session.id}")
    assert one(user, "controls").enabled("pause") is (role != "viewer")
    caplog.set_level(logging.WARNING, "rostrum.access")
    outcome = notified("Not done", user)
    send_command(user, "pause")  # for a viewer: a forged event for a disabled button
    if role == "viewer":
        await asyncio.wait_for(outcome.wait(), 5)
        assert session.state.status is not State.PAUSED
        (refusal,) = await audit_rows("pause")
        assert (refusal.actor, refusal.outcome, refusal.debate_id) == ("pat", "refused", session.id)
        assert any("refused" in r.message and "pat" in r.message for r in caplog.records)
        await session.stop(verdict=False)
    else:
        await user.should_see(marker="paused-note", retries=50)  # the command runs in the background
        assert session.state.status is State.PAUSED
        pause = [t for t in session.state.transitions if t.event == "PAUSE"]
        assert pause[-1].actor == "pat"
        assert [(r.actor, r.outcome) for r in await audit_rows("pause")] == [("pat", "ok")]
        await user.should_see("paused by pat")  # the activity timeline


async def test_a_viewer_sees_no_enabled_control_and_no_create_or_admin(user: User, auth_on: None,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 50)
    await add_users(("vic", "viewer"))
    session = await start_demo("Read only?")
    await signed_in(user, "vic", page=f"/debate/{session.id}")
    assert not any(one(user, "controls").enabled(name) for name in ("pause", "resume", "retry", "stop"))
    await user.should_see(marker="read-only")
    await user.should_not_see(marker="share-card")
    await user.should_not_see(marker="delete")
    await user.should_not_see("New debate")
    await user.should_not_see("Admin")
    for path, status in (("/new", 403), ("/admin", 403)):
        response = await user.http_client.get(path)
        assert response.status_code == status, path
        assert "Not allowed" in response.text
    await session.stop(verdict=False)


async def allowed_outcomes(gate, target, shared, role: str) -> dict[str, bool]:
    """Which of a set of actions the gate lets through (PermissionError = refused)."""
    from webapp.ui.components.presets import quick_demo_config

    calls = {
        "start": lambda: gate.start(quick_demo_config("started by a role")),
        "pause": lambda: gate.command(target, "pause"),
        "stop": lambda: gate.command(target, "stop", verdict=False),
        "share": lambda: gate.share(shared),
        "users": lambda: gate.set_role(f"u-{role}", Role(role)),
        "delete": lambda: gate.delete(target.id),
    }
    results: dict[str, bool] = {}
    for name, call in calls.items():
        try:
            await call()
            results[name] = True
        except PermissionError:
            results[name] = False
    return results


async def test_the_gate_refuses_each_command_a_role_lacks(user: User, auth_on: None) -> None:
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal
    from webapp.ui.components.presets import quick_demo_config

    eng = await engine()
    session = await start_demo("Every command, every role")
    await session.join()
    matrix = {
        "viewer": {"start": False, "pause": False, "stop": False, "share": False, "delete": False, "users": False},
        "operator": {"start": True, "pause": True, "stop": True, "share": True, "delete": False, "users": False},
        "admin": {"start": True, "pause": True, "stop": True, "share": True, "delete": True, "users": True},
    }
    for role, expected in matrix.items():
        await add_users((f"u-{role}", role))
        gate = Gate(eng, Principal(name=f"u-{role}", role=Role(role)))
        target = await eng.start(quick_demo_config("a debate to act on"))
        results = await allowed_outcomes(gate, target, session, role)
        assert results == expected, role
        if target.state.status not in (State.STOPPED, State.COMPLETED) and not results["delete"]:
            await target.stop(verdict=False)
    refused = [r for r in await audit_rows() if r.outcome == "refused"]
    assert {r.actor for r in refused} == {"u-viewer", "u-operator"}
    # A demoted account loses its rights on the next command, without signing in again.
    gate = Gate(eng, Principal(name="u-admin", role=Role.ADMIN))
    await (await accounts()).set_role("u-admin", "viewer")
    with pytest.raises(PermissionError):
        await gate.command(session, "stop", verdict=False)


async def test_operator_settings_page_hides_keys_and_paths_and_cannot_save_defaults(
        user: User, auth_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-openai-key-never-shown")
    await add_users(("ops", "operator"))
    await signed_in(user, "ops", page="/settings")
    await user.should_not_see(marker="providers")
    await user.should_not_see("Database")
    db = str(get_settings().db)
    for element in user.client.elements.values():
        assert db not in str(element.props) and db not in str(getattr(element, "text", ""))
    assert one(user, "save-defaults").enabled is False
    refused = notified("Not done", user)
    click_forged(user, "save-defaults")
    await asyncio.wait_for(refused.wait(), 5)
    from nicegui import app
    assert not app.storage.general.get("defaults")


# --- share links ---------------------------------------------------------------------------------


async def test_share_link_watch_export_only_then_revoked(user: User, auth_on: None) -> None:
    await add_users(("ops", "operator"))
    session = await start_demo("Shall we share?")
    await session.join()
    await signed_in(user, "ops", page=f"/debate/{session.id}")
    one(user, "share-section").value = True  # open the collapsed card
    user.find(marker="share-create").click()
    await user.should_see(marker="share-url")
    url = one(user, "share-url").value
    token = url.rsplit("/s/", 1)[1]
    (link,) = await (await accounts()).links(session.id)
    assert link.created_by == "ops" and link.expires_at is not None
    stored = await (await engine()).store.fetchone("SELECT token_hash FROM share_links")
    assert stored is not None and token not in stored[0]  # only the digest is kept

    guest = browser("10.3.3.3")
    await guest.open(f"/s/{token}")
    await guest.should_see("Shall we share?")
    await guest.should_see("Shared read-only view")  # in the header, instead of the navigation
    await guest.should_not_see("New debate")
    assert one(guest, "controls").label("pause") is None  # no command buttons at all for a link
    guest.find(marker="export").click()
    guest.find(marker="export-md").click()
    assert "Shall we share?" in (await guest.download.next()).text
    for path in ("/", "/settings", f"/debate/{session.id}"):  # nothing beyond the one debate
        assert (await guest.http_client.get(path)).status_code == 303, path
    other = await start_demo("Not shared")
    assert (await guest.http_client.get(f"/debate/{other.id}")).status_code == 303

    await user.open(f"/debate/{session.id}")
    one(user, "share-section").value = True
    await user.should_see(marker="share-revoke")  # the list loads when the card is opened
    user.find(marker="share-revoke").click()
    await user.should_see("revoked")
    response = await guest.http_client.get(f"/s/{token}")
    assert response.status_code == 410 and "revoked" in response.text
    actions = [a.action for a in session.state.actions]
    assert actions[-2:] == ["share_link_created", "share_link_revoked"]
    assert (await guest.http_client.get("/s/not-a-real-token")).status_code == 404


async def test_an_expired_share_link_is_gone(user: User, auth_on: None) -> None:
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal

    await add_users(("ops", "operator"))
    session = await start_demo("Short-lived link")
    await session.join()
    _, token = await Gate(await engine(), Principal(name="ops", role=Role.OPERATOR)).share(session, 1)
    assert (await user.http_client.get(f"/s/{token}")).status_code == 200
    async with (await engine()).store.transaction() as db:
        await db.execute("UPDATE share_links SET expires_at = ?", ((utcnow() - timedelta(minutes=1)).isoformat(),))
    response = await user.http_client.get(f"/s/{token}")
    assert response.status_code == 410 and "expired" in response.text


# --- single sign-on through a trusted proxy -------------------------------------------------------


async def test_identity_header_from_a_trusted_proxy_signs_in(user: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_AUTH_HEADER", "X-Forwarded-Email")
    monkeypatch.setenv("ROSTRUM_TRUSTED_PROXIES", "127.0.0.1,10.8.0.0/16")
    get_settings.cache_clear()
    assert get_settings().auth_enabled  # auto: a proxy in front means hosted, even on loopback
    proxied = browser("10.8.3.4", {"X-Forwarded-Email": "grace@example.org"})
    await proxied.open("/")
    await proxied.should_see(marker="account", retries=50)
    assert one(proxied, "account-role").text == "Role: viewer"  # ROSTRUM_AUTH_HEADER_ROLE's default
    row = await (await accounts()).user("grace@example.org")
    assert row is not None and row.role == "viewer" and row.password_hash is None
    # The same header from an address that is not a trusted proxy is ignored.
    forged = browser("192.0.2.7", {"X-Forwarded-Email": "root@example.org"})
    response = await forged.http_client.get("/")
    assert response.status_code == 303 and response.headers["location"].startswith("/login")
    assert await (await accounts()).user("root@example.org") is None


# --- admin, delete, daily limits -----------------------------------------------------------------


async def test_admin_page_lists_actions_and_users_and_deletes_a_debate(user: User, auth_on: None,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    await demo_speed(monkeypatch, 50)
    await add_users(("root", "admin"), ("ops", "operator"))
    session = await start_demo("Delete me")
    ops = browser()
    await signed_in(ops, "ops", page=f"/debate/{session.id}")
    press(ops, "pause")
    await ops.should_see(marker="paused-note")
    await ops.should_not_see(marker="delete")

    await signed_in(user, "root", page="/admin")
    await user.should_see(marker="audit")
    rows = one(user, "audit").rows
    assert any(r["actor"] == "ops" and r["action"] == "pause" and r["debate"] == session.id for r in rows)
    await user.should_see(marker="user-ops")

    await user.open(f"/debate/{session.id}")
    user.find(marker="delete").click()
    await user.should_see(marker="delete-dialog")
    user.find(marker="delete-confirm").click()
    await user.should_see(marker="empty-state", retries=50)
    await ops.should_see(marker="deleted")  # a page still open on it says so
    eng = await engine()
    assert await eng.store.get_row(session.id) is None
    assert await eng.store.events(session.id) == []
    deleted = await audit_rows("delete")
    assert [(r.actor, r.debate_id) for r in deleted] == [("root", session.id)]
    response = await user.http_client.get(f"/debate/{session.id}")
    assert response.status_code == 404


async def test_the_last_admin_cannot_be_demoted_or_disabled(user: User, auth_on: None) -> None:
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal

    await add_users(("root", "admin"))
    gate = Gate(await engine(), Principal(name="root", role=Role.ADMIN))
    with pytest.raises(ValueError, match="only active admin"):
        await gate.set_role("root", Role.VIEWER)
    with pytest.raises(ValueError, match="only active admin"):
        await gate.set_disabled("root", True)


async def test_daily_limit_needs_a_cost_limit_and_refuses_past_it(user: User, auth_on: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_USER_DAILY_USD", "1")
    await demo_speed(monkeypatch, 20)  # the first debate is still running (its limit reserved)
    get_settings.cache_clear()
    await add_users(("ops", "operator"))
    await signed_in(user, "ops", page="/new")
    await user.should_see(marker="daily-limit")
    user.find(marker="preset-quick-demo").click()
    user.find(marker="start").click()
    await user.should_see("a hard limit is required")
    with user:
        one(user, "field-budget.cost_limit").value = 0.6
    user.find(marker="start").click()
    await user.should_see(marker="transcript", retries=100)
    await user.open("/new")
    user.find(marker="preset-quick-demo").click()
    with user:
        one(user, "field-budget.cost_limit").value = 0.6
    user.find(marker="start").click()
    await user.should_see("more than you have left today")
    eng = await engine()
    _, total = await eng.list_debates()
    assert total == 1
    (row,), _ = await eng.list_debates()
    assert row.created_by == "ops"
    (session,) = eng.sessions.values()
    await session.stop(verdict=False)


async def test_a_new_password_ends_sessions_signed_in_with_the_old_one(user: User, auth_on: None) -> None:
    await add_users(("ada", "operator"))
    await signed_in(user, "ada")
    await (await accounts()).set_password_hash("ada", hash_password("a brand new password"))
    await user.open("/")
    await user.should_see(marker="login", retries=50)


async def test_a_proxy_identity_that_names_a_system_actor_is_ignored(user: User,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROSTRUM_AUTH_HEADER", "X-Forwarded-User")
    monkeypatch.setenv("ROSTRUM_TRUSTED_PROXIES", "10.8.0.0/16")
    get_settings.cache_clear()
    proxied = browser("10.8.3.4", {"X-Forwarded-User": "system"})
    response = await proxied.http_client.get("/")
    assert response.status_code == 303
    assert await (await accounts()).user("system") is None


# --- issue 20: the throttle counts before it checks, sessions and links end in open tabs -----------


async def runtime_hub() -> LiveHub:
    return await runtime.current().hub()


async def login_message(user: User) -> str:
    """The sign-in form's message once its submission has been handled (empty until then)."""
    for _ in range(400):
        text = one(user, "login-error").text
        if text:
            return text
        await asyncio.sleep(0.05)
    raise AssertionError("the sign-in form never answered")


async def test_twenty_simultaneous_wrong_passwords_get_only_the_tries_left(user: User, auth_on: None) -> None:
    await add_users(("ada", "operator"))
    for n in range(3):  # three wrong tries: two are left
        tab = browser(f"10.9.0.{n}")
        await sign_in(tab, "ada", "not the password")
        assert await login_message(tab) == "Wrong username or password."
    tabs = [browser(f"10.9.1.{n}") for n in range(20)]  # twenty addresses: only the username limits
    for tab in tabs:
        await tab.open("/")
        tab.find(marker="username").type("ada")
        tab.find(marker="password").type("another wrong one")
    for tab in tabs:  # all sent before any is answered
        tab.find(marker="sign-in").click()
    answers = [await login_message(tab) for tab in tabs]
    assert answers.count("Wrong username or password.") == 2, answers
    assert all(a.startswith("Too many failed sign-ins") for a in answers if a != "Wrong username or password.")
    refused = [r for r in await audit_rows("sign_in") if r.actor == "ada"]
    assert len(refused) == 5  # 3 + 2 passwords checked, no more


async def test_an_account_holders_sign_in_does_not_reset_the_address_count(user: User, auth_on: None) -> None:
    await add_users(("ada", "viewer"), ("bob", "operator"))
    for name in ("bob", "cy", "dee", "bob"):  # four guesses from one address
        await sign_in(user, name, "guessing")
        await user.should_see("Wrong username or password.", retries=50)
    holder = browser()  # the same address: ada signs in with her own password
    await signed_in(holder, "ada")
    await sign_in(user, "bob", "fifth guess")
    await user.should_see("Wrong username or password.", retries=50)
    await sign_in(user, "bob", PASSWORD)  # even the right one now waits: five guesses were made here
    await user.should_see("Too many failed sign-ins", retries=50)


async def test_a_megabyte_username_stores_nothing_big(user: User, auth_on: None) -> None:
    huge = "x" * 1_000_000
    for _ in range(3):
        await sign_in(user, huge, "whatever it is")
        await user.should_see("Wrong username or password.", retries=50)
    store = (await engine()).store
    keys = [r[0] for r in await store.fetchall("SELECT key FROM login_throttle")]
    assert keys == ["addr:127.0.0.1"]  # no account can have that name: counted per address only
    rows = await store.fetchall("SELECT actor, action, detail FROM audit")
    assert len(rows) == 1 and rows[0][0] == "(unknown name)" and json.loads(rows[0][2])["attempts"] == 3
    assert max(len(actor) + len(detail) for actor, _, detail in rows) < 200
    assert all(len(str(v)) < 300 for row in await store.fetchall("SELECT * FROM login_sessions") for v in row)


async def test_a_cookie_taken_before_sign_in_is_not_signed_in_after_it(user: User, auth_on: None) -> None:
    await add_users(("ops", "operator"))
    await user.open("/login")
    before = dict(user.http_client.cookies)
    assert before  # the browser has its (signed) session cookie before signing in
    await signed_in(user, "ops")
    assert dict(user.http_client.cookies) != before  # a new browser id and session at sign-in
    assert (await user.http_client.get("/new")).status_code == 200
    stolen = browser("10.6.6.6")
    stolen.http_client.cookies.update(before)
    response = await stolen.http_client.get("/new")
    assert response.status_code == 303 and response.headers["location"].startswith("/login")


@pytest.mark.parametrize("target", ["%2F%09%2Fevil.example%2Fpwn", "%2F%0A%2Fevil.example%2Fpwn",
                                    "%2F%0D%2Fevil.example%2Fpwn", "%2F%2Fevil.example", "https%3A%2F%2Fevil.example",
                                    "%2F%5C%2Fevil.example", "%09%2F%2Fevil.example"])
async def test_after_sign_in_next_stays_on_this_site(user: User, auth_on: None, target: str) -> None:
    await add_users(("ops", "operator"))
    response = await user.http_client.get(f"/login?next={target}")
    assert response.status_code == 200
    await sign_in(user, "ops", page=f"/login?next={target}")
    await user.should_see(marker="account", retries=150)
    finish = [r for r in (await audit_rows("sign_in"))]
    assert finish and finish[0].outcome == "ok"
    # Where the browser was sent: the dashboard, not another host.
    assert user.back_history[-1].startswith("/") and "evil.example" not in user.back_history[-1].split("?")[0]


async def signed_in_tab(name: str, cookies: Any, page: str) -> User:
    """Another tab of the same browser (same cookies), open on `page`."""
    tab = browser()
    tab.http_client.cookies.update(cookies)
    await tab.open(page)
    return tab


async def test_signing_out_in_one_tab_cuts_off_the_others(user: User, auth_on: None,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal

    await demo_speed(monkeypatch, 5)
    await add_users(("ops", "operator"))
    session = await start_demo("Who is still here?")
    await signed_in(user, "ops", page=f"/debate/{session.id}")
    assert one(user, "controls").enabled("pause")
    other = await signed_in_tab("ops", user.http_client.cookies, "/")
    await other.should_see(marker="account", retries=50)
    (session_id,) = [r[0] for r in await (await engine()).store.fetchall("SELECT id FROM login_sessions")]
    gate = Gate(await engine(), Principal(name="ops", role=Role.OPERATOR, session_id=session_id))
    signed_in_cookie = dict(other.http_client.cookies)
    navigate_per_tab(user, other)
    other.find(marker="account").click()
    other.find(marker="sign-out").click()
    await other.should_see(marker="login", retries=50)
    assert dict(other.http_client.cookies) != signed_in_cookie  # a fresh browser id after signing out
    await user.should_see(marker="cut-off", retries=50)
    await user.should_not_see(marker="controls")
    await user.should_not_see(marker="export")
    assert "You signed out." in one(user, "cut-off-message").text
    with pytest.raises(PermissionError, match="signed out"):  # a command the old tab still sends
        await gate.command(session, "pause")
    assert session.state.status is not State.PAUSED
    response = await user.http_client.get(f"/debate/{session.id}")
    assert response.status_code == 303  # and the cookie no longer signs anyone in
    await session.stop(verdict=False)


async def test_a_new_password_from_the_command_line_cuts_off_open_tabs(user: User, auth_on: None,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        app_env: Path) -> None:
    await demo_speed(monkeypatch, 5)
    await add_users(("ops", "operator"))
    session = await start_demo("Change of keys")
    await signed_in(user, "ops", page=f"/debate/{session.id}")
    assert one(user, "controls").enabled("pause")
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "webapp", "users", "passwd", "ops"], input="a brand new password\n",
        capture_output=True, text=True, cwd=app_env.parent, timeout=120,
        env=child_env(ROSTRUM_DB=str(app_env), PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    await user.should_see(marker="cut-off", retries=100)  # another process did it: seen within a second
    await user.should_not_see(marker="controls")
    assert "password was changed" in one(user, "cut-off-message").text
    await session.stop(verdict=False)


async def test_revoking_a_link_stops_its_open_tab_streaming_and_exporting(user: User, auth_on: None,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal

    await demo_speed(monkeypatch, 20)
    await add_users(("ops", "operator"))
    session = await start_demo("Shared, then not")
    gate = Gate(await engine(), Principal(name="ops", role=Role.OPERATOR))
    link, token = await gate.share(session, 1)
    guest = browser("10.3.3.3")
    await guest.open(f"/s/{token}")
    await guest.should_see("Shared, then not")
    channel = (await runtime_hub()).channels[session.id]
    assert channel.watchers == 1
    guest_gate = Gate(await engine(), Principal(name=f"share link {link.id}", role=Role.VIEWER, kind="share-link",
                                                debate_id=session.id, link_id=link.id))
    await guest_gate.authorize(Action.EXPORT, session.id)  # exports while the link works
    await signed_in(user, "ops", page=f"/debate/{session.id}")
    one(user, "share-section").value = True
    await user.should_see(marker="share-revoke")
    user.find(marker="share-revoke").click()
    await guest.should_see(marker="cut-off", retries=50)
    await guest.should_not_see(marker="export")
    assert "revoked" in one(guest, "cut-off-message").text
    assert session.id not in (await runtime_hub()).channels or channel.watchers == 1  # only the operator's tab
    with pytest.raises(PermissionError, match="revoked"):
        await guest_gate.authorize(Action.EXPORT, session.id)
    await session.stop(verdict=False)


async def test_a_link_that_expires_cuts_off_its_open_tab(user: User, auth_on: None) -> None:
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal

    await add_users(("ops", "operator"))
    session = await start_demo("Short-lived, open")
    await session.join()
    _, token = await Gate(await engine(), Principal(name="ops", role=Role.OPERATOR)).share(session, 1)
    await user.open(f"/s/{token}")
    await user.should_see(marker="export")
    async with (await engine()).store.transaction() as db:
        await db.execute("UPDATE share_links SET expires_at = ?", ((utcnow() - timedelta(seconds=1)).isoformat(),))
    await user.should_see(marker="cut-off", retries=100)
    await user.should_not_see(marker="export")
    assert "This share link has expired." in one(user, "cut-off-message").text


async def test_a_link_revoked_elsewhere_says_so_on_its_open_tab(user: User, auth_on: None) -> None:
    """Revoked by another process (or before the revoking page got to it): the periodic look at open tabs'
    links finds it and says why, as the revoking page does."""
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal

    await add_users(("ops", "operator"))
    session = await start_demo("Revoked from afar")
    await session.join()
    gate = Gate(await engine(), Principal(name="ops", role=Role.OPERATOR))
    link, token = await gate.share(session, 1)
    await user.open(f"/s/{token}")
    await user.should_see(marker="export")
    await gate.revoke(session, link.id)  # no page of this process cuts the tab: only the look at the store
    await user.should_see(marker="cut-off", retries=100)
    assert "This share link was revoked." in one(user, "cut-off-message").text


async def test_every_answer_carries_the_security_headers(user: User, auth_on: None) -> None:
    for path in ("/login", "/", "/static/styles.css", "/no-such-page"):
        response = await user.http_client.get(path)
        headers = response.headers
        assert headers["x-frame-options"] == "DENY", path
        assert headers["x-content-type-options"] == "nosniff", path
        assert headers["referrer-policy"] == "same-origin", path
        csp = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp and "default-src 'self'" in csp, path


async def test_share_pages_do_not_name_the_team(user: User, auth_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from webapp.access.gate import Gate
    from webapp.access.roles import Principal

    await demo_speed(monkeypatch, 20)
    await add_users(("op1", "operator"))
    gate = Gate(await engine(), Principal(name="op1", role=Role.OPERATOR))
    session = await gate.start(quick_demo_config().model_copy(update={"topic": "Who made this?"}))
    await gate.command(session, "pause")
    _, token = await gate.share(session, 1)
    response = await user.http_client.get(f"/s/{token}")
    assert response.status_code == 200 and "Who made this?" in response.text
    assert "op1" not in response.text and "paused by a team member" in response.text
    await user.open(f"/s/{token}")
    for kind in ("json", "md", "txt"):
        user.find(marker="export").click()
        user.find(marker=f"export-{kind}").click()
        exported = (await user.download.next()).text
        assert "Who made this?" in exported and "op1" not in exported, kind
    await gate.command(session, "stop", verdict=False)
    await session.join()
    await user.open(f"/s/{token}")
    await user.should_see("Stopped by a team member", retries=50)
    assert "op1" not in (await user.http_client.get(f"/s/{token}")).text
