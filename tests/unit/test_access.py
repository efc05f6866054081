"""Roles as data, share-link scope, password hashing, sign-in throttling and the audit trail's paging."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.access.passwords import WeakPassword, hash_password, new_token, token_digest, verify_password
from webapp.access.roles import LOCAL, PERMISSIONS, Action, PermissionDenied, Principal, Role
from webapp.access.throttle import (
    BASE_DELAY,
    FORGET_AFTER,
    FREE_ATTEMPTS,
    MAX_DELAY,
    LoginThrottle,
    address_key,
    user_key,
)
from webapp.store import Store
from webapp.store.accounts import Accounts, UserExists
from webapp.ui.pages.login import safe_next

SPENDING_OR_CHANGING = {Action.CREATE, Action.PAUSE, Action.RESUME, Action.STOP, Action.RETRY,
                        Action.ACKNOWLEDGE_WARNING, Action.ANSWER_CLARIFICATION, Action.CLONE, Action.SHARE,
                        Action.REVOKE_SHARE, Action.DELETE, Action.MANAGE_USERS, Action.SERVER_SETTINGS}


def test_viewers_watch_and_export_but_change_and_spend_nothing() -> None:
    viewer = Principal(name="vic", role=Role.VIEWER)
    assert viewer.can(Action.WATCH) and viewer.can(Action.EXPORT) and viewer.can(Action.LIST)
    assert not any(viewer.can(action) for action in SPENDING_OR_CHANGING)


def test_operators_run_debates_but_manage_neither_users_nor_server_nor_deletion() -> None:
    operator = Principal(name="ops", role=Role.OPERATOR)
    for action in (Action.CREATE, Action.PAUSE, Action.RESUME, Action.STOP, Action.RETRY,
                   Action.ACKNOWLEDGE_WARNING, Action.ANSWER_CLARIFICATION, Action.CLONE, Action.SHARE):
        assert operator.can(action), action
    for action in (Action.DELETE, Action.MANAGE_USERS, Action.SERVER_SETTINGS, Action.VIEW_AUDIT):
        assert not operator.can(action), action


def test_admins_may_do_everything_and_roles_are_nested() -> None:
    assert PERMISSIONS[Role.ADMIN] == frozenset(Action)
    assert PERMISSIONS[Role.VIEWER] < PERMISSIONS[Role.OPERATOR] < PERMISSIONS[Role.ADMIN]
    assert all(LOCAL.can(action) for action in Action)  # sign-in off: the one local person


def test_a_share_link_watches_and_exports_its_one_debate_only() -> None:
    link = Principal(name="share link x", role=Role.VIEWER, kind="share-link", debate_id="abc")
    assert link.can(Action.WATCH, "abc") and link.can(Action.EXPORT, "abc")
    assert not link.can(Action.WATCH, "other") and not link.can(Action.WATCH)
    assert not link.can(Action.LIST) and not link.can(Action.PAUSE, "abc")
    assert link.actor == "share-link"


def test_a_disabled_principal_may_do_nothing() -> None:
    gone = Principal(name="root", role=Role.ADMIN, disabled=True)
    assert not any(gone.can(action) for action in Action)


def test_permission_denied_names_who_and_what() -> None:
    message = str(PermissionDenied(Principal(name="vic", role=Role.VIEWER), Action.ACKNOWLEDGE_WARNING))
    assert message == "not allowed: vic (viewer) cannot acknowledge warning"


def test_passwords_are_argon2id_and_verified() -> None:
    hashed = hash_password("correct horse battery")
    assert hashed.startswith("$argon2id$") and "correct horse" not in hashed
    assert verify_password(hashed, "correct horse battery")
    assert not verify_password(hashed, "wrong horse battery")
    assert not verify_password(None, "correct horse battery")  # no account: same work, always False
    assert not verify_password("not-a-hash", "anything")
    with pytest.raises(WeakPassword, match="at least 8"):
        hash_password("short")


def test_share_tokens_are_long_random_and_stored_as_a_digest() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50 and all(len(t) >= 43 for t in tokens)
    token = tokens.pop()
    assert token_digest(token) == token_digest(token) != token and len(token_digest(token)) == 64


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_throttle_locks_after_repeated_attempts_doubling_up_to_a_cap(tmp_path: Path) -> None:
    clock = Clock()
    store = await Store.open(tmp_path / "db.sqlite3")
    try:
        throttle = LoginThrottle(store, clock=clock)
        for _ in range(FREE_ATTEMPTS - 1):
            assert await throttle.reserve("user:ada", "addr:1.2.3.4") == 0
        assert await throttle.reserve("user:ada", "addr:1.2.3.4") == 0  # the last free one
        assert await throttle.reserve("user:ada") == BASE_DELAY
        assert await throttle.reserve("addr:1.2.3.4") == BASE_DELAY
        assert await throttle.reserve("user:bob") == 0
        clock.now += BASE_DELAY
        assert await throttle.reserve("user:ada") == 0
        assert await throttle.reserve("user:ada") == 2 * BASE_DELAY
        for _ in range(20):
            clock.now += MAX_DELAY
            assert await throttle.reserve("user:ada") == 0
        assert await throttle.reserve("user:ada") == MAX_DELAY
        await throttle.succeeded("user:ada", "addr:9.9.9.9")
        assert await throttle.reserve("user:ada") == 0
        clock.now += FORGET_AFTER + 1  # an hour without attempts: the address starts afresh
        assert await throttle.reserve("addr:1.2.3.4") == 0
    finally:
        await store.close()


def test_only_names_an_account_can_have_are_counted_per_username_and_ipv6_counts_by_its_64() -> None:
    assert user_key(" Ada ") == "user:ada"
    assert user_key("x" * 65) is None and user_key("x" * 1_000_000) is None and user_key("a b") is None
    assert address_key("10.0.0.7") == "addr:10.0.0.7"
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::9") == "addr:2001:db8:1:2::/64"
    assert address_key("::1") == "addr:::1"


@pytest.mark.parametrize("target", ["/\t/evil.example/pwn", "/\n/evil.example", "/\r/evil.example",
                                    "//evil.example", "https://evil.example/", "/\\evil.example", "\t//evil.example",
                                    "javascript:alert(1)", "%2F%09%2Fevil.example%2Fpwn", "evil.example"])
def test_next_is_only_a_path_on_this_site(target: str) -> None:
    assert safe_next(target) == "/"


def test_next_keeps_a_path_and_its_query_here() -> None:
    assert safe_next("/debate/abc?x=1") == "/debate/abc?x=1"
    assert safe_next("%2Fdebate%2Fabc") == "/debate/abc"
    assert safe_next(None) == "/"


async def test_accounts_users_links_and_paged_audit(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "db.sqlite3")
    try:
        accounts = Accounts(store)
        await accounts.add_user("Ada", "admin", "$argon2id$fake")
        with pytest.raises(UserExists):
            await accounts.add_user("ada", "viewer", None)  # names compare without case
        user = await accounts.user("ADA")
        assert user is not None and user.username == "Ada"
        assert "password_hash" not in user.public() and user.public()["has_password"] is True
        for i in range(60):
            await accounts.audit("Ada", "pause", f"d{i % 3}")
        rows, total = await accounts.audit_page(0, 25)
        assert total == 60 and len(rows) == 25 and rows[0].id > rows[-1].id  # newest first
        rest, _ = await accounts.audit_page(50, 25)
        assert len(rest) == 10
        only, count = await accounts.audit_page(0, 100, debate_id="d1")
        assert count == 20 and {r.debate_id for r in only} == {"d1"}
    finally:
        await store.close()
